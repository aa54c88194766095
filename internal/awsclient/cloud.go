package awsclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Cloud is what the EC2 platform of pgnvme_cluster (internal/ec2cluster, which declares the interface it
// consumes) does with AWS in one region, on the provider's SDK clients: subnets, images and instance types
// looked up; network interfaces, Elastic IPs, security groups, instances, the instance role and profile, SSM
// parameters and the Network Load Balancer found, created, waited for and deleted. Every object it creates
// carries the tag awsspec.TagCluster, which is how it finds them again.
type Cloud struct {
	ec2   *ec2.Client
	iam   *iam.Client
	ssm   *ssm.Client
	elbv2 *elasticloadbalancingv2.Client
	// clock drives every wait and retry (the Clients' clock; tests may step it).
	clock wait.Clock
}

// NewCloud is the Cloud of region, on the provider's AWS clients.
func NewCloud(ctx context.Context, clients *Clients, region string) (*Cloud, error) {
	ec2Client, err := clients.EC2(ctx, region)
	if err != nil {
		return nil, fmt.Errorf("EC2 client for %s: %w", region, err)
	}
	iamClient, err := clients.IAM(ctx, region)
	if err != nil {
		return nil, fmt.Errorf("IAM client for %s: %w", region, err)
	}
	ssmClient, err := clients.SSM(ctx, region)
	if err != nil {
		return nil, fmt.Errorf("SSM client for %s: %w", region, err)
	}
	elbv2Client, err := clients.ELBV2(ctx, region)
	if err != nil {
		return nil, fmt.Errorf("ELBV2 client for %s: %w", region, err)
	}
	return &Cloud{ec2: ec2Client, iam: iamClient, ssm: ssmClient, elbv2: elbv2Client, clock: clients.Clock()}, nil
}

// ErrNotFound means the AWS object does not exist (or no longer does).
var ErrNotFound = errors.New("not found")

// ErrInsufficientCapacity means EC2 has no capacity for the type in the zone now.
var ErrInsufficientCapacity = errors.New("insufficient instance capacity")

// Subnet is a subnet as EC2 describes it.
type Subnet struct {
	ID     string
	Zone   string
	ZoneID string
	VPCID  string
	CIDR   string
}

// Image is an AMI as EC2 describes it.
type Image struct {
	ID           string
	Architecture string // "x86_64" or "arm64"
	// RootDeviceName is where the root volume attaches, such as /dev/xvda.
	RootDeviceName string
}

// TypeInfo is what the platform needs of an instance type, from DescribeInstanceTypes.
type TypeInfo struct {
	Name          string
	Architectures []string
	// DiskCount is the number of instance-store disks (0: none); NVMe is InstanceStorageInfo.NvmeSupport
	// ("required", "supported", "unsupported", or "" without instance storage).
	DiskCount int
	NVMe      string
}

// ENI is a network interface.
type ENI struct {
	ID       string
	SubnetID string
	// VPCID is its subnet's VPC.
	VPCID     string
	Zone      string
	PrivateIP string
	// PublicIP is the public address associated with it, "" when none.
	PublicIP string
	// Status is "available", "in-use", "attaching", "detaching", ...
	Status string
	// InstanceID is the instance it is attached to, "" when none.
	InstanceID string
	// Groups are its security groups' IDs.
	Groups []string
	Tags   map[string]string
}

// Instance is an EC2 instance.
type Instance struct {
	ID   string
	Type string
	AMI  string
	Zone string
	// State is EC2's state name: pending, running, shutting-down, terminated, stopping, stopped.
	State      string
	ENIID      string
	PrivateIP  string
	PublicIP   string
	Tags       map[string]string
	LaunchTime time.Time
	// InstanceProfileARN is the IAM instance profile it runs with, "" for none.
	InstanceProfileARN string
}

// LoadBalancer is the cluster's Network Load Balancer.
type LoadBalancer struct {
	ARN     string
	DNSName string
	// ReadWriteTargetGroup and ReadOnlyTargetGroup are the target groups' ARNs.
	ReadWriteTargetGroup string
	ReadOnlyTargetGroup  string
}

// Load balancer ports and health checks.
const (
	ReadWritePort = 5432
	ReadOnlyPort  = 5433
)
