package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// The SQL this adapter needs beyond pgclient's (a node's WAL position and
// timeline, pg_settings.context) runs through localnode's psql probe. Both
// queries belong in pgclient once it grows them.

// connect opens a pgclient session to member mb as the superuser.
func (m *Manager) connect(ctx context.Context, mb Member) (*pgclient.Conn, error) {
	return pgclient.Connect(ctx, pgclient.Config{
		Host: Host, Port: mb.Port, Database: "postgres", User: m.engine.Superuser(),
		SSLMode: "disable", ConnectTimeout: 5 * time.Second, ApplicationName: "pgnvme-localcluster",
	})
}

// position is a running node's role, WAL positions and timeline.
type position struct {
	inRecovery          bool
	flushLSN, replayLSN string
	timeline            int
}

// positionSQL reads, in one row: whether the node is in recovery; its flushed
// WAL position (a standby's last received, which it keeps after its primary
// is gone; a primary's pg_current_wal_flush_lsn); a standby's replayed
// position; and its timeline (a standby's received timeline, else its last
// restartpoint's; a primary's current WAL file's).
const positionSQL = `SELECT pg_is_in_recovery(),
  CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_receive_lsn()::text, '') ELSE pg_current_wal_flush_lsn()::text END,
  CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_replay_lsn()::text, '') ELSE '' END,
  CASE WHEN pg_is_in_recovery()
       THEN coalesce((SELECT nullif(received_tli, 0) FROM pg_stat_wal_receiver), (SELECT timeline_id FROM pg_control_checkpoint()))
       ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END`

func (m *Manager) position(ctx context.Context, mb Member) (position, error) {
	out, err := m.engine.Psql(ctx, Node(mb, localnode.RoleStandby), "postgres", positionSQL)
	if err != nil {
		return position{}, err
	}
	f := strings.Split(strings.TrimSpace(out), "|")
	if len(f) != 4 {
		return position{}, fmt.Errorf("reading the WAL position of %s: unexpected answer %q", mb.Name, out)
	}
	tl, err := strconv.Atoi(f[3])
	if err != nil {
		return position{}, fmt.Errorf("reading the timeline of %s: %q: %w", mb.Name, f[3], err)
	}
	return position{inRecovery: f[0] == "t", flushLSN: f[1], replayLSN: f[2], timeline: tl}, nil
}

// settingContexts maps every parameter the node knows to its
// pg_settings.context.
func (m *Manager) settingContexts(ctx context.Context, mb Member) (map[string]string, error) {
	out, err := m.engine.Psql(ctx, Node(mb, localnode.RoleStandby), "postgres", "SELECT name, context FROM pg_settings")
	if err != nil {
		return nil, fmt.Errorf("reading pg_settings.context on %s: %w", mb.Name, err)
	}
	ctxs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "|"); ok {
			ctxs[k] = v
		}
	}
	return ctxs, nil
}
