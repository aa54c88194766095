package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// writePgBackRest creates mb's pgBackRest directory (log, lock, spool) and
// writes its pgbackrest.conf, all owned by the server's user.
func (m *Manager) writePgBackRest(mb Member, r bootstrap.Rendered) error {
	dir := pgBackRestDir(mb)
	for _, sub := range []string{"log", "lock", "spool"} {
		if err := m.engine.MkdirAllOwned(filepath.Join(dir, sub), 0o750); err != nil {
			return fmt.Errorf("creating the pgBackRest directories of %s: %w", mb.Name, err)
		}
	}
	if err := m.engine.WriteFileOwned(filepath.Join(dir, "pgbackrest.conf"), []byte(r.PgBackRestConf), 0o640); err != nil {
		return fmt.Errorf("writing the pgBackRest configuration of %s: %w", mb.Name, err)
	}
	return nil
}

// runPgBackRest runs pgbackrest with mb's configuration and the stanza, as
// the server's user, and returns its standard output.
func (m *Manager) runPgBackRest(ctx context.Context, s Spec, mb Member, args ...string) (string, error) {
	if m.pgbackrest == "" {
		return "", fmt.Errorf("pgBackRest is not installed: install the pgbackrest package (apt-get install pgbackrest)")
	}
	dir := pgBackRestDir(mb)
	full := append([]string{"--config=" + filepath.Join(dir, "pgbackrest.conf"), "--stanza=" + s.stanza()}, args...)
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
