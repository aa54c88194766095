// Package pgtest runs throwaway PostgreSQL 15 clusters for tests that check
// their results against the real server. It uses the Debian/Ubuntu
// postgresql-15 binaries and runs them as user postgres when the test runs as
// root (the server refuses to run as root). A missing binary or user fails
// the test; it never skips.
//
// It uses the standard library only, so any package's tests can import it.
package pgtest

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
)

// binDir holds the PostgreSQL 15 binaries.
const binDir = "/usr/lib/postgresql/15/bin"

// BinDir returns the directory of the PostgreSQL 15 binaries, or an error
// naming the package to install when it is missing.
func BinDir() (string, error) {
	if _, err := os.Stat(binDir); err != nil {
		return "", fmt.Errorf("PostgreSQL 15 binaries are missing (%w): install the postgresql-15 package (apt-get install postgresql-15)", err)
	}
	return binDir, nil
}

// Bin returns the path of the PostgreSQL 15 binary name (initdb, postgres,
// psql, pgbench, ...) and fails the test when it is missing.
func Bin(t testing.TB, name string) string {
	t.Helper()
	dir, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("PostgreSQL 15 binary %s is missing (%v): install the postgresql-15 package (apt-get install postgresql-15)", name, err)
	}
	return path
}

// RunAsPostgres makes cmd run as user postgres when the test runs as root,
// and fails the test when that user does not exist. Otherwise it leaves cmd
// to run as the current user.
func RunAsPostgres(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	uid, gid := postgresUser(t)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
}

// postgresUser looks up user postgres for a test running as root.
func postgresUser(t testing.TB) (uid, gid uint32) {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, PostgreSQL must run as user postgres, which is missing (%v): install postgresql-15 or add the user", err)
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		t.Fatalf("user postgres has uid %q: %v", u.Uid, err)
	}
	g, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		t.Fatalf("user postgres has gid %q: %v", u.Gid, err)
	}
	return uint32(id), uint32(g)
}

// InitDB initialises a cluster (superuser postgres, trust authentication,
// UTF8, locale C, no fsync) and returns its data directory. The data
// directory sits in a fresh directory under os.TempDir, owned by postgres
// when the test runs as root, that Cleanup removes. The path is kept short:
// Start puts the server's Unix socket there.
func InitDB(t testing.TB) string {
	t.Helper()
	initdb := Bin(t, "initdb")
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		uid, gid := postgresUser(t)
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	RunAsPostgres(t, cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	return data
}

// Server is a running throwaway PostgreSQL server on a loopback port.
type Server struct {
	port int
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Start initialises a cluster with InitDB and starts the postgres server
// process directly (so its PID is the one held) on a free 127.0.0.1 port,
// with fsync off, and waits up to 30 seconds until it accepts connections.
// Cleanup stops the server by PID (SIGINT, a fast shutdown; SIGKILL after
// 30 seconds) before the directory is removed.
func Start(t testing.TB) *Server {
	t.Helper()
	postgres := Bin(t, "postgres")
	Bin(t, "psql")
	data := InitDB(t)
	dir := filepath.Dir(data)

	s := &Server{port: freePort(t)}
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "fsync=off")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	RunAsPostgres(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	// done is closed once Wait has returned and set waitErr.
	var waitErr error
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.TryPsql("postgres", "SELECT 1")
		if err == nil {
			return s
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres exited: %v\n%s", waitErr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres did not accept connections in 30s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Psql runs one SQL command through psql as user postgres in database db
// and returns its unaligned, tuples-only output without the final newline.
// It fails the test when psql fails.
func (s *Server) Psql(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := s.TryPsql(db, sql)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryPsql is Psql returning psql's failure, with its error output, instead
// of failing the test: for checking that PostgreSQL rejects something.
func (s *Server) TryPsql(db, sql string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCLIENTENCODING=UTF8", "PGCONNECT_TIMEOUT=5")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql -d %s -c %q: %w: %s", db, sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// freePort asks the kernel for a free loopback TCP port.
func freePort(t testing.TB) int {
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
