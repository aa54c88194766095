package ec2cluster_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// checkBackups: a backup block with a short schedule is changed in place (the plan lists Patroni's dynamic
// configuration and nothing else; no instance is replaced); the nodes' pgnvme-backup.timer, which the
// simulator fires every minute, then takes an incremental backup and a full one on the primary (pgBackRest
// backs up only from a primary: the stanza has no backup-standby), and retention (one full backup kept)
// removes the older chain: archive_status shows one full backup, a new one, and a restore window that
// starts at it. The schedule then goes back to the default (daily, in place): a minutely schedule with one
// full backup kept would expire, within minutes, the backup that the later point-in-time clone restores from.
func (e *simEnv) checkBackups(before clusterState) {
	e.t.Helper()
	was := before.ArchiveStatus
	if was == nil || was.BackupCount < 1 {
		e.t.Fatalf("archive_status before the backup schedule: %+v; want the backup taken at create", was)
	}
	e.backup = "\n  backup {\n    schedule   = \"minutely\"\n    full_every = 2\n    retention {\n      recovery_window_days = 0\n      min_full_backups     = 1\n    }\n  }"
	e.config("sim", "m6id.xlarge", true)
	plan, _, secs := e.planIsApply("a short backup schedule", []string{"change Patroni's dynamic configuration"}, false)
	if flat := strings.Join(strings.Fields(plan), " "); !strings.Contains(flat, "postgresql.pgnvme_backup.schedule: daily -> minutely") {
		e.t.Errorf("the plan of a backup schedule should change Patroni's configuration in place:\n%s", plan)
	}
	after := e.state()
	if !maps.Equal(after.AWS.InstanceIDs, before.AWS.InstanceIDs) {
		e.t.Errorf("a backup schedule replaced instances: %v -> %v", before.AWS.InstanceIDs, after.AWS.InstanceIDs)
	}
	e.t.Logf("backup schedule changed in place in %.0f s", secs)
	defer func() {
		if !e.t.Failed() {
			return
		}
		for _, n := range e.sim.Nodes() {
			b, _ := os.ReadFile(filepath.Join(n.LogDir(), "pgnvme-backup.service.log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			e.t.Logf("%s (%s) pgnvme-backup.service.log, last lines:\n%s", n.Name, n.InstanceID, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}()
	start := time.Now()
	var seen []string
	e.refreshUntil(5*time.Minute, "the scheduled backups and their retention", func() (bool, string) {
		as := e.state().ArchiveStatus
		if as == nil {
			return false, "no archive_status"
		}
		now := fmt.Sprintf("%d backups, newest %s (%s)", as.BackupCount, as.LastBackupLabel, as.LastBackupType)
		if len(seen) == 0 || seen[len(seen)-1] != now {
			seen = append(seen, now)
		}
		return as.BackupCount == 1 && as.LastBackupType == "full" && as.LastBackupLabel != was.LastBackupLabel, now
	})
	e.t.Logf("after %.0f s: %s", time.Since(start).Seconds(), strings.Join(seen, "; "))
	incr := false
	for _, s := range seen {
		incr = incr || strings.HasSuffix(s, "(incr)")
	}
	if !incr {
		e.t.Errorf("no incremental backup was seen before the full one (full_every 2): %q", seen)
	}
	final := e.state().ArchiveStatus
	if final.RecoverableFrom == "" || final.FirstMissingWAL != nil {
		e.t.Errorf("after retention: recoverable from %q, first missing %v; want a window from the kept backup and no hole", final.RecoverableFrom, final.FirstMissingWAL)
	}
	e.emptyPlan("after the backup schedule")
	e.backup = ""
	e.config("sim", "m6id.xlarge", true)
	plan, _, _ = e.planIsApply("the default backup schedule again", []string{"change Patroni's dynamic configuration"}, false)
	if flat := strings.Join(strings.Fields(plan), " "); !strings.Contains(flat, "postgresql.pgnvme_backup.schedule: minutely -> daily") {
		e.t.Errorf("the plan of the default backup schedule should change Patroni's configuration in place:\n%s", plan)
	}
}
