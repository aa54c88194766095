package quorum_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// pgBinDir holds the PostgreSQL 15 binaries the real-server tests use.
const pgBinDir = "/usr/lib/postgresql/15/bin"

// TestPostgresAcceptsFormat checks Format, Parse and PostgreSQL 15 against
// each other on a throwaway server: every Format output is accepted by
// ALTER SYSTEM (whose check hook runs PostgreSQL's own parser) and SHOW
// returns it unchanged; other forms PostgreSQL accepts parse; values
// PostgreSQL rejects are rejected by Parse too.
func TestPostgresAcceptsFormat(t *testing.T) {
	pg := startPostgres(t)

	specs := []quorum.Spec{
		{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}},
		{Method: quorum.MethodFirst, Number: 2, Names: []string{"a", "b c", "d"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"*"}},
		{Method: quorum.MethodFirst, Number: 1, Names: []string{"s1", "*"}},
		{Method: quorum.MethodAny, Number: 2, Names: []string{"S1", "MiXeD", "node_3"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"any", "first", "anyone"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{`x"y`, `"`, "it's", `back\slash`}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"nœud", "東京"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"1", "1a", "a$b", "pg-1", "a,b", "(x)"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{" lead", "trail ", "two  spaces"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("n", 63)}},
	}
	for _, spec := range specs {
		text, err := quorum.Format(spec)
		if err != nil {
			t.Fatalf("Format(%+v): %v", spec, err)
		}
		if err := pg.setSyncNames(text); err != nil {
			t.Errorf("PostgreSQL rejected Format(%+v) = %q: %v", spec, text, err)
			continue
		}
		shown := pg.waitShow(t, text)
		if shown != text {
			t.Errorf("SHOW synchronous_standby_names = %q, want %q", shown, text)
		}
		back, err := quorum.Parse(shown)
		if err != nil {
			t.Errorf("Parse(%q) from SHOW: %v", shown, err)
		}
		if back.Method != spec.Method || back.Number != spec.Number || strings.Join(back.Names, "\x00") != strings.Join(spec.Names, "\x00") {
			t.Errorf("Parse(%q) = %+v, want %+v", shown, back, spec)
		}
	}

	// Forms Format never writes but PostgreSQL accepts: Parse must accept them.
	for _, text := range []string{
		"s1, s2", "*", "2 (a, b)", "any 1 (a)", "Any   2(a,b)", "first 1 (\"any\")",
		"ANY 01 (a)", "1, 2", `""`, "ANY 3 (a, b)", "a, A", "ANY 1 (a$b, é)", " ANY\t1\r( s1\f,\vs2 ) ",
	} {
		if err := pg.setSyncNames(text); err != nil {
			t.Errorf("PostgreSQL rejected %q: %v", text, err)
			continue
		}
		if shown := pg.waitShow(t, text); shown != text {
			t.Errorf("SHOW = %q, want %q", shown, text)
		}
		if _, err := quorum.Parse(text); err != nil {
			t.Errorf("PostgreSQL accepts %q but Parse says: %v", text, err)
		}
	}

	// Values PostgreSQL rejects: Parse must reject them too.
	for _, text := range []string{
		"ANY (s1)", "ANY 0 (s1)", "0 (s1)", "ANY 1 s1", "ANY 1 (s1", "ANY 1 s1)", `ANY 1 ("s1)`,
		"ANY 1 (s1) x", "ANY 1 (s1))", "ANY 1 (any)", "any", "first", "   ", "ANY 1 (1abc)",
		"ANY 1 (pg-1)", "s1 s2", "s1 (a)", "ANY 1 ()", "ANY 1 (s1,)", "ANY -1 (s1)", "\t",
	} {
		if _, err := quorum.Parse(text); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", text)
		}
		if err := pg.setSyncNames(text); err == nil {
			t.Errorf("PostgreSQL accepted %q, which Parse rejects", text)
		} else if !strings.Contains(err.Error(), "synchronous") && !strings.Contains(err.Error(), "syntax error") && !strings.Contains(err.Error(), "unterminated") {
			t.Errorf("PostgreSQL rejected %q for an unexpected reason: %v", text, err)
		}
	}
}

// setSyncNames runs ALTER SYSTEM SET synchronous_standby_names and reloads
// the configuration; the error carries psql's output.
func (pg *pgServer) setSyncNames(text string) error {
	lit := "'" + strings.ReplaceAll(text, "'", "''") + "'"
	if _, err := pg.psql("ALTER SYSTEM SET synchronous_standby_names = " + lit); err != nil {
		return err
	}
	_, err := pg.psql("SELECT pg_reload_conf()")
	return err
}

// waitShow polls SHOW synchronous_standby_names on new connections until it
// returns want (the reload is asynchronous) or five seconds pass, and
// returns the last value seen.
func (pg *pgServer) waitShow(t *testing.T, want string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, err := pg.psql("SHOW synchronous_standby_names")
		if err != nil {
			t.Fatalf("SHOW synchronous_standby_names: %v", err)
		}
		if got = out; got == want {
			break
		}
	}
	return got
}

// pgServer is a throwaway PostgreSQL server on a loopback port.
type pgServer struct {
	dir  string
	port int
	cmd  *exec.Cmd
}

// psql runs one SQL command through psql and returns its unaligned,
// tuples-only output without the final newline.
func (pg *pgServer) psql(sql string) (string, error) {
	cmd := exec.Command(filepath.Join(pgBinDir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "postgres", "-d", "postgres", "-c", sql)
	cmd.Env = append(os.Environ(), "PGCLIENTENCODING=UTF8", "PGCONNECT_TIMEOUT=5")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql -c %q: %w: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// startPostgres initialises a cluster in a fresh directory and starts the
// postgres server process directly (so its PID is the one held), as the
// postgres user when the test runs as root. It fails the test, never skips,
// when the binaries or the user are missing. Cleanup stops the server by PID
// (SIGINT, a fast shutdown) and removes the directory.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	for _, b := range []string{"initdb", "postgres", "psql"} {
		if _, err := os.Stat(filepath.Join(pgBinDir, b)); err != nil {
			t.Fatalf("PostgreSQL 15 binary %s is missing (%v): install postgresql-15", b, err)
		}
	}
	var cred *syscall.Credential
	dir, err := os.MkdirTemp("", "pgnvme-quorum-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to run PostgreSQL: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(pgBinDir, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	port := freePort(t)
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(pgBinDir, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "fsync=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pg := &pgServer{dir: dir, port: port, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := pg.psql("SELECT 1")
		if err == nil {
			return pg
		}
		select {
		case werr := <-exited:
			exited <- werr
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres exited: %v\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres did not accept connections in 30s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
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
	return l.Addr().(*net.TCPAddr).Port
}
