package awsclient

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// AWS error codes the Cloud reacts to by name.
const (
	errCodeDependencyViolation          = "DependencyViolation"
	errCodeInsufficientInstanceCapacity = "InsufficientInstanceCapacity"
	errCodeInvalidAddressNotFound       = "InvalidAddress.NotFound"
	errCodeInvalidAllocationIDNotFound  = "InvalidAllocationID.NotFound"
	errCodeInvalidAMIIDMalformed        = "InvalidAMIID.Malformed"
	errCodeInvalidAMIIDNotFound         = "InvalidAMIID.NotFound"
	errCodeInvalidAMIIDUnavailable      = "InvalidAMIID.Unavailable"
	errCodeInvalidAssociationIDNotFound = "InvalidAssociationID.NotFound"
	errCodeInvalidGroupDuplicate        = "InvalidGroup.Duplicate"
	errCodeInvalidGroupNotFound         = "InvalidGroup.NotFound"
	errCodeInvalidInstanceIDNotFound    = "InvalidInstanceID.NotFound"
	errCodeInvalidInstanceType          = "InvalidInstanceType"
	errCodeInvalidENIIDNotFound         = "InvalidNetworkInterfaceID.NotFound"
	errCodeInvalidParameterValue        = "InvalidParameterValue"
	errCodeInvalidPermissionDuplicate   = "InvalidPermission.Duplicate"
	errCodeInvalidPlacementGroupUnknown = "InvalidPlacementGroup.Unknown"
	errCodeInvalidSubnetIDNotFound      = "InvalidSubnetID.NotFound"
	errCodeInvalidVpcIDNotFound         = "InvalidVpcID.NotFound"
)

// Named timeouts of the eventual-consistency retries.
const (
	// profilePropagationTimeout bounds RunInstances' retries while EC2 does not yet see an instance profile
	// just created (~10 s in practice; the hashicorp/aws provider allows 2 minutes), and the wait until
	// IAM shows the role in the profile.
	profilePropagationTimeout = 2 * time.Minute
	// groupPropagationTimeout bounds retries of rules on a security group EC2 does not show yet.
	groupPropagationTimeout = time.Minute
)

// awsObjectName is the name of the security group, role and instance profile the platform creates.
func awsObjectName(clusterName string) string { return "pgnvme-" + clusterName }

func ec2Filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func clusterFilter(clusterName string) ec2types.Filter {
	return ec2Filter("tag:"+awsspec.TagCluster, clusterName)
}

// Subnets describes the subnets by ID, in the order of ids.
func (c *Cloud) Subnets(ctx context.Context, ids []string) ([]Subnet, error) {
	if len(ids) == 0 {
		return nil, nil // DescribeSubnets without IDs would list every subnet
	}
	what := "subnets " + strings.Join(ids, ", ")
	out, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	if err != nil {
		return nil, notFound(err, what, "describing", errCodeInvalidSubnetIDNotFound)
	}
	byID := map[string]Subnet{}
	for _, s := range out.Subnets {
		byID[aws.ToString(s.SubnetId)] = Subnet{
			ID:     aws.ToString(s.SubnetId),
			Zone:   aws.ToString(s.AvailabilityZone),
			ZoneID: aws.ToString(s.AvailabilityZoneId),
			VPCID:  aws.ToString(s.VpcId),
			CIDR:   aws.ToString(s.CidrBlock),
		}
	}
	subnets := make([]Subnet, 0, len(ids))
	for _, id := range ids {
		s, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("subnet %s: %w", id, ErrNotFound)
		}
		subnets = append(subnets, s)
	}
	return subnets, nil
}

// VPCCIDR is the VPC's primary IPv4 CIDR.
func (c *Cloud) VPCCIDR(ctx context.Context, vpcID string) (string, error) {
	what := "VPC " + vpcID
	out, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}})
	if err != nil {
		return "", notFound(err, what, "describing", errCodeInvalidVpcIDNotFound)
	}
	if len(out.Vpcs) == 0 {
		return "", fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return aws.ToString(out.Vpcs[0].CidrBlock), nil
}

// Image describes an AMI; a deregistered one is ErrNotFound.
func (c *Cloud) Image(ctx context.Context, id string) (Image, error) {
	what := "AMI " + id
	out, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if err != nil {
		return Image{}, notFound(err, what, "describing", errCodeInvalidAMIIDNotFound, errCodeInvalidAMIIDMalformed, errCodeInvalidAMIIDUnavailable)
	}
	if len(out.Images) == 0 {
		return Image{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	img := out.Images[0]
	return Image{ID: aws.ToString(img.ImageId), Architecture: string(img.Architecture), RootDeviceName: aws.ToString(img.RootDeviceName)}, nil
}

// PlacementGroupStrategy is the strategy (cluster, spread or partition) of the placement group name; one
// EC2 does not know is ErrNotFound.
func (c *Cloud) PlacementGroupStrategy(ctx context.Context, name string) (string, error) {
	what := "placement group " + name
	out, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
	if err != nil {
		return "", notFound(err, what, "describing", errCodeInvalidPlacementGroupUnknown)
	}
	if len(out.PlacementGroups) == 0 {
		return "", fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return string(out.PlacementGroups[0].Strategy), nil
}

// InstanceType describes a type; one EC2 does not know is ErrNotFound.
func (c *Cloud) InstanceType(ctx context.Context, name string) (TypeInfo, error) {
	what := "instance type " + name
	out, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{ec2types.InstanceType(name)}})
	if err != nil {
		return TypeInfo{}, notFound(err, what, "describing", errCodeInvalidInstanceType)
	}
	if len(out.InstanceTypes) == 0 {
		return TypeInfo{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	t := out.InstanceTypes[0]
	info := TypeInfo{Name: string(t.InstanceType)}
	if t.ProcessorInfo != nil {
		for _, a := range t.ProcessorInfo.SupportedArchitectures {
			info.Architectures = append(info.Architectures, string(a))
		}
	}
	if s := t.InstanceStorageInfo; s != nil {
		for _, d := range s.Disks {
			info.DiskCount += int(aws.ToInt32(d.Count))
		}
		info.NVMe = string(s.NvmeSupport)
	}
	return info, nil
}

// TypeZones are the zones of the region that offer the type, sorted.
func (c *Cloud) TypeZones(ctx context.Context, instanceType string) ([]string, error) {
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters:      []ec2types.Filter{ec2Filter("instance-type", instanceType)},
	})
	var zones []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the zones that offer %s: %w", instanceType, err)
		}
		for _, o := range page.InstanceTypeOfferings {
			zones = append(zones, aws.ToString(o.Location))
		}
	}
	slices.Sort(zones)
	return slices.Compact(zones), nil
}
