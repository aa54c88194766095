package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSource = (*replicationStatusDataSource)(nil)

// NewReplicationStatusDataSource is the constructor of pgnvme_replication_status.
func NewReplicationStatusDataSource() datasource.DataSource { return &replicationStatusDataSource{} }

type replicationStatusDataSource struct{}

type replicationStatusModel struct {
	Connection              *connectionModel `tfsdk:"server"`
	IsPrimary               types.Bool       `tfsdk:"is_primary"`
	SynchronousStandbyNames types.String     `tfsdk:"synchronous_standby_names"`
	Standbys                []standbyModel   `tfsdk:"standbys"`
	Archiver                *archiverModel   `tfsdk:"archiver"`
	CurrentWALLSN           types.String     `tfsdk:"current_wal_lsn"`
}

type standbyModel struct {
	ApplicationName  string  `tfsdk:"application_name"`
	ClientAddr       string  `tfsdk:"client_addr"`
	State            string  `tfsdk:"state"`
	SyncState        string  `tfsdk:"sync_state"`
	SentLSN          string  `tfsdk:"sent_lsn"`
	FlushLSN         string  `tfsdk:"flush_lsn"`
	ReplayLSN        string  `tfsdk:"replay_lsn"`
	LagBytes         int64   `tfsdk:"lag_bytes"`
	ReplayLagSeconds float64 `tfsdk:"replay_lag_seconds"`
}

type archiverModel struct {
	ArchivedCount   int64  `tfsdk:"archived_count"`
	FailedCount     int64  `tfsdk:"failed_count"`
	LastArchivedWAL string `tfsdk:"last_archived_wal"`
	LastArchivedAt  string `tfsdk:"last_archived_at"`
	LastFailedWAL   string `tfsdk:"last_failed_wal"`
	LastFailedAt    string `tfsdk:"last_failed_at"`
}

func (d *replicationStatusDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_replication_status"
}

func (d *replicationStatusDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Replication and archiving health of a PostgreSQL server, read live on every plan: " +
			"the synchronous setting, each standby's state and lag (`pg_stat_replication`) and the archiver's counters " +
			"(`pg_stat_archiver`). Use it in `check` blocks and postconditions.",
		Attributes: map[string]schema.Attribute{
			"is_primary":                schema.BoolAttribute{Computed: true, MarkdownDescription: "True unless the server is in recovery (a standby)."},
			"synchronous_standby_names": str("The live `synchronous_standby_names`; `\"\"` means asynchronous."),
			"standbys": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Connected standbys (WAL senders), ordered by `application_name`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"application_name":   str("The standby's `application_name`, as matched by `synchronous_standby_names`."),
					"client_addr":        str("Its address; `\"\"` over a Unix socket."),
					"state":              str("`startup`, `catchup`, `streaming`, `backup` or `stopping`."),
					"sync_state":         str("`async`, `potential`, `sync` or `quorum`."),
					"sent_lsn":           str("Last WAL location sent, e.g. `0/3000148`."),
					"flush_lsn":          str("Last WAL location the standby flushed to disk."),
					"replay_lsn":         str("Last WAL location the standby replayed."),
					"lag_bytes":          num("Bytes of WAL between the primary's current location and `replay_lsn`."),
					"replay_lag_seconds": schema.Float64Attribute{Computed: true, MarkdownDescription: "`replay_lag` in seconds; 0 when idle or unknown."},
				}},
			},
			"archiver": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "`pg_stat_archiver`: continuous archiving (WAL-G, pgBackRest) at a glance.",
				Attributes: map[string]schema.Attribute{
					"archived_count":    num("WAL files archived since the statistics were reset."),
					"failed_count":      num("Failed attempts to archive."),
					"last_archived_wal": str("Name of the last WAL file archived; `\"\"` when none."),
					"last_archived_at":  str("When it was archived (RFC 3339); `\"\"` when never."),
					"last_failed_wal":   str("Name of the last WAL file that failed to archive; `\"\"` when none."),
					"last_failed_at":    str("When the last failure happened (RFC 3339); `\"\"` when never."),
				},
			},
			"current_wal_lsn": str("On a primary `pg_current_wal_lsn()`; on a standby the last replayed location."),
		},
		Blocks: map[string]schema.Block{"server": connectionDataSourceBlock()},
	}
}

func (d *replicationStatusDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m replicationStatusModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Connection == nil {
		return
	}
	cfg := pgConfig(*m.Connection, "")
	db := connect(ctx, cfg, &resp.Diagnostics)
	if db == nil {
		return
	}
	defer db.Close(ctx)
	fail := func(err error) bool {
		if err != nil {
			resp.Diagnostics.AddError("Reading Replication Status Failed", fmt.Sprintf("The replication status of %s "+
				"could not be read. Check the server is up and the role may read pg_stat_replication (superuser or "+
				"pg_monitor), then refresh again.\n\n%s", connectionID(cfg), err))
			return true
		}
		return false
	}
	inRecovery, err := db.IsInRecovery(ctx)
	if fail(err) {
		return
	}
	names, err := db.Setting(ctx, "synchronous_standby_names")
	if fail(err) {
		return
	}
	standbys, err := db.Standbys(ctx)
	if fail(err) {
		return
	}
	arch, err := db.Archiver(ctx)
	if fail(err) {
		return
	}
	lsn, err := db.CurrentWALLSN(ctx)
	if fail(err) {
		return
	}
	m.IsPrimary = types.BoolValue(!inRecovery)
	m.SynchronousStandbyNames = types.StringValue(names)
	m.Standbys = make([]standbyModel, 0, len(standbys))
	for _, s := range standbys {
		m.Standbys = append(m.Standbys, standbyModel{
			ApplicationName: s.ApplicationName, ClientAddr: s.ClientAddr, State: s.State, SyncState: s.SyncState,
			SentLSN: s.SentLSN, FlushLSN: s.FlushLSN, ReplayLSN: s.ReplayLSN, LagBytes: s.LagBytes, ReplayLagSeconds: s.ReplayLagSeconds,
		})
	}
	m.Archiver = &archiverModel{
		ArchivedCount: arch.ArchivedCount, FailedCount: arch.FailedCount,
		LastArchivedWAL: arch.LastArchivedWAL, LastArchivedAt: arch.LastArchivedAt,
		LastFailedWAL: arch.LastFailedWAL, LastFailedAt: arch.LastFailedAt,
	}
	m.CurrentWALLSN = types.StringValue(lsn)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
