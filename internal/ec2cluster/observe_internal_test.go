package ec2cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
)

// askedAPIs makes p's REST calls go to patroni (an httptest server on 127.0.0.1), whatever node address they
// name, as fakePlatform does, and records the node address each call named: which nodes' Patroni the
// observation asked.
func askedAPIs(t *testing.T, p *Platform, patroni http.Handler) func() []string {
	t.Helper()
	srv := httptest.NewServer(patroni)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var asked []string
	pc := patroniclient.New(8008)
	pc.HTTP.Transport = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		mu.Lock()
		asked = append(asked, host)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	p.patroni = pc
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Compact(slices.Sorted(slices.Values(asked)))
	}
}

// clusterView is a GET /cluster answer in which every node still runs: what a node whose machine is
// stopping can still say for a few seconds, and what a survivor says until the leader key expires.
func clusterView() http.Handler {
	view := map[string]any{"members": []map[string]any{
		{"name": "node-1", "role": "leader", "state": "running"},
		{"name": "node-2", "role": "quorum_standby", "state": "streaming", "lag": 0},
		{"name": "node-3", "role": "quorum_standby", "state": "streaming", "lag": 0},
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(view) })
}

// A node whose instance is stopping or shutting down is losing its instance store: the plan replaces it
// (it does not wait for it), and its REST API is not asked, though Patroni still lists it streaming.
func TestPlatform_stoppingInstanceIsLost(t *testing.T) {
	for _, state := range []string{"stopping", "shutting-down"} {
		t.Run(state, func(t *testing.T) {
			f := &fakeCloud{}
			prior := existing(f, map[string]string{"node-2": state})
			p := fakePlatform(t, f, nil)
			asked := askedAPIs(t, p, clusterView())
			launchedCurrent(t, p, f, fakeSpec(true))
			st, err := p.Read(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
			if err != nil {
				t.Fatal(err)
			}
			if st.Members[1].State != cluster.StateMissing {
				t.Errorf("node-2 with its instance %s is %s; want missing", state, st.Members[1].State)
			}
			plan, err := p.Plan(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("replace node-2: its instance i-2 is %s, and its instance store with it", state)
			if !strings.Contains(plan.Actions, want) || strings.Count(plan.Actions, "replace ") != 1 || strings.Contains(plan.Actions, "wait for") {
				t.Errorf("plan actions:\n%s\nwant node-2 replaced, nothing else replaced or waited for", plan.Actions)
			}
			if got := asked(); slices.Contains(got, "10.9.0.11") {
				t.Errorf("the observation asked node-2's REST API (%v); its machine is %s", got, state)
			}
			if m := f.mutations(); len(m) != 0 {
				t.Errorf("read and plan changed things: %v", m)
			}
		})
	}
}

// Every instance stopping (as right after StopInstances of them all, or while EC2 stops them) with their
// Patroni still answering: every member is lost, which the plan says, and no member is counted live and
// waited for. The last case is what the simulator showed in TestAccEC2Cluster_simulated ("every node
// stopped": "only 1 of the DCS's 3 members live (node-2)"): EC2 listed, besides node-2's stopped instance,
// an older instance of node-2 that ran and held no node (moto launches again for a repeated client token);
// the observation took that one for node-2's machine. A node's newest instance is its machine: once that one
// is stopping, stopped, shutting down or terminated, the node is lost, whatever older instance of it EC2
// still lists.
func TestPlatform_everyInstanceStopping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states map[string]string
		older  bool
	}{
		{"stopping", map[string]string{"node-1": "stopping", "node-2": "stopping", "node-3": "stopping"}, false},
		{"stopping and stopped", map[string]string{"node-1": "stopped", "node-2": "stopping", "node-3": "shutting-down"}, false},
		{"an older instance of node-2 still listed", map[string]string{"node-1": "stopped", "node-2": "stopped", "node-3": "stopped"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCloud{}
			prior := existing(f, tc.states)
			if tc.older {
				stray := f.instances[1]
				stray.ID, stray.State, stray.LaunchTime = "i-9", "running", f.instances[1].LaunchTime.Add(-time.Second)
				f.instances = append(f.instances, stray)
			}
			p := fakePlatform(t, f, nil)
			asked := askedAPIs(t, p, clusterView())
			launchedCurrent(t, p, f, fakeSpec(true))
			plan, err := p.Plan(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan.Actions, "every member is lost") || strings.Contains(plan.Actions, "members live") ||
				strings.Contains(plan.Actions, "wait for a leader") {
				t.Errorf("plan actions:\n%s\nwant every member lost, none waited for", plan.Actions)
			}
			for i, n := range []string{"node-1", "node-2", "node-3"} {
				want := fmt.Sprintf("%s (its instance i-%d is %s", n, i+1, tc.states[n])
				if !strings.Contains(plan.Actions, want) {
					t.Errorf("the plan does not say %q:\n%s", want, plan.Actions)
				}
			}
			if got := asked(); len(got) != 0 {
				t.Errorf("the observation asked the REST API at %v; every machine is going", got)
			}
			st, err := p.Read(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range st.Members {
				if m.State != cluster.StateMissing {
					t.Errorf("%s is %s; want missing", m.Name, m.State)
				}
			}
			if ids := st.Platform.(*awsspec.Status).InstanceIDs; len(ids) != 0 {
				t.Errorf("instance_ids %v; want none: no node has a machine that runs", ids)
			}
			if m := f.mutations(); len(m) != 0 {
				t.Errorf("read and plan changed things: %v", m)
			}
		})
	}
}

// The leader's instance stopping while the survivors' Patroni still names it the leader (until its key
// expires): the view is stale and trusted for nothing, the plan waits for Patroni to elect another leader
// and then replaces node-1. An older instance of node-1 that EC2 still lists running changes nothing.
func TestPlatform_leaderStopping(t *testing.T) {
	for _, stray := range []bool{false, true} {
		t.Run(fmt.Sprintf("stray %v", stray), func(t *testing.T) {
			f := &fakeCloud{}
			prior := existing(f, map[string]string{"node-1": "stopping"})
			if stray {
				old := f.instances[0]
				old.ID, old.State, old.LaunchTime = "i-9", "running", old.LaunchTime.Add(-time.Minute)
				f.instances = append(f.instances, old)
			}
			p := fakePlatform(t, f, nil)
			asked := askedAPIs(t, p, clusterView())
			launchedCurrent(t, p, f, fakeSpec(true))
			plan, err := p.Plan(context.Background(), fakeSpec(true), cluster.Prior{Members: prior})
			if err != nil {
				t.Fatal(err)
			}
			wait := "1. wait for a leader: no member is known to lead now (the view of the cluster from 10.9.0.11 names node-1 the leader, but node-1's machine is lost: the view is stale)"
			if !strings.HasPrefix(plan.Actions, wait) || !strings.Contains(plan.Actions, "replace node-1: its instance i-1 is stopping") {
				t.Errorf("plan actions:\n%s\nwant: %s ..., then node-1 replaced", plan.Actions, wait)
			}
			if got := asked(); slices.Contains(got, "10.9.0.10") {
				t.Errorf("the observation asked node-1's REST API (%v); its machine is stopping", got)
			}
		})
	}
}
