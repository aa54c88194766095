package patroniapi

import (
	"encoding/json"
	"time"
)

// NodeState is what a node's own Patroni says of it (GET /patroni).
type NodeState struct {
	State            string `json:"state"`
	Role             string `json:"role"`
	ReplicationState string `json:"replication_state"`
	// PostmasterStartTime is when PostgreSQL started, as "2006-01-02 15:04:05.999999+00:00".
	PostmasterStartTime string `json:"postmaster_start_time"`
	// PendingRestart is true while PostgreSQL runs with settings only a restart applies, which
	// PendingRestartReason names.
	PendingRestart       bool                       `json:"pending_restart"`
	PendingRestartReason map[string]json.RawMessage `json:"pending_restart_reason"`
	// Timeline is PostgreSQL's timeline, XLog how far it holds WAL; a node's own Patroni reads both from
	// PostgreSQL, so they are there even when the DCS cannot be read.
	Timeline int  `json:"timeline"`
	XLog     XLog `json:"xlog"`
}

// XLog is GET /patroni's "xlog", in bytes from 0/0: a primary's Location (pg_current_wal_flush_lsn), a
// standby's ReceivedLocation (pg_last_wal_receive_lsn, what its WAL receiver flushed, or its replayed
// position when it receives nothing) and ReplayedLocation (pg_last_wal_replay_lsn). 0 when absent.
type XLog struct {
	Location         uint64 `json:"location"`
	ReceivedLocation uint64 `json:"received_location"`
	ReplayedLocation uint64 `json:"replayed_location"`
}

// StartedAfter reports whether PostgreSQL started after t.
func (n NodeState) StartedAfter(t time.Time) bool {
	started, err := time.Parse("2006-01-02 15:04:05.999999-07:00", n.PostmasterStartTime)
	return err == nil && started.After(t)
}

// RestartValues reads a pending_restart_reason (parameter -> {"old_value", "new_value"}) as the values
// PostgreSQL runs with (running) and those it waits to apply (next), by parameter; a reason in another
// form is left out.
func RestartValues(reasons map[string]json.RawMessage) (running, next map[string]string) {
	running, next = map[string]string{}, map[string]string{}
	for name, raw := range reasons {
		var v struct {
			Old json.RawMessage `json:"old_value"`
			New json.RawMessage `json:"new_value"`
		}
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if o, n := scalar(v.Old), scalar(v.New); o != "" && n != "" {
			running[name], next[name] = o, n
		}
	}
	return running, next
}

// scalar is a JSON string or number as text, "" otherwise.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
