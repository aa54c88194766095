package cluster

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
)

// MaxRestoreAttempts is how many attempts to restore a cluster an apply sees start before it gives the
// restore up. A node tries again only after the attempt before failed (Patroni gives up the initialize key
// when its bootstrap fails, and a node, the same or another, takes it again), so the third start means two
// failures in a row, which a third try of the same restore will not mend. A restore that is only slow
// never starts a second attempt.
const MaxRestoreAttempts = 3

// RestoreAttempt is one attempt of a node to restore the cluster, as the node noted it in the cluster's own
// archive (archive.Location.RestoreAttemptsPath): the object's base name is <node>-<nanoseconds>, and a
// second object of the same name with ".failed" appended holds what the restore script saw fail (the base
// backup's copy), when it was the script that failed.
type RestoreAttempt struct {
	// Name is the attempt's object's base name; Failure what its .failed object says ("" without one).
	Name, Failure string
}

// RestoreAttemptsOf pairs objects (keys to contents, as listed) into attempts, oldest first: each
// attempt's object with its ".failed" object beside it.
func RestoreAttemptsOf(objects map[string]string) []RestoreAttempt {
	var out []RestoreAttempt
	for key := range objects {
		if strings.HasSuffix(key, ".failed") {
			continue
		}
		out = append(out, RestoreAttempt{Name: path.Base(key), Failure: strings.TrimSpace(objects[key+".failed"])})
	}
	sortAttempts(out)
	return out
}

// sortAttempts orders attempts by when they started (the nanoseconds after the node's name), then name.
func sortAttempts(a []RestoreAttempt) {
	started := func(x RestoreAttempt) string {
		return fmt.Sprintf("%020s", x.Name[strings.LastIndex(x.Name, "-")+1:])
	}
	slices.SortFunc(a, func(x, y RestoreAttempt) int {
		return cmp.Or(cmp.Compare(started(x), started(y)), cmp.Compare(x.Name, y.Name))
	})
}

// Node is the node that made the attempt.
func (a RestoreAttempt) Node() string {
	if i := strings.LastIndex(a.Name, "-"); i > 0 {
		return a.Name[:i]
	}
	return a.Name
}

// RestoreGivenUp is the apply's verdict on the attempts a restore has made since the apply launched its
// nodes, oldest first: nil while fewer than MaxRestoreAttempts have started, else the error that stops the
// apply, saying what each failed attempt is known to have done and what to do. clone is true for a new
// cluster restored from another archive (the restore block), false for a cluster restored from its own
// archive after every member was lost.
func RestoreGivenUp(attempts []RestoreAttempt, clone bool) error {
	if len(attempts) < MaxRestoreAttempts {
		return nil
	}
	var lines []string
	for i, a := range attempts[:len(attempts)-1] {
		why := "the base backup was copied, then PostgreSQL stopped before it finished recovery (a restore point the WAL never reaches, " +
			"WAL missing from the archive, a server that cannot start): the node's journal says which (journalctl -u pgnvme-patroni)"
		if a.Failure != "" {
			why = "the restore script failed: " + a.Failure
		}
		lines = append(lines, fmt.Sprintf("  attempt %d, on %s: %s", i+1, a.Node(), why))
	}
	todo := "The nodes go on trying: once the cause is fixed outside this configuration (the instance role's access to the archive, a " +
		"missing object put back), the next attempt can succeed, and an apply waits for it again. Nothing was archived meanwhile."
	if clone {
		todo = "Nothing was archived into the cluster's archive. Fix the cause (the restore block, or the nodes' access to the source), " +
			"then destroy this cluster and apply again (or apply with -replace): the restore block acts at create only."
	}
	return fmt.Errorf("the restore failed %d times in a row on the nodes and was started again on %s, so the apply gives it up:\n%s\n%s",
		len(attempts)-1, attempts[len(attempts)-1].Node(), strings.Join(lines, "\n"), todo)
}
