//go:build unix

package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// pgbench runs through internal/localnode, which builds on Unix systems (Linux, macOS, FreeBSD);
// data_source_pgbench_other.go is the data source's answer elsewhere (Windows).

// pgbenchRunner is what the data source runs pgbench with, handed to it by Configure (Clients.Bench):
// where pgbench is found, and the benchmark.
type pgbenchRunner struct {
	find func(name, explicit string) (string, error)
	run  func(ctx context.Context, srv localnode.BenchServer, b localnode.Bench) (localnode.BenchResult, error)
}

// newPgbenchRunner runs pgbench on this machine through internal/localnode.
func newPgbenchRunner() *pgbenchRunner {
	return &pgbenchRunner{find: localnode.FindBinary, run: localnode.Benchmark}
}

func (d *pgbenchDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m pgbenchModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Connection == nil {
		return
	}
	if d.bench == nil {
		resp.Diagnostics.AddError("Provider Not Configured", "pgnvme_pgbench was read before the provider was configured. This is a bug in the provider; please report it.")
		return
	}
	bin, err := d.bench.find("pgbench", m.PgbenchPath.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("pgbench_path"), "pgbench Not Found",
			"The pgbench program could not be found. Install the PostgreSQL client tools (Debian: postgresql-client) "+
				"or set pgbench_path.\n\n"+err.Error())
		return
	}
	cfg := pgConfig(*m.Connection, "")
	db := connect(ctx, cfg, &resp.Diagnostics)
	if db == nil {
		return
	}
	defer db.Close(ctx)
	res, err := d.bench.run(ctx, db, m.bench(ctx, bin, cfg))
	if err != nil {
		addBenchError(&resp.Diagnostics, connectionID(cfg), err)
		return
	}
	m.fill(res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// bench turns the arguments and the connection into one localnode.Bench, logging progress at INFO.
func (m pgbenchModel) bench(ctx context.Context, bin string, cfg pgclient.Config) localnode.Bench {
	o := m.options()
	o.Host, o.Port, o.User, o.Database = cfg.Host, cfg.Port, cfg.User, cfg.Database
	if m.Scale.IsNull() && !m.Initialize.ValueBool() {
		o.Scale = 0 // read from pgbench_branches, as pgbench does
	}
	return localnode.Bench{
		Pgbench: bin, Options: o, Script: m.Script.ValueString(), Initialize: m.Initialize.ValueBool(),
		Password: cfg.Password, SSLMode: cfg.SSLMode, SSLRootCert: cfg.SSLRootCert, SSLCert: cfg.SSLCert, SSLKey: cfg.SSLKey,
		SampleWaitEvents: m.SampleWaitEvents.IsNull() || m.SampleWaitEvents.ValueBool(),
		Info:             func(msg string, fields map[string]any) { tflog.Info(ctx, msg, fields) },
		Warn:             func(msg string, fields map[string]any) { tflog.Warn(ctx, msg, fields) },
	}
}

// benchFailures says, per step of localnode.Benchmark, what failed and what to do.
var benchFailures = map[localnode.BenchStep][2]string{
	localnode.BenchVersion:       {"pgbench Failed", "pgbench --version failed, so the binary cannot be used. Check pgbench_path points at a working pgbench."},
	localnode.BenchServerVersion: {"Server Check Failed", "The server's version could not be read. Check the server is up and the role may run SHOW server_version."},
	localnode.BenchTempDir:       {"Temporary Directory Failed", "No temporary directory for pgbench's logs could be created. Check TMPDIR points at a writable directory with free space."},
	localnode.BenchInitialize:    {"pgbench Initialisation Failed", "pgbench -i could not create the pgbench tables. Check the role may create tables in the database, then apply again."},
	localnode.BenchScript:        {"Writing Script Failed", "The script could not be written to a temporary file. Check TMPDIR points at a writable directory with free space."},
	localnode.BenchOptions:       {"Invalid pgbench Options", "This is a bug in the provider; please report it. The arguments passed validation but make no valid pgbench run."},
	localnode.BenchRun:           {"pgbench Failed", "pgbench failed; no results are reported. Check the script and the server's log, then run again."},
	localnode.BenchSummary:       {"pgbench Output Unreadable", "pgbench ran but its summary could not be read. If this pgbench is not version 15, this is a bug in the provider; please report it."},
	localnode.BenchLog:           {"pgbench Log Unreadable", "pgbench ran but its per-transaction log could not be read, so no percentiles can be given. Check TMPDIR has free space, then run again."},
}

// addBenchError reports a failed benchmark: what happened, what to do, then the error (and pgbench's stderr).
func addBenchError(diags *diag.Diagnostics, server string, err error) {
	var be *localnode.BenchError
	if !errors.As(err, &be) {
		diags.AddError("pgbench Failed", fmt.Sprintf("The benchmark against %s failed; no results are reported.\n\n%s", server, err))
		return
	}
	if be.Step == localnode.BenchScale {
		diags.AddAttributeError(path.Root("scale"), "pgbench Tables Not Found",
			fmt.Sprintf("The scale could not be read from pgbench_branches on %s: set initialize = true and scale, or "+
				"initialise the database with pgbench -i.\n\n%s", server, be.Err))
		return
	}
	f := benchFailures[be.Step]
	detail := fmt.Sprintf("Benchmarking %s: %s\n\n%s", server, f[1], be.Err)
	if be.Stderr != "" {
		detail += "\n\npgbench's output:\n" + be.Stderr
	}
	diags.AddError(f[0], detail)
}

func (m *pgbenchModel) fill(r localnode.BenchResult) {
	sum, stats, o := r.Summary, r.Log, r.Options
	m.TPS = types.Float64Value(sum.TPS)
	m.LatencyAvgMs = types.Float64Value(sum.LatencyAvgMs)
	m.LatencyStddevMs = types.Float64Value(sum.LatencyStddevMs)
	m.LatencyP50Ms = types.Float64Value(stats.P50)
	m.LatencyP90Ms = types.Float64Value(stats.P90)
	m.LatencyP95Ms = types.Float64Value(stats.P95)
	m.LatencyP99Ms = types.Float64Value(stats.P99)
	m.LatencyMaxMs = types.Float64Value(stats.Max)
	m.TransactionsDone = types.Int64Value(sum.Transactions)
	m.FailedTransactions = types.Int64Value(sum.Failed)
	m.MeasuredSeconds = types.Float64Value(sum.DurationSeconds)
	m.Scale = types.Int64Value(int64(o.Scale))
	m.Clients = types.Int64Value(int64(o.Clients))
	m.Threads = types.Int64Value(int64(o.Threads))
	m.ServerVersion = types.StringValue(r.ServerVersion)
	m.PgbenchVersion = types.StringValue(r.PgbenchVersion)
	m.WaitEvents = pgbench.Shares(r.WaitEvents)
	m.WaitSamples = types.Int64Value(r.WaitSamples)
	m.LoggedTransactions = types.Int64Value(stats.Transactions + stats.Failed + stats.Skipped)
	m.Output = types.StringValue(sum.Raw)
}
