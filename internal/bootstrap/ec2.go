package bootstrap

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// The architectures an EC2 node can have, as EC2 names them
// (ProcessorInfo.SupportedArchitectures).
const (
	ArchX86_64 = "x86_64"
	ArchARM64  = "arm64"
)

// Defaults of an [EC2Node]; EC2Node.WithDefaults fills them in.
const (
	// DefaultInstanceStoreGlob finds the instance-store NVMe disks as AWS's
	// EKS AMI does (templates/al2023/runtime/bin/setup-local-disks in
	// awslabs/amazon-eks-ami): the by-id links of every instance-store disk
	// contain NVMe_Instance_Storage_.
	DefaultInstanceStoreGlob = "/dev/disk/by-id/*NVMe_Instance_Storage_*"
	// DefaultDiskWaitSeconds is how long the disk script waits for all of
	// the instance type's disks to appear at boot.
	DefaultDiskWaitSeconds = 60
	// DefaultEC2MountPoint is where the instance store is mounted; the data
	// directory is DefaultEC2MountPoint/data.
	DefaultEC2MountPoint = "/var/lib/pgnvme"
	// DefaultEC2Port is PostgreSQL's port.
	DefaultEC2Port = 5432
	// DefaultEtcdClientPort and DefaultEtcdPeerPort are etcd's ports.
	DefaultEtcdClientPort = 2379
	DefaultEtcdPeerPort   = 2380
	// DefaultEtcdDataDir is etcd's data directory: on the root volume, which
	// a stop/start keeps.
	DefaultEtcdDataDir = "/var/lib/etcd/pgnvme"
	// DefaultEtcdJoinWaitSeconds is how long a member with an empty data
	// directory waits for the other members to answer before it takes part in
	// a first start of the cluster.
	DefaultEtcdJoinWaitSeconds = 60
	// FormingEtcdJoinWaitSeconds is that wait for the nodes launched together to form a new cluster (a
	// create, or the restore of a cluster whose every member is lost; RenderEC2Form, RenderEC2Restore,
	// RenderEC2Clone): none of them has an etcd to answer the others, so each asks once and starts the
	// first start itself, where the usual wait held every forming back by a minute. A node that boots
	// when others of that forming already run etcd still finds them and joins.
	FormingEtcdJoinWaitSeconds = 2
	// Patroni's own defaults for its timings, in seconds
	// (docs/dynamic_configuration.rst): ttl 30, loop_wait 10, retry_timeout 10.
	DefaultPatroniTTL          = 30
	DefaultPatroniLoopWait     = 10
	DefaultPatroniRetryTimeout = 10
	// DefaultPatroniMaximumLagOnFailover is Patroni's maximum_lag_on_failover
	// default (1 MiB): a standby further behind does not take part in a
	// leader race.
	DefaultPatroniMaximumLagOnFailover = 1 << 20
	// DefaultPatroniRESTAPIPort is Patroni's REST API port.
	DefaultPatroniRESTAPIPort = 8008
	// DefaultPatroniRESTAPIUser is the user of the REST API's unsafe
	// endpoints (basic authentication).
	DefaultPatroniRESTAPIUser = "patroni"
	// DefaultSuperuser and DefaultReplicationUser are the database roles
	// Patroni creates.
	DefaultSuperuser       = "postgres"
	DefaultReplicationUser = "replicator"
	// ProviderUser is the role the provider logs in as on a cluster with TLS: by a client certificate it
	// issues itself for the session (pg_hba: hostssl ... cert), never a password; a member of pg_monitor,
	// which is what the provider reads (settings, WAL positions, the archiver's statistics).
	ProviderUser = "pgnvme"
)

// WAL-G release pinned by default: v3.0.8, the PostgreSQL build for Ubuntu
// 22.04 (glibc 2.35, which Debian 12's 2.36 runs), as the bare binary (the
// release's .tar.gz holds only this same file). The SHA-256 values are of
// those release assets, as pinned independently by zulip/zulip
// (puppet/zulip/manifests/common.pp, "The ubuntu-22.04 version", commit
// 4aab119d14e514e26a2158da5cc391a9c6920ddf), b4ck5p4c3/peg (Dockerfile,
// WALG_URL/WALG_SHA256 per architecture) and, for amd64,
// cp-20/web-comic-library (Dockerfile, ADD --checksum). Asset names follow
// wal-g's .github/workflows/release.yml at v3.0.8
// (wal-g-<db>-<ubuntu version>-<amd64|aarch64>).
const (
	DefaultWALGVersion = "v3.0.8"
	walgSHA256AMD64    = "f30544c5ce93cf83b87578e3c4a2e9c0e0ffc3d160ef89ecddaf75f397d98deb"
	walgSHA256ARM64    = "794d1a81f0c27825a1603bd39c0f2cf5dd8bed7cc36b598ca05d8d963c3d5fcf"
)

// Paths on the node. They are fixed: nothing in them depends on the node.
const (
	ec2ScriptDir       = "/usr/local/lib/pgnvme"
	ec2ConfigDir       = "/etc/pgnvme"
	ec2UnitDir         = "/etc/systemd/system"
	ec2PatroniConfig   = "/etc/patroni/pgnvme.yml"
	ec2WALGEnv         = "/etc/wal-g/walg.env"
	ec2WALGBin         = "/usr/local/bin/wal-g"
	ec2PgBackRestConf  = "/etc/pgbackrest/pgbackrest.conf"
	ec2PgBackRestBin   = "/usr/bin/pgbackrest"
	ec2PgBackRestLog   = "/var/log/pgbackrest"
	ec2PgBackRestSpool = "/var/spool/pgbackrest"
	ec2SocketDir       = "/var/run/postgresql"
	ec2SecretsFile     = "/run/pgnvme/patroni.env"
	ec2PgPass          = "/var/lib/postgresql/.pgpass_patroni"
	ec2MDName          = "pgnvme"
	// ec2TLSDir holds the node's TLS files (secrets.sh writes them): the CA's certificate, the node's member
	// certificate and key, its replication client certificate (the same key).
	ec2TLSDir = "/etc/pgnvme/tls"
	// ec2TakeoverDir holds takeover.sh's record of the takeover it started and the one it saw take effect,
	// on the root volume (beside etcd's data, which a stop/start keeps too).
	ec2TakeoverDir = "/var/lib/pgnvme-takeover"
)

// Peer is another node of the cluster as an EC2 node sees it.
type Peer struct {
	// Name is the node's name (one of Cluster.Nodes).
	Name string
	// IP is the node's stable private IPv4 address (its ENI's).
	IP string
}

// DefaultEtcdMembers is how many of a cluster of nodes nodes run an etcd
// member when Etcd.Members is 0: 3 for clusters of 3 or more nodes, 1 for
// smaller ones.
func DefaultEtcdMembers(nodes int) int {
	if nodes >= 3 {
		return 3
	}
	return 1
}

// Etcd is the etcd that holds Patroni's state (its DCS).
type Etcd struct {
	// Members is how many nodes run an etcd member: the first Members nodes
	// in priority order. 1, 3 or 5, at most the number of nodes; 0 means 3
	// for clusters of 3 or more nodes and 1 for smaller ones (two members
	// would fail with either node, one fails with one node only). The other
	// nodes run no etcd and use the members'.
	Members int
	// ClientPort and PeerPort are etcd's ports; 0 means 2379 and 2380.
	ClientPort int
	PeerPort   int
	// DataDir is etcd's data directory, an absolute path off the instance
	// store (a stop/start must keep it); "" means DefaultEtcdDataDir.
	DataDir string
	// JoinWaitSeconds is how long a member whose data directory is empty
	// asks the other members about the cluster before it concludes this is
	// the cluster's first start; 0 means DefaultEtcdJoinWaitSeconds.
	JoinWaitSeconds int
}

// Patroni is Patroni's configuration beyond the cluster's.
type Patroni struct {
	// TTL, LoopWait and RetryTimeout are Patroni's ttl, loop_wait and
	// retry_timeout in seconds; 0 means Patroni's defaults (30, 10, 10).
	// Patroni requires loop_wait + 2 * retry_timeout <= ttl.
	TTL          int
	LoopWait     int
	RetryTimeout int
	// MaximumLagOnFailover is maximum_lag_on_failover in bytes; 0 means
	// Patroni's default, 1 MiB.
	MaximumLagOnFailover int64
	// RESTAPIPort is the REST API's port; 0 means 8008.
	RESTAPIPort int
	// RESTAPIUser is the basic-authentication user of the REST API's unsafe
	// endpoints; "" means "patroni". Its password comes from SSM.
	RESTAPIUser string
	// Superuser and ReplicationUser are the roles Patroni creates; "" means
	// "postgres" and "replicator". Their passwords come from SSM.
	Superuser       string
	ReplicationUser string
}

// SSMParameters name the SSM Parameter Store parameters a node reads: the
// SecureStrings that hold its passwords, and the takeover instruction. Only
// names are rendered; the node reads the values with its instance role.
type SSMParameters struct {
	// Path is the cluster's parameter path, such as "/pgnvme/demo"; "" means
	// "/pgnvme/<cluster name>". Every parameter below is under it, so the
	// instance role can be limited to it.
	Path string
	// SuperuserPassword, ReplicationPassword and RESTAPIPassword are
	// parameter names under Path; "" means Path + "/superuser-password",
	// "/replication-password" and "/restapi-password".
	SuperuserPassword   string
	ReplicationPassword string
	RESTAPIPassword     string
	// Takeover is the name under Path of the takeover instruction, a
	// String parameter (not a secret) the platform writes when it accepts a
	// loss of data: "<node> <lsn>", such as "pg-b 0/11016C80". The etcd
	// member on that node, without a majority, becomes a new one-member
	// etcd cluster when its PostgreSQL is exactly at that WAL position
	// (takeover.sh). "" means Path + "/takeover".
	Takeover string
	// TLS is the name of the node's TLS bundle (TLSBundle), a SecureString, read only with EC2Node.TLS;
	// "" means Path + "/tls/" + the node's name.
	TLS string
}

// WALGRelease is the WAL-G binary a node downloads (WAL-G archives only).
type WALGRelease struct {
	// Version is the release tag; "" means DefaultWALGVersion.
	Version string
	// URL is where the binary itself (not a tarball) is downloaded from;
	// "" means the release asset on GitHub for Version and the node's
	// architecture. Set it to a private mirror when nodes cannot reach
	// GitHub.
	URL string
	// SHA256 is the binary's SHA-256, 64 lower-case hex digits; the node
	// refuses any other file. "" means the pinned value, which exists only
	// for the default version and URL.
	SHA256 string
}

// EC2Node is one node of a cluster on EC2, as the EC2 platform places it.
// Zero values take the defaults WithDefaults documents.
type EC2Node struct {
	// Name is one of Cluster.Nodes.
	Name string
	// Zone is the node's availability zone, such as "eu-west-1a".
	Zone string
	// PrivateIP is the node's stable private IPv4 address (its ENI's): its
	// identity for etcd, Patroni, replication and clients.
	PrivateIP string
	// Peers are the cluster's other nodes in priority order (Cluster.Nodes
	// without this node), each with its private IP.
	Peers []Peer
	// InstanceType is the EC2 instance type, used in messages only.
	InstanceType string
	// DiskCount is the instance type's number of instance-store NVMe disks
	// (catalog.InstanceType.DiskCount): 1 is used as it is, more are joined
	// in a RAID0 array.
	DiskCount int
	// Architecture is ArchX86_64 or ArchARM64.
	Architecture string
	// Region is the AWS region, where the node reads its SSM parameters.
	Region string
	// AllowedCIDRs are the networks clients and the other nodes connect
	// from (pg_hba, scram-sha-256); they must hold every node's IP.
	AllowedCIDRs []string
	// Port is PostgreSQL's port; 0 means 5432.
	Port int
	// MountPoint is where the instance store is mounted; "" means
	// DefaultEC2MountPoint.
	MountPoint string
	// DataDir is PostgreSQL's data directory, exactly one level below
	// MountPoint; "" means MountPoint + "/data".
	DataDir string
	// InstanceStoreGlob is the shell pattern whose matches are the
	// instance-store disks' links; "" means DefaultInstanceStoreGlob. Only a
	// node simulator (loop devices in place of NVMe) has reason to change it.
	InstanceStoreGlob string
	// DiskWaitSeconds is how long the disk script waits at boot for all
	// DiskCount disks; 0 means DefaultDiskWaitSeconds.
	DiskWaitSeconds int
	// Etcd is the DCS's configuration.
	Etcd Etcd
	// Patroni is Patroni's configuration.
	Patroni Patroni
	// SSM names the parameters the node reads (passwords, takeover).
	SSM SSMParameters
	// SSMEndpoint is the SSM endpoint URL the secrets and takeover scripts
	// read the parameters from (the AWS CLI's --endpoint-url), such as a VPC
	// interface endpoint's; "" means the AWS CLI's own choice for Region.
	SSMEndpoint string
	// WALG is the WAL-G binary (WAL-G archives only).
	WALG WALGRelease
	// TLS turns on TLS everywhere on the node (the same for every node of a cluster): PostgreSQL with
	// ssl on and only hostssl pg_hba lines (replication by client certificate), Patroni's REST API over
	// https, and etcd's client and peer traffic over TLS with client certificates. The node's key and
	// certificates are the SecureString SSM.TLS (TLSBundle), read at boot and every minute after
	// (secrets.sh), so a renewal reaches a running node without a new instance.
	TLS bool
}

// WithDefaults returns n with every zero value replaced by its default for
// cluster c.
func (n EC2Node) WithDefaults(c Cluster) EC2Node {
	n.Peers = append([]Peer(nil), n.Peers...)
	n.AllowedCIDRs = append([]string(nil), n.AllowedCIDRs...)
	setInt := func(p *int, def int) {
		if *p == 0 {
			*p = def
		}
	}
	setStr := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	setInt(&n.Port, DefaultEC2Port)
	setStr(&n.MountPoint, DefaultEC2MountPoint)
	setStr(&n.DataDir, path.Join(n.MountPoint, "data"))
	setStr(&n.InstanceStoreGlob, DefaultInstanceStoreGlob)
	setInt(&n.DiskWaitSeconds, DefaultDiskWaitSeconds)

	if n.Etcd.Members == 0 {
		n.Etcd.Members = DefaultEtcdMembers(len(c.Nodes))
	}
	setInt(&n.Etcd.ClientPort, DefaultEtcdClientPort)
	setInt(&n.Etcd.PeerPort, DefaultEtcdPeerPort)
	setStr(&n.Etcd.DataDir, DefaultEtcdDataDir)
	setInt(&n.Etcd.JoinWaitSeconds, DefaultEtcdJoinWaitSeconds)

	setInt(&n.Patroni.TTL, DefaultPatroniTTL)
	setInt(&n.Patroni.LoopWait, DefaultPatroniLoopWait)
	setInt(&n.Patroni.RetryTimeout, DefaultPatroniRetryTimeout)
	if n.Patroni.MaximumLagOnFailover == 0 {
		n.Patroni.MaximumLagOnFailover = DefaultPatroniMaximumLagOnFailover
	}
	setInt(&n.Patroni.RESTAPIPort, DefaultPatroniRESTAPIPort)
	setStr(&n.Patroni.RESTAPIUser, DefaultPatroniRESTAPIUser)
	setStr(&n.Patroni.Superuser, DefaultSuperuser)
	setStr(&n.Patroni.ReplicationUser, DefaultReplicationUser)

	setStr(&n.SSM.Path, "/pgnvme/"+c.Name)
	setStr(&n.SSM.SuperuserPassword, n.SSM.Path+"/superuser-password")
	setStr(&n.SSM.ReplicationPassword, n.SSM.Path+"/replication-password")
	setStr(&n.SSM.RESTAPIPassword, n.SSM.Path+"/restapi-password")
	setStr(&n.SSM.Takeover, n.SSM.Path+"/takeover")
	setStr(&n.SSM.TLS, n.SSM.Path+"/tls/"+n.Name)

	customWALG := n.WALG.Version != "" && n.WALG.Version != DefaultWALGVersion || n.WALG.URL != ""
	setStr(&n.WALG.Version, DefaultWALGVersion)
	setStr(&n.WALG.URL, walgReleaseURL(n.WALG.Version, n.Architecture))
	if n.WALG.SHA256 == "" && !customWALG {
		switch n.Architecture {
		case ArchX86_64:
			n.WALG.SHA256 = walgSHA256AMD64
		case ArchARM64:
			n.WALG.SHA256 = walgSHA256ARM64
		}
	}
	return n
}

// walgReleaseURL is the GitHub release asset of WAL-G's PostgreSQL build for
// Ubuntu 22.04 on arch, "" for an unknown architecture.
func walgReleaseURL(version, arch string) string {
	suffix := map[string]string{ArchX86_64: "amd64", ArchARM64: "aarch64"}[arch]
	if suffix == "" {
		return ""
	}
	return "https://github.com/wal-g/wal-g/releases/download/" + version + "/wal-g-pg-22.04-" + suffix
}

// File is one file the user-data writes.
type File struct {
	// Path is the absolute path on the node.
	Path string
	// Mode is the file's permissions.
	Mode fs.FileMode
	// Owner is "user:group".
	Owner string
	// Content is the file's content.
	Content string
}

// Script reports whether f is a shell script (it starts with "#!/bin/"); backup-decide.py is not.
func (f File) Script() bool {
	return strings.HasPrefix(f.Content, "#!/bin/")
}

// UserData is one EC2 node's cloud-init user-data.
type UserData struct {
	// CloudConfig is the user-data: a "#cloud-config" document that writes
	// Files and runs the install script once per instance. It holds no
	// secret.
	CloudConfig string
	// Files are the files CloudConfig writes, in order.
	Files []File
	// PatroniYAML is Patroni's configuration (also one of Files).
	PatroniYAML string
	// EtcdMember reports whether the node runs an etcd member.
	EtcdMember bool
	// DynamicConfig is the cluster's dynamic configuration as Patroni's
	// GET /config shows it (bootstrap.dcs in PatroniYAML): timings, quorum
	// mode, use_slots and every cluster-wide PostgreSQL parameter. Patroni
	// reads bootstrap.dcs only when it creates the cluster; a running
	// cluster takes changes through PATCH /config. The same for every node.
	DynamicConfig map[string]any
	// Identity is CloudConfig without the dynamic configuration: two
	// renderings with the same Identity differ only in what PATCH /config
	// changes on a running cluster, so an instance need not be replaced.
	Identity string
}

// WALGPreventWALOverwrite is WAL-G's setting that makes wal-push refuse to replace an archived segment
// whose content differs (and succeed when it is the same); every node runs with it "true".
const WALGPreventWALOverwrite = "WALG_PREVENT_WAL_OVERWRITE"

// UserDataSizeError is RenderEC2's error when a node's user-data is over MaxUserDataBytes even with gzip:
// only a rendering can tell, so the EC2 platform's plan renders every node to find it.
type UserDataSizeError struct {
	Node  string
	Bytes int
}

func (e *UserDataSizeError) Error() string {
	return fmt.Sprintf("The user-data of node %s is %d bytes even with gzip, more than the %d bytes EC2 accepts; shorten the parameters or the archive's settings.", e.Node, e.Bytes, MaxUserDataBytes)
}

// MaxUserDataBytes is the largest user-data EC2 accepts, before base64.
const MaxUserDataBytes = 16384

// Gzip is CloudConfig compressed with gzip, deterministically (no name, no
// time): cloud-init reads gzip-compressed user-data, and EC2 limits
// user-data to MaxUserDataBytes, which CloudConfig itself exceeds.
func (u UserData) Gzip() []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level never fails
	_, _ = w.Write([]byte(u.CloudConfig))                   // writes to a bytes.Buffer never fail
	_ = w.Close()
	return buf.Bytes()
}

// File returns the file at path p and whether there is one.
func (u UserData) File(p string) (File, bool) {
	for _, f := range u.Files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}
