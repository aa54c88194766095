package archive

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SegmentBytes is the WAL segment size pgnvme's nodes run with (PostgreSQL's default, 16 MiB).
const SegmentBytes = 16 << 20

// SegmentsPerLog is how many segments one 4 GiB "log" (the middle 8 hex digits of a name) holds.
const SegmentsPerLog = (1 << 32) / SegmentBytes

// Margins of the health rules: how long segments may wait for the archive beyond archive_timeout (twice
// it, plus ArchiveMargin: an archiver that works succeeds at least that often), and a backup beyond its
// schedule, before the archive is reported behind.
const (
	ArchiveMargin = 10 * time.Second
	BackupMargin  = time.Hour
)

// ArchiveStall is how long segments may wait for the archive with no arrival before archiving is reported
// failing: twice archive_timeout plus ArchiveMargin.
func ArchiveStall(archiveTimeout time.Duration) time.Duration {
	return 2*archiveTimeout + ArchiveMargin
}

// SegmentName is the name of the WAL segment that holds lsn on timeline.
func SegmentName(timeline uint32, lsn uint64) string {
	return fmt.Sprintf("%08X%08X%08X", timeline, lsn>>32, (lsn&0xFFFFFFFF)/SegmentBytes)
}

// segmentIndex is a segment name's position in the WAL, timeline aside (a new timeline goes on from the
// segment where the old one ended), and false for a name that is not a segment's.
func segmentIndex(name string) (uint64, bool) {
	if len(name) < 24 {
		return 0, false
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	if _, err := strconv.ParseUint(name[0:8], 16, 32); err != nil || err1 != nil || err2 != nil || seg >= SegmentsPerLog {
		return 0, false
	}
	return log*SegmentsPerLog + seg, true
}

// WALBytes is how many bytes of WAL the segments from first to last hold, both included (timelines aside:
// a new timeline goes on from the segment where the old one ended); 0 when either is not a segment's name
// or last comes before first.
func WALBytes(first, last string) int64 {
	a, ok1 := segmentIndex(first)
	b, ok2 := segmentIndex(last)
	if !ok1 || !ok2 || b < a {
		return 0
	}
	return int64(b-a+1) * SegmentBytes
}

// Object is one file or object of an archive's WAL as listed: its name (any path before the base name is
// ignored) and when it was written.
type Object struct {
	Key      string
	Modified time.Time
}

// SegmentOf is the complete WAL segment an archived object holds, by the archiver's naming: pgBackRest's
// <segment>-<sha1>[.ext], WAL-G's <segment>[.ext]. History files, .partial segments and .backup labels
// hold none.
func SegmentOf(tool, key string) (string, bool) {
	base := path.Base(key)
	if len(base) < 24 || !isSegmentName(base[:24]) {
		return "", false
	}
	rest := base[24:]
	if tool == ToolPgBackRest {
		if !strings.HasPrefix(rest, "-") {
			return "", false
		}
		return base[:24], true
	}
	if rest != "" && (rest[0] != '.' || strings.Contains(rest[1:], ".") || strings.Contains(rest, "partial") || strings.Contains(rest, "backup")) {
		return "", false
	}
	return base[:24], true
}

func isSegmentName(s string) bool {
	if len(s) != 24 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'A' || r > 'F') {
			return false
		}
	}
	return true
}

// Reading is what a platform read of a cluster's archive and primary, for Assess.
type Reading struct {
	// Tool is the archiver (ToolPgBackRest, ToolWALG): how segments are named.
	Tool string
	// WAL is every object of the archive's WAL (pgBackRest's archive/<stanza>/, WAL-G's wal_005/).
	WAL []Object
	// Current is the segment the primary writes now ("" when no primary could be read).
	Current string
	// Failures are the primary's archiver failures (pg_stat_archiver); meaningful with Current.
	Failures Failures
	// Backups are the base backups in the archive, oldest first.
	Backups []Backup
	// ArchiveTimeout is the cluster's archive_timeout: an idle primary switches segments that often.
	ArchiveTimeout time.Duration
	// BackupEvery is how often the schedule takes a base backup (0: no schedule to hold the archive to).
	BackupEvery time.Duration
	// Verification is the archive's last verification record (nil without one).
	Verification *Verification
}

// Failures are what pg_stat_archiver of the primary counts of its archive_command's failures since its
// statistics were last reset (a promoted standby starts its own count): how many, and the newest one's
// segment and time (zero when none failed).
type Failures struct {
	Count   int64
	LastWAL string
	LastAt  time.Time
}

// Health is the archive of a cluster as Assess judged it.
type Health struct {
	// LastArchived is the newest complete segment in the archive ("" when it holds none), and
	// LastArchivedAt when it got there.
	LastArchived   string
	LastArchivedAt time.Time
	// Segments is how many complete segments the archive holds; Hole the first segment missing between
	// the oldest backup's first segment (the oldest segment without a backup) and LastArchived ("" when
	// none is): a restore cannot replay past it.
	Segments int
	Hole     string
	// Unarchived is how many complete segments the primary wrote that the archive lacks, and Known
	// whether that could be told (a primary was read).
	Unarchived int
	Known      bool
	// ArchivingOK is true when the archive keeps up: nothing is waiting, or what waits is younger than
	// ArchiveStall. Meaningful when Known.
	ArchivingOK bool
	// Failures are the primary's archiver failures (Reading.Failures). Meaningful when Known.
	Failures Failures
	// Backups are the archive's base backups, oldest first.
	Backups []Backup
	// RecoverableFrom and RecoverableTo bound the moments a restore from the archive alone can reach: the
	// oldest backup's end and the newest archived segment's arrival (zero without a backup).
	RecoverableFrom, RecoverableTo time.Time
	// Verification is the archive's last verification after a timeline switch (nil without one).
	Verification *Verification
	// Warnings say what is wrong and what to do.
	Warnings []Warning
}

// Warning is one problem of an archive: a short Title Case summary, and what is wrong and what to do.
type Warning struct {
	Summary, Detail string
}

// Warning summaries.
const (
	WarnHole   = "Archive Hole"
	WarnBehind = "Archive Behind"
	WarnBackup = "Base Backup Overdue"
	WarnVerify = "Archive Not Verified"
)

// LastBackup is the newest backup, if any.
func (h Health) LastBackup() (Backup, bool) {
	if len(h.Backups) == 0 {
		return Backup{}, false
	}
	return h.Backups[len(h.Backups)-1], true
}

// Assess judges an archive at now: how many complete segments of the primary it lacks and whether that
// is archiving keeping up or failing (no segment for longer than ArchiveStall while some wait), and, with a schedule, whether the last base backup is older than the schedule allows
// (BackupMargin). A primary that could not be read leaves the WAL unjudged.
func Assess(r Reading, now time.Time) Health {
	h := Health{Backups: r.Backups}
	have := map[uint64]bool{}
	for _, o := range r.WAL {
		seg, ok := SegmentOf(r.Tool, o.Key)
		if !ok {
			continue
		}
		i, _ := segmentIndex(seg)
		have[i] = true
		if seg > h.LastArchived || (seg == h.LastArchived && o.Modified.Before(h.LastArchivedAt)) {
			h.LastArchived, h.LastArchivedAt = seg, o.Modified
		}
	}
	h.Segments = len(have)
	if len(have) > 0 {
		from := slices.Min(slices.Collect(maps.Keys(have)))
		if len(r.Backups) > 0 {
			if i, ok := segmentIndex(r.Backups[0].WALStart); ok {
				from = i
			}
		}
		last, _ := segmentIndex(h.LastArchived)
		for i := from; i <= last; i++ {
			if !have[i] {
				h.Hole = fmt.Sprintf("%s%08X%08X", h.LastArchived[:8], i/SegmentsPerLog, i%SegmentsPerLog)
				h.Warnings = append(h.Warnings, Warning{WarnHole, fmt.Sprintf("The archive has a hole: segment %s (on any timeline) is missing between %s, where the "+
					"oldest backup's WAL starts, and the newest archived segment %s. A restore from the archive cannot replay past it: point-in-time "+
					"recovery to a later moment, and a cluster rebuilt from the archive alone, would miss every commit after it. Take a new full "+
					"backup now (it starts a continuous window), and find out what lost the segment (a failover without the hand-off, a deleted object).",
					h.Hole, fmt.Sprintf("%s%08X%08X", h.LastArchived[:8], from/SegmentsPerLog, from%SegmentsPerLog), h.LastArchived)})
				break
			}
		}
	}
	if cur, ok := segmentIndex(r.Current); ok {
		h.Known, h.Failures = true, r.Failures
		if last, ok := segmentIndex(h.LastArchived); ok {
			h.Unarchived = int(max(int64(cur)-int64(last)-1, 0))
		} else {
			h.Unarchived = int(max(cur, 1) - 1) // the first segment is ...01
		}
		age := now.Sub(h.LastArchivedAt)
		h.ArchivingOK = h.Unarchived == 0 || (!h.LastArchivedAt.IsZero() && age <= ArchiveStall(r.ArchiveTimeout))
		if !h.ArchivingOK {
			since := "no segment has reached the archive yet"
			if !h.LastArchivedAt.IsZero() {
				since = fmt.Sprintf("the newest archived segment (%s) arrived %s ago", h.LastArchived, age.Round(time.Second))
			}
			h.Warnings = append(h.Warnings, Warning{WarnBehind, fmt.Sprintf("Archiving is behind: %d complete WAL segments of the primary (those before %s, the one it writes now) are not in the archive, and %s, "+
				"longer than twice archive_timeout (%s) plus %s. Commits since then are only on the nodes (a point-in-time restore cannot reach them, and a loss of "+
				"every node would lose them), and the unarchived WAL stays on the primary's disk until archiving recovers. Check the archiver's log on the "+
				"primary (pgBackRest or WAL-G), that the archive is reachable from the nodes and that their credentials may write to it.",
				h.Unarchived, r.Current, since, r.ArchiveTimeout, ArchiveMargin)})
		}
	}
	if len(r.Backups) > 0 {
		h.RecoverableFrom = time.Unix(r.Backups[0].Stop, 0).UTC()
		h.RecoverableTo = h.LastArchivedAt
		if h.RecoverableTo.Before(h.RecoverableFrom) {
			h.RecoverableTo = h.RecoverableFrom
		}
	}
	if r.BackupEvery > 0 {
		last, ok := h.LastBackup()
		switch {
		case !ok:
			h.Warnings = append(h.Warnings, Warning{WarnBackup, fmt.Sprintf("The archive holds no base backup, and the schedule takes one every %s: without one no restore "+
				"from the archive is possible and new standbys are copied from a member. Check the backup's log on the primary (pgnvme-backup.service).", r.BackupEvery)})
		case now.Sub(time.Unix(last.Stop, 0)) > r.BackupEvery+BackupMargin:
			h.Warnings = append(h.Warnings, Warning{WarnBackup, fmt.Sprintf("The last base backup (%s, %s) finished %s ago, and the schedule takes one every %s: a restore "+
				"replays all the WAL since then. Check the backup's log on the primary (pgnvme-backup.service).",
				last.Label, last.Type, now.Sub(time.Unix(last.Stop, 0)).Round(time.Minute), r.BackupEvery)})
		}
	}
	assessVerification(&h, r, now)
	return h
}
