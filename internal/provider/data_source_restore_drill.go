package provider

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

var _ datasource.DataSource = (*restoreDrillDataSource)(nil)

// NewRestoreDrillDataSource is the constructor of pgnvme_restore_drill.
func NewRestoreDrillDataSource() datasource.DataSource { return &restoreDrillDataSource{} }

type restoreDrillDataSource struct{}

type restoreDrillModel struct {
	Archive   *drillArchiveModel `tfsdk:"archive"`
	Target    *drillTargetModel  `tfsdk:"target"`
	Backup    types.String       `tfsdk:"backup"`
	CheckSQL  types.String       `tfsdk:"check_sql"`
	WorkDir   types.String       `tfsdk:"work_dir"`
	RunAsUser types.String       `tfsdk:"run_as_user"`

	RestoreSeconds     types.Float64 `tfsdk:"restore_seconds"`
	RestoredBackup     types.String  `tfsdk:"restored_backup"`
	BackupFinishedAt   types.String  `tfsdk:"backup_finished_at"`
	RestoredBytes      types.Int64   `tfsdk:"restored_bytes"`
	ReachedLSN         types.String  `tfsdk:"reached_lsn"`
	ReachedTime        types.String  `tfsdk:"reached_time"`
	WALReplayedBytes   types.Int64   `tfsdk:"wal_replayed_bytes"`
	ArchiveLastWAL     types.String  `tfsdk:"archive_last_wal"`
	RecoverableFrom    types.String  `tfsdk:"recoverable_from"`
	RecoverableTo      types.String  `tfsdk:"recoverable_to"`
	VerificationOK     types.Bool    `tfsdk:"verification_ok"`
	VerificationDetail types.String  `tfsdk:"verification_detail"`
	CheckOK            types.Bool    `tfsdk:"check_ok"`
}

type drillArchiveModel struct {
	PgBackRestOptions map[string]string `tfsdk:"pgbackrest_options"`
	WALGEnv           map[string]string `tfsdk:"walg_env"`
	Stanza            types.String      `tfsdk:"stanza"`
}

type drillTargetModel struct {
	Time      types.String `tfsdk:"time"`
	LSN       types.String `tfsdk:"lsn"`
	Name      types.String `tfsdk:"name"`
	Immediate types.Bool   `tfsdk:"immediate"`
}

func (d *restoreDrillDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restore_drill"
}

func (d *restoreDrillDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	opt := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A restore drill, run on every plan: a base backup of an archive is restored into a scratch PostgreSQL " +
			"node on the machine that runs Terraform (as a restore of a cluster would: the newest backup before the target, then its " +
			"WAL), checked, and removed. It reports how long the restore took, what it reached and whether the archive is sound " +
			"(`pgbackrest verify` or `wal-g wal-verify`, and the WAL's continuity), for `check` blocks in a scheduled job: a restore " +
			"nobody tries is a restore nobody knows works. The drill only reads the archive (the scratch node never archives). It " +
			"needs PostgreSQL on that machine (the provider's local platform's tools), the archive's archiver (pgBackRest, or WAL-G " +
			"as the nodes run it: `wal-g` on `PATH`), and room for the database in `work_dir`. See the restore guide.",
		Attributes: map[string]schema.Attribute{
			"archive": schema.SingleNestedAttribute{
				Required:            true,
				MarkdownDescription: "The archive to restore from, given like `pgnvme_cluster`'s `archive`.",
				Attributes: map[string]schema.Attribute{
					"pgbackrest_options": schema.MapAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "pgBackRest repository options (`repo1-*`), e.g. `pgnvme_archive_bucket.x.pgbackrest_options` plus credentials.",
						Validators:          []validator.Map{mapvalidator.SizeAtLeast(1)}},
					"walg_env": schema.MapAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "A WAL-G archive's environment, e.g. `pgnvme_archive_bucket.x.walg_env` (its `WALG_S3_PREFIX`, region and " +
							"endpoint), plus credentials unless the machine's own reach the bucket. The drill reads the archive from S3 with it and runs " +
							"`wal-g backup-fetch`, `wal-fetch` and `wal-verify` with it.",
						Validators: []validator.Map{mapvalidator.SizeAtLeast(1)}},
					"stanza": schema.StringAttribute{Optional: true, MarkdownDescription: "With `pgbackrest_options` (required with them): the pgBackRest stanza, which is the cluster's `name`."},
				},
			},
			"target": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Where recovery stops, as `pgnvme_cluster`'s `restore.target`: at most one of `time`, `lsn`, `name`, `immediate`. Unset: the end of the archive.",
				Attributes: map[string]schema.Attribute{
					"time":      opt("An RFC 3339 time; every transaction committed at or before it is kept."),
					"lsn":       opt("A WAL position such as `0/3000060`."),
					"name":      opt("A restore point made with `pg_create_restore_point`."),
					"immediate": schema.BoolAttribute{Optional: true, MarkdownDescription: "`true` stops as soon as the backup is consistent."},
				},
			},
			"backup":      opt("`latest` (the default: the newest backup before the target) or a backup's label."),
			"check_sql":   opt("A query the restored database must answer with one boolean, such as `SELECT count(*) > 0 FROM orders`; its answer is `check_ok`."),
			"work_dir":    opt("Where the scratch node's directory is made (and removed); the system's temporary directory by default. It needs room for the database."),
			"run_as_user": opt("The OS user the scratch node runs as; `postgres` when Terraform runs as root, else the current user."),

			"restore_seconds":    schema.Float64Attribute{Computed: true, MarkdownDescription: "From the first byte fetched to the end of recovery: the restore's RTO on this machine."},
			"restored_backup":    str("The base backup restored."),
			"backup_finished_at": str("When that backup finished (RFC 3339)."),
			"restored_bytes":     num("The database's size in that backup."),
			"reached_lsn":        str("The last WAL record replayed."),
			"reached_time":       str("The commit time of the last transaction replayed (RFC 3339); null when none was."),
			"wal_replayed_bytes": num("WAL replayed from the backup's start."),
			"archive_last_wal":   str("The archive's newest WAL segment when the drill read it."),
			"recoverable_from":   str("The oldest moment the archive can be restored to (its oldest backup's end)."),
			"recoverable_to":     str("The newest moment it can be restored to (its newest segment's arrival)."),
			"verification_ok": schema.BoolAttribute{Computed: true, MarkdownDescription: "True when the archiver's verification passed (`pgbackrest verify`: every backup file and " +
				"WAL segment valid; `wal-g wal-verify integrity timeline`: every segment from the oldest backup's start to the newest present, no newer " +
				"timeline), the WAL is continuous from the oldest backup to the newest segment, and a restore to the end reached the newest segment."},
			"verification_detail": str("What was checked, or what failed (a missing segment is named)."),
			"check_ok":            schema.BoolAttribute{Computed: true, MarkdownDescription: "`check_sql`'s answer; null without it."},
		},
	}
}

func (d *restoreDrillDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m restoreDrillModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r := cluster.Restore{Backup: m.Backup.ValueString()}
	r.Archive.PgBackRestOptions, r.Archive.WALGEnv, r.Archive.Stanza = m.Archive.PgBackRestOptions, m.Archive.WALGEnv, m.Archive.Stanza.ValueString()
	if t := m.Target; t != nil {
		r.TargetTime, r.TargetLSN, r.TargetName, r.TargetImmediate = t.Time.ValueString(), t.LSN.ValueString(), t.Name.ValueString(), t.Immediate.ValueBool()
	}
	problems := cluster.RestoreProblems(nil, r)
	if len(r.Archive.PgBackRestOptions) > 0 && r.Archive.Stanza == "" {
		problems = append(problems, cluster.Errorf([]string{"archive", "stanza"}, "Missing Stanza",
			"A pgBackRest archive is read by its stanza: set archive.stanza to the name of the cluster that archived into it."))
	}
	for _, fe := range problems {
		resp.Diagnostics.AddAttributeError(attrPath(fe.Path), fe.Summary, fe.Detail)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	mgr, err := localcluster.NewManager(m.RunAsUser.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Restore Drill Not Possible Here", "The drill runs PostgreSQL on the machine that runs Terraform, and it cannot: "+err.Error())
		return
	}
	port, err := freeLoopbackPort()
	if err != nil {
		resp.Diagnostics.AddError("Restore Drill Not Possible Here", "No free TCP port on 127.0.0.1 for the scratch node: "+err.Error())
		return
	}
	res, err := mgr.RunDrill(ctx, nil, localcluster.Drill{Restore: r, CheckSQL: m.CheckSQL.ValueString(), WorkDir: m.WorkDir.ValueString(), Port: port})
	if err != nil {
		addClusterError(&resp.Diagnostics, "Restore Drill Failed", "The archive could not be restored into the scratch node (which was removed). "+
			"This is what a restore of a cluster from this archive would meet: fix it, and run the drill again.", err)
		return
	}
	at := func(t time.Time) types.String {
		if t.IsZero() {
			return types.StringNull()
		}
		return types.StringValue(t.UTC().Format(time.RFC3339Nano))
	}
	rs := res.Restored
	m.RestoreSeconds, m.RestoredBackup, m.BackupFinishedAt = types.Float64Value(rs.Seconds), types.StringValue(rs.Backup), at(rs.BackupFinishedAt)
	m.RestoredBytes, m.ReachedLSN, m.ReachedTime = types.Int64Value(rs.BackupBytes), types.StringValue(rs.ReachedLSN), at(rs.ReachedTime)
	m.WALReplayedBytes, m.ArchiveLastWAL = types.Int64Value(rs.WALReplayedBytes), types.StringValue(res.Health.LastArchived)
	m.RecoverableFrom, m.RecoverableTo = at(res.Health.RecoverableFrom), at(res.Health.RecoverableTo)
	m.VerificationOK, m.VerificationDetail = types.BoolValue(res.Verified), types.StringValue(res.Detail)
	m.CheckOK = types.BoolNull()
	if res.CheckOK != nil {
		m.CheckOK = types.BoolValue(*res.CheckOK)
	}
	if !res.Verified {
		resp.Diagnostics.AddAttributeWarning(path.Root("verification_ok"), "Archive Verification Failed", res.Detail)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// freeLoopbackPort is a TCP port on 127.0.0.1 that nothing listens on now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("unexpected address %v", l.Addr())
	}
	return addr.Port, nil
}
