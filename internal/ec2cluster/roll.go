package ec2cluster

import (
	"context"
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// maxLag is how far behind the primary a switchover target may be: Patroni's maximum_lag_on_failover.
func (se *session) maxLag() int64 {
	if l := se.a.Patroni.MaximumLagOnFailover; l > 0 {
		return l
	}
	return bootstrap.DefaultPatroniMaximumLagOnFailover
}

// switchover asks Patroni to hand the leader role from leader to target and waits until target leads and
// the cluster is whole again.
func (se *session) switchover(ctx context.Context, o observation, leader, target string) error {
	password, err := se.cloud.Secret(ctx, se.ssmNames().restapi)
	if err != nil {
		return fmt.Errorf("reading the REST API password from SSM: %w", err)
	}
	host := se.apiHost(o.enis[leader])
	if err := se.patroni.Switchover(ctx, host, leader, target, bootstrap.DefaultPatroniRESTAPIUser, password); err != nil {
		return err
	}
	err = wait.Until(ctx, "node "+target+" to lead", se.p.timeouts.Healthy, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
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
