package quorum_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// st builds a live standby row.
func st(name, state, syncState string) quorum.StandbyState {
	return quorum.StandbyState{Name: name, State: state, SyncState: syncState}
}

func spec(method quorum.Method, n int, names ...string) quorum.Spec {
	return quorum.Spec{Method: method, Number: n, Names: names}
}

const (
	streaming = "streaming"
	catchup   = "catchup"
)

func TestSatisfied(t *testing.T) {
	any1 := spec(quorum.MethodAny, 1, "s1", "s2")
	first1 := spec(quorum.MethodFirst, 1, "s1", "s2")
	tests := []struct {
		name       string
		spec       quorum.Spec
		live       []quorum.StandbyState
		requireAll bool
		ok         bool
		msg        string
	}{
		{
			name: "any both quorum", spec: any1, requireAll: true, ok: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", streaming, "quorum")},
		},
		{
			name: "any one down, all required", spec: any1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum")},
			msg:  "s2 is not connected",
		},
		{
			name: "any one down, number enough", spec: any1, ok: true,
			live: []quorum.StandbyState{st("s2", streaming, "quorum")},
		},
		{
			name: "any both down", spec: any1,
			msg: "0 of the listed standbys are streaming, want at least 1 (s1 is not connected, s2 is not connected)",
		},
		{
			name: "any still async after reload", spec: any1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "async"), st("s2", streaming, "quorum")},
			msg:  "s1 shows async, want quorum",
		},
		{
			name: "any catchup", spec: any1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", catchup, "potential")},
			msg:  "s2 is catchup, not streaming yet",
		},
		{
			name: "any catchup not required", spec: any1, ok: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", catchup, "potential")},
		},
		{
			name: "any unlisted standby must be async", spec: any1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", streaming, "quorum"), st("s3", streaming, "quorum")},
			msg:  "s3 shows quorum, want async (it is not in the list)",
		},
		{
			name: "any unlisted async is fine", spec: any1, requireAll: true, ok: true,
			live: []quorum.StandbyState{st("s3", streaming, "async"), st("s1", streaming, "quorum"), st("s2", streaming, "quorum")},
		},
		{
			name: "case-insensitive names", spec: spec(quorum.MethodAny, 1, "S1", "node_B"), requireAll: true, ok: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("NODE_b", streaming, "quorum")},
		},
		{
			name: "quoted names in messages", spec: spec(quorum.MethodAny, 1, "s 1", "S2"), requireAll: true,
			live: []quorum.StandbyState{st("s 1", streaming, "async")},
			msg:  `"S2" is not connected; "s 1" shows async, want quorum`,
		},
		{
			name: "any two of three, one down", spec: spec(quorum.MethodAny, 2, "a", "b", "c"), ok: true,
			live: []quorum.StandbyState{st("a", streaming, "quorum"), st("c", streaming, "quorum")},
		},
		{
			name: "any two of three, two down", spec: spec(quorum.MethodAny, 2, "a", "b", "c"),
			live: []quorum.StandbyState{st("c", streaming, "quorum")},
			msg:  "1 of the listed standbys is streaming, want at least 2 (a is not connected, b is not connected)",
		},
		{
			name: "first sync and potential", spec: first1, requireAll: true, ok: true,
			live: []quorum.StandbyState{st("s2", streaming, "potential"), st("s1", streaming, "sync")},
		},
		{
			name: "first order wrong", spec: first1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "potential"), st("s2", streaming, "sync")},
			msg:  "s1 shows potential, want sync; s2 shows sync, want potential",
		},
		{
			name: "first still quorum", spec: first1, requireAll: true,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", streaming, "quorum")},
			msg:  "s1 shows quorum, want sync; s2 shows quorum, want potential; 0 standbys show sync, want 1",
		},
		{
			name: "first first down, second takes over", spec: first1, ok: true,
			live: []quorum.StandbyState{st("s2", streaming, "sync")},
		},
		{
			name: "first first catching up", spec: first1, ok: true,
			live: []quorum.StandbyState{st("s1", catchup, "potential"), st("s2", streaming, "sync")},
		},
		{
			name: "first two of three", spec: spec(quorum.MethodFirst, 2, "a", "b", "c"), requireAll: true, ok: true,
			live: []quorum.StandbyState{st("c", streaming, "potential"), st("b", streaming, "sync"), st("a", streaming, "sync")},
		},
		{
			name: "first wildcard ties", spec: spec(quorum.MethodFirst, 1, "*"), requireAll: true, ok: true,
			live: []quorum.StandbyState{st("x", streaming, "potential"), st("y", streaming, "sync")},
		},
		{
			name: "first wildcard ties, two sync", spec: spec(quorum.MethodFirst, 1, "*"), requireAll: true,
			live: []quorum.StandbyState{st("x", streaming, "sync"), st("y", streaming, "sync")},
			msg:  "2 standbys show sync, want 1",
		},
		{
			name: "first named before wildcard", spec: spec(quorum.MethodFirst, 1, "a", "*"), requireAll: true, ok: true,
			live: []quorum.StandbyState{st("x", streaming, "potential"), st("a", streaming, "sync")},
		},
		{
			name: "wildcard with too few standbys", spec: spec(quorum.MethodAny, 2, "a", "*"), requireAll: true,
			live: []quorum.StandbyState{st("a", streaming, "quorum")},
			msg:  "1 of the listed standbys is streaming, want at least 2",
		},
		{
			name: "async spec", spec: quorum.Spec{}, ok: true,
			live: []quorum.StandbyState{st("s1", streaming, "async"), st("s2", catchup, "async")},
		},
		{
			name: "async spec not yet applied", spec: quorum.Spec{},
			live: []quorum.StandbyState{st("s1", streaming, "quorum")},
			msg:  "s1 shows quorum, want async (synchronous replication is off)",
		},
		{
			name: "no application_name", spec: any1, ok: false,
			live: []quorum.StandbyState{st("s1", streaming, "quorum"), st("", streaming, "potential")},
			msg:  "a standby without application_name shows potential, want async (it is not in the list)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := quorum.Satisfied(tt.spec, tt.live, tt.requireAll)
			if ok != tt.ok || msg != tt.msg {
				t.Errorf("Satisfied(%+v, %+v, %v) = %v, %q; want %v, %q", tt.spec, tt.live, tt.requireAll, ok, msg, tt.ok, tt.msg)
			}
		})
	}
}

func TestCommitsBlocked(t *testing.T) {
	tests := []struct {
		name string
		spec quorum.Spec
		live []quorum.StandbyState
		want bool
	}{
		{"any one of two, both up", spec(quorum.MethodAny, 1, "s1", "s2"), []quorum.StandbyState{st("s1", streaming, "quorum"), st("s2", streaming, "quorum")}, false},
		{"any one of two, one up", spec(quorum.MethodAny, 1, "s1", "s2"), []quorum.StandbyState{st("s2", streaming, "quorum")}, false},
		{"any one of two, none", spec(quorum.MethodAny, 1, "s1", "s2"), nil, true},
		{"any one of two, only catchup", spec(quorum.MethodAny, 1, "s1", "s2"), []quorum.StandbyState{st("s1", catchup, "potential")}, true},
		{"any one of two, only unlisted", spec(quorum.MethodAny, 1, "s1", "s2"), []quorum.StandbyState{st("s3", streaming, "async")}, true},
		{"case-insensitive", spec(quorum.MethodAny, 1, "S1"), []quorum.StandbyState{st("s1", streaming, "quorum")}, false},
		{"any two of two, one down", spec(quorum.MethodAny, 2, "s1", "s2"), []quorum.StandbyState{st("s1", streaming, "quorum")}, true},
		{"first one of two, second up", spec(quorum.MethodFirst, 1, "s1", "s2"), []quorum.StandbyState{st("s2", streaming, "sync")}, false},
		{"first two of three, one up", spec(quorum.MethodFirst, 2, "a", "b", "c"), []quorum.StandbyState{st("c", streaming, "sync")}, true},
		{"wildcard", spec(quorum.MethodAny, 1, "*"), []quorum.StandbyState{st("anything", streaming, "quorum")}, false},
		{"async never blocks", quorum.Spec{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quorum.CommitsBlocked(tt.spec, tt.live); got != tt.want {
				t.Errorf("CommitsBlocked(%+v, %+v) = %v, want %v", tt.spec, tt.live, got, tt.want)
			}
		})
	}
}
