package ec2cluster

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// takeOver executes topology.StepTakeOver: the one member left, step.Node, becomes the leader at exactly
// the position the operator accepted (step.At), although its etcd member has no majority.
//
//  1. The lost members' instances that are not terminated yet are (a stopped one keeps its root volume,
//     with its old etcd member's data: started again, it must not come back into the DCS).
//  2. The survivor is still exactly at step.At (its Patroni's GET /patroni), or nothing is done.
//  3. The takeover instruction "<node> <lsn>" goes to SSM (awsspec.TakeoverParameter). The node named
//     acts on it within 15 s (bootstrap's takeover.sh, on its timer): only while its own etcd member has
//     no majority and its PostgreSQL is still at that position, it restarts its etcd member with
//     --force-new-cluster, a one-member cluster that keeps the DCS's data.
//  4. Once its Patroni reads the DCS again, POST /failover names it the candidate: Patroni promotes it as
//     soon as the lost leader's key has expired, whatever the quorum in the DCS says.
//  5. The instruction is deleted once the survivor leads, or when the step fails, so that it never acts
//     later on its own.
func (se *session) takeOver(ctx context.Context, o observation, step topology.Step) error {
	for _, n := range se.s.Nodes {
		if n.Name != step.Node {
			if err := se.terminateLost(ctx, o, n.Name); err != nil {
				return err
			}
		}
	}
	e, ok := o.enis[step.Node]
	if !ok {
		return fmt.Errorf("node %s has no network interface; this is a bug in the provider", step.Node)
	}
	host := se.apiHost(e)
	st, err := se.patroni.Node(ctx, host)
	if err != nil {
		return fmt.Errorf("reading node %s's WAL position before the takeover: %w", step.Node, err)
	}
	if at, err := topology.ParseLSN(step.At); err != nil || nodeWAL(st).Received != at {
		return fmt.Errorf("node %s holds WAL up to %s now, not at %s, the position accept_data_loss_at_lsn accepts: nothing was changed; plan again",
			step.Node, topology.FormatLSN(nodeWAL(st).Received), step.At)
	}
	password, err := se.cloud.Secret(ctx, se.ssmNames().restapi)
	if err != nil {
		return fmt.Errorf("reading the REST API password from SSM: %w", err)
	}
	param := awsspec.TakeoverParameter(se.s.Name)
	instruction := step.Node + " " + step.At
	if err := se.cloud.PutParameter(ctx, param, instruction, se.tags("")); err != nil {
		return fmt.Errorf("writing the takeover instruction %s: %w", param, err)
	}
	tflog.Info(ctx, "wrote the takeover instruction", map[string]any{"parameter": param, "instruction": instruction})
	defer func() {
		if err := se.cloud.DeleteSecrets(context.WithoutCancel(ctx), []string{param}); err != nil {
			tflog.Warn(ctx, "deleting the takeover instruction", map[string]any{"parameter": param, "error": err.Error()})
		}
	}()
	asked, last := false, "its etcd member is not a one-member cluster yet"
	err = wait.Until(ctx, "node "+step.Node+" to lead after the takeover", se.p.timeouts.Healthy, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		view, _, err := se.patroni.Cluster(ctx, []string{host})
		if err != nil {
			last = "its Patroni cannot read the DCS yet: " + err.Error()
			return false, wait.NotYet(err)
		}
		if l, ok := view.Leader(); ok && l.Name == step.Node && l.State == patroniapi.StateRunning {
			return true, nil
		}
		if !asked {
			if err := se.patroni.Failover(ctx, host, step.Node, bootstrap.DefaultPatroniRESTAPIUser, password); err != nil {
				last = err.Error()
				return false, wait.NotYet(err)
			}
			asked = true
			tflog.Info(ctx, "asked Patroni to fail over to the survivor", map[string]any{"node": step.Node})
		}
		last = "Patroni's view: " + view.String()
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return nil
}
