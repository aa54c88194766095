// Package ec2cluster is the EC2 platform of pgnvme_cluster: one ENI per node (its stable private address),
// instances on instance-store NVMe booted from rendered user-data, SSM SecureStrings for the passwords, a
// security group and an instance role when the user gives none, and Patroni's REST API to observe and steer
// the cluster. It never stops or modifies an instance in place: a node that must change is replaced, one at a
// time, standbys first and the primary after a switchover.
package ec2cluster

import (
	"context"
	"crypto/x509"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniclient"
)

// The values the Cloud takes and returns, and its sentinel errors, are awsclient's (which implements it and
// cannot import this package); the aliases keep this package's code in its own words.
type (
	Subnet       = awsclient.Subnet
	Image        = awsclient.Image
	TypeInfo     = awsclient.TypeInfo
	ENI          = awsclient.ENI
	Instance     = awsclient.Instance
	RunSpec      = awsclient.RunSpec
	LoadBalancer = awsclient.LoadBalancer
)

var (
	// ErrNotFound means the AWS object does not exist (or no longer does).
	ErrNotFound = awsclient.ErrNotFound
	// ErrInsufficientCapacity means EC2 has no capacity for the type in the zone now.
	ErrInsufficientCapacity = awsclient.ErrInsufficientCapacity
)

// Load balancer ports.
const (
	ReadWritePort = awsclient.ReadWritePort
	ReadOnlyPort  = awsclient.ReadOnlyPort
)

// PrivateCAs is what the platform does with ACM Private CA (tls.acm_pca_arn); *awsclient.PrivateCAs is the
// real one.
type PrivateCAs interface {
	// Describe reads an authority (ErrNotFound wrapped when it does not exist).
	Describe(ctx context.Context, arn string) (awsclient.PrivateCAInfo, error)
	// Issue has the authority issue a certificate for a request, valid until notAfter, and returns it (PEM).
	Issue(ctx context.Context, arn string, csrPEM []byte, signingAlgorithm string, notAfter time.Time) ([]byte, error)
}

// Cloud is what the platform does with AWS. *awsclient.Cloud is the real one (NewCloud); tests may hand in
// fakes for what moto cannot show (capacity errors, eventual consistency).
type Cloud interface {
	// Subnets describes the subnets by ID (ErrNotFound wrapped when one does not exist).
	Subnets(ctx context.Context, ids []string) ([]Subnet, error)
	// VPCCIDR is the VPC's primary IPv4 CIDR.
	VPCCIDR(ctx context.Context, vpcID string) (string, error)
	// Parameter reads a plain SSM parameter (an AMI's public parameter).
	Parameter(ctx context.Context, name string) (string, error)
	// Image describes an AMI.
	Image(ctx context.Context, id string) (Image, error)
	// PlacementGroupStrategy is a placement group's strategy: cluster, spread or partition (ErrNotFound
	// when EC2 does not know it).
	PlacementGroupStrategy(ctx context.Context, name string) (string, error)
	// InstanceType describes a type (ErrNotFound when EC2 does not know it).
	InstanceType(ctx context.Context, name string) (TypeInfo, error)
	// TypeZones are the zones (names) where the type is offered in the region.
	TypeZones(ctx context.Context, instanceType string) ([]string, error)

	// ENIs are the cluster's network interfaces (tag pgnvme:cluster).
	ENIs(ctx context.Context, clusterName string) ([]ENI, error)
	// CreateENI creates a network interface in subnet with the security groups and tags.
	CreateENI(ctx context.Context, subnetID string, securityGroups []string, description string, tags map[string]string) (ENI, error)
	// SetENISecurityGroups replaces an interface's security groups.
	SetENISecurityGroups(ctx context.Context, eniID string, groups []string) error
	// WaitENIAvailable waits until no instance holds the interface.
	WaitENIAvailable(ctx context.Context, eniID string, timeout time.Duration) error
	// DeleteENI deletes an interface; gone already is success.
	DeleteENI(ctx context.Context, eniID string) error
	// PublicIP associates the Elastic IP tagged for tags' node (a new one, tagged with tags, when there is
	// none) with the interface and returns its address.
	PublicIP(ctx context.Context, eniID string, tags map[string]string) (string, error)
	// ReleasePublicIPs releases the cluster's Elastic IPs: node's, or all of them for node "".
	ReleasePublicIPs(ctx context.Context, clusterName, node string) error

	// SecurityGroup finds the group the platform created for the cluster (ErrNotFound when none).
	SecurityGroup(ctx context.Context, clusterName string) (string, error)
	// CreateSecurityGroup creates the cluster's group in vpc: PostgreSQL (5432), Patroni's REST API (8008)
	// and etcd (2379, 2380) from the group itself, PostgreSQL and the REST API from allowed.
	CreateSecurityGroup(ctx context.Context, clusterName, vpcID string, allowed []string, tags map[string]string) (string, error)
	// DeleteSecurityGroup deletes it, retrying while interfaces still hold it; gone already is success.
	DeleteSecurityGroup(ctx context.Context, id string, timeout time.Duration) error

	// InstanceProfile finds the profile the platform created for the cluster (ErrNotFound when none).
	InstanceProfile(ctx context.Context, clusterName string) (string, error)
	// CreateInstanceProfile creates a role that EC2 may assume with an inline policy that reads the
	// parameters under ssmPath (and decrypts them with the default key) plus extraPolicy (a JSON policy
	// document, "" for none), and a profile holding it. It returns the profile's name.
	CreateInstanceProfile(ctx context.Context, clusterName, region, ssmPath, extraPolicy string, tags map[string]string) (string, error)
	// DeleteInstanceProfile removes the profile and role CreateInstanceProfile made; gone already is success.
	DeleteInstanceProfile(ctx context.Context, clusterName string) error

	// PutSecret stores a SecureString unless the parameter exists (then it keeps the existing value).
	PutSecret(ctx context.Context, name, value string, tags map[string]string) error
	// StoreSecret stores a SecureString, overwriting its value.
	StoreSecret(ctx context.Context, name, value string, tags map[string]string) error
	// Secret reads a SecureString, decrypted.
	Secret(ctx context.Context, name string) (string, error)
	// ExistingParameters are those of names that exist, in the order given.
	ExistingParameters(ctx context.Context, names []string) ([]string, error)
	// PutParameter stores a plain String parameter, overwriting its value.
	PutParameter(ctx context.Context, name, value string, tags map[string]string) error
	// DeleteSecrets deletes the parameters (SecureStrings or not); missing ones are ignored.
	DeleteSecrets(ctx context.Context, names []string) error

	// LoadBalancer finds the cluster's Network Load Balancer (ErrNotFound when none).
	LoadBalancer(ctx context.Context, clusterName string) (LoadBalancer, error)
	// EnsureLoadBalancer creates or completes the cluster's internal Network Load Balancer in the subnets:
	// a read-write target group (TCP 5432, health check HTTP GET /primary on 8008; HTTPS with healthHTTPS,
	// for nodes whose REST API serves TLS only) behind listener 5432 and a read-only one (health check
	// /replica) behind listener 5433, each with targets (type ip) at addrs (exactly: targets not in addrs
	// are deregistered).
	EnsureLoadBalancer(ctx context.Context, clusterName string, subnets, addrs []string, healthHTTPS bool, tags map[string]string) (LoadBalancer, error)
	// DeleteLoadBalancer removes the load balancer, its listeners and target groups; none is success.
	DeleteLoadBalancer(ctx context.Context, clusterName string) error

	// Instances are the cluster's instances (tag pgnvme:cluster) in every state but terminated.
	Instances(ctx context.Context, clusterName string) ([]Instance, error)
	// RunInstance launches one instance and returns its ID; it retries the instance profile's propagation
	// delay and wraps ErrInsufficientCapacity.
	RunInstance(ctx context.Context, spec RunSpec) (string, error)
	// WaitRunning waits until the instance runs.
	WaitRunning(ctx context.Context, id string, timeout time.Duration) (Instance, error)
	// Terminate terminates instances and waits until they are terminated.
	Terminate(ctx context.Context, ids []string, timeout time.Duration) error
}

var (
	_ Cloud   = (*awsclient.Cloud)(nil)
	_ Patroni = (*patroniclient.Client)(nil)
)

// NewCloud is the Cloud of region, on the provider's AWS clients.
func NewCloud(ctx context.Context, clients *awsclient.Clients, region string) (Cloud, error) {
	c, err := awsclient.NewCloud(ctx, clients, region)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Patroni is what the platform needs of Patroni's REST API on the nodes (patroniclient.Client): the
// cluster's view, each node's own state, the dynamic configuration, switchover and restart. Unsafe calls
// take the REST API's user and password.
type Patroni interface {
	// Cluster reads GET /cluster from the first of hosts that answers, and says which one did.
	Cluster(ctx context.Context, hosts []string) (patroniapi.Status, string, error)
	// Node reads a node's own GET /patroni.
	Node(ctx context.Context, host string) (patroniapi.NodeState, error)
	// Config reads the dynamic configuration; PatchConfig merges a patch into it.
	Config(ctx context.Context, host string) (map[string]any, error)
	PatchConfig(ctx context.Context, host string, patch map[string]any, user, password string) error
	// Switchover hands the leader role from leader to candidate; Restart restarts host's PostgreSQL.
	Switchover(ctx context.Context, host, leader, candidate, user, password string) error
	Restart(ctx context.Context, host, user, password string) error
	// Failover names candidate the leader of a cluster without one.
	Failover(ctx context.Context, host, candidate, user, password string) error
	// ServedCertificate is the certificate host's REST API serves (a client over https only).
	ServedCertificate(ctx context.Context, host string) (*x509.Certificate, error)
}
