package provider

import (
	"context"
	"fmt"
	"runtime"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

var (
	_ datasource.DataSource                     = (*pgbenchDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*pgbenchDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig   = (*pgbenchDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*pgbenchDataSource)(nil)
)

// NewPgbenchDataSource is the constructor of pgnvme_pgbench.
func NewPgbenchDataSource() datasource.DataSource { return &pgbenchDataSource{} }

// pgbenchDataSource runs pgbench with what Configure hands it (Clients.Bench).
type pgbenchDataSource struct {
	bench *pgbenchRunner
}

func (d *pgbenchDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := clientsFrom(req.ProviderData, &resp.Diagnostics); c != nil {
		d.bench = c.Bench
	}
}

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
