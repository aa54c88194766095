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
}

// StartedAfter reports whether PostgreSQL started after t.
func (n NodeState) StartedAfter(t time.Time) bool {
	started, err := time.Parse("2006-01-02 15:04:05.999999-07:00", n.PostmasterStartTime)
	return err == nil && started.After(t)
}
