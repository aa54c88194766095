package acctest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// clusterTimeout bounds each step of a local cluster's life in the tests
// (a node's stop or start, a wait for streaming, one psql command).
const clusterTimeout = time.Minute

// Cluster is a local PostgreSQL cluster for tests: a primary and streaming standbys made by the PostgreSQL
// fixture (pgfixture) on loopback ports, destroyed when the test ends.
type Cluster struct {
	Engine   *localnode.Engine
	Primary  localnode.Node
	Standbys []localnode.Node
	// Dir holds the nodes' data directories and logs.
	Dir string
	// ReadyIn is how long StartCluster took from nothing to every standby streaming.
	ReadyIn time.Duration
}

// StartCluster starts a primary named "primary" and standbys "s1", "s2", ... (their application_name) on
// free 127.0.0.1 ports, under a fresh short directory in os.TempDir: pgfixture.Start for the primary, then
// StartStandbys (pg_basebackup and start, in parallel). It returns once the primary's pg_stat_replication
// shows every standby streaming. params are the cluster's parameters (written into every node's
// pgnvme.conf; e.g. fsync = off for speed where durability is not what the test checks). Cleanup destroys
// every node (processes, data directories, logs). Missing PostgreSQL binaries or user fail the test.
func StartCluster(t testing.TB, standbys int, params map[string]string) *Cluster {
	t.Helper()
	start := time.Now()
	primary := pgfixture.Start(t, pgfixture.Options{Params: params})
	c := &Cluster{Engine: primary.Engine, Primary: primary.Node, Dir: primary.Dir()}
	opts := make([]pgfixture.StandbyOptions, standbys)
	for i := range opts {
		opts[i].Name = fmt.Sprintf("s%d", i+1)
	}
	for _, s := range primary.StartStandbys(t, opts...) {
		c.Standbys = append(c.Standbys, s.Node)
	}
	c.WaitStreaming(t, c.Primary, c.standbyNames()...)
	c.ReadyIn = time.Since(start)
	t.Logf("local cluster: primary and %d standbys streaming in %s (under %s)", standbys, c.ReadyIn.Round(time.Millisecond), c.Dir)
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

// SetStandbyNames sets synchronous_standby_names on the primary by hand, as an operator would (ALTER SYSTEM
// and a reload; "" resets it), and waits until the server uses it. value is written as an SQL literal.
func (c *Cluster) SetStandbyNames(t testing.TB, value string) {
	t.Helper()
	stmt := "ALTER SYSTEM RESET synchronous_standby_names"
	if value != "" {
		stmt = "ALTER SYSTEM SET synchronous_standby_names = '" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	c.Psql(t, c.Primary, stmt)
	c.Psql(t, c.Primary, "SELECT pg_reload_conf()")
	WaitFor(t, 10*time.Second, "synchronous_standby_names = "+value, func() (bool, string) {
		got := c.Psql(t, c.Primary, "SHOW synchronous_standby_names")
		return got == value, "the server says " + got
	})
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

// WaitStreaming waits up to a minute until primary's pg_stat_replication shows every named standby
// (application_name) in state streaming.
func (c *Cluster) WaitStreaming(t testing.TB, primary localnode.Node, names ...string) {
	t.Helper()
	err := wait.Until(context.Background(), fmt.Sprintf("standbys %v streaming from %s", names, primary.Name), clusterTimeout, 50*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			out, err := c.TryPsql(primary, "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'")
			if err != nil {
				return false, wait.NotYet(err)
			}
			streaming := strings.Fields(out)
			if missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(streaming, n) }); len(missing) > 0 {
				return false, wait.NotYet(fmt.Errorf("not streaming: %v (streaming: %v)", missing, streaming))
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("%v\nlast lines of %s:\n%s", err, primary.LogFile(), c.Engine.LogTail(primary, 15))
	}
}

// WaitFor polls check until it reports done, failing the test after timeout with check's last note. It
// checks again after 50 ms, then after twice as long each time up to a second: a condition met at once is
// seen at once, and a long wait does not spend the CPU the cluster under test needs on checks (most of
// them start a psql).
func WaitFor(t testing.TB, timeout time.Duration, what string, check func() (done bool, note string)) {
	t.Helper()
	waitFor(t, timeout, 50*time.Millisecond, time.Second, what, check)
}

// WaitForEvery is WaitFor with interval between the end of one check and the start of the next, for a
// check that is itself expensive (a Terraform refresh, which reads the whole cluster).
func WaitForEvery(t testing.TB, timeout, interval time.Duration, what string, check func() (done bool, note string)) {
	t.Helper()
	waitFor(t, timeout, interval, interval, what, check)
}

func waitFor(t testing.TB, timeout, first, most time.Duration, what string, check func() (done bool, note string)) {
	t.Helper()
	err := wait.UntilBackoff(context.Background(), what, timeout, first, most, wait.Real, func(context.Context) (bool, error) {
		done, note := check()
		if !done {
			return false, wait.NotYet(fmt.Errorf("last: %s", note))
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
