package ec2cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The cluster's Network Load Balancer is lbName(cluster) with two target groups, one per listener. Both
// groups send to PostgreSQL's port on every node (targets of type ip: the nodes' interface addresses, which
// replacements keep); Patroni's REST API answers their HTTP health checks, so only the primary is healthy
// in the read-write group and only running replicas in the read-only one.
var lbTargetGroups = []struct {
	suffix, healthPath string
	listener           int32
	readWrite          bool
}{
	{"-rw", "/primary", ReadWritePort, true},
	{"-ro", "/replica", ReadOnlyPort, false},
}

// Health checks of the target groups: a node changes state after two checks 10 s apart.
const (
	lbHealthCheckInterval = 10
	lbHealthyThreshold    = 2
	lbUnhealthyThreshold  = 2
)

// maxELBName is Elastic Load Balancing's limit on load balancer and target group names.
const maxELBName = 32

// Elastic Load Balancing error codes awsCloud reacts to by name.
const (
	errCodeInvalidTarget        = "InvalidTarget"
	errCodeListenerNotFound     = "ListenerNotFound"
	errCodeLoadBalancerNotFound = "LoadBalancerNotFound"
	errCodeResourceInUse        = "ResourceInUse"
	errCodeTargetGroupNotFound  = "TargetGroupNotFound"
)

// Named timeouts of the load balancer's deletion.
const (
	// lbDeleteTimeout bounds the wait until Elastic Load Balancing no longer describes a load balancer it
	// deletes (seconds in practice).
	lbDeleteTimeout = 5 * time.Minute
	// targetGroupReleaseTimeout bounds DeleteTargetGroup's retries while a load balancer just deleted still
	// holds the group (ResourceInUse; the hashicorp/aws provider allows 2 minutes).
	targetGroupReleaseTimeout = 2 * time.Minute
)

// errNotClusters means an Elastic Load Balancing object of the cluster's name lacks the cluster's tag.
var errNotClusters = errors.New("it belongs to something else")

// validELBName: letters, digits and single hyphens, neither first nor last.
var validELBName = regexp.MustCompile(`^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)

// elbName is "pgnvme-<cluster><suffix>" when that is a valid load balancer or target group name (at most 32
// letters, digits and single inner hyphens). Otherwise it is the longest prefix of that, cleaned, that
// leaves room for "-" plus 8 hex digits of the cluster name's SHA-256 plus suffix, so two long names that
// share a beginning still differ.
func elbName(clusterName, suffix string) string {
	name := awsObjectName(clusterName) + suffix
	if len(name) <= maxELBName && validELBName.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(clusterName))
	tail := "-" + hex.EncodeToString(sum[:4]) + suffix
	head := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '-'
	}, awsObjectName(clusterName))
	for strings.Contains(head, "--") {
		head = strings.ReplaceAll(head, "--", "-")
	}
	head = strings.Trim(head[:min(len(head), maxELBName-len(tail))], "-")
	return head + tail
}

// lbName is the name of the cluster's load balancer.
func lbName(clusterName string) string { return elbName(clusterName, "") }

func elbTags(tags map[string]string) []elbv2types.Tag {
	out := make([]elbv2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, elbv2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// checkELBOwner returns nil when the object at arn carries the cluster's tag, errNotClusters wrapped when
// it does not, and ErrNotFound wrapped when it has vanished meanwhile.
func (c *awsCloud) checkELBOwner(ctx context.Context, what, arn, clusterName string) error {
	out, err := c.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		return awsNotFound(err, what, "reading the tags of", errCodeLoadBalancerNotFound, errCodeTargetGroupNotFound)
	}
	owner := ""
	for _, d := range out.TagDescriptions {
		for _, t := range d.Tags {
			if aws.ToString(t.Key) == cluster.TagCluster {
				owner = aws.ToString(t.Value)
			}
		}
	}
	if owner != clusterName {
		return fmt.Errorf("%s exists but is not cluster %q's (tag %s = %q): %w; delete or rename it, or give the cluster another name",
			what, clusterName, cluster.TagCluster, owner, errNotClusters)
	}
	return nil
}

// findLoadBalancer describes the cluster's load balancer: ErrNotFound when there is none, errNotClusters
// when one of its name lacks the cluster's tag.
func (c *awsCloud) findLoadBalancer(ctx context.Context, clusterName string) (elbv2types.LoadBalancer, error) {
	name := lbName(clusterName)
	what := "load balancer " + name
	out, err := c.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if err != nil {
		return elbv2types.LoadBalancer{}, awsNotFound(err, what, "describing", errCodeLoadBalancerNotFound)
	}
	i := slices.IndexFunc(out.LoadBalancers, func(lb elbv2types.LoadBalancer) bool { return aws.ToString(lb.LoadBalancerName) == name })
	if i < 0 {
		return elbv2types.LoadBalancer{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	lb := out.LoadBalancers[i]
	if err := c.checkELBOwner(ctx, what, aws.ToString(lb.LoadBalancerArn), clusterName); err != nil {
		return elbv2types.LoadBalancer{}, err
	}
	return lb, nil
}

// findTargetGroup describes the cluster's target group of suffix, like findLoadBalancer.
func (c *awsCloud) findTargetGroup(ctx context.Context, clusterName, suffix string) (elbv2types.TargetGroup, error) {
	name := elbName(clusterName, suffix)
	what := "target group " + name
	out, err := c.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	if err != nil {
		return elbv2types.TargetGroup{}, awsNotFound(err, what, "describing", errCodeTargetGroupNotFound)
	}
	i := slices.IndexFunc(out.TargetGroups, func(tg elbv2types.TargetGroup) bool { return aws.ToString(tg.TargetGroupName) == name })
	if i < 0 {
		return elbv2types.TargetGroup{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	tg := out.TargetGroups[i]
	if err := c.checkELBOwner(ctx, what, aws.ToString(tg.TargetGroupArn), clusterName); err != nil {
		return elbv2types.TargetGroup{}, err
	}
	return tg, nil
}

// LoadBalancer finds the cluster's load balancer (by name, checking its cluster tag) and its target
// groups; a target group that is missing leaves its ARN "".
func (c *awsCloud) LoadBalancer(ctx context.Context, clusterName string) (LoadBalancer, error) {
	lb, err := c.findLoadBalancer(ctx, clusterName)
	if err != nil {
		return LoadBalancer{}, err
	}
	out := LoadBalancer{ARN: aws.ToString(lb.LoadBalancerArn), DNSName: aws.ToString(lb.DNSName)}
	for _, g := range lbTargetGroups {
		tg, err := c.findTargetGroup(ctx, clusterName, g.suffix)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return LoadBalancer{}, err
		}
		out.setTargetGroup(g.readWrite, aws.ToString(tg.TargetGroupArn))
	}
	return out, nil
}

// EnsureLoadBalancer finds or creates each part the cluster's load balancer lacks: the internal Network Load
// Balancer in the subnets (adding subnets it is not in yet), the target groups, the listeners (pointing an
// existing one at its group when it forwards elsewhere), and the targets (registering the addresses
// missing, deregistering the others). It does not wait for the load balancer to become active: its DNS name
// exists at once, and targets become healthy only once the nodes run.
func (c *awsCloud) EnsureLoadBalancer(ctx context.Context, clusterName string, subnets, addrs []string, tags map[string]string) (LoadBalancer, error) {
	subnets = compactSorted(subnets)
	addrs = compactSorted(addrs)
	if len(subnets) == 0 {
		return LoadBalancer{}, fmt.Errorf("load balancer of cluster %q: no subnets (a provider bug)", clusterName)
	}
	if slices.Contains(addrs, "") {
		return LoadBalancer{}, fmt.Errorf("load balancer of cluster %q: an empty target address (a provider bug)", clusterName)
	}
	described, err := c.Subnets(ctx, subnets)
	if err != nil {
		return LoadBalancer{}, fmt.Errorf("the load balancer's subnets: %w", err)
	}
	vpcID := described[0].VPCID
	for _, s := range described[1:] {
		if s.VPCID != vpcID {
			return LoadBalancer{}, fmt.Errorf("the load balancer's subnets are in more than one VPC: %s in %s, %s in %s", described[0].ID, vpcID, s.ID, s.VPCID)
		}
	}
	all := withClusterTag(tags, clusterName)

	lb, err := c.ensureLoadBalancer(ctx, clusterName, subnets, all)
	if err != nil {
		return LoadBalancer{}, err
	}
	lbARN := aws.ToString(lb.LoadBalancerArn)
	listeners, err := c.listeners(ctx, lbARN)
	if err != nil {
		return LoadBalancer{}, err
	}
	out := LoadBalancer{ARN: lbARN, DNSName: aws.ToString(lb.DNSName)}
	for _, g := range lbTargetGroups {
		tgARN, err := c.ensureTargetGroup(ctx, clusterName, g.suffix, g.healthPath, vpcID, all)
		if err != nil {
			return LoadBalancer{}, err
		}
		if err := c.ensureListener(ctx, lbARN, listeners, g.listener, tgARN, all); err != nil {
			return LoadBalancer{}, err
		}
		if err := c.ensureTargets(ctx, elbName(clusterName, g.suffix), tgARN, addrs); err != nil {
			return LoadBalancer{}, err
		}
		out.setTargetGroup(g.readWrite, tgARN)
	}
	return out, nil
}

func (lb *LoadBalancer) setTargetGroup(readWrite bool, arn string) {
	if readWrite {
		lb.ReadWriteTargetGroup = arn
	} else {
		lb.ReadOnlyTargetGroup = arn
	}
}

// compactSorted is the distinct values of s, sorted.
func compactSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// ensureLoadBalancer finds the cluster's load balancer or creates it, and enables the subnets it lacks.
// Subnets it has beyond them stay: Elastic Load Balancing may refuse to remove subnets from a Network
// Load Balancer, and a zone without a node does no harm.
func (c *awsCloud) ensureLoadBalancer(ctx context.Context, clusterName string, subnets []string, tags map[string]string) (elbv2types.LoadBalancer, error) {
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

// ensureTargetGroup finds the cluster's target group of suffix or creates it, and returns its ARN.
func (c *awsCloud) ensureTargetGroup(ctx context.Context, clusterName, suffix, healthPath, vpcID string, tags map[string]string) (string, error) {
	tg, err := c.findTargetGroup(ctx, clusterName, suffix)
	switch {
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
		HealthCheckProtocol:        elbv2types.ProtocolEnumHttp,
		HealthCheckPort:            aws.String(strconv.Itoa(bootstrap.DefaultPatroniRESTAPIPort)),
		HealthCheckPath:            aws.String(healthPath),
		HealthCheckIntervalSeconds: aws.Int32(lbHealthCheckInterval),
		HealthyThresholdCount:      aws.Int32(lbHealthyThreshold),
		UnhealthyThresholdCount:    aws.Int32(lbUnhealthyThreshold),
		Tags:                       elbTags(tags),
	})
	if err != nil {
		return "", fmt.Errorf("creating target group %s in %s: %w", name, vpcID, err)
	}
	if len(out.TargetGroups) == 0 {
		return "", fmt.Errorf("creating target group %s: empty answer", name)
	}
	return aws.ToString(out.TargetGroups[0].TargetGroupArn), nil
}

// listeners are the load balancer's listeners.
func (c *awsCloud) listeners(ctx context.Context, lbARN string) ([]elbv2types.Listener, error) {
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
func (c *awsCloud) ensureListener(ctx context.Context, lbARN string, listeners []elbv2types.Listener, port int32, tgARN string, tags map[string]string) error {
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
func (c *awsCloud) ensureTargets(ctx context.Context, name, tgARN string, addrs []string) error {
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
		if err != nil && !awsErrorIs(err, errCodeInvalidTarget) {
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

// DeleteLoadBalancer deletes the cluster's listeners and load balancer, waits until the load balancer is
// gone, then deletes the target groups, retrying while the load balancer still holds them. What is missing,
// or does not carry the cluster's tag (it is not the cluster's to delete), is skipped.
func (c *awsCloud) DeleteLoadBalancer(ctx context.Context, clusterName string) error {
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
			func(err error) bool { return awsErrorIs(err, errCodeResourceInUse) },
			func(ctx context.Context) (*elbv2.DeleteTargetGroupOutput, error) {
				return c.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
			})
		if err != nil && !awsErrorIs(err, errCodeTargetGroupNotFound) {
			return fmt.Errorf("deleting target group %s: %w", name, err)
		}
	}
	return nil
}

// deleteLoadBalancer deletes the listeners, then the load balancer, and waits until it is gone.
func (c *awsCloud) deleteLoadBalancer(ctx context.Context, lb elbv2types.LoadBalancer) error {
	name, arn := aws.ToString(lb.LoadBalancerName), aws.ToString(lb.LoadBalancerArn)
	listeners, err := c.listeners(ctx, arn)
	if err != nil && !awsErrorIs(err, errCodeLoadBalancerNotFound) {
		return err
	}
	for _, l := range listeners {
		_, err := c.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: l.ListenerArn})
		if err != nil && !awsErrorIs(err, errCodeListenerNotFound) {
			return fmt.Errorf("deleting listener %s of load balancer %s: %w", aws.ToString(l.ListenerArn), name, err)
		}
	}
	_, err = c.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
	if err != nil && !awsErrorIs(err, errCodeLoadBalancerNotFound) {
		return fmt.Errorf("deleting load balancer %s: %w", name, err)
	}

	const gone = "gone"
	_, err = wait.For(ctx, wait.Spec[struct{}]{
		What: fmt.Sprintf("load balancer %s to be deleted", name),
		Refresh: func(ctx context.Context) (struct{}, string, error) {
			out, err := c.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})
			switch {
			case awsErrorIs(err, errCodeLoadBalancerNotFound):
				return struct{}{}, gone, nil
			case err != nil:
				return struct{}{}, "", fmt.Errorf("describing load balancer %s: %w", name, err)
			case len(out.LoadBalancers) == 0:
				return struct{}{}, gone, nil
			}
			state := "unknown"
			if s := out.LoadBalancers[0].State; s != nil {
				state = string(s.Code)
			}
			return struct{}{}, state, nil
		},
		Target:  []string{gone},
		Timeout: lbDeleteTimeout,
		Clock:   c.clock,
	})
	return err
}
