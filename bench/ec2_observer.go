package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// observer polls every simulated node's Patroni, as an operator's monitoring would, independently of the
// provider: each node's own GET /patroni and the cluster's GET /cluster, every observeEvery, and keeps what
// it saw with when. The floors are read from it.
type observer struct {
	fx      *nodesim.EC2Env
	mu      sync.Mutex
	samples []observation
	stopC   chan struct{}
	done    chan struct{}
}

// observation is one poll: the cluster's view (from the first node that answered) and each node's own.
type observation struct {
	at      time.Time
	cluster patroniapi.Status
	ok      bool
	self    map[string]patroniapi.NodeState // by node name
}

const observeEvery = 250 * time.Millisecond

func newObserver(fx *nodesim.EC2Env) *observer {
	o := &observer{fx: fx, stopC: make(chan struct{}), done: make(chan struct{})}
	go o.loop()
	return o
}

func (o *observer) stop() {
	close(o.stopC)
	<-o.done
}

// addresses are the nodes' addresses (their interfaces', stable across replacements), from the
// simulator's boot events.
func (o *observer) addresses() map[string]string {
	out := map[string]string{}
	for _, ev := range o.fx.Bridge.Events() {
		if ev.Kind != nodesim.EventBoot {
			continue
		}
		if ip := net.ParseIP(strings.Fields(ev.Detail + " ")[0]); ip != nil {
			out[ev.Node] = ip.String()
		}
	}
	return out
}

func (o *observer) loop() {
	defer close(o.done)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: o.fx.Sim.DialContext}}
	tick := time.NewTicker(observeEvery)
	defer tick.Stop()
	for {
		select {
		case <-o.stopC:
			return
		case <-tick.C:
		}
		ob := observation{at: time.Now(), self: map[string]patroniapi.NodeState{}}
		for node, ip := range o.addresses() {
			var st patroniapi.NodeState
			if getJSON(client, "http://"+net.JoinHostPort(ip, "8008")+"/patroni", &st) == nil {
				ob.self[node] = st
			}
			if !ob.ok && getJSON(client, "http://"+net.JoinHostPort(ip, "8008")+"/cluster", &ob.cluster) == nil {
				ob.ok = true
			}
		}
		o.mu.Lock()
		o.samples = append(o.samples, ob)
		o.mu.Unlock()
	}
}

func getJSON(c *http.Client, url string, v any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.Unmarshal(b, v)
}

// firstWhole is when the observer first saw, after since, a running leader and two standbys streaming in
// the quorum.
func (o *observer) firstWhole(since time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ob := range o.samples {
		if !ob.at.Before(since) && whole(ob) {
			return ob.at, true
		}
	}
	return time.Time{}, false
}

// waitSettled waits until the observer has seen the cluster whole (see whole) in every poll of the last
// hold, after since: a standby that reconnects once after a switchover (its stream follows the new
// timeline) does not count as settled, as the provider's own check would not.
func (o *observer) waitSettled(since time.Time, hold, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if o.wholeFor(since, hold) {
			return nil
		}
		time.Sleep(observeEvery) //nolint:forbidigo // polling the observer's own record
	}
	return fmt.Errorf("the cluster was not whole (a running leader, two standbys streaming in the quorum) for %s within %s", hold, limit)
}

// wholeFor reports whether every poll of the last hold (after since, and enough of them) saw the cluster whole.
func (o *observer) wholeFor(since time.Time, hold time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	from := time.Now().Add(-hold)
	if from.Before(since) {
		return false
	}
	n := 0
	for _, ob := range o.samples {
		if ob.at.Before(from) {
			continue
		}
		if !whole(ob) {
			return false
		}
		n++
	}
	return n >= int(hold/observeEvery)/2
}

// whole reports whether ob saw a running leader and two standbys streaming in the quorum.
func whole(ob observation) bool {
	if !ob.ok {
		return false
	}
	leader, streaming := false, 0
	for _, m := range ob.cluster.Members {
		switch {
		case m.Role == patroniapi.RoleLeader && m.State == patroniapi.StateRunning:
			leader = true
		case (m.Role == patroniapi.RoleQuorumStandby || m.Role == patroniapi.RoleSyncStandby) && m.State == patroniapi.StateStreaming:
			streaming++
		}
	}
	return leader && streaming >= 2
}

// firstStreaming is when node's own Patroni first said, after boot, that a PostgreSQL started after boot
// runs as a replica and streams.
func (o *observer) firstStreaming(node string, boot time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ob := range o.samples {
		st, ok := ob.self[node]
		if ob.at.Before(boot) || !ok {
			continue
		}
		if st.StartedAfter(boot.Add(-time.Second)) && st.State == "running" && st.Role == "replica" && st.ReplicationState == "streaming" {
			return ob.at, true
		}
	}
	return time.Time{}, false
}

// last is the newest observation with the cluster's view.
func (o *observer) last() (observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.samples) - 1; i >= 0; i-- {
		if o.samples[i].ok {
			return o.samples[i], true
		}
	}
	return observation{}, false
}

// leader is the running leader the observer saw last.
func (o *observer) leader() (string, error) {
	ob, ok := o.last()
	if !ok {
		return "", errors.New("the observer has not read the cluster")
	}
	if l, ok := ob.cluster.Leader(); ok && l.State == patroniapi.StateRunning {
		return l.Name, nil
	}
	return "", fmt.Errorf("no running leader in the last view: %s", ob.cluster)
}

// streamingStandby is a standby streaming in the quorum in the last view ("" when none).
func (o *observer) streamingStandby() string {
	ob, _ := o.last()
	for _, m := range ob.cluster.Members {
		if (m.Role == patroniapi.RoleQuorumStandby || m.Role == patroniapi.RoleSyncStandby) && m.State == patroniapi.StateStreaming {
			return m.Name
		}
	}
	return ""
}

// host is node's address.
func (o *observer) host(node string) string { return o.addresses()[node] }

// newRequest is an HTTP request with a JSON body.
func newRequest(ctx context.Context, method, url, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}
