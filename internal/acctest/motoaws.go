package acctest

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// MotoAWSConfig is an SDK configuration for the moto server at endpoint (Moto.URL, TLSMoto.HTTPURL) in
// region, with moto's test credentials: ec2.NewFromConfig(cfg) and the like reach moto. S3 clients need
// path-style addressing on top (o.UsePathStyle).
func MotoAWSConfig(endpoint, region string) aws.Config {
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	}
}

// AWSConfig is MotoAWSConfig for this server.
func (m *Moto) AWSConfig(region string) aws.Config { return MotoAWSConfig(m.URL, region) }

// VPC is a VPC that CreateVPC made in moto.
type VPC struct {
	ID string
	// Subnets are its subnets' IDs by zone; SubnetIDs the same in the order of the zones.
	Subnets   map[string]string
	SubnetIDs []string
	// CIDRs are the subnets' CIDR blocks in the order of the zones.
	CIDRs []string
}

// CreateVPC creates, with c (a moto EC2 client: its region is the zones'), a VPC of cidr, a /16 such as
// 10.20.0.0/16, and a /24 subnet in each zone, in order: the first zone's is 10.20.1.0/24, the next
// 10.20.2.0/24, and so on. A failure fails the test.
func CreateVPC(t testing.TB, c *ec2.Client, cidr string, zones ...string) VPC {
	t.Helper()
	ctx := context.Background()
	var a, b int
	if _, err := fmt.Sscanf(cidr, "%d.%d.0.0/16", &a, &b); err != nil {
		t.Fatalf("test bug: CreateVPC takes a /16 of the form A.B.0.0/16, not %q", cidr)
	}
	out, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)})
	if err != nil {
		t.Fatalf("CreateVpc %s: %v", cidr, err)
	}
	v := VPC{ID: aws.ToString(out.Vpc.VpcId), Subnets: map[string]string{}}
	for i, zone := range zones {
		block := fmt.Sprintf("%d.%d.%d.0/24", a, b, i+1)
		s, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(v.ID), CidrBlock: aws.String(block), AvailabilityZone: aws.String(zone)})
		if err != nil {
			t.Fatalf("CreateSubnet %s in %s: %v", block, zone, err)
		}
		id := aws.ToString(s.Subnet.SubnetId)
		v.Subnets[zone] = id
		v.SubnetIDs = append(v.SubnetIDs, id)
		v.CIDRs = append(v.CIDRs, block)
	}
	return v
}
