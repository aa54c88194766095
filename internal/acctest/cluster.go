package acctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// clusterTimeout bounds each step of a local cluster's life in the tests
// (one node's creation or start, a wait for streaming, one psql command).
const clusterTimeout = time.Minute

// Cluster is a local PostgreSQL cluster for tests: a primary and streaming
// standbys run by localnode on loopback ports, destroyed when the test ends.
type Cluster struct {
	Engine   *localnode.Engine
	Primary  localnode.Node
	Standbys []localnode.Node
	// Dir holds the nodes' data directories and logs.
	Dir string
	// ReadyIn is how long StartCluster took from nothing to every standby streaming.
	ReadyIn time.Duration
}

// StartCluster starts a primary named "primary" and standbys "s1", "s2", ...
// (their application_name) on free 127.0.0.1 ports, under a fresh short
// directory in os.TempDir: initdb and start for the primary, then, in
// parallel, pg_basebackup and start for each standby. It returns once the
// primary's pg_stat_replication shows every standby streaming. params are
// the cluster's parameters (written into every node's pgnvme.conf; e.g.
// fsync = off for speed where durability is not what the test checks).
// Cleanup destroys every node (processes, data directories, logs). Missing
// PostgreSQL binaries or user fail the test.
func StartCluster(t testing.TB, standbys int, params map[string]string) *Cluster {
	t.Helper()
	start := time.Now()
	engine, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatalf("a local PostgreSQL cluster needs the PostgreSQL server binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "pgnvme-c-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The server's user (postgres when the test runs as root) must reach the data directories.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(standbys + 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Engine: engine, Dir: dir}
	c.Primary = localnode.Node{Name: "primary", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: ports[0], DataDir: filepath.Join(dir, "primary")}
	for i := 1; i <= standbys; i++ {
		name := fmt.Sprintf("s%d", i)
		c.Standbys = append(c.Standbys, localnode.Node{Name: name, Role: localnode.RoleStandby, Host: "127.0.0.1", Port: ports[i], DataDir: filepath.Join(dir, name)})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		defer cancel()
		for _, n := range c.Nodes() {
			if err := engine.Destroy(ctx, n); err != nil {
				t.Errorf("destroying local cluster node: %v", err)
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := engine.InitPrimary(ctx, c.Primary, params); err != nil {
		t.Fatal(err)
	}
	if err := engine.Start(ctx, c.Primary); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(c.Standbys))
	var wg sync.WaitGroup
	for i, s := range c.Standbys {
		wg.Go(func() {
			if err := engine.CreateStandby(ctx, c.Primary, s); err != nil {
				errs[i] = err
				return
			}
			errs[i] = engine.Start(ctx, s)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.WaitStreaming(t, c.Primary, c.standbyNames()...)
	c.ReadyIn = time.Since(start)
	t.Logf("local cluster: primary and %d standbys streaming in %s (under %s)", standbys, c.ReadyIn.Round(time.Millisecond), dir)
	return c
}

// Nodes is the primary followed by the standbys.
func (c *Cluster) Nodes() []localnode.Node {
	return append([]localnode.Node{c.Primary}, c.Standbys...)
}

func (c *Cluster) standbyNames() []string {
	names := make([]string, len(c.Standbys))
	for i, s := range c.Standbys {
		names[i] = s.Name
	}
	return names
}

// Psql runs sql on node in database postgres (see localnode.Engine.Psql) and
// fails the test, with the end of the node's log, when psql fails.
func (c *Cluster) Psql(t testing.TB, node localnode.Node, sql string) string {
	t.Helper()
	out, err := c.TryPsql(node, sql)
	if err != nil {
		t.Fatalf("%v\nlast lines of %s:\n%s", err, node.LogFile(), c.Engine.LogTail(node, 15))
	}
	return out
}

// TryPsql is Psql returning psql's failure instead of failing the test. It
// gives up after a minute: a commit that waits for a synchronous standby
// makes it fail rather than hang.
func (c *Cluster) TryPsql(node localnode.Node, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	return c.Engine.Psql(ctx, node, "postgres", sql)
}

// StopNode stops node (fast shutdown).
func (c *Cluster) StopNode(t testing.TB, node localnode.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.Engine.Stop(ctx, node, "fast"); err != nil {
		t.Fatal(err)
	}
}

// StartNode starts node and waits until it accepts connections.
func (c *Cluster) StartNode(t testing.TB, node localnode.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.Engine.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
}

// KillNode SIGKILLs node's postmaster and its processes, as a machine loss would.
func (c *Cluster) KillNode(t testing.TB, node localnode.Node) {
	t.Helper()
	if err := c.Engine.Kill(node); err != nil {
		t.Fatal(err)
	}
}

// WaitStreaming waits up to a minute until primary's pg_stat_replication
// shows every named standby (application_name) in state streaming.
func (c *Cluster) WaitStreaming(t testing.TB, primary localnode.Node, names ...string) {
	t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		out, err := c.TryPsql(primary, "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'")
		streaming := strings.Fields(out)
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(streaming, n) })
		if err == nil && len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("standbys %v not streaming from %s after %s (streaming: %v, error: %v)\nlast lines of %s:\n%s",
				missing, primary.Name, clusterTimeout, streaming, err, primary.LogFile(), c.Engine.LogTail(primary, 15))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("listener address %v is not TCP", l.Addr())
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
