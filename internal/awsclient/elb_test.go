package awsclient_test

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// What moto 5.2 shows of Elastic Load Balancing v2, and what these tests therefore cannot check:
//   - It runs no health checks: DescribeTargetHealth calls every registered ip target "healthy", so the
//     tests check the health check settings and the registered addresses, not which node is healthy.
//   - It lists only registered targets (a deregistered one is gone at once, never "draining").
//   - CreateLoadBalancer never answers DuplicateLoadBalancerName (each call makes another load balancer of
//     the same name), so "nothing duplicated" below checks that EnsureLoadBalancer finds before it creates.
//   - A load balancer is deleted at once, and a target group stops being in use with it, so the waits and
//     the ResourceInUse retry of DeleteLoadBalancer run through without waiting.
//   - SetSubnets wants two zones at least (the rule of Application Load Balancers).

// lbTest is a Cloud on moto with the raw EC2 and ELBv2 clients the test arranges and checks objects with.
type lbTest struct {
	*awsclient.Cloud
	ec2 *ec2.Client
	elb *elbv2.Client
}

// newLBTest is newAWSTest's Cloud with the raw clients the load balancer tests use.
func newLBTest(t *testing.T) *lbTest {
	t.Helper()
	at := newAWSTest(t)
	return &lbTest{Cloud: at.Cloud, ec2: at.ec2, elb: at.elb}
}

// network creates a VPC 10.30.0.0/16 with a subnet in each of eu-west-1a, b and c, and returns the VPC
// and subnet IDs with one address in each subnet.
func (c *lbTest) network(t *testing.T) (string, []string, []string) {
	t.Helper()
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	v := acctest.CreateVPC(t, c.ec2, "10.30.0.0/16", zones...)
	var subnets []string
	for _, z := range zones {
		subnets = append(subnets, v.Subnets[z])
	}
	return v.ID, subnets, []string{"10.30.1.10", "10.30.2.10", "10.30.3.10"}
}

// loadBalancers are every load balancer moto holds.
func (c *lbTest) loadBalancers(t *testing.T) []elbv2types.LoadBalancer {
	t.Helper()
	out, err := c.elb.DescribeLoadBalancers(t.Context(), &elbv2.DescribeLoadBalancersInput{})
	if err != nil {
		t.Fatalf("DescribeLoadBalancers: %v", err)
	}
	return out.LoadBalancers
}

// targetGroups are every target group moto holds, by name.
func (c *lbTest) targetGroups(t *testing.T) map[string]elbv2types.TargetGroup {
	t.Helper()
	out, err := c.elb.DescribeTargetGroups(t.Context(), &elbv2.DescribeTargetGroupsInput{})
	if err != nil {
		t.Fatalf("DescribeTargetGroups: %v", err)
	}
	groups := map[string]elbv2types.TargetGroup{}
	for _, tg := range out.TargetGroups {
		if _, dup := groups[aws.ToString(tg.TargetGroupName)]; dup {
			t.Errorf("two target groups named %s", aws.ToString(tg.TargetGroupName))
		}
		groups[aws.ToString(tg.TargetGroupName)] = tg
	}
	return groups
}

// listeners are the load balancer's listeners: target group ARN by port, each checked to be TCP.
func (c *lbTest) listeners(t *testing.T, lbARN string) map[int32]string {
	t.Helper()
	out, err := c.elb.DescribeListeners(t.Context(), &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil {
		t.Fatalf("DescribeListeners: %v", err)
	}
	byPort := map[int32]string{}
	for _, l := range out.Listeners {
		port := aws.ToInt32(l.Port)
		if _, dup := byPort[port]; dup {
			t.Errorf("two listeners on port %d", port)
		}
		if l.Protocol != elbv2types.ProtocolEnumTcp || len(l.DefaultActions) != 1 || l.DefaultActions[0].Type != elbv2types.ActionTypeEnumForward {
			t.Errorf("listener on port %d: protocol %s, actions %+v; want TCP forwarding to one target group", port, l.Protocol, l.DefaultActions)
		}
		if len(l.DefaultActions) > 0 {
			byPort[port] = aws.ToString(l.DefaultActions[0].TargetGroupArn)
		}
	}
	return byPort
}

// targets are the registered targets' addresses, sorted; each must be on port 5432.
func (c *lbTest) targets(t *testing.T, tgARN string) []string {
	t.Helper()
	out, err := c.elb.DescribeTargetHealth(t.Context(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
	if err != nil {
		t.Fatalf("DescribeTargetHealth: %v", err)
	}
	var ips []string
	for _, d := range out.TargetHealthDescriptions {
		if port := aws.ToInt32(d.Target.Port); port != 5432 {
			t.Errorf("target %s on port %d, want 5432", aws.ToString(d.Target.Id), port)
		}
		ips = append(ips, aws.ToString(d.Target.Id))
	}
	slices.Sort(ips)
	return ips
}

// wantLoadBalancer checks everything EnsureLoadBalancer makes for the cluster: one internal network load
// balancer in subnets, tagged; the two target groups with their health checks; the two listeners; and
// exactly ips registered in each group.
func (c *lbTest) wantLoadBalancer(t *testing.T, name, vpcID string, subnets, ips []string, lb awsclient.LoadBalancer) {
	t.Helper()
	ctx := t.Context()
	lbs := c.loadBalancers(t)
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers, want 1: %+v", len(lbs), lbs)
	}
	raw := lbs[0]
	if aws.ToString(raw.LoadBalancerName) != "pgnvme-"+name || aws.ToString(raw.LoadBalancerArn) != lb.ARN || aws.ToString(raw.DNSName) != lb.DNSName || lb.DNSName == "" {
		t.Errorf("load balancer %s (%s, %s); EnsureLoadBalancer returned %+v", aws.ToString(raw.LoadBalancerName), aws.ToString(raw.LoadBalancerArn), aws.ToString(raw.DNSName), lb)
	}
	if raw.Scheme != elbv2types.LoadBalancerSchemeEnumInternal || raw.Type != elbv2types.LoadBalancerTypeEnumNetwork || aws.ToString(raw.VpcId) != vpcID {
		t.Errorf("load balancer: scheme %s, type %s, VPC %s; want internal network in %s", raw.Scheme, raw.Type, aws.ToString(raw.VpcId), vpcID)
	}
	var zones []string
	for _, z := range raw.AvailabilityZones {
		zones = append(zones, aws.ToString(z.SubnetId))
	}
	slices.Sort(zones)
	if want := slices.Sorted(slices.Values(subnets)); !slices.Equal(zones, want) {
		t.Errorf("load balancer subnets %v, want %v", zones, want)
	}

	groups := c.targetGroups(t)
	if len(groups) != 2 {
		t.Errorf("%d target groups, want 2: %v", len(groups), slices.Sorted(maps.Keys(groups)))
	}
	wantGroups := []struct {
		suffix, path, arn string
		port              int32
	}{
		{"-rw", "/primary", lb.ReadWriteTargetGroup, 5432},
		{"-ro", "/replica", lb.ReadOnlyTargetGroup, 5433},
	}
	listeners := c.listeners(t, lb.ARN)
	if len(listeners) != 2 {
		t.Errorf("listeners %v, want ports 5432 and 5433", listeners)
	}
	for _, w := range wantGroups {
		tgName := "pgnvme-" + name + w.suffix
		tg, ok := groups[tgName]
		if !ok {
			t.Errorf("no target group %s", tgName)
			continue
		}
		if aws.ToString(tg.TargetGroupArn) != w.arn {
			t.Errorf("target group %s is %s; EnsureLoadBalancer returned %q", tgName, aws.ToString(tg.TargetGroupArn), w.arn)
		}
		if tg.Protocol != elbv2types.ProtocolEnumTcp || aws.ToInt32(tg.Port) != 5432 || tg.TargetType != elbv2types.TargetTypeEnumIp || aws.ToString(tg.VpcId) != vpcID {
			t.Errorf("target group %s: %s %d, targets %s, VPC %s; want TCP 5432, ip, %s", tgName, tg.Protocol, aws.ToInt32(tg.Port), tg.TargetType, aws.ToString(tg.VpcId), vpcID)
		}
		if tg.HealthCheckProtocol != elbv2types.ProtocolEnumHttp || aws.ToString(tg.HealthCheckPort) != "8008" || aws.ToString(tg.HealthCheckPath) != w.path ||
			aws.ToInt32(tg.HealthyThresholdCount) != 2 || aws.ToInt32(tg.UnhealthyThresholdCount) != 2 || aws.ToInt32(tg.HealthCheckIntervalSeconds) != 10 {
			t.Errorf("target group %s health check: %s :%s%s, thresholds %d/%d, every %d s; want HTTP :8008%s, 2/2, 10 s", tgName,
				tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort), aws.ToString(tg.HealthCheckPath),
				aws.ToInt32(tg.HealthyThresholdCount), aws.ToInt32(tg.UnhealthyThresholdCount), aws.ToInt32(tg.HealthCheckIntervalSeconds), w.path)
		}
		if got := listeners[w.port]; got != w.arn {
			t.Errorf("listener %d forwards to %q, want %s (%s)", w.port, got, tgName, w.arn)
		}
		if got := c.targets(t, w.arn); !slices.Equal(got, ips) {
			t.Errorf("target group %s targets %v, want %v", tgName, got, ips)
		}
		tags, err := c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{lb.ARN, w.arn}})
		if err != nil {
			t.Fatalf("DescribeTags: %v", err)
		}
		for _, d := range tags.TagDescriptions {
			got := map[string]string{}
			for _, tag := range d.Tags {
				got[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
			}
			if got[awsspec.TagCluster] != name || got["team"] != "tf-acc" {
				t.Errorf("tags of %s: %v; want %s=%s and team=tf-acc", aws.ToString(d.ResourceArn), got, awsspec.TagCluster, name)
			}
		}
	}
}

func TestAWSCloud_LoadBalancer(t *testing.T) {
	c := newLBTest(t)
	ctx := t.Context()
	vpcID, subnets, ips := c.network(t)
	const name = "tf-acc-lb"
	tags := map[string]string{"team": "tf-acc"}

	_, err := c.LoadBalancer(ctx, name)
	wantNotFound(t, "LoadBalancer before creation", err)
	if err := c.DeleteLoadBalancer(ctx, name); err != nil {
		t.Fatalf("DeleteLoadBalancer before creation: %v, want success", err)
	}

	// Subnets and addresses may repeat (several nodes in a zone): each counts once.
	lb, err := c.EnsureLoadBalancer(ctx, name, append(slices.Clone(subnets), subnets[0]), append(slices.Clone(ips), ips[1]), false, tags)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	if lb.ARN == "" || lb.ReadWriteTargetGroup == "" || lb.ReadOnlyTargetGroup == "" || lb.ReadWriteTargetGroup == lb.ReadOnlyTargetGroup {
		t.Fatalf("EnsureLoadBalancer = %+v", lb)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets, ips, lb)
	if got, err := c.LoadBalancer(ctx, name); err != nil || got != lb {
		t.Errorf("LoadBalancer = %+v, %v; want %+v", got, err, lb)
	}
	_, err = c.LoadBalancer(ctx, "tf-acc-other")
	wantNotFound(t, "LoadBalancer of another cluster", err)

	// A node gone: its address is deregistered from both groups, nothing is made twice.
	again, err := c.EnsureLoadBalancer(ctx, name, subnets, ips[:2], false, tags)
	if err != nil || again != lb {
		t.Fatalf("EnsureLoadBalancer with two addresses = %+v, %v; want %+v", again, err, lb)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets, ips[:2], lb)

	// An interrupted run: the read-only listener and group missing, a target missing from the read-write
	// group. The next run completes them.
	rw := c.listeners(t, lb.ARN)
	out, err := c.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lb.ARN)})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range out.Listeners {
		if aws.ToInt32(l.Port) == 5433 {
			if _, err := c.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: l.ListenerArn}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(lb.ReadOnlyTargetGroup)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(rw[5432]),
		Targets: []elbv2types.TargetDescription{{Id: aws.String(ips[0]), Port: aws.Int32(5432)}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.LoadBalancer(ctx, name); err != nil || got.ReadOnlyTargetGroup != "" || got.ReadWriteTargetGroup != lb.ReadWriteTargetGroup {
		t.Errorf("LoadBalancer without the read-only group = %+v, %v", got, err)
	}
	completed, err := c.EnsureLoadBalancer(ctx, name, subnets, ips[:2], false, tags)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer after an interruption: %v", err)
	}
	if completed.ARN != lb.ARN || completed.ReadWriteTargetGroup != lb.ReadWriteTargetGroup || completed.ReadOnlyTargetGroup == "" {
		t.Errorf("EnsureLoadBalancer after an interruption = %+v; want load balancer %s and read-write group %s kept", completed, lb.ARN, lb.ReadWriteTargetGroup)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets, ips[:2], completed)

	// A listener changed by hand to forward elsewhere is pointed back.
	out, err = c.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lb.ARN)})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range out.Listeners {
		if aws.ToInt32(l.Port) == 5433 {
			_, err := c.elb.ModifyListener(ctx, &elbv2.ModifyListenerInput{ListenerArn: l.ListenerArn, DefaultActions: []elbv2types.Action{{
				Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(completed.ReadWriteTargetGroup),
			}}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if again, err := c.EnsureLoadBalancer(ctx, name, subnets, ips[:2], false, tags); err != nil || again != completed {
		t.Fatalf("EnsureLoadBalancer after a listener change = %+v, %v; want %+v", again, err, completed)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets, ips[:2], completed)

	if err := c.DeleteLoadBalancer(ctx, name); err != nil {
		t.Fatalf("DeleteLoadBalancer: %v", err)
	}
	if lbs := c.loadBalancers(t); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
	if groups := c.targetGroups(t); len(groups) != 0 {
		t.Errorf("target groups left: %+v", groups)
	}
	_, err = c.LoadBalancer(ctx, name)
	wantNotFound(t, "LoadBalancer after deletion", err)
	if err := c.DeleteLoadBalancer(ctx, name); err != nil {
		t.Errorf("DeleteLoadBalancer again: %v, want success", err)
	}
}

// A load balancer or target group of the cluster's name without its tag is someone else's: reading and
// ensuring fail, deleting leaves it alone.
func TestAWSCloud_LoadBalancerNotClusters(t *testing.T) {
	c := newLBTest(t)
	ctx := t.Context()
	vpcID, subnets, ips := c.network(t)
	const name = "tf-acc-taken"

	foreign, err := c.elb.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String("pgnvme-" + name), Type: elbv2types.LoadBalancerTypeEnumNetwork, Subnets: subnets,
		Tags: []elbv2types.Tag{{Key: aws.String(awsspec.TagCluster), Value: aws.String("tf-acc-someone")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.LoadBalancer(ctx, name)
	if err == nil || errors.Is(err, awsclient.ErrNotFound) || !strings.Contains(err.Error(), "tf-acc-someone") {
		t.Errorf("LoadBalancer of a load balancer tagged for another cluster: %v; want an error that names its owner", err)
	}
	if _, err := c.EnsureLoadBalancer(ctx, name, subnets, ips, false, nil); err == nil || errors.Is(err, awsclient.ErrNotFound) {
		t.Errorf("EnsureLoadBalancer over another's load balancer: %v, want an error", err)
	}
	if err := c.DeleteLoadBalancer(ctx, name); err != nil {
		t.Errorf("DeleteLoadBalancer beside another's load balancer: %v, want success", err)
	}
	if lbs := c.loadBalancers(t); len(lbs) != 1 || aws.ToString(lbs[0].LoadBalancerArn) != aws.ToString(foreign.LoadBalancers[0].LoadBalancerArn) {
		t.Errorf("load balancers %+v; want the other's kept", lbs)
	}

	if _, err := c.elb.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String("pgnvme-tf-acc-tg-rw"), Protocol: elbv2types.ProtocolEnumTcp, Port: aws.Int32(5432),
		TargetType: elbv2types.TargetTypeEnumIp, VpcId: aws.String(vpcID),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureLoadBalancer(ctx, "tf-acc-tg", subnets, ips, false, nil); err == nil || !strings.Contains(err.Error(), "pgnvme-tf-acc-tg-rw") {
		t.Errorf("EnsureLoadBalancer over an untagged target group of its name: %v, want an error naming it", err)
	}
	if err := c.DeleteLoadBalancer(ctx, "tf-acc-tg"); err != nil {
		t.Errorf("DeleteLoadBalancer: %v", err)
	}
	if _, ok := c.targetGroups(t)["pgnvme-tf-acc-tg-rw"]; !ok {
		t.Errorf("DeleteLoadBalancer deleted an untagged target group of the cluster's name")
	}
}

// Names too long or not valid for Elastic Load Balancing get a shortened name with a hash; two that share
// their beginning still differ.
func TestAWSCloud_LoadBalancerLongName(t *testing.T) {
	c := newLBTest(t)
	ctx := t.Context()
	_, subnets, ips := c.network(t)
	valid := regexp.MustCompile(`^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)
	long := "tf-acc-" + strings.Repeat("x", 50)
	names := []string{long + "-a", long + "-b", "tf-acc-dash-", "tf-acc--double"}

	seen := map[string]bool{}
	for _, name := range names {
		lb, err := c.EnsureLoadBalancer(ctx, name, subnets, ips[:1], false, nil)
		if err != nil {
			t.Fatalf("EnsureLoadBalancer(%s): %v", name, err)
		}
		arns := []string{lb.ReadWriteTargetGroup, lb.ReadOnlyTargetGroup}
		groups, err := c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: arns})
		if err != nil || len(groups.TargetGroups) != 2 {
			t.Fatalf("DescribeTargetGroups(%v) = %+v, %v", arns, groups, err)
		}
		lbs, err := c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{lb.ARN}})
		if err != nil || len(lbs.LoadBalancers) != 1 {
			t.Fatalf("DescribeLoadBalancers(%s) = %+v, %v", lb.ARN, lbs, err)
		}
		got := []string{aws.ToString(lbs.LoadBalancers[0].LoadBalancerName)}
		for _, tg := range groups.TargetGroups {
			got = append(got, aws.ToString(tg.TargetGroupName))
		}
		for _, n := range got {
			if len(n) > 32 || !valid.MatchString(n) || !strings.HasPrefix(n, "pgnvme-tf-acc-") || seen[n] {
				t.Errorf("cluster %s: name %q is not a valid, distinct ELB name of at most 32 characters", name, n)
			}
			seen[n] = true
		}
		if found, err := c.LoadBalancer(ctx, name); err != nil || found != lb {
			t.Errorf("LoadBalancer(%s) = %+v, %v; want %+v", name, found, err, lb)
		}
	}
	for _, name := range names {
		if err := c.DeleteLoadBalancer(ctx, name); err != nil {
			t.Errorf("DeleteLoadBalancer(%s): %v", name, err)
		}
	}
	if lbs, groups := c.loadBalancers(t), c.targetGroups(t); len(lbs) != 0 || len(groups) != 0 {
		t.Errorf("left after deletion: %d load balancers, target groups %v", len(lbs), groups)
	}
}

// A node in a zone the load balancer is not in yet: the next run adds the subnet and keeps the others.
func TestAWSCloud_LoadBalancerNewSubnet(t *testing.T) {
	c := newLBTest(t)
	ctx := t.Context()
	vpcID, subnets, ips := c.network(t)
	const name = "tf-acc-zones"
	tags := map[string]string{"team": "tf-acc"}

	first, err := c.EnsureLoadBalancer(ctx, name, subnets[:2], ips[:2], false, tags)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer in two zones: %v", err)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets[:2], ips[:2], first)
	lb, err := c.EnsureLoadBalancer(ctx, name, subnets[1:], ips[1:], false, tags)
	if err != nil || lb != first {
		t.Fatalf("EnsureLoadBalancer with a third zone = %+v, %v; want %+v", lb, err, first)
	}
	c.wantLoadBalancer(t, name, vpcID, subnets, ips[1:], lb)
}

// TestAWSCloud_targetGroupAnswerLost: Elastic Load Balancing makes a target group but its answer is lost (a
// 500 in its place); the SDK retries, moto answers the repeat with DuplicateTargetGroupName (AWS, idempotent,
// with the same group), and EnsureLoadBalancer takes the group it made, found by name and the cluster's tag,
// instead of failing (a fresh-clone CI run under load failed TestAWSCloud_LoadBalancerLongName so). A lost
// CreateLoadBalancer answer is not injected: moto makes a second load balancer of the same name for the
// repeat, where AWS returns the first.
func TestAWSCloud_targetGroupAnswerLost(t *testing.T) {
	var tgLost atomic.Int32
	at := newAWSTestVia(t, func(motoURL string, e *awsclient.Endpoints) {
		e.ELBV2 = answersLost(t, motoURL, map[string]*atomic.Int32{"CreateTargetGroup": &tgLost})
	})
	c := &lbTest{Cloud: at.Cloud, ec2: at.ec2, elb: at.elb}
	ctx := t.Context()
	_, subnets, ips := c.network(t)
	const name = "tf-acc-lost"
	lb, err := c.EnsureLoadBalancer(ctx, name, subnets, ips[:1], false, nil)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer with the first answers lost: %v", err)
	}
	if tgLost.Load() < 2 {
		t.Fatalf("CreateTargetGroup sent %d times: want it retried after its lost answer", tgLost.Load())
	}
	if lbs := c.loadBalancers(t); len(lbs) != 1 || aws.ToString(lbs[0].LoadBalancerArn) != lb.ARN {
		t.Errorf("load balancers %d, want the one made", len(lbs))
	}
	groups := c.targetGroups(t)
	for _, suffix := range []string{"rw", "ro"} {
		if _, ok := groups["pgnvme-"+name+"-"+suffix]; !ok {
			t.Errorf("target group pgnvme-%s-%s missing: %v", name, suffix, groups)
		}
	}
	if found, err := c.LoadBalancer(ctx, name); err != nil || found != lb {
		t.Errorf("LoadBalancer(%s) = %+v, %v; want %+v", name, found, err, lb)
	}
	t.Logf("the first answer lost and retried: CreateTargetGroup %d requests", tgLost.Load())
	if err := c.DeleteLoadBalancer(ctx, name); err != nil {
		t.Errorf("DeleteLoadBalancer: %v", err)
	}
}
