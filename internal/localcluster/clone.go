package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// RestoreFrom is the archive a new cluster's primary is restored from (the restore block) and, once
// cluster.PlanRestore chose it from what that archive holds, the backup and target.
type RestoreFrom struct {
	// Options are the source archive's pgBackRest options, Stanza its stanza.
	Options map[string]string
	Stanza  string
	// Plan is the restore cluster.PlanRestore planned (its Backup is empty until then).
	Plan cluster.RestorePlan
}

// restoreFromOf is s's restore block as the adapter's RestoreFrom (nil without one), not planned yet.
func restoreFromOf(s cluster.Spec) *RestoreFrom {
	loc, ok := s.RestoreLocation()
	if !ok {
		return nil
	}
	return &RestoreFrom{Options: s.Restore.Archive.PgBackRestOptions, Stanza: loc.Stanza}
}

// RestoreSourceHealth reads the archive s is restored from as ArchiveHealth reads a cluster's own (no
// primary: nothing of it runs here); nil without a restore block.
func (m *Manager) RestoreSourceHealth(ctx context.Context, s Spec) (*archive.Health, error) {
	if s.Restore == nil {
		return nil, nil
	}
	return m.readHealth(ctx, s.Restore.Options, s.Restore.Stanza, archive.Reading{Tool: archive.ToolPgBackRest}, nil)
}

// planRestore plans ls's restore (cluster.PlanRestore) from what its source archive holds now, into
// ls.Restore.Plan; nothing without a restore block.
func (m *Manager) planRestore(ctx context.Context, s cluster.Spec, ls *Spec) error {
	if ls.Restore == nil {
		return nil
	}
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return err
	}
	h, err := m.RestoreSourceHealth(ctx, *ls)
	p, err := cluster.PlanRestore(s, major, h, err)
	if err != nil {
		return err
	}
	ls.Restore.Plan = p
	return nil
}

// restoreArgs are pgbackrest restore's arguments for plan p: the backup set, the recovery type and target,
// and promotion at the target.
func restoreArgs(p cluster.RestorePlan) []string {
	args := []string{"--set=" + p.Backup.Label}
	t := p.Target
	switch {
	case !t.Time.IsZero():
		args = append(args, "--type=time", "--target="+t.PostgresTime())
	case t.LSN != "":
		args = append(args, "--type=lsn", "--target="+t.LSN)
	case t.Name != "":
		args = append(args, "--type=name", "--target="+t.Name)
	case t.Immediate:
		args = append(args, "--type=immediate")
	default:
		return append(args, "--type=default")
	}
	return append(args, "--target-action=promote")
}

// recoverySettings are what pgbackrest restore writes to postgresql.auto.conf for the recovery of a
// restored primary, removed once it is promoted: the source archive's restore_command and the target must
// not stay behind (a standby copied from the primary would stop at the target, or read the source).
var recoverySettings = []string{"restore_command", "recovery_target", "recovery_target_time", "recovery_target_lsn",
	"recovery_target_name", "recovery_target_xid", "recovery_target_inclusive", "recovery_target_action", "recovery_target_timeline"}

// restoreClone makes mb, the first member of a new cluster with a restore block, its primary: pgbackrest
// restore of the planned backup from the source archive (with a configuration of the source's options
// beside mb's own), archive recovery to the target, where PostgreSQL promotes it onto a new timeline. Its
// archive_command is the cluster's own from the start, which fails until the stanza exists: nothing is
// archived, and nothing dropped, before the promotion. Then the recovery settings go, the cluster's own
// stanza is created (its archive must hold no history: Platform checked) and, with BackupOnCreate, a full
// backup taken, from which the standbys are copied. What the restore did is written beside the manifest
// (restoredPath) for the status.
func (m *Manager) restoreClone(ctx context.Context, s Spec, major int, mb Member) (err error) {
	src := s.Restore
	if src == nil || src.Plan.Backup.Label == "" {
		return errors.New("provider bug: a restore without a planned backup")
	}
	r, err := m.preparePrimary(ctx, s, major, mb)
	if err != nil {
		return err
	}
	source := s
	source.Archive = &bootstrap.Archive{PgBackRestOptions: src.Options, Stanza: src.Stanza}
	sr, err := m.render(source, major, mb, localnode.RolePrimary, mb, nil)
	if err != nil {
		return err
	}
	conf := filepath.Join(pgBackRestDir(mb), "restore-source.conf")
	if err := m.writePgBackRestFile(mb, conf, sr); err != nil {
		return err
	}
	n := Node(mb, localnode.RolePrimary)
	promoted := false
	defer func() {
		if err != nil && !promoted {
			// Until it is promoted, the node is a copy of the source on its way to the target and nothing
			// else: remove it, so that the next apply (after the error is fixed) restores from the start.
			tflog.Warn(ctx, "the restore failed before the promotion; removing what it restored", map[string]any{"node": mb.Name})
			err = errors.Join(err, m.engine.Destroy(context.WithoutCancel(ctx), n))
		}
	}()
	start := m.waitClock().Now()
	tflog.Info(ctx, "restoring the primary from another archive", map[string]any{"node": mb.Name, "from": src.Plan.From.String(),
		"backup": src.Plan.Backup.Label, "target": src.Plan.Target.String()})
	if err := m.recoverFrom(ctx, s, mb, r.Parameters, conf, src.Stanza, restoreArgs(src.Plan)...); err != nil {
		return fmt.Errorf("restoring %s from %s: %w", mb.Name, src.Plan.From, err)
	}
	promoted = true
	res, err := m.endRestore(ctx, mb, src.Plan, start)
	if err != nil {
		return err
	}
	if err := writeRestored(s, res); err != nil {
		return err
	}
	tflog.Info(ctx, "restored", map[string]any{"node": mb.Name, "reached_lsn": res.ReachedLSN, "reached_time": res.ReachedTime, "seconds": res.Seconds})
	if s.hasPgBackRest() {
		return m.archiveBootstrap(ctx, s, mb)
	}
	return nil
}

// endRestore reads where mb's recovery stopped, removes the recovery settings pgBackRest wrote
// (recoverySettings) and reloads, and says what the restore did.
func (m *Manager) endRestore(ctx context.Context, mb Member, p cluster.RestorePlan, start time.Time) (cluster.RestoreResult, error) {
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return cluster.RestoreResult{}, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	res, err := recoveryResult(ctx, conn, p, start, m.waitClock())
	if err != nil {
		return cluster.RestoreResult{}, err
	}
	for _, name := range recoverySettings {
		if err := conn.AlterSystemReset(ctx, name); err != nil {
			return cluster.RestoreResult{}, err
		}
	}
	if err := conn.ReloadConf(ctx); err != nil {
		return cluster.RestoreResult{}, err
	}
	return res, nil
}

// restoredPath is where a cluster restored at create keeps what the restore did, beside its manifest.
func restoredPath(root string) string {
	return filepath.Join(filepath.Clean(root), ".pgnvme-restored.json")
}

// writeRestored records res for s (mode 0644: it holds no secret).
func writeRestored(s Spec, res cluster.RestoreResult) error {
	root, err := DataDirRoot(s)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(restoredPath(root), append(b, '\n'), 0o644)
}

// readRestored is what the restore that created s did; nil when it was not restored (or the record is
// gone).
func readRestored(s Spec) (*cluster.RestoreResult, error) {
	root, err := DataDirRoot(s)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(restoredPath(root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var res cluster.RestoreResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("reading %s: %w", restoredPath(root), err)
	}
	return &res, nil
}
