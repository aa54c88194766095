package pgclient_test

import (
	"maps"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

func TestWALPosition(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	conn := connect(t, config(srv))
	ctx := testContext(t)

	p, err := conn.WALPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.InRecovery {
		t.Errorf("InRecovery = true on a primary")
	}
	if !lsnPattern.MatchString(p.FlushLSN) {
		t.Errorf("FlushLSN = %q, want the form X/Y", p.FlushLSN)
	}
	if p.ReplayLSN != "" {
		t.Errorf("ReplayLSN = %q on a primary, want \"\"", p.ReplayLSN)
	}
	if p.Timeline != 1 {
		t.Errorf("Timeline = %d, want 1", p.Timeline)
	}

	t.Run("standby", func(t *testing.T) {
		sb := startStandby(t, srv, "s1")
		waitStandbys(t, conn, "s1 streaming", func(s []pgclient.Standby) bool {
			return len(s) == 1 && s[0].State == "streaming" && s[0].ReplayLSN != ""
		})
		cfg := config(srv)
		cfg.Port = sb.Port()
		p, err := connectRetry(t, cfg).WALPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !p.InRecovery || !lsnPattern.MatchString(p.FlushLSN) || !lsnPattern.MatchString(p.ReplayLSN) || p.Timeline != 1 {
			t.Errorf("WALPosition on a standby = %+v; want in recovery, X/Y positions, timeline 1", p)
		}
	})
}

func TestSettingContexts(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	conn := connect(t, config(srv))
	ctx := testContext(t)

	got, err := conn.SettingContexts(ctx, []string{"work_mem", "shared_buffers", "wal_keep_size", "no_such_parameter"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"work_mem": "user", "shared_buffers": "postmaster", "wal_keep_size": "sighup"}
	if !maps.Equal(got, want) {
		t.Errorf("SettingContexts = %v, want %v", got, want)
	}

	for _, names := range [][]string{nil, {}} {
		got, err := conn.SettingContexts(ctx, names)
		if err != nil || len(got) != 0 {
			t.Errorf("SettingContexts(%v) = %v, %v; want an empty map", names, got, err)
		}
	}
}
