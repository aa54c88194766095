package bootstrap

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Source is what a new EC2 cluster is restored from instead of initdb (the restore block): another
// archive, the base backup the provider chose in it, and where recovery stops (RenderEC2Clone).
type Source struct {
	// Archive is the source archive's settings, its Stanza the source's stanza ("" is the cluster's
	// name). Its archiver must be the cluster's own: a node installs one.
	Archive Archive
	// Backup is the base backup's label (pgBackRest) or name (WAL-G): the provider chooses it, since
	// WAL-G's backup-fetch cannot choose the newest backup before a target.
	Backup string
	// Recovery are the recovery target settings (RecoveryTargetParameters; none restores to the end of
	// the archive). recovery_target_action is promote.
	Recovery map[string]string
	// Record is the restore as the provider planned it, a JSON object (cluster.RestoreResult's from,
	// backup, backup_finished_at, backup_bytes and target, and backup_lsn_start): the post-bootstrap
	// script adds where the recovery stopped and records it in the cluster's own archive (RestoredPath).
	Record string
	// RecordPath is where the record goes, relative to the cluster's own archive's root
	// (archive.Location.RestoredPath).
	RecordPath string
}

// RecoveryTargetParameters are the settings Source.Recovery may hold.
var RecoveryTargetParameters = []string{"recovery_target", "recovery_target_lsn", "recovery_target_name", "recovery_target_time"}

// sourceBackup is a backup's label or name as a shell word needs no quoting for it.
var sourceBackup = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Paths of the source archive's settings on a node restored from another archive.
const (
	ec2WALGSourceEnv        = "/etc/wal-g/source.env"
	ec2PgBackRestSourceConf = "/etc/pgbackrest/pgnvme-source.conf"
	ec2RestorePlan          = "/etc/pgnvme/restore.json"
)

// validate reports what in s cannot be rendered for c.
func (s Source) validate(c Cluster) error {
	var errs []string
	srcWALG, ownWALG := len(s.Archive.WALGEnv) > 0, c.Archive != nil && len(c.Archive.WALGEnv) > 0
	if c.Archive == nil {
		errs = append(errs, "a cluster restored from another archive needs an archive of its own")
	} else if srcWALG != ownWALG {
		errs = append(errs, "the source archive's archiver (restore.archive) must be the cluster's own (archive): a node installs one of pgBackRest and WAL-G")
	}
	if !sourceBackup.MatchString(s.Backup) {
		errs = append(errs, fmt.Sprintf("the source backup %q is not a backup's label or name", s.Backup))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Recovery)) {
		if !slices.Contains(RecoveryTargetParameters, k) {
			errs = append(errs, fmt.Sprintf("%s is not a recovery target setting (%s)", k, strings.Join(RecoveryTargetParameters, ", ")))
		}
	}
	var record map[string]any
	if err := json.Unmarshal([]byte(s.Record), &record); err != nil {
		errs = append(errs, fmt.Sprintf("the restore's record is not a JSON object: %v", err))
	}
	if !safePathPattern.MatchString("/" + s.RecordPath) {
		errs = append(errs, fmt.Sprintf("the restore record's path %q is not a plain relative path", s.RecordPath))
	}
	if len(errs) > 0 {
		return fmt.Errorf("restore source: %s", strings.Join(errs, "; "))
	}
	return nil
}

// RenderEC2Clone is RenderEC2 for the create of a cluster restored from another archive (the restore
// block): Patroni bootstraps it with the bootstrap method pgnvme_restore from src (its base backup
// src.Backup, then its WAL with src's restore_command to src.Recovery's target, where PostgreSQL
// promotes), instead of initdb; the post-bootstrap script records what the restore reached in the
// cluster's own archive. The source's settings are written beside the node's own. Its Identity is
// RenderEC2's, as RenderEC2Restore's is.
func RenderEC2Clone(c Cluster, n EC2Node, src Source) (UserData, error) {
	if err := src.validate(c); err != nil {
		return UserData{}, err
	}
	return renderEC2Forming(c, n, true, &src)
}
