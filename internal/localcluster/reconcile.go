package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Reconcile repairs s the way topology decides for a cluster the engine promotes in: it observes the
// members, executes the one step topology.Next returns, and observes again, until Next is done, so each
// step is finished (a copied, repointed or started standby streaming) before the next is decided:
//
//   - form: the first member initialised as the primary (a new cluster, or one whose every member was
//     lost without an archive); restore: the primary made from the archive (restorePrimary).
//   - promote: the complete WAL segments it received handed to its archiver (an archived cluster), pg_ctl
//     promote, the wait until it takes writes, then every other running standby it names pointed at it.
//   - repoint: primary_conninfo rewritten to Source, then a restart.
//   - start: a standby pointed at Source first; the primary started in place (its running standbys
//     stream from it again).
//   - add, replace, reseed: the member's data directory destroyed (replace, reseed), then copied again as
//     a standby of Source (from the archive when it holds a backup, else with pg_basebackup) and started.
//   - remove: the member stopped and its data destroyed; a member s no longer lists is found in the
//     manifest (see Observe).
//
// Then every member's synchronous_standby_names is set for the (possibly new) primary, the effective
// value on the primary per data durability, Reconcile waits until every other member streams, and the
// manifest is rewritten with s. Each step is logged with tflog.Info before it runs ("step N of M", M the
// number the plan listed). It returns the steps executed. The durability watcher is stopped while it runs
// and started again (data durability "preferred") when it returns, also after an error.
func (m *Manager) Reconcile(ctx context.Context, s Spec) (done []topology.Step, err error) {
	resume, err := m.pauseWatcher(ctx, s, &err)
	if err != nil {
		return nil, err
	}
	defer resume()
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return nil, err
	}
	planned := -1
	for {
		st, err := m.Observe(ctx, s)
		if err != nil {
			return done, err
		}
		c, err := m.repairCluster(ctx, s, st)
		if err != nil {
			return done, err
		}
		if planned < 0 {
			steps, err := topology.Steps(c)
			if err != nil {
				return nil, refused{err}
			}
			planned = len(steps)
			if planned > 0 {
				tflog.Info(ctx, "reconciling the cluster", map[string]any{"steps": topology.StepsSummary(steps)})
			}
		}
		step, finished, err := topology.Next(c)
		if err != nil {
			return done, refused{err}
		}
		if finished {
			break
		}
		if len(done) > planned+len(c.Members) {
			return done, fmt.Errorf("the repair of %s did not finish after %d steps (%s): this is a bug in the provider", s.Name, len(done), topology.StepsSummary(done))
		}
		tflog.Info(ctx, fmt.Sprintf("cluster %s: step %d of %d: %s", s.Name, len(done)+1, max(planned, len(done)+1), step), map[string]any{
			"action": string(step.Kind), "node": step.Node, "nodes": step.Nodes, "source": step.Source, "reason": step.Reason,
		})
		if err := m.do(ctx, s, major, step, c, st); err != nil {
			return done, fmt.Errorf("%s (step %d): %w", step, len(done)+1, err)
		}
		done = append(done, step)
	}
	primary, err := m.runningPrimary(ctx, s)
	if err != nil {
		return done, err
	}
	if err := m.settle(ctx, s, major, primary); err != nil {
		return done, err
	}
	return done, writeManifest(s)
}

// refused is the engine's refusal (topology.Next or Steps): what the apply cannot decide for the user,
// as opposed to a step that failed.
type refused struct{ error }

func (r refused) Unwrap() error { return r.error }

// do runs one step; c is the cluster it was decided on, st the observation it was decided from.
func (m *Manager) do(ctx context.Context, s Spec, major int, step topology.Step, c topology.Cluster, st []Status) error {
	if step.Kind == topology.StepConfigure {
		ch, err := m.settingsChangeOf(ctx, s, major, st)
		if err != nil || ch == nil {
			return err
		}
		return m.configure(ctx, s, ch, st)
	}
	node := step.Node
	if node == "" && len(step.Nodes) == 1 {
		node = step.Nodes[0] // form and restore make one member here: the primary
	}
	mb, ok := s.member(node)
	if !ok && step.Kind == topology.StepRemove {
		i := slices.IndexFunc(formerMembers(s), func(f Member) bool { return f.Name == node })
		if i < 0 {
			return fmt.Errorf("node %s cannot be removed: neither the spec nor the cluster manifest lists it, so its data directory is unknown", node)
		}
		mb, ok = formerMembers(s)[i], true
	}
	if !ok {
		return fmt.Errorf("node %s is not a member of the cluster", node)
	}
	var source Member
	if step.Source != "" {
		if source, ok = s.member(step.Source); !ok {
			return fmt.Errorf("source %s is not a member of the cluster", step.Source)
		}
	}
	// followers are the other running standbys the configuration names: a promotion points them at the
	// new primary, and a primary started in place has them stream from it again.
	var followers []Member
	for _, x := range c.Members {
		if f, ok := s.member(x.Name); ok && x.Name != node && x.Machine == topology.MachineLive && x.Running && x.Role == topology.RoleStandby {
			followers = append(followers, f)
		}
	}
	n := Node(mb, localnode.RoleStandby)
	switch step.Kind {
	case topology.StepRenew:
		return m.renewMember(ctx, s, mb, st)
	case topology.StepPromote:
		if s.Archive != nil {
			if err := m.handOverWAL(ctx, mb, n); err != nil {
				return err
			}
		}
		if err := m.engine.Promote(ctx, n); err != nil {
			return err
		}
		if err := m.waitPrimary(ctx, mb); err != nil {
			return err
		}
		for _, f := range followers {
			tflog.Info(ctx, fmt.Sprintf("cluster %s: pointing standby %s at the new primary %s", s.Name, f.Name, mb.Name))
			if err := m.repoint(ctx, s, f, mb); err != nil {
				return err
			}
		}
		return nil
	case topology.StepRepoint:
		return m.repoint(ctx, s, mb, source)
	case topology.StepReseed, topology.StepReplace, topology.StepAdd:
		if err := m.engine.Destroy(ctx, n); err != nil {
			return err
		}
		if err := m.createStandby(ctx, s, major, mb, source); err != nil {
			return err
		}
		return m.waitFollowing(ctx, source, mb)
	case topology.StepStart:
		if step.Source == "" {
			role, err := m.engine.ConfiguredRole(n)
			if err != nil {
				return err
			}
			n.Role = role
			restored := role == localnode.RolePrimary && restoring(mb) // a restore's replay, stopped half-way
			if err := m.start(ctx, s, mb, n); err != nil {
				return err
			}
			switch {
			case restored:
				return m.waitRestored(ctx, mb)
			case role == localnode.RolePrimary:
				if err := m.waitPrimary(ctx, mb); err != nil {
					return err
				}
				var names []string
				for _, f := range followers {
					names = append(names, f.Name)
				}
				return m.waitStreaming(ctx, mb, names, nil)
			}
			return nil
		}
		if err := m.engine.Repoint(ctx, n, Node(source, localnode.RolePrimary)); err != nil {
			return err
		}
		if err := m.start(ctx, s, mb, n); err != nil {
			return err
		}
		return m.waitFollowing(ctx, source, mb)
	case topology.StepForm:
		return m.createPrimary(ctx, s, major, mb)
	case topology.StepRestore:
		return m.restorePrimary(ctx, s, major, mb)
	case topology.StepRemove:
		if err := m.engine.Destroy(ctx, n); err != nil {
			return err
		}
		if err := os.RemoveAll(pgBackRestDir(mb)); err != nil {
			return err
		}
		if err := m.removeLimits(ctx, s, mb); err != nil {
			return err
		}
		return forgetMember(s, mb.Name)
	case topology.StepRestart:
		if err := m.restartMember(ctx, s, mb, c); err != nil {
			return err
		}
		if m.afterRestart != nil {
			m.afterRestart(ctx, mb.Name)
		}
		return nil
	default:
		return fmt.Errorf("provider bug: the local platform has no step %q (%s)", step.Kind, step)
	}
}

// createPrimary initialises and starts mb as a new primary (asynchronous
// until settle applies the quorum), with the archive's stanza and backup.
func (m *Manager) createPrimary(ctx context.Context, s Spec, major int, mb Member) error {
	r, err := m.preparePrimary(ctx, s, major, mb)
	if err != nil {
		return err
	}
	n := Node(mb, localnode.RolePrimary)
	if err := m.engine.InitPrimary(ctx, n, r.Parameters); err != nil {
		return err
	}
	if err := m.start(ctx, s, mb, n); err != nil {
		return err
	}
	if s.hasPgBackRest() {
		return m.archiveBootstrap(ctx, s, mb)
	}
	return nil
}

// preparePrimary makes what a new primary mb needs before its data directory is filled: the data directory
// root (a cluster whose every member was lost may have lost it too), its limits (and its own device, which
// holds the pgBackRest directory) and its pgBackRest directory and configuration; and returns its rendering
// as the primary (asynchronous until settle applies the quorum).
func (m *Manager) preparePrimary(ctx context.Context, s Spec, major int, mb Member) (bootstrap.Rendered, error) {
	root, err := DataDirRoot(s)
	if err != nil {
		return bootstrap.Rendered{}, err
	}
	if err := m.engine.MkdirAllOwned(root, 0o755); err != nil {
		return bootstrap.Rendered{}, fmt.Errorf("creating the data directory root %s: %w", root, err)
	}
	async := ""
	r, err := m.render(s, major, mb, localnode.RolePrimary, mb, &async)
	if err != nil {
		return bootstrap.Rendered{}, err
	}
	if err := m.prepareMember(ctx, s, mb); err != nil {
		return bootstrap.Rendered{}, err
	}
	if s.hasPgBackRest() {
		if err := m.writePgBackRest(mb, r); err != nil {
			return bootstrap.Rendered{}, err
		}
	}
	return r, nil
}

// restorePrimary makes mb the primary from the archive, every member being lost: `pgbackrest restore` of
// the newest backup (an unfinished restore's leftovers destroyed first, see restoreData), then archive
// recovery to the end of the archive, which PostgreSQL ends by starting the next timeline; it then
// archives to the same stanza (the same system, its own history) and, with BackupOnCreate, takes a full
// backup on the new timeline, so that the next restore replays no more than it must.
func (m *Manager) restorePrimary(ctx context.Context, s Spec, major int, mb Member) error {
	if !s.hasPgBackRest() {
		return fmt.Errorf("node %s cannot be restored: the cluster has no pgBackRest archive", mb.Name)
	}
	r, err := m.preparePrimary(ctx, s, major, mb)
	if err != nil {
		return err
	}
	tflog.Info(ctx, "restoring the primary from the archive (pgbackrest restore, then archive recovery to its end)", map[string]any{"node": mb.Name, "stanza": s.stanza()})
	if err := m.recoverFrom(ctx, s, mb, r.Parameters, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), s.stanza(), "--type=default"); err != nil {
		return fmt.Errorf("restoring %s from the archive: %w", mb.Name, err)
	}
	if !s.Archive.BackupOnCreate {
		return nil
	}
	tflog.Info(ctx, "taking a full pgBackRest backup of the restored primary", map[string]any{"stanza": s.stanza(), "node": mb.Name})
	_, err = m.runPgBackRest(ctx, s, mb, "--type=full", "backup")
	return err
}

// recoverFrom makes mb a server recovered from an archive: `pgbackrest restore` with args from the archive of
// configuration conf and stanza (restoreDataWith), mb's parameters, a start (with s's limits), and the wait
// for the end of its archive recovery (waitRestored). The restore of a lost cluster, of a restore block and
// a restore drill all go this way.
func (m *Manager) recoverFrom(ctx context.Context, s Spec, mb Member, params map[string]string, conf, stanza string, args ...string) error {
	if err := m.restoreDataWith(ctx, conf, stanza, mb, args...); err != nil {
		return err
	}
	n := Node(mb, localnode.RolePrimary)
	if err := m.engine.SetParameters(n, params); err != nil {
		return err
	}
	if err := m.start(ctx, s, mb, n); err != nil {
		return err
	}
	return m.waitRestored(ctx, mb)
}

// restoreData fills mb's data directory with `pgbackrest restore` and args. A marker beside the data
// directory (restoreMarker) says a restore is under way until it finished: Observe reads a data directory
// with the marker as missing (its copy is incomplete), and the next restore destroys it first.
func (m *Manager) restoreData(ctx context.Context, s Spec, mb Member, args ...string) error {
	return m.restoreDataWith(ctx, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), s.stanza(), mb, args...)
}

// restoreDataWith is restoreData from the archive of pgBackRest configuration conf and stanza.
func (m *Manager) restoreDataWith(ctx context.Context, conf, stanza string, mb Member, args ...string) error {
	n := Node(mb, localnode.RoleStandby)
	marker := restoreMarker(mb)
	if _, err := os.Stat(marker); err == nil {
		tflog.Info(ctx, "destroying an unfinished restore's data directory", map[string]any{"node": mb.Name})
		if err := m.engine.Destroy(ctx, n); err != nil {
			return err
		}
	}
	if err := m.engine.PrepareDataDir(n); err != nil {
		return err
	}
	if err := m.engine.WriteFileOwned(marker, []byte("pgbackrest restore "+strings.Join(args, " ")+"\n"), 0o640); err != nil {
		return err
	}
	if _, err := m.runPgBackRestWith(ctx, conf, stanza, mb, append(args, "restore")...); err != nil {
		return err
	}
	return os.Remove(marker)
}

// handOverWAL hands the complete WAL segments standby mb received to its own archiver before it is
// promoted (bootstrap.SegmentsToHandOver): those the lost primary had not archived would otherwise be a
// hole in the archive for good.
func (m *Manager) handOverWAL(ctx context.Context, mb Member, n localnode.Node) error {
	status, err := m.engine.ArchiveStatus(n)
	if err != nil {
		return err
	}
	walFiles, err := m.engine.WALFiles(n)
	if err != nil {
		return err
	}
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return fmt.Errorf("reading the WAL %s received: %w", mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	firstIncomplete, err := conn.QueryText(ctx, bootstrap.HandOverQuery)
	if err != nil {
		return fmt.Errorf("reading the WAL %s received: %w", mb.Name, err)
	}
	segs := bootstrap.SegmentsToHandOver(status, walFiles, firstIncomplete)
	tflog.Info(ctx, "handing the WAL it received to the archiver before the promotion", map[string]any{"node": mb.Name, "segments": len(segs), "first_incomplete": firstIncomplete})
	return m.engine.MarkReady(n, segs)
}

// restart stops mb (fast) and starts it again (in its cgroup, with limits).
func (m *Manager) restart(ctx context.Context, s Spec, mb Member) error {
	n := Node(mb, localnode.RoleStandby)
	if err := m.engine.Stop(ctx, n, "fast"); err != nil {
		return err
	}
	return m.start(ctx, s, mb, n)
}

// runningPrimary is the one member that runs as a primary.
func (m *Manager) runningPrimary(ctx context.Context, s Spec) (Member, error) {
	st, err := m.Observe(ctx, s)
	if err != nil {
		return Member{}, err
	}
	var found []Member
	for _, x := range st {
		if x.State == StateRunning && x.Role == topology.RolePrimary {
			found = append(found, x.Member)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Member{}, fmt.Errorf("no member of cluster %s runs as the primary: plan again (topology decides what to start or promote)", s.Name)
	default:
		return Member{}, fmt.Errorf("%d members of cluster %s run as primaries (%s and %s ...): resolve the split brain by hand", len(found), s.Name, found[0].Name, found[1].Name)
	}
}

// settle sets synchronous_standby_names on every member with a data
// directory for primary (on the primary the effective value for the standbys
// that stream, per data durability), reloads the running ones, and waits
// until every other member streams and the primary applies the value. It
// removes the durability watcher's ALTER SYSTEM value from every running
// member (the watcher must be stopped).
func (m *Manager) settle(ctx context.Context, s Spec, major int, primary Member) error {
	var standbys []string
	for _, mb := range s.Members {
		if mb.Name != primary.Name {
			standbys = append(standbys, mb.Name)
		}
	}
	if err := m.waitStreaming(ctx, primary, standbys, nil); err != nil {
		return err
	}
	value, err := m.effective(s, major, primary, standbys)
	if err != nil {
		return err
	}
	for _, mb := range s.Members {
		want := value
		if mb.Name != primary.Name {
			r, err := m.render(s, major, mb, localnode.RoleStandby, primary, nil)
			if err != nil {
				return err
			}
			want = r.Parameters["synchronous_standby_names"]
		}
		if err := m.setSynchronousNames(ctx, mb, want); err != nil {
			return err
		}
	}
	for _, mb := range s.Members {
		// The durability watcher's ALTER SYSTEM value would override pgnvme.conf: remove
		// it once pgnvme.conf has the value.
		if _, running, err := m.engine.Running(Node(mb, localnode.RoleStandby)); err != nil {
			return err
		} else if running {
			if err := m.clearOverride(ctx, mb); err != nil {
				return err
			}
		}
	}
	return m.waitStreaming(ctx, primary, standbys, &value)
}

// effective is synchronous_standby_names for primary with healthy standbys.
func (m *Manager) effective(s Spec, major int, primary Member, healthy []string) (string, error) {
	c := m.cluster(s, major, primary)
	if healthy == nil {
		healthy = []string{}
	}
	return bootstrapEffective(c, primary.Name, healthy)
}

// setSynchronousNames writes synchronous_standby_names = value into mb's
// settings and reloads it when it runs; nothing when it already has it.
func (m *Manager) setSynchronousNames(ctx context.Context, mb Member, value string) error {
	n := Node(mb, localnode.RoleStandby)
	if _, err := os.Stat(filepath.Join(mb.DataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		return nil // no data: it gets its settings when it is created
	} else if err != nil {
		return err
	}
	p, err := m.engine.Parameters(n)
	if err != nil {
		return err
	}
	if cur, ok := p["synchronous_standby_names"]; ok && cur == value {
		return nil
	}
	p["synchronous_standby_names"] = value
	if err := m.engine.SetParameters(n, p); err != nil {
		return err
	}
	if _, running, err := m.engine.Running(n); err != nil || !running {
		return err
	}
	return m.engine.Reload(ctx, n)
}
