// Package awsspec is the EC2 platform's block of a pgnvme_cluster (aws = {...}): the instance type, image,
// network, IAM, Patroni timings and tags, with its defaults, its rules (validation split by concern, each
// rule once with its attribute path), what a node's machine is launched with (Launch) and the inputs of
// its user-data (Bootstrap, Render). The neutral cluster.Spec carries it as a cluster.Block;
// internal/ec2cluster reads it with Of.
//
// The package is pure: no framework, SDK, pgx or process code.
package awsspec

import (
	"maps"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// Defaults of the aws platform block.
const (
	// DefaultAMIParameterAMD64 and DefaultAMIParameterARM64 are the SSM public parameters Debian publishes for
	// its latest Debian 12 AMI of each architecture.
	DefaultAMIParameterAMD64 = "/aws/service/debian/release/12/latest/amd64"
	DefaultAMIParameterARM64 = "/aws/service/debian/release/12/latest/arm64"
	// DefaultRootVolumeGiB is the root volume's size (gp3, encrypted): the system, etcd's data and logs.
	DefaultRootVolumeGiB = 20
	// MinRootVolumeGiB and MaxRootVolumeGiB bound it (Debian's AMI needs 8; gp3 allows 16 TiB).
	MinRootVolumeGiB = 8
	MaxRootVolumeGiB = 16384
	// DefaultMetadataHopLimit is the instance metadata service's PUT response hop limit: 2 lets a container
	// on the node reach the metadata (IMDSv2 is always required); EC2 allows MinMetadataHopLimit to
	// MaxMetadataHopLimit.
	DefaultMetadataHopLimit = 2
	MinMetadataHopLimit     = 1
	MaxMetadataHopLimit     = 64
	// APIAddressPrivate and APIAddressPublic say which address of a node the provider reaches Patroni's REST
	// API at.
	APIAddressPrivate = "private_ip"
	APIAddressPublic  = "public_ip"
	// TagCluster and TagNode are the tags every object the platform creates carries; TagConfig is an
	// instance's configuration fingerprint (instance type, AMI, user-data).
	TagCluster = "pgnvme:cluster"
	TagNode    = "pgnvme:node"
	TagConfig  = "pgnvme:config"
	// MaxCreatedRoleClusterName is the longest cluster name whose role the platform can create: IAM role and
	// profile names (pgnvme-<name>) have at most 64 characters.
	MaxCreatedRoleClusterName = 64 - len("pgnvme-")
)

// Block is the aws platform's configuration, defaults filled in.
type Block struct {
	// Region is the AWS region; "" means the provider's.
	Region string
	// InstanceType is every node's instance type; it must have instance-store NVMe.
	InstanceType string
	// AMIID is the image; "" resolves AMIParameter.
	AMIID string
	// AMIParameter is the SSM parameter holding the AMI ID when AMIID is unset; "" means Debian 12's for the
	// type's architecture.
	AMIParameter string
	// SubnetIDs are the subnets by availability zone: one for every node's zone.
	SubnetIDs map[string]string
	// SecurityGroupIDs are the nodes' security groups; none means the platform creates one.
	SecurityGroupIDs []string
	// AllowedCIDRs are the networks PostgreSQL and Patroni's REST API accept clients from (the members
	// always reach each other); none means the VPC's CIDR.
	AllowedCIDRs []string
	// IAMInstanceProfile is the nodes' instance profile name; "" means the platform creates a role and
	// profile from NodePolicyJSON plus reading the cluster's SSM parameters.
	IAMInstanceProfile string
	// NodePolicyJSON is an extra IAM policy for the created role, typically the archive bucket's
	// node_policy_json.
	NodePolicyJSON string
	// KeyName is the EC2 key pair for SSH; "" means none.
	KeyName string
	// PlacementGroup is an existing spread or partition placement group the instances launch into; ""
	// means none.
	PlacementGroup string
	// RootVolumeGiB is the gp3 root volume's size; 0 means DefaultRootVolumeGiB.
	RootVolumeGiB int
	// MetadataHopLimit is the instance metadata PUT response hop limit; 0 means DefaultMetadataHopLimit.
	MetadataHopLimit int `json:",omitempty"`
	// Patroni are Patroni's timings; zero values are Patroni's defaults.
	Patroni Patroni
	// APIAddress is APIAddressPrivate (default) or APIAddressPublic.
	APIAddress string
	// Tags are added to every object the platform creates, over the provider's default tags.
	Tags map[string]string
	// DeletionProtection refuses destroy while true (the default).
	DeletionProtection bool
	// LoadBalancer asks for an internal Network Load Balancer: read-write on ReadWritePort (targets healthy
	// on Patroni's /primary), read-only on ReadOnlyPort (/replica).
	LoadBalancer bool
}

// Patroni are Patroni's timings in seconds, and the lag limit in bytes; 0 means Patroni's default.
type Patroni struct {
	TTL                  int
	LoopWait             int
	RetryTimeout         int
	MaximumLagOnFailover int64
}

// Input is the aws block as given; nil pointers are unset.
type Input struct {
	Block
	// DeletionProtection defaults to true.
	DeletionProtection *bool
}

var (
	_ cluster.Block          = (*Block)(nil)
	_ cluster.BlockInput     = (*Input)(nil)
	_ cluster.PlatformStatus = (*Status)(nil)
)

// Of is s's aws block, nil when s does not run on EC2.
func Of(s cluster.Spec) *Block {
	b, _ := s.Block.(*Block)
	return b
}

// InputOf is the aws block of in as given, nil when in has none.
func InputOf(in cluster.Input) *Input {
	b, _ := in.Block().(*Input)
	return b
}

// WantsLoadBalancer reports whether a asks for the load balancer (false for no block).
func (a *Block) WantsLoadBalancer() bool { return a != nil && a.LoadBalancer }

// Platform is cluster.PlatformAWS.
func (*Block) Platform() cluster.Platform { return cluster.PlatformAWS }

// DefaultZone is "": on EC2 a node's zone is the user's choice, and none is an error.
func (*Input) DefaultZone() string { return "" }

// WithDefaults fills in the aws block's defaults: the root volume's size, the metadata hop limit, the private API address and
// deletion protection on.
func (in *Input) WithDefaults() cluster.Block {
	a := in.Block
	a.SubnetIDs = maps.Clone(in.SubnetIDs)
	a.SecurityGroupIDs = slices.Clone(in.SecurityGroupIDs)
	a.AllowedCIDRs = slices.Clone(in.AllowedCIDRs)
	a.Tags = maps.Clone(in.Tags)
	if a.RootVolumeGiB == 0 {
		a.RootVolumeGiB = DefaultRootVolumeGiB
	}
	if a.MetadataHopLimit == 0 {
		a.MetadataHopLimit = DefaultMetadataHopLimit
	}
	if a.APIAddress == "" {
		a.APIAddress = APIAddressPrivate
	}
	a.DeletionProtection = in.DeletionProtection == nil || *in.DeletionProtection
	return &a
}

// AMIParameterFor is the SSM parameter that holds the AMI for arch: a's own, else Debian 12's.
func (a Block) AMIParameterFor(arch string) string {
	if a.AMIParameter != "" {
		return a.AMIParameter
	}
	if arch == "arm64" {
		return DefaultAMIParameterARM64
	}
	return DefaultAMIParameterAMD64
}

// Status is what only the aws platform reports, by node name where it is per node.
type Status struct {
	Region string
	// AMIID is the image the nodes run (resolved from the SSM parameter at creation when not given).
	AMIID              string
	InstanceIDs        map[string]string
	NetworkInterfaceID map[string]string
	PrivateIPs         map[string]string
	// SecurityGroupID and InstanceProfile are what the platform created ("" when the user gave them).
	SecurityGroupID string
	InstanceProfile string
	// SSMPath holds the cluster's password parameters.
	SSMPath string
	// LoadBalancerDNSName is the load balancer's DNS name ("" without one).
	LoadBalancerDNSName string
	// ConfigApplied reports whether Patroni's dynamic configuration (parameters, timings, quorum) is the
	// spec's and no node waits for a restart to apply it; ConfigKnown is false when it could not be read.
	ConfigKnown, ConfigApplied bool
	// PendingRestart are the nodes whose PostgreSQL waits for a restart to apply settings, by name.
	PendingRestart []string
}

// Platform is cluster.PlatformAWS.
func (*Status) Platform() cluster.Platform { return cluster.PlatformAWS }

// StatusOf is the aws platform's own part of a status or plan, nil when it has none.
func StatusOf(st cluster.PlatformStatus) *Status {
	out, _ := st.(*Status)
	return out
}

// ClientURIs are the cluster's connection URIs on EC2 (cluster.Connector): every node, libpq picking the
// writable one (or preferring a standby), so that clients follow a failover themselves.
func (*Status) ClientURIs(members []cluster.Member) (readWrite, readOnly string) {
	return ConnectionURIs(members, bootstrap.DefaultEC2Port, bootstrap.DefaultSuperuser, "postgres")
}

// NodeListChange is how the node list of a cluster on EC2 may change from prior to want: nodes added
// after the last or removed from the end, so that the nodes that run etcd (the first three, or the first
// one of a smaller cluster: bootstrap.DefaultEtcdMembers) stay the same, and with them every other node's
// user-data. It returns the names added and removed, or an error at ["node"] saying what is possible.
func NodeListChange(prior, want []string) (added, removed []string, err error) {
	k := min(len(prior), len(want))
	members := bootstrap.DefaultEtcdMembers(len(prior))
	switch {
	case !slices.Equal(prior[:k], want[:k]):
		return nil, nil, cluster.Errorf([]string{"node"}, "Node List Change Not Supported",
			"The cluster on EC2 has the nodes [%s]; this configuration asks for [%s]. Nodes can be added after the last one or removed from the end; "+
				"renaming or reordering nodes is not supported (a node's name is its identity in etcd, Patroni and its network interface). "+
				"Keep the existing nodes in their order.", strings.Join(prior, ", "), strings.Join(want, ", "))
	case bootstrap.DefaultEtcdMembers(len(want)) != members || len(want) < members:
		return nil, nil, cluster.Errorf([]string{"node"}, "Node List Change Not Supported",
			"The cluster on EC2 has %d nodes, of which the first %d run etcd; this configuration asks for %d. The etcd members cannot change: "+
				"a cluster of 3 or more nodes keeps at least 3 (nodes 4 to %d can be added and removed), and a smaller one stays below 3. "+
				"For another layout, create a new cluster and move the data.", len(prior), members, len(want), bootstrap.MaxNodes)
	}
	return slices.Clone(want[k:]), slices.Clone(prior[k:]), nil
}
