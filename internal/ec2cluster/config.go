package ec2cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The cluster's parameters, Patroni timings and quorum live in Patroni's dynamic configuration (the DCS),
// not in the instances' user-data identity: a change is a PATCH /config, which every member's Patroni
// applies in its next loop with a reload, and then a restart of each node whose PostgreSQL reports a
// pending restart, standbys first, the primary last. No instance is replaced for it.

// allowedCIDRs are the client networks the nodes' pg_hba accepts: aws.allowed_cidrs, or the VPC's CIDR
// (t's when resolved, else read through the first node's interface, which names its VPC).
func (se *session) allowedCIDRs(ctx context.Context, o observation, t *target) ([]string, error) {
	switch {
	case t != nil:
		return t.allowed, nil
	case len(se.a.AllowedCIDRs) > 0:
		return se.a.AllowedCIDRs, nil
	}
	for _, n := range se.s.Nodes {
		if e, ok := o.enis[n.Name]; ok {
			vpc := e.VPCID
			if vpc == "" {
				subnets, err := se.cloud.Subnets(ctx, []string{e.SubnetID})
				if err != nil || len(subnets) == 0 {
					return nil, fmt.Errorf("describing subnet %s: %w", e.SubnetID, err)
				}
				vpc = subnets[0].VPCID
			}
			cidr, err := se.cloud.VPCCIDR(ctx, vpc)
			if err != nil {
				return nil, fmt.Errorf("reading the CIDR of VPC %s: %w", vpc, err)
			}
			return []string{cidr}, nil
		}
	}
	return nil, errors.New("no node has a network interface")
}

// configChanges reads the dynamic configuration on the leader and returns the patch that makes it the
// spec's, the changes it makes ("path: old -> new"), and the leader's REST address (see configDiff).
func (se *session) configChanges(ctx context.Context, o observation, t *target, transitional bool) (patch map[string]any, changes []string, host string, err error) {
	d, err := se.configDiff(ctx, o, t)
	if err != nil {
		return nil, nil, "", err
	}
	patch, changes = d.patch(transitional)
	return patch, changes, d.host, nil
}

// dynamicConfig is the dynamic configuration the spec renders and the one the leader (at host) runs.
type dynamicConfig struct {
	desired, current map[string]any
	host             string
}

// patch is what makes current desired. transitional keeps synchronous_node_count at the lower of the live
// and the desired value, for while the node list changes: a quorum never waits for nodes that are not
// there yet or any more.
func (d dynamicConfig) patch(transitional bool) (map[string]any, []string) {
	desired := d.desired
	if n, ok := desired["synchronous_node_count"].(int); ok && transitional {
		if live, ok := d.current["synchronous_node_count"].(float64); ok && int(live) < n {
			desired = maps.Clone(desired)
			desired["synchronous_node_count"] = int(live)
		}
	}
	return patroniapi.ConfigPatch(desired, d.current)
}

// configDiff renders the spec's dynamic configuration and reads the leader's (GET /config). Every node
// must have its interface (pg_hba holds their addresses).
func (se *session) configDiff(ctx context.Context, o observation, t *target) (dynamicConfig, error) {
	var d dynamicConfig
	leader, ok := o.patroni.Leader()
	if !o.patroniOK || !ok {
		return d, errors.New("the dynamic configuration can be read only from a cluster with a leader")
	}
	e, ok := o.enis[leader.Name]
	if !ok {
		return d, fmt.Errorf("the leader %s is no node of this cluster", leader.Name)
	}
	addrs := map[string]string{}
	for _, n := range se.s.Nodes {
		ne, ok := o.enis[n.Name]
		if !ok {
			return d, fmt.Errorf("node %s has no network interface yet", n.Name)
		}
		addrs[n.Name] = ne.PrivateIP
	}
	allowed, err := se.allowedCIDRs(ctx, o, t)
	if err != nil {
		return d, err
	}
	if d.desired, err = awsspec.DynamicConfig(se.s, addrs, allowed); err != nil {
		return d, fmt.Errorf("rendering the dynamic configuration: %w", err)
	}
	d.host = se.apiHost(e)
	if d.current, err = se.patroni.Config(ctx, d.host); err != nil {
		return d, err
	}
	return d, nil
}

// configure makes Patroni's dynamic configuration the spec's; it returns when it changed it (zero when it
// was the spec's already).
func (se *session) configure(ctx context.Context, o observation, t *target, transitional bool) (time.Time, error) {
	patch, changes, host, err := se.configChanges(ctx, o, t, transitional)
	if err != nil || patch == nil {
		return time.Time{}, err
	}
	password, err := se.cloud.Secret(ctx, se.ssmNames().restapi)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the REST API password from SSM: %w", err)
	}
	tflog.Info(ctx, "changing Patroni's dynamic configuration", map[string]any{"changes": changes})
	if err := se.patroni.PatchConfig(ctx, host, patch, bootstrap.DefaultPatroniRESTAPIUser, password); err != nil {
		return time.Time{}, err
	}
	return se.p.clock.Now(), nil
}

// loopWait and retryTimeout are the Patroni timings the nodes run with.
func (se *session) loopWait() time.Duration {
	return time.Duration(positiveOr(se.a.Patroni.LoopWait, bootstrap.DefaultPatroniLoopWait)) * time.Second
}

func (se *session) retryTimeout() time.Duration {
	return time.Duration(positiveOr(se.a.Patroni.RetryTimeout, bootstrap.DefaultPatroniRetryTimeout)) * time.Second
}

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// restartNode restarts node's PostgreSQL through its Patroni and waits until it runs again (a standby
// streaming) and the cluster is whole.
func (se *session) restartNode(ctx context.Context, node, host string, before patroniapi.NodeState, primary bool, password string) error {
	if err := se.patroni.Restart(ctx, host, bootstrap.DefaultPatroniRESTAPIUser, password); err != nil {
		return fmt.Errorf("restarting node %s: %w", node, err)
	}
	var last string
	err := wait.Until(ctx, "node "+node+"'s PostgreSQL to run again", se.p.timeouts.Healthy, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		st, err := se.patroni.Node(ctx, host)
		if err != nil {
			last = err.Error()
			return false, wait.NotYet(err)
		}
		last = fmt.Sprintf("state %q, role %q, replication %q, PostgreSQL started %s", st.State, st.Role, st.ReplicationState, st.PostmasterStartTime)
		restarted := st.PostmasterStartTime != before.PostmasterStartTime && st.State == "running"
		return restarted && (primary || st.ReplicationState == "streaming"), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return se.waitWhole(ctx, "node "+node+" to be back in the quorum after its restart")
}

// reasons are the settings a node waits to apply, sorted and joined.
func reasons(m map[string]json.RawMessage) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// pendingRestart asks each live node's own Patroni (exact, where GET /cluster can be a loop late) which
// settings its PostgreSQL waits to apply with a restart, by node (lowers: those of them it lowers that a
// hot standby must not have below its primary's, bootstrap.StandbyLimitsLowered), and warns of each node
// that could not be asked.
func (se *session) pendingRestart(ctx context.Context, o observation) (pending, lowers map[string][]string, warnings []string) {
	pending, lowers = map[string][]string{}, map[string][]string{}
	for _, n := range se.s.Nodes {
		e, ok := o.enis[n.Name]
		if _, live := o.instances[n.Name]; !ok || !live {
			continue
		}
		st, err := se.patroni.Node(ctx, se.apiHost(e))
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("whether node %s waits for a restart could not be read: %v", n.Name, err))
		case st.PendingRestart:
			settings := []string{"settings only a restart applies"}
			if r := reasons(st.PendingRestartReason); r != "" {
				settings = strings.Split(r, ", ")
			}
			pending[n.Name] = settings
			lowers[n.Name] = bootstrap.StandbyLimitsLowered(patroniapi.RestartValues(st.PendingRestartReason))
		}
	}
	return pending, lowers, warnings
}
