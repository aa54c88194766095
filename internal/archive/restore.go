package archive

import (
	"fmt"
	"time"
)

// RestoreBackup is the base backup a restore to target starts from, given the archive's health h: the
// newest backup that finished at or before target (WAL-G's backup-fetch and pgBackRest's default set take
// the newest backup, which may have finished after a point-in-time target and cannot be replayed back to
// it). A zero target is the end of the archive: the newest backup. An archive without a backup, a target
// before the oldest backup finished, and a target after the newest segment arrived (the archive cannot
// reach it yet: a restore would silently stop short of it) are errors that name the recoverable window.
func RestoreBackup(h Health, target time.Time) (Backup, error) {
	if len(h.Backups) == 0 {
		return Backup{}, fmt.Errorf("the archive holds no base backup, so nothing can be restored from it (its WAL alone cannot rebuild a database)")
	}
	if target.IsZero() {
		return h.Backups[len(h.Backups)-1], nil
	}
	window := fmt.Sprintf("the archive can be restored to any moment from %s (its oldest backup's end) to %s (its newest segment's arrival)",
		h.RecoverableFrom.UTC().Format(time.RFC3339), h.RecoverableTo.UTC().Format(time.RFC3339))
	switch {
	case target.Before(h.RecoverableFrom):
		return Backup{}, fmt.Errorf("the target %s is before the oldest base backup finished: %s", target.UTC().Format(time.RFC3339), window)
	case target.After(h.RecoverableTo):
		return Backup{}, fmt.Errorf("the target %s is after the newest WAL segment reached the archive, so a restore could not be shown to reach it: %s",
			target.UTC().Format(time.RFC3339), window)
	}
	var chosen Backup
	for _, b := range h.Backups { // oldest first
		if !time.Unix(b.Stop, 0).After(target) {
			chosen = b
		}
	}
	return chosen, nil
}
