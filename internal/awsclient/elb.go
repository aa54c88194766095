package awsclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
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

// Elastic Load Balancing error codes the Cloud reacts to by name.
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

// checkELBOwner returns nil when the object at arn carries the cluster's tag, errNotClusters wrapped when
// it does not, and ErrNotFound wrapped when it has vanished meanwhile.
func (c *Cloud) checkELBOwner(ctx context.Context, what, arn, clusterName string) error {
	out, err := c.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		return notFound(err, what, "reading the tags of", errCodeLoadBalancerNotFound, errCodeTargetGroupNotFound)
	}
	owner := ""
	for _, d := range out.TagDescriptions {
		for _, t := range d.Tags {
			if aws.ToString(t.Key) == awsspec.TagCluster {
				owner = aws.ToString(t.Value)
			}
		}
	}
	if owner != clusterName {
		return fmt.Errorf("%s exists but is not cluster %q's (tag %s = %q): %w; delete or rename it, or give the cluster another name",
			what, clusterName, awsspec.TagCluster, owner, errNotClusters)
	}
	return nil
}

// findLoadBalancer describes the cluster's load balancer: ErrNotFound when there is none, errNotClusters
// when one of its name lacks the cluster's tag.
func (c *Cloud) findLoadBalancer(ctx context.Context, clusterName string) (elbv2types.LoadBalancer, error) {
	name := lbName(clusterName)
	what := "load balancer " + name
	out, err := c.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if err != nil {
		return elbv2types.LoadBalancer{}, notFound(err, what, "describing", errCodeLoadBalancerNotFound)
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
func (c *Cloud) findTargetGroup(ctx context.Context, clusterName, suffix string) (elbv2types.TargetGroup, error) {
	name := elbName(clusterName, suffix)
	what := "target group " + name
	out, err := c.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	if err != nil {
		return elbv2types.TargetGroup{}, notFound(err, what, "describing", errCodeTargetGroupNotFound)
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
func (c *Cloud) LoadBalancer(ctx context.Context, clusterName string) (LoadBalancer, error) {
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
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, clusterName string, subnets, addrs []string, healthHTTPS bool, tags map[string]string) (LoadBalancer, error) {
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
		tgARN, err := c.ensureTargetGroup(ctx, clusterName, g.suffix, g.healthPath, healthHTTPS, vpcID, all)
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
