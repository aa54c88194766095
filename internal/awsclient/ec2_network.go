package awsclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

func eniFrom(n ec2types.NetworkInterface) ENI {
	e := ENI{
		ID:        aws.ToString(n.NetworkInterfaceId),
		SubnetID:  aws.ToString(n.SubnetId),
		VPCID:     aws.ToString(n.VpcId),
		Zone:      aws.ToString(n.AvailabilityZone),
		PrivateIP: aws.ToString(n.PrivateIpAddress),
		Status:    string(n.Status),
		Tags:      tagMap(n.TagSet),
	}
	for _, g := range n.Groups {
		e.Groups = append(e.Groups, aws.ToString(g.GroupId))
	}
	if n.Association != nil {
		e.PublicIP = aws.ToString(n.Association.PublicIp)
	}
	if a := n.Attachment; a != nil && a.Status != ec2types.AttachmentStatusDetached {
		e.InstanceID = aws.ToString(a.InstanceId)
	}
	return e
}

// ENIs are the cluster's network interfaces.
func (c *Cloud) ENIs(ctx context.Context, clusterName string) ([]ENI, error) {
	p := ec2.NewDescribeNetworkInterfacesPaginator(c.ec2, &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{clusterFilter(clusterName)},
	})
	var enis []ENI
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the network interfaces of cluster %q: %w", clusterName, err)
		}
		for _, n := range page.NetworkInterfaces {
			enis = append(enis, eniFrom(n))
		}
	}
	return enis, nil
}

// CreateENI creates a network interface tagged with tags, which should hold the cluster tag (ENIs finds
// interfaces by it).
func (c *Cloud) CreateENI(ctx context.Context, subnetID string, securityGroups []string, description string, tags map[string]string) (ENI, error) {
	in := &ec2.CreateNetworkInterfaceInput{
		SubnetId:          aws.String(subnetID),
		Groups:            securityGroups,
		TagSpecifications: tagSpecs(tags, ec2types.ResourceTypeNetworkInterface),
	}
	if description != "" {
		in.Description = aws.String(description)
	}
	out, err := c.ec2.CreateNetworkInterface(ctx, in)
	if err != nil {
		return ENI{}, fmt.Errorf("creating a network interface in subnet %s: %w", subnetID, err)
	}
	if out.NetworkInterface == nil {
		return ENI{}, fmt.Errorf("creating a network interface in subnet %s: empty answer", subnetID)
	}
	return eniFrom(*out.NetworkInterface), nil
}

// SetENISecurityGroups replaces an interface's security groups.
func (c *Cloud) SetENISecurityGroups(ctx context.Context, eniID string, groups []string) error {
	_, err := c.ec2.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(eniID),
		Groups:             groups,
	})
	if err != nil {
		return notFound(err, "network interface "+eniID, "setting the security groups of", errCodeInvalidENIIDNotFound)
	}
	return nil
}

// findENI describes one interface; a missing one is ErrNotFound.
func (c *Cloud) findENI(ctx context.Context, eniID string) (ENI, error) {
	what := "network interface " + eniID
	out, err := c.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{eniID}})
	if err != nil {
		return ENI{}, notFound(err, what, "describing", errCodeInvalidENIIDNotFound)
	}
	if len(out.NetworkInterfaces) == 0 {
		return ENI{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return eniFrom(out.NetworkInterfaces[0]), nil
}

// statusENI reads the interface's status for wait.For; a vanished interface is ErrNotFound.
func (c *Cloud) statusENI(eniID string) func(context.Context) (ENI, string, error) {
	return func(ctx context.Context) (ENI, string, error) {
		e, err := c.findENI(ctx, eniID)
		return e, e.Status, err
	}
}

// WaitENIAvailable waits until the interface's status is available; a vanished interface ends the wait
// with ErrNotFound.
func (c *Cloud) WaitENIAvailable(ctx context.Context, eniID string, timeout time.Duration) error {
	_, err := wait.For(ctx, wait.Spec[ENI]{
		What:    fmt.Sprintf("network interface %s to be available", eniID),
		Refresh: c.statusENI(eniID),
		Pending: []string{
			string(ec2types.NetworkInterfaceStatusInUse), string(ec2types.NetworkInterfaceStatusAttaching),
			string(ec2types.NetworkInterfaceStatusDetaching), string(ec2types.NetworkInterfaceStatusAssociated),
		},
		Target:  []string{string(ec2types.NetworkInterfaceStatusAvailable)},
		Timeout: timeout,
		Clock:   c.clock,
	})
	return err
}

// DeleteENI deletes an interface; gone already is success.
func (c *Cloud) DeleteENI(ctx context.Context, eniID string) error {
	_, err := c.ec2.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(eniID)})
	if err != nil && !errCodeEquals(err, errCodeInvalidENIIDNotFound) {
		return fmt.Errorf("deleting network interface %s: %w", eniID, err)
	}
	return nil
}

// findSecurityGroup returns the ID of the group called name with the cluster tag, in vpcID when it is
// not "".
func (c *Cloud) findSecurityGroup(ctx context.Context, clusterName, vpcID string) (string, error) {
	name := awsObjectName(clusterName)
	filters := []ec2types.Filter{clusterFilter(clusterName), ec2Filter("group-name", name)}
	if vpcID != "" {
		filters = append(filters, ec2Filter("vpc-id", vpcID))
	}
	out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: filters})
	if err != nil {
		return "", fmt.Errorf("looking up security group %s: %w", name, err)
	}
	if len(out.SecurityGroups) == 0 {
		return "", fmt.Errorf("security group %s of cluster %q: %w", name, clusterName, ErrNotFound)
	}
	return aws.ToString(out.SecurityGroups[0].GroupId), nil
}

// SecurityGroup finds the group CreateSecurityGroup made (by name and cluster tag).
func (c *Cloud) SecurityGroup(ctx context.Context, clusterName string) (string, error) {
	return c.findSecurityGroup(ctx, clusterName, "")
}

// securityGroupRules are the cluster group's ingress rules, one permission per port: every port from the
// group itself, PostgreSQL and Patroni's REST API also from allowed (IPv4 or IPv6 CIDRs).
func securityGroupRules(groupID string, allowed []string) []ec2types.IpPermission {
	ports := []struct {
		port    int32
		what    string
		clients bool
	}{
		{5432, "PostgreSQL", true},
		{8008, "Patroni REST API", true},
		{2379, "etcd clients", false},
		{2380, "etcd peers", false},
	}
	perms := make([]ec2types.IpPermission, 0, len(ports))
	for _, p := range ports {
		perm := ec2types.IpPermission{
			IpProtocol: aws.String("tcp"),
			FromPort:   aws.Int32(p.port),
			ToPort:     aws.Int32(p.port),
			UserIdGroupPairs: []ec2types.UserIdGroupPair{{
				GroupId: aws.String(groupID), Description: aws.String(p.what + " between members"),
			}},
		}
		if p.clients {
			desc := aws.String(p.what + " from clients")
			for _, cidr := range allowed {
				if strings.Contains(cidr, ":") {
					perm.Ipv6Ranges = append(perm.Ipv6Ranges, ec2types.Ipv6Range{CidrIpv6: aws.String(cidr), Description: desc})
				} else {
					perm.IpRanges = append(perm.IpRanges, ec2types.IpRange{CidrIp: aws.String(cidr), Description: desc})
				}
			}
		}
		perms = append(perms, perm)
	}
	return perms
}

// CreateSecurityGroup creates the group pgnvme-<cluster> in vpcID with the cluster tag and tags, and its
// ingress rules; default egress stays. After an interrupted call it adopts the cluster's group of that
// name and adds the rules it lacks.
func (c *Cloud) CreateSecurityGroup(ctx context.Context, clusterName, vpcID string, allowed []string, tags map[string]string) (string, error) {
	name := awsObjectName(clusterName)
	out, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         aws.String(name),
		Description:       aws.String(fmt.Sprintf("pgnvme cluster %s: PostgreSQL, Patroni REST API and etcd", clusterName)),
		VpcId:             aws.String(vpcID),
		TagSpecifications: tagSpecs(withClusterTag(tags, clusterName), ec2types.ResourceTypeSecurityGroup),
	})
	var id string
	switch {
	case err == nil:
		id = aws.ToString(out.GroupId)
	case errCodeEquals(err, errCodeInvalidGroupDuplicate):
		if id, err = c.findSecurityGroup(ctx, clusterName, vpcID); err != nil {
			return "", fmt.Errorf("security group %s exists in %s but is not cluster %q's: %w", name, vpcID, clusterName, err)
		}
	default:
		return "", fmt.Errorf("creating security group %s in %s: %w", name, vpcID, err)
	}

	for _, perm := range securityGroupRules(id, allowed) {
		in := &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: []ec2types.IpPermission{perm}}
		// EC2 may not show a group just created yet.
		_, err := wait.Retry(ctx, "security group "+id+" to accept rules", groupPropagationTimeout, c.clock,
			func(err error) bool { return errCodeEquals(err, errCodeInvalidGroupNotFound) },
			func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
				return c.ec2.AuthorizeSecurityGroupIngress(ctx, in)
			})
		if err != nil && !errCodeEquals(err, errCodeInvalidPermissionDuplicate) {
			return "", fmt.Errorf("allowing TCP port %d into security group %s: %w", aws.ToInt32(perm.FromPort), id, err)
		}
	}
	return id, nil
}

// DeleteSecurityGroup deletes the group, retrying while network interfaces being deleted still hold it
// (DependencyViolation); gone already is success.
func (c *Cloud) DeleteSecurityGroup(ctx context.Context, id string, timeout time.Duration) error {
	_, err := wait.Retry(ctx, "security group "+id+" to be deletable", timeout, c.clock,
		func(err error) bool { return errCodeEquals(err, errCodeDependencyViolation) },
		func(ctx context.Context) (*ec2.DeleteSecurityGroupOutput, error) {
			return c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
		})
	if err != nil && !errCodeEquals(err, errCodeInvalidGroupNotFound) {
		return fmt.Errorf("deleting security group %s: %w", id, err)
	}
	return nil
}
