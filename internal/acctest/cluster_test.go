package acctest_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// TestClusterQuorumAndCleanup: StartCluster gives a primary and two streaming
// standbys; under ANY 1 (s1, s2) both are quorum standbys and a commit
// succeeds with one of them stopped; a killed primary is not running; and
// the test's cleanup leaves no process and no data directory.
func TestClusterQuorumAndCleanup(t *testing.T) {
	var (
		engine *localnode.Engine
		nodes  []localnode.Node
		pids   []int
	)
	t.Run("cluster", func(t *testing.T) {
		c := acctest.StartCluster(t, 2, nil)
		engine, nodes = c.Engine, c.Nodes()
		if got := len(c.Standbys); got != 2 {
			t.Fatalf("%d standbys, want 2", got)
		}
		p, s1, s2 := c.Primary, c.Standbys[0], c.Standbys[1]
		if s1.Name != "s1" || s2.Name != "s2" || p.Name != "primary" {
			t.Fatalf("node names %s, %s, %s; want primary, s1, s2", p.Name, s1.Name, s2.Name)
		}
		if got := c.Psql(t, s1, "SELECT pg_is_in_recovery()"); got != "t" {
			t.Errorf("s1: pg_is_in_recovery = %s", got)
		}

		c.Psql(t, p, "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'")
		c.Psql(t, p, "SELECT pg_reload_conf()")
		acctest.WaitFor(t, 30*time.Second, "both standbys quorum", func() (bool, string) {
			out := c.Psql(t, p, "SELECT string_agg(application_name || '=' || sync_state, ',' ORDER BY application_name) FROM pg_stat_replication")
			return out == "s1=quorum,s2=quorum", out
		})

		c.StopNode(t, s2)
		if _, err := c.TryPsql(p, "CREATE TABLE acked (i int); INSERT INTO acked VALUES (1)"); err != nil {
			t.Fatalf("commit with s2 stopped under ANY 1 (s1, s2): %v", err)
		}
		c.StartNode(t, s2)
		c.WaitStreaming(t, p, "s1", "s2")
		c.Psql(t, p, "INSERT INTO acked VALUES (2)")
		acctest.WaitFor(t, 30*time.Second, "s2 replays the rows", func() (bool, string) {
			// Until s2 has replayed the CREATE TABLE the relation does not exist there: not yet, no failure.
			out, err := c.TryPsql(s2, "SELECT string_agg(i::text, ',' ORDER BY i) FROM acked")
			if err != nil {
				return false, err.Error()
			}
			return out == "1,2", out
		})

		for _, n := range nodes {
			pid, ok, err := c.Engine.Running(n)
			if !ok || err != nil {
				t.Fatalf("Running(%s) = %d, %v, %v", n.Name, pid, ok, err)
			}
			pids = append(pids, pid)
		}
		c.KillNode(t, p)
		if pid, ok, err := c.Engine.Running(p); ok || err != nil {
			t.Errorf("Running(primary) after KillNode = %d, %v, %v; want not running", pid, ok, err)
		}
	})
	if engine == nil {
		return
	}
	// The subtest's cleanup has destroyed the cluster.
	for i, n := range nodes {
		if _, ok, err := engine.Running(n); ok || err != nil {
			t.Errorf("%s after cleanup: Running = %v, %v", n.Name, ok, err)
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pids[i]) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("%s after cleanup: its postmaster %d is still alive: %s", n.Name, pids[i], b)
		}
		if _, err := os.Stat(n.DataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after cleanup: data directory %s still there (%v)", n.Name, n.DataDir, err)
		}
	}
}
