// Package patroniapi is the model of Patroni 4's REST API answers that pgnvme reads: GET /cluster (the
// members as the DCS knows them). It is pure: decoding and small queries, no HTTP. The node simulator,
// the Patroni test fixture and the EC2 platform read Patroni through it.
package patroniapi

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Roles and states of members in Patroni 4's GET /cluster.
const (
	RoleLeader        = "leader"
	RoleQuorumStandby = "quorum_standby"
	RoleSyncStandby   = "sync_standby"
	RoleReplica       = "replica"
	StateRunning      = "running"
	StateStreaming    = "streaming"
)

// Member is one member in GET /cluster.
type Member struct {
	Name string `json:"name"`
	// Role is RoleLeader, RoleQuorumStandby, RoleSyncStandby, RoleReplica or "standby_leader".
	Role string `json:"role"`
	// State is the leader's PostgreSQL state (StateRunning, ...) or a standby's replication state
	// (StateStreaming, "in archive recovery", ...).
	State    string `json:"state"`
	APIURL   string `json:"api_url"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Timeline int    `json:"timeline"`
	// Lag is the standby's lag in bytes, or "unknown".
	Lag json.RawMessage `json:"lag,omitempty"`
	// PendingRestart is true when PostgreSQL runs with settings that only a restart applies;
	// PendingRestartReason names them (parameter -> old and new value). Patroni publishes both in the
	// member's DCS key once per loop, so they can be a loop late.
	PendingRestart       bool                       `json:"pending_restart,omitempty"`
	PendingRestartReason map[string]json.RawMessage `json:"pending_restart_reason,omitempty"`
}

// Status is GET /cluster: the members as the DCS knows them.
type Status struct {
	Members []Member `json:"members"`
	Pause   bool     `json:"pause"`
}

// Decode reads a GET /cluster answer.
func Decode(b []byte) (Status, error) {
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return Status{}, fmt.Errorf("reading Patroni's /cluster answer: %w", err)
	}
	return s, nil
}

// Leader is the member whose role is leader, if any.
func (s Status) Leader() (Member, bool) {
	for _, m := range s.Members {
		if m.Role == RoleLeader {
			return m, true
		}
	}
	return Member{}, false
}

// Member is the member named name, if it is there.
func (s Status) Member(name string) (Member, bool) {
	for _, m := range s.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// String lists the members as "name role/state tlN".
func (s Status) String() string {
	parts := make([]string, 0, len(s.Members))
	for _, m := range s.Members {
		parts = append(parts, fmt.Sprintf("%s %s/%s tl%d", m.Name, m.Role, m.State, m.Timeline))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
