package localcluster_test

import (
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// TestSettings_restartOrder: a setting that needs a restart is applied by the steps the plan lists, one
// member at a time: raised, standbys first and the primary last; lowered where a hot standby must not
// have it below its primary's (max_connections), the primary first. First, what PostgreSQL does when the
// order is wrong: a standby started with a lower max_connections than its running primary's does not
// come up.
func TestSettings_restartOrder(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	s.Parameters = map[string]string{"max_connections": "60"}
	create(t, m, s)
	ctx := ctxT(t)
	show := func(mb localcluster.Member) string {
		t.Helper()
		out, err := m.Engine().Psql(ctx, localcluster.Node(mb, localnode.RoleStandby), "", "SHOW max_connections")
		if err != nil {
			t.Fatalf("%s: SHOW max_connections: %v", mb.Name, err)
		}
		return out
	}

	// The wrong order by hand: n3 restarted alone with max_connections = 50 while primary n1 runs 60.
	n3 := localcluster.Node(s.Members[2], localnode.RoleStandby)
	if err := m.Engine().Stop(ctx, n3, "fast"); err != nil {
		t.Fatal(err)
	}
	params, err := m.Engine().Parameters(n3)
	if err != nil {
		t.Fatal(err)
	}
	params["max_connections"] = "50"
	if err := m.Engine().SetParameters(n3, params); err != nil {
		t.Fatal(err)
	}
	startErr := m.Engine().Start(ctx, n3)
	_, running, _ := m.Engine().Running(n3)
	logTail := m.Engine().LogTail(n3, 20)
	if startErr == nil && running {
		t.Fatalf("standby n3 started with max_connections 50 below its primary's 60; want PostgreSQL to refuse:\n%s", logTail)
	}
	if !strings.Contains(logTail, "insufficient parameter settings") {
		t.Errorf("n3 did not start, but its log does not say why as PostgreSQL does (insufficient parameter settings):\n%s", logTail)
	}
	t.Logf("standby restarted first with a lower max_connections: start %v; its log:\n%s", startErr, logTail)
	params["max_connections"] = "60"
	if err := m.Engine().SetParameters(n3, params); err != nil {
		t.Fatal(err)
	}
	if err := m.Engine().Start(ctx, n3); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"50", []string{"configure", "restart n1", "restart n2", "restart n3"}}, // lowered: the primary first
		{"70", []string{"configure", "restart n2", "restart n3", "restart n1"}}, // raised: the standbys first
	} {
		s.Parameters = map[string]string{"max_connections": tc.value}
		steps := planAndReconcile(t, m, s) // the apply executes the steps the plan lists
		kinds := make([]string, len(steps))
		for i, st := range steps {
			kinds[i] = string(st.Kind)
			if st.Node != "" {
				kinds[i] += " " + st.Node
			}
		}
		if strings.Join(kinds, ", ") != strings.Join(tc.want, ", ") {
			t.Fatalf("max_connections %s: steps %q, want %q", tc.value, kinds, tc.want)
		}
		if tc.value == "50" && !strings.Contains(steps[1].Reason, "lowers max_connections") {
			t.Errorf("the primary's restart does not say why it goes first: %s", steps[1].Reason)
		}
		for _, mb := range s.Members {
			if got := show(mb); got != tc.value {
				t.Errorf("max_connections %s: %s runs %s", tc.value, mb.Name, got)
			}
		}
		wantHealthy(t, m, s, "quorum")
		t.Logf("max_connections %s: %s", tc.value, topology.StepsSummary(steps))
	}
}
