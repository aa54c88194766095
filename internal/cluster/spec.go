// Package cluster is the platform-neutral model of a pgnvme_cluster: the Spec the configuration asks for,
// its defaults, the one Validate (each problem carries the attribute path it is about), and what a platform
// reports back (Member, Status, Plan). The Terraform glue converts configuration into a Spec and a Status
// into state; platforms (internal/localcluster, later the EC2 one) turn a Spec into machines. Every rule
// about a cluster's configuration lives here or in internal/bootstrap (what a node's PostgreSQL accepts),
// once.
//
// The package is pure: no framework, SDK, pgx or process code.
package cluster

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// Defaults of a Spec.
const (
	// DefaultNodeCount is the number of nodes when neither a node list nor a count is given.
	DefaultNodeCount = 3
	// DefaultZone is a node's zone label when none is given.
	DefaultZone = "local"
	// DefaultPortBase is the local platform's first port.
	DefaultPortBase = 54320
	// MinPortBase and MaxPort bound the local platform's ports.
	MinPortBase = 1024
	MaxPort     = 65535
)

// Platform names where the nodes run.
type Platform string

// The platforms.
const (
	// PlatformLocal runs each node as PostgreSQL processes on this machine.
	PlatformLocal Platform = "local"
)

// Node is one configured node.
type Node struct {
	Name string
	// Zone is the node's zone; DefaultZone on the local platform when unset.
	Zone string
}

// Local is the local platform's configuration.
type Local struct {
	// DataDir is the absolute directory holding one data directory per node.
	DataDir string
	// PortBase is the first TCP port on 127.0.0.1.
	PortBase int
	// RunAsUser is the OS user the servers run as; "" is the platform's default.
	RunAsUser string
	// Limits are each node's resource limits; nil means none.
	Limits *Limits
}

// Spec is the cluster the configuration asks for, defaults filled in.
type Spec struct {
	Name string
	// PostgresMajor is the major version; 0 lets the platform choose (local: the installed one).
	PostgresMajor int
	// Nodes in priority order: Nodes[0] is the primary at creation.
	Nodes       []Node
	Synchronous bootstrap.Synchronous
	Parameters  map[string]string
	// Archive is continuous archiving; nil means none.
	Archive *bootstrap.Archive
	// Local is set when the cluster runs on the local platform, AWS when it runs on EC2 (exactly one
	// platform block is set).
	Local *Local
	AWS   *AWS
	// Given is the configuration as given, before defaults (FromInput keeps it): what an import writes back,
	// so that a configuration that leaves a setting to its default plans no change after an import.
	Given *Input `json:",omitempty"`
}

// Platform is the platform s runs on, "" when no platform block (or more than one) is set.
func (s Spec) Platform() Platform {
	switch {
	case s.Local != nil && s.AWS == nil:
		return PlatformLocal
	case s.AWS != nil && s.Local == nil:
		return PlatformAWS
	}
	return ""
}

// NodeNames are the nodes' names in priority order.
func (s Spec) NodeNames() []string {
	out := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		out[i] = n.Name
	}
	return out
}

// Input is the configuration as given, before defaults: nil pointers and empty values are "not set".
type Input struct {
	Name          string
	PostgresMajor int
	// NodeCount is used when Nodes is nil: nodes node-1 .. node-N.
	NodeCount   *int
	Nodes       []Node
	Synchronous SynchronousInput
	Parameters  map[string]string
	Archive     *ArchiveInput
	Local       *Local
	AWS         *AWSInput
}

// SynchronousInput is the synchronous block as given; "" and nil are unset.
type SynchronousInput struct {
	Method         string
	Number         *int
	DataDurability string
	Commit         string
}

// ArchiveInput is the archive block as given.
type ArchiveInput struct {
	PgBackRestOptions map[string]string
	WALGEnv           map[string]string
	// BackupOnCreate defaults to true.
	BackupOnCreate *bool
}

// FromInput fills in the defaults: node-1..node-N (DefaultNodeCount) when no node list is given, zone
// DefaultZone, synchronous any / 1 standby (0 for a single node) / required / on, backup on create,
// port base DefaultPortBase, limits that set nothing as none and a device of DefaultDiskGiB when an I/O
// limit asks for one.
func FromInput(in Input) Spec {
	given := in
	given.Nodes = slices.Clone(in.Nodes)
	s := Spec{Name: in.Name, PostgresMajor: in.PostgresMajor, Parameters: maps.Clone(in.Parameters), Given: &given}
	if in.Nodes != nil {
		s.Nodes = slices.Clone(in.Nodes)
	} else {
		n := DefaultNodeCount
		if in.NodeCount != nil {
			n = *in.NodeCount
		}
		for i := range max(n, 0) {
			s.Nodes = append(s.Nodes, Node{Name: fmt.Sprintf("node-%d", i+1)})
		}
	}
	for i := range s.Nodes {
		if s.Nodes[i].Zone == "" && in.AWS == nil { // on EC2 a zone is the user's choice: none is an error
			s.Nodes[i].Zone = DefaultZone
		}
	}
	number := 1
	if len(s.Nodes) == 1 {
		number = 0
	}
	if in.Synchronous.Number != nil {
		number = *in.Synchronous.Number
	}
	s.Synchronous = bootstrap.Synchronous{
		Method:         quorum.Method(orDefault(in.Synchronous.Method, string(quorum.MethodAny))),
		Number:         number,
		DataDurability: bootstrap.Durability(orDefault(in.Synchronous.DataDurability, string(bootstrap.DurabilityRequired))),
		Commit:         orDefault(in.Synchronous.Commit, bootstrap.CommitOn),
	}
	if a := in.Archive; a != nil {
		s.Archive = &bootstrap.Archive{
			PgBackRestOptions: maps.Clone(a.PgBackRestOptions),
			WALGEnv:           maps.Clone(a.WALGEnv),
			BackupOnCreate:    a.BackupOnCreate == nil || *a.BackupOnCreate,
		}
	}
	if in.Local != nil {
		l := *in.Local
		if l.PortBase == 0 {
			l.PortBase = DefaultPortBase
		}
		l.Limits = l.Limits.withDefaults()
		s.Local = &l
	}
	s.AWS = fromAWSInput(in.AWS)
	return s
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
