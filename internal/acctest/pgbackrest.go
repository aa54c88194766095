package acctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// PgBackRestStanza is the stanza name the harness configures.
const PgBackRestStanza = "demo"

// pgBackRestTimeout bounds every pgBackRest command the harness runs.
const pgBackRestTimeout = 2 * time.Minute

// PgBackRest is a pgBackRest configuration for one stanza (PgBackRestStanza) whose repository is an S3
// bucket, plus the directories it logs, locks and spools in. Everything lives in a temporary directory
// owned by the server's user (pgBackRest runs as that user, through localnode's RunAsServerUser, as the
// product runs it) that Cleanup removes.
//
// The configuration is written by NewPgBackRest ([global] only) and rewritten with the [demo] stanza
// (pg1-path, pg1-port, pg1-socket-path) by StartArchivingPrimary; its path never changes, because the
// primary's archive_command names it.
type PgBackRest struct {
	// Dir is the temporary directory holding the configuration, log/, lock/ and spool/.
	Dir string
	// ConfigPath is the pgbackrest.conf every command is given with --config.
	ConfigPath string
	// LogPath is pgBackRest's log directory (log-path); files are named STANZA-COMMAND.log.
	LogPath string
	// Global is the [global] section as written: the repo options given to NewPgBackRest, the test-only
	// options the harness adds, and the harness defaults.
	Global map[string]string

	bin    string
	engine *localnode.Engine
	stanza map[string]string
}

// NewPgBackRest writes a pgbackrest.conf whose [global] section is repo (the repository options the
// archive bucket resource outputs as pgbackrest_options: repo1-type, repo1-s3-bucket, repo1-s3-region,
// repo1-s3-endpoint, repo1-storage-port, repo1-s3-uri-style, repo1-path, repo1-s3-kms-key-id, ...) plus:
//
//   - test-only options: repo1-s3-key and repo1-s3-key-secret (moto accepts any; kept when repo has them)
//     and, when tls is not nil, repo1-storage-ca-file = tls.CAFile (always: the certificate is the test's);
//   - harness defaults, which repo overrides: log-path, lock-path and spool-path under Dir, process-max 1,
//     archive-async n, start-fast y (the backup checkpoints at once), repo1-retention-full 2 (pgBackRest
//     warns without it), log-level-file detail, log-level-console warn, log-level-stderr warn.
//
// repo must already point at the endpoint pgBackRest is to use; with a TLSMoto, merge
// tls.PgBackRestRepoOptions() into it (endpoint localhost, the TLS port, path-style URIs). pgBackRest is
// found on PATH; missing, it fails the test naming the apt package.
func NewPgBackRest(t testing.TB, repo map[string]string, tls *TLSMoto) *PgBackRest {
	t.Helper()
	bin, err := exec.LookPath("pgbackrest")
	if err != nil {
		t.Fatalf("pgBackRest is needed for the archive and point-in-time restore tests and is not on PATH: install the pgbackrest package (apt-get install pgbackrest): %v", err)
	}
	engine, _ := pgfixture.Engine(t)
	dir := serverUserTempDir(t, engine, "pgbr-")
	pb := &PgBackRest{
		Dir:        dir,
		ConfigPath: filepath.Join(dir, "pgbackrest.conf"),
		LogPath:    filepath.Join(dir, "log"),
		bin:        bin,
		engine:     engine,
	}
	for _, sub := range []string{"log", "lock", "spool"} {
		if err := engine.MkdirAllOwned(filepath.Join(dir, sub), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	pb.Global = map[string]string{
		"log-path":             pb.LogPath,
		"lock-path":            filepath.Join(dir, "lock"),
		"spool-path":           filepath.Join(dir, "spool"),
		"process-max":          "1",
		"archive-async":        "n",
		"start-fast":           "y",
		"repo1-retention-full": "2",
		"log-level-file":       "detail",
		"log-level-console":    "warn",
		"log-level-stderr":     "warn",
		"repo1-s3-key":         "test",
		"repo1-s3-key-secret":  "test",
	}
	for k, v := range repo {
		pb.Global[k] = v
	}
	if tls != nil {
		pb.Global["repo1-storage-ca-file"] = tls.CAFile
	}
	pb.writeConfig(t)
	return pb
}

// writeConfig writes [global] and, once known, the stanza section, owned by the server's user.
func (pb *PgBackRest) writeConfig(t testing.TB) {
	t.Helper()
	var b strings.Builder
	writeSection := func(name string, opts map[string]string) {
		fmt.Fprintf(&b, "[%s]\n", name)
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s\n", k, opts[k])
		}
		b.WriteString("\n")
	}
	writeSection("global", pb.Global)
	if pb.stanza != nil {
		writeSection(PgBackRestStanza, pb.stanza)
	}
	if err := pb.engine.WriteFileOwned(pb.ConfigPath, []byte(b.String()), 0o640); err != nil {
		t.Fatal(err)
	}
}

// Config is the configuration file's current text, for logs and failure messages. The S3 secret in it is
// moto's dummy one.
func (pb *PgBackRest) Config() string {
	b, err := os.ReadFile(pb.ConfigPath)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Run runs `pgbackrest --config=ConfigPath --stanza=demo ARGS...` as the server's user with a two-minute
// timeout and returns its standard output. On failure it fails the test with pgBackRest's exit status,
// standard error and the tail of the command's log file.
func (pb *PgBackRest) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := pb.TryRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryRun is Run returning the failure (with standard error and the log tail) instead of failing the test.
func (pb *PgBackRest) TryRun(t testing.TB, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"--config=" + pb.ConfigPath, "--stanza=" + PgBackRestStanza}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), pgBackRestTimeout)
	defer cancel()
	out, err := pb.engine.RunAsServerUser(ctx, pb.Dir, pb.bin, full...)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s: %w", pgBackRestTimeout, err)
		}
		return out, fmt.Errorf("pgbackrest %s: %w\nstdout:\n%s\nlog %s:\n%s",
			strings.Join(full, " "), err, strings.TrimSpace(out), pb.logFile(args), localnode.TailFile(pb.logFile(args), 40))
	}
	return out, nil
}

// logFile is the log file of the command in args (the first argument without a leading dash).
func (pb *PgBackRest) logFile(args []string) string {
	command := "unknown"
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			command = a
			break
		}
	}
	return filepath.Join(pb.LogPath, PgBackRestStanza+"-"+command+".log")
}

// LogTail is the last n lines of the log file of command (backup, restore, archive-push, ...).
func (pb *PgBackRest) LogTail(command string, n int) string {
	return localnode.TailFile(pb.logFile([]string{command}), n)
}

// Backup runs a backup of the given type (full, diff or incr) and returns its label, read back with
// `pgbackrest info`.
//
// It returns only once the wall clock is in a later whole second than the backup's recorded stop time.
// pgBackRest records that time in whole seconds, and a time-target restore picks the newest backup whose
// stop time is before the target (compared in whole seconds): without the wait, a target taken within the
// same second as the end of the backup fails with "unable to find backup set with stop time less than".
func (pb *PgBackRest) Backup(t testing.TB, backupType string) string {
	t.Helper()
	pb.Run(t, "--type="+backupType, "backup")
	info := pb.Info(t)
	if len(info.Backups) == 0 {
		t.Fatalf("pgbackrest info lists no backup after a %s backup", backupType)
	}
	last := info.Backups[len(info.Backups)-1]
	time.Sleep(time.Until(time.Unix(last.Stop+1, 0)))
	return last.Label
}

// Info runs `pgbackrest info --output=json` and decodes it (archive.ParsePgBackRestInfo, the product's reader).
func (pb *PgBackRest) Info(t testing.TB) archive.PgBackRestInfo {
	t.Helper()
	out := pb.Run(t, "--output=json", "info")
	info, err := archive.ParsePgBackRestInfo([]byte(out))
	if err != nil {
		t.Fatalf("decoding pgbackrest info: %v\n%s", err, out)
	}
	return info
}

// Restore restores the latest backup into dataDir (an empty directory owned by the server's user, see
// PrepareRestore), replaying WAL from the archive up to targetTime and then promoting: `restore
// --pg1-path=dataDir --type=time --target=targetTime --target-action=promote`. targetTime is a timestamp
// with time zone pgBackRest accepts, such as `2026-01-02 03:04:05.678901+00` (see pgfixture.Server.TargetTime).
func (pb *PgBackRest) Restore(t testing.TB, targetTime, dataDir string) {
	t.Helper()
	pb.RestoreArgs(t, dataDir, "--type=time", "--target="+targetTime, "--target-action=promote")
}

// RestoreArgs runs `restore --pg1-path=dataDir ARGS...` for restores other than to a time.
func (pb *PgBackRest) RestoreArgs(t testing.TB, dataDir string, args ...string) {
	t.Helper()
	pb.Run(t, append(append([]string{"--pg1-path=" + dataDir}, args...), "restore")...)
}

// PrepareRestore is a server named "restored" for a restore (pgfixture.Prepare): its data directory
// empty, mode 0700 and owned by the server's user, for Restore to fill and StartRestored to start.
func PrepareRestore(t testing.TB) *pgfixture.Server {
	t.Helper()
	return pgfixture.Prepare(t, pgfixture.Options{Name: "restored"})
}

// StartArchivingPrimary starts a primary (pgfixture.Start) whose parameters make it archive every WAL
// segment with pgBackRest (archive_mode on, archive_command `pgbackrest --config=... --stanza=demo
// archive-push %p`; wal_level replica is localnode's; fsync off; times in UTC, so the log names a target
// time as the test wrote it), writes the [demo] stanza into pb's configuration, and runs `stanza-create`
// and `check` (which switches WAL and waits until the segment is in the repository, so the archive path is
// proven before the test goes on).
func StartArchivingPrimary(t testing.TB, pb *PgBackRest) *pgfixture.Server {
	t.Helper()
	p := pgfixture.Start(t, pgfixture.Options{Params: map[string]string{
		"archive_mode":    "on",
		"archive_command": fmt.Sprintf("%s --config=%s --stanza=%s archive-push %%p", pb.bin, pb.ConfigPath, PgBackRestStanza),
		"fsync":           "off",
		"timezone":        "UTC",
		"log_timezone":    "UTC",
	}})
	pb.stanza = map[string]string{
		"pg1-path":        p.Node.DataDir,
		"pg1-port":        strconv.Itoa(p.Port()),
		"pg1-socket-path": p.Node.SocketDir(),
	}
	pb.writeConfig(t)
	pb.Run(t, "stanza-create")
	pb.Run(t, "check")
	return p
}

// StartRestored starts p, restored by Restore into the directory PrepareRestore made: its pgnvme.conf
// (the primary's, copied by the restore) is rewritten for p's own port and socket with archive_mode off,
// so that the copy never writes into the primary's repository. It waits until the server accepts
// connections and until recovery has ended (the target was reached and the server promoted), and fails
// the test with the server's log otherwise.
func StartRestored(t testing.TB, p *pgfixture.Server) {
	t.Helper()
	params, err := p.Engine.Parameters(p.Node)
	if err != nil {
		t.Fatal(err)
	}
	params["archive_mode"] = "off"
	if err := p.Engine.SetParameters(p.Node, params); err != nil {
		t.Fatal(err)
	}
	p.Start(t)
	p.WaitRecoveryEnded(t)
}

// serverUserTempDir makes a fresh directory owned by the server's user (localnode's MkdirAllOwned) under a
// new directory in os.TempDir, both removed at Cleanup.
func serverUserTempDir(t testing.TB, engine *localnode.Engine, prefix string) string {
	t.Helper()
	parent, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "d")
	if err := engine.MkdirAllOwned(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}
