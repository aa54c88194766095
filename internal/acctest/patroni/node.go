package patroni

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Psql runs sql in database db (default postgres) on n's PostgreSQL through psql as the superuser over TCP
// (localnode's Psql) and returns its unaligned, tuples-only output. It fails the test, with the node's logs,
// when psql fails.
func (n *Node) Psql(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := n.TryPsql(db, sql)
	if err != nil {
		t.Fatalf("%v\n--- %s\n%s\n--- %s\n%s", err, n.PatroniLog(), localnode.TailFile(n.PatroniLog(), 15), n.PG.LogFile(), n.c.engine.LogTail(n.PG, 15))
	}
	return out
}

// TryPsql is Psql returning psql's failure instead of failing the test. It gives up after a minute.
func (n *Node) TryPsql(db, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	return n.c.engine.Psql(ctx, n.PG, db, sql)
}

// Running reports whether the fixture's Patroni process of n runs.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.patroni != nil && !n.patroni.Exited()
}

// Start starts n's Patroni (as the server's user) and returns at once; Patroni starts or creates its
// PostgreSQL. Wait for what it should reach with the cluster's waits. A running node is left as it is.
func (n *Node) Start(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.patroni != nil && !n.patroni.Exited() {
		return
	}
	proc, err := localnode.StartDaemon(localnode.DaemonSpec{
		Program: n.c.patroni, Args: []string{n.configFile()}, Dir: n.Dir,
		Credential: n.c.engine.ServerCredential(), Env: n.c.env, LogPath: n.PatroniLog(),
	})
	if err != nil {
		t.Fatalf("starting Patroni on %s: %v", n.Name, err)
	}
	n.patroni = proc
}

// Kill ends n as a machine loss would: SIGKILL to its Patroni (and any program Patroni runs, such as
// pg_basebackup) and to its postmaster and every process that one started. Both are stopped (SIGSTOP) first,
// so neither acts in between. It returns once all are gone.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	if err := n.kill(); err != nil {
		t.Fatal(err)
	}
}

func (n *Node) kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var pids []int
	if n.patroni != nil && !n.patroni.Exited() {
		pids = n.patroni.Freeze()
	}
	pgErr := n.c.engine.Kill(n.PG)
	var errs []error
	if pgErr != nil {
		errs = append(errs, fmt.Errorf("killing the PostgreSQL of %s: %w", n.Name, pgErr))
	}
	if n.patroni != nil {
		if err := n.patroni.KillFrozen(pids, stepTimeout); err != nil {
			errs = append(errs, fmt.Errorf("killing Patroni on %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Stop stops n's Patroni gracefully (SIGTERM: Patroni shuts PostgreSQL down, and a leader hands its key back)
// and waits up to a minute until Patroni has exited and the postmaster is gone.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.patroni == nil || n.patroni.Exited() {
		return
	}
	if err := n.patroni.Terminate(stepTimeout); err != nil {
		t.Fatalf("stopping Patroni on %s: %v\n--- %s\n%s", n.Name, err, n.PatroniLog(), localnode.TailFile(n.PatroniLog(), 20))
	}
	err := wait.Until(context.Background(), "the PostgreSQL of "+n.Name+" to stop", stepTimeout, pollInterval, nil,
		func(context.Context) (bool, error) {
			pid, ok, err := n.c.engine.Running(n.PG)
			if err != nil || !ok {
				return err == nil, err
			}
			return false, wait.NotYet(fmt.Errorf("postmaster PID %d still runs", pid))
		})
	if err != nil {
		t.Fatalf("stopping %s: %v\n--- %s\n%s", n.Name, err, n.PG.LogFile(), n.c.engine.LogTail(n.PG, 20))
	}
}

// destroy is the cleanup of n: its Patroni killed by PID, then its PostgreSQL destroyed by localnode (immediate
// stop, SIGKILL by PID when that fails, data directory and log removed).
func (n *Node) destroy(t testing.TB) {
	n.mu.Lock()
	var err error
	if n.patroni != nil && !n.patroni.Exited() {
		err = n.patroni.Kill(stepTimeout)
	}
	n.mu.Unlock()
	if err != nil {
		t.Errorf("killing Patroni on %s: %v", n.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := n.c.engine.Destroy(ctx, n.PG); err != nil {
		t.Errorf("destroying the PostgreSQL of %s: %v", n.Name, err)
	}
}
