package localcluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

var (
	planLine = regexp.MustCompile(`^(\d+)\. (.+?): `)
	stepLog  = regexp.MustCompile(`: step \d+ of \d+: (.+)$`)
)

// TestPlatform_planIsApply: for each case the actions the plan lists are the actions the apply executes
// (from the provider's log), in order, on a real local cluster: one standby lost, the primary lost, a node
// added, a node removed, every node lost, max_connections raised and lowered, TLS turned on (no step) and
// every member's certificate renewed; removing the primary is refused by both.
func TestPlatform_planIsApply(t *testing.T) {
	t.Parallel()
	p := localcluster.NewPlatform()
	root, err := os.MkdirTemp("", "pgnvme-steps-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	base := acctest.FreePortBase(t, 4)
	withTLS := func(nodes int, params map[string]string, tls *cluster.TLSInput) cluster.Spec {
		var ns []cluster.Node
		for i := range nodes {
			ns = append(ns, cluster.Node{Name: fmt.Sprintf("node-%d", i+1), Zone: fmt.Sprintf("z%d", i+1)})
		}
		return cluster.FromInput(cluster.Input{Name: "tf-acc-steps", Nodes: ns, Parameters: params, TLS: tls,
			Blocks: []cluster.BlockInput{&localspec.Block{DataDir: root, PortBase: base}}})
	}
	withParams := func(nodes int, params map[string]string) cluster.Spec { return withTLS(nodes, params, nil) }
	hours := func(validity, early int) *cluster.TLSInput {
		return &cluster.TLSInput{ValidityPeriodHours: &validity, EarlyRenewalHours: &early}
	}
	spec := func(nodes int) cluster.Spec { return withParams(nodes, nil) }
	s := spec(3)
	st, err := p.Create(ctxT(t), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		if err := p.Delete(ctx, spec(4), cluster.Prior{Members: st.Members}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		_ = os.RemoveAll(root)
	})
	m, err := localcluster.NewManager("")
	if err != nil {
		t.Fatal(err)
	}
	loseNode := func(i int) {
		mb := localcluster.Member{Name: fmt.Sprintf("node-%d", i+1), Port: base + i, DataDir: filepath.Join(root, fmt.Sprintf("node-%d", i+1))}
		if err := m.Engine().Kill(localcluster.Node(mb, localnode.RoleStandby)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(mb.DataDir); err != nil {
			t.Fatal(err)
		}
	}
	primary := func(members []cluster.Member) int {
		for i, mb := range members {
			if mb.Role == cluster.RolePrimary {
				return i
			}
		}
		t.Fatalf("no primary in %+v", members)
		return -1
	}

	for _, tc := range []struct {
		name   string
		before func()
		spec   cluster.Spec
		want   []string // the first words of each action
	}{
		{"a standby lost", func() { loseNode((primary(st.Members) + 2) % 3) }, spec(3), []string{"replace"}},
		{"the primary lost", func() { loseNode(primary(st.Members)) }, spec(3), []string{"promote", "replace"}},
		{"a node added", func() {}, spec(4), []string{"add"}},
		{"a node removed", func() {}, spec(3), []string{"remove"}},
		// No archive: nothing is left to keep, and the cluster is created again (with one, see
		// TestEveryMemberLostIsRestored: restored from it).
		{"every node lost", func() { loseNode(0); loseNode(1); loseNode(2) }, spec(3), []string{"form", "replace", "replace"}},
		// A setting only a restart applies: raised, the standbys first; lowered where a hot standby must not
		// have it below its primary's, the primary first (restartFirst checks which).
		{"max_connections raised", func() {}, withParams(3, map[string]string{"max_connections": "120"}), []string{"change", "restart", "restart", "restart"}},
		{"max_connections lowered", func() {}, withParams(3, map[string]string{"max_connections": "90"}), []string{"change", "restart", "restart", "restart"}},
		// A standby lost while a setting changes: raised, the replacement starts with the new value, so only
		// the members that ran before restart. Lowered, the replacement is made while the primary still runs
		// the higher value, below which a hot standby refuses to start: it starts with the primary's and
		// restarts for the lower one after the primary, like the others.
		{"a standby lost, max_connections raised", func() { loseNode((primary(st.Members) + 1) % 3) }, withParams(3, map[string]string{"max_connections": "110"}),
			[]string{"replace", "change", "restart", "restart"}},
		{"a standby lost, max_connections lowered", func() { loseNode((primary(st.Members) + 1) % 3) }, withParams(3, map[string]string{"max_connections": "90"}),
			[]string{"replace", "change", "restart", "restart", "restart"}},
		// TLS turned on is done before the steps (the plan's lines before its numbered steps); then a policy
		// under which every member's certificate is due renews each member as a step (a reload), in the
		// configuration's order, and the superuser's client certificate before them.
		{"TLS turned on", func() {}, withTLS(3, map[string]string{"max_connections": "90"}, hours(2000, 100)), nil},
		{"a certificate renewal", func() {}, withTLS(3, map[string]string{"max_connections": "90"}, hours(4000, 3000)), []string{"renew", "renew", "renew"}},
	} {
		tc.before()
		plan, err := p.Plan(ctxT(t), tc.spec, cluster.Prior{Members: st.Members})
		if err != nil {
			t.Fatalf("%s: plan: %v", tc.name, err)
		}
		var planned []string
		for _, line := range strings.Split(plan.Actions, "\n") {
			if mt := planLine.FindStringSubmatch(line); mt != nil {
				planned = append(planned, mt[2])
			}
		}
		var logs bytes.Buffer
		st, err = p.Update(tflogtest.RootLogger(ctxT(t), &logs), tc.spec, cluster.Prior{Members: st.Members})
		if err != nil {
			t.Fatalf("%s: apply: %v", tc.name, err)
		}
		var applied []string
		sc := bufio.NewScanner(&logs)
		for sc.Scan() {
			var entry struct {
				Message string `json:"@message"`
			}
			if json.Unmarshal(sc.Bytes(), &entry) == nil {
				if mt := stepLog.FindStringSubmatch(entry.Message); mt != nil {
					applied = append(applied, mt[1])
				}
			}
		}
		if !slices.Equal(applied, planned) || len(planned) != len(tc.want) {
			t.Errorf("%s: the plan listed %q, the apply executed %q (want %d actions: %v)\n%s", tc.name, planned, applied, len(tc.want), tc.want, plan.Actions)
			continue
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(planned[i], w+" ") {
				t.Errorf("%s: action %d is %q; want %s", tc.name, i+1, planned[i], w)
			}
		}
		if i := slices.IndexFunc(planned, func(p string) bool { return strings.HasPrefix(p, "restart ") }); strings.Contains(tc.name, "max_connections") && i >= 0 {
			first, pr := strings.TrimPrefix(planned[i], "restart "), st.Members[primary(st.Members)].Name
			if lowered := strings.HasSuffix(tc.name, "lowered"); (first == pr) != lowered {
				t.Errorf("%s: the first restart is %s's, the primary is %s: want the primary first only when lowered", tc.name, first, pr)
			}
		}
		t.Logf("%s: plan and apply agree: %q", tc.name, applied)
	}

	// The primary removed: the local platform has no switchover (no Patroni to hand over), so the plan
	// refuses, and the apply refuses the same way and changes nothing.
	pr := primary(st.Members)
	var rest []cluster.Node
	for i, n := range spec(3).Nodes {
		if i != pr {
			rest = append(rest, n)
		}
	}
	without := cluster.FromInput(cluster.Input{Name: "tf-acc-steps", Nodes: rest, Parameters: map[string]string{"max_connections": "90"}, TLS: hours(4000, 3000),
		Blocks: []cluster.BlockInput{&localspec.Block{DataDir: root, PortBase: base}}})
	_, planErr := p.Plan(ctxT(t), without, cluster.Prior{Members: st.Members})
	_, applyErr := p.Update(ctxT(t), without, cluster.Prior{Members: st.Members})
	for what, err := range map[string]error{"plan": planErr, "apply": applyErr} {
		if err == nil || !strings.Contains(err.Error(), "pgnvme never removes the primary") {
			t.Errorf("the primary removed: the %s: %v; want the refusal", what, err)
		}
	}
	after, err := p.Read(ctxT(t), spec(3), cluster.Prior{Members: st.Members})
	if err != nil {
		t.Fatal(err)
	}
	if got := primary(after.Members); got != pr || len(after.Members) != 3 {
		t.Errorf("after the refused removal of the primary: %+v", after.Members)
	}
	t.Logf("the primary removed: plan and apply refuse alike (%v)", planErr)
}
