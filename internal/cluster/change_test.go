package cluster_test

import (
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

func TestChangeChecks(t *testing.T) {
	restore := func(target string) *cluster.Restore {
		return &cluster.Restore{Archive: bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/src"}}, TargetTime: target}
	}
	base := cluster.Spec{Name: "orders", PostgresMajor: 18, Restore: restore("")}
	for _, tc := range []struct {
		name         string
		change       func(s *cluster.Spec)
		err, warning string // the path of the error, of the warning; "" for none
	}{
		{"nothing changed", func(*cluster.Spec) {}, "", ""},
		{"restore block removed", func(s *cluster.Spec) { s.Restore = nil }, "", ""},
		{"restore target changed", func(s *cluster.Spec) { s.Restore = restore("2026-12-02T10:30:00Z") }, "restore", ""},
		{"restore block added", func(s *cluster.Spec) {}, "restore", ""}, // old has none: see below
		{"major changed", func(s *cluster.Spec) { s.PostgresMajor = 17 }, "", "postgres_major"},
		{"major left to the platform", func(s *cluster.Spec) { s.PostgresMajor = 0 }, "", ""},
	} {
		old := base
		if tc.name == "restore block added" {
			old.Restore = nil
		}
		s := base
		tc.change(&s)
		errs, warnings := cluster.ChangeChecks(old, s)
		if got := paths(errs); got != tc.err {
			t.Errorf("%s: errors at %q; want %q", tc.name, got, tc.err)
		}
		if got := paths(warnings); got != tc.warning {
			t.Errorf("%s: warnings at %q; want %q", tc.name, got, tc.warning)
		}
		for _, fe := range append(errs, warnings...) {
			if fe.Summary == "" || !strings.Contains(fe.Detail, fe.Path[0]) && !strings.Contains(fe.Detail, "restore block") {
				t.Errorf("%s: %+v does not name what it is about", tc.name, fe)
			}
		}
	}
	if _, w := cluster.ChangeChecks(cluster.Spec{PostgresMajor: 15}, cluster.Spec{PostgresMajor: 18}); len(w) != 1 || !strings.Contains(w[0].Detail, "postgres_major 15 -> 18") {
		t.Errorf("major 15 -> 18: %+v", w)
	}
}

func paths(fes []*cluster.FieldError) string {
	var out []string
	for _, fe := range fes {
		out = append(out, strings.Join(fe.Path, "."))
	}
	return strings.Join(out, ",")
}

func TestReconfigures(t *testing.T) {
	old := cluster.Spec{Parameters: map[string]string{"work_mem": "4MB"}, Synchronous: bootstrap.Synchronous{Method: "any", Number: 1}}
	for _, tc := range []struct {
		name   string
		change func(s *cluster.Spec, p *cluster.Plan)
		want   bool
	}{
		{"nothing", func(*cluster.Spec, *cluster.Plan) {}, false},
		{"a parameter", func(s *cluster.Spec, _ *cluster.Plan) { s.Parameters = map[string]string{"work_mem": "8MB"} }, true},
		{"the quorum", func(s *cluster.Spec, _ *cluster.Plan) { s.Synchronous.Number = 2 }, true},
		{"actions planned", func(_ *cluster.Spec, p *cluster.Plan) { p.Actions = "replace node-1" }, true},
	} {
		s := old
		s.Parameters = map[string]string{"work_mem": "4MB"}
		var p cluster.Plan
		tc.change(&s, &p)
		if got := cluster.Reconfigures(old, s, p); got != tc.want {
			t.Errorf("%s: Reconfigures = %v; want %v", tc.name, got, tc.want)
		}
	}
	if cluster.Reconfigures(cluster.Spec{}, cluster.Spec{Parameters: map[string]string{}}, cluster.Plan{}) {
		t.Error("no parameters and an empty map: reconfigures")
	}
}
