package patroniapi_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// An answer as Patroni 4.0.7 gives it for a quorum cluster (fields it adds that pgnvme does not read left out).
const answer = `{"members": [
 {"name": "node1", "role": "leader", "state": "running", "api_url": "http://127.0.0.1:8008/patroni", "host": "127.0.0.1", "port": 5432, "timeline": 2},
 {"name": "node2", "role": "quorum_standby", "state": "streaming", "api_url": "http://127.0.0.1:8009/patroni", "host": "127.0.0.1", "port": 5433, "timeline": 2, "lag": 0},
 {"name": "node3", "role": "quorum_standby", "state": "streaming", "host": "127.0.0.1", "port": 5434, "timeline": 2, "lag": "unknown"}
], "pause": false}`

func TestDecode(t *testing.T) {
	s, err := patroniapi.Decode([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := s.Leader()
	if !ok || l.Name != "node1" || l.Port != 5432 {
		t.Errorf("leader %+v %v", l, ok)
	}
	m, ok := s.Member("node3")
	if !ok || m.Role != patroniapi.RoleQuorumStandby || m.State != patroniapi.StateStreaming || string(m.Lag) != `"unknown"` {
		t.Errorf("node3 %+v %v", m, ok)
	}
	if _, ok := s.Member("node9"); ok {
		t.Error("node9 is not a member")
	}
	if got, want := s.String(), "[node1 leader/running tl2, node2 quorum_standby/streaming tl2, node3 quorum_standby/streaming tl2]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, err := patroniapi.Decode([]byte("<html>")); err == nil {
		t.Error("a non-JSON answer decodes")
	}
	if _, ok := (patroniapi.Status{}).Leader(); ok {
		t.Error("no members, no leader")
	}
}
