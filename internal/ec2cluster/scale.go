package ec2cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// Nodes are added after the last and removed from the end (awsspec.NodeListChange), so the etcd members
// and every other node's user-data stay as they are. An added node is a node without an instance: the
// engine's add step launches it on its new interface. A removed node goes here, after a leader among the
// removed nodes has handed over (the engine decides when, and to whom).

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
		if node := in.Tags[awsspec.TagNode]; node != "" && !inSpec(node) && in.State != "terminated" && !slices.Contains(out, node) {
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

// remove removes node, which the spec no longer names and which does not lead: its instances are
// terminated, its Elastic IP released, its interface and certificates (if any) deleted, and the cluster
// must be whole without it.
func (se *session) remove(ctx context.Context, o observation, node string) error {
	var ids []string
	for _, in := range o.others {
		if in.Tags[awsspec.TagNode] == node && in.State != "terminated" {
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
	if err := se.cloud.DeleteSecrets(ctx, []string{awsspec.TLSBundleParameter(se.s.Name, node)}); err != nil {
		return fmt.Errorf("deleting removed node %s's certificates: %w", node, err)
	}
	return se.waitWhole(ctx, "the cluster to be whole without node "+node)
}
