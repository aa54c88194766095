package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// writePgBackRest creates mb's pgBackRest directory (log, lock, spool) and
// writes its pgbackrest.conf, all owned by the server's user.
func (m *Manager) writePgBackRest(mb Member, r bootstrap.Rendered) error {
	return m.writePgBackRestFile(mb, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), r)
}

// writePgBackRestFile is writePgBackRest with the configuration at path (in mb's pgBackRest directory).
func (m *Manager) writePgBackRestFile(mb Member, path string, r bootstrap.Rendered) error {
	dir := pgBackRestDir(mb)
	for _, sub := range []string{"log", "lock", "spool"} {
		if err := m.engine.MkdirAllOwned(filepath.Join(dir, sub), 0o750); err != nil {
			return fmt.Errorf("creating the pgBackRest directories of %s: %w", mb.Name, err)
		}
	}
	if err := m.engine.WriteFileOwned(path, []byte(r.PgBackRestConf), 0o640); err != nil {
		return fmt.Errorf("writing the pgBackRest configuration of %s: %w", mb.Name, err)
	}
	return nil
}

// runPgBackRest runs pgbackrest with mb's configuration and the stanza, as
// the server's user, and returns its standard output.
func (m *Manager) runPgBackRest(ctx context.Context, s Spec, mb Member, args ...string) (string, error) {
	return m.runPgBackRestWith(ctx, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), s.stanza(), mb, args...)
}

// runPgBackRestWith is runPgBackRest with the configuration conf and stanza.
func (m *Manager) runPgBackRestWith(ctx context.Context, conf, stanza string, mb Member, args ...string) (string, error) {
	if m.pgbackrest == "" {
		return "", fmt.Errorf("pgBackRest is not installed: install the pgbackrest package (apt-get install pgbackrest)")
	}
	dir := pgBackRestDir(mb)
	full := append([]string{"--config=" + conf, "--stanza=" + stanza}, args...)
	out, err := m.engine.RunAsServerUser(ctx, dir, m.pgbackrest, full...)
	if err != nil {
		return out, fmt.Errorf("pgbackrest %v for %s: %w", args, mb.Name, err)
	}
	return out, nil
}

// hasBackup reports whether the archive holds a backup of the stanza, as
// seen with mb's configuration.
func (m *Manager) hasBackup(ctx context.Context, s Spec, mb Member) (bool, error) {
	out, err := m.runPgBackRest(ctx, s, mb, "--output=json", "info")
	if err != nil {
		return false, err
	}
	var info []struct {
		Backup []json.RawMessage `json:"backup"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return false, fmt.Errorf("reading pgbackrest info for %s: %w", mb.Name, err)
	}
	return len(info) > 0 && len(info[0].Backup) > 0, nil
}

// archiveBootstrap creates the stanza from the running primary and, with
// BackupOnCreate, takes a full backup.
func (m *Manager) archiveBootstrap(ctx context.Context, s Spec, primary Member) error {
	tflog.Info(ctx, "creating the pgBackRest stanza", map[string]any{"stanza": s.stanza(), "node": primary.Name})
	if _, err := m.runPgBackRest(ctx, s, primary, "stanza-create"); err != nil {
		return err
	}
	if !s.Archive.BackupOnCreate {
		return nil
	}
	tflog.Info(ctx, "taking a full pgBackRest backup", map[string]any{"stanza": s.stanza(), "node": primary.Name})
	if _, err := m.runPgBackRest(ctx, s, primary, "--type=full", "backup"); err != nil {
		return err
	}
	return nil
}

// ArchiveHistory reads what s's archive location holds of clusters' past (`pgbackrest info`), so that a
// cluster never starts archiving over another's history (archive.CheckHistory). A location pgnvme cannot
// name (a repository type other than posix and s3) reads as empty; s without pgBackRest has none.
func (m *Manager) ArchiveHistory(ctx context.Context, s Spec) (archive.History, error) {
	var h archive.History
	ok, err := m.withArchive(ctx, s, func(loc archive.Location, run pgbackrestRun) error {
		out, err := run("--output=json", "info")
		if err != nil {
			return err
		}
		info, err := archive.ParsePgBackRestInfo([]byte(out))
		h = info.History(loc)
		return err
	})
	if !ok || err != nil {
		return archive.History{}, err
	}
	return h, nil
}

// ArchiveHealth reads s's archive (`pgbackrest info` for its backups, `pgbackrest repo-ls` for every WAL
// file and when it was written) and its running primary (the segment it writes), and judges them
// (archive.Assess) at the Manager's clock's now. nil without pgBackRest or for a location pgnvme cannot name.
func (m *Manager) ArchiveHealth(ctx context.Context, s Spec, st []Status) (*archive.Health, error) {
	if !s.hasPgBackRest() {
		return nil, nil
	}
	r := archive.Reading{Tool: archive.ToolPgBackRest, ArchiveTimeout: bootstrap.ArchiveTimeout(s.Parameters), BackupEvery: s.Archive.BackupPolicy().Interval(m.waitClock().Now())}
	return m.readHealth(ctx, s.Archive.PgBackRestOptions, s.stanza(), r, st)
}

// readHealth is ArchiveHealth of the pgBackRest archive opts and stanza, judged with r's settings; the
// running primary among st, if any, writes to it.
func (m *Manager) readHealth(ctx context.Context, opts map[string]string, stanza string, r archive.Reading, st []Status) (*archive.Health, error) {
	ok, err := m.withLocation(ctx, opts, stanza, func(loc archive.Location, run pgbackrestRun) error {
		out, err := run("--output=json", "info")
		if err != nil {
			return err
		}
		info, err := archive.ParsePgBackRestInfo([]byte(out))
		if err != nil {
			return err
		}
		r.Backups = info.Backups
		dir := "archive/" + loc.Stanza // relative to the repository, whatever its type
		if out, err = run("--output=json", "--recurse", "repo-ls", dir); err != nil {
			return err
		}
		if r.WAL, err = archive.ParsePgBackRestListing(dir, []byte(out)); err != nil {
			return err
		}
		r.Verification, err = readVerification(loc, run)
		return err
	})
	if !ok || err != nil {
		return nil, err
	}
	if primary, ok := runningPrimary(st); ok {
		conn, err := m.connect(ctx, primary)
		if err != nil {
			return nil, fmt.Errorf("reading the WAL position of %s: %w", primary.Name, err)
		}
		defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
		pos, err := conn.WALPosition(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the WAL position of %s: %w", primary.Name, err)
		}
		lsn, err := topology.ParseLSN(pos.FlushLSN)
		if err != nil {
			return nil, err
		}
		if r.Failures, err = conn.ArchiverFailures(ctx); err != nil {
			return nil, fmt.Errorf("reading the archiver's failures on %s: %w", primary.Name, err)
		}
		r.Current = archive.SegmentName(uint32(pos.Timeline), lsn)
	}
	h := archive.Assess(r, m.waitClock().Now())
	return &h, nil
}

// readVerification reads the archive's verification record (archive.Location.VerificationPath) with
// `pgbackrest repo-ls` and `repo-get`; nil when the archive holds none.
func readVerification(loc archive.Location, run pgbackrestRun) (*archive.Verification, error) {
	p := loc.VerificationPath()
	out, err := run("--output=json", "repo-ls", path.Dir(p))
	if err != nil {
		return nil, err
	}
	files, err := archive.ParsePgBackRestListing(path.Dir(p), []byte(out))
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(files, func(o archive.Object) bool { return o.Key == p }) {
		return nil, nil
	}
	if out, err = run("repo-get", p); err != nil {
		return nil, err
	}
	return archive.ParseVerification([]byte(out))
}

// pgbackrestRun runs pgbackrest with the arguments for one stanza and returns its standard output.
type pgbackrestRun func(args ...string) (string, error)

// withArchive calls f with s's archive location and a way to run pgbackrest for its stanza as the server's
// user, with a configuration of the archive's options alone in a temporary directory (no member's files
// needed: it works before a cluster exists and after its members are gone). ok is false, and f is not
// called, without pgBackRest or for a location pgnvme cannot name.
func (m *Manager) withArchive(ctx context.Context, s Spec, f func(archive.Location, pgbackrestRun) error) (ok bool, err error) {
	if !s.hasPgBackRest() {
		return false, nil
	}
	return m.withLocation(ctx, s.Archive.PgBackRestOptions, s.stanza(), f)
}

// withLocation is withArchive for the pgBackRest archive of options opts and stanza.
func (m *Manager) withLocation(ctx context.Context, opts map[string]string, stanza string, f func(archive.Location, pgbackrestRun) error) (ok bool, err error) {
	loc, ok := archive.LocationOf(opts, nil, stanza)
	if !ok {
		return false, nil
	}
	if m.pgbackrest == "" {
		return true, fmt.Errorf("pgBackRest is not installed: install the pgbackrest package (apt-get install pgbackrest)")
	}
	dir, err := os.MkdirTemp("", "pgnvme-archive-")
	if err != nil {
		return true, err
	}
	defer os.RemoveAll(dir)
	uid, gid := m.engine.RunAsIDs()
	if err := os.Chown(dir, uid, gid); err != nil && !errors.Is(err, os.ErrPermission) {
		return true, err
	}
	global := maps.Clone(opts)
	global["log-level-file"] = "off"
	global["lock-path"] = dir
	var conf strings.Builder
	conf.WriteString("[global]\n")
	for _, k := range slices.Sorted(maps.Keys(global)) {
		fmt.Fprintf(&conf, "%s=%s\n", k, global[k])
	}
	path := filepath.Join(dir, "pgbackrest.conf")
	if err := m.engine.WriteFileOwned(path, []byte(conf.String()), 0o600); err != nil {
		return true, err
	}
	run := func(args ...string) (string, error) {
		full := append([]string{"--config=" + path, "--stanza=" + stanza, "--log-level-console=error"}, args...)
		out, err := m.engine.RunAsServerUser(ctx, dir, m.pgbackrest, full...)
		if err != nil {
			return "", fmt.Errorf("reading the archive (%s) with pgbackrest %s: %w", loc, strings.Join(args, " "), err)
		}
		return out, nil
	}
	if err := f(loc, run); err != nil {
		return true, fmt.Errorf("reading the archive (%s): %w", loc, err)
	}
	return true, nil
}
