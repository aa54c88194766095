package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cgroup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Platform is the local platform of pgnvme_cluster: it turns a cluster.Spec into PostgreSQL processes on
// this machine. One Platform lives for the provider process; it keeps one Manager per server user and
// PostgreSQL major, so that two clusters of different majors run side by side, each on its own major's
// binaries, and what a Manager caches (its server's version) is read once.
type Platform struct {
	mu         sync.Mutex
	managers   map[managerKey]*Manager
	cgroupRoot string
}

// NewPlatform is the local platform.
func NewPlatform() *Platform { return NewPlatformWithOptions(Options{}) }

// NewPlatformWithOptions is the local platform with the Manager options it uses for every server user
// (o.RunAsUser and o.Major are ignored: they come from each cluster's spec). Tests give another CgroupRoot.
func NewPlatformWithOptions(o Options) *Platform {
	return &Platform{managers: map[managerKey]*Manager{}, cgroupRoot: o.CgroupRoot}
}

// specOf is s as the adapter's Spec: each node with its identity on this machine (prior members keep
// theirs).
func specOf(s cluster.Spec, prior []cluster.Member) (Spec, error) {
	b := localspec.Of(s)
	if b == nil {
		return Spec{}, errors.New("the cluster has no local block: this is a bug in the provider, please report it")
	}
	out := Spec{Name: s.Name, Synchronous: s.Synchronous, Parameters: s.Parameters, Archive: s.Archive, RunAsUser: b.RunAsUser, Limits: b.Limits,
		Restore: restoreFromOf(s), AcceptLossAt: s.AcceptDataLossAtLSN}
	for _, m := range localspec.Assign(s, prior) {
		out.Members = append(out.Members, Member{Name: m.Name, Zone: m.Zone, Port: m.Port, DataDir: m.DataDir})
	}
	if s.TLS != nil {
		policy := s.TLS.Policy
		out.TLS = &policy
	}
	return out, out.setTLSFiles()
}

// open is the Manager for s and s as the adapter's Spec. For a cluster that exists (prior members), the
// members' own disks are attached again when a restart of the machine detached them, so their data is
// where it is looked for.
func (p *Platform) open(ctx context.Context, s cluster.Spec, prior []cluster.Member) (*Manager, Spec, error) {
	m, err := p.manager(s)
	if err != nil {
		return nil, Spec{}, err
	}
	ls, err := specOf(s, prior)
	if err != nil {
		return m, ls, err
	}
	if ls.Major, err = m.PostgresMajor(ctx); err != nil {
		return m, ls, err
	}
	if len(prior) > 0 {
		if err := m.AttachDisks(ctx, ls); err != nil {
			return m, ls, err
		}
	}
	if len(prior) > 0 || resumable(ls) {
		if ls.tlsDiffer, err = m.observeTLS(&ls); err != nil {
			return m, ls, err
		}
	}
	return m, ls, nil
}

// wanted are ls's members as the neutral model, no role or state yet.
func (m *Manager) wanted(ls Spec) []cluster.Member {
	out := make([]cluster.Member, 0, len(ls.Members))
	for _, mb := range ls.Members {
		out = append(out, m.neutral(ls, mb, "", ""))
	}
	return out
}

// neutral is member mb of ls as the neutral model, with its limits' cgroup and device.
func (m *Manager) neutral(ls Spec, mb Member, role, state string) cluster.Member {
	out := cluster.Member{Name: mb.Name, Zone: mb.Zone, Role: role, State: state, Host: Host, Port: mb.Port, DataDir: mb.DataDir}
	if ls.Limits != nil {
		out.Cgroup = CgroupName(ls, mb)
		out.BlockDevice = m.memberDevice(ls, mb)
	}
	return out
}

// members converts statuses to the neutral members.
func (m *Manager) members(ls Spec, st []Status) []cluster.Member {
	out := make([]cluster.Member, 0, len(st))
	for _, x := range st {
		out = append(out, m.neutral(ls, x.Member, x.Role, x.State))
	}
	return out
}

// parameterVersions refuses, each at its parameter, the parameters the installed PostgreSQL major does not
// know (bootstrap.ParameterVersionProblems): the server would not start with them.
func parameterVersions(params map[string]string, major int) error {
	probs := bootstrap.ParameterVersionProblems(params, major)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(probs)) {
		errs = append(errs, &cluster.FieldError{Path: []string{"parameters", name}, Summary: "Invalid Parameter", Detail: probs[name].Error()})
	}
	return errors.Join(errs...)
}

// major is the major version of the binaries m runs, checked against the one s asks for.
func (p *Platform) major(ctx context.Context, m *Manager, s cluster.Spec) (int, error) {
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return 0, &cluster.FieldError{Path: []string{"postgres_major"}, Summary: "PostgreSQL Not Available",
			Detail: "The local platform could not run `postgres --version` of " + m.engine.BinDir() + ". Install PostgreSQL (Debian: apt-get install postgresql-15). " + err.Error()}
	}
	if s.PostgresMajor != 0 && s.PostgresMajor != major {
		return 0, cluster.Errorf([]string{"postgres_major"}, "PostgreSQL Version Not Installed",
			"postgres_major is %d, but the binaries the local platform found for it (%s) are PostgreSQL %d. Install PostgreSQL %d under "+
				"/usr/lib/postgresql/%d/bin or set postgres_major = %d.", s.PostgresMajor, m.engine.BinDir(), major, s.PostgresMajor, s.PostgresMajor, major)
	}
	return major, nil
}

// Plan says what the apply will do: for a new cluster, after checking that it can be created here (or
// resumed: see Create); for an existing one, the repairs topology plans from the live nodes.
func (p *Platform) Plan(ctx context.Context, s cluster.Spec, pr cluster.Prior) (cluster.Plan, error) {
	prior := pr.Members
	m, ls, err := p.open(ctx, s, prior)
	if err != nil {
		return cluster.Plan{}, err
	}
	major, err := p.major(ctx, m, s)
	if err != nil {
		return cluster.Plan{}, err
	}
	if err := parameterVersions(s.Parameters, major); err != nil {
		return cluster.Plan{}, err
	}
	if err := m.CheckLimits(ls); err != nil {
		return cluster.Plan{}, &cluster.FieldError{Path: []string{"local", "limits"}, Summary: "Limits Not Available Here",
			Detail: "The local platform limits each node with Linux cgroups (and, for I/O limits, a loop device per node), and this machine cannot: " +
				"fix what follows, or remove local.limits.\n\n" + err.Error()}
	}
	if err := checkArchiveBucket(ctx, s); err != nil {
		return cluster.Plan{}, err
	}
	out := cluster.Plan{PostgresMajor: major, Platform: &localspec.Status{DurabilityWatcherRunning: WatcherWanted(ls), BackupSchedulerRunning: BackupsWanted(ls)}}
	var actions []topology.Step
	var observed []Status
	known := map[string]string{}
	if len(prior) == 0 {
		restart, err := m.restoreStartsOver(ctx, ls)
		if err != nil {
			return out, err
		}
		if resumable(ls) && !restart {
			st, err := m.Observe(ctx, ls)
			if err != nil {
				return out, fmt.Errorf("reading the unfinished cluster %s: %w", s.Name, err)
			}
			if actions, err = m.PlanSteps(ctx, ls, st); err != nil {
				return out, unrepairable(err)
			}
			out.Actions = "resume the unfinished create of " + s.Name + " (found its manifest):\n" + topology.StepsSummary(actions)
			for _, x := range st {
				known[x.Name] = x.Role
			}
		} else if old, ok := replaced(ls); ok || restart {
			// Terraform plans a replacement as a create while the old cluster still runs: its ports and
			// manifest are in the way now, but not after the apply destroyed it first. An unfinished restore
			// is destroyed the same way before it starts again.
			if restart {
				old = ls
			}
			if err := m.preflight(ctx, ls, &old); err != nil {
				return out, &cluster.FieldError{Path: []string{"local"}, Summary: "Cannot Create Cluster Here",
					Detail: "Nothing was changed. Fix what follows, or choose another local.data_dir or local.port_base.\n\n" + err.Error()}
			}
			out.Actions = fmt.Sprintf("replace the cluster %s: destroy every node (data included) and create it again", s.Name)
			if restart {
				out.Actions = fmt.Sprintf("start the unfinished restore of %s again (found its manifest; no node holds a restored copy yet): remove what it left", s.Name)
			} else if why := localspec.ReplacementReason(old.Limits, ls.Limits); why != "" {
				out.Actions += " (" + why + ")"
			}
		} else if err := m.Preflight(ctx, ls); err != nil {
			return out, &cluster.FieldError{Path: []string{"local"}, Summary: "Cannot Create Cluster Here",
				Detail: "Nothing was created. Fix what follows, or choose another local.data_dir or local.port_base.\n\n" + err.Error()}
		}
		if !resumable(ls) || restart {
			if err := startArchiving(ctx, m, ls); err != nil {
				return out, err
			}
			if err := m.planRestore(ctx, s, &ls); err != nil {
				return out, err
			}
			if ls.Restore != nil {
				restore := ls.Restore.Plan.Summary(ls.Members[0].Name, ls.names()[1:])
				if out.Actions != "" {
					restore = out.Actions + "; then " + restore
				}
				out.Actions = restore
			}
		}
	} else {
		st, err := m.Observe(ctx, ls)
		if err != nil {
			return out, fmt.Errorf("reading the cluster %s: %w", s.Name, err)
		}
		observed = st
		if actions, err = m.PlanSteps(ctx, ls, st); err != nil {
			return out, unrepairable(err)
		}
		if len(actions) > 0 {
			out.Actions = topology.StepsSummary(actions)
		}
		for _, x := range st {
			known[x.Name] = x.Role
		}
	}
	out.Members, out.Promoting = cluster.Planned(m.wanted(ls), known, actions, len(prior) == 0 && len(actions) == 0)
	return out, m.planTLSInto(&out, ls, len(prior) > 0, observed)
}

func unrepairable(err error) error {
	if errors.Is(err, topology.ErrDataLost) {
		return &cluster.FieldError{Path: []string{"nodes"}, Summary: "Cluster Data Lost",
			Detail: "Every node of the cluster is lost with its data directory, and the cluster archives its WAL: its history is in the archive only. " +
				"pgnvme restores such a cluster from its archive's newest base backup, and does not create an empty cluster over that history " +
				"(its archiving would then fail or write a second history beside the first). Nothing was changed. When the archive cannot be read, " +
				"make it readable and plan again. When it holds no base backup, its WAL alone cannot rebuild the database: to give up that history, " +
				"remove archive from the configuration (a new, empty cluster without archiving) or point it at a new repository or stanza.\n\n" + err.Error()}
	}
	return &cluster.FieldError{Path: []string{"nodes"}, Summary: "Cluster Cannot Be Repaired Automatically",
		Detail: "pgnvme will not choose for you where choosing could lose acknowledged commits. Resolve what follows by hand " +
			"(start the node that holds the newest data, or remove the one that must go), then plan again.\n\n" + err.Error()}
}

// Create builds the cluster, or finishes an unfinished create of the same cluster (see resumable), and
// reports it as observed. On error the status holds whatever exists (nothing when Members is empty).
func (p *Platform) Create(ctx context.Context, s cluster.Spec) (cluster.Status, error) {
	m, ls, err := p.open(ctx, s, nil)
	if err != nil {
		return cluster.Status{}, err
	}
	restart, err := m.restoreStartsOver(ctx, ls)
	if err != nil {
		return cluster.Status{}, err
	}
	if restart {
		tflog.Info(ctx, "removing what an unfinished restore left before starting it again", map[string]any{"name": s.Name})
		if err := m.Destroy(ctx, ls); err != nil {
			return cluster.Status{}, err
		}
	} else if resumable(ls) {
		tflog.Info(ctx, "resuming the unfinished create of a local cluster", map[string]any{"name": s.Name})
		if err := p.applyTLS(ctx, m, &ls); err != nil {
			return p.status(ctx, m, ls, true), fmt.Errorf("resuming the unfinished create of %s: %w", s.Name, err)
		}
		if err := p.reconcile(ctx, m, ls); err != nil {
			return p.status(ctx, m, ls, true), fmt.Errorf("resuming the unfinished create of %s: %w", s.Name, err)
		}
		return p.status(ctx, m, ls, true), nil
	}
	if err := startArchiving(ctx, m, ls); err != nil {
		return cluster.Status{}, err
	}
	if err := m.planRestore(ctx, s, &ls); err != nil {
		return cluster.Status{}, err
	}
	if _, err := m.prepareTLS(ls, nil); err != nil {
		return cluster.Status{}, err
	}
	tflog.Info(ctx, "creating local cluster", map[string]any{"name": s.Name, "nodes": len(ls.Members)})
	created, err := m.Create(ctx, ls)
	if err != nil {
		if len(created) == 0 {
			return cluster.Status{}, err
		}
		return p.status(ctx, m, ls, true), fmt.Errorf("created %s before this error; they are recorded in state and the next apply repairs "+
			"or replaces them: %w", strings.Join(created, ", "), err)
	}
	return p.status(ctx, m, ls, true), nil
}

// reconcile repairs ls as it is now and applies its settings, the steps topology decides (Reconcile);
// without steps it still sets synchronous_standby_names for the primary and rewrites the manifest.
func (p *Platform) reconcile(ctx context.Context, m *Manager, ls Spec) error {
	_, err := m.Reconcile(ctx, ls)
	if r := (refused{}); errors.As(err, &r) {
		return unrepairable(r.error)
	}
	return err
}

// status enforces durability for the current health when enforce is set (after an apply), then reads
// every member, the synchronous setting and the watcher.
func (p *Platform) status(ctx context.Context, m *Manager, ls Spec, enforce bool) cluster.Status {
	var out cluster.Status
	if enforce {
		if _, _, err := m.EnforceDurability(ctx, ls); err != nil {
			out.Warnings = append(out.Warnings, "The synchronous setting was not enforced: "+err.Error())
		}
	}
	st, err := m.Observe(ctx, ls)
	if err != nil {
		out.Warnings = append(out.Warnings, "The cluster could not be read: "+err.Error())
		return out
	}
	out.Members = m.members(ls, st)
	if major, err := m.PostgresMajor(ctx); err == nil {
		out.PostgresMajor = major
	}
	out.SynchronousStandbyNames, out.Degraded, out.SynchronousKnown, err = m.SynchronousNow(ctx, ls, st)
	switch {
	case err != nil:
		out.Warnings = append(out.Warnings, "synchronous_standby_names could not be read on the primary, so it is recorded as unknown (null): "+err.Error())
	case !out.SynchronousKnown:
		out.Warnings = append(out.Warnings, "No single primary runs, so synchronous_standby_names could not be read and is recorded as unknown (null); the next apply repairs the cluster.")
	}
	if out.Archive, err = m.ArchiveHealth(ctx, ls, st); err != nil {
		out.Warnings = append(out.Warnings, "The archive could not be read, so archive_status is unknown (null): "+err.Error())
	}
	running, err := m.WatcherRunning(ls)
	if err != nil {
		out.Warnings = append(out.Warnings, "Whether the durability watcher runs could not be checked: "+err.Error())
	}
	scheduling, err := m.BackupSchedulerRunning(ls)
	if err != nil {
		out.Warnings = append(out.Warnings, "Whether the backup scheduler runs could not be checked: "+err.Error())
	}
	out.Platform = &localspec.Status{DurabilityWatcherRunning: running, BackupSchedulerRunning: scheduling}
	if out.TLS, err = tlsStatus(ls, m.engine.Superuser()); err != nil {
		out.Warnings = append(out.Warnings, "The cluster's certificates could not be read, so tls.not_after is unknown (null); the next apply issues what is missing: "+err.Error())
	}
	if out.Restored, err = readRestored(ls); err != nil {
		out.Warnings = append(out.Warnings, "What the restore that created the cluster did could not be read: "+err.Error())
	}
	return out
}

// Read observes the cluster and changes nothing.
func (p *Platform) Read(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error) {
	m, ls, err := p.open(ctx, s, prior.Members)
	if err != nil {
		return cluster.Status{}, err
	}
	if _, err := m.Observe(ctx, ls); err != nil {
		return cluster.Status{}, fmt.Errorf("reading the cluster %s: %w", s.Name, err)
	}
	return p.status(ctx, m, ls, false), nil
}

// Update repairs what is lost and applies settings (a reload, or restarts one member at a time), the steps
// topology decides, then applies the limits.
func (p *Platform) Update(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error) {
	m, ls, err := p.open(ctx, s, prior.Members)
	if err != nil {
		return cluster.Status{}, err
	}
	if err := p.applyTLS(ctx, m, &ls); err != nil {
		return p.status(ctx, m, ls, true), fmt.Errorf("%w; the state records what was observed, apply again to continue", err)
	}
	if err := p.reconcile(ctx, m, ls); err != nil {
		return p.status(ctx, m, ls, true), fmt.Errorf("repairing the cluster and applying its settings: %w; the state records what was observed, apply again to continue", err)
	}
	if err := m.ApplyLimits(ctx, ls); err != nil {
		return p.status(ctx, m, ls, true), fmt.Errorf("applying limits: %w", err)
	}
	return p.status(ctx, m, ls, true), nil
}

// Delete stops and removes every member and what the platform made for them; never the archive.
func (p *Platform) Delete(ctx context.Context, s cluster.Spec, pr cluster.Prior) error {
	prior := pr.Members
	m, err := p.manager(s)
	if err != nil {
		return err
	}
	ls, err := specOf(s, prior)
	if err != nil {
		return err
	}
	tflog.Info(ctx, "destroying local cluster", map[string]any{"name": s.Name})
	return m.Destroy(ctx, ls)
}

// ImportPrefix starts a local import ID: "local:<data_dir>".
const ImportPrefix = "local:"

// Import rebuilds a cluster's configuration and members from the manifest under the data directory the
// import ID names ("local:<data_dir>").
func (p *Platform) Import(_ context.Context, id string) (cluster.Spec, []cluster.Member, error) {
	dir, ok := strings.CutPrefix(id, ImportPrefix)
	if !ok || !filepath.IsAbs(dir) {
		return cluster.Spec{}, nil, fmt.Errorf("import ID %q: a local cluster is imported as local:<data_dir>, such as local:/var/lib/pgnvme/demo", id)
	}
	root := filepath.Clean(dir)
	ls, err := ReadManifest(root)
	if errors.Is(err, ErrNoManifest) {
		return cluster.Spec{}, nil, fmt.Errorf("%s holds no pgnvme cluster manifest: import takes the local.data_dir of a cluster this provider created: %w", root, err)
	}
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	b := &localspec.Block{DataDir: root, RunAsUser: ls.RunAsUser, Limits: ls.Limits}
	s := cluster.Spec{Name: ls.Name, PostgresMajor: recordedMajor(root), Synchronous: ls.Synchronous, Parameters: maps.Clone(ls.Parameters), Archive: ls.Archive, Block: b}
	if ls.TLS != nil {
		s.TLS = &cluster.TLS{Policy: *ls.TLS}
	}
	prior := make([]cluster.Member, 0, len(ls.Members))
	for _, mb := range ls.Members {
		s.Nodes = append(s.Nodes, cluster.Node{Name: mb.Name, Zone: mb.Zone})
		prior = append(prior, cluster.Member{Name: mb.Name, Zone: mb.Zone, Host: Host, Port: mb.Port, DataDir: mb.DataDir})
		if b.PortBase == 0 || mb.Port < b.PortBase {
			b.PortBase = mb.Port
		}
	}
	return s, slices.Clip(prior), nil
}

// Exists reports whether anything of the cluster is left on this machine (a data directory or the
// manifest): the destroy check of the tests and the disappears case.
func (p *Platform) Exists(s cluster.Spec, prior []cluster.Member) (bool, error) {
	ls, err := specOf(s, prior)
	if err != nil {
		return false, err
	}
	for _, mb := range ls.Members {
		if hasData(mb) {
			return true, nil
		}
		if ls.Limits.Device() {
			if _, err := os.Stat(DiskImage(mb)); err == nil {
				return true, nil
			}
		}
		if cgroup.Open(p.cgroupRoot).Exists(CgroupName(ls, mb)) {
			return true, nil
		}
	}
	root, err := DataDirRoot(ls)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(ManifestPath(root)); err == nil {
		return true, nil
	}
	return false, nil
}
