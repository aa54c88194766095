package ec2cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// maxLag is how far behind the primary a switchover target may be: Patroni's maximum_lag_on_failover.
func (se *session) maxLag() int64 {
	if l := se.a.Patroni.MaximumLagOnFailover; l > 0 {
		return l
	}
	return bootstrap.DefaultPatroniMaximumLagOnFailover
}

// roll replaces outdated nodes one action at a time, as topology.NextRoll decides from the live cluster:
// standbys first (each back in the quorum before the next), then a switchover to a caught-up quorum
// standby, then the old primary.
func (se *session) roll(ctx context.Context, t target, profile string, userData map[string][]byte, prints map[string]string) error {
	for step := 0; ; step++ {
		if step > 4*len(se.s.Nodes) {
			return errors.New("the rolling replacement did not converge; this is a bug in the provider: apply again to continue")
		}
		o, err := se.observe(ctx)
		if err != nil {
			return err
		}
		if !o.patroniOK {
			return fmt.Errorf("the rolling replacement needs Patroni's view of the cluster: %w", o.patroniErr)
		}
		a, done, err := topology.NextRoll(se.rollMembers(o, prints), se.s.NodeNames(), se.s.Synchronous.Number, se.maxLag())
		if err != nil {
			return fmt.Errorf("the rolling replacement cannot go on safely: %w", err)
		}
		if done {
			return nil
		}
		start := time.Now()
		tflog.Info(ctx, "rolling replacement step", map[string]any{"action": a.String(), "reason": a.Reason})
		switch a.Kind {
		case topology.RollReplace:
			old := o.instances[a.Node]
			if err := se.cloud.Terminate(ctx, []string{old.ID}, se.p.timeouts.Terminate); err != nil {
				return fmt.Errorf("terminating node %s's instance %s: %w", a.Node, old.ID, err)
			}
			in, err := se.launch(ctx, t, a.Node, o.enis[a.Node], profile, userData[a.Node], prints[a.Node], old.ID)
			if err != nil {
				return err
			}
			if err := se.waitBack(ctx, a.Node, o.enis[a.Node], launchedAt(in, start)); err != nil {
				return err
			}
		case topology.RollSwitchover:
			if err := se.switchover(ctx, o, a.Node, a.Target); err != nil {
				return err
			}
		}
		tflog.Info(ctx, "rolling replacement step done", map[string]any{"action": a.String(), "seconds": time.Since(start).Seconds()})
	}
}

// switchover asks Patroni to hand the leader role from leader to target and waits until target leads and
// the cluster is whole again.
func (se *session) switchover(ctx context.Context, o observation, leader, target string) error {
	password, err := se.cloud.Secret(ctx, se.ssmNames().restapi)
	if err != nil {
		return fmt.Errorf("reading the REST API password from SSM: %w", err)
	}
	host := se.apiHost(o.enis[leader])
	if err := se.p.patroni.switchover(ctx, host, leader, target, bootstrap.DefaultPatroniRESTAPIUser, password); err != nil {
		return err
	}
	err = wait.Until(ctx, "node "+target+" to lead", se.p.timeouts.Healthy, se.p.poll, nil, func(ctx context.Context) (bool, error) {
		o, err := se.observe(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if !o.patroniOK {
			return false, wait.NotYet(o.patroniErr)
		}
		l, ok := o.patroni.Leader()
		return ok && l.Name == target && l.State == patroniapi.StateRunning, nil
	})
	if err != nil {
		return err
	}
	return se.waitWhole(ctx, "the old primary "+leader+" to stream from "+target)
}
