package pgbench_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// TestRunTalkScriptOnPostgres runs the real pgbench, of the server's own
// version, with InitArgs and RunArgs against a throwaway server
// (pgfixture's): the talk's script at scale 1 for 3 s with 2 clients on 2
// threads, a per-transaction log and progress every second. It parses
// stdout, stderr and the two log files with this package and checks them
// against each other.
func TestRunTalkScriptOnPostgres(t *testing.T) {
	pg := pgfixture.Start(t, pgfixture.Options{})
	bin := pg.Bin(t, "pgbench")
	pg.Psql(t, "postgres", "CREATE DATABASE bench")

	dir := t.TempDir()
	script := filepath.Join(dir, "talk.sql")
	if err := os.WriteFile(script, []byte(pgbench.TalkScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "log"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := pgbench.Options{
		Host: "127.0.0.1", Port: pg.Port(), User: "postgres", Database: "bench",
		ScriptPath: script, Scale: 1, Clients: 2, Threads: 2, DurationSeconds: 3,
		Protocol: pgbench.ProtocolSimple, ProgressSeconds: 1, LogPrefix: filepath.Join(dir, "log", "pgbench"),
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("pgbench %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}

	versionOut, _ := run("--version")
	version, err := pgbench.ParseVersion(versionOut)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, strconv.Itoa(pg.Major)+".") {
		t.Errorf("pgbench version %q, want %d.x (the server's)", version, pg.Major)
	}

	run(pgbench.InitArgs(o)...)
	stdout, stderr := run(pgbench.RunArgs(o)...)
	t.Logf("pgbench %s\n%s%s", strings.Join(pgbench.RunArgs(o), " "), stderr, stdout)

	sum, err := pgbench.ParseSummary(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if got, printed := formatTPS(sum.TPS), printedTPS(t, stdout); got != printed {
		t.Errorf("parsed TPS %v formats as %s, pgbench printed %s", sum.TPS, got, printed)
	}
	if sum.PgbenchVersion != version || sum.ServerVersion != version {
		t.Errorf("summary versions %q, %q, want %q (the same server)", sum.PgbenchVersion, sum.ServerVersion, version)
	}
	if sum.Clients != 2 || sum.Threads != 2 || sum.Scale != 1 || sum.DurationSeconds != 3 || sum.Protocol != "simple" {
		t.Errorf("summary settings (clients, threads, scale, duration, protocol) = (%d, %d, %d, %v, %s), want (2, 2, 1, 3, simple)",
			sum.Clients, sum.Threads, sum.Scale, sum.DurationSeconds, sum.Protocol)
	}
	if sum.Transactions <= 0 || sum.Failed != 0 || !sum.HasStddev {
		t.Errorf("summary: %d transactions, %d failed, stddev printed %v; want some, none and true", sum.Transactions, sum.Failed, sum.HasStddev)
	}

	var progress int
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "progress:") {
			continue
		}
		p, ok := pgbench.ParseProgress(line)
		if !ok {
			t.Errorf("progress line %q does not parse", line)
			continue
		}
		if p.TPS <= 0 || p.Elapsed <= 0 {
			t.Errorf("progress line %q parsed as %+v", line, p)
		}
		progress++
	}
	if progress < 2 {
		t.Errorf("%d progress lines in 3 s at 1 s intervals, want 2 or 3:\n%s", progress, stderr)
	}

	files, err := filepath.Glob(o.LogPrefix + ".*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("log files %q, want 2 (one per thread)", files)
	}
	var acc pgbench.LogAccumulator
	var lines int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += int64(bytes.Count(b, []byte("\n")))
		if err := acc.Add(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	st, err := acc.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log: %d lines, %+v", lines, st)
	if st.Transactions != sum.Transactions || st.Transactions != lines {
		t.Errorf("transactions: summary %d, log %d, log lines %d; want all equal", sum.Transactions, st.Transactions, lines)
	}
	checkOrdered(t, st)
	// With --progress pgbench prints the mean of the latencies it logs.
	if d := math.Abs(st.Mean - sum.LatencyAvgMs); d > meanTolerance {
		t.Errorf("log mean %.6f ms is %.6f ms from the printed average %.3f ms (tolerance %.4f)", st.Mean, d, sum.LatencyAvgMs, meanTolerance)
	}
}
