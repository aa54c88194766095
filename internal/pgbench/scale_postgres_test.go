package pgbench_test

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

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// pgBinDir holds the PostgreSQL 15 binaries the real-server tests use.
const pgBinDir = "/usr/lib/postgresql/15/bin"

// TestBytesPerScaleOnPostgres re-measures BytesPerScale: it initialises a
// pgbench dataset at scale 10 on a throwaway PostgreSQL 15 server and checks
// that the four pgbench tables' pg_total_relation_size per unit of scale is
// within 10% of the constant.
func TestBytesPerScaleOnPostgres(t *testing.T) {
	const scale = 10
	pg := startPostgres(t)
	if _, err := pg.psql("CREATE DATABASE bench"); err != nil {
		t.Fatal(err)
	}
	initCmd := exec.Command(filepath.Join(pgBinDir, "pgbench"), "-i", "-q", "-s", strconv.Itoa(scale),
		"-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "postgres", "bench")
	initCmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i -s %d: %v\n%s", scale, err, out)
	}
	out, err := pg.psqlDB("bench", `SELECT sum(pg_total_relation_size(c)) FROM unnest(array['pgbench_accounts',
		'pgbench_branches', 'pgbench_tellers', 'pgbench_history']::regclass[]) AS c`)
	if err != nil {
		t.Fatal(err)
	}
	total, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("reading the total size %q: %v", out, err)
	}
	perScale := float64(total) / scale
	ratio := perScale / pgbench.BytesPerScale
	t.Logf("scale %d: %d bytes, %.0f bytes per scale, %.4f x BytesPerScale (%d)", scale, total, perScale, ratio, pgbench.BytesPerScale)
	if ratio < 0.9 || ratio > 1.1 {
		t.Errorf("measured %.0f bytes per scale at scale %d, %.1f%% off BytesPerScale = %d: re-measure and update the constant",
			perScale, scale, (ratio-1)*100, pgbench.BytesPerScale)
	}
}

// pgServer is a throwaway PostgreSQL server on a loopback port.
type pgServer struct {
	dir  string
	port int
	cmd  *exec.Cmd
}

// psql runs one SQL command in database postgres; see psqlDB.
func (pg *pgServer) psql(sql string) (string, error) { return pg.psqlDB("postgres", sql) }

// psqlDB runs one SQL command through psql in database db and returns its
// unaligned, tuples-only output without the final newline.
func (pg *pgServer) psqlDB(db, sql string) (string, error) {
	cmd := exec.Command(filepath.Join(pgBinDir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "postgres", "-d", db, "-c", sql)
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
	for _, b := range []string{"initdb", "postgres", "psql", "pgbench"} {
		if _, err := os.Stat(filepath.Join(pgBinDir, b)); err != nil {
			t.Fatalf("PostgreSQL 15 binary %s is missing (%v): install postgresql-15", b, err)
		}
	}
	var cred *syscall.Credential
	dir, err := os.MkdirTemp("", "pgnvme-pgbench-")
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
