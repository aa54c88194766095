package acctest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgtest"
)

// PgBackRestStanza is the stanza name the harness configures.
const PgBackRestStanza = "demo"

// pgBackRestTimeout bounds every pgBackRest command the harness runs.
const pgBackRestTimeout = 2 * time.Minute

// PgBackRest is a pgBackRest configuration for one stanza (PgBackRestStanza) whose repository is an S3
// bucket, plus the directories it logs, locks and spools in. Everything lives in a temporary directory
// owned by user postgres (pgBackRest runs as postgres when the test runs as root) that Cleanup removes.
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
	dir := postgresTempDir(t, "pgbr-")
	pb := &PgBackRest{
		Dir:        dir,
		ConfigPath: filepath.Join(dir, "pgbackrest.conf"),
		LogPath:    filepath.Join(dir, "log"),
		bin:        bin,
	}
	for _, sub := range []string{"log", "lock", "spool"} {
		mkdirAsPostgres(t, filepath.Join(dir, sub), 0o750)
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

// writeConfig writes [global] and, once known, the stanza section, readable by postgres.
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
	if err := os.WriteFile(pb.ConfigPath, []byte(b.String()), 0o640); err != nil {
		t.Fatal(err)
	}
	chownPostgres(t, pb.ConfigPath)
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

// Run runs `pgbackrest --config=ConfigPath --stanza=demo ARGS...` as postgres with a two-minute timeout and
// returns its standard output. On failure it fails the test with pgBackRest's exit status, standard error
// and the tail of the command's log file.
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
	cmd := exec.CommandContext(ctx, pb.bin, full...)
	cmd.Dir = pb.Dir
	cmd.Env = pgBackRestEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	pgtest.RunAsPostgres(t, cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// On timeout end pgBackRest and the local processes it forks, by process group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s: %w", pgBackRestTimeout, err)
		}
		return stdout.String(), fmt.Errorf("pgbackrest %s: %w\nstderr:\n%s\nstdout:\n%s\nlog %s:\n%s",
			strings.Join(full, " "), err, strings.TrimSpace(stderr.String()), strings.TrimSpace(stdout.String()),
			pb.logFile(args), tailFile(pb.logFile(args), 40))
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		t.Logf("pgbackrest %s: %s", strings.Join(args, " "), msg)
	}
	return stdout.String(), nil
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
	return tailFile(pb.logFile([]string{command}), n)
}

// pgBackRestEnv is this process's environment without PGBACKREST_* variables, so only the configuration
// file decides; in TZ=UTC so that times in logs read like the test's.
func pgBackRestEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PGBACKREST_") || strings.HasPrefix(kv, "TZ=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TZ=UTC")
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
	infos := pb.Info(t)
	if len(infos) == 0 || len(infos[0].Backup) == 0 {
		t.Fatalf("pgbackrest info lists no backup after a %s backup", backupType)
	}
	last := infos[0].Backup[len(infos[0].Backup)-1]
	time.Sleep(time.Until(time.Unix(last.Time.Stop+1, 0)))
	return last.Label
}

// PgBackRestInfo is the part of `pgbackrest info --output=json` the tests read, for one stanza.
type PgBackRestInfo struct {
	Name   string `json:"name"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
	Archive []struct {
		ID  string `json:"id"`
		Min string `json:"min"`
		Max string `json:"max"`
	} `json:"archive"`
	Backup []struct {
		Label string `json:"label"`
		Type  string `json:"type"`
		Time  struct {
			Start int64 `json:"start"`
			Stop  int64 `json:"stop"`
		} `json:"timestamp"`
		Archive struct {
			Start string `json:"start"`
			Stop  string `json:"stop"`
		} `json:"archive"`
	} `json:"backup"`
}

// Info runs `pgbackrest info --output=json` and decodes it.
func (pb *PgBackRest) Info(t testing.TB) []PgBackRestInfo {
	t.Helper()
	out := pb.Run(t, "--output=json", "info")
	var infos []PgBackRestInfo
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		t.Fatalf("decoding pgbackrest info: %v\n%s", err, out)
	}
	return infos
}

// Restore restores the latest backup into dataDir (an empty directory owned by postgres, see
// NewRestoreDir), replaying WAL from the archive up to targetTime and then promoting: `restore
// --pg1-path=dataDir --type=time --target=targetTime --target-action=promote`. targetTime is a timestamp
// with time zone pgBackRest accepts, such as `2026-01-02 03:04:05.678901+00` (see PGNode.TargetTime).
func (pb *PgBackRest) Restore(t testing.TB, targetTime, dataDir string) {
	t.Helper()
	pb.RestoreArgs(t, dataDir, "--type=time", "--target="+targetTime, "--target-action=promote")
}

// RestoreArgs runs `restore --pg1-path=dataDir ARGS...` for restores other than to a time.
func (pb *PgBackRest) RestoreArgs(t testing.TB, dataDir string, args ...string) {
	t.Helper()
	pb.Run(t, append(append([]string{"--pg1-path=" + dataDir}, args...), "restore")...)
}

// NewRestoreDir makes an empty data directory (mode 0700, owned by postgres) in a fresh temporary
// directory that Cleanup removes; its parent holds the restored server's socket and log.
func NewRestoreDir(t testing.TB) string {
	t.Helper()
	dir := postgresTempDir(t, "pgrs-")
	data := filepath.Join(dir, "data")
	mkdirAsPostgres(t, data, 0o700)
	return data
}

// PGNode is a PostgreSQL 15 server the harness started (an archiving primary or a restored copy) on a free
// 127.0.0.1 port, with its Unix socket in the data directory's parent.
type PGNode struct {
	// DataDir is the data directory.
	DataDir string
	// SocketDir holds the Unix socket (pg1-socket-path) and postgres.log.
	SocketDir string

	port     int
	logPath  string
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Port is the server's TCP port on 127.0.0.1.
func (n *PGNode) Port() int { return n.port }

// LogTail is the last lines of the server's log.
func (n *PGNode) LogTail(lines int) string { return tailFile(n.logPath, lines) }

// StartArchivingPrimary initialises a cluster (pgtest.InitDB), configures it to archive every WAL segment
// with pgBackRest (wal_level replica, archive_mode on, archive_command `pgbackrest --config=...
// --stanza=demo archive-push %p`, fsync off), starts it as postgres on a free 127.0.0.1 port, writes the
// [demo] stanza into pb's configuration, and runs `stanza-create` and `check` (which switches WAL and waits
// until the segment is in the repository, so the archive path is proven before the test goes on).
func StartArchivingPrimary(t testing.TB, pb *PgBackRest) *PGNode {
	t.Helper()
	data := pgtest.InitDB(t)
	archive := fmt.Sprintf("%s --config=%s --stanza=%s archive-push %%p", pb.bin, pb.ConfigPath, PgBackRestStanza)
	conf := fmt.Sprintf("\n# pgnvme acceptance test: archive with pgBackRest\nwal_level = replica\narchive_mode = on\narchive_command = '%s'\nfsync = off\n",
		strings.ReplaceAll(archive, "'", "''"))
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(conf); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, data)
	pb.stanza = map[string]string{
		"pg1-path":        data,
		"pg1-port":        strconv.Itoa(n.port),
		"pg1-socket-path": n.SocketDir,
	}
	pb.writeConfig(t)
	pb.Run(t, "stanza-create")
	pb.Run(t, "check")
	return n
}

// StartRestored starts the server restored into dataDir (by Restore) on another free port, with
// archive_mode off so that the copy never writes into the primary's repository, waits until it accepts
// connections and until recovery has ended (pg_is_in_recovery() is false: the target was reached and the
// server promoted), and fails the test with the server's log otherwise.
func StartRestored(t testing.TB, dataDir string) *PGNode {
	t.Helper()
	n := startNode(t, dataDir, "-c", "archive_mode=off")
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := n.TryPsql("postgres", "SELECT pg_is_in_recovery()")
		if err == nil && out == "f" {
			return n
		}
		if n.exited() {
			t.Fatalf("restored server exited during recovery: %v\nlog:\n%s", n.waitErr, n.LogTail(60))
		}
		if time.Now().After(deadline) {
			t.Fatalf("restored server still in recovery after 60s (pg_is_in_recovery: %q, %v)\nlog:\n%s", out, err, n.LogTail(60))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startNode starts postgres -D data as postgres (directly, so the PID held is the postmaster's, in its own
// process group) on a free 127.0.0.1 port with its socket in data's parent, waits up to 30 seconds until it
// accepts connections, and has Cleanup stop it: SIGINT (fast shutdown), then SIGKILL to the process group
// after 15 seconds.
func startNode(t testing.TB, data string, extra ...string) *PGNode {
	t.Helper()
	postgres := pgtest.Bin(t, "postgres")
	pgtest.Bin(t, "psql")
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(data)
	n := &PGNode{DataDir: data, SocketDir: dir, port: port, logPath: filepath.Join(dir, "postgres.log"), done: make(chan struct{})}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	args := append([]string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir}, extra...)
	cmd := exec.Command(postgres, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC", "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	pgtest.RunAsPostgres(t, cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	n.cmd = cmd
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(n.Stop)

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.TryPsql("postgres", "SELECT 1")
		if err == nil {
			return n
		}
		if n.exited() {
			t.Fatalf("postgres -D %s exited: %v\nlog:\n%s", data, n.waitErr, n.LogTail(60))
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres -D %s did not accept connections in 30s: %v\nlog:\n%s", data, err, n.LogTail(60))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *PGNode) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// Stop shuts the server down now rather than at Cleanup; calling it again does nothing. Stop an archiving
// primary before the test deletes its bucket, or its archiver may write into the bucket being emptied.
func (n *PGNode) Stop() { n.stopOnce.Do(n.stop) }

// stop shuts the server down fast (SIGINT) and kills its process group if it is still up after 15 seconds.
func (n *PGNode) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
}

// Psql runs one SQL command with psql as user postgres in database db over TCP and returns its unaligned,
// tuples-only output without the final newline; it fails the test when psql fails.
func (n *PGNode) Psql(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := n.TryPsql(db, sql)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryPsql is Psql returning psql's failure, with its error output, instead of failing the test.
func (n *PGNode) TryPsql(db, sql string) (string, error) {
	dir, err := pgtest.BinDir()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(dir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(n.port), "-U", "postgres", "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCLIENTENCODING=UTF8", "PGCONNECT_TIMEOUT=5", "PGTZ=UTC")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql -p %d -d %s -c %q: %w: %s", n.port, db, sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// TargetTime returns the server's clock_timestamp() as a recovery target pgBackRest and PostgreSQL both
// accept: `YYYY-MM-DD HH:MM:SS.ffffff+00` (UTC, microseconds, explicit zone). Take it between two batches
// of commits with a pause on either side so that it falls strictly between their commit timestamps.
func (n *PGNode) TargetTime(t testing.TB) string {
	t.Helper()
	return n.Psql(t, "postgres", `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`)
}

// SwitchWALAndWaitArchived forces a WAL segment switch (pg_switch_wal) and waits up to timeout until
// pg_stat_archiver reports that segment (or a later one) archived; it fails the test, with the archiver's
// figures and the server log, when archiving fails or takes longer. It returns the segment's file name.
func (n *PGNode) SwitchWALAndWaitArchived(t testing.TB, timeout time.Duration) string {
	t.Helper()
	// pg_walfile_name of the switch position (the end of the finished segment) names the finished segment.
	seg := n.Psql(t, "postgres", "SELECT pg_walfile_name(pg_switch_wal())")
	if err := n.WaitArchived(seg, timeout); err != nil {
		t.Fatal(err)
	}
	return seg
}

// WaitArchived waits until pg_stat_archiver.last_archived_wal is segment (a 24-character WAL file name)
// or a later segment of the same timeline (WAL file names of one timeline order as strings).
func (n *PGNode) WaitArchived(segment string, timeout time.Duration) error {
	if len(segment) != 24 {
		return fmt.Errorf("%q is not a WAL segment file name", segment)
	}
	deadline := time.Now().Add(timeout)
	var status string
	for {
		out, err := n.TryPsql("postgres", "SELECT coalesce(last_archived_wal, ''), archived_count, failed_count, coalesce(last_failed_wal, '') FROM pg_stat_archiver")
		if err != nil {
			status = err.Error()
		} else {
			status = out
			archived := strings.SplitN(out, "|", 2)[0]
			if len(archived) == len(segment) && archived[:8] == segment[:8] && archived >= segment {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("WAL segment %s not archived within %s (pg_stat_archiver last_archived_wal|archived_count|failed_count|last_failed_wal: %s)\nserver log:\n%s",
				segment, timeout, status, n.LogTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postgresTempDir makes a fresh directory under os.TempDir owned by postgres (when running as root) that
// Cleanup removes. Its path is short: Unix socket paths are limited to about 100 bytes.
func postgresTempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	chownPostgres(t, dir)
	return dir
}

// mkdirAsPostgres makes path with mode perm, owned by postgres when running as root.
func mkdirAsPostgres(t testing.TB, path string, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	chownPostgres(t, path)
}

// chownPostgres gives path to user postgres when the test runs as root; otherwise it does nothing.
func chownPostgres(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, PostgreSQL and pgBackRest must run as user postgres, which is missing (%v): install postgresql-15", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("user postgres: %v", err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// tailFile is the last n lines of the file at path, or a note saying why there are none.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
