package bootstrap_test

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgtest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// TestRender_postgres15AcceptsPrimary renders a primary of a three-node
// cluster (tuned for a small machine, PostgreSQL 15, pgBackRest archive to a
// repository on this machine) into a fresh initdb'd data directory, the way
// a platform would, and proves the real server takes all of it:
//
//   - `postgres -C` reads the whole configuration (it exits non-zero on any
//     unknown parameter or invalid value, synchronous_standby_names included,
//     whose check parses the quorum syntax) and prints each setting as the
//     server holds it;
//   - the server starts with the rendered pg_hba.conf (it refuses to start
//     with an invalid one);
//   - a standby's rendered primary_conninfo connects, as a client and as a
//     replication connection, with the standby's name as application_name;
//   - pgBackRest, configured only by the rendered pgbackrest.conf, creates the
//     stanza and `pgbackrest check` sees a WAL segment arrive through the
//     rendered archive_command (run by the server, from paths with a space, a
//     quote and a '%' in them);
//   - the rendered restore_command fetches that segment back.
//
// pgBackRest is part of the local platform; a missing binary fails the test.
func TestRender_postgres15AcceptsPrimary(t *testing.T) {
	postgres := pgtest.Bin(t, "postgres")
	psql := pgtest.Bin(t, "psql")
	pgbackrest, err := exec.LookPath("pgbackrest")
	if err != nil {
		t.Fatalf("pgBackRest is needed to check the rendered archive settings and is not on PATH: install the pgbackrest package (apt-get install pgbackrest): %v", err)
	}

	dataDir := pgtest.InitDB(t)
	base := filepath.Dir(dataDir) // owned by postgres when the test runs as root
	// Paths a shell and PostgreSQL's %-escapes must both get right.
	pgbrDir := filepath.Join(base, "pgbr conf 100% it's")
	for _, d := range []string{pgbrDir, filepath.Join(pgbrDir, "repo"), filepath.Join(pgbrDir, "log"),
		filepath.Join(pgbrDir, "lock"), filepath.Join(pgbrDir, "spool")} {
		mkdirForPostgres(t, d)
	}

	params, err := capacity.Tune(capacity.Hardware{
		VCPUs: 2, MemoryGiB: 2, DiskGiB: 20, Storage: capacity.StorageNVMe,
		Workload: capacity.WorkloadOLTP, MaxConnections: 50, PostgresMajor: 15,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := bootstrap.Cluster{
		Name:          "demo",
		PostgresMajor: 15,
		// "any" must be quoted in synchronous_standby_names; the third name
		// needs quotes, a doubled quote, and a backslash.
		Nodes: []string{"pg-a", "any", `Pg "C" it's \x`},
		Synchronous: bootstrap.Synchronous{
			Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitRemoteApply,
		},
		Parameters: params,
		Archive: &bootstrap.Archive{
			PgBackRestOptions: map[string]string{
				"repo1-type":           "posix",
				"repo1-path":           filepath.Join(pgbrDir, "repo"),
				"lock-path":            filepath.Join(pgbrDir, "lock"),
				"repo1-retention-full": "1",
				"start-fast":           "y",
				"log-level-console":    "warn",
				"log-level-file":       "detail",
			},
		},
	}
	port := freePort(t)
	primary := bootstrap.Node{
		Name:                 "pg-a",
		Role:                 bootstrap.RolePrimary,
		Port:                 port,
		DataDir:              dataDir,
		SocketDir:            base,
		PgBackRestConfigPath: filepath.Join(pgbrDir, "pgbackrest.conf"),
		PgBackRestLogDir:     filepath.Join(pgbrDir, "log"),
		PgBackRestSpoolDir:   filepath.Join(pgbrDir, "spool"),
		ArchiverPath:         pgbackrest,
		ReplicationUser:      "postgres",
		AllowedCIDRs:         []string{"127.0.0.1/32", "10.0.0.0/8"},
	}
	r, err := bootstrap.Render(c, primary)
	if err != nil {
		t.Fatal(err)
	}

	// Write it as a platform does: the node's identity, then the rendered
	// parameters, after initdb's postgresql.conf.
	identity := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(port),
		"unix_socket_directories": base,
		"fsync":                   "off",
	}
	appendFile(t, filepath.Join(dataDir, "postgresql.conf"),
		"\n# node identity (the platform's)\n"+bootstrap.FormatConf(identity)+"\n# rendered by bootstrap\n"+bootstrap.FormatConf(r.Parameters))
	writeFileForPostgres(t, filepath.Join(dataDir, "pg_hba.conf"), r.HBAFile())
	writeFileForPostgres(t, primary.PgBackRestConfigPath, r.PgBackRestConf)

	// Every rendered parameter, as the server reads it.
	exact := map[string]string{ // values postgres -C prints as rendered
		"synchronous_standby_names": `ANY 1 ("any", "Pg ""C"" it's \x")`,
		"synchronous_commit":        "remote_apply",
		"archive_mode":              "on",
		"hot_standby":               "on",
		"wal_level":                 "replica",
		"wal_log_hints":             "on",
		"max_wal_senders":           "10",
		"max_replication_slots":     "10",
		"archive_timeout":           "60",
		"wal_keep_size":             "256",
	}
	for _, k := range []string{"archive_command", "restore_command"} {
		exact[k] = r.Parameters[k]
	}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		got, err := showSetting(t, postgres, dataDir, k)
		if err != nil {
			t.Fatalf("postgres 15 refused the rendered configuration (asking for %s): %v\n%s", k, err, bootstrap.FormatConf(r.Parameters))
		}
		if want, ok := exact[k]; ok && got != want {
			t.Errorf("%s: PostgreSQL reads %q, want %q", k, got, want)
		}
	}

	// Start it with the rendered pg_hba.conf.
	srv := startPostgres(t, postgres, dataDir, base)

	// A standby's primary_conninfo reaches this primary, quoted name intact.
	standby := primary
	standby.Name, standby.Role = `Pg "C" it's \x`, bootstrap.RoleStandby
	standby.PrimaryHost, standby.PrimaryPort = "127.0.0.1", port
	sr, err := bootstrap.Render(c, standby)
	if err != nil {
		t.Fatal(err)
	}
	if !sr.StandbySignal {
		t.Error("a standby's rendering has no standby.signal")
	}
	waitReady(t, srv, func() error {
		_, err := runPsql(psql, sr.PrimaryConnInfo+" dbname=postgres", "SELECT 1")
		return err
	})
	if got, err := runPsql(psql, sr.PrimaryConnInfo+" dbname=postgres", "SHOW application_name"); err != nil || got != standby.Name {
		t.Errorf("application_name through primary_conninfo %q = %q, %v; want %q", sr.PrimaryConnInfo, got, err, standby.Name)
	}
	if got, err := runPsql(psql, sr.PrimaryConnInfo+" replication=true", "IDENTIFY_SYSTEM"); err != nil || !strings.Contains(got, "|1|") {
		t.Errorf("replication connection through primary_conninfo: %q, %v", got, err)
	}

	// pgBackRest, from the rendered configuration only, and the server's
	// archive_command.
	pgbr := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(pgbackrest, append([]string{"--config=" + primary.PgBackRestConfigPath, "--stanza=demo"}, args...)...)
		cmd.Dir = base
		pgtest.RunAsPostgres(t, cmd)
		out, err := cmd.CombinedOutput()
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(pgbrDir, "log", "demo-"+args[0]+".log"))
			t.Fatalf("pgbackrest %s: %v\n%s\nlog:\n%s\nserver log:\n%s", strings.Join(args, " "), err, out, tail(string(log), 40), srv.log())
		}
		return string(out)
	}
	pgbr("stanza-create")
	pgbr("check") // switches WAL and waits until the segment is in the repository
	archived, err := runPsql(psql, sr.PrimaryConnInfo+" dbname=postgres", "SELECT last_archived_wal FROM pg_stat_archiver")
	if err != nil || len(archived) != 24 {
		t.Fatalf("pg_stat_archiver.last_archived_wal = %q, %v: the server archived nothing", archived, err)
	}

	// restore_command, as the server would run it in recovery.
	restoreTo := "pg_wal/RECOVERYXLOG-test"
	cmdline := expandPercent(r.Parameters["restore_command"], map[byte]string{'f': archived, 'p': restoreTo})
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir = dataDir
	pgtest.RunAsPostgres(t, cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restore_command %q: %v\n%s", cmdline, err, out)
	}
	fi, err := os.Stat(filepath.Join(dataDir, restoreTo))
	if err != nil || fi.Size() != 16<<20 {
		t.Fatalf("restore_command fetched %v (%v), want a 16 MiB WAL segment", fi, err)
	}
}

// TestRender_walgCommandsReadTheEnvFile runs the rendered WAL-G
// archive_command and restore_command with sh, as PostgreSQL does, against a
// stand-in wal-g that records its arguments and environment (WAL-G itself is
// not installable here): the commands must source the rendered environment
// file, export it, and pass WAL-G the segment.
func TestRender_walgCommandsReadTheEnvFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal g %dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "record")
	stub := filepath.Join(dir, "wal-g")
	script := "#!/bin/sh\n" +
		"printf 'args=%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> \"$RECORD\"\n" +
		"printf 'prefix=%s region=%s sse=%s\\n' \"$WALG_S3_PREFIX\" \"$AWS_REGION\" \"$WALG_S3_SSE\" >> \"$RECORD\"\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	c := cluster3()
	c.Archive = &bootstrap.Archive{WALGEnv: s3Archive.WALGEnv()}
	n := ec2Node("pg-a", bootstrap.RolePrimary)
	n.WALGEnvPath = filepath.Join(dir, "walg env's.env")
	r, err := bootstrap.Render(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.WALGEnvPath, []byte(r.WALGEnvFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		param, want string
	}{
		{"archive_command", "args=wal-push|pg_wal/000000010000000000000003|"},
		{"restore_command", "args=wal-fetch|000000010000000000000003|pg_wal/RECOVERYXLOG"},
	} {
		cmdline := expandPercent(r.Parameters[tc.param], map[byte]string{'p': map[string]string{
			"archive_command": "pg_wal/000000010000000000000003", "restore_command": "pg_wal/RECOVERYXLOG",
		}[tc.param], 'f': "000000010000000000000003"})
		cmd := exec.Command("/bin/sh", "-c", cmdline)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "RECORD=" + record}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", tc.param, cmdline, err, out)
		}
		got, _ := os.ReadFile(record)
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		if len(lines) < 2 || lines[len(lines)-2] != tc.want ||
			lines[len(lines)-1] != "prefix=s3://pg-archive/clusters/demo region=eu-west-1 sse=AES256" {
			t.Errorf("%s ran wal-g with:\n%s\nwant %q and the environment file's variables", tc.param, got, tc.want)
		}
	}

	// A missing environment file fails the command instead of archiving nowhere.
	if err := os.Remove(n.WALGEnvPath); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", expandPercent(r.Parameters["archive_command"], map[byte]string{'p': "pg_wal/x"}))
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "RECORD=" + record}
	if err := cmd.Run(); err == nil {
		t.Error("archive_command succeeded without its environment file")
	}
}

// expandPercent replaces %x in a PostgreSQL archive or restore command as the
// server does: %% is %, %p and %f (and %r) are their values, and any other %
// is kept.
func expandPercent(command string, values map[byte]string) string {
	var b strings.Builder
	for i := 0; i < len(command); i++ {
		if command[i] == '%' && i+1 < len(command) {
			if command[i+1] == '%' {
				b.WriteByte('%')
				i++
				continue
			}
			if v, ok := values[command[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(command[i])
	}
	return b.String()
}

// showSetting runs `postgres -D dataDir -C name` as postgres.
func showSetting(t *testing.T, postgres, dataDir, name string) (string, error) {
	t.Helper()
	cmd := exec.Command(postgres, "-D", dataDir, "-C", name)
	cmd.Dir = filepath.Dir(dataDir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	pgtest.RunAsPostgres(t, cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// server is a postgres process this test started.
type server struct {
	logPath string
	done    chan struct{}
	err     error
}

func (s *server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return tail(string(b), 40)
}

// startPostgres starts the server on dataDir as postgres and stops it (fast
// shutdown) in Cleanup.
func startPostgres(t *testing.T, postgres, dataDir, logDir string) *server {
	t.Helper()
	s := &server{logPath: filepath.Join(logDir, "postgres.log"), done: make(chan struct{})}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(postgres, "-D", dataDir)
	cmd.Dir = logDir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	pgtest.RunAsPostgres(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// waitReady waits up to 30 seconds until ready succeeds, failing the test
// with the server's log when the server exits or the time is up.
func waitReady(t *testing.T, s *server, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			t.Fatalf("postgres exited: %v\n%s", s.err, s.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept connections in 30s: %v\n%s", err, s.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runPsql runs one command through psql with connection string conninfo and
// returns its unaligned, tuples-only output without the final newline.
func runPsql(psql, conninfo, sql string) (string, error) {
	cmd := exec.Command(psql, "-X", "-q", "-A", "-t", "-d", conninfo, "-c", sql)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "PGCONNECT_TIMEOUT=5"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql -d %q -c %q: %w: %s", conninfo, sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// mkdirForPostgres makes dir, owned by postgres when the test runs as root.
func mkdirForPostgres(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	chownPostgres(t, dir)
}

// writeFileForPostgres writes path, owned by postgres when the test runs as root.
func writeFileForPostgres(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	chownPostgres(t, path)
}

// appendFile appends text to an existing file (keeping its owner).
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// chownPostgres gives path to the owner of the directory pgtest.InitDB made
// (postgres when the test runs as root).
func chownPostgres(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner for %s", filepath.Dir(path))
	}
	if err := os.Chown(path, int(st.Uid), int(st.Gid)); err != nil {
		t.Fatal(err)
	}
}

// freePort asks the kernel for a free loopback TCP port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
