package provider

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
)

// conflictScript makes some transactions fail, so that the failed count is checked as well as the
// successful one: under REPEATABLE READ, two clients that update the same one of the ten tellers at once
// get a serialization failure, which pgbench 15 counts as a failed transaction and goes on.
const conflictScript = `\set aid random(1, 100000 * :scale)
\set tid random(1, 10 * :scale)
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = :tid;
END;
`

// The data source's Read, called directly (no Terraform CLI, so pgbench runs once), against a real
// server, reports pgbench's own figures for that run. pgbench_path points at a stand-in that runs the real
// pgbench and keeps a copy of what the run printed and of its per-transaction logs; the test reads those
// with its own expressions, not with internal/pgbench, and compares them with the state Read wrote.
func TestPgbenchDataSourceRead_reportsPgbenchFigures(t *testing.T) {
	pg := pgfixture.Start(t, pgfixture.Options{})
	record := t.TempDir()
	stand := recordingPgbench(t, pg.Bin(t, "pgbench"), record)

	ctx := context.Background()
	d := NewPgbenchDataSource()
	d.(*pgbenchDataSource).Configure(ctx, datasource.ConfigureRequest{ProviderData: &Clients{Bench: newPgbenchRunner()}}, &datasource.ConfigureResponse{}) // as the provider's Configure hands it
	var sr datasource.SchemaResponse
	d.Schema(ctx, datasource.SchemaRequest{}, &sr)
	null := tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)
	cfg := pgbenchModel{
		Connection: &connectionModel{
			Host: types.StringValue("127.0.0.1"), Port: types.Int64Value(int64(pg.Port())),
			Database: types.StringNull(), Username: types.StringValue(pg.Engine.Superuser()), SSLMode: types.StringValue("disable"),
			tlsFiles: tlsFiles{SSLRootCert: types.StringNull(), SSLCert: types.StringNull(), SSLKey: types.StringNull()},
		},
		Builtin: types.StringNull(), Script: types.StringValue(conflictScript), Initialize: types.BoolValue(true),
		Scale: types.Int64Value(1), Clients: types.Int64Value(4), Threads: types.Int64Value(2),
		DurationSeconds: types.Int64Value(3), Transactions: types.Int64Null(), Protocol: types.StringNull(),
		Rate: types.Float64Null(), SampleWaitEvents: types.BoolNull(), PgbenchPath: types.StringValue(stand),

		TPS: types.Float64Null(), LatencyAvgMs: types.Float64Null(), LatencyStddevMs: types.Float64Null(),
		LatencyP50Ms: types.Float64Null(), LatencyP90Ms: types.Float64Null(), LatencyP95Ms: types.Float64Null(),
		LatencyP99Ms: types.Float64Null(), LatencyMaxMs: types.Float64Null(), TransactionsDone: types.Int64Null(),
		FailedTransactions: types.Int64Null(), MeasuredSeconds: types.Float64Null(), ServerVersion: types.StringNull(),
		PgbenchVersion: types.StringNull(), WaitSamples: types.Int64Null(), LoggedTransactions: types.Int64Null(),
		Output: types.StringNull(),
	}
	raw := tfsdk.State{Schema: sr.Schema, Raw: null}
	mustOK(t, "config", raw.Set(ctx, &cfg))

	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sr.Schema, Raw: null}}
	d.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Schema: sr.Schema, Raw: raw.Raw}}, &resp)
	mustOK(t, "read", resp.Diagnostics)
	var got pgbenchModel
	mustOK(t, "state", resp.State.Get(ctx, &got))

	// One benchmark run, recorded by the stand-in.
	runs, err := filepath.Glob(filepath.Join(record, "run-*.stdout"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("recorded runs %q (%v), want exactly one", runs, err)
	}
	b, err := os.ReadFile(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	stdout := string(b)
	t.Logf("pgbench printed:\n%s", stdout)
	printed := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + re + `$`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("pgbench's output has no line matching %s", re)
		}
		return m[1]
	}
	float := func(s string) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tps := float(printed(`tps = ([0-9.]+) \(without initial connection time\)`))
	processed := int64(float(printed(`number of transactions actually processed: ([0-9]+)`)))
	failed := int64(float(printed(`number of failed transactions: ([0-9]+) \([0-9.]+%\)`)))
	latAvg := float(printed(`latency average = ([0-9.]+) ms`))
	latStddev := float(printed(`latency stddev = ([0-9.]+) ms`))
	duration := float(printed(`duration: ([0-9]+) s`))

	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"tps", got.TPS.ValueFloat64(), tps},
		{"transactions_processed", got.TransactionsDone.ValueInt64(), processed},
		{"failed_transactions", got.FailedTransactions.ValueInt64(), failed},
		{"latency_avg_ms", got.LatencyAvgMs.ValueFloat64(), latAvg},
		{"latency_stddev_ms", got.LatencyStddevMs.ValueFloat64(), latStddev},
		{"measured_seconds", got.MeasuredSeconds.ValueFloat64(), duration},
		{"output", got.Output.ValueString(), stdout},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, pgbench printed %v", c.name, c.got, c.want)
		}
	}
	if processed == 0 || failed == 0 {
		t.Errorf("%d transactions processed and %d failed: the run should have some of each (see conflictScript)", processed, failed)
	}

	// The per-transaction logs of that run, counted line by line: a latency in whole microseconds for a
	// successful transaction, "failed" for a failed one.
	logs, err := filepath.Glob(filepath.Join(strings.TrimSuffix(runs[0], ".stdout")+".log", "*"))
	if err != nil || len(logs) != 2 {
		t.Fatalf("recorded logs %q (%v), want 2 (one per thread)", logs, err)
	}
	var ok, bad, lines, maxUs int64
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				t.Fatalf("%s: line %q", name, sc.Text())
			}
			lines++
			if fields[2] == "failed" {
				bad++
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				t.Fatalf("%s: line %q: %v", name, sc.Text(), err)
			}
			ok++
			maxUs = max(maxUs, us)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if ok != processed || bad != failed {
		t.Errorf("the log holds %d successful and %d failed transactions, pgbench printed %d and %d", ok, bad, processed, failed)
	}
	if got.LoggedTransactions.ValueInt64() != lines {
		t.Errorf("logged_transactions = %d, the log has %d lines", got.LoggedTransactions.ValueInt64(), lines)
	}
	if got.LatencyMaxMs.ValueFloat64() != float64(maxUs)/1000 {
		t.Errorf("latency_max_ms = %v, the log's slowest transaction took %d us", got.LatencyMaxMs.ValueFloat64(), maxUs)
	}
}

// recordingPgbench writes a stand-in for the pgbench at real into dir and returns its path. It runs the
// real pgbench with the same arguments. For a benchmark run (one with --log) it also keeps what pgbench
// printed on stdout in dir/run-PID.stdout and copies the per-transaction logs into dir/run-PID.log/ before
// the caller removes them; stdout reaches the caller after pgbench ends, stderr as it comes.
func recordingPgbench(t *testing.T, real, dir string) string {
	t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := `#!/bin/sh
case " $* " in
*" --log "*) ;;
*) exec ` + q(real) + ` "$@" ;;
esac
out=` + q(dir) + `/run-$$
` + q(real) + ` "$@" >"$out.stdout"
rc=$?
cat "$out.stdout"
for a in "$@"; do
  case "$a" in
  --log-prefix=*) mkdir "$out.log" && cp "${a#--log-prefix=}".* "$out.log/" || rc=99 ;;
  esac
done
exit $rc
`
	path := filepath.Join(dir, "pgbench")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
