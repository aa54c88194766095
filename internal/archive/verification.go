package archive

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// VerifyMargin is how long after a timeline switch reached the archive (its history file) the archive may
// go without a verification of the new timeline before Assess warns: the primary's backup schedule
// checks every minute and verifies once the switch's WAL is archived, so a longer wait means it cannot.
const VerifyMargin = 15 * time.Minute

// Verification is the record the primary writes into the archive after it verified it with the
// archiver's own tool (`pgbackrest verify`, `wal-g wal-verify integrity timeline`), once per timeline
// switch: backup.DecideScript's verdict, the one judge of what those tools report (the restore drill
// takes its verdict too; see package backup). The provider reads OK and Detail and never judges the
// tools' output again. It lives beside the archive's WAL (Location.VerificationPath).
type Verification struct {
	Tool       string    `json:"tool"`
	Timeline   uint32    `json:"timeline"`
	VerifiedAt time.Time `json:"verified_at"`
	OK         bool      `json:"ok"`
	Detail     string    `json:"detail"`
}

// ParseVerification reads a verification record.
func ParseVerification(data []byte) (*Verification, error) {
	var v Verification
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("reading the archive's verification record: %w", err)
	}
	if v.Timeline == 0 || v.VerifiedAt.IsZero() {
		return nil, fmt.Errorf("reading the archive's verification record: no timeline or time in %q", string(data))
	}
	return &v, nil
}

// VerificationPath is where the primary records the archive's verification, relative to the archive's
// root (pgBackRest's repository, as `pgbackrest repo-put` and `repo-get` take it; WAL-G's prefix, as `wal-g st
// put` takes it): outside the archiver's own directories, so neither its tools nor pgnvme's history checks
// take it for WAL or backups.
func (l Location) VerificationPath() string { return l.pgnvmePath("verification.json") }

// VerificationKey is VerificationPath as an S3 key ("" for a posix repository).
func (l Location) VerificationKey() string { return l.key(l.VerificationPath()) }

// RestoredPath is where a cluster restored from another archive records what its restore did (the
// post-bootstrap script of its first primary), relative to its own archive's root, beside
// VerificationPath.
func (l Location) RestoredPath() string { return l.pgnvmePath("restored.json") }

// RestoredKey is RestoredPath as an S3 key ("" for a posix repository).
func (l Location) RestoredKey() string { return l.key(l.RestoredPath()) }

// RestoreAttemptsPath is the directory, relative to a cluster's own archive's root, under which each of its
// nodes notes every attempt to restore the cluster (from another archive or its own), one small object per
// attempt named <node>-<nanoseconds since the epoch>: the apply counts them to tell a restore that keeps
// failing from one that takes long. Beside VerificationPath, outside the archiver's directories.
func (l Location) RestoreAttemptsPath() string { return l.pgnvmePath("restore-attempts/") }

// RestoreAttemptsKey is RestoreAttemptsPath as an S3 key prefix ("" for a posix repository).
func (l Location) RestoreAttemptsKey() string { return l.key(l.RestoreAttemptsPath()) }

// pgnvmePath is name in pgnvme's own directory of the archive, relative to its root: pgnvme/<stanza>/ for
// pgBackRest (a repository holds stanzas side by side), pgnvme/ for WAL-G (a prefix is one cluster's).
func (l Location) pgnvmePath(name string) string {
	if l.Tool == ToolPgBackRest {
		return "pgnvme/" + l.Stanza + "/" + name
	}
	return "pgnvme/" + name
}

// key is path (relative to the archive's root) as an S3 key: "" for a posix repository.
func (l Location) key(path string) string {
	if l.Bucket == "" {
		return ""
	}
	return l.Root + path
}

// newestTimeline is the highest timeline whose history file the archive's WAL holds, and when that file
// was written (0 without one: the cluster never switched timelines).
func newestTimeline(wal []Object) (uint32, time.Time) {
	var tl uint32
	var at time.Time
	for _, o := range wal {
		base := o.Key[strings.LastIndex(o.Key, "/")+1:] // 00000002.history, with WAL-G a compression extension after
		if len(base) < 16 || base[8:16] != ".history" {
			continue
		}
		n, err := strconv.ParseUint(base[:8], 16, 32)
		if err != nil {
			continue
		}
		if uint32(n) > tl || (uint32(n) == tl && o.Modified.Before(at)) {
			tl, at = uint32(n), o.Modified
		}
	}
	return tl, at
}

// assessVerification adds to h the warnings of the archive's last verification: a verification that
// failed, and a timeline switch the archive holds for longer than VerifyMargin that no verification covers.
func assessVerification(h *Health, r Reading, now time.Time) {
	v := r.Verification
	h.Verification = v
	if v != nil && !v.OK {
		h.Warnings = append(h.Warnings, Warning{WarnVerify, fmt.Sprintf("The archive's verification after the switch to timeline %d failed (%s, %s): %s. "+
			"A restore from the archive may stop short of what it holds. Read the primary's backup log (pgnvme-backup.service; the local "+
			"platform's backups log), take a new full backup, and find out what lost or damaged the WAL. It is verified again an hour after a failure.",
			v.Timeline, v.Tool, v.VerifiedAt.UTC().Format(time.RFC3339), v.Detail)})
	}
	tl, at := newestTimeline(r.WAL)
	if tl > 1 && (v == nil || v.Timeline < tl) && now.Sub(at) > VerifyMargin {
		last := "no verification is recorded"
		if v != nil {
			last = fmt.Sprintf("the last verification covers timeline %d", v.Timeline)
		}
		h.Warnings = append(h.Warnings, Warning{WarnVerify, fmt.Sprintf("The archive holds timeline %d since %s (a failover, promotion or restore), "+
			"and %s: the primary verifies the archive once it has archived what the switch left, so something keeps it from doing so "+
			"(segments of the old timeline that do not reach the archive, a failing archiver or backup schedule). Read the primary's backup log.",
			tl, at.UTC().Format(time.RFC3339), last)})
	}
}
