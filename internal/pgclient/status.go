package pgclient

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Standby is one connected standby as its primary (or cascading standby)
// sees it: a row of pg_stat_replication.
type Standby struct {
	// ApplicationName is the standby's application_name, the name
	// synchronous_standby_names lists.
	ApplicationName string
	// ClientAddr is the standby's IP address, or "" over a Unix socket.
	ClientAddr string
	// State is the walsender state: "startup", "catchup", "streaming",
	// "backup" or "stopping".
	State string
	// SyncState is "async", "potential", "sync" or "quorum".
	SyncState string
	// SentLSN, WriteLSN, FlushLSN and ReplayLSN are WAL positions in
	// PostgreSQL's text form ("0/3000060"), or "" when not known yet.
	SentLSN, WriteLSN, FlushLSN, ReplayLSN string
	// LagBytes is how far replay is behind the server's current WAL position
	// (pg_current_wal_lsn() on a primary, pg_last_wal_replay_lsn() on a
	// cascading standby), in bytes; 0 when ReplayLSN is not known.
	LagBytes int64
	// ReplayLagSeconds is pg_stat_replication.replay_lag in seconds, 0 when
	// not known (ReplayLagKnown false). PostgreSQL clears it once the standby
	// has replayed everything and the primary is idle.
	ReplayLagSeconds float64
	// ReplayLagKnown is false when replay_lag is NULL.
	ReplayLagKnown bool
}

// standbysSQL reads pg_stat_replication. state is left NULL when the role may
// not see the walsenders' details; Standbys turns that into an error.
const standbysSQL = `
SELECT coalesce(r.application_name, ''),
       coalesce(host(r.client_addr), ''),
       r.state,
       coalesce(r.sync_state, ''),
       coalesce(r.sent_lsn::text, ''),
       coalesce(r.write_lsn::text, ''),
       coalesce(r.flush_lsn::text, ''),
       coalesce(r.replay_lsn::text, ''),
       coalesce(pg_wal_lsn_diff(w.lsn, r.replay_lsn), 0)::bigint,
       coalesce(extract(epoch FROM r.replay_lag), 0)::float8,
       r.replay_lag IS NOT NULL
FROM pg_stat_replication r,
     (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END AS lsn) w
ORDER BY r.application_name, r.pid`

// Standbys lists the standbys connected to the server (pg_stat_replication),
// ordered by application_name. Reading their state needs superuser or
// membership in pg_read_all_stats (or pg_monitor); without it PostgreSQL
// hides the columns and Standbys returns an error saying so.
//
// sync_state is computed with this session's copy of
// synchronous_standby_names: after a change, WaitSetting on the same Conn
// before reading it.
func (c *Conn) Standbys(ctx context.Context) ([]Standby, error) {
	rows, err := c.conn.Query(ctx, standbysSQL)
	if err != nil {
		return nil, c.wrap("reading pg_stat_replication", err)
	}
	var out []Standby
	hidden := false
	for rows.Next() {
		var s Standby
		var state *string
		if err := rows.Scan(&s.ApplicationName, &s.ClientAddr, &state, &s.SyncState,
			&s.SentLSN, &s.WriteLSN, &s.FlushLSN, &s.ReplayLSN,
			&s.LagBytes, &s.ReplayLagSeconds, &s.ReplayLagKnown); err != nil {
			rows.Close()
			return nil, c.wrap("reading pg_stat_replication", err)
		}
		if state == nil {
			hidden = true
		} else {
			s.State = *state
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, c.wrap("reading pg_stat_replication", err)
	}
	if hidden {
		return nil, fmt.Errorf("reading pg_stat_replication on %s: PostgreSQL hides the standbys' state from role %s: grant it pg_read_all_stats or pg_monitor, or connect as a superuser",
			c.target, c.conn.Config().User)
	}
	return out, nil
}

// Archiver is the WAL archiver's record (pg_stat_archiver) since the
// statistics were last reset.
type Archiver struct {
	// ArchivedCount is how many WAL files were archived successfully.
	ArchivedCount int64
	// FailedCount is how many archive attempts failed.
	FailedCount int64
	// LastArchivedWAL is the name of the last archived WAL file, or "".
	LastArchivedWAL string
	// LastArchivedAt is when it was archived (RFC 3339, UTC), or "".
	LastArchivedAt string
	// LastFailedWAL is the name of the WAL file of the last failure, or "".
	LastFailedWAL string
	// LastFailedAt is when that attempt failed (RFC 3339, UTC), or "".
	LastFailedAt string
}

// Archiver reads pg_stat_archiver. On a fresh server every field is zero.
func (c *Conn) Archiver(ctx context.Context) (Archiver, error) {
	var a Archiver
	var archivedAt, failedAt *time.Time
	err := c.conn.QueryRow(ctx, `
SELECT archived_count, failed_count,
       coalesce(last_archived_wal, ''), last_archived_time,
       coalesce(last_failed_wal, ''), last_failed_time
FROM pg_stat_archiver`).Scan(&a.ArchivedCount, &a.FailedCount, &a.LastArchivedWAL, &archivedAt, &a.LastFailedWAL, &failedAt)
	if err != nil {
		return Archiver{}, c.wrap("reading pg_stat_archiver", err)
	}
	a.LastArchivedAt = formatTime(archivedAt)
	a.LastFailedAt = formatTime(failedAt)
	return a, nil
}

// formatTime writes t in RFC 3339 in UTC with its fractional seconds, or ""
// for nil.
func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// CurrentWALLSN returns the server's current WAL position in text form
// ("0/3000060"): on a primary pg_current_wal_lsn() (the end of the WAL
// written so far), on a standby pg_last_wal_replay_lsn() (the last position
// replayed), or "" when a standby has replayed nothing yet.
func (c *Conn) CurrentWALLSN(ctx context.Context) (string, error) {
	var lsn string
	err := c.conn.QueryRow(ctx, `
SELECT coalesce(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text, '')`).Scan(&lsn)
	return lsn, c.wrap("reading the current WAL position", err)
}

// waitEventsSQL counts the active client backends other than this session by
// wait event; $1 = ” counts every application.
const waitEventsSQL = `
SELECT CASE WHEN wait_event_type IS NULL AND wait_event IS NULL THEN 'CPU'
            ELSE coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '') END,
       count(*)
FROM pg_stat_activity
WHERE backend_type = 'client backend'
  AND state = 'active'
  AND pid <> pg_backend_pid()
  AND ($1::text = '' OR application_name = $1::text)
GROUP BY 1`

// SampleWaitEvents takes one sample of pg_stat_activity: the number of
// active client backends (other than this session) per
// "wait_event_type:wait_event", such as "IO:DataFileRead",
// "LWLock:WALWrite" or "IPC:SyncRep", with "CPU" for backends that wait on
// nothing. With appName != "" it counts only backends whose
// application_name equals it. No active backend gives an empty map.
//
// Seeing other roles' backends needs superuser or pg_read_all_stats (or
// pg_monitor): PostgreSQL hides their state from other roles, so they are
// not counted.
func (c *Conn) SampleWaitEvents(ctx context.Context, appName string) (map[string]int64, error) {
	rows, err := c.conn.Query(ctx, waitEventsSQL, appName)
	if err != nil {
		return nil, c.wrap("sampling pg_stat_activity", err)
	}
	out := map[string]int64{}
	var event string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&event, &n}, func() error {
		out[event] = n
		return nil
	})
	if err != nil {
		return nil, c.wrap("sampling pg_stat_activity", err)
	}
	return out, nil
}
