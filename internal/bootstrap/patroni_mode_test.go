package bootstrap_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// TestRender_patroniMode: under Patroni, Render leaves out what Patroni
// owns (synchronous_standby_names, primary_conninfo, standby.signal),
// whatever the role, needs no primary for a standby, and accepts no role;
// everything else is what the node gets without Patroni.
func TestRender_patroniMode(t *testing.T) {
	c := cluster3()
	c.Archive = &bootstrap.Archive{WALGEnv: s3Archive.WALGEnv()}
	for _, role := range []bootstrap.Role{bootstrap.RolePrimary, bootstrap.RoleStandby, ""} {
		plain := ec2Node("pg-b", bootstrap.RoleStandby)
		want, err := bootstrap.Render(c, plain)
		if err != nil {
			t.Fatal(err)
		}
		n := plain
		n.Role, n.Patroni, n.PrimaryHost, n.PrimaryPort = role, true, "", 0
		got, err := bootstrap.Render(c, n)
		if err != nil {
			t.Fatalf("role %q under Patroni: %v", role, err)
		}
		if _, ok := got.Parameters["synchronous_standby_names"]; ok {
			t.Errorf("role %q: synchronous_standby_names rendered under Patroni", role)
		}
		if got.PrimaryConnInfo != "" || got.StandbySignal {
			t.Errorf("role %q: primary_conninfo %q, standby.signal %v under Patroni", role, got.PrimaryConnInfo, got.StandbySignal)
		}
		delete(want.Parameters, "synchronous_standby_names")
		if !maps.Equal(got.Parameters, want.Parameters) || got.HBAFile() != want.HBAFile() || got.WALGEnvFile != want.WALGEnvFile {
			t.Errorf("role %q: Patroni mode changed more than what Patroni owns:\n%s\nwant\n%s", role,
				bootstrap.FormatConf(got.Parameters), bootstrap.FormatConf(want.Parameters))
		}
	}

	// Without Patroni, a role is needed and a standby needs its primary.
	n := ec2Node("pg-b", bootstrap.RoleStandby)
	n.Role = ""
	if _, err := bootstrap.Render(c, n); err == nil || !strings.Contains(err.Error(), `has role ""`) {
		t.Errorf("no role without Patroni: %v", err)
	}
	n = ec2Node("pg-b", bootstrap.RoleStandby)
	n.PrimaryHost = ""
	if _, err := bootstrap.Render(c, n); err == nil || !strings.Contains(err.Error(), "has no primary host") {
		t.Errorf("a standby without its primary, without Patroni: %v", err)
	}
}
