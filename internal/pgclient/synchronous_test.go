package pgclient_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestApplySynchronous puts ANY 1 (s1, s2) in force on a primary with a streaming standby s1 and waits
// for it to report quorum; then the failures: a standby is refused, a malformed value fails at ALTER
// SYSTEM with nothing applied, and a listed standby that never connects times out (on a clock that does
// not sleep) with the settings in force.
func TestApplySynchronous(t *testing.T) {
	primary := pgfixture.Start(t, pgfixture.Options{})
	ctx := testContext(t)
	conn := connect(t, config(primary))
	sb := startStandby(t, primary, "s1")
	inSync := func(spec quorum.Spec) func([]pgclient.Standby) (bool, string) {
		return func(s []pgclient.Standby) (bool, string) { return quorum.Satisfied(spec, live(s), false) }
	}
	setting := func(name string) string {
		t.Helper()
		v, err := conn.Setting(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	spec := quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}}
	value, err := quorum.Format(spec)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.ApplySynchronous(ctx, pgclient.Synchronous{StandbyNames: value, Commit: "remote_apply", InSync: inSync(spec), StandbysTimeout: time.Minute})
	if err != nil || !pgclient.SyncApplied(err) {
		t.Fatalf("ApplySynchronous(%s) = %v", value, err)
	}
	if got := setting("synchronous_standby_names"); got != value {
		t.Errorf("synchronous_standby_names = %q, want %q", got, value)
	}
	if got := setting("synchronous_commit"); got != "remote_apply" {
		t.Errorf("synchronous_commit = %q, want remote_apply", got)
	}
	standbys, err := conn.Standbys(ctx)
	if err != nil || len(standbys) != 1 || standbys[0].SyncState != "quorum" {
		t.Errorf("standbys after the wait = %+v, %v; want s1 in quorum", standbys, err)
	}

	t.Run("on a standby", func(t *testing.T) {
		cfg := config(primary)
		cfg.Port = sb.Port()
		err := connectRetry(t, cfg).ApplySynchronous(ctx, pgclient.Synchronous{StandbyNames: value, Commit: "on"})
		var se *pgclient.SyncError
		if !errors.Is(err, pgclient.ErrNotPrimary) || !errors.As(err, &se) || se.Step != pgclient.SyncCheckPrimary || pgclient.SyncApplied(err) {
			t.Errorf("ApplySynchronous on a standby = %v; want ErrNotPrimary at %s", err, pgclient.SyncCheckPrimary)
		}
	})

	t.Run("malformed value", func(t *testing.T) {
		err := conn.ApplySynchronous(ctx, pgclient.Synchronous{StandbyNames: "ANY 1 (", Commit: "on"})
		var se *pgclient.SyncError
		if !errors.As(err, &se) || se.Step != pgclient.SyncAlterSystem || pgclient.SyncApplied(err) || !pgclient.IsInvalidParameterValue(err) {
			t.Errorf("ApplySynchronous(ANY 1 () = %v; want an invalid value at %s", err, pgclient.SyncAlterSystem)
		}
		if got := setting("synchronous_standby_names"); got != value {
			t.Errorf("synchronous_standby_names = %q after the failure, want %q still", got, value)
		}
	})

	t.Run("standby never connects", func(t *testing.T) {
		absent := quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"s9"}}
		v, err := quorum.Format(absent)
		if err != nil {
			t.Fatal(err)
		}
		clock := wait.NewStepClock(time.Now())
		err = conn.ApplySynchronous(ctx, pgclient.Synchronous{StandbyNames: v, Commit: "on", InSync: inSync(absent),
			StandbysTimeout: 5 * time.Second, Interval: time.Second, Clock: clock})
		var se *pgclient.SyncError
		var te *wait.TimeoutError
		if !errors.As(err, &se) || se.Step != pgclient.SyncStandbys || !pgclient.SyncApplied(err) || !errors.As(err, &te) ||
			!strings.Contains(err.Error(), "s9 is not connected") {
			t.Errorf("ApplySynchronous(%s) without s9 = %v; want a timeout at %s naming s9", v, err, pgclient.SyncStandbys)
		}
		if len(clock.Sleeps) != 5 {
			t.Errorf("waited %v on the step clock, want 5 sleeps of 1s", clock.Sleeps)
		}
		if got := setting("synchronous_standby_names"); got != v {
			t.Errorf("synchronous_standby_names = %q, want %q in force", got, v)
		}
	})
}
