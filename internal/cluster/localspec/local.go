// Package localspec is the local platform's block of a pgnvme_cluster (local = {...}): where the nodes'
// data lives on this machine, their ports, the user the servers run as and their resource limits, with
// its defaults, its rules and what only the local platform reports. The neutral cluster.Spec carries it
// as a cluster.Block; internal/localcluster reads it with Of.
//
// The package is pure: no framework, SDK, pgx or process code.
package localspec

import (
	"path/filepath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// Defaults and bounds of the local block.
const (
	// DefaultZone is a node's zone label when none is given.
	DefaultZone = "local"
	// DefaultPortBase is the first port.
	DefaultPortBase = 54320
	// MinPortBase and MaxPort bound the ports.
	MinPortBase = 1024
	MaxPort     = 65535
)

// Host is the loopback address every local member listens on.
const Host = "127.0.0.1"

// DeviceDataDir is a node's data directory inside the file system of its own device: PostgreSQL advises
// against using a mount point itself as the data directory.
const DeviceDataDir = "data"

// Block is the local platform's configuration. As given (a cluster.BlockInput) zero values are unset;
// WithDefaults fills them in.
type Block struct {
	// DataDir is the absolute directory holding one data directory per node.
	DataDir string
	// PortBase is the first TCP port on 127.0.0.1.
	PortBase int
	// RunAsUser is the OS user the servers run as; "" is the platform's default.
	RunAsUser string
	// Limits are each node's resource limits; nil means none.
	Limits *Limits
}

var (
	_ cluster.Block          = (*Block)(nil)
	_ cluster.BlockInput     = (*Block)(nil)
	_ cluster.PlatformStatus = (*Status)(nil)
)

// Of is s's local block, nil when s does not run on the local platform.
func Of(s cluster.Spec) *Block {
	b, _ := s.Block.(*Block)
	return b
}

// Platform is cluster.PlatformLocal.
func (*Block) Platform() cluster.Platform { return cluster.PlatformLocal }

// DefaultZone is DefaultZone: every node of this machine is in one zone.
func (*Block) DefaultZone() string { return DefaultZone }

// WithDefaults fills in the port base (DefaultPortBase), limits that set nothing as none, and a device of
// DefaultDiskGiB when an I/O limit asks for one.
func (b *Block) WithDefaults() cluster.Block {
	out := *b
	if out.PortBase == 0 {
		out.PortBase = DefaultPortBase
	}
	out.Limits = out.Limits.withDefaults()
	return &out
}

// Validate checks the data directory, the ports the nodes need, the limits and the archives the local
// platform writes and restores (pgBackRest).
func (b *Block) Validate(s cluster.Spec) []*cluster.FieldError {
	var out []*cluster.FieldError
	if !filepath.IsAbs(b.DataDir) {
		out = append(out, cluster.Errorf([]string{"local", "data_dir"}, "Invalid Data Directory", "local.data_dir %q must be an absolute path, such as /var/lib/pgnvme/%s.", b.DataDir, s.Name))
	}
	if b.PortBase < MinPortBase || b.PortBase+len(s.Nodes)-1 > MaxPort {
		out = append(out, cluster.Errorf([]string{"local", "port_base"}, "Invalid Port Base", "local.port_base %d with %d nodes needs ports %d to %d; choose a base from %d to %d, so that every node's port is from %d to %d.",
			b.PortBase, len(s.Nodes), b.PortBase, b.PortBase+len(s.Nodes)-1, MinPortBase, MaxPort-len(s.Nodes)+1, MinPortBase, MaxPort))
	}
	if b.Limits != nil {
		out = append(out, validateLimits(s, b.Limits)...)
	}
	if a := s.Archive; a != nil {
		switch {
		case len(a.WALGEnv) > 0:
			out = append(out, cluster.Errorf([]string{"archive", "walg_env"}, "WAL-G On The Local Platform",
				"The local platform archives with pgBackRest; WAL-G is the EC2 platform's archiver. Use archive.pgbackrest_options "+
					"(for a bucket: pgnvme_archive_bucket.x.pgbackrest_options plus credentials, or repo1-type = \"posix\" with repo1-path for a local repository)."))
		case len(a.PgBackRestOptions) == 0:
			out = append(out, cluster.Errorf([]string{"archive"}, "Missing Archive Options",
				"archive needs pgbackrest_options (the local platform's archiver), e.g. pgnvme_archive_bucket.x.pgbackrest_options plus credentials, "+
					"or repo1-type = \"posix\" with repo1-path for a local repository. Remove archive to run without one."))
		}
	}
	if r := s.Restore; r != nil && len(r.Archive.WALGEnv) > 0 {
		out = append(out, cluster.Errorf([]string{"restore", "archive", "walg_env"}, "WAL-G On The Local Platform",
			"The local platform restores with pgBackRest; an archive written by WAL-G is restored on the EC2 platform. Give restore.archive.pgbackrest_options "+
				"and the stanza of a pgBackRest archive."))
	}
	return out
}

// Status is what only the local platform reports.
type Status struct {
	// DurabilityWatcherRunning is true while the data_durability "preferred" watcher runs.
	DurabilityWatcherRunning bool
	// BackupSchedulerRunning is true while the backup scheduler (a cluster with an archive) runs.
	BackupSchedulerRunning bool
}

// Platform is cluster.PlatformLocal.
func (*Status) Platform() cluster.Platform { return cluster.PlatformLocal }

// StatusOf is the local platform's own part of a status or plan, nil when it has none.
func StatusOf(st cluster.PlatformStatus) *Status {
	out, _ := st.(*Status)
	return out
}

// Assign gives each node of s (local platform) its identity on this machine: a node that already exists
// in prior (by name) keeps its port and data directory for life; a new one takes the lowest port from
// the block's PortBase not used by anyone and the data directory <data_dir>/<name>, or
// <data_dir>/<name>/data when its data lives on its own device (mounted at <data_dir>/<name>, see
// Limits). The members come back in s's priority order, with no role or state.
func Assign(s cluster.Spec, prior []cluster.Member) []cluster.Member {
	b := Of(s)
	root := filepath.Clean(b.DataDir)
	used := map[int]bool{}
	have := map[string]cluster.Member{}
	for _, m := range prior {
		have[m.Name] = m
		used[m.Port] = true
	}
	next := b.PortBase
	out := make([]cluster.Member, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		mem := cluster.Member{Name: n.Name, Zone: n.Zone, Host: Host, DataDir: filepath.Join(root, n.Name)}
		if b.Limits.Device() {
			mem.DataDir = filepath.Join(root, n.Name, DeviceDataDir)
		}
		if mem.Zone == "" {
			mem.Zone = DefaultZone
		}
		if old, ok := have[n.Name]; ok && old.Port > 0 {
			mem.Port = old.Port
			if old.DataDir != "" {
				mem.DataDir = old.DataDir
			}
		} else {
			for used[next] {
				next++
			}
			mem.Port = next
			used[next] = true
		}
		out = append(out, mem)
	}
	return out
}
