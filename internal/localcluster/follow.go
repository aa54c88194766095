package localcluster

import (
	"context"
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// repoint points the standby mb at primary, restarts it, and waits until it streams from primary.
func (m *Manager) repoint(ctx context.Context, s Spec, mb, primary Member) error {
	if err := m.engine.Repoint(ctx, Node(mb, localnode.RoleStandby), Node(primary, localnode.RolePrimary)); err != nil {
		return err
	}
	if err := m.restart(ctx, s, mb); err != nil {
		return err
	}
	return m.waitFollowing(ctx, primary, mb)
}

// waitFollowing waits until standby mb streams from primary on primary's timeline. A standby copied from
// the archive, or repointed after a promotion, streams the old timeline up to the switch first and then
// reconnects on the new one; observed in between it is a standby on an older timeline that does not
// stream, which the next decision would copy again.
func (m *Manager) waitFollowing(ctx context.Context, primary, mb Member) error {
	if err := m.waitStreaming(ctx, primary, []string{mb.Name}, nil); err != nil {
		return err
	}
	p, err := m.position(ctx, primary)
	if err != nil {
		return err
	}
	err = wait.Until(ctx, fmt.Sprintf("standby %s to follow primary %s on timeline %d", mb.Name, primary.Name, p.Timeline), m.streamTimeout, pollInterval, m.waitClock(),
		func(ctx context.Context) (bool, error) {
			sp, err := m.position(ctx, mb)
			if err != nil {
				return false, wait.NotYet(err)
			}
			return sp.Timeline >= p.Timeline, nil
		})
	if err != nil {
		return err
	}
	return m.waitStreaming(ctx, primary, []string{mb.Name}, nil)
}
