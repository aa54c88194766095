// Package localcluster is the local platform's cluster adapter: it runs a
// pgnvme_cluster as PostgreSQL processes on this machine with
// internal/localnode, one process per member, and reconciles them.
//
// It does I/O only. What each node's configuration is comes from
// internal/bootstrap (Render, EffectiveSynchronousStandbyNames,
// RestartRequired); what to do after a node is lost comes from
// internal/topology (Plan). Observe reads, Reconcile executes a plan one
// action at a time, ApplySettings rolls parameter changes, EnforceDurability
// keeps data_durability "preferred" writable at apply, and the durability
// watcher (a detached shell script, see watcher.go) between applies.
//
// Files of a cluster whose members' data directories are ROOT/NAME:
//
//	ROOT/pgnvme-cluster.json   the manifest (the Spec), for import
//	ROOT/NAME/                 a member's data directory
//	ROOT/NAME.log              its server log
//	ROOT/NAME.pgbackrest/      with an archive: pgbackrest.conf, log/, lock/, spool/
//	ROOT/pgnvme-durability.*   data_durability "preferred": the durability
//	                           watcher's script, PID file and log (watcher.go)
//
// With limits that give each member a device, ROOT/NAME is that device's
// mount point and the data directory is ROOT/NAME/data (see limits.go).
//
// Local platform only: every member listens on 127.0.0.1 and trusts
// loopback connections (see internal/localnode). Failover is explicit: the
// next Observe, Plan and Reconcile promote the furthest standby; automatic
// failover is the EC2 platform's job (Patroni).
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cgroup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Host is the loopback address every member listens on.
const Host = "127.0.0.1"

// Member is one node of the cluster: its identity, fixed for its life.
type Member struct {
	Name    string `json:"name"`
	Zone    string `json:"zone,omitempty"`
	Port    int    `json:"port"`
	DataDir string `json:"data_dir"`
	// TLS are the member's TLS files while its configuration serves TLS (or is to); nil for plain TCP. Not
	// in the manifest: Spec.TLS says whether, TLSDir where.
	TLS *localnode.TLS `json:"-"`
}

// Spec is the cluster the configuration asks for.
type Spec struct {
	// Name is the cluster's name (and the default pgBackRest stanza).
	Name string `json:"name"`
	// Major is the PostgreSQL major the cluster runs, recorded in the manifest at create so that a
	// configuration that leaves postgres_major unset, and an import, find the binaries the data needs
	// (0 in a manifest written before it was recorded: then the members' PG_VERSION says).
	Major int `json:"postgres_major,omitempty"`
	// Members in priority order; Members[0] is the primary at creation.
	Members []Member `json:"members"`
	// Synchronous is the synchronous replication; callers fill in defaults.
	Synchronous bootstrap.Synchronous `json:"synchronous"`
	// Parameters are the user's server parameters (validated by bootstrap).
	Parameters map[string]string `json:"parameters,omitempty"`
	// Archive is continuous archiving with pgBackRest (the local platform's
	// archiver); nil means none.
	Archive *bootstrap.Archive `json:"archive,omitempty"`
	// RunAsUser is the user the servers run as; "" = localnode's default.
	RunAsUser string `json:"run_as_user,omitempty"`
	// Limits are each member's resource limits (see limits.go); nil means
	// none. With a device per member, every member's data directory is
	// ROOT/NAME/data.
	Limits *localspec.Limits `json:"limits,omitempty"`
	// Restore is where the first member is restored from at create (the restore block); nil means initdb.
	// Not in the manifest: it acts at create only, and the configuration gives it again for a create that
	// starts over.
	Restore *RestoreFrom `json:"-"`
	// AcceptLossAt is accept_data_loss_at_lsn (topology.Desired.AcceptLossAt): not in the manifest, since it
	// acts on the apply that gives it only.
	AcceptLossAt string `json:"-"`
	// TLS is the cluster's certificate policy when it serves TLS (tls.go); nil for plain TCP.
	TLS *pki.Policy `json:"tls,omitempty"`
	// tlsDiffer are the members whose configuration's TLS is not what TLS asks for (observeTLS): the next
	// apply turns it on or off.
	tlsDiffer []string
}

// Node states as Status.State holds them.
const (
	StateRunning = "running" // the server process runs
	StateStopped = "stopped" // data directory present, no process
	StateMissing = "missing" // no data directory
	StateUnknown = "unknown" // the data directory or process could not be read
)

// Status is one member as Observe saw it.
type Status struct {
	Member
	// State is StateRunning, StateStopped or StateMissing.
	State string
	// Role is "primary", "standby" or "" (unknown).
	Role string
	// FlushLSN and ReplayLSN are WAL positions ("0/3000060"), "" when
	// unknown. See Observe for where each comes from.
	FlushLSN, ReplayLSN string
	// Timeline is the node's timeline ID, 0 when unknown.
	Timeline int
	// Streaming is true when the running primary's pg_stat_replication shows
	// the member in state streaming.
	Streaming bool
	// SyncState is the member's sync_state in the primary's
	// pg_stat_replication ("quorum", "sync", "potential", "async"), "" when
	// it is not connected.
	SyncState string
	// Error says why something about the member could not be read ("" when
	// everything was); topology then refuses to decide around it.
	Error string
	// PendingRestart names the settings a running member waits to apply with a restart
	// (pg_settings.pending_restart), RestartLowers those of them it lowers that a hot standby must not have
	// below its primary's (bootstrap.StandbyLimitsLowered).
	PendingRestart, RestartLowers []string
}

// Manager runs clusters of localnode nodes. It holds no state about
// clusters: everything comes from the Spec and the files on disk.
type Manager struct {
	engine *localnode.Engine
	// major caches PostgresMajor once it succeeded.
	majorMu sync.Mutex
	major   int
	// pgbackrest is the pgbackrest executable, walg WAL-G's (wal-g), "" when it is not installed.
	pgbackrest, walg string
	// streamTimeout bounds every wait for standbys to stream.
	streamTimeout time.Duration
	// clock is the time every decision and wait reads (Options.Clock, wait.Real when nil).
	clock wait.Clock
	// afterRestart, when set (tests), runs after ApplySettings restarted a
	// member and saw it back.
	afterRestart func(ctx context.Context, name string)
	// limiter and disks apply Spec.Limits (internal/cgroup).
	limiter Limiter
	disks   Disks
}

// Options configure a Manager. The zero value is the usual choice.
type Options struct {
	// RunAsUser is the user the servers run as; "" = localnode's default.
	RunAsUser string
	// CgroupRoot is where the cgroup file systems are mounted; "" is
	// cgroup.DefaultRoot.
	CgroupRoot string
	// Major is the PostgreSQL major whose binaries the Manager runs
	// (localnode.BinDirForMajor); 0 is the newest installed.
	Major int
	// Clock is the time every decision (certificate renewal, archive health, the drill) and every wait of
	// the Manager and its engine reads; nil is wait.Real. Tests set one to decide at a chosen instant.
	Clock wait.Clock
}

// DefaultStreamTimeout bounds each wait for standbys to stream.
const DefaultStreamTimeout = 2 * time.Minute

// NewManager resolves the PostgreSQL binaries and the user servers run as.
func NewManager(runAsUser string) (*Manager, error) {
	return NewManagerWithOptions(Options{RunAsUser: runAsUser})
}

// NewManagerWithOptions is NewManager with every option.
func NewManagerWithOptions(o Options) (*Manager, error) {
	var binDir string
	if o.Major != 0 {
		dir, err := localnode.BinDirForMajor(context.Background(), o.Major)
		if err != nil {
			return nil, err
		}
		binDir = dir
	}
	clock := o.Clock
	if clock == nil {
		clock = wait.Real
	}
	e, err := localnode.New(localnode.Options{RunAsUser: o.RunAsUser, BinDir: binDir, Clock: clock})
	if err != nil {
		return nil, err
	}
	m := &Manager{engine: e, streamTimeout: DefaultStreamTimeout, clock: clock, limiter: cgroup.Open(o.CgroupRoot), disks: loopDisks{}}
	for name, into := range map[string]*string{"pgbackrest": &m.pgbackrest, "wal-g": &m.walg} {
		if p, err := exec.LookPath(name); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				*into = abs
			}
		}
	}
	return m, nil
}

// WithMajor is a Manager like m (the same server user, limits and clock) that runs PostgreSQL major's
// binaries: m itself when it runs major already.
func (m *Manager) WithMajor(major int) (*Manager, error) {
	if have, err := m.PostgresMajor(context.Background()); err == nil && have == major {
		return m, nil
	}
	dir, err := localnode.BinDirForMajor(context.Background(), major)
	if err != nil {
		return nil, err
	}
	e, err := localnode.New(localnode.Options{RunAsUser: m.engine.RunAsUser(), Superuser: m.engine.Superuser(), BinDir: dir, Clock: m.waitClock()})
	if err != nil {
		return nil, err
	}
	return &Manager{engine: e, pgbackrest: m.pgbackrest, walg: m.walg, streamTimeout: m.streamTimeout, clock: m.clock,
		afterRestart: m.afterRestart, limiter: m.limiter, disks: m.disks}, nil
}

// Engine is the localnode engine the manager runs nodes with.
func (m *Manager) Engine() *localnode.Engine { return m.engine }

// PostgresMajor is the major version of the server the Manager runs (15, 18).
func (m *Manager) PostgresMajor(ctx context.Context) (int, error) {
	// The binaries do not change during a Manager's life: run `postgres --version` once, not at every step.
	m.majorMu.Lock()
	defer m.majorMu.Unlock()
	if m.major > 0 {
		return m.major, nil
	}
	major, _, err := m.engine.Version(ctx)
	if err == nil {
		m.major = major
	}
	return major, err
}

// Node is member mb as a localnode.Node with role.
func Node(mb Member, role localnode.Role) localnode.Node {
	return localnode.Node{Name: mb.Name, Role: role, Host: Host, Port: mb.Port, DataDir: mb.DataDir, TLS: mb.TLS}
}

// member finds a member by name.
func (s Spec) member(name string) (Member, bool) {
	i := slices.IndexFunc(s.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return s.Members[i], true
}

// repairCluster is s as observed (st) in topology's terms (topologyOf), with what making the members'
// settings s's changes (settingsChangeOf, once a single primary runs) and what the archive holds when the
// decision rests on it (every member lost: Cluster.NeedsArchive), read with pgBackRest.
func (m *Manager) repairCluster(ctx context.Context, s Spec, st []Status) (topology.Cluster, error) {
	c := topologyOf(s, st)
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return c, err
	}
	due, err := m.certsDue(s, st)
	if err != nil {
		return c, err
	}
	for i := range c.Members {
		if c.Members[i].Machine == topology.MachineLive {
			c.Members[i].CertDue = due[c.Members[i].Name]
		}
	}
	ch, err := m.settingsChangeOf(ctx, s, major, st)
	if err != nil {
		return c, err
	}
	if ch != nil {
		c.ConfigChanges, c.ConfigRestarts, c.ConfigLowers = ch.describe(), ch.restart, ch.lowers
	}
	if c.NeedsArchive() {
		h, err := m.ArchiveHealth(ctx, s, nil)
		if err != nil {
			return c, fmt.Errorf("%w: the archive of %s, which holds its data, could not be read to restore from it: %w", topology.ErrDataLost, s.Name, err)
		}
		if h != nil {
			c.Archive = cluster.ArchiveEnd(*h)
		}
	}
	return c, nil
}

// PlanSteps is the repair of s as observed (st) that the plan lists: topology.Steps, the simulation of the
// steps Reconcile executes one at a time with topology.Next, so the plan's text and the apply's steps are
// one decision.
func (m *Manager) PlanSteps(ctx context.Context, s Spec, st []Status) ([]topology.Step, error) {
	c, err := m.repairCluster(ctx, s, st)
	if err != nil {
		return nil, err
	}
	return topology.Steps(c)
}

// names are the members' names in priority order.
func (s Spec) names() []string {
	out := make([]string, len(s.Members))
	for i, m := range s.Members {
		out[i] = m.Name
	}
	return out
}

// DataDirRoot is the deepest directory that holds every member's data
// directory (with a device per member: every member's mount point): the
// resource's local.data_dir when the members live under it.
func DataDirRoot(s Spec) (string, error) {
	if len(s.Members) == 0 {
		return "", errors.New("the cluster has no members")
	}
	var root string
	for i, m := range s.Members {
		if !filepath.IsAbs(m.DataDir) {
			return "", fmt.Errorf("member %s: data directory %q is not an absolute path", m.Name, m.DataDir)
		}
		parent := filepath.Dir(filepath.Clean(m.DataDir))
		if s.Limits.Device() {
			parent = filepath.Dir(parent)
		}
		if i == 0 {
			root = parent
			continue
		}
		for !within(parent, root) {
			root = filepath.Dir(root)
		}
	}
	return root, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// pgBackRestDir is a member's pgBackRest directory: NAME.pgbackrest next to
// its data directory.
func pgBackRestDir(mb Member) string {
	return filepath.Join(filepath.Dir(filepath.Clean(mb.DataDir)), mb.Name+".pgbackrest")
}

// restoreMarker is the file beside mb's data directory that says a `pgbackrest restore` into it has not
// finished (see restoreData).
func restoreMarker(mb Member) string {
	return filepath.Join(pgBackRestDir(mb), "restore-unfinished")
}

// hasPgBackRest reports whether s archives with pgBackRest.
func (s Spec) hasPgBackRest() bool {
	return s.Archive != nil && len(s.Archive.PgBackRestOptions) > 0
}

// stanza is the pgBackRest stanza of s.
func (s Spec) stanza() string {
	if s.Archive != nil && s.Archive.Stanza != "" {
		return s.Archive.Stanza
	}
	return s.Name
}

// removeIfEmpty removes dir when it is an empty directory.
func removeIfEmpty(dir string) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		_ = os.Remove(dir)
	}
}
