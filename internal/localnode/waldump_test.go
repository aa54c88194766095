package localnode_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// TestLocalEndOfWAL stops a streaming standby after writes that end with a
// record spanning several WAL pages, and checks that EndOfWAL reads exactly
// what it had received: not less than it had replayed, not more than the
// primary wrote, and equal to its last received position when the primary
// wrote nothing after it.
func TestLocalEndOfWAL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newEngine(t)
	base := baseDir(t)
	ports := acctest.FreePorts(t, 2)
	primary := localnode.Node{Name: "primary", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: ports[0], DataDir: filepath.Join(base, "primary")}
	sb := localnode.Node{Name: "sb", Role: localnode.RoleStandby, Host: "127.0.0.1", Port: ports[1], DataDir: filepath.Join(base, "sb")}
	t.Cleanup(func() {
		for _, n := range []localnode.Node{sb, primary} {
			if err := e.Destroy(context.Background(), n); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	if err := e.InitPrimary(ctx, primary, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateStandby(ctx, primary, sb); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, sb); err != nil {
		t.Fatal(err)
	}
	waitStreaming(t, e, primary, "sb")

	// Enough writes to fill more than one segment, then a 20 kB message: the
	// last record spans three WAL pages.
	psql(t, e, primary, "CREATE TABLE w (i int, pad text); INSERT INTO w SELECT g, repeat('x', 200) FROM generate_series(1, 100000) g")
	psql(t, e, primary, "SELECT pg_logical_emit_message(true, 'pgnvme', repeat('m', 20000))")
	target := psql(t, e, primary, "SELECT pg_current_wal_flush_lsn()")
	var received, replayed string
	acctest.WaitFor(t, 30*time.Second, "sb caught up", func() (bool, string) {
		out := psql(t, e, sb, "SELECT pg_last_wal_receive_lsn() >= '"+target+"' AND pg_last_wal_replay_lsn() >= '"+target+"'")
		return out == "t", out
	})
	received = psql(t, e, sb, "SELECT pg_last_wal_receive_lsn()")
	replayed = psql(t, e, sb, "SELECT pg_last_wal_replay_lsn()")
	if err := e.Stop(ctx, sb, "immediate"); err != nil {
		t.Fatal(err)
	}
	after := psql(t, e, primary, "SELECT pg_current_wal_flush_lsn()")

	cd, err := e.ControlData(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	tl := max(cd.TimeLineID, cd.MinRecoveryTLI)
	end, err := e.EndOfWAL(ctx, sb, tl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sb: received %s, replayed %s before its stop; primary at %s after it; EndOfWAL %s (timeline %d)", received, replayed, after, end, tl)
	cmpLSN := func(a, b string) int {
		t.Helper()
		x, err1 := topology.ParseLSN(a)
		y, err2 := topology.ParseLSN(b)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if cmpLSN(end, replayed) < 0 || cmpLSN(end, received) < 0 {
		t.Errorf("EndOfWAL %s is before what sb had received (%s) or replayed (%s)", end, received, replayed)
	}
	if cmpLSN(end, after) > 0 {
		t.Errorf("EndOfWAL %s is past the primary's WAL (%s): it overstates what sb holds", end, after)
	}
	if cmpLSN(target, after) == 0 && cmpLSN(end, target) != 0 {
		t.Errorf("the primary wrote nothing after %s, which sb had received, but EndOfWAL is %s", target, end)
	}

	// The stopped primary after a clean shutdown: its WAL ends with the
	// shutdown checkpoint record, just past the checkpoint location.
	if err := e.Stop(ctx, primary, "fast"); err != nil {
		t.Fatal(err)
	}
	pcd, err := e.ControlData(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	pend, err := e.EndOfWAL(ctx, primary, pcd.TimeLineID)
	if err != nil {
		t.Fatal(err)
	}
	if cmpLSN(pend, pcd.CheckpointLSN) <= 0 || cmpLSN(pend, after) < 0 {
		t.Errorf("EndOfWAL of the cleanly stopped primary = %s; want past its shutdown checkpoint at %s and its last flush %s", pend, pcd.CheckpointLSN, after)
	}

	// No segment on a timeline: the control file's positions.
	if got, err := e.EndOfWAL(ctx, sb, tl+5); err != nil || cmpLSN(got, cd.CheckpointLSN) < 0 || cmpLSN(got, cd.MinRecoveryLSN) < 0 || cmpLSN(got, end) > 0 {
		t.Errorf("EndOfWAL on a timeline without WAL = %s, %v; want the later of %s and %s", got, err, cd.CheckpointLSN, cd.MinRecoveryLSN)
	}
	if _, err := e.EndOfWAL(ctx, sb, 0); err == nil {
		t.Error("EndOfWAL with timeline 0 succeeded")
	}
}
