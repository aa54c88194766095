package nodesim_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/patroni"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestCluster_failover runs a writer that commits numbered rows one at a time against whichever node
// takes writes and records every acknowledged commit. Three times the leader's Patroni and PostgreSQL get
// SIGKILL (every process of pgnvme-patroni.service, which systemd's Restart=on-failure starts again after
// RestartSec): writes resume, and no acknowledged commit is missing. Then the leader and one standby are
// lost together (machine loss: etcd with them, so etcd has no majority): the survivor must not promote.
// When both machines come back (same disks), the cluster is whole again with every commit.
func TestCluster_failover(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	c, st := startCluster(t, s, nodesim.ClusterOptions{})
	lm, _ := st.Leader()
	if err := c.Exec(ctx, c.Node(lm.Name), "CREATE TABLE acked (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())"); err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, c)

	var failovers []time.Duration
	for round := 1; round <= 3; round++ {
		before := w.count()
		w.waitAcked(t, before+100)
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lm, _ := st.Leader()
		leader := c.Node(lm.Name)
		killed := time.Now()
		if err := leader.KillUnit(ctx, "pgnvme-patroni.service"); err != nil {
			t.Fatal(err)
		}
		at := w.waitAckedAfter(t, killed, 20, c)
		failovers = append(failovers, at.Sub(killed))
		st = waitStatus(t, c, "every node back after the kill", 3*time.Minute, patroni.QuorumOf(3))
		nl, _ := st.Leader()
		t.Logf("round %d: SIGKILL to Patroni and PostgreSQL of leader %s; commits acknowledged again after %.1f s; leader now %s: %s",
			round, leader.Name, at.Sub(killed).Seconds(), nl.Name, st)
	}
	// The leader's machine is lost (every process, etcd member included): a quorum standby takes over.
	w.waitAcked(t, w.count()+100)
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lm, _ = st.Leader()
	old := c.Node(lm.Name)
	killed := time.Now()
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	at := w.waitAckedAfter(t, killed, 20, c)
	st = waitStatus(t, c, "a new leader", time.Minute, func(s nodesim.Status) error {
		if m, ok := s.Leader(); !ok || m.Name == old.Name {
			return fmt.Errorf("leader %q", m.Name)
		}
		return nil
	})
	nl, _ := st.Leader()
	t.Logf("machine loss of leader %s: %s took over, commits acknowledged again after %.1f s", old.Name, nl.Name, at.Sub(killed).Seconds())
	machineLoss := at.Sub(killed)
	rebooted := time.Now()
	if err := old.Boot(ctx); err != nil {
		t.Fatalf("%v\n%s", err, old.Logs(30))
	}
	waitRejoined(t, c, c.Node(nl.Name), old, rebooted)
	t.Logf("%s rebooted with its disk: a quorum standby of %s again after %.1f s", old.Name, nl.Name, time.Since(rebooted).Seconds())

	acked, uncertain := w.stop(t)
	st = waitStatus(t, c, "a leader", time.Minute, patroni.QuorumOf(3))
	lm, _ = st.Leader()
	leader := c.Node(lm.Name)
	checkAcked(t, c, leader, acked, uncertain)
	sorted := slices.Clone(failovers)
	slices.Sort(sorted)
	t.Logf("writes resumed after SIGKILL of the leader's Patroni and PostgreSQL: median %.1f s, max %.1f s over %d rounds; after the leader's machine loss: %.1f s (ttl 20, loop_wait 2, RestartSec 5); %d commits acknowledged, 0 lost, %d in flight at a kill",
		sorted[len(sorted)/2].Seconds(), sorted[len(sorted)-1].Seconds(), len(sorted), machineLoss.Seconds(), len(acked), len(uncertain))

	// The leader and one standby are lost together: the survivor must not promote.
	lost := []*nodesim.Node{leader}
	var survivor *nodesim.Node
	for _, n := range c.Nodes {
		switch {
		case n == leader:
		case len(lost) == 1:
			lost = append(lost, n)
		default:
			survivor = n
		}
	}
	lostAt := time.Now()
	for _, n := range lost {
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	watch := 40 * time.Second
	err = wait.Until(ctx, "the survivor to stay a standby", watch+10*time.Second, time.Second, nil, func(ctx context.Context) (bool, error) {
		inRecovery, err := c.Query(ctx, survivor, "SELECT pg_is_in_recovery()::text")
		if err != nil {
			return false, fmt.Errorf("%s stopped answering: %w", survivor.Name, err)
		}
		p, err := c.Patroni(ctx, survivor)
		if err != nil {
			return false, fmt.Errorf("the Patroni of %s stopped answering: %w", survivor.Name, err)
		}
		if inRecovery != "true" || p.Role != "replica" {
			return false, fmt.Errorf("%s promoted %.1f s after the leader %s and %s were lost: pg_is_in_recovery %s, Patroni role %s",
				survivor.Name, time.Since(lostAt).Seconds(), lost[0].Name, lost[1].Name, inRecovery, p.Role)
		}
		return time.Since(lostAt) >= watch, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, survivor.Logs(30))
	}
	t.Logf("leader %s and standby %s lost together: %s stayed a standby (read-only, Patroni role replica) for %s (ttl 20)",
		lost[0].Name, lost[1].Name, survivor.Name, watch)

	// Both machines come back with their disks: the cluster is whole again, every commit there.
	back := time.Now()
	for _, n := range lost {
		if err := n.Boot(ctx); err != nil {
			t.Fatalf("%v\n%s", err, n.Logs(30))
		}
	}
	st = waitStatus(t, c, "the cluster to be whole again", 3*time.Minute, patroni.QuorumOf(3))
	lm, _ = st.Leader()
	checkAcked(t, c, c.Node(lm.Name), acked, uncertain)
	t.Logf("both machines back (same disks): leader and quorum standbys again after %.1f s: %s", time.Since(back).Seconds(), st)
}

// writer commits rows 1, 2, 3, ... one at a time on whichever node takes writes (target_session_attrs
// read-write over every node) and records each acknowledged commit; a commit whose result it did not get
// is "uncertain" (it may or may not be there).
type writer struct {
	mu        sync.Mutex
	acked     []int64
	ackedAt   []time.Time
	uncertain []int64
	failedAt  []time.Time
	lastErr   error
	cancel    context.CancelFunc
	done      chan struct{}
}

func startWriter(t *testing.T, c *nodesim.Cluster) *writer {
	t.Helper()
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, n.IP.String())
	}
	cfg0, err := c.ConnConfig(c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("host=%s port=5432 user=%s dbname=postgres sslmode=disable connect_timeout=3 target_session_attrs=read-write",
		strings.Join(hosts, ","), cfg0.User)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = c.Passwords.Superuser
	cfg.DialFunc = c.Sim.DialContext
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				_ = conn.Close(context.Background())
			}
		}()
		for id := int64(1); ctx.Err() == nil; {
			if conn == nil {
				err := wait.Until(ctx, "a node that takes writes", 5*time.Minute, 100*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					var err error
					conn, err = pgx.ConnectConfig(cctx, cfg)
					return err == nil, wait.NotYet(err)
				})
				if err != nil {
					w.mu.Lock()
					w.lastErr = err
					w.mu.Unlock()
					return
				}
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := conn.Exec(cctx, "INSERT INTO acked (id) VALUES ($1)", id)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, id)
				w.ackedAt = append(w.ackedAt, time.Now())
			} else {
				w.uncertain = append(w.uncertain, id)
				w.failedAt = append(w.failedAt, time.Now())
				w.lastErr = err
			}
			w.mu.Unlock()
			id++
			if err != nil {
				_ = conn.Close(context.Background())
				conn = nil
			}
		}
	}()
	return w
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitAcked waits until n commits are acknowledged.
func (w *writer) waitAcked(t *testing.T, n int) {
	t.Helper()
	err := wait.Until(context.Background(), fmt.Sprintf("%d acknowledged commits", n), time.Minute, 20*time.Millisecond, nil, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.acked) < n {
			return false, wait.NotYet(errors.Join(fmt.Errorf("%d acknowledged", len(w.acked)), w.lastErr))
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitAckedAfter waits until the writer, after since, saw a commit fail (its connection to the killed
// leader broke) and then n commits acknowledged; it returns when the first of those was. (A commit
// acknowledged just after since may still be the old leader's, sent before it died.)
func (w *writer) waitAckedAfter(t *testing.T, since time.Time, n int, c *nodesim.Cluster) time.Time {
	t.Helper()
	var first time.Time
	byTime := func(a, b time.Time) int { return a.Compare(b) }
	err := wait.Until(context.Background(), fmt.Sprintf("a failed commit and then %d commits acknowledged after the kill", n), 3*time.Minute, 50*time.Millisecond, nil, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		f, _ := slices.BinarySearchFunc(w.failedAt, since, byTime)
		if f == len(w.failedAt) {
			return false, wait.NotYet(errors.New("no commit failed since the kill"))
		}
		i, _ := slices.BinarySearchFunc(w.ackedAt, w.failedAt[f], byTime)
		if len(w.ackedAt)-i < n {
			return false, wait.NotYet(errors.Join(fmt.Errorf("%d acknowledged since", len(w.ackedAt)-i), w.lastErr))
		}
		first = w.ackedAt[i]
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs(25))
	}
	return first
}

// stop stops the writer and returns the acknowledged and the uncertain ids.
func (w *writer) stop(t *testing.T) ([]int64, []int64) {
	t.Helper()
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), slices.Clone(w.uncertain)
}

// checkAcked fails the test when an acknowledged id is missing on n.
func checkAcked(t *testing.T, c *nodesim.Cluster, n *nodesim.Node, acked, uncertain []int64) {
	t.Helper()
	ids := query(t, c, n, "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM acked")
	have := map[int64]bool{}
	for _, f := range strings.Split(ids, ",") {
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		have[id] = true
	}
	var missing []int64
	for _, id := range acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged commits are missing on %s: %v", len(missing), len(acked), n.Name, missing)
	}
	kept := 0
	for _, id := range uncertain {
		if have[id] {
			kept++
		}
	}
	t.Logf("%s holds all %d acknowledged commits (%d rows; %d of %d commits in flight at a kill are there)", n.Name, len(acked), len(have), kept, len(uncertain))
}
