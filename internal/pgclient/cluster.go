package pgclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// WALPosition is a running server's role, WAL positions and timeline, as
// one query reads them.
type WALPosition struct {
	// InRecovery is pg_is_in_recovery(): true on a standby.
	InRecovery bool
	// FlushLSN is, on a standby, the last WAL position received
	// (pg_last_wal_receive_lsn(), which it keeps after its primary is gone),
	// or "" when it has received none; on a primary
	// pg_current_wal_flush_lsn(). Text form ("0/3000060").
	FlushLSN string
	// ReplayLSN is a standby's last replayed position
	// (pg_last_wal_replay_lsn()), or "" when it has replayed none; always ""
	// on a primary.
	ReplayLSN string
	// Timeline is a standby's received timeline, else its last
	// restartpoint's; a primary's current WAL file's.
	Timeline int
}

// walPositionSQL reads, in one row: whether the node is in recovery; its
// flushed WAL position (a standby's last received, which it keeps after its
// primary is gone; a primary's pg_current_wal_flush_lsn); a standby's
// replayed position; and its timeline (a standby's received timeline, else
// its last restartpoint's; a primary's current WAL file's).
const walPositionSQL = `SELECT pg_is_in_recovery(),
  CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_receive_lsn()::text, '') ELSE pg_current_wal_flush_lsn()::text END,
  CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_replay_lsn()::text, '') ELSE '' END,
  CASE WHEN pg_is_in_recovery()
       THEN coalesce((SELECT nullif(received_tli, 0) FROM pg_stat_wal_receiver), (SELECT timeline_id FROM pg_control_checkpoint()))
       ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END`

// WALPosition reads the server's role, WAL positions and timeline in one
// statement (see WALPosition's fields).
func (c *Conn) WALPosition(ctx context.Context) (WALPosition, error) {
	var p WALPosition
	err := c.conn.QueryRow(ctx, walPositionSQL).Scan(&p.InRecovery, &p.FlushLSN, &p.ReplayLSN, &p.Timeline)
	if err != nil {
		return WALPosition{}, c.wrap("reading the WAL position", err)
	}
	return p, nil
}

// ArchiverFailures reads pg_stat_archiver's count of archive_command failures since the statistics were
// reset, and the newest failure's segment and time.
func (c *Conn) ArchiverFailures(ctx context.Context) (archive.Failures, error) {
	var f archive.Failures
	var at *time.Time
	err := c.conn.QueryRow(ctx, "SELECT failed_count, coalesce(last_failed_wal, ''), last_failed_time FROM pg_stat_archiver").Scan(&f.Count, &f.LastWAL, &at)
	if err != nil {
		return archive.Failures{}, c.wrap("reading pg_stat_archiver", err)
	}
	if at != nil {
		f.LastAt = at.UTC()
	}
	return f, nil
}

// SettingContexts maps each of names that the server knows to its
// pg_settings.context ("postmaster", "sighup", "superuser", "user",
// "backend", "superuser-backend" or "internal"). Names are matched exactly
// (pg_settings holds them in lower case); a name the server does not know,
// such as one of an extension that is not loaded, is simply absent.
func (c *Conn) SettingContexts(ctx context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := c.conn.Query(ctx, "SELECT name, context FROM pg_settings WHERE name = ANY($1)", names)
	if err != nil {
		return nil, c.wrap("reading pg_settings.context", err)
	}
	var name, setting string
	_, err = pgx.ForEachRow(rows, []any{&name, &setting}, func() error {
		out[name] = setting
		return nil
	})
	if err != nil {
		return nil, c.wrap("reading pg_settings.context", err)
	}
	return out, nil
}

// RecoveryEnd is where a server's last recovery stopped, as it reports it until it restarts: the last WAL
// record replayed, the commit time of the last transaction replayed, and the timeline it writes now.
type RecoveryEnd struct {
	// ReplayLSN is pg_last_wal_replay_lsn() ("" when the server did not recover since it started).
	ReplayLSN string
	// ReplayTime is pg_last_xact_replay_timestamp() (zero when no transaction was replayed).
	ReplayTime time.Time
	// Timeline is the timeline of the WAL the server writes now.
	Timeline int
}

// RecoveryEnd reads where the server's last recovery stopped (see RecoveryEnd), after it ended.
func (c *Conn) RecoveryEnd(ctx context.Context) (RecoveryEnd, error) {
	var e RecoveryEnd
	var at *time.Time
	err := c.conn.QueryRow(ctx, `SELECT coalesce(pg_last_wal_replay_lsn()::text, ''), pg_last_xact_replay_timestamp(),
  ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int`).Scan(&e.ReplayLSN, &at, &e.Timeline)
	if err != nil {
		return RecoveryEnd{}, c.wrap("reading where recovery stopped", err)
	}
	if at != nil {
		e.ReplayTime = at.UTC()
	}
	return e, nil
}

// QueryText runs query, which must return one row of one text column, and returns that value (a NULL is
// an error).
func (c *Conn) QueryText(ctx context.Context, query string) (string, error) {
	var v *string
	if err := c.conn.QueryRow(ctx, query).Scan(&v); err != nil {
		return "", c.wrap("running the query", err)
	}
	if v == nil {
		return "", fmt.Errorf("the query returned NULL")
	}
	return *v, nil
}

// CheckTrue runs query, which must return one row of one boolean column, and returns that value; any
// other answer is an error.
func (c *Conn) CheckTrue(ctx context.Context, query string) (bool, error) {
	var ok *bool
	if err := c.conn.QueryRow(ctx, query).Scan(&ok); err != nil {
		return false, c.wrap("running the check query", err)
	}
	if ok == nil {
		return false, fmt.Errorf("the check query returned NULL, not true or false")
	}
	return *ok, nil
}

// EnsureMonitorRole creates role, which may log in (with no password: pg_hba decides how) and is a member
// of pg_monitor, unless a role of that name exists; an existing role is left as it is. It needs a session
// that may create roles.
func (c *Conn) EnsureMonitorRole(ctx context.Context, role string) error {
	ident := pgx.Identifier{role}.Sanitize()
	literal := "'" + strings.ReplaceAll(role, "'", "''") + "'"
	_, err := c.conn.Exec(ctx, "DO $pgnvme$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "+literal+") THEN CREATE ROLE "+
		ident+" LOGIN IN ROLE pg_monitor; END IF; END$pgnvme$")
	return c.wrap("creating the role "+role, err)
}
