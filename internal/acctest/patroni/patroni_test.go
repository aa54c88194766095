package patroni_test

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
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestQuorumFailover proves the failover parts on loopback: Patroni 4 with `synchronous_mode: quorum` makes the
// leader wait for ANY 1 of the two other nodes, both of which Patroni and PostgreSQL report as quorum standbys;
// after the leader's Patroni and postmaster are SIGKILLed while a client commits numbered rows one at a time,
// a standby becomes the leader and holds every commit the client saw acknowledged. The old leader then comes
// back as a quorum standby (pg_rewind), and with one standby stopped commits go on.
func TestQuorumFailover(t *testing.T) {
	c := patroni.Start(t, patroni.Options{Nodes: 3})

	// Quorum: /cluster names both standbys quorum_standby, the leader waits for ANY 1 of them, and PostgreSQL
	// reports both as quorum.
	st := c.Wait(t, "both standbys to be quorum standbys", 30*time.Second, patroni.QuorumOf(3))
	lm, _ := st.Leader()
	leader := c.Node(t, lm.Name)
	var others []string
	for _, n := range c.Nodes {
		if n != leader {
			others = append(others, n.Name)
		}
	}
	ssn := leader.Psql(t, "", "SHOW synchronous_standby_names")
	spec, err := quorum.Parse(ssn)
	if err != nil {
		t.Fatalf("synchronous_standby_names on leader %s = %q: %v", leader.Name, ssn, err)
	}
	names := slices.Sorted(slices.Values(spec.Names))
	if spec.Method != quorum.MethodAny || spec.Number != 1 || !slices.Equal(names, others) {
		t.Fatalf("synchronous_standby_names on leader %s = %q, want ANY 1 of %v", leader.Name, ssn, others)
	}
	wantRepl := others[0] + ":quorum:streaming\n" + others[1] + ":quorum:streaming"
	err = wait.Until(context.Background(), "pg_stat_replication to show both standbys as quorum", 10*time.Second, 100*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			out := leader.Psql(t, "", "SELECT application_name || ':' || sync_state || ':' || state FROM pg_stat_replication ORDER BY 1")
			if out != wantRepl {
				return false, wait.NotYet(fmt.Errorf("pg_stat_replication: %q", out))
			}
			return true, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s: synchronous_standby_names = %s; /cluster %s; pg_stat_replication %s",
		leader.Name, ssn, st, strings.ReplaceAll(wantRepl, "\n", ", "))

	// A client commits numbered rows one at a time on the leader and records each acknowledged commit.
	leader.Psql(t, "", "CREATE TABLE acked (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())")
	w := startWriter(t, leader.PG.Port)
	err = wait.Until(context.Background(), "200 acknowledged commits", 30*time.Second, 20*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			if n, err := w.progress(); err != nil || n < 200 {
				return false, errors.Join(err, wait.NotYet(fmt.Errorf("%d acknowledged", n)))
			}
			return true, nil
		})
	if err != nil {
		t.Fatal(err)
	}

	// The leader's machine is lost: SIGKILL to its Patroni and its postmaster, mid-commit.
	killedAt := time.Now()
	leader.Kill(t)
	acked, writeErr := w.wait(t)
	t.Logf("killed leader %s after %d acknowledged commits (the writer stopped with: %v)", leader.Name, len(acked), writeErr)

	next := c.WaitLeader(t, 60*time.Second, leader.Name)
	promoted := time.Since(killedAt)
	// It takes writes once a quorum standby streams from it again: ANY 1 of the one left.
	c.Wait(t, "the other standby to stream from "+next.Name+" as a quorum standby", 30*time.Second, func(s patroni.Status) error {
		for _, n := range c.Nodes {
			if n == leader || n == next {
				continue
			}
			if m, ok := s.Member(n.Name); !ok || m.Role != patroniapi.RoleQuorumStandby || m.State != patroniapi.StateStreaming {
				return fmt.Errorf("%s is %s/%s", n.Name, m.Role, m.State)
			}
		}
		return nil
	})
	next.Psql(t, "", "INSERT INTO acked (id) VALUES (-1)")
	writable := time.Since(killedAt)
	t.Logf("failover: %s promoted %.1f s after the SIGKILL, its first commit acknowledged after %.1f s (Patroni ttl 20 s)",
		next.Name, promoted.Seconds(), writable.Seconds())

	// No acknowledged commit is missing on the new leader.
	have := map[int64]bool{}
	for line := range strings.Lines(next.Psql(t, "", "SELECT id FROM acked WHERE id > 0 ORDER BY id")) {
		id, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			t.Fatalf("reading acked ids: %v", err)
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
		t.Fatalf("%d of %d acknowledged commits are missing on the new leader %s: %v", len(missing), len(acked), next.Name, missing)
	}
	t.Logf("all %d acknowledged commits are on %s (%d rows there: the commit in flight at the kill %s)",
		len(acked), next.Name, len(have), map[bool]string{true: "survived", false: "did not"}[len(have) > len(acked)])

	// The old leader comes back as a quorum standby of the new one.
	restartedAt := time.Now()
	leader.Start(t)
	c.Wait(t, leader.Name+" to rejoin as a quorum standby", 60*time.Second, patroni.QuorumOf(3))
	t.Logf("%s rejoined as a quorum standby %.1f s after its restart", leader.Name, time.Since(restartedAt).Seconds())

	// One standby stopped: commits wait for ANY 1, so they go on.
	leader.Stop(t)
	next.Psql(t, "", "INSERT INTO acked (id) VALUES (-2)")
	if out := next.Psql(t, "", "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'quorum'"); out != "1" {
		t.Fatalf("with %s stopped, %s has %s quorum standbys, want 1", leader.Name, next.Name, out)
	}
}

// writer commits rows 1, 2, 3, ... one at a time over one connection until a commit fails.
type writer struct {
	mu    sync.Mutex
	acked []int64
	err   error
	done  chan struct{}
}

func startWriter(t *testing.T, port int) *writer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=10", port))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &writer{done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-w.done
		_ = conn.Close(context.Background())
	})
	go func() {
		defer close(w.done)
		for id := int64(1); ; id++ {
			if _, err := conn.Exec(ctx, "INSERT INTO acked (id) VALUES ($1)", id); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			w.acked = append(w.acked, id)
			w.mu.Unlock()
		}
	}()
	return w
}

// progress is the number of acknowledged commits, and an error when the writer stopped.
func (w *writer) progress() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return len(w.acked), fmt.Errorf("the writer stopped after %d commits: %w", len(w.acked), w.err)
	}
	return len(w.acked), nil
}

// wait waits (up to a minute) for the writer to stop and returns the acknowledged ids and why it stopped.
func (w *writer) wait(t *testing.T) ([]int64, error) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatal("the writer still runs a minute after the kill")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.err
}
