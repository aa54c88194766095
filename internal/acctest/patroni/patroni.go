// Package patroni is the failover fixture of the tests: one etcd 3.4 on loopback and N Patroni 4 nodes, each
// running its own PostgreSQL, in the configuration the EC2 platform renders (`synchronous_mode: quorum`, so the
// leader writes `ANY n (...)` into synchronous_standby_names), with small timeouts for tests.
//
// The real parts come from scripts/test-deps.sh: etcd from Debian 12's etcd-server package, Patroni 4 from
// Debian 13's package extracted into ToolsDir and run by Debian 12's python3 (Debian 12's own Patroni 3.0.2
// silently reads `synchronous_mode: quorum` as off). A missing part fails the test with the command that
// installs it; nothing skips.
//
// Patroni runs as the PostgreSQL server's user (postgres when the test runs as root: SysProcAttr.Credential,
// so the PID held is Patroni's own), and PostgreSQL is the binaries internal/localnode runs; the fixture uses
// localnode for psql, SIGKILL of a postmaster and its children, and the removal of a data directory.
// Everything lives under one fresh directory in os.TempDir: the test's cleanup kills each process it started
// by PID (with the processes those started), destroys each PostgreSQL with localnode, and removes the
// directory.
//
// It imports no framework, SDK or driver (and not internal/acctest, which pulls in the provider).
package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/internal/ports"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

const (
	// stepTimeout bounds one step: a psql command, a process's exit, etcd's start.
	stepTimeout = time.Minute
	// pollInterval is how often waits look again.
	pollInterval = 200 * time.Millisecond
	// maxSocketPath is the longest Unix socket path PostgreSQL accepts.
	maxSocketPath = 107
)

// Options say what cluster to start. The zero value is three nodes with Patroni's shortest timeouts.
type Options struct {
	// Nodes is the number of Patroni nodes, named node1, node2, ...; default 3.
	Nodes int
	// TTL is the leader key's time to live in seconds (Patroni's `ttl`): after a leader dies, a standby takes
	// over once it expires. Default and minimum 20 (Patroni 4 raises smaller values to 20).
	TTL int
	// LoopWait is the seconds between Patroni's HA loops (`loop_wait`); default 1.
	LoopWait int
	// RetryTimeout is the seconds Patroni retries etcd and PostgreSQL (`retry_timeout`); default 3, the minimum.
	RetryTimeout int
	// SynchronousNodeCount is how many standbys each commit waits for (`synchronous_node_count`, the n of
	// `ANY n (...)`); default 1.
	SynchronousNodeCount int
	// Parameters are PostgreSQL parameters for the whole cluster (bootstrap.dcs.postgresql.parameters), on top
	// of the fixture's.
	Parameters map[string]string
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.TTL == 0 {
		o.TTL = 20
	}
	if o.LoopWait == 0 {
		o.LoopWait = 1
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = 3
	}
	if o.SynchronousNodeCount == 0 {
		o.SynchronousNodeCount = 1
	}
	return o
}

// Timings are what Start measured, from the moment the Patroni processes were started.
type Timings struct {
	// Leader is until a leader accepted writes (its bootstrap: initdb and start).
	Leader time.Duration
	// Streaming is until every other node streamed from it (pg_basebackup, start, streaming).
	Streaming time.Duration
}

// Cluster is a running etcd and its Patroni nodes.
type Cluster struct {
	// Scope is Patroni's cluster name (its etcd prefix is /service/<Scope>).
	Scope string
	// Nodes are the Patroni nodes in name order.
	Nodes []*Node
	// EtcdEndpoint is etcd's client URL (http://127.0.0.1:PORT).
	EtcdEndpoint string
	// Timings are Start's measurements.
	Timings Timings

	opts    Options
	engine  *localnode.Engine
	dir     string
	patroni string
	env     []string // Patroni's environment
	etcd    *localnode.Daemon
	etcdLog string
}

// Node is one Patroni node and its PostgreSQL.
type Node struct {
	// Name is the Patroni member name, which is also the standby's application_name.
	Name string
	// RESTPort is Patroni's REST API port on 127.0.0.1.
	RESTPort int
	// Dir holds the node's files: patroni.yml, patroni.log, the PostgreSQL log <Name>.log, PostgreSQL's Unix
	// socket and the data directory data/.
	Dir string
	// PG is the node's PostgreSQL as localnode knows it (127.0.0.1, its port, its data directory). Patroni
	// decides its role; PG.Role says "standby" until asked otherwise.
	PG localnode.Node

	c       *Cluster
	mu      sync.Mutex
	patroni *localnode.Daemon // nil when Patroni does not run
}

// Start starts etcd and opts.Nodes Patroni nodes at once, waits (up to two minutes) until one is the leader and
// takes writes and every other one streams from it, and returns the cluster. The test's cleanup stops and
// removes everything. Start fails the test, with the logs' last lines, when the cluster does not come up.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	opts = opts.withDefaults()
	if opts.TTL < 20 || opts.LoopWait+2*opts.RetryTimeout > opts.TTL || opts.Nodes < 1 {
		t.Fatalf("patroni fixture: %d nodes, ttl %d, loop_wait %d, retry_timeout %d: Patroni 4 needs ttl >= 20 and "+
			"loop_wait + 2*retry_timeout <= ttl, and at least one node", opts.Nodes, opts.TTL, opts.LoopWait, opts.RetryTimeout)
	}
	patroniBin := Executable(t)
	etcdBin, err := etcdExecutable()
	if err != nil {
		t.Fatal(err)
	}
	engine, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatalf("the Patroni fixture needs the PostgreSQL binaries localnode runs: %v", err)
	}
	c := &Cluster{Scope: "tf-acc-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36), opts: opts, engine: engine, patroni: patroniBin}
	c.env = patroniEnv(engine.ServerEnv())

	// Short: the data directories hold the Unix sockets.
	c.dir, err = os.MkdirTemp("", "pgnvme-pat-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last, after every process is gone.
	t.Cleanup(func() {
		if err := os.RemoveAll(c.dir); err != nil {
			t.Errorf("removing the Patroni fixture directory: %v", err)
		}
	})
	if err := os.Chmod(c.dir, 0o755); err != nil { // the postgres user reaches its node directories through it
		t.Fatal(err)
	}

	p, err := ports.Free(2 + 2*opts.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	c.startEtcd(t, etcdBin, p[0], p[1])

	for i := range opts.Nodes {
		name := "node" + strconv.Itoa(i+1)
		dir := filepath.Join(c.dir, name)
		n := &Node{
			Name: name, RESTPort: p[2+2*i+1], Dir: dir, c: c,
			PG: localnode.Node{Name: name, Role: localnode.RoleStandby, Host: "127.0.0.1", Port: p[2+2*i], DataDir: filepath.Join(dir, "data")},
		}
		c.Nodes = append(c.Nodes, n)
		t.Cleanup(func() { n.destroy(t) }) // before etcd's cleanup: nodes go first
		if err := c.writeConfig(n); err != nil {
			t.Fatal(err)
		}
	}

	began := time.Now()
	for _, n := range c.Nodes {
		n.Start(t)
	}
	leader := c.WaitLeader(t, 2*time.Minute)
	c.Timings.Leader = time.Since(began)
	c.WaitStreaming(t, 2*time.Minute)
	c.Timings.Streaming = time.Since(began)
	t.Logf("patroni fixture: %d nodes in %s, leader %s taking writes after %s, standbys streaming after %s",
		len(c.Nodes), c.dir, leader.Name, c.Timings.Leader.Round(time.Millisecond), c.Timings.Streaming.Round(time.Millisecond))
	return c
}

// patroniEnv is Patroni's environment: the server programs' (localnode's: no libpq PG* variables, the run
// user's HOME, USER and LOGNAME) without Python's own (the wrapper sets PYTHONPATH) and Patroni's, in a UTF-8
// locale.
func patroniEnv(server []string) []string {
	var env []string
	for _, kv := range server {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "PATRONI") || slices.Contains([]string{"LC_ALL", "LANG"}, k) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C.UTF-8")
}

// startEtcd starts one etcd member on 127.0.0.1 (client and peer port) as the test's user and waits until it
// reports healthy. The cleanup kills it by PID.
func (c *Cluster) startEtcd(t testing.TB, bin string, clientPort, peerPort int) {
	t.Helper()
	dir := filepath.Join(c.dir, "etcd")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c.EtcdEndpoint = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	c.etcdLog = filepath.Join(c.dir, "etcd.log")
	proc, err := localnode.StartDaemon(localnode.DaemonSpec{Program: bin, Dir: dir, LogPath: c.etcdLog, Args: []string{
		"--name", "etcd0", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", c.EtcdEndpoint, "--advertise-client-urls", c.EtcdEndpoint,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd0=" + peer, "--initial-cluster-state", "new", "--initial-cluster-token", c.Scope,
		"--logger", "zap", "--log-outputs", "stderr",
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.etcd = proc
	t.Cleanup(func() {
		if err := proc.Kill(stepTimeout); err != nil {
			t.Errorf("stopping etcd: %v", err)
		}
	})
	err = wait.Until(context.Background(), "etcd at "+c.EtcdEndpoint+" to be healthy", stepTimeout, 100*time.Millisecond, nil,
		func(ctx context.Context) (bool, error) {
			if proc.Exited() {
				return false, errors.Join(errors.New("etcd exited"), proc.ExitErr())
			}
			var h struct {
				Health string `json:"health"`
			}
			if err := getJSON(ctx, c.EtcdEndpoint+"/health", &h); err != nil {
				return false, wait.NotYet(err)
			}
			if h.Health != "true" {
				return false, wait.NotYet(fmt.Errorf("health %q", h.Health))
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("%v\nlast lines of %s:\n%s", err, c.etcdLog, localnode.TailFile(c.etcdLog, 20))
	}
}

// writeConfig makes n's directory (owned by the run user) and writes its patroni.yml. JSON is YAML, so the
// configuration is marshalled as JSON.
func (c *Cluster) writeConfig(n *Node) error {
	if err := c.engine.MkdirAllOwned(n.Dir, 0o700); err != nil {
		return fmt.Errorf("making the directory of %s: %w", n.Name, err)
	}
	// The Unix socket goes into the node's directory, not into the data directory (localnode's choice):
	// pg_rewind copies the source's data directory and fails on a socket there, leaving empty lock files that
	// keep the rewound server from starting.
	if sock := filepath.Join(n.Dir, ".s.PGSQL."+strconv.Itoa(n.PG.Port)); len(sock) > maxSocketPath {
		return fmt.Errorf("the socket path %s is longer than PostgreSQL's %d bytes: set TMPDIR to a shorter directory", sock, maxSocketPath)
	}
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	superuser := c.engine.Superuser()
	clusterParams := map[string]string{
		"wal_level":             "replica",
		"hot_standby":           "on",
		"wal_log_hints":         "on",
		"max_wal_senders":       "10",
		"max_replication_slots": "10",
		"wal_keep_size":         "128MB",
		"shared_buffers":        "32MB",
	}
	for k, v := range c.opts.Parameters {
		clusterParams[k] = v
	}
	cfg := map[string]any{
		"scope": c.Scope,
		"name":  n.Name,
		"log":   map[string]any{"level": "INFO"},
		"restapi": map[string]any{
			"listen":          addr(n.RESTPort),
			"connect_address": addr(n.RESTPort),
		},
		"etcd3": map[string]any{"hosts": []string{strings.TrimPrefix(c.EtcdEndpoint, "http://")}, "protocol": "http"},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     c.opts.TTL,
				"loop_wait":               c.opts.LoopWait,
				"retry_timeout":           c.opts.RetryTimeout,
				"maximum_lag_on_failover": 1 << 20,
				"synchronous_mode":        "quorum",
				"synchronous_node_count":  c.opts.SynchronousNodeCount,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters":    clusterParams,
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, map[string]string{"locale": "C"}, "data-checksums"},
		},
		"postgresql": map[string]any{
			"listen":          addr(n.PG.Port),
			"connect_address": addr(n.PG.Port),
			"data_dir":        n.PG.DataDir,
			"bin_dir":         c.engine.BinDir(),
			"pgpass":          filepath.Join(n.Dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]string{"username": superuser},
				"replication": map[string]string{"username": "replicator"},
			},
			"pg_hba": []string{
				"local all all trust",
				"host all all 127.0.0.1/32 trust",
				"host replication all 127.0.0.1/32 trust",
			},
			// The server log where localnode looks for it (LogTail).
			"parameters": map[string]string{
				"unix_socket_directories": n.Dir,
				"logging_collector":       "on",
				"log_directory":           filepath.Dir(n.PG.LogFile()),
				"log_filename":            filepath.Base(n.PG.LogFile()),
				"log_line_prefix":         "%m [%p] ",
			},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return c.engine.WriteFileOwned(n.configFile(), b, 0o600)
}

func (n *Node) configFile() string { return filepath.Join(n.Dir, "patroni.yml") }

// PatroniLog is the file Patroni's output goes to.
func (n *Node) PatroniLog() string { return filepath.Join(n.Dir, "patroni.log") }

// Node is the node named name; it fails the test when there is none.
func (c *Cluster) Node(t testing.TB, name string) *Node {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("patroni fixture: no node %q", name)
	return nil
}
