package awsclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// With api_address = "public_ip" every node's interface gets an Elastic IP of its own, tagged like the
// interface, so that it survives the node's replacements (a new instance attaches the same interface) and
// is found again by an apply that was interrupted.

// PublicIP associates an Elastic IP with the interface (the one tagged for node, or a new one) and returns
// its address.
func (c *Cloud) PublicIP(ctx context.Context, eniID string, tags map[string]string) (string, error) {
	addrs, err := c.addresses(ctx, tags[awsspec.TagCluster])
	if err != nil {
		return "", err
	}
	var mine *ec2types.Address
	for i, a := range addrs {
		if tagMap(a.Tags)[awsspec.TagNode] == tags[awsspec.TagNode] {
			mine = &addrs[i]
			break
		}
	}
	if mine == nil {
		out, err := c.ec2.AllocateAddress(ctx, &ec2.AllocateAddressInput{
			Domain:            ec2types.DomainTypeVpc,
			TagSpecifications: tagSpecs(tags, ec2types.ResourceTypeElasticIp),
		})
		if err != nil {
			return "", fmt.Errorf("allocating an Elastic IP for interface %s: %w", eniID, err)
		}
		mine = &ec2types.Address{AllocationId: out.AllocationId, PublicIp: out.PublicIp}
	}
	if aws.ToString(mine.NetworkInterfaceId) != eniID {
		if _, err := c.ec2.AssociateAddress(ctx, &ec2.AssociateAddressInput{
			AllocationId: mine.AllocationId, NetworkInterfaceId: aws.String(eniID), AllowReassociation: aws.Bool(true),
		}); err != nil {
			return "", fmt.Errorf("associating Elastic IP %s with interface %s: %w", aws.ToString(mine.PublicIp), eniID, err)
		}
	}
	return aws.ToString(mine.PublicIp), nil
}

// ReleasePublicIPs releases the cluster's Elastic IPs: node's alone, or every one for node "".
func (c *Cloud) ReleasePublicIPs(ctx context.Context, clusterName, node string) error {
	addrs, err := c.addresses(ctx, clusterName)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range addrs {
		if node != "" && tagMap(a.Tags)[awsspec.TagNode] != node {
			continue
		}
		if a.AssociationId != nil {
			if _, err := c.ec2.DisassociateAddress(ctx, &ec2.DisassociateAddressInput{AssociationId: a.AssociationId}); err != nil && !errCodeEquals(err, errCodeInvalidAssociationIDNotFound, errCodeInvalidAllocationIDNotFound, errCodeInvalidAddressNotFound) {
				errs = append(errs, fmt.Errorf("disassociating Elastic IP %s: %w", aws.ToString(a.PublicIp), err))
				continue
			}
		}
		if _, err := c.ec2.ReleaseAddress(ctx, &ec2.ReleaseAddressInput{AllocationId: a.AllocationId}); err != nil && !errCodeEquals(err, errCodeInvalidAssociationIDNotFound, errCodeInvalidAllocationIDNotFound, errCodeInvalidAddressNotFound) {
			errs = append(errs, fmt.Errorf("releasing Elastic IP %s: %w", aws.ToString(a.PublicIp), err))
		}
	}
	return errors.Join(errs...)
}

// addresses are the cluster's Elastic IPs (tag pgnvme:cluster).
func (c *Cloud) addresses(ctx context.Context, clusterName string) ([]ec2types.Address, error) {
	out, err := c.ec2.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{clusterFilter(clusterName)}})
	if err != nil {
		return nil, fmt.Errorf("listing the Elastic IPs of cluster %q: %w", clusterName, err)
	}
	return out.Addresses, nil
}
