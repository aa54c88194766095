package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// ArchiveEnd is what h says a restore to the end of the archive starts from and reaches, as topology's
// plan of a cluster whose every node is lost takes it (topology.Desired.Archive): the newest base backup
// and when it finished, the newest segment and when it arrived, and the first segment missing.
func ArchiveEnd(h archive.Health) *topology.ArchiveEnd {
	end := &topology.ArchiveEnd{LastWAL: h.LastArchived, LastWALAt: h.LastArchivedAt, Hole: h.Hole}
	if b, err := archive.RestoreBackup(h, archive.Target{}, ""); err == nil { // the end of the archive: its newest backup
		end.Backup = b.Label
		if b.Stop > 0 {
			end.BackupAt = time.Unix(b.Stop, 0).UTC()
		}
	}
	return end
}

// RestoreRateFloor is the slowest rate, in bytes per second, at which an apply expects a restore's copies
// and its replay to go: well below what one pgBackRest process or WAL-G download from S3 and PostgreSQL's
// replay reach on the instance types pgnvme picks (the restore drill measured about 110 MiB/s from a
// repository on local disk; see the restore guide).
const RestoreRateFloor = 16 << 20

// RestoreWait is how long an apply waits for a restore to give the cluster a leader with every standby
// streaming: healthy (the platform's wait for a cluster to form) plus the time the copies and the replay
// take at RestoreRateFloor: the base backup of databaseBytes twice (the restore's copy, then the standbys'
// copies of the restored node, side by side) and walBytes of WAL once. A restore that fails does not wait
// that long: the attempts the nodes note end it (RestoreGivenUp).
func RestoreWait(healthy time.Duration, databaseBytes, walBytes int64) time.Duration {
	return healthy + time.Duration((2*max(databaseBytes, 0)+max(walBytes, 0))/RestoreRateFloor)*time.Second
}

// RestoreWaitOf is RestoreWait for a restore to the end of the archive h describes (its newest backup and
// the WAL after it), as the restore of a cluster whose every member is lost.
func RestoreWaitOf(healthy time.Duration, h archive.Health) time.Duration {
	b, err := archive.RestoreBackup(h, archive.Target{}, "")
	if err != nil {
		return healthy
	}
	return RestoreWait(healthy, b.Size, archive.WALBytes(b.WALStart, h.LastArchived))
}

// RestorePlan is how a cluster with a restore block is created: from which archive, which base backup,
// to which target. Plan and apply both make it with PlanRestore from what the archive holds then; the
// plan's text (Summary) and the apply's commands come from it.
type RestorePlan struct {
	// From is the archive restored from.
	From archive.Location
	// Backup is the base backup the restore starts from.
	Backup archive.Backup
	// Target is where recovery stops.
	Target archive.Target
	// To is when the archive's newest segment arrived, for the plan's words.
	To time.Time
	// WALBytes bounds the WAL replayed: from the backup's first segment to the archive's newest.
	WALBytes int64
}

// PlanRestore is the restore of s (which has a restore block) from its source archive, whose health the
// platform read as h (readErr when it could not), into PostgreSQL major: PlanRestoreAt for the restore
// block.
func PlanRestore(s Spec, major int, h *archive.Health, readErr error) (RestorePlan, error) {
	from, _ := s.RestoreLocation()
	return PlanRestoreAt([]string{"restore"}, *s.Restore, from, major, h, readErr)
}

// PlanRestoreAt is the restore r from the archive at from, whose health was read as h (readErr when it
// could not): the backup archive.RestoreBackup chooses for the target. An unreadable archive, one without a
// backup, a target outside its recoverable window and a backup that is not there or ends after the target
// are refused at the attribute they are about, under root (the block that gives r's archive, backup and
// target); so is a backup of another PostgreSQL major than major (when both are known: 0 is unknown), which
// the server would refuse to start.
func PlanRestoreAt(root []string, r Restore, from archive.Location, major int, h *archive.Health, readErr error) (RestorePlan, error) {
	at := func(names ...string) []string { return append(slices.Clip(root), names...) }
	if readErr != nil || h == nil {
		if readErr == nil {
			readErr = fmt.Errorf("the platform cannot read %s", from)
		}
		return RestorePlan{}, Errorf(at("archive"), "Restore Archive Not Readable",
			"The restore reads %s before it starts, to choose the base backup and check the target, and it could not: "+
				"make it readable with the provider's credentials (S3: s3:ListBucket and s3:GetObject), or fix the archive's settings. Nothing was created.\n\n%v", from, readErr)
	}
	target, err := r.Target()
	if err != nil {
		return RestorePlan{}, Errorf(at("target", "time"), "Invalid Restore Target", "%s.", capitalize(err.Error()))
	}
	b, err := archive.RestoreBackup(*h, target, r.Backup)
	if err != nil {
		path := at("target")
		switch {
		case len(h.Backups) == 0:
			path = at("archive")
		case r.Backup != "" && r.Backup != archive.LatestBackup:
			path = at("backup")
		case target.LSN != "":
			path = append(path, "lsn")
		case !target.Time.IsZero():
			path = append(path, "time")
		}
		return RestorePlan{}, Errorf(path, "Restore Target Not In The Archive", "Nothing can be restored from %s that way: %v. Nothing was created.", from, err)
	}
	if b.Major != 0 && major != 0 && b.Major != major {
		path := at("archive")
		if r.Backup != "" && r.Backup != archive.LatestBackup {
			path = at("backup")
		}
		return RestorePlan{}, Errorf(path, "Restore Across Major Versions",
			"Backup %s in %s was taken from PostgreSQL %d, and this server runs PostgreSQL %d: a physical backup restores into its own major "+
				"version only (PostgreSQL refuses to start a data directory of another). Restore into a cluster of PostgreSQL %d (postgres_major), "+
				"then move the data to %d with pg_dump and pg_restore or logical replication (see the major upgrades guide). Nothing was created.",
			b.Label, from, b.Major, major, b.Major, major)
	}
	return RestorePlan{From: from, Backup: b, Target: target, To: h.RecoverableTo, WALBytes: archive.WALBytes(b.WALStart, h.LastArchived)}, nil
}

// Planned is what p says of a restore before it runs: where from, which backup (when it finished, the
// database's size in it) and the target; the restore adds how far its recovery went.
func (p RestorePlan) Planned() RestoreResult {
	res := RestoreResult{From: p.From.String(), Backup: p.Backup.Label, BackupBytes: p.Backup.Size, Target: p.Target.String()}
	if p.Backup.Stop > 0 {
		res.BackupFinishedAt = time.Unix(p.Backup.Stop, 0).UTC()
	}
	return res
}

// Record is Planned as the JSON object a restored EC2 node completes and records (bootstrap.Source.Record),
// with the backup's start position, from which it counts the WAL replayed.
func (p RestorePlan) Record() (string, error) {
	b, err := json.Marshal(struct {
		RestoreResult
		BackupLSNStart string `json:"backup_lsn_start,omitempty"`
	}{p.Planned(), p.Backup.LSNStart})
	return string(b), err
}

// ParseRestored reads the record a restored EC2 node wrote (Record, completed with where the recovery
// stopped); nil for no record.
func ParseRestored(data []byte) (*RestoreResult, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var res RestoreResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("reading the restore's record: %w", err)
	}
	return &res, nil
}

// Summary is the plan's words for p, creating first (restored) and then the others (copied from it).
func (p RestorePlan) Summary(first string, others []string) string {
	at := ""
	if p.Backup.Stop > 0 {
		at = " (finished " + time.Unix(p.Backup.Stop, 0).UTC().Format(time.RFC3339) + ")"
	}
	out := fmt.Sprintf("restore %s from %s: base backup %s%s, then its WAL replayed to %s, where it becomes the primary of a new timeline",
		first, p.From, p.Backup.Label, at, p.Target)
	if p.Target.End() {
		out += " (the archive's newest segment arrived at " + p.To.UTC().Format(time.RFC3339) + ")"
	}
	if len(others) > 0 {
		out += "; then " + strings.Join(others, ", ") + " copied from it"
	}
	return out
}
