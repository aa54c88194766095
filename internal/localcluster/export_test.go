package localcluster

import (
	"context"
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
