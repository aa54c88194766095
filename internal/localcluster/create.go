package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// Preflight checks, creating nothing, that s can be created on this machine:
// the spec is one bootstrap renders (names, synchronous, parameters,
// archive), every member's port is free on 127.0.0.1, its data directory
// and pgBackRest directory are absent or empty and reachable by the server's
// user, no manifest is in the way, and the binaries (pgbackrest with an
// archive, setsid for the durability watcher) are installed. The error lists every problem with what to do.
func (m *Manager) Preflight(ctx context.Context, s Spec) error {
	return m.preflight(ctx, s, nil)
}

// preflight is Preflight; with replacing (the cluster a replacement destroys before it creates s), the
// ports, data directories and manifest that cluster holds now do not count as taken.
func (m *Manager) preflight(ctx context.Context, s Spec, replacing *Spec) error {
	var errs []error
	if err := s.check(); err != nil {
		return err
	}
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	if s.Archive != nil && len(s.Archive.WALGEnv) > 0 {
		errs = append(errs, errors.New("the local platform archives with pgBackRest: give pgbackrest_options instead of walg_env"))
	}
	if WatcherWanted(s) {
		if _, err := exec.LookPath("setsid"); err != nil {
			errs = append(errs, errors.New("data durability \"preferred\" runs a durability watcher with setsid, which is not installed: install util-linux"))
		}
	}
	if s.hasPgBackRest() && m.pgbackrest == "" {
		errs = append(errs, errors.New("pgBackRest is not installed and the archive needs it: install the pgbackrest package (apt-get install pgbackrest)"))
	}
	if BackupsWanted(s) {
		if _, err := backupTools(); err != nil {
			errs = append(errs, err)
		}
		if _, err := exec.LookPath("setsid"); err != nil && !WatcherWanted(s) {
			errs = append(errs, errors.New("the archive's scheduled backups run in a detached scheduler started with setsid, which is not installed: install util-linux"))
		}
	}
	if err := m.CheckLimits(s); err != nil {
		errs = append(errs, fmt.Errorf("local.limits: %w", err))
	}
	if major > 0 {
		primary := s.Members[0]
		var rerr error
		for i, mb := range s.Members {
			role := localnode.RoleStandby
			if i == 0 {
				role = localnode.RolePrimary
			}
			if _, err := m.render(s, major, mb, role, primary, nil); err != nil {
				rerr = err // bootstrap reports the cluster's problems once per node: keep one
			}
		}
		if rerr != nil {
			errs = append(errs, rerr)
		}
	}
	taken := map[int]bool{}
	if replacing != nil {
		for _, mb := range replacing.Members {
			taken[mb.Port] = true
		}
	}
	for _, mb := range s.Members {
		check := m.engine.Preflight
		if taken[mb.Port] {
			check = m.engine.PreflightData
		}
		if err := check(Node(mb, localnode.RoleStandby)); err != nil {
			if replacing == nil || !isOldDataDir(*replacing, mb) {
				errs = append(errs, err)
			}
		}
		if s.hasPgBackRest() && (replacing == nil || !isOldDataDir(*replacing, mb)) {
			if err := emptyOrAbsent(pgBackRestDir(mb)); err != nil {
				errs = append(errs, fmt.Errorf("node %s: pgBackRest directory: %w", mb.Name, err))
			}
		}
	}
	if root, err := DataDirRoot(s); err == nil && replacing == nil {
		if _, err := os.Stat(ManifestPath(root)); err == nil {
			errs = append(errs, fmt.Errorf("a cluster manifest already exists at %s: another cluster lives under %s; "+
				"import it, destroy it, or choose another data directory", ManifestPath(root), root))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the cluster %s cannot be created: %w", s.Name, err)
	}
	return nil
}

// isOldDataDir reports whether mb's data directory is that of a member of old (destroyed before mb is
// made).
func isOldDataDir(old Spec, mb Member) bool {
	for _, o := range old.Members {
		if filepath.Clean(o.DataDir) == filepath.Clean(mb.DataDir) {
			return true
		}
	}
	return false
}

// check validates the members' identities on this machine (ports and data
// directories, each its own) and localnode's rules. The configuration's
// rules (names, synchronous settings, parameters, archive) are
// cluster.Validate's and bootstrap's.
func (s Spec) check() error {
	if len(s.Members) == 0 {
		return fmt.Errorf("the cluster %s has no members", s.Name)
	}
	var errs []error
	ports, dirs := map[int]string{}, map[string]string{}
	for _, mb := range s.Members {
		if err := Node(mb, localnode.RoleStandby).Validate(); err != nil {
			errs = append(errs, err)
		}
		if other, dup := ports[mb.Port]; dup {
			errs = append(errs, fmt.Errorf("nodes %s and %s both use port %d: give every node its own port", other, mb.Name, mb.Port))
		}
		ports[mb.Port] = mb.Name
		dir := filepath.Clean(mb.DataDir)
		if other, dup := dirs[dir]; dup {
			errs = append(errs, fmt.Errorf("nodes %s and %s both use data directory %s: give every node its own", other, mb.Name, dir))
		}
		dirs[dir] = mb.Name
	}
	return errors.Join(errs...)
}

// hasData reports whether mb's data directory exists with something in it
// (complete or not): Destroy has something to remove.
func hasData(mb Member) bool {
	empty, err := isEmptyOrAbsent(mb.DataDir)
	return err != nil || !empty
}

// emptyOrAbsent fails when dir exists and is not an empty directory.
func emptyOrAbsent(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s exists and is not empty: remove it or choose another data directory", dir)
	}
	return nil
}

// Create builds the cluster s: Preflight; the manifest; the primary
// (Members[0]) initialised and started; with a pgBackRest archive the stanza
// and (BackupOnCreate) a full backup; every standby copied from the archive
// when it holds a backup, else with pg_basebackup, and started; then the
// synchronous setting applied and every standby streaming; last, with data
// durability "preferred", the durability watcher started (see watcher.go).
// It returns the
// names of the members whose data directories it created, in priority
// order, also on error (the caller keeps them in state, or destroys them);
// a member counts once its data directory has anything in it. When it fails
// before creating any, it removes what it made (manifest, pgBackRest
// directories, an empty root).
func (m *Manager) Create(ctx context.Context, s Spec) (created []string, err error) {
	if err := m.Preflight(ctx, s); err != nil {
		return nil, err
	}
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return nil, err
	}
	root, err := DataDirRoot(s)
	if err != nil {
		return nil, err
	}
	if err := m.engine.MkdirAllOwned(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating the data directory root %s: %w", root, err)
	}
	if err := writeManifest(s); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && len(created) == 0 {
			// Nothing to keep in state: leave nothing behind either.
			for _, mb := range s.Members {
				_ = os.RemoveAll(pgBackRestDir(mb))
				_ = os.Remove(Node(mb, localnode.RoleStandby).LogFile())
				_ = m.removeLimits(context.WithoutCancel(ctx), s, mb)
			}
			_ = os.Remove(ManifestPath(root))
			removeIfEmpty(root)
		}
	}()

	primary := s.Members[0]
	if s.Restore != nil {
		err = m.restoreClone(ctx, s, major, primary)
	} else {
		tflog.Info(ctx, "creating the primary", map[string]any{"node": primary.Name, "port": primary.Port, "data_dir": primary.DataDir})
		err = m.createPrimary(ctx, s, major, primary)
	}
	if hasData(primary) {
		created = append(created, primary.Name)
	}
	if err != nil {
		return created, err
	}

	standbys := s.Members[1:]
	errs := make([]error, len(standbys))
	made := make([]bool, len(standbys))
	var wg sync.WaitGroup
	for i, mb := range standbys {
		wg.Go(func() {
			errs[i] = m.createStandby(ctx, s, major, mb, primary)
			made[i] = hasData(mb)
		})
	}
	wg.Wait()
	for i, mb := range standbys {
		if made[i] {
			created = append(created, mb.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return created, err
	}
	if err := m.settle(ctx, s, major, primary); err != nil {
		return created, err
	}
	if err := m.syncWatcher(ctx, s); err != nil {
		return created, err
	}
	tflog.Info(ctx, "cluster created", map[string]any{"cluster": s.Name, "nodes": created})
	return created, nil
}

// createStandby creates member mb as a standby of source (running): from the
// archive with pgbackrest restore --type=standby when the archive holds a
// backup, else with pg_basebackup; writes its settings and starts it. Its
// data directory must be absent or empty.
func (m *Manager) createStandby(ctx context.Context, s Spec, major int, mb, source Member) error {
	n := Node(mb, localnode.RoleStandby)
	src := Node(source, localnode.RolePrimary)
	r, err := m.render(s, major, mb, localnode.RoleStandby, source, nil)
	if err != nil {
		return err
	}
	if r.Parameters, err = m.atPrimaryLimits(ctx, s, mb, source, r.Parameters); err != nil {
		return err
	}
	if err := m.prepareMember(ctx, s, mb); err != nil {
		return err
	}
	fromArchive := false
	if s.hasPgBackRest() {
		if err := m.writePgBackRest(mb, r); err != nil {
			return err
		}
		if fromArchive, err = m.hasBackup(ctx, s, mb); err != nil {
			return err
		}
	}
	if fromArchive {
		tflog.Info(ctx, "creating standby from the archive (pgbackrest restore --type=standby)", map[string]any{"node": mb.Name, "primary": source.Name})
		if err := m.restoreData(ctx, s, mb, "--type=standby"); err != nil {
			return fmt.Errorf("creating standby %s from the archive: %w", mb.Name, err)
		}
		if err := m.engine.SetParameters(n, r.Parameters); err != nil {
			return err
		}
		if err := m.engine.Repoint(ctx, n, src); err != nil {
			return err
		}
	} else {
		tflog.Info(ctx, "creating standby with pg_basebackup", map[string]any{"node": mb.Name, "primary": source.Name})
		if err := m.engine.CreateStandby(ctx, src, n); err != nil {
			return err
		}
		if err := m.engine.SetParameters(n, r.Parameters); err != nil {
			return err
		}
	}
	return m.start(ctx, s, mb, n)
}
