package main

import (
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// The floors read the observer's record: whole is a running leader with two standbys streaming in the
// quorum; a node streams only with a PostgreSQL started after its boot (a member key left by its old
// instance does not count).
func TestObserverFloors(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	member := func(name, role, state string) patroniapi.Member {
		return patroniapi.Member{Name: name, Role: role, State: state}
	}
	started := func(s int) string { return at(s).Format("2006-01-02 15:04:05.999999-07:00") }
	o := &observer{samples: []observation{
		{at: at(1), ok: true, cluster: patroniapi.Status{Members: []patroniapi.Member{member("node-1", "leader", "running"), member("node-2", "quorum_standby", "streaming")}},
			self: map[string]patroniapi.NodeState{"node-3": {State: "running", Role: "replica", ReplicationState: "streaming", PostmasterStartTime: started(-100)}}},
		{at: at(5), ok: true, cluster: patroniapi.Status{Members: []patroniapi.Member{member("node-1", "leader", "running"), member("node-2", "quorum_standby", "streaming"), member("node-3", "replica", "streaming")}},
			self: map[string]patroniapi.NodeState{"node-3": {State: "running", Role: "replica", ReplicationState: "starting", PostmasterStartTime: started(3)}}},
		{at: at(8), ok: true, cluster: patroniapi.Status{Members: []patroniapi.Member{member("node-1", "leader", "running"), member("node-2", "quorum_standby", "streaming"), member("node-3", "quorum_standby", "streaming")}},
			self: map[string]patroniapi.NodeState{"node-3": {State: "running", Role: "replica", ReplicationState: "streaming", PostmasterStartTime: started(3)}}},
	}}
	if got, ok := o.firstWhole(t0); !ok || !got.Equal(at(8)) {
		t.Errorf("firstWhole = %s, %v; want %s (node-3 counts once it is a quorum standby)", got, ok, at(8))
	}
	if got, ok := o.firstStreaming("node-3", at(2)); !ok || !got.Equal(at(8)) {
		t.Errorf("firstStreaming = %s, %v; want %s (its old PostgreSQL's streaming does not count)", got, ok, at(8))
	}
	if _, ok := o.firstStreaming("node-3", at(9)); ok {
		t.Error("firstStreaming found a sample before the boot")
	}
	if l, err := o.leader(); err != nil || l != "node-1" {
		t.Errorf("leader = %q, %v", l, err)
	}
}
