package localcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// pollInterval is how often waits look again.
const pollInterval = 100 * time.Millisecond

// waitClock is the clock of the Manager's waits.
func (m *Manager) waitClock() wait.Clock {
	if m.clock == nil {
		return wait.Real
	}
	return m.clock
}

// replication is the primary's pg_stat_replication as a fresh session sees
// it, with that session's synchronous_standby_names (a new session reads the
// value the postmaster has after its last reload).
func (m *Manager) replication(ctx context.Context, primary Member) (standbys []pgclient.Standby, ssn string, err error) {
	conn, err := m.connect(ctx, primary)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if ssn, err = conn.Setting(ctx, "synchronous_standby_names"); err != nil {
		return nil, "", err
	}
	standbys, err = conn.Standbys(ctx)
	return standbys, ssn, err
}

// streamingView is one look at the primary for waitStreaming.
type streamingView struct {
	standbys []pgclient.Standby
	ssn      string
	err      error
	// missing are the awaited standbys not streaming (or, with a
	// synchronous_standby_names awaited, still async).
	missing []string
}

// done reports whether the view is what waitStreaming waits for.
func (v streamingView) done(ssn *string) bool {
	return v.err == nil && len(v.missing) == 0 && (ssn == nil || v.ssn == *ssn)
}

// waitStreaming waits until primary's pg_stat_replication shows every one of
// names streaming. When ssn is not nil it also waits until the primary runs
// with that synchronous_standby_names and, when it is not empty, until each
// of names has a sync_state other than async (quorum, sync or potential).
// The timeout error names the standbys missing and what was seen.
func (m *Manager) waitStreaming(ctx context.Context, primary Member, names []string, ssn *string) error {
	var last streamingView
	what := fmt.Sprintf("standbys %s to stream from primary %s", strings.Join(names, ", "), primary.Name)
	err := wait.Until(ctx, what, m.streamTimeout, pollInterval, m.waitClock(), func(ctx context.Context) (bool, error) {
		last = m.lookStreaming(ctx, primary, names, ssn)
		return last.done(ssn), nil
	})
	if err == nil {
		return nil
	}
	var b strings.Builder
	switch {
	case len(last.missing) > 0:
		fmt.Fprintf(&b, "standbys %s are not streaming from primary %s", strings.Join(last.missing, ", "), primary.Name)
	case ssn != nil && last.ssn != *ssn:
		fmt.Fprintf(&b, "primary %s does not apply synchronous_standby_names %q (it has %q)", primary.Name, *ssn, last.ssn)
	default:
		fmt.Fprintf(&b, "pg_stat_replication of primary %s cannot be read", primary.Name)
	}
	var te *wait.TimeoutError
	if errors.As(err, &te) {
		fmt.Fprintf(&b, " after %s", m.streamTimeout)
	}
	if last.err != nil {
		fmt.Fprintf(&b, " (last error: %v)", last.err)
	}
	streaming := make([]string, 0, len(last.standbys))
	for _, sb := range last.standbys {
		streaming = append(streaming, sb.ApplicationName+"="+sb.State+"/"+sb.SyncState)
	}
	slices.Sort(streaming)
	node := Node(primary, localnode.RolePrimary)
	fmt.Fprintf(&b, "; pg_stat_replication: [%s]\nlast lines of %s:\n%s", strings.Join(streaming, " "), node.LogFile(), m.engine.LogTail(node, 10))
	if te != nil {
		return errors.New(b.String())
	}
	return fmt.Errorf("%w: %s", err, b.String())
}

// lookStreaming reads the primary's replication state and lists which of
// names waitStreaming still misses.
func (m *Manager) lookStreaming(ctx context.Context, primary Member, names []string, ssn *string) streamingView {
	var v streamingView
	v.standbys, v.ssn, v.err = m.replication(ctx, primary)
	seen := map[string]pgclient.Standby{}
	for _, sb := range v.standbys {
		if sb.State == "streaming" {
			seen[sb.ApplicationName] = sb
		}
	}
	for _, name := range names {
		sb, ok := seen[name]
		switch {
		case !ok:
			v.missing = append(v.missing, name)
		case ssn != nil && *ssn != "" && sb.SyncState == "async":
			v.missing = append(v.missing, name+" (async)")
		}
	}
	return v
}

// waitPrimary waits until mb accepts connections and is out of recovery.
func (m *Manager) waitPrimary(ctx context.Context, mb Member) error {
	return wait.Until(ctx, mb.Name+" to take writes", m.streamTimeout, pollInterval, m.waitClock(), func(ctx context.Context) (bool, error) {
		p, err := m.position(ctx, mb)
		switch {
		case err != nil:
			return false, wait.NotYet(err)
		case p.InRecovery:
			return false, wait.NotYet(errors.New("it is still in recovery"))
		}
		return true, nil
	})
}

// waitRestored waits until mb, restored from the archive, has replayed it and takes writes: for as long as
// its replay position advances, each stretch without progress bounded by the stream timeout (replaying a
// large archive takes as long as it takes; a recovery that is stuck fails). A member that exits (a
// restore_command or replay error) fails with the end of its server log.
func (m *Manager) waitRestored(ctx context.Context, mb Member) error {
	replayed, node := "", Node(mb, localnode.RoleStandby)
	for {
		progressed := false
		err := wait.Until(ctx, mb.Name+" to replay the archive and take writes", m.streamTimeout, pollInterval, m.waitClock(), func(ctx context.Context) (bool, error) {
			if _, running, err := m.engine.Running(node); err != nil {
				return false, err
			} else if !running {
				return false, fmt.Errorf("its server stopped during archive recovery; last lines of %s:\n%s", node.LogFile(), m.engine.LogTail(node, 20))
			}
			p, err := m.position(ctx, mb)
			switch {
			case err != nil:
				return false, wait.NotYet(err)
			case !p.InRecovery:
				return true, nil
			case p.ReplayLSN != replayed && replayed != "":
				replayed, progressed = p.ReplayLSN, true
				return true, nil
			}
			replayed = p.ReplayLSN
			return false, wait.NotYet(fmt.Errorf("in archive recovery, replayed up to %q", replayed))
		})
		if err != nil || !progressed {
			return err
		}
		tflog.Debug(ctx, "replaying the archive", map[string]any{"node": mb.Name, "replayed": replayed})
	}
}
