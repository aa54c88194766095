package awsclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// ensureLoadBalancer finds the cluster's load balancer or creates it, and enables the subnets it lacks.
// Subnets it has beyond them stay: Elastic Load Balancing may refuse to remove subnets from a Network
// Load Balancer, and a zone without a node does no harm.
func (c *Cloud) ensureLoadBalancer(ctx context.Context, clusterName string, subnets []string, tags map[string]string) (elbv2types.LoadBalancer, error) {
	name := lbName(clusterName)
	lb, err := c.findLoadBalancer(ctx, clusterName)
	switch {
	case errors.Is(err, ErrNotFound):
		out, err := c.elbv2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
			Name:    aws.String(name),
			Type:    elbv2types.LoadBalancerTypeEnumNetwork,
			Scheme:  elbv2types.LoadBalancerSchemeEnumInternal,
			Subnets: subnets,
			Tags:    elbTags(tags),
		})
		if err != nil {
			return elbv2types.LoadBalancer{}, fmt.Errorf("creating load balancer %s: %w", name, err)
		}
		if len(out.LoadBalancers) == 0 {
			return elbv2types.LoadBalancer{}, fmt.Errorf("creating load balancer %s: empty answer", name)
		}
		return out.LoadBalancers[0], nil
	case err != nil:
		return elbv2types.LoadBalancer{}, err
	}

	enabled := make([]string, 0, len(lb.AvailabilityZones))
	for _, z := range lb.AvailabilityZones {
		enabled = append(enabled, aws.ToString(z.SubnetId))
	}
	missing := slices.DeleteFunc(slices.Clone(subnets), func(s string) bool { return slices.Contains(enabled, s) })
	if len(missing) > 0 {
		want := compactSorted(append(enabled, missing...))
		_, err := c.elbv2.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, Subnets: want})
		if err != nil {
			return elbv2types.LoadBalancer{}, fmt.Errorf("adding subnets %s to load balancer %s: %w", strings.Join(missing, ", "), name, err)
		}
	}
	return lb, nil
}

// ensureTargetGroup finds the cluster's target group of suffix or creates it (its health check over HTTPS
// with healthHTTPS, else HTTP), and returns its ARN.
func (c *Cloud) ensureTargetGroup(ctx context.Context, clusterName, suffix, healthPath string, healthHTTPS bool, vpcID string, tags map[string]string) (string, error) {
	protocol := elbv2types.ProtocolEnumHttp
	if healthHTTPS {
		protocol = elbv2types.ProtocolEnumHttps
	}
	tg, err := c.findTargetGroup(ctx, clusterName, suffix)
	switch {
	case err == nil && tg.HealthCheckProtocol != protocol:
		// A cluster's TLS is fixed when it is made (the platform refuses to turn it on or off), so the
		// group's health check is too: one that differs is not this cluster's doing.
		return "", fmt.Errorf("target group %s checks health over %s, but the cluster's Patroni REST API serves %s: delete the target group, or restore its health check protocol",
			aws.ToString(tg.TargetGroupName), tg.HealthCheckProtocol, protocol)
	case err == nil:
		return aws.ToString(tg.TargetGroupArn), nil
	case !errors.Is(err, ErrNotFound):
		return "", err
	}
	name := elbName(clusterName, suffix)
	out, err := c.elbv2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
		Name:                       aws.String(name),
		Protocol:                   elbv2types.ProtocolEnumTcp,
		Port:                       aws.Int32(bootstrap.DefaultEC2Port),
		TargetType:                 elbv2types.TargetTypeEnumIp,
		VpcId:                      aws.String(vpcID),
		HealthCheckProtocol:        protocol,
		HealthCheckPort:            aws.String(strconv.Itoa(bootstrap.DefaultPatroniRESTAPIPort)),
		HealthCheckPath:            aws.String(healthPath),
		HealthCheckIntervalSeconds: aws.Int32(lbHealthCheckInterval),
		HealthyThresholdCount:      aws.Int32(lbHealthyThreshold),
		UnhealthyThresholdCount:    aws.Int32(lbUnhealthyThreshold),
		Tags:                       elbTags(tags),
	})
	var dup *elbv2types.DuplicateTargetGroupNameException
	if errors.As(err, &dup) {
		// The SDK retried a request whose first attempt made the group and whose answer was lost: AWS
		// answers such a repeat with the same group, moto with this error. It is ours when it carries the
		// cluster's tag and the health check asked for.
		if tg, ferr := c.findTargetGroup(ctx, clusterName, suffix); ferr == nil && tg.HealthCheckProtocol == protocol {
			return aws.ToString(tg.TargetGroupArn), nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("creating target group %s in %s: %w", name, vpcID, err)
	}
	if len(out.TargetGroups) == 0 {
		return "", fmt.Errorf("creating target group %s: empty answer", name)
	}
	return aws.ToString(out.TargetGroups[0].TargetGroupArn), nil
}

// listeners are the load balancer's listeners.
func (c *Cloud) listeners(ctx context.Context, lbARN string) ([]elbv2types.Listener, error) {
	p := elbv2.NewDescribeListenersPaginator(c.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	var out []elbv2types.Listener
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the listeners of load balancer %s: %w", lbARN, err)
		}
		out = append(out, page.Listeners...)
	}
	return out, nil
}

// forwardTo is the listener action that sends everything to the target group.
func forwardTo(tgARN string) []elbv2types.Action {
	return []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}}
}

// forwardsTo reports whether the listener sends everything to the target group.
func forwardsTo(l elbv2types.Listener, tgARN string) bool {
	if len(l.DefaultActions) != 1 || l.DefaultActions[0].Type != elbv2types.ActionTypeEnumForward {
		return false
	}
	a := l.DefaultActions[0]
	if aws.ToString(a.TargetGroupArn) == tgARN {
		return true
	}
	return a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) == 1 && aws.ToString(a.ForwardConfig.TargetGroups[0].TargetGroupArn) == tgARN
}

// ensureListener makes the TCP listener on port forward to the target group: it creates one, or changes
// the one on that port that forwards elsewhere.
func (c *Cloud) ensureListener(ctx context.Context, lbARN string, listeners []elbv2types.Listener, port int32, tgARN string, tags map[string]string) error {
	i := slices.IndexFunc(listeners, func(l elbv2types.Listener) bool { return aws.ToInt32(l.Port) == port })
	if i < 0 {
		_, err := c.elbv2.CreateListener(ctx, &elbv2.CreateListenerInput{
			LoadBalancerArn: aws.String(lbARN),
			Protocol:        elbv2types.ProtocolEnumTcp,
			Port:            aws.Int32(port),
			DefaultActions:  forwardTo(tgARN),
			Tags:            elbTags(tags),
		})
		if err != nil {
			return fmt.Errorf("creating the listener on port %d of load balancer %s: %w", port, lbARN, err)
		}
		return nil
	}
	l := listeners[i]
	if l.Protocol == elbv2types.ProtocolEnumTcp && forwardsTo(l, tgARN) {
		return nil
	}
	_, err := c.elbv2.ModifyListener(ctx, &elbv2.ModifyListenerInput{
		ListenerArn:    l.ListenerArn,
		Protocol:       elbv2types.ProtocolEnumTcp,
		DefaultActions: forwardTo(tgARN),
	})
	if err != nil {
		return fmt.Errorf("pointing listener %s (port %d) at target group %s: %w", aws.ToString(l.ListenerArn), port, tgARN, err)
	}
	return nil
}

// ensureTargets registers exactly addrs (on PostgreSQL's port) in the target group: it registers the ones
// missing first, then deregisters the others. Targets already draining count as gone.
func (c *Cloud) ensureTargets(ctx context.Context, name, tgARN string, addrs []string) error {
	out, err := c.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
	if err != nil {
		return fmt.Errorf("listing the targets of target group %s: %w", name, err)
	}
	port := int32(bootstrap.DefaultEC2Port)
	var have []string
	var extra []elbv2types.TargetDescription
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil {
			continue
		}
		if h := d.TargetHealth; h != nil && (h.State == elbv2types.TargetHealthStateEnumDraining ||
			h.Reason == elbv2types.TargetHealthReasonEnumDeregistrationInProgress || h.Reason == elbv2types.TargetHealthReasonEnumNotRegistered) {
			continue
		}
		id := aws.ToString(d.Target.Id)
		if aws.ToInt32(d.Target.Port) == port && slices.Contains(addrs, id) {
			have = append(have, id)
			continue
		}
		extra = append(extra, elbv2types.TargetDescription{Id: d.Target.Id, Port: d.Target.Port, AvailabilityZone: d.Target.AvailabilityZone})
	}

	var missing []elbv2types.TargetDescription
	for _, a := range addrs {
		if !slices.Contains(have, a) {
			missing = append(missing, elbv2types.TargetDescription{Id: aws.String(a), Port: aws.Int32(port)})
		}
	}
	if len(missing) > 0 {
		_, err := c.elbv2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: missing})
		if err != nil {
			return fmt.Errorf("registering %s in target group %s: %w", targetList(missing), name, err)
		}
	}
	if len(extra) > 0 {
		_, err := c.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: extra})
		// InvalidTarget: one is not registered (any more).
		if err != nil && !errCodeEquals(err, errCodeInvalidTarget) {
			return fmt.Errorf("deregistering %s from target group %s: %w", targetList(extra), name, err)
		}
	}
	return nil
}

// targetList names targets for errors: "10.0.1.5:5432, 10.0.2.7:5432".
func targetList(ts []elbv2types.TargetDescription) string {
	s := make([]string, 0, len(ts))
	for _, t := range ts {
		s = append(s, aws.ToString(t.Id)+":"+strconv.Itoa(int(aws.ToInt32(t.Port))))
	}
	return strings.Join(s, ", ")
}
