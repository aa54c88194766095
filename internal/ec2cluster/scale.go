package ec2cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Nodes are added after the last and removed from the end (cluster.AWSNodeListChange), so the etcd members
// and every other node's user-data stay as they are. An added node is a node without an instance: repair
// launches it on a new interface and waits until it streams in the quorum. A removed node goes here.

// removed are the nodes the cluster still has objects of (an interface, a live instance) that the spec no
// longer names, last first.
func (se *session) removed(o observation) []string {
	inSpec := func(node string) bool {
		return slices.ContainsFunc(se.s.Nodes, func(n cluster.Node) bool { return n.Name == node })
	}
	var out []string
	for node := range o.enis {
		if !inSpec(node) {
			out = append(out, node)
		}
	}
	for _, in := range o.others {
		if node := in.Tags[cluster.TagNode]; node != "" && !inSpec(node) && in.State != "terminated" && !slices.Contains(out, node) {
			out = append(out, node)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return -cmpNodes(a, b) })
	return out
}

// cmpNodes orders node names as people number them: "node-10" after "node-9".
func cmpNodes(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// shrink removes each node the spec no longer names, one at a time: a primary among them first hands over
// to the caught-up quorum standby that comes first in the spec, then its instances are terminated and its
// interface deleted, and the cluster must be whole without it before the next.
func (se *session) shrink(ctx context.Context, o *observation) error {
	for _, node := range se.removed(*o) {
		start := time.Now()
		if l, ok := o.patroni.Leader(); ok && l.Name == node {
			target, err := se.waitHandoverTarget(ctx, o, node)
			if err != nil {
				return fmt.Errorf("removing node %s, the primary: %w", node, err)
			}
			if target != "" {
				tflog.Info(ctx, "the node to remove is the primary: switching over first", map[string]any{"node": node, "to": target})
				if err := se.switchover(ctx, *o, node, target); err != nil {
					return err
				}
			}
		}
		var ids []string
		for _, in := range o.others {
			if in.Tags[cluster.TagNode] == node && in.State != "terminated" {
				ids = append(ids, in.ID)
			}
		}
		tflog.Info(ctx, "removing the node", map[string]any{"node": node, "instances": ids})
		if len(ids) > 0 {
			if err := se.cloud.Terminate(ctx, ids, se.p.timeouts.Terminate); err != nil {
				return fmt.Errorf("terminating removed node %s's instances: %w", node, err)
			}
		}
		if err := se.cloud.ReleasePublicIPs(ctx, se.s.Name, node); err != nil {
			return fmt.Errorf("releasing removed node %s's Elastic IP: %w", node, err)
		}
		if e, ok := o.enis[node]; ok {
			if err := se.cloud.WaitENIAvailable(ctx, e.ID, se.p.timeouts.Terminate); err != nil {
				return fmt.Errorf("waiting for removed node %s's network interface %s to come free: %w", node, e.ID, err)
			}
			if err := se.cloud.DeleteENI(ctx, e.ID); err != nil {
				return fmt.Errorf("deleting removed node %s's network interface %s: %w", node, e.ID, err)
			}
		}
		if err := se.waitWhole(ctx, "the cluster to be whole without node "+node); err != nil {
			return err
		}
		tflog.Info(ctx, "removed the node", map[string]any{"node": node, "seconds": time.Since(start).Seconds()})
		o2, err := se.observe(ctx)
		if err != nil {
			return err
		}
		*o = o2
	}
	return nil
}

// waitHandoverTarget waits until a node of the spec can take over from leader (a standby that has just
// changed primaries streams again only after a moment) and returns it, or "" when leader no longer leads.
// o is kept up to date.
func (se *session) waitHandoverTarget(ctx context.Context, o *observation, leader string) (string, error) {
	var target string
	var last error
	err := wait.Until(ctx, "a remaining node to stream in the quorum, to take over from "+leader, se.p.timeouts.Healthy, se.p.poll, nil, func(ctx context.Context) (bool, error) {
		o2, err := se.observe(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		*o = o2
		if l, ok := o.patroni.Leader(); !ok || l.Name != leader {
			target = ""
			return ok, nil
		}
		target, last = se.handoverTarget(*o)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return "", fmt.Errorf("%w (%w)", err, last)
	}
	return target, err
}

// handoverTarget is the first node of the spec that streams in the quorum within maximum_lag_on_failover.
func (se *session) handoverTarget(o observation) (string, error) {
	for _, n := range se.s.Nodes {
		m, ok := o.patroni.Member(n.Name)
		if ok && m.State == patroniapi.StateStreaming && (m.Role == patroniapi.RoleQuorumStandby || m.Role == patroniapi.RoleSyncStandby || se.s.Synchronous.Number == 0) {
			if lag := lagBytes(m.Lag); lag >= 0 && lag <= se.maxLag() {
				return n.Name, nil
			}
		}
	}
	return "", errors.New("no remaining node streams in the quorum within maximum_lag_on_failover to take over")
}
