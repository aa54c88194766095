package localcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// pollInterval is how often waits look again.
const pollInterval = 100 * time.Millisecond

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

// waitStreaming waits until primary's pg_stat_replication shows every one of
// names streaming. When ssn is not nil it also waits until the primary runs
// with that synchronous_standby_names and, when it is not empty, until each
// of names has a sync_state other than async (quorum, sync or potential).
// The timeout error names the standbys missing and what was seen.
func (m *Manager) waitStreaming(ctx context.Context, primary Member, names []string, ssn *string) error {
	ctx, cancel := context.WithTimeout(ctx, m.streamTimeout)
	defer cancel()
	for {
		standbys, got, err := m.replication(ctx, primary)
		var missing []string
		seen := map[string]pgclient.Standby{}
		for _, sb := range standbys {
			if sb.State == "streaming" {
				seen[sb.ApplicationName] = sb
			}
		}
		for _, name := range names {
			sb, ok := seen[name]
			switch {
			case !ok:
				missing = append(missing, name)
			case ssn != nil && *ssn != "" && sb.SyncState == "async":
				missing = append(missing, name+" (async)")
			}
		}
		settingOK := ssn == nil || got == *ssn
		if err == nil && len(missing) == 0 && settingOK {
			return nil
		}
		select {
		case <-ctx.Done():
			var b strings.Builder
			if len(missing) > 0 {
				fmt.Fprintf(&b, "standbys %s are not streaming from primary %s", strings.Join(missing, ", "), primary.Name)
			} else {
				fmt.Fprintf(&b, "primary %s does not apply synchronous_standby_names %q (it has %q)", primary.Name, *ssn, got)
			}
			fmt.Fprintf(&b, " after %s", m.streamTimeout)
			if err != nil {
				fmt.Fprintf(&b, " (last error: %v)", err)
			}
			var streaming []string
			for _, sb := range standbys {
				streaming = append(streaming, sb.ApplicationName+"="+sb.State+"/"+sb.SyncState)
			}
			slices.Sort(streaming)
			fmt.Fprintf(&b, "; pg_stat_replication: [%s]\nlast lines of %s:\n%s", strings.Join(streaming, " "),
				Node(primary, localnode.RolePrimary).LogFile(), m.engine.LogTail(Node(primary, localnode.RolePrimary), 10))
			return fmt.Errorf("%s", b.String())
		case <-time.After(pollInterval):
		}
	}
}

// waitPrimary waits until mb accepts connections and is out of recovery.
func (m *Manager) waitPrimary(ctx context.Context, mb Member) error {
	ctx, cancel := context.WithTimeout(ctx, m.streamTimeout)
	defer cancel()
	for {
		p, err := m.position(ctx, mb)
		if err == nil && !p.InRecovery {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("it is still in recovery")
			}
			return fmt.Errorf("waiting for %s to take writes: %w", mb.Name, err)
		case <-time.After(pollInterval):
		}
	}
}
