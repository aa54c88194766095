package localcluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// The backup scheduler takes a local cluster's scheduled base backups between applies (the EC2 nodes'
// pgnvme-backup.timer does the same there): a detached script (backups.sh, see detached.go) that finds the
// primary every backupTick and runs backup.DecideScript and pgBackRest on it as the cluster's backup
// policy says (bootstrap.Archive.BackupPolicy). Every cluster with an archive has one.

//go:embed backups.sh
var backupsScript []byte

const (
	// backupTick is how often the scheduler looks for a due backup.
	backupTick = 10 * time.Second
	// backupDecideName is DecideScript's file beside the scheduler.
	backupDecideName = "pgnvme-backup-decide.py"
)

// backupScheduler is the backup scheduler as a detached script.
var backupScheduler = detached{
	what: "backup scheduler", base: "pgnvme-backups", script: backupsScript,
	extra:  map[string][]byte{backupDecideName: backup.DecideScript},
	wanted: BackupsWanted, args: (*Manager).backupArgs,
}

// BackupsWanted reports whether s gets a backup scheduler: it archives (with pgBackRest).
func BackupsWanted(s Spec) bool { return s.hasPgBackRest() }

// BackupSchedulerRunning reports whether s's backup scheduler runs with the policy s asks for now (see
// WatcherRunning).
func (m *Manager) BackupSchedulerRunning(s Spec) (bool, error) {
	return m.detachedRunning(backupScheduler, s)
}

// backupTools are what the scheduler runs besides pgBackRest: python3 (DecideScript) and systemd-analyze
// (which evaluates the schedule); the error says what to install.
func backupTools() (python string, err error) {
	var errs []error
	python, perr := decidePython()
	if perr != nil {
		errs = append(errs, errors.New("the archive's scheduled backups need python3, which is not installed: install the python3 package"))
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		errs = append(errs, errors.New("the archive's scheduled backups evaluate the schedule with systemd-analyze, which is not installed: install the systemd package"))
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return python, nil
}

// decidePython is the python3 that runs DecideScript, as an absolute path: the system's first (the
// scheduler runs as the server's user, who may not reach a per-user installation such as pyenv's shims
// under /root that PATH finds first), else the one on PATH.
func decidePython() (string, error) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			return "", err
		}
	}
	return filepath.Abs(python)
}

// judgeVerification is the verdict on what an archiver's own verification printed (tool
// archive.ToolPgBackRest or ToolWALG; the archive's newest timeline): DecideScript's "verdict", the one
// reader of `pgbackrest verify` and `wal-g wal-verify` output, which the primaries of both platforms run
// after a timeline switch and record in the archive. A restore drill takes its verdict here, so that a
// drill and a node never judge the same output differently.
func judgeVerification(ctx context.Context, tool string, timeline uint32, output string) (*archive.Verification, error) {
	python, err := decidePython()
	if err != nil {
		return nil, errors.New("the archive's verification is judged by a python3 program (the one the nodes run), and python3 is not installed: install the python3 package")
	}
	dir, err := os.MkdirTemp("", "pgnvme-verdict-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script, out := filepath.Join(dir, backupDecideName), filepath.Join(dir, "verification.out")
	if err := os.WriteFile(script, backup.DecideScript, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(out, []byte(output), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, script, "verdict", decideTool(tool), strconv.Itoa(int(max(timeline, 1))), out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	record, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("judging the %s verification: %w: %s", tool, err, strings.TrimSpace(stderr.String()))
	}
	return archive.ParseVerification(record)
}

// decideTool is DecideScript's name of archiver tool.
func decideTool(tool string) string {
	if tool == archive.ToolWALG {
		return "walg"
	}
	return "pgbackrest"
}

// backupArgs are backups.sh's arguments for s: PIDFILE PSQL HOST USER PYTHON DECIDE TICK PGBACKREST
// STANZA, the policy (backup.Policy.Args), VERIFY_PATH (archive.Location.VerificationPath), then NAME PORT
// PGBACKREST_CONF per member.
func (m *Manager) backupArgs(_ context.Context, s Spec, pidPath string) ([]string, error) {
	python, err := backupTools()
	if err != nil {
		return nil, err
	}
	if m.pgbackrest == "" {
		return nil, errors.New("pgBackRest is not installed and the archive needs it: install the pgbackrest package (apt-get install pgbackrest)")
	}
	args := []string{pidPath, filepath.Join(m.engine.BinDir(), "psql"), Host, m.engine.Superuser(), python,
		filepath.Join(filepath.Dir(pidPath), backupDecideName), strconv.Itoa(int(backupTick / time.Second)), m.pgbackrest, s.stanza()}
	args = append(args, s.Archive.BackupPolicy().Args()...)
	args = append(args, archive.Location{Tool: archive.ToolPgBackRest, Stanza: s.stanza()}.VerificationPath())
	for _, mb := range s.Members {
		args = append(args, mb.Name, strconv.Itoa(mb.Port), filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"))
	}
	return args, nil
}
