package archive

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Target is where a restore's recovery stops: at most one of Time, LSN, Name and Immediate is set; the
// zero Target is the end of the archive (every segment it holds is replayed).
type Target struct {
	// Time: the last transaction committed at or before it is the last one kept (recovery_target_time).
	Time time.Time
	// LSN is a WAL position in pg_lsn form, "X/Y" (recovery_target_lsn).
	LSN string
	// Name is a restore point made with pg_create_restore_point (recovery_target_name).
	Name string
	// Immediate stops as soon as the base backup is consistent (recovery_target = 'immediate').
	Immediate bool
}

// PostgresTime is Time as recovery_target_time and pgBackRest's --target take it (UTC, microseconds).
func (t Target) PostgresTime() string { return t.Time.UTC().Format("2006-01-02 15:04:05.999999+00") }

// End reports whether t is the end of the archive.
func (t Target) End() bool { return t == Target{} }

// RecoverySettings are PostgreSQL's recovery target settings for t, none for the end of the archive (the
// restore of a cluster from another archive and the drill of a WAL-G archive write them; pgbackrest restore
// writes the same from its --type and --target).
func (t Target) RecoverySettings() map[string]string {
	switch {
	case !t.Time.IsZero():
		return map[string]string{"recovery_target_time": t.PostgresTime()}
	case t.LSN != "":
		return map[string]string{"recovery_target_lsn": t.LSN}
	case t.Name != "":
		return map[string]string{"recovery_target_name": t.Name}
	case t.Immediate:
		return map[string]string{"recovery_target": "immediate"}
	}
	return nil
}

func (t Target) String() string {
	switch {
	case !t.Time.IsZero():
		return t.Time.UTC().Format(time.RFC3339Nano)
	case t.LSN != "":
		return "LSN " + t.LSN
	case t.Name != "":
		return fmt.Sprintf("restore point %q", t.Name)
	case t.Immediate:
		return "the end of the base backup (consistent, nothing replayed after it)"
	}
	return "the end of the archive"
}

// LatestBackup is the backup name that lets RestoreBackup choose.
const LatestBackup = "latest"

// RestoreBackup is the base backup a restore to target starts from, given the archive's health h: the
// newest backup that finished at or before target (WAL-G's backup-fetch and pgBackRest's default set take
// the newest backup, which may have finished after a point-in-time target and cannot be replayed back to
// it), or the backup named (label other than "" and LatestBackup), which must then precede the target.
//
// A time target is held to h's recoverable window, an LSN target to the backups' end positions and the
// newest segment's end; a restore point's position is not in the archive's index, so a Name target starts
// from the newest backup (or the one named) and PostgreSQL itself refuses a restore point it does not
// reach. The errors say why and name the recoverable window: an archive without a backup, a target before
// the oldest backup finished or after the newest segment arrived (a restore would silently stop short of
// it), a backup that is not there or ends after the target.
func RestoreBackup(h Health, target Target, label string) (Backup, error) {
	if len(h.Backups) == 0 {
		return Backup{}, fmt.Errorf("the archive holds no base backup, so nothing can be restored from it (its WAL alone cannot rebuild a database)")
	}
	window := h.window()
	var named *Backup
	if label != "" && label != LatestBackup {
		var labels []string
		for i := range h.Backups {
			labels = append(labels, h.Backups[i].Label)
			if h.Backups[i].Label == label {
				named = &h.Backups[i]
			}
		}
		if named == nil {
			return Backup{}, fmt.Errorf("the archive holds no backup %q; it holds %s", label, strings.Join(labels, ", "))
		}
	}
	switch {
	case !target.Time.IsZero():
		at := target.Time.UTC().Format(time.RFC3339)
		switch {
		case target.Time.Before(h.RecoverableFrom):
			return Backup{}, fmt.Errorf("the target %s is before the oldest base backup finished: %s", at, window)
		case target.Time.After(h.RecoverableTo):
			return Backup{}, fmt.Errorf("the target %s is after the newest WAL segment reached the archive, so a restore could not be shown to reach it: %s", at, window)
		case named != nil && time.Unix(named.Stop, 0).After(target.Time):
			return Backup{}, fmt.Errorf("backup %s finished at %s, after the target %s: a restore cannot go back from it; leave backup unset (or %q) to use the newest backup before the target",
				named.Label, time.Unix(named.Stop, 0).UTC().Format(time.RFC3339), at, LatestBackup)
		case named != nil:
			return *named, nil
		}
		var chosen Backup
		for _, b := range h.Backups { // oldest first
			if !time.Unix(b.Stop, 0).After(target.Time) {
				chosen = b
			}
		}
		return chosen, nil
	case target.LSN != "":
		return lsnBackup(h, target.LSN, named, window)
	}
	if named != nil {
		return *named, nil
	}
	return h.Backups[len(h.Backups)-1], nil
}

// lsnBackup is RestoreBackup for an LSN target.
func lsnBackup(h Health, target string, named *Backup, window string) (Backup, error) {
	lsn, err := topology.ParseLSN(target)
	if err != nil {
		return Backup{}, err
	}
	stop := func(b Backup) (uint64, bool) {
		v, err := topology.ParseLSN(b.LSNStop)
		return v, err == nil
	}
	if end, ok := segmentEnd(h.LastArchived); ok && lsn > end {
		return Backup{}, fmt.Errorf("the target LSN %s is after the end of the newest WAL segment in the archive (%s, ending at %s), so a restore could not reach it: %s",
			target, h.LastArchived, topology.FormatLSN(end), window)
	}
	if named != nil {
		if s, ok := stop(*named); ok && s > lsn {
			return Backup{}, fmt.Errorf("backup %s ends at LSN %s, after the target %s: a restore cannot go back from it; leave backup unset (or %q) to use the newest backup before the target",
				named.Label, named.LSNStop, target, LatestBackup)
		}
		return *named, nil
	}
	var chosen *Backup
	for i, b := range h.Backups { // oldest first
		if s, ok := stop(b); ok && s <= lsn {
			chosen = &h.Backups[i]
		}
	}
	if chosen == nil {
		return Backup{}, fmt.Errorf("the target LSN %s is before the oldest base backup ends (%s at LSN %s): %s", target, h.Backups[0].Label, h.Backups[0].LSNStop, window)
	}
	return *chosen, nil
}

// window names the moments a restore from h can reach.
func (h Health) window() string {
	w := fmt.Sprintf("the archive can be restored to any moment from %s (its oldest backup's end) to %s (its newest segment's arrival)",
		h.RecoverableFrom.UTC().Format(time.RFC3339), h.RecoverableTo.UTC().Format(time.RFC3339))
	if h.Hole != "" {
		w += fmt.Sprintf(", and no further than segment %s, the first one missing", h.Hole)
	}
	return w
}

// segmentEnd is the WAL position right after segment name, false for a name that is not a segment's.
func segmentEnd(name string) (uint64, bool) {
	i, ok := segmentIndex(name)
	if !ok {
		return 0, false
	}
	return (i + 1) * SegmentBytes, true
}
