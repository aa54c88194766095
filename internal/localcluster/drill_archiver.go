package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// drillArchiver is the archiver's part of a restore drill: the same steps for pgBackRest and WAL-G, only
// the commands differ.
type drillArchiver interface {
	// installed is an error saying what to install when the archiver is not on this machine.
	installed() error
	// health reads the archive.
	health(ctx context.Context) (*archive.Health, error)
	// archive is the scratch node's archive settings (the restore's configuration), nil for none.
	archive() *bootstrap.Archive
	// recover restores plan's backup into mb's data directory (the scratch directory dir beside it), starts
	// the server with r's parameters and the archiver's restore_command and waits until recovery promoted it.
	recover(ctx context.Context, s Spec, mb Member, r bootstrap.Rendered, dir string, plan cluster.RestorePlan) error
	// verify runs the archiver's own verification of the archive: whether it passed, and what it checked or
	// what it found.
	verify(ctx context.Context, dir string, h archive.Health) (bool, string)
}

// pgbackrestDrill drills a pgBackRest repository (posix or s3) with pgBackRest.
type pgbackrestDrill struct {
	m      *Manager
	opts   map[string]string
	stanza string
}

func (p pgbackrestDrill) installed() error {
	if p.m.pgbackrest == "" {
		return errors.New("pgBackRest is not installed on the machine that runs Terraform, and the drill restores with it: install the pgbackrest package " +
			"(apt-get install pgbackrest)")
	}
	return nil
}

func (p pgbackrestDrill) health(ctx context.Context) (*archive.Health, error) {
	return p.m.readHealth(ctx, p.opts, p.stanza, archive.Reading{Tool: archive.ToolPgBackRest}, nil)
}

func (p pgbackrestDrill) archive() *bootstrap.Archive {
	return &bootstrap.Archive{PgBackRestOptions: p.opts, Stanza: p.stanza}
}

// recover: `pgbackrest restore` of the backup with the target's --type and --target (it writes the
// recovery settings and recovery.signal itself).
func (p pgbackrestDrill) recover(ctx context.Context, s Spec, mb Member, r bootstrap.Rendered, _ string, plan cluster.RestorePlan) error {
	if err := p.m.writePgBackRest(mb, r); err != nil {
		return err
	}
	return p.m.recoverFrom(ctx, s, mb, r.Parameters, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), p.stanza, restoreArgs(plan)...)
}

// verify: `pgbackrest verify` (every backup file and WAL segment against its checksum and size), judged
// as the nodes judge it (judgeVerification).
func (p pgbackrestDrill) verify(ctx context.Context, _ string, h archive.Health) (bool, string) {
	var out string
	_, err := p.m.withLocation(ctx, p.opts, p.stanza, func(_ archive.Location, run pgbackrestRun) error {
		var err error
		out, err = run("--output=text", "--verbose", "verify")
		return err
	})
	if err != nil {
		return false, "pgbackrest verify failed: " + err.Error()
	}
	return verdictOf(judgeVerification(ctx, archive.ToolPgBackRest, archive.TimelineOf(h.LastArchived), out))
}

// walgDrill drills a WAL-G archive in S3 with WAL-G; the archive is read (its backups and WAL) from S3
// directly, with the archive's own environment, as WAL-G reads it.
type walgDrill struct {
	m    *Manager
	env  map[string]string
	from archive.Location
}

func (w walgDrill) installed() error {
	if w.m.walg == "" {
		return fmt.Errorf("WAL-G is not installed on the machine that runs Terraform, and the drill restores a WAL-G archive with it: install the "+
			"release the nodes run, %s (the wal-g-pg binary for this machine's OS and CPU, from https://github.com/wal-g/wal-g/releases/tag/%s), "+
			"as wal-g on PATH", bootstrap.DefaultWALGVersion, bootstrap.DefaultWALGVersion)
	}
	return nil
}

func (w walgDrill) health(ctx context.Context) (*archive.Health, error) {
	api, err := awsclient.S3ForWALG(ctx, w.env)
	if err != nil {
		return nil, err
	}
	h, err := awsclient.ReadSourceHealth(ctx, api, w.from, w.m.waitClock().Now())
	if err != nil {
		return nil, fmt.Errorf("reading the archive (%s): %w", w.from, err)
	}
	return h, nil
}

func (w walgDrill) archive() *bootstrap.Archive { return nil }

// recover: `wal-g backup-fetch` of the backup into the data directory, then archive recovery with the
// nodes' WAL-G restore_command script (bootstrap.WALGRestoreScript) reading the archive's environment from
// a file in dir, to the target's recovery settings (archive.Target.RecoverySettings), where PostgreSQL
// promotes.
func (w walgDrill) recover(ctx context.Context, s Spec, mb Member, r bootstrap.Rendered, dir string, plan cluster.RestorePlan) error {
	envFile, script := w.envFile(dir), filepath.Join(dir, "walg-restore.sh")
	var env strings.Builder
	for _, k := range slices.Sorted(maps.Keys(w.env)) {
		fmt.Fprintf(&env, "%s=%s\n", k, w.env[k]) // the values are shell words (bootstrap.Archive.ProblemsAt)
	}
	if err := w.m.engine.WriteFileOwned(envFile, []byte(env.String()), 0o600); err != nil {
		return err
	}
	content, err := bootstrap.WALGRestoreScript(s.Name, mb.Name, script, w.m.walg, mb.DataDir, envFile)
	if err != nil {
		return err
	}
	if err := w.m.engine.WriteFileOwned(script, []byte(content), 0o700); err != nil {
		return err
	}
	n := Node(mb, localnode.RolePrimary)
	if err := w.m.engine.PrepareDataDir(n); err != nil {
		return err
	}
	if _, err := w.run(ctx, dir, "backup-fetch", mb.DataDir, plan.Backup.Label); err != nil {
		return err
	}
	params := maps.Clone(r.Parameters)
	params["restore_command"] = script + " %f %p"
	if rs := plan.Target.RecoverySettings(); len(rs) > 0 {
		maps.Copy(params, rs)
		params["recovery_target_action"] = "promote"
	}
	if err := w.m.engine.WriteFileOwned(filepath.Join(mb.DataDir, "recovery.signal"), nil, 0o600); err != nil {
		return err
	}
	if err := w.m.engine.SetParameters(n, params); err != nil {
		return err
	}
	if err := w.m.start(ctx, s, mb, n); err != nil {
		return err
	}
	return w.m.waitRestored(ctx, mb)
}

// verify: `wal-g wal-verify integrity timeline` from the oldest backup to the archive's newest segment
// (archive.WALVerifyArgs), judged as the nodes judge it (judgeVerification).
func (w walgDrill) verify(ctx context.Context, dir string, h archive.Health) (bool, string) {
	args, err := archive.WALVerifyArgs(h.LastArchived)
	if err != nil {
		return false, "wal-g wal-verify was not run: the archive holds no WAL segment"
	}
	out, err := w.run(ctx, dir, args...)
	if err != nil {
		return false, "wal-g wal-verify failed: " + err.Error()
	}
	return verdictOf(judgeVerification(ctx, archive.ToolWALG, archive.TimelineOf(h.LastArchived), out))
}

// verdictOf is a verification record as verify's result: a verdict that could not be taken fails.
func verdictOf(v *archive.Verification, err error) (bool, string) {
	if err != nil {
		return false, err.Error()
	}
	return v.OK, v.Detail
}

func (w walgDrill) envFile(dir string) string { return filepath.Join(dir, "walg.env") }

// run runs wal-g with args as the server's user, with the archive's environment (the file recover wrote).
func (w walgDrill) run(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", `set -a; . "$0" || exit 126; set +a; exec "$@"`, w.envFile(dir), w.m.walg}, args...)
	out, err := w.m.engine.RunAsServerUser(ctx, dir, "/bin/bash", full...)
	if err != nil {
		return "", fmt.Errorf("wal-g %s: %w", args[0], err)
	}
	return out, nil
}
