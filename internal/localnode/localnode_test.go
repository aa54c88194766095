package localnode_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// newEngine resolves the installed PostgreSQL; a missing one fails the test.
func newEngine(t *testing.T) *localnode.Engine {
	t.Helper()
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatalf("local PostgreSQL is needed by these tests: %v", err)
	}
	return e
}

// baseDir is a fresh short directory under /tmp that the server's user can traverse, removed when the
// test ends (after the nodes are destroyed): pgfixture.ServerDir.
func baseDir(t *testing.T) string {
	t.Helper()
	return pgfixture.ServerDir(t, "pgnvme-lt-")
}

func psql(t *testing.T, e *localnode.Engine, n localnode.Node, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.Psql(ctx, n, "postgres", sql)
	if err != nil {
		t.Fatalf("%v\nlast lines of %s's log:\n%s", err, n.Name, e.LogTail(n, 15))
	}
	return out
}

// waitStreaming waits until primary's pg_stat_replication shows every named
// standby streaming.
func waitStreaming(t *testing.T, e *localnode.Engine, primary localnode.Node, names ...string) {
	t.Helper()
	acctest.WaitFor(t, time.Minute, fmt.Sprintf("%v streaming from %s", names, primary.Name), func() (bool, string) {
		out, err := e.Psql(context.Background(), primary, "",
			"SELECT application_name FROM pg_stat_replication WHERE state = 'streaming' ORDER BY 1")
		if err != nil {
			return false, err.Error()
		}
		got := strings.Fields(out)
		for _, n := range names {
			if !contains(got, n) {
				return false, "streaming: " + out
			}
		}
		return true, ""
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// processes is the postmaster of n and its children, for checking later that
// they are gone.
func processes(t *testing.T, e *localnode.Engine, n localnode.Node) []int {
	t.Helper()
	pid, ok, err := e.Running(n)
	if err != nil || !ok {
		t.Fatalf("node %s: Running = %d, %v, %v; want running", n.Name, pid, ok, err)
	}
	pids := []int{pid}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		p, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			pids = append(pids, p)
		}
	}
	if len(pids) < 3 {
		t.Fatalf("node %s: postmaster %d has only %d children", n.Name, pid, len(pids)-1)
	}
	return pids
}

// checkGone fails the test for every PID still alive (a zombie counts as gone).
func checkGone(t *testing.T, what string, pids []int) {
	t.Helper()
	for _, p := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 0 && fields[0] != "Z" {
			t.Errorf("%s: process %d is still alive: %s", what, p, s)
		}
	}
}

// TestLocalNodeLifecycle drives the engine through what the cluster resource
// does: a primary and two standbys streaming (one with a data directory too
// long for a Unix socket path), ANY 1 quorum, a commit with one standby down,
// primary loss, promotion, repointing, restart after a kill, pgbench, and
// destruction leaving nothing behind.
func TestLocalNodeLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	base := baseDir(t)
	ports := acctest.FreePorts(t, 3)
	longDir := filepath.Join(base, strings.Repeat("x", 100), "s2")
	primary := localnode.Node{Name: "primary", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: ports[0], DataDir: filepath.Join(base, "primary")}
	s1 := localnode.Node{Name: "s1", Role: localnode.RoleStandby, Host: "127.0.0.1", Port: ports[1], DataDir: filepath.Join(base, "s1")}
	s2 := localnode.Node{Name: "s2", Role: localnode.RoleStandby, Host: "127.0.0.1", Port: ports[2], DataDir: longDir}
	nodes := []localnode.Node{primary, s1, s2}
	t.Cleanup(func() {
		for _, n := range nodes {
			if err := e.Destroy(context.Background(), n); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	for _, n := range nodes {
		if err := e.Preflight(n); err != nil {
			t.Fatalf("Preflight: %v", err)
		}
	}
	params := map[string]string{"shared_buffers": "32MB", "cluster_name": `it's "pgnvme" \ local`, "max_wal_senders": "12"}

	start := time.Now()
	if err := e.InitPrimary(ctx, primary, params); err != nil {
		t.Fatal(err)
	}
	tInit := time.Since(start)
	if err := e.Start(ctx, primary); err != nil {
		t.Fatal(err)
	}
	tPrimary := time.Since(start)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []localnode.Node{s1, s2} {
		wg.Go(func() {
			if err := e.CreateStandby(ctx, primary, s); err != nil {
				errs[i] = err
				return
			}
			errs[i] = e.Start(ctx, s)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	waitStreaming(t, e, primary, "s1", "s2")
	t.Logf("primary + 2 standbys streaming in %s (initdb %s, primary up at %s)",
		time.Since(start).Round(time.Millisecond), tInit.Round(time.Millisecond), tPrimary.Round(time.Millisecond))

	// The servers run detached from this process: their own session, not our children.
	for _, n := range nodes {
		pid, _, _ := e.Running(n)
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
		if f[1] == strconv.Itoa(os.Getpid()) || f[3] != strconv.Itoa(pid) {
			t.Errorf("%s: postmaster %d has parent %s and session %s; want it detached, leading its own session", n.Name, pid, f[1], f[3])
		}
	}

	// Settings: parameters written quoted and copied to the standbys; each node on its own port and socket.
	if got := psql(t, e, s1, "SHOW cluster_name"); got != params["cluster_name"] {
		t.Errorf("cluster_name on s1 = %q, want %q", got, params["cluster_name"])
	}
	if got := psql(t, e, primary, "SHOW max_wal_senders"); got != "12" {
		t.Errorf("max_wal_senders = %q: parameters must override the replication defaults", got)
	}
	for _, n := range nodes {
		got, err := e.Parameters(n)
		if err != nil || !reflect.DeepEqual(got, params) {
			t.Errorf("Parameters(%s) = %v, %v; want %v", n.Name, got, err, params)
		}
		if got := psql(t, e, n, "SHOW port"); got != strconv.Itoa(n.Port) {
			t.Errorf("%s: port = %s, want %d", n.Name, got, n.Port)
		}
		if got := psql(t, e, n, "SHOW unix_socket_directories"); got != n.SocketDir() {
			t.Errorf("%s: unix_socket_directories = %s, want %s", n.Name, got, n.SocketDir())
		}
	}
	if s2.SocketDir() == s2.DataDir || !strings.HasPrefix(s2.SocketDir(), "/tmp/pgnvme-") {
		t.Errorf("s2's data directory is %d bytes long: want its socket under /tmp/pgnvme-*, got %s", len(s2.DataDir), s2.SocketDir())
	}
	if s1.SocketDir() != s1.DataDir {
		t.Errorf("s1's socket directory = %s, want its data directory", s1.SocketDir())
	}
	if got := psql(t, e, primary, "SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_replication"); got != "s1,s2" {
		t.Errorf("application_name of the standbys = %q, want s1,s2", got)
	}
	for n, want := range map[localnode.Node]localnode.Role{primary: localnode.RolePrimary, s1: localnode.RoleStandby} {
		if got, err := e.ConfiguredRole(n); err != nil || got != want {
			t.Errorf("ConfiguredRole(%s) = %q, %v; want %q", n.Name, got, err, want)
		}
	}
	if major, full, err := e.Version(ctx); err != nil || major < 10 || !strings.Contains(full, "PostgreSQL") {
		t.Errorf("Version = %d, %q, %v", major, full, err)
	}

	// ANY 1 (s1, s2): both standbys are quorum candidates.
	psql(t, e, primary, "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'")
	psql(t, e, primary, "SELECT pg_reload_conf()")
	acctest.WaitFor(t, 30*time.Second, "both standbys quorum", func() (bool, string) {
		out := psql(t, e, primary, "SELECT string_agg(application_name || '=' || sync_state, ',' ORDER BY application_name) FROM pg_stat_replication")
		return out == "s1=quorum,s2=quorum", out
	})

	// One standby down: a commit still succeeds (the other acknowledges it).
	if err := e.Stop(ctx, s2, "fast"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Running(s2); ok || err != nil {
		t.Fatalf("Running(s2) after Stop = %v, %v; want not running", ok, err)
	}
	commitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	if _, err := e.Psql(commitCtx, primary, "", "CREATE TABLE t (i int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("commit with s2 down under ANY 1: %v", err)
	}
	cancel()
	if err := e.Stop(ctx, s2, "fast"); err != nil {
		t.Errorf("Stop on a stopped node: %v", err)
	}
	if err := e.Start(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, s2); err != nil {
		t.Errorf("Start on a running node: %v", err)
	}
	waitStreaming(t, e, primary, "s1", "s2")
	psql(t, e, primary, "INSERT INTO t VALUES (2)")
	acctest.WaitFor(t, 30*time.Second, "both standbys caught up", func() (bool, string) {
		out := psql(t, e, primary, "SELECT count(*) FROM pg_stat_replication WHERE replay_lsn = pg_current_wal_lsn()")
		return out == "2", out
	})

	// Primary loss: SIGKILL to the postmaster and its children.
	primaryPIDs := processes(t, e, primary)
	if err := e.Kill(primary); err != nil {
		t.Fatal(err)
	}
	if pid, ok, err := e.Running(primary); ok || err != nil {
		t.Fatalf("Running(primary) after Kill = %d, %v, %v; want not running", pid, ok, err)
	}
	checkGone(t, "killed primary", primaryPIDs)
	if err := e.Kill(primary); err != nil {
		t.Errorf("Kill on a dead node: %v", err)
	}

	// Promote s1, repoint s2 to it and restart s2: it streams from s1 on the new timeline.
	if err := e.Promote(ctx, s1); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, e, s1, "SELECT pg_is_in_recovery()"); got != "f" {
		t.Fatalf("s1 after Promote: pg_is_in_recovery = %s", got)
	}
	if role, err := e.ConfiguredRole(s1); err != nil || role != localnode.RolePrimary {
		t.Errorf("ConfiguredRole(s1) after Promote = %q, %v", role, err)
	}
	psql(t, e, s1, "INSERT INTO t VALUES (3)")
	newParams := map[string]string{"work_mem": "7MB", "cluster_name": "s1-primary"}
	if err := e.SetParameters(s1, newParams); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(ctx, s1); err != nil {
		t.Fatal(err)
	}
	acctest.WaitFor(t, 10*time.Second, "work_mem reloaded on s1", func() (bool, string) {
		out := psql(t, e, s1, "SHOW work_mem")
		return out == "7MB", out
	})
	if got, err := e.Parameters(s1); err != nil || !reflect.DeepEqual(got, newParams) {
		t.Errorf("Parameters(s1) after SetParameters = %v, %v; want %v", got, err, newParams)
	}
	if got := psql(t, e, s1, "SHOW port"); got != strconv.Itoa(s1.Port) {
		t.Errorf("s1's port after SetParameters = %s, want %d", got, s1.Port)
	}
	if err := e.Repoint(ctx, s2, s1); err != nil {
		t.Fatal(err)
	}
	auto, err := os.ReadFile(filepath.Join(s2.DataDir, "postgresql.auto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(auto), "primary_conninfo"); c != 1 || !strings.Contains(string(auto), fmt.Sprintf("port=%d", s1.Port)) {
		t.Errorf("s2's postgresql.auto.conf after Repoint has %d primary_conninfo lines, want one to port %d:\n%s", c, s1.Port, auto)
	}
	if err := e.Stop(ctx, s2, "fast"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, s2); err != nil {
		t.Fatal(err)
	}
	waitStreaming(t, e, s1, "s2")
	acctest.WaitFor(t, 30*time.Second, "s2 replays s1's writes", func() (bool, string) {
		out := psql(t, e, s2, "SELECT string_agg(i::text, ',' ORDER BY i) FROM t")
		return out == "1,2,3", out
	})
	if err := e.Repoint(ctx, s1, s2); err == nil || !strings.Contains(err.Error(), "not a standby") {
		t.Errorf("Repoint of the promoted s1: err = %v, want 'not a standby'", err)
	}

	// The killed primary restarts from its stale postmaster.pid (crash recovery), with every committed row.
	if err := e.Start(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, e, primary, "SELECT count(*) FROM t"); got != "2" {
		t.Errorf("rows on the restarted primary = %s, want 2", got)
	}

	// pgbench against the new primary, with progress lines streamed.
	bin, err := localnode.FindBinary("pgbench", "")
	if err != nil {
		t.Fatal(err)
	}
	conn := []string{"-h", s1.Host, "-p", strconv.Itoa(s1.Port), "-U", "postgres"}
	if _, _, err := localnode.RunPgbench(ctx, bin, append([]string{"-i", "-q", "-s", "1"}, append(conn, "postgres")...), nil, nil); err != nil {
		t.Fatal(err)
	}
	var progress []string
	stdout, _, err := localnode.RunPgbench(ctx, bin, append([]string{"-T", "2", "-P", "1", "-c", "2"}, append(conn, "postgres")...), nil,
		func(line string) {
			if strings.HasPrefix(line, "progress:") {
				progress = append(progress, line)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) == 0 || !strings.Contains(stdout, "tps = ") {
		t.Errorf("pgbench: %d progress lines, stdout:\n%s", len(progress), stdout)
	}

	// Destroy leaves no process, no data directory, no log and no socket directory; twice is fine.
	var pids []int
	for _, n := range nodes {
		pids = append(pids, processes(t, e, n)...)
	}
	for _, n := range nodes {
		if err := e.Destroy(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	checkGone(t, "destroyed nodes", pids)
	for _, n := range nodes {
		if _, ok, err := e.Running(n); ok || err != nil {
			t.Errorf("Running(%s) after Destroy = %v, %v", n.Name, ok, err)
		}
		for _, p := range []string{n.DataDir, n.LogFile(), n.SocketDir()} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after Destroy: %s still there (%v)", n.Name, p, err)
			}
		}
		if err := e.Destroy(ctx, n); err != nil {
			t.Errorf("Destroy of a destroyed node: %v", err)
		}
	}
}

func TestLocalInitPrimaryRejectsNonEmptyDir(t *testing.T) {
	e := newEngine(t)
	base := baseDir(t)
	data := filepath.Join(base, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(data, "precious.txt")
	if err := os.WriteFile(keep, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := localnode.Node{Name: "p", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: acctest.FreePorts(t, 1)[0], DataDir: data}
	err := e.InitPrimary(context.Background(), n, nil)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("InitPrimary into a non-empty directory: err = %v, want 'not empty'", err)
	}
	if err := e.Preflight(n); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Preflight: err = %v, want 'not empty'", err)
	}
	if err := e.Destroy(context.Background(), n); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Destroy of a non-PostgreSQL directory: err = %v, want a refusal", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "keep me" {
		t.Errorf("the existing file was touched: %q, %v", b, err)
	}
}

func TestLocalInvalidInput(t *testing.T) {
	e := newEngine(t)
	base := baseDir(t)
	good := localnode.Node{Name: "p", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: 5999, DataDir: filepath.Join(base, "p")}
	nodeCases := []struct {
		name string
		edit func(*localnode.Node)
		want string
	}{
		{"empty name", func(n *localnode.Node) { n.Name = "" }, "node name"},
		{"name with a space", func(n *localnode.Node) { n.Name = "a b" }, "node name"},
		{"name too long", func(n *localnode.Node) { n.Name = strings.Repeat("a", 64) }, "node name"},
		{"standby role", func(n *localnode.Node) { n.Role = localnode.RoleStandby }, "InitPrimary makes a primary"},
		{"unknown role", func(n *localnode.Node) { n.Role = "leader" }, "role"},
		{"not loopback", func(n *localnode.Node) { n.Host = "10.0.0.1" }, "loopback"},
		{"host name", func(n *localnode.Node) { n.Host = "localhost" }, "loopback"},
		{"port 0", func(n *localnode.Node) { n.Port = 0 }, "port"},
		{"port too high", func(n *localnode.Node) { n.Port = 70000 }, "port"},
		{"relative data dir", func(n *localnode.Node) { n.DataDir = "data" }, "absolute"},
		{"root data dir", func(n *localnode.Node) { n.DataDir = "/" }, "absolute"},
	}
	for _, tc := range nodeCases {
		t.Run(tc.name, func(t *testing.T) {
			n := good
			tc.edit(&n)
			err := e.InitPrimary(context.Background(), n, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	paramCases := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"port", map[string]string{"port": "5432"}, "node's port"},
		{"listen_addresses", map[string]string{"Listen_Addresses": "*"}, "node's host"},
		{"logging_collector", map[string]string{"logging_collector": "on"}, "LogTail"},
		{"primary_conninfo", map[string]string{"primary_conninfo": "host=x"}, "Repoint"},
		{"bad name", map[string]string{"shared buffers": "1GB"}, "not a PostgreSQL parameter name"},
		{"line break", map[string]string{"work_mem": "4MB\nfsync = off"}, "line break"},
		{"case duplicate", map[string]string{"work_mem": "4MB", "WORK_MEM": "8MB"}, "twice"},
	}
	for _, tc := range paramCases {
		t.Run(tc.name, func(t *testing.T) {
			err := e.InitPrimary(context.Background(), good, tc.params)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(good.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected input created %s (%v)", good.DataDir, err)
	}
	if err := e.Stop(context.Background(), good, "sometimes"); err == nil || !strings.Contains(err.Error(), "fast, smart or immediate") {
		t.Errorf("Stop with a bad mode: err = %v", err)
	}
}

// TestLocalAbsentNode: stopping, killing and destroying a node that does not
// exist is success; starting it says what to do.
func TestLocalAbsentNode(t *testing.T) {
	e := newEngine(t)
	n := localnode.Node{Name: "ghost", Role: localnode.RoleStandby, Host: "127.0.0.1", Port: 5999, DataDir: filepath.Join(baseDir(t), "ghost")}
	ctx := context.Background()
	if _, ok, err := e.Running(n); ok || err != nil {
		t.Errorf("Running = %v, %v", ok, err)
	}
	if err := errors.Join(e.Stop(ctx, n, ""), e.Kill(n), e.Destroy(ctx, n)); err != nil {
		t.Errorf("Stop, Kill, Destroy of an absent node: %v", err)
	}
	if err := e.Start(ctx, n); err == nil || !strings.Contains(err.Error(), "InitPrimary or CreateStandby") {
		t.Errorf("Start of an absent node: err = %v", err)
	}
	if _, err := e.ConfiguredRole(n); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ConfiguredRole of an absent node: err = %v, want ErrNotExist", err)
	}
}

func TestLocalNewErrors(t *testing.T) {
	cases := []struct {
		name string
		opts localnode.Options
		want string
	}{
		{"missing bin dir", localnode.Options{BinDir: "/usr/lib/postgresql/99/bin"}, "apt-get install postgresql-99"},
		{"unknown user", localnode.Options{RunAsUser: "no-such-user-pgnvme"}, "does not exist"},
		{"bad superuser", localnode.Options{Superuser: "bad name"}, "plain identifier"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name string
			opts localnode.Options
			want string
		}{"root", localnode.Options{RunAsUser: "root"}, "refuses to run as root"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := localnode.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	e := newEngine(t)
	if os.Geteuid() == 0 && e.RunAsUser() != "postgres" {
		t.Errorf("RunAsUser as root = %q, want postgres", e.RunAsUser())
	}
	if _, err := os.Stat(filepath.Join(e.BinDir(), "initdb")); err != nil {
		t.Errorf("BinDir %s: %v", e.BinDir(), err)
	}
}

func TestLocalPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	err = localnode.PortFree("127.0.0.1", port)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d on 127.0.0.1 is in use", port)) {
		t.Errorf("PortFree on a listening port: err = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := localnode.PortFree("127.0.0.1", port); err != nil {
		t.Errorf("PortFree after the listener closed: %v", err)
	}
}

func TestLocalFindBinary(t *testing.T) {
	p, err := localnode.FindBinary("pgbench", "")
	if err != nil {
		t.Fatalf("FindBinary(pgbench): %v", err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("FindBinary(pgbench) = %s, not an executable (%v)", p, err)
	}
	e := newEngine(t)
	explicit := filepath.Join(e.BinDir(), "pgbench")
	if got, err := localnode.FindBinary("pgbench", explicit); err != nil || got != explicit {
		t.Errorf("FindBinary with an explicit path = %s, %v", got, err)
	}
	if _, err := localnode.FindBinary("pgbench", "/nonexistent/pgbench"); err == nil {
		t.Error("FindBinary with a missing explicit path: no error")
	}
	if _, err := localnode.FindBinary("pgnvme-no-such-program", ""); err == nil || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("FindBinary of a missing program: err = %v", err)
	}
}

func TestLocalRunPgbenchErrors(t *testing.T) {
	bin, err := localnode.FindBinary("pgbench", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, stderr, err := localnode.RunPgbench(ctx, bin, []string{"--no-such-option"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "unrecognized option") || !strings.Contains(stderr, "unrecognized option") {
		t.Errorf("bad option: err = %v, stderr = %q; want pgbench's 'unrecognized option'", err, stderr)
	}
	port := acctest.FreePorts(t, 1)[0]
	var lines []string
	_, _, err = localnode.RunPgbench(ctx, bin, []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-t", "1", "postgres"},
		nil, func(l string) { lines = append(lines, l) })
	if err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused connection: err = %v; want pgbench's connection error", err)
	}
	if len(lines) == 0 {
		t.Error("onLine saw no stderr line")
	}
	out, _, err := localnode.RunPgbench(ctx, bin, []string{"--version"}, nil, nil)
	if err != nil || !strings.HasPrefix(out, "pgbench (PostgreSQL)") {
		t.Errorf("--version = %q, %v", out, err)
	}
}

// TestLocalUnreachableDataDir: a data directory the server's user could not
// reach is refused up front, with nothing created.
func TestLocalUnreachableDataDir(t *testing.T) {
	e := newEngine(t)
	dir, err := os.MkdirTemp("", "pgnvme-lt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	want := "cannot reach" // root: the directory is root's, mode 0700, and postgres runs the server
	if os.Geteuid() != 0 {
		want = "must be writable" // the caller runs the server and cannot write here
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	}
	n := localnode.Node{Name: "p", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: acctest.FreePorts(t, 1)[0], DataDir: filepath.Join(dir, "cluster", "p")}
	if err := e.Preflight(n); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Preflight: err = %v, want %q", err, want)
	} else {
		t.Log(err)
	}
	if err := e.InitPrimary(context.Background(), n, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("InitPrimary: err = %v, want %q", err, want)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("a refused node left %v in %s (%v)", entries, dir, err)
	}
}

// Each major's binaries are found by the major: this machine has 15 (Debian's package) and the default
// major (scripts/test-deps.sh builds it into /usr/lib/postgresql/18); a major that is not installed is an
// error that names its package and the majors that are.
func TestBinDirForMajor(t *testing.T) {
	ctx := context.Background()
	installed := localnode.InstalledMajors()
	for _, major := range []int{15, capacity.DefaultPostgresMajor} {
		if !slices.Contains(installed, major) {
			t.Fatalf("installed majors %v lack %d: run `bash scripts/test-deps.sh` as root", installed, major)
		}
		dir, err := localnode.BinDirForMajor(ctx, major)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("/usr/lib/postgresql/%d/bin", major); dir != want {
			t.Errorf("BinDirForMajor(%d) = %s, want %s", major, dir, want)
		}
		e, err := localnode.New(localnode.Options{BinDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		got, full, err := e.Version(ctx)
		if err != nil || got != major {
			t.Errorf("the binaries of %s are PostgreSQL %d (%q, %v), want %d", dir, got, full, err, major)
		}
	}
	if !slices.IsSortedFunc(installed, func(a, b int) int { return b - a }) {
		t.Errorf("InstalledMajors = %v, want newest first", installed)
	}
	_, err := localnode.BinDirForMajor(ctx, 13)
	var missing *localnode.MajorNotInstalledError
	if !errors.As(err, &missing) || missing.Major != 13 {
		t.Fatalf("BinDirForMajor(13) = %v, want a MajorNotInstalledError", err)
	}
	for _, want := range []string{"PostgreSQL 13 is not installed", "apt-get install postgresql-13", "installed majors: " + strconv.Itoa(installed[0])} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
