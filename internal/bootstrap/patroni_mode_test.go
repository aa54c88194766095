package bootstrap_test

import (
	"maps"
	"slices"
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
		// The same rules; under Patroni the header names the cluster alone (one pg_hba for every node).
		if !maps.Equal(got.Parameters, want.Parameters) || !slices.Equal(got.HBA[1:], want.HBA[1:]) || got.WALGEnvFile != want.WALGEnvFile {
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

// TestRenderEC2_identity: the identity leaves out exactly what Patroni's
// dynamic configuration changes on a running cluster (parameters, timings,
// the quorum, pg_hba), so such a change, or a node added after the etcd
// members, never replaces an instance; anything else in the user-data (the
// archiver, the instance type, the etcd members) changes it. DynamicConfig is bootstrap.dcs as JSON values.
func TestRenderEC2_identity(t *testing.T) {
	render := func(c bootstrap.Cluster, n bootstrap.EC2Node) bootstrap.UserData {
		t.Helper()
		u, err := bootstrap.RenderEC2(c, n)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	c := ec2Cluster(walg, 17)
	n := ec2Host(c, "pg-b", 2, bootstrap.ArchX86_64)
	base := render(c, n)

	dyn := c
	dyn.Parameters = map[string]string{"shared_buffers": "8GB", "work_mem": "64MB"}
	dyn.Synchronous.Number, dyn.Synchronous.DataDurability, dyn.Synchronous.Commit = 2, bootstrap.DurabilityPreferred, bootstrap.CommitRemoteApply
	dn := n
	dn.Patroni.TTL, dn.Patroni.LoopWait = 60, 5
	dn.AllowedCIDRs = []string{"10.0.0.0/8"} // pg_hba
	changed := render(dyn, dn)
	if changed.Identity != base.Identity {
		t.Errorf("parameters, quorum and timings changed the identity")
	}
	if changed.CloudConfig == base.CloudConfig {
		t.Errorf("parameters, quorum and timings did not change the user-data (bootstrap.dcs)")
	}
	params := changed.DynamicConfig["postgresql"].(map[string]any)["parameters"].(map[string]any)
	if params["shared_buffers"] != "8GB" || params["work_mem"] != "64MB" || params["synchronous_commit"] != "remote_apply" {
		t.Errorf("DynamicConfig's parameters: %v", params)
	}
	if _, ok := params["random_page_cost"]; ok {
		t.Errorf("a parameter no longer given is still in DynamicConfig: %v", params)
	}
	if changed.DynamicConfig["ttl"] != 60 || changed.DynamicConfig["loop_wait"] != 5 || changed.DynamicConfig["synchronous_node_count"] != 2 ||
		changed.DynamicConfig["synchronous_mode"] != "quorum" || changed.DynamicConfig["synchronous_mode_strict"] != false {
		t.Errorf("DynamicConfig: %v", changed.DynamicConfig)
	}
	if strings.Contains(base.Identity, "shared_buffers") || strings.Contains(base.Identity, "scram-sha-256") {
		t.Errorf("the identity holds parameters or pg_hba")
	}
	if hba, _ := changed.DynamicConfig["postgresql"].(map[string]any)["pg_hba"].([]any); !slices.ContainsFunc(hba, func(l any) bool {
		return strings.Contains(l.(string), "10.0.0.0/8")
	}) {
		t.Errorf("DynamicConfig's pg_hba lacks the allowed network: %v", hba)
	}

	// A node added after the first three (no etcd member) changes no other node's identity.
	grown := c
	grown.Nodes = append(slices.Clone(c.Nodes), "pg-d")
	if render(grown, ec2Host(grown, "pg-b", 2, bootstrap.ArchX86_64)).Identity != base.Identity {
		t.Errorf("adding a fourth node changed pg-b's identity")
	}

	for name, mutate := range map[string]func(*bootstrap.Cluster, *bootstrap.EC2Node){
		"archiver":      func(c *bootstrap.Cluster, _ *bootstrap.EC2Node) { *c = ec2Cluster(pgbackrest, 17) },
		"instance type": func(_ *bootstrap.Cluster, n *bootstrap.EC2Node) { n.InstanceType, n.DiskCount = "m6id.8xlarge", 1 },
		"major":         func(c *bootstrap.Cluster, _ *bootstrap.EC2Node) { c.PostgresMajor = 16 },
		"etcd members":  func(c *bootstrap.Cluster, _ *bootstrap.EC2Node) { c.Nodes = []string{"pg-b", "pg-a", "pg-c"} },
	} {
		c2, n2 := c, n
		mutate(&c2, &n2)
		if render(c2, n2).Identity == base.Identity {
			t.Errorf("%s: the identity did not change", name)
		}
	}
}
