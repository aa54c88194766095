package provider

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

var (
	_ datasource.DataSource                     = (*pgbenchDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*pgbenchDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig   = (*pgbenchDataSource)(nil)
)

// NewPgbenchDataSource is the constructor of pgnvme_pgbench.
func NewPgbenchDataSource() datasource.DataSource { return &pgbenchDataSource{} }

type pgbenchDataSource struct{}

type pgbenchModel struct {
	Connection       *connectionModel `tfsdk:"server"`
	Builtin          types.String     `tfsdk:"builtin"`
	Script           types.String     `tfsdk:"script"`
	Initialize       types.Bool       `tfsdk:"initialize"`
	Scale            types.Int64      `tfsdk:"scale"`
	Clients          types.Int64      `tfsdk:"clients"`
	Threads          types.Int64      `tfsdk:"threads"`
	DurationSeconds  types.Int64      `tfsdk:"duration_seconds"`
	Transactions     types.Int64      `tfsdk:"transactions"`
	Protocol         types.String     `tfsdk:"protocol"`
	Rate             types.Float64    `tfsdk:"rate"`
	SampleWaitEvents types.Bool       `tfsdk:"sample_wait_events"`
	PgbenchPath      types.String     `tfsdk:"pgbench_path"`

	TPS                types.Float64      `tfsdk:"tps"`
	LatencyAvgMs       types.Float64      `tfsdk:"latency_avg_ms"`
	LatencyStddevMs    types.Float64      `tfsdk:"latency_stddev_ms"`
	LatencyP50Ms       types.Float64      `tfsdk:"latency_p50_ms"`
	LatencyP90Ms       types.Float64      `tfsdk:"latency_p90_ms"`
	LatencyP95Ms       types.Float64      `tfsdk:"latency_p95_ms"`
	LatencyP99Ms       types.Float64      `tfsdk:"latency_p99_ms"`
	LatencyMaxMs       types.Float64      `tfsdk:"latency_max_ms"`
	TransactionsDone   types.Int64        `tfsdk:"transactions_processed"`
	FailedTransactions types.Int64        `tfsdk:"failed_transactions"`
	MeasuredSeconds    types.Float64      `tfsdk:"measured_seconds"`
	ServerVersion      types.String       `tfsdk:"server_version"`
	PgbenchVersion     types.String       `tfsdk:"pgbench_version"`
	WaitEvents         map[string]float64 `tfsdk:"wait_events"`
	WaitSamples        types.Int64        `tfsdk:"wait_event_samples"`
	LoggedTransactions types.Int64        `tfsdk:"logged_transactions"`
	Output             types.String       `tfsdk:"output"`
}

func (d *pgbenchDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_pgbench"
}

func (d *pgbenchDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	ms := func(desc string) schema.Float64Attribute {
		return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Runs the real `pgbench` against a server and returns throughput, latency percentiles " +
			"and where the server's backends waited. A data source runs on every plan and apply, so this one " +
			"benchmarks every time Terraform reads it: keep it in a dedicated configuration or workspace, or behind a " +
			"`count` you switch on, and gate changes with a `check` block or a postcondition on its results.",
		Attributes: map[string]schema.Attribute{
			"builtin": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Built-in script: `tpcb-like` (TPC-B-like, pgbench's default), `simple-update` or `select-only`. Exactly one of `builtin` and `script` is required.",
				Validators:          []validator.String{stringvalidator.OneOf(pgbench.Builtins...)},
			},
			"script": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Text of a custom pgbench script, e.g. the talk's random UPDATE:\n" +
					"`\\set aid random(1, 100000 * :scale)` / `UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;`. " +
					"The scale is always passed (`-s`): pgbench does not detect it for custom scripts.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"initialize": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Run `pgbench -i -s scale` first (drops and re-creates the `pgbench_*` tables). Needs `scale`. Defaults to `false`.",
			},
			"scale": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Scale factor (100,000 `pgbench_accounts` rows each; see `pgbench_size_gib`). Unset: read from `pgbench_branches`, as pgbench does.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"clients": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Concurrent client sessions (`-c`). Defaults to `8`; at least 1.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"threads": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "pgbench worker threads (`-j`), at most `clients`. Defaults to the smaller of `clients` and this machine's CPUs.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"duration_seconds": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Run for this many seconds (`-T`). Defaults to `30` when `transactions` is unset. Conflicts with `transactions`.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"transactions": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Run this many transactions per client (`-t`) instead of a duration.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"protocol": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Query protocol (`-M`): `simple` (default), `extended` or `prepared`.",
				Validators:          []validator.String{stringvalidator.OneOf(pgbench.Protocols...)},
			},
			"rate": schema.Float64Attribute{
				Optional:            true,
				MarkdownDescription: "Throttle to this many transactions per second in total (`-R`). Unset: as fast as possible.",
				Validators:          []validator.Float64{float64validator.AtLeast(0.001)},
			},
			"sample_wait_events": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Sample `pg_stat_activity` once a second during the run, counting pgbench's active " +
					"backends by wait event, for `wait_events`. Defaults to `true`.",
			},
			"pgbench_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path of the `pgbench` binary. Unset: `PATH`, then `/usr/lib/postgresql/*/bin` (newest).",
			},

			"tps":                    ms("Transactions per second, as pgbench printed it (without initial connection time)."),
			"latency_avg_ms":         ms("Average latency in ms, as pgbench printed it."),
			"latency_stddev_ms":      ms("Latency standard deviation in ms, as pgbench printed it (pgbench prints it when throttling or reporting progress; the provider always asks for progress)."),
			"latency_p50_ms":         ms("Median transaction latency in ms, from pgbench's per-transaction log (nearest rank)."),
			"latency_p90_ms":         ms("90th percentile latency in ms, from the log."),
			"latency_p95_ms":         ms("95th percentile latency in ms, from the log."),
			"latency_p99_ms":         ms("99th percentile latency in ms, from the log."),
			"latency_max_ms":         ms("Slowest transaction in ms, from the log."),
			"transactions_processed": schema.Int64Attribute{Computed: true, MarkdownDescription: "Transactions processed, as pgbench printed it (equals the log's line count)."},
			"failed_transactions":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Failed transactions, as pgbench printed it."},
			"measured_seconds":       ms("Length of the run in seconds as pgbench reported it."),
			"server_version":         schema.StringAttribute{Computed: true, MarkdownDescription: "The server's `server_version`."},
			"pgbench_version":        schema.StringAttribute{Computed: true, MarkdownDescription: "The pgbench binary's version."},
			"wait_events": schema.MapAttribute{
				ElementType: types.Float64Type,
				Computed:    true,
				MarkdownDescription: "Share of sampled pgbench backends in each wait event (`type:event`, e.g. " +
					"`IO:DataFileRead`, `LWLock:WALWrite`, `IPC:SyncRep`), and `CPU` for none; the shares sum to 1. Empty " +
					"when sampling is off or no sample saw an active backend.",
			},
			"wait_event_samples":  schema.Int64Attribute{Computed: true, MarkdownDescription: "Backend observations behind `wait_events`."},
			"logged_transactions": schema.Int64Attribute{Computed: true, MarkdownDescription: "Lines in pgbench's per-transaction log: `transactions_processed` plus the failed (and skipped) transactions. The percentiles are over the successful ones only."},
			"output":              schema.StringAttribute{Computed: true, MarkdownDescription: "pgbench's own summary, verbatim."},
		},
		Blocks: map[string]schema.Block{"server": connectionDataSourceBlock()},
	}
}

func (d *pgbenchDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("builtin"), path.MatchRoot("script")),
		datasourcevalidator.Conflicting(path.MatchRoot("duration_seconds"), path.MatchRoot("transactions")),
	}
}

// options turns the arguments into pgbench.Options (without connection, script and log paths).
func (m pgbenchModel) options() pgbench.Options {
	clients := int(int64Or(m.Clients, 8))
	threads := int(int64Or(m.Threads, int64(min(clients, runtime.NumCPU()))))
	o := pgbench.Options{
		Builtin:         stringOr(m.Builtin, ""),
		Scale:           int(int64Or(m.Scale, 1)),
		Clients:         clients,
		Threads:         threads,
		DurationSeconds: int(int64Or(m.DurationSeconds, 0)),
		Transactions:    int(int64Or(m.Transactions, 0)),
		Protocol:        stringOr(m.Protocol, pgbench.ProtocolSimple),
		Rate:            float64Or(m.Rate, 0),
		ProgressSeconds: 5,
	}
	if o.Transactions == 0 && o.DurationSeconds == 0 {
		o.DurationSeconds = 30
	}
	return o
}

func (d *pgbenchDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m pgbenchModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if known(m.Threads) && known(m.Clients) && m.Threads.ValueInt64() > m.Clients.ValueInt64() {
		resp.Diagnostics.AddAttributeError(path.Root("threads"), "Too Many Threads",
			fmt.Sprintf("threads (%d) is more than clients (%d): each thread needs at least one client. Lower threads or raise clients.",
				m.Threads.ValueInt64(), m.Clients.ValueInt64()))
	}
	if known(m.Threads) && m.Clients.IsNull() && m.Threads.ValueInt64() > 8 {
		resp.Diagnostics.AddAttributeError(path.Root("threads"), "Too Many Threads",
			fmt.Sprintf("threads (%d) is more than the default 8 clients. Set clients too, or lower threads.", m.Threads.ValueInt64()))
	}
	if m.Initialize.ValueBool() && m.Scale.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("scale"), "Missing Scale",
			"initialize = true creates the pgbench tables at a scale: set scale (e.g. 10 for about 150 MiB).")
	}
}

func (d *pgbenchDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m pgbenchModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Connection == nil {
		return
	}
	bin, err := localnode.FindBinary("pgbench", m.PgbenchPath.ValueString())
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
	res, err := localnode.Benchmark(ctx, db, m.bench(ctx, bin, cfg))
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
