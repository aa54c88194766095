package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

var (
	_ datasource.DataSource              = (*restoreDrillDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*restoreDrillDataSource)(nil)
)

// NewRestoreDrillDataSource is the constructor of pgnvme_restore_drill.
func NewRestoreDrillDataSource() datasource.DataSource { return &restoreDrillDataSource{} }

// restoreDrillDataSource runs drills with what Configure hands it (Clients.Drills).
type restoreDrillDataSource struct {
	drills *restoreDrills
}

func (d *restoreDrillDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := clientsFrom(req.ProviderData, &resp.Diagnostics); c != nil {
		d.drills = c.Drills
	}
}

// restoreDrillModel's archive, target and backup are a restore given as pgnvme_cluster's restore block gives
// one (restoreInput, converted by restoreInputOf).
type restoreDrillModel struct {
	Archive   types.Object `tfsdk:"archive"`
	Target    types.Object `tfsdk:"target"`
	Backup    types.String `tfsdk:"backup"`
	CheckSQL  types.String `tfsdk:"check_sql"`
	WorkDir   types.String `tfsdk:"work_dir"`
	RunAsUser types.String `tfsdk:"run_as_user"`

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

// restore is the drill's restore (cluster.RestoreOf of restoreInputOf, as for the restore block), its
// problems on diags: the restore block's (cluster.RestoreProblems), and a pgBackRest archive without its
// stanza (there is no cluster name for it to default to). ok is false after an error.
func (m restoreDrillModel) restore(ctx context.Context, diags *diag.Diagnostics) (cluster.Restore, bool) {
	in, ok := restoreInputOf(ctx, restoreInput{Backup: m.Backup, Archive: m.Archive, Target: m.Target}, diags)
	if !ok || diags.HasError() {
		return cluster.Restore{}, false
	}
	r := *cluster.RestoreOf(in)
	problems := cluster.RestoreProblems(nil, r)
	if len(r.Archive.PgBackRestOptions) > 0 && r.Archive.Stanza == "" {
		problems = append(problems, cluster.Errorf([]string{"archive", "stanza"}, "Missing Stanza",
			"A pgBackRest archive is read by its stanza: set archive.stanza to the name of the cluster that archived into it."))
	}
	for _, fe := range problems {
		diags.AddAttributeError(attrPath(fe.Path), fe.Summary, fe.Detail)
	}
	return r, !diags.HasError()
}

// drillArchiveExample is the error's example of the drill's archive block.
const drillArchiveExample = "archive {\n  walg_env = pgnvme_archive_bucket.orders.walg_env\n}"

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
			"backup":      opt(restoreBackupDescription),
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
		// pgnvme_cluster's restore.archive and restore.target (restoreArchiveArgs, restoreTargetArgs), as blocks:
		// a misspelt argument is an error at validate.
		Blocks: map[string]schema.Block{
			"archive": schema.SingleNestedBlock{
				MarkdownDescription: "The archive to restore from (required), given as `pgnvme_cluster`'s `restore.archive` is. The machine " +
					"that runs Terraform reads it: add credentials to `pgbackrest_options` or `walg_env` unless its own reach the bucket. A " +
					"WAL-G archive is read from S3 with `walg_env`, and `wal-g backup-fetch`, `wal-fetch` and `wal-verify` run with it.",
				Validators: []validator.Object{requiredBlock(drillArchiveExample)},
				Attributes: dataSourceAttributes(restoreArchiveArgs("The drill needs it with `pgbackrest_options`.")),
			},
			"target": schema.SingleNestedBlock{
				MarkdownDescription: restoreTargetDescription,
				Attributes:          dataSourceAttributes(restoreTargetArgs),
			},
		},
	}
}
