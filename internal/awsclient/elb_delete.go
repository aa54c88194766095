package awsclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// DeleteLoadBalancer deletes the cluster's listeners and load balancer, waits until the load balancer is
// gone, then deletes the target groups, retrying while the load balancer still holds them. What is missing,
// or does not carry the cluster's tag (it is not the cluster's to delete), is skipped.
func (c *Cloud) DeleteLoadBalancer(ctx context.Context, clusterName string) error {
	lb, err := c.findLoadBalancer(ctx, clusterName)
	switch {
	case err == nil:
		if err := c.deleteLoadBalancer(ctx, lb); err != nil {
			return err
		}
	case !errors.Is(err, ErrNotFound) && !errors.Is(err, errNotClusters):
		return err
	}
	for _, g := range lbTargetGroups {
		tg, err := c.findTargetGroup(ctx, clusterName, g.suffix)
		switch {
		case errors.Is(err, ErrNotFound), errors.Is(err, errNotClusters):
			continue
		case err != nil:
			return err
		}
		name, arn := aws.ToString(tg.TargetGroupName), aws.ToString(tg.TargetGroupArn)
		_, err = wait.Retry(ctx, "target group "+name+" to be released by its load balancer", targetGroupReleaseTimeout, c.clock,
			func(err error) bool { return errCodeEquals(err, errCodeResourceInUse) },
			func(ctx context.Context) (*elbv2.DeleteTargetGroupOutput, error) {
				return c.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
			})
		if err != nil && !errCodeEquals(err, errCodeTargetGroupNotFound) {
			return fmt.Errorf("deleting target group %s: %w", name, err)
		}
	}
	return nil
}

// deleteLoadBalancer deletes the listeners, then the load balancer, and waits until it is gone.
func (c *Cloud) deleteLoadBalancer(ctx context.Context, lb elbv2types.LoadBalancer) error {
	name, arn := aws.ToString(lb.LoadBalancerName), aws.ToString(lb.LoadBalancerArn)
	listeners, err := c.listeners(ctx, arn)
	if err != nil && !errCodeEquals(err, errCodeLoadBalancerNotFound) {
		return err
	}
	for _, l := range listeners {
		_, err := c.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: l.ListenerArn})
		if err != nil && !errCodeEquals(err, errCodeListenerNotFound) {
			return fmt.Errorf("deleting listener %s of load balancer %s: %w", aws.ToString(l.ListenerArn), name, err)
		}
	}
	_, err = c.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
	if err != nil && !errCodeEquals(err, errCodeLoadBalancerNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", name, err)
	}

	return c.waitLoadBalancerDeleted(ctx, name, arn, lbDeleteTimeout)
}

// loadBalancerGone is statusLoadBalancer's state for a load balancer Elastic Load Balancing no longer
// describes.
const loadBalancerGone = "gone"

// statusLoadBalancer reads the load balancer's state code (provisioning, active, ...; "unknown" without one)
// for wait.For, or loadBalancerGone.
func (c *Cloud) statusLoadBalancer(name, arn string) func(context.Context) (struct{}, string, error) {
	return func(ctx context.Context) (struct{}, string, error) {
		out, err := c.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})
		switch {
		case errCodeEquals(err, errCodeLoadBalancerNotFound):
			return struct{}{}, loadBalancerGone, nil
		case err != nil:
			return struct{}{}, "", fmt.Errorf("describing load balancer %s: %w", name, err)
		case len(out.LoadBalancers) == 0:
			return struct{}{}, loadBalancerGone, nil
		}
		state := "unknown"
		if s := out.LoadBalancers[0].State; s != nil {
			state = string(s.Code)
		}
		return struct{}{}, state, nil
	}
}

// waitLoadBalancerDeleted waits until Elastic Load Balancing no longer describes the load balancer.
func (c *Cloud) waitLoadBalancerDeleted(ctx context.Context, name, arn string, timeout time.Duration) error {
	_, err := wait.For(ctx, wait.Spec[struct{}]{
		What:    fmt.Sprintf("load balancer %s to be deleted", name),
		Refresh: c.statusLoadBalancer(name, arn),
		Target:  []string{loadBalancerGone},
		Timeout: timeout,
		Clock:   c.clock,
	})
	return err
}
