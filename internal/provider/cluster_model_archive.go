package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// archiveStatusModel is archive_status: its types are read from the schema (clusterArchiveStatusAttrTypes).
type archiveStatusModel struct {
	LastArchivedWAL     types.String `tfsdk:"last_archived_wal"`
	LastArchivedAt      types.String `tfsdk:"last_archived_at"`
	UnarchivedSegments  types.Int64  `tfsdk:"unarchived_segments"`
	ArchivedSegments    types.Int64  `tfsdk:"archived_segments"`
	FirstMissingWAL     types.String `tfsdk:"first_missing_wal"`
	ArchivingOK         types.Bool   `tfsdk:"archiving_ok"`
	BackupCount         types.Int64  `tfsdk:"backup_count"`
	LastBackupLabel     types.String `tfsdk:"last_backup_label"`
	LastBackupType      types.String `tfsdk:"last_backup_type"`
	LastBackupAt        types.String `tfsdk:"last_backup_at"`
	LastBackupSizeBytes types.Int64  `tfsdk:"last_backup_size_bytes"`
	RecoverableFrom     types.String `tfsdk:"recoverable_from"`
	RecoverableTo       types.String `tfsdk:"recoverable_to"`
	FailedCount         types.Int64  `tfsdk:"failed_count"`
	LastFailedWAL       types.String `tfsdk:"last_failed_wal"`
	LastFailedAt        types.String `tfsdk:"last_failed_at"`
	VerifiedTimeline    types.Int64  `tfsdk:"verified_timeline"`
	VerifiedAt          types.String `tfsdk:"verified_at"`
	VerificationOK      types.Bool   `tfsdk:"verification_ok"`
	VerificationDetail  types.String `tfsdk:"verification_detail"`
}

// archiveStatusValue is archive_status for h (null for nil): what is not known is null.
func archiveStatusValue(ctx context.Context, h *archive.Health, diags *diag.Diagnostics) types.Object {
	if h == nil {
		return types.ObjectNull(clusterArchiveStatusAttrTypes)
	}
	str := func(v string) types.String {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	at := func(t time.Time) types.String {
		if t.IsZero() {
			return types.StringNull()
		}
		return types.StringValue(t.UTC().Format(time.RFC3339))
	}
	m := archiveStatusModel{
		LastArchivedWAL: str(h.LastArchived), LastArchivedAt: at(h.LastArchivedAt),
		ArchivedSegments: types.Int64Value(int64(h.Segments)), FirstMissingWAL: str(h.Hole),
		UnarchivedSegments: types.Int64Null(), ArchivingOK: types.BoolNull(),
		BackupCount: types.Int64Value(int64(len(h.Backups))), LastBackupLabel: types.StringNull(), LastBackupType: types.StringNull(),
		LastBackupAt: types.StringNull(), LastBackupSizeBytes: types.Int64Null(),
		RecoverableFrom: at(h.RecoverableFrom), RecoverableTo: at(h.RecoverableTo),
		FailedCount: types.Int64Null(), LastFailedWAL: types.StringNull(), LastFailedAt: types.StringNull(),
		VerifiedTimeline: types.Int64Null(), VerifiedAt: types.StringNull(), VerificationOK: types.BoolNull(), VerificationDetail: types.StringNull(),
	}
	if v := h.Verification; v != nil {
		m.VerifiedTimeline, m.VerifiedAt = types.Int64Value(int64(v.Timeline)), at(v.VerifiedAt)
		m.VerificationOK, m.VerificationDetail = types.BoolValue(v.OK), str(v.Detail)
	}
	if h.Known {
		m.UnarchivedSegments, m.ArchivingOK = types.Int64Value(int64(h.Unarchived)), types.BoolValue(h.ArchivingOK)
		m.FailedCount, m.LastFailedWAL, m.LastFailedAt = types.Int64Value(h.Failures.Count), str(h.Failures.LastWAL), at(h.Failures.LastAt)
	}
	if b, ok := h.LastBackup(); ok {
		m.LastBackupLabel, m.LastBackupType = types.StringValue(b.Label), str(b.Type)
		m.LastBackupAt, m.LastBackupSizeBytes = at(time.Unix(b.Stop, 0)), types.Int64Value(b.Size)
	}
	v, d := types.ObjectValueFrom(ctx, clusterArchiveStatusAttrTypes, m)
	diags.Append(d...)
	return v
}
