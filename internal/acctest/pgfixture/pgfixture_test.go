package pgfixture_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestServerAndStandbyCleanup: Start gives a primary of the engine's major; StartStandby a standby that
// streams under an application_name localnode would refuse as a node name; ConfigValue reads the
// cluster's parameters; and the test's cleanup leaves no process and no directory.
func TestServerAndStandbyCleanup(t *testing.T) {
	var (
		servers []*pgfixture.Server
		pids    []int
		dir     string
	)
	t.Run("servers", func(t *testing.T) {
		p := pgfixture.Start(t, pgfixture.Options{Params: map[string]string{"work_mem": "5MB"}})
		engine, major := pgfixture.Engine(t)
		if p.Engine != engine || p.Major != major {
			t.Errorf("server engine/major = %p/%d, want the fixture's %p/%d", p.Engine, p.Major, engine, major)
		}
		if got := p.Psql(t, "postgres", "SELECT current_setting('server_version_num')::int / 10000"); got != strconv.Itoa(p.Major) {
			t.Errorf("server major %s, want %d", got, p.Major)
		}
		if got, err := p.ConfigValue("work_mem"); err != nil || got != "5120" {
			t.Errorf("ConfigValue(work_mem) = %q, %v; want 5120 (kB)", got, err)
		}
		if _, err := p.ConfigValue("no_such_parameter"); err == nil {
			t.Error("ConfigValue(no_such_parameter) succeeded")
		}

		const app = `it's "s 1" \x`
		s := p.StartStandby(t, pgfixture.StandbyOptions{Name: "s1", ApplicationName: app})
		if s.Node.Role != localnode.RoleStandby || s.Dir() != p.Dir() {
			t.Errorf("standby %+v in %s, want a standby next to the primary in %s", s.Node, s.Dir(), p.Dir())
		}
		err := wait.Until(context.Background(), "the standby streaming", time.Minute, 50*time.Millisecond, nil, func(context.Context) (bool, error) {
			out, err := p.TryPsql("postgres", "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'")
			return err == nil && out == app, wait.NotYet(err)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Psql(t, "postgres", "SELECT pg_is_in_recovery()"); got != "t" {
			t.Errorf("standby pg_is_in_recovery = %s", got)
		}

		servers, dir = []*pgfixture.Server{p, s}, p.Dir()
		for _, srv := range servers {
			pid, ok, err := srv.Engine.Running(srv.Node)
			if !ok || err != nil {
				t.Fatalf("Running(%s) = %d, %v, %v", srv.Node.Name, pid, ok, err)
			}
			pids = append(pids, pid)
		}
	})
	if servers == nil {
		return
	}
	// The subtest's cleanup has destroyed both servers and removed their directory.
	for i, srv := range servers {
		if _, ok, err := srv.Engine.Running(srv.Node); ok || err != nil {
			t.Errorf("%s after cleanup: Running = %v, %v", srv.Node.Name, ok, err)
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pids[i]) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("%s after cleanup: its postmaster %d is still alive: %s", srv.Node.Name, pids[i], b)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fixture directory %s after cleanup: %v", dir, err)
	}
}
