package nodesim

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// stop stops u: SIGTERM to its main process (KillMode=process) or to every process of the unit's cgroup
// (the default), SIGKILL after TimeoutStopSec, and a unit that only remains active becomes inactive.
func (m *manager) stop(name string) error {
	m.mu.Lock()
	u := m.unitLocked(name)
	if u.restart != nil {
		u.restart.Stop()
		u.restart = nil
	}
	p := u.main
	if u.state == StateActive || u.state == StateActivating {
		u.state = StateDeactivating
	}
	u.stopped = true
	f := u.file
	m.mu.Unlock()
	m.logf("stopping %s", name)
	if strings.HasSuffix(name, ".mount") && f != nil {
		where := f.get("Mount", "Where", "")
		if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err == nil {
			if out, err := m.n.exec(m.ctx, nil, "root", "umount", where); err != nil {
				return fmt.Errorf("stopping %s: %w: %s", name, err, out)
			}
		}
	}
	if p != nil && !p.exited() {
		timeout := 90 * time.Second
		if f != nil {
			if d, err := f.duration("Service", "TimeoutStopSec", 0); err == nil && d > 0 {
				timeout = d
			} else if d, err := f.duration("Service", "TimeoutSec", 0); err == nil && d > 0 {
				timeout = d
			}
		}
		if f != nil && f.get("Service", "KillMode", "control-group") == "process" {
			m.stopMain(u, p, timeout)
		} else {
			cg, err := m.n.unitCgroup(name)
			if err != nil {
				return err
			}
			pids, _ := cg.procs()
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
			if err := wait.Until(context.Background(), name+" to stop", timeout, 50*time.Millisecond, wait.Real, func(context.Context) (bool, error) {
				pids, err := cg.procs()
				return err == nil && len(pids) == 0, nil
			}); err != nil {
				if err := cg.kill(context.Background()); err != nil {
					return err
				}
			}
			<-p.done
		}
	}
	m.mu.Lock()
	if u.state == StateDeactivating {
		u.state, u.result = StateInactive, ResultSuccess
	}
	m.mu.Unlock()
	return nil
}

// stopMain sends SIGTERM to p and SIGKILL after timeout.
func (m *manager) stopMain(u *unit, p *proc, timeout time.Duration) {
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		m.logf("%s: main process %d did not stop within %s; SIGKILL", u.name, p.pid(), timeout)
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
		<-p.done
	}
}
