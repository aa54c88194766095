// Package cluster is the platform-neutral model of a pgnvme_cluster: the Spec the configuration asks for,
// its defaults, the one Validate (each problem carries the attribute path it is about), and what a platform
// reports back (Member, Status, Plan). The Terraform glue converts configuration into a Spec and a Status
// into state; platforms (internal/localcluster, internal/ec2cluster) turn a Spec into machines. Each
// platform's own block (its defaults, rules and status) is a package of its own beside this one
// (internal/cluster/localspec, internal/cluster/awsspec), which the Spec carries as a Block. Every rule
// about a cluster's configuration lives here, in a platform's block package or in internal/bootstrap (what
// a node's PostgreSQL accepts), once.
//
// The package is pure: no framework, SDK, pgx or process code.
package cluster

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// Defaults of a Spec.
const (
	// DefaultNodeCount is the number of nodes when neither a node list nor a count is given.
	DefaultNodeCount = 3
)

// Platform names where the nodes run.
type Platform string

// The platforms, each configured by its own block (internal/cluster/localspec, internal/cluster/awsspec).
const (
	// PlatformLocal runs each node as PostgreSQL processes on this machine.
	PlatformLocal Platform = "local"
	// PlatformAWS runs each node on an EC2 instance with instance-store NVMe.
	PlatformAWS Platform = "aws"
)

// Block is a platform's own block of the configuration (local = {...}, aws = {...}) with its defaults
// filled in: localspec.Block or awsspec.Block. The neutral Spec carries it and knows nothing of its
// contents; each platform reads its own (localspec.Of, awsspec.Of).
type Block interface {
	// Platform is the platform the block configures.
	Platform() Platform
	// Validate reports the block's problems, each at its attribute, in the context of s, the spec that
	// holds it.
	Validate(s Spec) []*FieldError
}

// Warner is a platform block that also has warnings for a new cluster: settings that are valid but, as far
// as the plan can tell, will not work as the user means them. Each is at its attribute; they stop nothing.
type Warner interface {
	Warnings(s Spec) []*FieldError
}

// Warnings are the warnings of s's platform block (none when it has none).
func Warnings(s Spec) []*FieldError {
	if w, ok := s.Block.(Warner); ok {
		return w.Warnings(s)
	}
	return nil
}

// BlockInput is a platform block as given, before defaults.
type BlockInput interface {
	// WithDefaults is the block with its defaults filled in.
	WithDefaults() Block
	// DefaultZone is a node's zone when the configuration gives none; "" when the platform needs the
	// user to choose (a node without a zone is then an error).
	DefaultZone() string
}

// Node is one configured node.
type Node struct {
	Name string
	// Zone is the node's zone; the platform's default zone when unset (see BlockInput.DefaultZone).
	Zone string
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
	// Restore is where the cluster is restored from when it is created; nil means initdb.
	Restore *Restore `json:",omitempty"`
	// AcceptDataLossAtLSN is accept_data_loss_at_lsn: the WAL position at which the operator accepts losing
	// what only lost nodes held, when no survivor is proven to hold every acknowledged commit
	// (topology.Desired.AcceptLossAt); "" accepts nothing.
	AcceptDataLossAtLSN string `json:",omitempty"`
	// TLS is the cluster's TLS; nil means none (plain TCP).
	TLS *TLS `json:",omitempty"`
	// Block is the platform's block; nil when the configuration gave none or more than one (an error).
	Block Block
	// Given is the configuration as given, before defaults (FromInput keeps it): what an import writes back,
	// so that a configuration that leaves a setting to its default plans no change after an import.
	Given *Input `json:",omitempty"`
}

// Platform is the platform s runs on, "" when no platform block (or more than one) is set.
func (s Spec) Platform() Platform {
	if s.Block == nil {
		return ""
	}
	return s.Block.Platform()
}

// MajorOrDefault is s's PostgreSQL major version, capacity's default when s leaves it to the platform.
func (s Spec) MajorOrDefault() int {
	if s.PostgresMajor == 0 {
		return capacity.DefaultPostgresMajor
	}
	return s.PostgresMajor
}

// Bootstrap is the cluster as a node's configuration sees it (bootstrap.Cluster): its name, major version
// (MajorOrDefault), nodes, synchronous replication, parameters and archive.
func (s Spec) Bootstrap() bootstrap.Cluster {
	return bootstrap.Cluster{Name: s.Name, PostgresMajor: s.MajorOrDefault(), Nodes: s.NodeNames(), Synchronous: s.Synchronous, Parameters: s.Parameters, Archive: s.Archive}
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
	// Backup is the backup block, nil when not given (the archive then runs backup.Default()).
	Backup *BackupInput
	// Restore is the restore block, nil when not given.
	Restore *RestoreInput `json:",omitempty"`
	// AcceptDataLossAtLSN is accept_data_loss_at_lsn as given ("" when not).
	AcceptDataLossAtLSN string `json:",omitempty"`
	// TLS is the tls block, nil when not given.
	TLS *TLSInput `json:",omitempty"`
	// Blocks are the platform blocks given (localspec.Block, *awsspec.Input); a valid configuration gives
	// exactly one. A platform keeps its own in what it stores (the JSON of Input leaves them out).
	Blocks []BlockInput `json:"-"`
}

// Block is the one platform block in, nil when there is none or more than one.
func (in Input) Block() BlockInput {
	if len(in.Blocks) != 1 {
		return nil
	}
	return in.Blocks[0]
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
	// MaxBacklogGiB bounds the WAL a node keeps for the archive (bootstrap.Archive.MaxBacklogMiB); nil keeps all.
	MaxBacklogGiB *float64
}

// BackupInput is the backup block as given; nil and "" are unset.
type BackupInput struct {
	Schedule           string
	FullEvery          *int
	RecoveryWindowDays *int
	MinFullBackups     *int
}

// Policy is the policy the block asks for: backup.Default() with what the block sets.
func (b *BackupInput) Policy() backup.Policy {
	p := backup.Default()
	if b == nil {
		return p
	}
	if b.Schedule != "" {
		p.Schedule = b.Schedule
	}
	for _, f := range []struct {
		in  *int
		out *int
	}{{b.FullEvery, &p.FullEvery}, {b.RecoveryWindowDays, &p.RecoveryWindowDays}, {b.MinFullBackups, &p.MinFullBackups}} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	return p
}

// FromInput fills in the defaults: node-1..node-N (DefaultNodeCount) when no node list is given, the
// platform's default zone, synchronous any / 1 standby (0 for a single node) / required / on, backup on
// create, and the platform block's own (BlockInput.WithDefaults).
func FromInput(in Input) Spec {
	given := in
	given.Nodes = slices.Clone(in.Nodes)
	given.Blocks = slices.Clone(in.Blocks)
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
	if b := in.Block(); b != nil {
		s.Block = b.WithDefaults()
		for i := range s.Nodes {
			if s.Nodes[i].Zone == "" {
				s.Nodes[i].Zone = b.DefaultZone()
			}
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
	s.Restore = RestoreOf(in.Restore)
	s.AcceptDataLossAtLSN = in.AcceptDataLossAtLSN
	s.TLS = tlsOf(in.TLS)
	if a := in.Archive; a != nil {
		s.Archive = &bootstrap.Archive{
			PgBackRestOptions: maps.Clone(a.PgBackRestOptions),
			WALGEnv:           maps.Clone(a.WALGEnv),
			BackupOnCreate:    a.BackupOnCreate == nil || *a.BackupOnCreate,
		}
		policy := in.Backup.Policy()
		s.Archive.Backup = &policy
		if a.MaxBacklogGiB != nil {
			s.Archive.MaxBacklogMiB = int(math.Round(*a.MaxBacklogGiB * 1024))
		}
	}
	return s
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
