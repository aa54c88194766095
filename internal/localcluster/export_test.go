package localcluster

import (
	"context"
	"strconv"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// SetAfterRestart makes ApplySettings call f after each member it restarted
// is back.
func SetAfterRestart(m *Manager, f func(ctx context.Context, name string)) { m.afterRestart = f }

// SetStreamTimeout bounds the manager's waits for streaming.
func SetStreamTimeout(m *Manager, d time.Duration) { m.streamTimeout = d }

// WatcherScript is the durability watcher's shell script.
var WatcherScript = watcherScript

// StopBackupScheduler stops s's backup scheduler (as an apply pauses it), so that a test can read the
// archive while nothing changes it.
func StopBackupScheduler(ctx context.Context, m *Manager, s Spec) error {
	return m.stopDetached(ctx, backupScheduler, s, false)
}

// SpecOf is the adapter's Spec of a cluster.Spec whose members are prior.
func SpecOf(s cluster.Spec, prior []cluster.Member) (Spec, error) { return specOf(s, prior) }

// TakeBackup takes a full pgBackRest backup on s's running primary.
func TakeBackup(ctx context.Context, m *Manager, s Spec) error {
	primary, err := m.runningPrimary(ctx, s)
	if err != nil {
		return err
	}
	_, err = m.runPgBackRest(ctx, s, primary, "--type=full", "backup")
	return err
}

// LeaveUnfinishedRestore leaves what an apply killed during the restore of s's first member leaves: the
// manifest, the member's pgBackRest directory with the restore marker, and part of its data directory.
func LeaveUnfinishedRestore(m *Manager, s Spec) error {
	root, err := DataDirRoot(s)
	if err != nil {
		return err
	}
	if err := m.engine.MkdirAllOwned(root, 0o755); err != nil {
		return err
	}
	major, err := m.PostgresMajor(context.Background())
	if err != nil {
		return err
	}
	s.Major = major
	if err := writeManifest(s); err != nil {
		return err
	}
	mb := s.Members[0]
	if err := m.engine.MkdirAllOwned(pgBackRestDir(mb), 0o750); err != nil {
		return err
	}
	if err := m.engine.WriteFileOwned(restoreMarker(mb), []byte("pgbackrest restore\n"), 0o640); err != nil {
		return err
	}
	if err := m.engine.MkdirAllOwned(mb.DataDir, 0o700); err != nil {
		return err
	}
	return m.engine.WriteFileOwned(mb.DataDir+"/PG_VERSION", []byte(strconv.Itoa(major)+"\n"), 0o600)
}
