package cluster_test

import (
	"strings"
	"testing"

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
