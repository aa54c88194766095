package nodesim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AWSConfig is an SDK configuration for moto in region: the AWS endpoint reached from the root namespace
// (the simulator's HTTP client), with the simulator's credentials (its IAM user's once EnforceIAM ran, for
// clients made before too). Every service's client made from it (ec2.NewFromConfig, ssm.NewFromConfig,
// ...) talks to moto.
func (s *Sim) AWSConfig(region string) aws.Config {
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(AWSEndpoint),
		HTTPClient:   s.HTTPClient(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return s.credentials(), nil
		}),
	}
}

// EC2Client is an EC2 client of moto in region (AWSConfig).
func (s *Sim) EC2Client(region string) *ec2.Client {
	return ec2.NewFromConfig(s.AWSConfig(region))
}

// CreateVPC creates in moto, in region, a VPC whose CIDR is the simulator's network (Subnet, the bridge's
// /24) and one subnet per zone, in zone order: Subnet cut into equal power-of-two parts (a /25 each for 2
// zones, a /26 for 3 or 4, down to a /28 for 16). An ENI created in one of them gets an address of the
// nodes' network, which a node booted by the EC2 bridge then has. moto keeps the first three host
// addresses of a subnet, as AWS does, and hands out the others in order; so the service address (.1, the
// AWS endpoint) is never an ENI's: CreateVPC checks this and refuses a plan in which it would be. It
// returns the VPC's ID and the subnets' IDs by zone.
func (s *Sim) CreateVPC(ctx context.Context, region string, zones []string) (vpcID string, subnets map[string]string, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("creating the simulator's VPC in %s: %w", region, err)
		}
	}()
	if len(zones) == 0 {
		return "", nil, errors.New("no availability zone given")
	}
	for i, z := range zones {
		if slices.Contains(zones[:i], z) {
			return "", nil, fmt.Errorf("availability zone %s is listed twice", z)
		}
	}
	plan, err := subnetPlan(s.Subnet, s.ServiceIP, len(zones))
	if err != nil {
		return "", nil, err
	}
	if err := s.AddRegion(region); err != nil {
		return "", nil, err
	}
	c := s.EC2Client(region)
	name := "nodesim-" + s.ID
	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock:         aws.String(s.Subnet.String()),
		TagSpecifications: nameTags(types.ResourceTypeVpc, name),
	})
	if err != nil {
		return "", nil, err
	}
	vpcID = aws.ToString(vpc.Vpc.VpcId)
	subnets = map[string]string{}
	for i, z := range zones {
		out, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{
			VpcId:             aws.String(vpcID),
			CidrBlock:         aws.String(plan[i].String()),
			AvailabilityZone:  aws.String(z),
			TagSpecifications: nameTags(types.ResourceTypeSubnet, name+"-"+z),
		})
		if err != nil {
			return "", nil, fmt.Errorf("subnet %s in %s: %w", plan[i], z, err)
		}
		subnets[z] = aws.ToString(out.Subnet.SubnetId)
	}
	s.logf("nodesim %s: VPC %s (%s) in %s with subnets %v", s.ID, vpcID, s.Subnet, region, plan)
	return vpcID, subnets, nil
}

func nameTags(rt types.ResourceType, name string) []types.TagSpecification {
	return []types.TagSpecification{{ResourceType: rt, Tags: []types.Tag{{Key: aws.String(tagName), Value: aws.String(name)}}}}
}

// awsReservedHosts is how many host addresses at the start of a subnet AWS (and moto) keep for itself.
const awsReservedHosts = 3

// subnetPlan cuts network into n equal power-of-two subnets (at least /28, AWS's smallest), in order, and
// checks that service is no address moto could hand out: in the subnet that holds it, it must be one of
// the first awsReservedHosts host addresses (or the network address).
func subnetPlan(network netip.Prefix, service netip.Addr, n int) ([]netip.Prefix, error) {
	if !network.Addr().Is4() {
		return nil, fmt.Errorf("network %s is not IPv4", network)
	}
	bits := 0
	for 1<<bits < n {
		bits++
	}
	size := network.Bits() + bits
	if size > 28 {
		return nil, fmt.Errorf("%d zones do not fit in %s: a subnet is at least a /28, so at most %d zones", n, network, 1<<(28-network.Bits()))
	}
	step := uint32(1) << (32 - size)
	base := network.Masked().Addr().As4()
	first := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	plan := make([]netip.Prefix, n)
	for i := range plan {
		a := first + uint32(i)*step
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), size)
		plan[i] = p
		if !p.Contains(service) {
			continue
		}
		s4 := service.As4()
		off := (uint32(s4[0])<<24 | uint32(s4[1])<<16 | uint32(s4[2])<<8 | uint32(s4[3])) - a
		if off > awsReservedHosts {
			return nil, fmt.Errorf("subnet %s would let moto hand the service address %s to an ENI (only its first %d host addresses are reserved)", p, service, awsReservedHosts)
		}
	}
	return plan, nil
}
