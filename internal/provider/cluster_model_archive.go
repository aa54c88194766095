package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

var clusterArchiveStatusAttrTypes = map[string]attr.Type{
	"last_archived_wal": types.StringType, "last_archived_at": types.StringType, "unarchived_segments": types.Int64Type,
	"archived_segments": types.Int64Type, "first_missing_wal": types.StringType,
	"archiving_ok": types.BoolType, "backup_count": types.Int64Type, "last_backup_label": types.StringType,
	"last_backup_type": types.StringType, "last_backup_at": types.StringType, "last_backup_size_bytes": types.Int64Type,
	"recoverable_from": types.StringType, "recoverable_to": types.StringType,
	"failed_count": types.Int64Type, "last_failed_wal": types.StringType, "last_failed_at": types.StringType,
	"verified_timeline": types.Int64Type, "verified_at": types.StringType, "verification_ok": types.BoolType, "verification_detail": types.StringType,
}

// archiveStatusValue is archive_status for h (null for nil): what is not known is null.
func archiveStatusValue(h *archive.Health, diags *diag.Diagnostics) types.Object {
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
	attrs := map[string]attr.Value{
		"last_archived_wal": str(h.LastArchived), "last_archived_at": at(h.LastArchivedAt),
		"archived_segments": types.Int64Value(int64(h.Segments)), "first_missing_wal": str(h.Hole),
		"unarchived_segments": types.Int64Null(), "archiving_ok": types.BoolNull(),
		"backup_count": types.Int64Value(int64(len(h.Backups))), "last_backup_label": types.StringNull(), "last_backup_type": types.StringNull(),
		"last_backup_at": types.StringNull(), "last_backup_size_bytes": types.Int64Null(),
		"recoverable_from": at(h.RecoverableFrom), "recoverable_to": at(h.RecoverableTo),
		"failed_count": types.Int64Null(), "last_failed_wal": types.StringNull(), "last_failed_at": types.StringNull(),
		"verified_timeline": types.Int64Null(), "verified_at": types.StringNull(), "verification_ok": types.BoolNull(), "verification_detail": types.StringNull(),
	}
	if v := h.Verification; v != nil {
		attrs["verified_timeline"], attrs["verified_at"] = types.Int64Value(int64(v.Timeline)), at(v.VerifiedAt)
		attrs["verification_ok"], attrs["verification_detail"] = types.BoolValue(v.OK), str(v.Detail)
	}
	if h.Known {
		attrs["unarchived_segments"], attrs["archiving_ok"] = types.Int64Value(int64(h.Unarchived)), types.BoolValue(h.ArchivingOK)
		attrs["failed_count"], attrs["last_failed_wal"], attrs["last_failed_at"] = types.Int64Value(h.Failures.Count), str(h.Failures.LastWAL), at(h.Failures.LastAt)
	}
	if b, ok := h.LastBackup(); ok {
		attrs["last_backup_label"], attrs["last_backup_type"] = types.StringValue(b.Label), str(b.Type)
		attrs["last_backup_at"], attrs["last_backup_size_bytes"] = at(time.Unix(b.Stop, 0)), types.Int64Value(b.Size)
	}
	v, d := types.ObjectValue(clusterArchiveStatusAttrTypes, attrs)
	diags.Append(d...)
	return v
}
