package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// pgnvme_cluster's restore block (shared with pgnvme_restore_drill) and restored attribute: their schema and
// their conversions to and from cluster.RestoreInput and cluster.RestoreResult.

type restoreInput struct {
	Backup  types.String `tfsdk:"backup"`
	Archive types.Object `tfsdk:"archive"`
	Target  types.Object `tfsdk:"target"`
}

// A restore is given the same way in pgnvme_cluster's restore block and in pgnvme_restore_drill: a backup,
// an archive block and a target block, with one model (restoreInput), one
// conversion (restoreInputOf, by field name: the archive block's arguments are cluster.RestoreInput's own
// fields, the target block's its Target's) and one definition of each argument (restoreArgs), rendered into the
// resource's schema and the data source's. Blocks, not nested attributes: Terraform drops an unknown key of a
// nested attribute's object before the provider sees it (hashicorp/terraform#33570), so the drill's
// `target = { tme = "..." }` drilled to the end of the archive; in a block it is an error at validate.

// restoreArg is one argument of a restore: its kind and description (true of both uses), and for maps their
// validators.
type restoreArg struct {
	kind        restoreArgKind
	description string
	maps        []validator.Map
}

type restoreArgKind int

const (
	restoreString restoreArgKind = iota
	restoreBool
	restoreMap
)

// restoreBackupDescription is the backup argument's.
const restoreBackupDescription = "The base backup to start from: `latest` (the default) lets pgnvme choose the newest one that finished " +
	"before the target; or a backup's name (pgBackRest label such as `20261202-052928F`, WAL-G name such as " +
	"`base_000000010000000000000002`), which must end before the target."

// restoreArchiveArgs are the archive block's arguments; stanza says what an unset stanza means where the block
// is used.
func restoreArchiveArgs(stanza string) map[string]restoreArg {
	sizeAtLeastOne := []validator.Map{mapvalidator.SizeAtLeast(1)}
	return map[string]restoreArg{
		"pgbackrest_options": {kind: restoreMap, maps: sizeAtLeastOne, description: "pgBackRest repository options (`repo1-*`) of the source " +
			"archive, e.g. another `pgnvme_archive_bucket`'s `pgbackrest_options`, plus credentials where the reader needs them."},
		"walg_env": {kind: restoreMap, maps: sizeAtLeastOne, description: "WAL-G environment of the source archive, e.g. another " +
			"`pgnvme_archive_bucket`'s `walg_env` (its `WALG_S3_PREFIX`, region and endpoint), written by WAL-G."},
		"stanza": {kind: restoreString, description: "With `pgbackrest_options`: the source's pgBackRest stanza, which is the source " +
			"cluster's `name`. " + stanza},
	}
}

// restoreTargetArgs are the target block's arguments.
var restoreTargetArgs = map[string]restoreArg{
	"time": {kind: restoreString, description: "An RFC 3339 time (`2026-12-02T10:30:00Z`): every transaction committed at or before it is " +
		"kept, none after (`recovery_target_time`)."},
	"lsn": {kind: restoreString, description: "A WAL position such as `0/3000060` (`recovery_target_lsn`, inclusive)."},
	"name": {kind: restoreString, description: "A restore point made with `pg_create_restore_point` (`recovery_target_name`). The archive " +
		"does not index restore points: the restore starts from the newest backup (or `backup`), which must precede it."},
	"immediate": {kind: restoreBool, description: "`true` stops as soon as the base backup is consistent: the database as the backup saw it."},
}

// restoreTargetDescription is the target block's.
const restoreTargetDescription = "Where recovery stops: at most one of `time`, `lsn`, `name` and `immediate`. Without it (or with none " +
	"set) the restore replays every segment the archive holds. A target the archive cannot reach is refused at plan with " +
	"the archive's recoverable window, never restored short of it."

// resourceAttributes renders args for a resource's schema.
func resourceAttributes(args map[string]restoreArg) map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for name, a := range args {
		switch a.kind {
		case restoreBool:
			out[name] = schema.BoolAttribute{Optional: true, MarkdownDescription: a.description}
		case restoreMap:
			out[name] = schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: a.description, Validators: a.maps}
		default:
			out[name] = schema.StringAttribute{Optional: true, MarkdownDescription: a.description}
		}
	}
	return out
}

// dataSourceAttributes renders args for a data source's schema.
func dataSourceAttributes(args map[string]restoreArg) map[string]dschema.Attribute {
	out := map[string]dschema.Attribute{}
	for name, a := range args {
		switch a.kind {
		case restoreBool:
			out[name] = dschema.BoolAttribute{Optional: true, MarkdownDescription: a.description}
		case restoreMap:
			out[name] = dschema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: a.description, Validators: a.maps}
		default:
			out[name] = dschema.StringAttribute{Optional: true, MarkdownDescription: a.description}
		}
	}
	return out
}

// clusterRestoreSchema is the restore block.
func clusterRestoreSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Create the cluster from another archive instead of an empty database: a point-in-time clone of another " +
			"cluster, a branch for testing, or disaster recovery from a bucket replicated to another region (see [Restore](#restore)). " +
			"The first node is restored from the archive's newest base backup that finished before the target, replays its WAL to the " +
			"target and becomes the primary of a new timeline; the others are copied from it. The cluster then archives to its own " +
			"`archive`, which must be another location and hold nothing yet. Used at create only: adding or changing the block on an " +
			"existing cluster is refused (removing it is fine). What the restore did is in `restored`.",
		Attributes: map[string]schema.Attribute{
			"backup": schema.StringAttribute{Optional: true, MarkdownDescription: restoreBackupDescription},
		},
		Blocks: map[string]schema.Block{
			"archive": schema.SingleNestedBlock{
				MarkdownDescription: "The archive restored from, given like `archive` (with the source cluster's settings, or its " +
					"replica bucket's in another region). The local platform restores pgBackRest archives; on aws the source is in " +
					"S3, written by the archiver of `archive`, and read by the nodes' instance role (grant it `s3:ListBucket` and " +
					"`s3:GetObject` on the source).",
				Attributes: resourceAttributes(restoreArchiveArgs("Defaults to this cluster's `name`.")),
			},
			"target": schema.SingleNestedBlock{
				MarkdownDescription: restoreTargetDescription,
				Attributes:          resourceAttributes(restoreTargetArgs),
			},
		},
	}
}

// clusterRestoredSchema is the restored attribute.
func clusterRestoredSchema() schema.SingleNestedAttribute {
	str := func(desc string) schema.Attribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	return schema.SingleNestedAttribute{
		Computed: true,
		MarkdownDescription: "What the restore that created the cluster did (a cluster with `restore`); null for a cluster made " +
			"empty, and when it is not known.",
		PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
		Attributes: map[string]schema.Attribute{
			"from":               str("The archive restored from."),
			"backup":             str("The base backup the restore started from."),
			"backup_finished_at": str("When that backup finished (RFC 3339)."),
			"backup_bytes":       num("The database's size in that backup: what the restore wrote before replaying WAL."),
			"target":             str("The target, as the plan said it."),
			"reached_lsn":        str("The last WAL record replayed (`pg_last_wal_replay_lsn()`)."),
			"reached_time":       str("The commit time of the last transaction replayed (`pg_last_xact_replay_timestamp()`, RFC 3339); null when none was."),
			"timeline":           num("The timeline the restored primary started."),
			"wal_replayed_bytes": num("WAL replayed from the backup's start to `reached_lsn`, in bytes."),
			"seconds":            schema.Float64Attribute{Computed: true, MarkdownDescription: "How long the restore took, from the first byte fetched to the end of recovery."},
			"finished_at":        str("When the restore ended (RFC 3339)."),
		},
	}
}

// restoreSpecInput is the restore block m as cluster.RestoreInput (nil when not given); ok is false while
// any of it is unknown.
func restoreSpecInput(ctx context.Context, m types.Object, diags *diag.Diagnostics) (*cluster.RestoreInput, bool) {
	if m.IsUnknown() {
		return nil, false
	}
	if m.IsNull() {
		return nil, true
	}
	var r restoreInput
	diags.Append(m.As(ctx, &r, basetypes.ObjectAsOptions{})...)
	return restoreInputOf(ctx, r, diags)
}

// restoreInputOf is a restore as given (the restore block's, or a drill's arguments) as
// cluster.RestoreInput; ok is false while any of it is unknown.
func restoreInputOf(ctx context.Context, r restoreInput, diags *diag.Diagnostics) (*cluster.RestoreInput, bool) {
	if hasUnknown(r.Backup) || hasUnknown(r.Archive) || hasUnknown(r.Target) {
		return nil, false
	}
	in := &cluster.RestoreInput{}
	expand(ctx, r, in, diags)
	expandInto(ctx, r.Archive, in, diags)
	return in, true
}

// restoredValue is restored for res (null for nil), attribute by field (cluster.RestoreResult's names); a
// time not known (reached_time when no transaction was replayed) is null.
func restoredValue(ctx context.Context, res *cluster.RestoreResult, diags *diag.Diagnostics) types.Object {
	if res == nil {
		return types.ObjectNull(clusterRestoredAttrTypes)
	}
	v, d := types.ObjectValue(clusterRestoredAttrTypes, flattenReport(ctx, res, clusterRestoredAttrTypes, diags))
	diags.Append(d...)
	return v
}
