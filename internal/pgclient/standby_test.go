package pgclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// startStandby starts a streaming standby of primary (pgfixture's
// StartStandby: pg_basebackup -R through localnode) that gives appName as
// its application_name. The test's cleanup destroys it.
func startStandby(t *testing.T, primary *pgfixture.Server, appName string) *pgfixture.Server {
	t.Helper()
	return primary.StartStandby(t, pgfixture.StandbyOptions{Name: "standby", ApplicationName: appName})
}

// connectRetry opens a Conn to a server that may still be starting.
func connectRetry(t *testing.T, cfg pgclient.Config) *pgclient.Conn {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgclient.Connect(context.Background(), cfg)
		if err == nil {
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not accept connections in 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStandbys polls Standbys until ok accepts them, and returns them.
func waitStandbys(t *testing.T, conn *pgclient.Conn, what string, ok func([]pgclient.Standby) bool) []pgclient.Standby {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := conn.Standbys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting 30s for %s: standbys are %+v", what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// live converts pgclient rows to the quorum package's view.
func live(standbys []pgclient.Standby) []quorum.StandbyState {
	out := make([]quorum.StandbyState, 0, len(standbys))
	for _, s := range standbys {
		out = append(out, quorum.StandbyState{Name: s.ApplicationName, State: s.State, SyncState: s.SyncState})
	}
	return out
}

// TestStandby runs a primary and one streaming standby called "s 1" under
// ANY 1 ("s 1", s2): the standby shows quorum; the standby itself is in
// recovery; a role without pg_read_all_stats gets a clear error; and with
// the standby stopped a commit waits in IPC:SyncRep.
func TestStandby(t *testing.T) {
	primary := pgfixture.Start(t, pgfixture.Options{})
	ctx := testContext(t)
	conn := connect(t, config(primary))

	spec := quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s 1", "s2"}}
	value, err := quorum.Format(spec)
	if err != nil {
		t.Fatal(err)
	}
	applySetting(ctx, t, conn, "synchronous_standby_names", value)

	sb := startStandby(t, primary, "s 1")
	got := waitStandbys(t, conn, `"s 1" streaming as quorum`, func(s []pgclient.Standby) bool {
		return len(s) == 1 && s[0].State == "streaming" && s[0].SyncState == "quorum" && s[0].ReplayLSN != ""
	})
	s := got[0]
	if s.ApplicationName != "s 1" || s.ClientAddr != "127.0.0.1" {
		t.Errorf("standby = %+v; want application_name \"s 1\" from 127.0.0.1", s)
	}
	for _, lsn := range []string{s.SentLSN, s.WriteLSN, s.FlushLSN, s.ReplayLSN} {
		if !lsnPattern.MatchString(lsn) {
			t.Errorf("standby LSN %q is not an LSN (standby %+v)", lsn, s)
		}
	}
	if s.LagBytes < 0 || s.ReplayLagSeconds < 0 || (!s.ReplayLagKnown && s.ReplayLagSeconds != 0) {
		t.Errorf("standby lag = %d bytes, %v s (known %v)", s.LagBytes, s.ReplayLagSeconds, s.ReplayLagKnown)
	}
	if ok, why := quorum.Satisfied(spec, live(got), false); !ok {
		t.Errorf("Satisfied(requireAll=false) = false: %s", why)
	}
	if ok, why := quorum.Satisfied(spec, live(got), true); ok || why != "s2 is not connected" {
		t.Errorf("Satisfied(requireAll=true) = %v, %q; want false, \"s2 is not connected\"", ok, why)
	}
	if quorum.CommitsBlocked(spec, live(got)) {
		t.Error("CommitsBlocked with the standby streaming")
	}

	t.Run("the standby itself", func(t *testing.T) {
		cfg := config(primary)
		cfg.Port = sb.Port()
		sconn := connectRetry(t, cfg)
		rec, err := sconn.IsInRecovery(ctx)
		if err != nil || !rec {
			t.Errorf("IsInRecovery on the standby = %v, %v; want true", rec, err)
		}
		err = sconn.RequirePrimary(ctx)
		if !errors.Is(err, pgclient.ErrNotPrimary) || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d/postgres", sb.Port())) {
			t.Errorf("RequirePrimary on the standby = %v", err)
		}
		lsn, err := sconn.CurrentWALLSN(ctx)
		if err != nil || !lsnPattern.MatchString(lsn) {
			t.Errorf("CurrentWALLSN on the standby = %q, %v", lsn, err)
		}
		raw := rawConnPort(t, sb.Port(), "tf-acc-standby-writer")
		_, err = raw.Exec(ctx, "CREATE TABLE tf_acc_t ()")
		if !pgclient.IsReadOnlyStandby(err) {
			t.Errorf("write on the standby: error = %v; want read-only (25006)", err)
		}
		standbys, err := sconn.Standbys(ctx)
		if err != nil || len(standbys) != 0 {
			t.Errorf("Standbys on a standby without cascades = %+v, %v", standbys, err)
		}
	})

	t.Run("privileges", func(t *testing.T) {
		primary.Psql(t, "postgres", "CREATE ROLE tf_acc_mon LOGIN")
		cfg := config(primary)
		cfg.User = "tf_acc_mon"
		mon := connect(t, cfg)
		_, err := mon.Standbys(ctx)
		if err == nil || !strings.Contains(err.Error(), "from role tf_acc_mon: grant it pg_read_all_stats or pg_monitor") {
			t.Errorf("Standbys without pg_read_all_stats: error = %v", err)
		}
		primary.Psql(t, "postgres", "GRANT pg_read_all_stats TO tf_acc_mon")
		got, err := mon.Standbys(ctx)
		if err != nil || len(got) != 1 || got[0].State != "streaming" {
			t.Errorf("Standbys with pg_read_all_stats = %+v, %v", got, err)
		}
		// ALTER SYSTEM needs superuser (or GRANT ALTER SYSTEM ON PARAMETER).
		if err := mon.AlterSystemSet(ctx, "synchronous_standby_names", ""); !pgclient.IsInsufficientPrivilege(err) {
			t.Errorf("ALTER SYSTEM as a plain role: error = %v; want insufficient privilege", err)
		}
	})

	t.Run("first", func(t *testing.T) {
		first := quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"s2", "S 1"}}
		v, err := quorum.Format(first)
		if err != nil {
			t.Fatal(err)
		}
		applySetting(ctx, t, conn, "synchronous_standby_names", v)
		// "S 1" matches the standby "s 1": PostgreSQL ignores letter case.
		got := waitStandbys(t, conn, `"s 1" as sync`, func(s []pgclient.Standby) bool {
			return len(s) == 1 && s[0].SyncState == "sync"
		})
		if ok, why := quorum.Satisfied(first, live(got), false); !ok {
			t.Errorf("Satisfied(FIRST) = false: %s", why)
		}
		applySetting(ctx, t, conn, "synchronous_standby_names", value)
		waitStandbys(t, conn, `"s 1" as quorum again`, func(s []pgclient.Standby) bool {
			return len(s) == 1 && s[0].SyncState == "quorum"
		})
	})

	t.Run("commit waits in SyncRep without the standby", func(t *testing.T) {
		sb.Stop(t)
		got := waitStandbys(t, conn, "no standby", func(s []pgclient.Standby) bool { return len(s) == 0 })
		if !quorum.CommitsBlocked(spec, live(got)) {
			t.Fatal("CommitsBlocked with no standby = false")
		}
		if ok, why := quorum.Satisfied(spec, live(got), false); ok || !strings.Contains(why, `0 of the listed standbys are streaming, want at least 1 ("s 1" is not connected, s2 is not connected)`) {
			t.Errorf("Satisfied = %v, %q", ok, why)
		}

		writer := rawConnPort(t, primary.Port(), "tf-acc-writer")
		done := make(chan error, 1)
		go func() {
			_, err := writer.Exec(context.Background(), "CREATE TABLE tf_acc_t ()")
			done <- err
		}()
		var events map[string]int64
		deadline := time.Now().Add(10 * time.Second)
		for events["IPC:SyncRep"] != 1 && time.Now().Before(deadline) {
			events, err = conn.SampleWaitEvents(ctx, "tf-acc-writer")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if events["IPC:SyncRep"] != 1 {
			t.Errorf("wait events of the committing session = %v, want IPC:SyncRep", events)
		}
		// Cancelling ends the wait; the commit is already local and stays.
		primary.Psql(t, "postgres", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'tf-acc-writer'")
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cancelled commit: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the commit did not end 10s after pg_cancel_backend")
		}
		if n := primary.Psql(t, "postgres", "SELECT count(*) FROM pg_class WHERE relname = 'tf_acc_t'"); n != "1" {
			t.Errorf("table created by the cancelled commit: count %s, want 1", n)
		}
	})
}
