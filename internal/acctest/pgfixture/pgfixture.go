// Package pgfixture is the PostgreSQL fixture of the tests: every test that needs a real server gets it
// here, made and run by internal/localnode, the engine of pgnvme_cluster's local platform, so a test and
// the product start PostgreSQL the same way (initdb or pg_basebackup, pgnvme.conf, pg_ctl as the server's
// user, the same checks and waits). The binaries, and so the major version, are localnode's: the newest
// installed /usr/lib/postgresql/*/bin. A missing binary or user fails the test; nothing skips.
//
// Servers listen on free 127.0.0.1 ports under a fresh short directory in os.TempDir, and the test's
// cleanup destroys them with localnode's Destroy: an immediate shutdown, SIGKILL to the postmaster and its
// children by PID when that fails, then the data directory, log and socket directory are removed.
//
// It imports no framework, SDK or driver, so the tests of pure packages may use it (depguard bans those
// imports from the packages, not from their tests).
package pgfixture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/internal/ports"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// stepTimeout bounds each step of a server's life: its creation, a start or stop, one psql command.
const stepTimeout = time.Minute

// install is the installed PostgreSQL as localnode resolves it.
type install struct {
	engine *localnode.Engine
	major  int
}

// installed resolves the engine and asks its postgres for the major version, once per test binary.
var installed = sync.OnceValues(func() (install, error) {
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		return install{}, fmt.Errorf("the PostgreSQL fixture needs the server binaries localnode runs: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	major, _, err := e.Version(ctx)
	if err != nil {
		return install{}, err
	}
	return install{engine: e, major: major}, nil
})

// Engine is the localnode engine every fixture server runs on, and the PostgreSQL major version of its
// binaries (the newest installed, as pgnvme_cluster takes it). A missing installation fails the test.
func Engine(t testing.TB) (*localnode.Engine, int) {
	t.Helper()
	in, err := installed()
	if err != nil {
		t.Fatal(err)
	}
	return in.engine, in.major
}

// Server is one PostgreSQL server of a test: a localnode node on 127.0.0.1.
type Server struct {
	// Engine is the localnode engine that made the server and runs it.
	Engine *localnode.Engine
	// Node is the server as localnode knows it: name, role, 127.0.0.1 and its port, data directory.
	Node localnode.Node
	// Major is the server's PostgreSQL major version.
	Major int

	dir string
}

// Options say how a primary is made. The zero value is a primary named "primary" with localnode's
// settings only.
type Options struct {
	// Name is the node's name (see localnode.Node); default "primary".
	Name string
	// Params are the cluster's parameters, written into pgnvme.conf as pgnvme_cluster writes its
	// parameters (e.g. fsync = off where durability is not what the test checks).
	Params map[string]string
	// TLS, when set, makes the server serve TLS with these files (localnode.Node.TLS), and the fixture's
	// own clients connect with them.
	TLS *localnode.TLS
}

func (o Options) name() string {
	if o.Name == "" {
		return "primary"
	}
	return o.Name
}

// Start makes a primary (Init) and starts it (localnode's Start: pg_ctl, then a wait until it accepts
// connections).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Init(t, opts)
	s.Start(t)
	return s
}

// Init makes a primary's data directory (localnode's InitPrimary: initdb, pg_hba.conf, pgnvme.conf with
// opts.Params) without starting it: for tests that change its files first, or only ask the server about
// its configuration (ConfigValue).
func Init(t testing.TB, opts Options) *Server {
	t.Helper()
	s := newServer(t, "", opts.name(), localnode.RolePrimary, freePorts(t, 1)[0])
	s.Node.TLS = opts.TLS
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := s.Engine.InitPrimary(ctx, s.Node, opts.Params); err != nil {
		t.Fatal(err)
	}
	return s
}

// Prepare makes an empty data directory for another program to fill (pgBackRest's restore), as the
// product prepares one (localnode's PrepareDataDir: mode 0700, owned by the server's user). Start the
// server once the directory holds a cluster.
func Prepare(t testing.TB, opts Options) *Server {
	t.Helper()
	s := newServer(t, "", opts.name(), localnode.RolePrimary, freePorts(t, 1)[0])
	if err := s.Engine.PrepareDataDir(s.Node); err != nil {
		t.Fatal(err)
	}
	return s
}

// newServer is a node value in dir (a new fixture directory when empty) whose destruction the test's
// cleanup owns from now on. Nothing is created yet.
func newServer(t testing.TB, dir, name string, role localnode.Role, port int) *Server {
	t.Helper()
	engine, major := Engine(t)
	if dir == "" {
		dir = ServerDir(t, "pgnvme-fx-")
	}
	s := &Server{
		Engine: engine,
		Node:   localnode.Node{Name: name, Role: role, Host: "127.0.0.1", Port: port, DataDir: filepath.Join(dir, name)},
		Major:  major,
		dir:    dir,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		if err := s.Engine.Destroy(ctx, s.Node); err != nil {
			t.Errorf("destroying PostgreSQL fixture node: %v", err)
		}
	})
	return s
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	p, err := ports.Free(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Dir is the fixture directory: it holds the data directories and logs of the server and its standbys.
func (s *Server) Dir() string { return s.dir }

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.Node.Port }

// StandbyOptions say how a standby is made.
type StandbyOptions struct {
	// Name is the node's name, which is also the application_name it gives its primary; default
	// "standby".
	Name string
	// ApplicationName, when set, is the application_name the standby gives its primary instead of Name:
	// for names localnode does not take as node names, such as "s 1". The fixture writes it into
	// primary_conninfo itself, quoted for libpq.
	ApplicationName string
}

// StartStandby makes a streaming standby of s (localnode's CreateStandby: pg_basebackup from the running
// primary) on a free 127.0.0.1 port next to s, and starts it. It does not wait for streaming.
func (s *Server) StartStandby(t testing.TB, opts StandbyOptions) *Server {
	t.Helper()
	return s.StartStandbys(t, opts)[0]
}

// StartStandbys is StartStandby for several standbys at once: they are copied and started in parallel.
func (s *Server) StartStandbys(t testing.TB, opts ...StandbyOptions) []*Server {
	t.Helper()
	ports := freePorts(t, len(opts))
	standbys := make([]*Server, len(opts))
	for i, o := range opts {
		name := o.Name
		if name == "" {
			name = "standby"
		}
		standbys[i] = newServer(t, s.dir, name, localnode.RoleStandby, ports[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, sb := range standbys {
		wg.Go(func() { errs[i] = sb.createStandby(ctx, s.Node, opts[i].ApplicationName) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return standbys
}

// createStandby copies s from primary, names it applicationName when that is set, and starts it.
func (s *Server) createStandby(ctx context.Context, primary localnode.Node, applicationName string) error {
	if err := s.Engine.CreateStandby(ctx, primary, s.Node); err != nil {
		return err
	}
	if applicationName != "" {
		if err := s.setApplicationName(primary, applicationName); err != nil {
			return fmt.Errorf("standby %s: %w", s.Node.Name, err)
		}
	}
	return s.Engine.Start(ctx, s.Node)
}

// setApplicationName rewrites the primary_conninfo pg_basebackup -R wrote into s's postgresql.auto.conf
// with name as application_name.
func (s *Server) setApplicationName(primary localnode.Node, name string) error {
	auto := filepath.Join(s.Node.DataDir, "postgresql.auto.conf")
	b, err := os.ReadFile(auto)
	if err != nil {
		return err
	}
	var kept strings.Builder
	for line := range strings.Lines(string(b)) {
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "primary_conninfo" {
			continue
		}
		kept.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			kept.WriteByte('\n')
		}
	}
	conninfo := fmt.Sprintf("host=%s port=%d user=%s application_name=%s",
		primary.Host, primary.Port, s.Engine.Superuser(), quoteConninfo(name))
	kept.WriteString("primary_conninfo = " + quoteConf(conninfo) + "\n")
	return s.Engine.WriteFileOwned(auto, []byte(kept.String()), 0o600)
}

// quoteConninfo quotes a libpq connection-string value.
func quoteConninfo(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// quoteConf quotes a postgresql.conf string value.
func quoteConf(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
}

// Start starts the server (localnode's Start) and waits until it accepts connections; a running server
// is left as it is.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := s.Engine.Start(ctx, s.Node); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts the server down (fast) now rather than at cleanup; a server that does not run is left as it
// is. A failure is reported with t.Errorf, so Stop may be deferred.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := s.Engine.Stop(ctx, s.Node, "fast"); err != nil {
		t.Errorf("%v\nlast lines of %s:\n%s", err, s.Node.LogFile(), s.LogTail(20))
	}
}

// Psql runs sql in database db (default postgres) through psql as the superuser over TCP (localnode's
// Psql) and returns its unaligned, tuples-only output without the final newline. It fails the test, with
// the end of the server's log, when psql fails.
func (s *Server) Psql(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := s.TryPsql(db, sql)
	if err != nil {
		t.Fatalf("%v\nlast lines of %s:\n%s", err, s.Node.LogFile(), s.LogTail(15))
	}
	return out
}

// TryPsql is Psql returning psql's failure, with its error output, instead of failing the test: for
// checking that PostgreSQL rejects something. It gives up after a minute, so a commit that waits for a
// synchronous standby fails rather than hangs.
func (s *Server) TryPsql(db, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	return s.Engine.Psql(ctx, s.Node, db, sql)
}

// LogTail is the last lines of the server's log.
func (s *Server) LogTail(lines int) string { return s.Engine.LogTail(s.Node, lines) }

// Bin is the path of the PostgreSQL program name (psql, pgbench, ...) of the server's own version: from
// the engine's binary directory. A missing program fails the test, naming the package to install.
func (s *Server) Bin(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(s.Engine.BinDir(), name)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("PostgreSQL %d program %s is missing from %s: install the postgresql-%d package (apt-get install postgresql-%d)",
			s.Major, name, s.Engine.BinDir(), s.Major, s.Major)
	}
	return path
}

// ConfigValue runs `postgres -D DATADIR -C name` as the server's user and returns the value the server
// reads from its configuration files. The server parses the whole configuration first, so an unknown
// parameter or invalid value anywhere is an error (carrying the server's message). It needs no running
// server and allocates no shared memory.
func (s *Server) ConfigValue(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	out, err := s.Engine.RunAsServerUser(ctx, s.dir, filepath.Join(s.Engine.BinDir(), "postgres"), "-D", s.Node.DataDir, "-C", name)
	if err != nil {
		return "", fmt.Errorf("postgres -C %s: %w", name, err)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// TargetTime returns the server's clock_timestamp() as a recovery target pgBackRest and PostgreSQL both
// accept: `YYYY-MM-DD HH:MM:SS.ffffff+00` (UTC, microseconds, explicit zone). Take it between two batches
// of commits with a pause on either side so that it falls strictly between their commit timestamps.
func (s *Server) TargetTime(t testing.TB) string {
	t.Helper()
	return s.Psql(t, "postgres", `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`)
}

// SwitchWALAndWaitArchived forces a WAL segment switch (pg_switch_wal) and waits up to timeout until
// pg_stat_archiver reports that segment (or a later one) archived; it fails the test, with the archiver's
// figures and the server log, when archiving fails or takes longer. It returns the segment's file name.
func (s *Server) SwitchWALAndWaitArchived(t testing.TB, timeout time.Duration) string {
	t.Helper()
	// The switch returns the end of the finished segment (the next one's start; where nothing was written since
	// the last switch, the current position, also a segment's start). PostgreSQL 18's pg_walfile_name names
	// the segment that starts at such a boundary, 15's the one that ends there: one byte before it is the
	// finished segment on both.
	seg := s.Psql(t, "postgres", "SELECT pg_walfile_name(pg_switch_wal() - 1)")
	if err := s.WaitArchived(seg, timeout); err != nil {
		t.Fatal(err)
	}
	return seg
}

// WaitArchived waits until pg_stat_archiver.last_archived_wal is segment (a 24-character WAL file name)
// or a later segment of the same timeline (WAL file names of one timeline order as strings).
func (s *Server) WaitArchived(segment string, timeout time.Duration) error {
	if len(segment) != 24 {
		return fmt.Errorf("%q is not a WAL segment file name", segment)
	}
	err := wait.Until(context.Background(), "WAL segment "+segment+" to be archived", timeout, 100*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			out, err := s.TryPsql("postgres", "SELECT coalesce(last_archived_wal, ''), archived_count, failed_count, coalesce(last_failed_wal, '') FROM pg_stat_archiver")
			if err != nil {
				return false, wait.NotYet(err)
			}
			archived, _, _ := strings.Cut(out, "|")
			if len(archived) == len(segment) && archived[:8] == segment[:8] && archived >= segment {
				return true, nil
			}
			return false, wait.NotYet(fmt.Errorf("pg_stat_archiver last_archived_wal|archived_count|failed_count|last_failed_wal: %s", out))
		})
	if err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, s.LogTail(40))
	}
	return nil
}

// WaitRecoveryEnded waits up to a minute until the server is out of recovery (pg_is_in_recovery() is
// false: a promotion, or a point-in-time restore that reached its target and promoted), and fails the
// test with the server's log otherwise.
func (s *Server) WaitRecoveryEnded(t testing.TB) {
	t.Helper()
	err := wait.Until(context.Background(), fmt.Sprintf("%s to end recovery", s.Node.Name), stepTimeout, 100*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			out, err := s.TryPsql("postgres", "SELECT pg_is_in_recovery()")
			if err != nil {
				return false, wait.NotYet(err)
			}
			if out != "f" {
				return false, wait.NotYet(fmt.Errorf("pg_is_in_recovery() = %s", out))
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("%v\nlast lines of %s:\n%s", err, s.Node.LogFile(), s.LogTail(60))
	}
}

// ServerDir is a fresh directory under os.TempDir named prefix plus a random suffix, for PostgreSQL data
// directories: short (a server's Unix socket lives in its data directory) and traversable by the server's
// user (postgres when the test runs as root). The test's end removes it.
func ServerDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
