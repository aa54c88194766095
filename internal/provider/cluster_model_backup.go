package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// pgnvme_cluster's backup block: its schema and its conversions to and from cluster.BackupInput.

type backupInput struct {
	Schedule  types.String `tfsdk:"schedule"`
	FullEvery types.Int64  `tfsdk:"full_every"`
	Retention types.Object `tfsdk:"retention"`
}

// clusterBackupSchema is the backup block.
func clusterBackupSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Scheduled base backups into `archive`, taken on the primary only (see [Backups and retention](#backups-and-retention)). " +
			"Without the block a cluster with an archive backs up `daily`, a full backup every 7th, and keeps a 7-day recovery window " +
			"with at least 2 full backups. Changed in place: no node is replaced or restarted. Needs `archive`.",
		Attributes: map[string]schema.Attribute{
			"schedule": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "When the primary takes a backup: a systemd calendar expression in UTC (`daily`, `hourly`, `*-*-* 03:00:00`, " +
					"`Sun *-*-* 02:30`, `*:0/15`). A backup is due once the schedule elapses after the newest backup started; nodes check every " +
					"minute. Defaults to `daily`.",
			},
			"full_every": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Every `full_every`-th backup is full, the others incremental (pgBackRest `incr`, WAL-G delta) on the newest " +
					"backup; `1` makes every backup full. Between 1 and 100. Defaults to `7`.",
			},
		},
		Blocks: map[string]schema.Block{
			"retention": schema.SingleNestedBlock{
				MarkdownDescription: "What the primary deletes after each backup: the full backups (with their incremental ones and the WAL " +
					"only they need) that a restore inside the recovery window does not need, beyond `min_full_backups`.",
				Attributes: map[string]schema.Attribute{
					"recovery_window_days": schema.Int64Attribute{
						Optional: true,
						MarkdownDescription: "Keep what a restore to any moment of the last `recovery_window_days` days needs: every full backup " +
							"taken inside the window and the newest one before it. `0` keeps `min_full_backups` only. Defaults to `7`.",
						Validators: []validator.Int64{int64validator.Between(0, backup.MaxRecoveryWindowDays)},
					},
					"min_full_backups": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Never keep fewer full backups than this. At least 1. Defaults to `2`.",
					},
				},
			},
		},
	}
}

// backupSpecInput is the backup block as cluster.BackupInput, by field name (the retention block's arguments
// are BackupInput's own fields): nil when the block is absent; ok is false while a value is unknown.
func backupSpecInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*cluster.BackupInput, bool) {
	if v.IsNull() {
		return nil, true
	}
	if hasUnknown(v) {
		return nil, false
	}
	var b backupInput
	diags.Append(v.As(ctx, &b, basetypes.ObjectAsOptions{})...)
	in := &cluster.BackupInput{}
	expand(ctx, b, in, diags)
	expandInto(ctx, b.Retention, in, diags)
	return in, true
}

// backupObject is the backup block as given (b), for an imported cluster: null when it was not given.
func backupObject(ctx context.Context, b *cluster.BackupInput, diags *diag.Diagnostics) types.Object {
	attrTypes := objectAttrTypes(clusterTypes["backup"])
	if b == nil {
		return types.ObjectNull(attrTypes)
	}
	attrs := flatten(ctx, b, attrTypes, nil, diags)
	attrs["retention"] = groupObject(ctx, b, objectAttrTypes(attrTypes["retention"]), diags)
	v, d := types.ObjectValue(attrTypes, attrs)
	diags.Append(d...)
	return v
}
