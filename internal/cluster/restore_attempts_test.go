package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

func TestRestoreGivenUp(t *testing.T) {
	objects := map[string]string{
		"p/pgnvme/restore-attempts/node-2-1733356800000000000":        "started\n",
		"p/pgnvme/restore-attempts/node-1-1733356790000000000":        "started\n",
		"p/pgnvme/restore-attempts/node-1-1733356790000000000.failed": "wal-g backup-fetch exited 1: AccessDenied\n",
	}
	attempts := cluster.RestoreAttemptsOf(objects)
	if len(attempts) != 2 || attempts[0].Node() != "node-1" || attempts[0].Failure != "wal-g backup-fetch exited 1: AccessDenied" ||
		attempts[1].Node() != "node-2" || attempts[1].Failure != "" {
		t.Fatalf("attempts: %+v", attempts)
	}
	// Two attempts: the second may be a slow restore still running.
	if err := cluster.RestoreGivenUp(attempts, true); err != nil {
		t.Fatalf("two attempts: %v", err)
	}
	// A third start (a node's clock is in the name: 999... sorts after, by number, not by node name).
	objects["p/pgnvme/restore-attempts/node-10-1733356810000000000"] = "started\n"
	attempts = cluster.RestoreAttemptsOf(objects)
	err := cluster.RestoreGivenUp(attempts, true)
	if err == nil {
		t.Fatal("three attempts: want the restore given up")
	}
	for _, want := range []string{"failed 2 times in a row", "started again on node-10", "attempt 1, on node-1: the restore script failed: wal-g backup-fetch exited 1: AccessDenied",
		"attempt 2, on node-2: the base backup was copied, then PostgreSQL stopped", "journalctl -u pgnvme-patroni", "destroy this cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	// A cluster restored from its own archive is not to be destroyed: the archive is its data.
	if err := cluster.RestoreGivenUp(attempts, false); err == nil || strings.Contains(err.Error(), "destroy") || !strings.Contains(err.Error(), "The nodes go on trying") {
		t.Errorf("from its own archive: %v", err)
	}
}

// TestRestoreWait: the usual wait plus the base backup twice and the WAL once at RestoreRateFloor; the
// archive's newest backup and the WAL after it for a restore to its end; the usual wait alone without a
// backup.
func TestRestoreWait(t *testing.T) {
	const healthy = 20 * time.Minute
	gib := int64(1 << 30)
	if got, want := cluster.RestoreWait(healthy, 100*gib, 10*gib), healthy+time.Duration(210*gib/cluster.RestoreRateFloor)*time.Second; got != want {
		t.Errorf("100 GiB and 10 GiB of WAL: %s, want %s", got, want)
	}
	if got := cluster.RestoreWait(healthy, 100*gib, 10*gib); got != 4*time.Hour+4*time.Minute {
		t.Errorf("100 GiB and 10 GiB of WAL at 16 MiB/s: %s, want 4 h 4 min (20 min, then 210 GiB in 3 h 44 min)", got)
	}
	if got := cluster.RestoreWait(healthy, 0, -1); got != healthy {
		t.Errorf("nothing to copy: %s, want %s", got, healthy)
	}
	h := archive.Health{LastArchived: "00000002000000010000000F", Backups: []archive.Backup{
		{Label: "old", Size: 50 * gib, WALStart: "000000010000000000000002", Stop: 1},
		{Label: "new", Size: 60 * gib, WALStart: "000000020000000100000000", Stop: 2},
	}}
	if got, want := cluster.RestoreWaitOf(healthy, h), cluster.RestoreWait(healthy, 60*gib, 16*archive.SegmentBytes); got != want {
		t.Errorf("to the end of the archive: %s, want %s (the newest backup and its 16 segments after it)", got, want)
	}
	if got := cluster.RestoreWaitOf(healthy, archive.Health{}); got != healthy {
		t.Errorf("no backup: %s, want %s", got, healthy)
	}
}
