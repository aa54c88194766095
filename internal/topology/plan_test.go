package topology_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Observation helpers: the usual shapes of a node.

func primary(name string, tl int, flush string) topology.Observed {
	return topology.Observed{Name: name, State: topology.Running, Role: topology.RolePrimary, FlushLSN: flush, Timeline: tl}
}

func streaming(name string, tl int, flush string) topology.Observed {
	return topology.Observed{Name: name, State: topology.Running, Role: topology.RoleStandby, FlushLSN: flush, ReplayLSN: flush, Timeline: tl, Streaming: true}
}

// orphan is a running standby whose primary is gone (or that is not streaming).
func orphan(name string, tl int, flush string) topology.Observed {
	o := streaming(name, tl, flush)
	o.Streaming = false
	return o
}

func stopped(name, role string, tl int) topology.Observed {
	return topology.Observed{Name: name, State: topology.Stopped, Role: role, Timeline: tl}
}

// missing is a node whose data directory is gone; role is what state remembered.
func missing(name, role string) topology.Observed {
	return topology.Observed{Name: name, State: topology.Missing, Role: role}
}

func nodes(names ...string) topology.Desired { return topology.Desired{Nodes: names} }

// step is an action without its reason.
type step struct {
	Kind         topology.ActionKind
	Node, Source string
}

func steps(actions []topology.Action) []step {
	out := make([]step, len(actions))
	for i, a := range actions {
		out[i] = step{a.Kind, a.Node, a.Source}
	}
	return out
}

func TestPlan(t *testing.T) {
	three := nodes("n1", "n2", "n3")
	tests := []struct {
		name     string
		desired  topology.Desired
		observed []topology.Observed
		want     []step
		// reasons holds substrings expected in the reason of the action at the same index.
		reasons []string
	}{
		{
			name:    "create from nothing: first node is the primary",
			desired: three,
			want: []step{
				{topology.Create, "n1", ""},
				{topology.Create, "n2", "n1"},
				{topology.Create, "n3", "n1"},
			},
			reasons: []string{"n1 is first in the node list"},
		},
		{
			name:     "every node lost, no archive: nothing is left to keep, created again",
			desired:  three,
			observed: []topology.Observed{missing("n1", topology.RoleStandby), missing("n2", topology.RolePrimary), missing("n3", topology.RoleStandby)},
			want: []step{
				{topology.Create, "n1", ""},
				{topology.Create, "n2", "n1"},
				{topology.Create, "n3", "n1"},
			},
			reasons: []string{"every node (n1, n2 and n3) is lost and no archive holds the cluster's data"},
		},
		{
			name: "every node lost, with a backup in the archive: the first node restored, the others copied from it",
			desired: topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true,
				Archive: &topology.ArchiveEnd{Backup: "20261202-101500F", LastWAL: "000000020000000000000009", Hole: "000000020000000000000007"}},
			observed: []topology.Observed{missing("n1", topology.RoleStandby), missing("n2", topology.RolePrimary), missing("n3", topology.RoleStandby)},
			want: []step{
				{topology.Restore, "n1", ""},
				{topology.Create, "n2", "n1"},
				{topology.Create, "n3", "n1"},
			},
			reasons: []string{"n1 is restored from the archive's newest base backup 20261202-101500F",
				"copied from the restored primary n1"},
		},
		{
			name:     "all healthy",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000060")},
			want:     []step{},
		},
		{
			name:    "healthy after a failover: the primary need not be first",
			desired: three,
			observed: []topology.Observed{
				streaming("n1", 2, "0/5000000"), primary("n2", 2, "0/5000000"), streaming("n3", 2, "0/5000000"),
			},
			want: []step{},
		},
		{
			name:     "one standby missing",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), missing("n3", topology.RoleStandby)},
			want:     []step{{topology.Reseed, "n3", "n1"}},
			reasons:  []string{"data directory of n3 is gone"},
		},
		{
			name:     "stopped standby with data is started, not reseeded",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), stopped("n2", topology.RoleStandby, 1), streaming("n3", 1, "0/3000148")},
			want:     []step{{topology.Start, "n2", "n1"}},
			reasons:  []string{"catches up from its own WAL"},
		},
		{
			name:    "primary and one standby of four lost under ANY 2: a survivor holds every acknowledged commit",
			desired: topology.Desired{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Quorum: 2},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby),
				orphan("n3", 1, "0/3000148"), orphan("n4", 1, "0/3000060"), orphan("n5", 1, "0/3000060")},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Repoint, "n4", "n3"},
				{topology.Repoint, "n5", "n3"},
				{topology.Reseed, "n1", "n3"},
				{topology.Reseed, "n2", "n3"},
			},
		},
		{
			name:     "primary and a standby lost under ANY 1, the loss accepted at the survivor's exact position: it is promoted",
			desired:  topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1, AcceptLossAt: "0/3000148"},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), orphan("n3", 1, "0/3000148")},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Reseed, "n1", "n3"},
				{topology.Reseed, "n2", "n3"},
			},
			reasons: []string{`accept_data_loss_at_lsn = "0/3000148" accepts exactly that: acknowledged commits only the lost nodes held (after 0/3000148) are given up`},
		},
		{
			name:     "primary and a standby lost without a guaranteed quorum (preferred): the survivor is promoted",
			desired:  three,
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), orphan("n3", 1, "0/3000148")},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Reseed, "n1", "n3"},
				{topology.Reseed, "n2", "n3"},
			},
		},
		{
			name:    "primary killed: promote the furthest standby, repoint the other, reseed the old primary",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000060"), orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Repoint, "n2", "n3"},
				{topology.Reseed, "n1", "n3"},
			},
			reasons: []string{
				"n3 has the highest flushed LSN 0/3000148 on timeline 1 of the surviving standbys (n2: flushed LSN 0/3000060 on timeline 1)",
				"must stream from the new primary n3",
				"n1 was the primary and its data directory is gone",
			},
		},
		{
			name:    "LSN tie: priority order wins, from the node list not the observation order",
			desired: nodes("n1", "n3", "n2"),
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Repoint, "n2", "n3"},
				{topology.Reseed, "n1", "n3"},
			},
			reasons: []string{"n3 and n2 have the same flushed LSN 0/3000148 on timeline 1, the highest of the surviving standbys; n3 comes first"},
		},
		{
			name:    "written the same way or not, equal LSNs tie",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/0300A148"), orphan("n3", 1, "0/300a148"),
			},
			want: []step{
				{topology.Promote, "n2", ""},
				{topology.Repoint, "n3", "n2"},
				{topology.Reseed, "n1", "n2"},
			},
		},
		{
			name:    "LSNs compare as numbers, not text",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/FFFFFFFF"), orphan("n3", 1, "1/0"),
			},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Repoint, "n2", "n3"},
				{topology.Reseed, "n1", "n3"},
			},
		},
		{
			name:    "a later timeline beats a higher LSN",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/9000000"), orphan("n3", 2, "0/5000000"),
			},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Repoint, "n2", "n3"},
				{topology.Reseed, "n1", "n3"},
			},
		},
		{
			name:    "flush LSN unknown: the replayed LSN counts",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary),
				{Name: "n2", State: topology.Running, Role: topology.RoleStandby, ReplayLSN: "0/4000000", Timeline: 1},
				orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{topology.Promote, "n2", ""},
				{topology.Repoint, "n3", "n2"},
				{topology.Reseed, "n1", "n2"},
			},
			reasons: []string{"n2 has the highest replayed LSN 0/4000000 (flushed LSN unknown)"},
		},
		{
			name:    "replayed past the reported flush (receiver restarted): the replayed LSN counts",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary),
				{Name: "n2", State: topology.Running, Role: topology.RoleStandby, FlushLSN: "0/1000000", ReplayLSN: "0/4000000", Timeline: 1},
				orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{topology.Promote, "n2", ""},
				{topology.Repoint, "n3", "n2"},
				{topology.Reseed, "n1", "n2"},
			},
		},
		{
			name:    "primary killed with its data intact: start it in place, no failover",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 1), orphan("n2", 1, "0/3000060"), orphan("n3", 1, "0/3000148"),
			},
			want:    []step{{topology.Start, "n1", ""}},
			reasons: []string{"starting it in place loses nothing"},
		},
		{
			name:    "whole cluster stopped (reboot): primary first, then the standbys following it",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RoleStandby, 2), stopped("n2", topology.RolePrimary, 2), stopped("n3", topology.RoleStandby, 2),
			},
			want: []step{
				{topology.Start, "n2", ""},
				{topology.Start, "n1", "n2"},
				{topology.Start, "n3", "n2"},
			},
		},
		{
			name:    "stale former primary on an older timeline: promote among standbys and reseed it",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 1), missing("n2", topology.RolePrimary), orphan("n3", 2, "0/6000000"),
			},
			want: []step{
				{topology.Promote, "n3", ""},
				{topology.Reseed, "n1", "n3"},
				{topology.Reseed, "n2", "n3"},
			},
			reasons: []string{"", "former primary's data on timeline 1, older than primary n3's history (timeline 3)"},
		},
		{
			name:    "stale former primary while the new primary runs: reseed it",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 1), primary("n2", 2, "0/6000000"), streaming("n3", 2, "0/6000000"),
			},
			want: []step{{topology.Reseed, "n1", "n2"}},
		},
		{
			name:    "stopped standby provably behind during a failover: started after the promotion",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: topology.Stopped, Role: topology.RoleStandby, FlushLSN: "0/3000060", Timeline: 1},
			},
			want: []step{
				{topology.Promote, "n2", ""},
				{topology.Start, "n3", "n2"},
				{topology.Reseed, "n1", "n2"},
			},
		},
		{
			name:     "running standby not streaming: repoint",
			desired:  three,
			observed: []topology.Observed{primary("n1", 2, "0/3000148"), streaming("n2", 2, "0/3000148"), orphan("n3", 2, "0/3000060")},
			want:     []step{{topology.Repoint, "n3", "n1"}},
		},
		{
			name:     "running standby left on an older timeline: reseed",
			desired:  three,
			observed: []topology.Observed{primary("n1", 2, "0/3000148"), streaming("n2", 2, "0/3000148"), orphan("n3", 1, "0/3000060")},
			want:     []step{{topology.Reseed, "n3", "n1"}},
			reasons:  []string{"did not follow the promotion"},
		},
		{
			name:     "stopped node with an unreadable role while a primary runs: reseed",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), stopped("n3", "", 0)},
			want:     []step{{topology.Reseed, "n3", "n1"}},
		},
		{
			name:     "scale up 3 to 5",
			desired:  nodes("n1", "n2", "n3", "n4", "n5"),
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000148")},
			want:     []step{{topology.Create, "n4", "n1"}, {topology.Create, "n5", "n1"}},
		},
		{
			name:    "scale down 5 to 3: lowest priority first",
			desired: three,
			observed: []topology.Observed{
				primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000148"),
				streaming("n4", 1, "0/3000148"), missing("n5", topology.RoleStandby),
			},
			want:    []step{{topology.Remove, "n5", ""}, {topology.Remove, "n4", ""}},
			reasons: []string{"already gone", "lowest priority first"},
		},
		{
			name:    "repairs come before removals",
			desired: nodes("n1", "n2"),
			observed: []topology.Observed{
				primary("n1", 1, "0/3000148"), missing("n2", topology.RoleStandby), streaming("n3", 1, "0/3000148"),
			},
			want: []step{{topology.Reseed, "n2", "n1"}, {topology.Remove, "n3", ""}},
		},
		{
			name:    "failover while scaling up and down",
			desired: nodes("n1", "n2", "n4"),
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000060"),
			},
			want: []step{
				{topology.Promote, "n2", ""},
				{topology.Reseed, "n1", "n2"},
				{topology.Create, "n4", "n2"},
				{topology.Remove, "n3", ""},
			},
		},
		{
			name:     "single node, healthy",
			desired:  nodes("n1"),
			observed: []topology.Observed{primary("n1", 1, "0/3000148")},
			want:     []step{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := topology.Plan(tt.desired, tt.observed)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if !reflect.DeepEqual(steps(got), tt.want) {
				t.Fatalf("Plan =\n%s\nwant steps %v", topology.Summary(got), tt.want)
			}
			for i, sub := range tt.reasons {
				if !strings.Contains(got[i].Reason, sub) {
					t.Errorf("reason of %s = %q, want it to contain %q", got[i], got[i].Reason, sub)
				}
			}
			for _, a := range got {
				if a.Reason == "" {
					t.Errorf("%s has no reason", a)
				}
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	three := nodes("n1", "n2", "n3")
	tests := []struct {
		name     string
		desired  topology.Desired
		observed []topology.Observed
		is       error // wrapped sentinel, nil for input errors
		contains []string
	}{
		{
			name:     "every node lost, with an archive: its history is only there",
			desired:  topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), missing("n3", topology.RoleStandby)},
			is:       topology.ErrDataLost,
			contains: []string{"n1, n2 and n3", "only in its archive now", "the archive could not be read"},
		},
		{
			name: "every node lost, with an archive without a base backup",
			desired: topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true,
				Archive: &topology.ArchiveEnd{LastWAL: "000000010000000000000003"}},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), missing("n3", topology.RoleStandby)},
			is:       topology.ErrDataLost,
			contains: []string{"holds no base backup", "new, empty database"},
		},
		{
			name:     "primary lost and no standby running (one standby never made)",
			desired:  three,
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), stopped("n3", topology.RoleStandby, 1)},
			is:       topology.ErrNoSurvivor,
			contains: []string{"primary n1 is gone"},
		},
		{
			name:     "primary lost and the standbys stopped",
			desired:  three,
			observed: []topology.Observed{missing("n1", topology.RolePrimary), stopped("n2", topology.RoleStandby, 1), stopped("n3", topology.RoleStandby, 1)},
			is:       topology.ErrNoSurvivor,
			contains: []string{"only on the lost primary's disk", "stopped standby n2 and n3"},
		},
		{
			name:     "two running primaries",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), primary("n2", 2, "0/3000200"), streaming("n3", 1, "0/3000148")},
			is:       topology.ErrSplitBrain,
			contains: []string{"n1 (timeline 1) and n2 (timeline 2) all run as primaries"},
		},
		{
			name:    "two stopped primaries on the latest timeline",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 2), stopped("n2", topology.RolePrimary, 2), orphan("n3", 1, "0/3000148"),
			},
			is:       topology.ErrSplitBrain,
			contains: []string{"n1 (timeline 2) and n2 (timeline 2)"},
		},
		{
			name:    "a stopped former primary not provably older than the running one",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 2), primary("n2", 2, "0/3000148"), streaming("n3", 2, "0/3000148"),
			},
			is:       topology.ErrSplitBrain,
			contains: []string{"stopped n1 holds a primary's data on timeline 2"},
		},
		{
			name:    "a stopped former primary with an unknown timeline",
			desired: three,
			observed: []topology.Observed{
				stopped("n1", topology.RolePrimary, 0), primary("n2", 2, "0/3000148"), streaming("n3", 2, "0/3000148"),
			},
			is: topology.ErrSplitBrain,
		},
		{
			name:    "a standby on a newer timeline than the primary",
			desired: three,
			observed: []topology.Observed{
				primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), orphan("n3", 2, "0/3000200"),
			},
			is:       topology.ErrSplitBrain,
			contains: []string{"n3 is on timeline 2, newer than primary n1's timeline 1"},
		},
		{
			name:     "a node in unknown state",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), {Name: "n3", State: topology.Unknown}},
			is:       topology.ErrUndecided,
			contains: []string{"n3 (state unknown)"},
		},
		{
			name:     "a running node whose role cannot be read",
			desired:  three,
			observed: []topology.Observed{missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"), {Name: "n3", State: topology.Running}},
			is:       topology.ErrUndecided,
			contains: []string{"n3 (runs, role unreadable)"},
		},
		{
			name:     "no primary and a stopped node whose role cannot be read",
			desired:  three,
			observed: []topology.Observed{stopped("n1", "", 1), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000148")},
			is:       topology.ErrUndecided,
			contains: []string{"stopped n1"},
		},
		{
			name:    "primary lost and a running standby's position unknown",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: topology.Running, Role: topology.RoleStandby, Timeline: 1},
			},
			is:       topology.ErrUndecided,
			contains: []string{"WAL position of running standby n3 cannot be read"},
		},
		{
			name:    "primary lost and a stopped standby may be ahead",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"), stopped("n3", topology.RoleStandby, 1),
			},
			is:       topology.ErrUndecided,
			contains: []string{"stopped standby n3 has an unknown WAL position"},
		},
		{
			name:    "primary lost and a stopped standby is ahead",
			desired: three,
			observed: []topology.Observed{
				missing("n1", topology.RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: topology.Stopped, Role: topology.RoleStandby, FlushLSN: "0/4000000", Timeline: 1},
			},
			is:       topology.ErrUndecided,
			contains: []string{"stopped standby n3 is further ahead (flushed LSN 0/4000000 on timeline 1)"},
		},
		{
			name:     "the primary is not in the node list",
			desired:  three,
			observed: []topology.Observed{streaming("n1", 1, "0/1"), streaming("n2", 1, "0/1"), streaming("n3", 1, "0/1"), primary("n4", 1, "0/1")},
			contains: []string{"primary n4 is not in the node list (n1, n2, n3): pgnvme never removes the primary"},
		},
		{
			name:     "malformed flush LSN",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/30001G8"), streaming("n3", 1, "0/3000148")},
			is:       topology.ErrMalformedLSN,
			contains: []string{`node n2: flush LSN: malformed LSN "0/30001G8"`},
		},
		{
			name:    "malformed replay LSN",
			desired: three,
			observed: []topology.Observed{
				primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"),
				{Name: "n3", State: topology.Running, Role: topology.RoleStandby, ReplayLSN: "3000148", Timeline: 1},
			},
			is:       topology.ErrMalformedLSN,
			contains: []string{"node n3: replay LSN"},
		},
		{name: "no nodes", desired: nodes(), contains: []string{"at least one node"}},
		{name: "empty name", desired: nodes("n1", ""), contains: []string{"node 2 of the node list has no name"}},
		{name: "duplicate name", desired: nodes("n1", "n2", "n1"), contains: []string{"n1 appears twice"}},
		{
			name:     "primary and a standby lost together under ANY 1: the survivor is not proven complete",
			desired:  topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), orphan("n3", 1, "0/3000148")},
			is:       topology.ErrQuorumLost,
			contains: []string{"n1 and n2 (the primary and 1 standby) are lost together", "once 1 standby had flushed it", "n3, holds WAL up to flushed LSN 0/3000148 on timeline 1 (with what its restore_command fetched",
				`set accept_data_loss_at_lsn = "0/3000148"`},
		},
		{
			name:    "primary and two standbys lost under ANY 2 of four",
			desired: topology.Desired{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Quorum: 2},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), missing("n3", topology.RoleStandby),
				orphan("n4", 1, "0/3000148"), orphan("n5", 1, "0/3000060")},
			is:       topology.ErrQuorumLost,
			contains: []string{"n1, n2 and n3 (the primary and 2 standbys) are lost together", "once 2 standbys had flushed it"},
		},
		{
			name:     "the loss accepted at another position than the survivor's: refused, a value left behind accepts nothing later",
			desired:  topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1, AcceptLossAt: "0/3000060"},
			observed: []topology.Observed{missing("n1", topology.RolePrimary), missing("n2", topology.RoleStandby), orphan("n3", 1, "0/3000148")},
			is:       topology.ErrQuorumLost,
			contains: []string{`accept_data_loss_at_lsn is "0/3000060", which accepts the loss only at exactly that position, and n3 is not there`},
		},
		{
			name:     "two nodes lost, neither known as the primary: one of them was",
			desired:  topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Quorum: 1},
			observed: []topology.Observed{missing("n1", ""), missing("n2", ""), orphan("n3", 1, "0/3000148")},
			is:       topology.ErrQuorumLost,
		},
		{
			name:     "observed twice",
			desired:  three,
			observed: []topology.Observed{primary("n1", 1, "0/1"), primary("n1", 1, "0/1")},
			contains: []string{"n1 was observed twice"},
		},
		{
			name:     "bad state and role",
			desired:  three,
			observed: []topology.Observed{{Name: "n1", State: "up"}, {Name: "n2", State: topology.Running, Role: "leader"}},
			contains: []string{`node n1: state "up"`, `node n2: role "leader"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := topology.Plan(tt.desired, tt.observed)
			if err == nil {
				t.Fatalf("Plan = %v, want an error", steps(got))
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Plan: %v; want an error wrapping %v", err, tt.is)
			}
			for _, sub := range tt.contains {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("Plan: %v; want it to contain %q", err, sub)
				}
			}
		})
	}
}

func TestPlanScaleDownKeepsThePrimary(t *testing.T) {
	observed := []topology.Observed{
		streaming("n1", 2, "0/5000000"), streaming("n2", 2, "0/5000000"), streaming("n3", 2, "0/5000000"),
		streaming("n4", 2, "0/5000000"), primary("n5", 2, "0/5000000"),
	}
	got, err := topology.Plan(topology.Desired{Nodes: []string{"n1", "n2", "n5"}}, observed)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := []step{{topology.Remove, "n4", ""}, {topology.Remove, "n3", ""}}
	if !reflect.DeepEqual(steps(got), want) {
		t.Errorf("Plan =\n%s\nwant %v", topology.Summary(got), want)
	}
}

func TestSummary(t *testing.T) {
	actions := []topology.Action{
		{Kind: topology.Promote, Node: "s2", Reason: "s2 is furthest"},
		{Kind: topology.Repoint, Node: "s3", Source: "s2", Reason: "r"},
		{Kind: topology.Reseed, Node: "n1", Source: "s2", Reason: "r"},
		{Kind: topology.Start, Node: "s4", Source: "s2", Reason: "r"},
		{Kind: topology.Start, Node: "p", Reason: "r"},
		{Kind: topology.Create, Node: "n1", Reason: "r"},
		{Kind: topology.Create, Node: "n5", Source: "s2", Reason: "r"},
		{Kind: topology.Remove, Node: "n6", Reason: "r"},
	}
	want := strings.Join([]string{
		"1. promote s2: s2 is furthest",
		"2. repoint s3 to s2: r",
		"3. reseed n1 from s2: r",
		"4. start s4 as a standby of s2: r",
		"5. start p: r",
		"6. create n1 as the primary: r",
		"7. create n5 from s2: r",
		"8. remove n6: r",
	}, "\n")
	if got := topology.Summary(actions); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
	if got := topology.Summary(nil); got != "" {
		t.Errorf("Summary(nil) = %q, want empty", got)
	}
}

// TestPlanInvariants runs Plan on every combination of three nodes' states,
// roles, streaming flags, positions and timelines, and checks the rules that
// must hold whatever the situation:
//   - no node is acted on twice, and every action has a reason;
//   - a node is destroyed (Reseed, Remove) only when a primary that runs, or
//     that an earlier action starts or promotes, is the source of the plan,
//     and that primary itself is never destroyed;
//   - Promote happens only when no primary runs, picks a running standby,
//     and no other running standby is further ahead (timeline, then LSN);
//   - every action with a source names the same primary;
//   - a node is created as a new primary (initdb) only when no node holds
//     data, and never when the cluster has an archive.
func TestPlanInvariants(t *testing.T) {
	type shape struct {
		state     topology.NodeState
		role      string
		streaming bool
	}
	shapes := []shape{
		{topology.Running, topology.RolePrimary, false},
		{topology.Running, topology.RoleStandby, true},
		{topology.Running, topology.RoleStandby, false},
		{topology.Stopped, topology.RolePrimary, false},
		{topology.Stopped, topology.RoleStandby, false},
		{topology.Stopped, "", false},
		{topology.Missing, topology.RolePrimary, false},
		{topology.Missing, "", false},
	}
	lsns := []string{"0/1000000", "0/2000000", ""}
	tls := []int{1, 2}
	desireds := []topology.Desired{nodes("n1", "n2", "n3"), nodes("n1", "n2"), nodes("n1", "n2", "n3", "n4"), {Nodes: []string{"n1", "n2", "n3"}, Archived: true}}

	var variants []topology.Observed
	for _, s := range shapes {
		for _, l := range lsns {
			for _, tl := range tls {
				variants = append(variants, topology.Observed{State: s.state, Role: s.role, Streaming: s.streaming, FlushLSN: l, Timeline: tl})
			}
		}
	}
	checked, planned := 0, 0
	for _, a := range variants {
		for _, b := range variants {
			for _, c := range variants {
				obs := []topology.Observed{a, b, c}
				obs[0].Name, obs[1].Name, obs[2].Name = "n1", "n2", "n3"
				for _, d := range desireds {
					checked++
					actions, err := topology.Plan(d, obs)
					if err != nil {
						continue
					}
					planned++
					if msg := violation(obs, d.Archived, actions); msg != "" {
						t.Fatalf("observed %+v, desired %v:\n%s\n%s", obs, d.Nodes, topology.Summary(actions), msg)
					}
				}
			}
		}
	}
	t.Logf("checked %d situations, %d planned", checked, planned)
}

func violation(obs []topology.Observed, archived bool, actions []topology.Action) string {
	byName := map[string]topology.Observed{}
	var runningPrimary string
	for _, o := range obs {
		byName[o.Name] = o
		if o.State == topology.Running && o.Role == topology.RolePrimary {
			runningPrimary = o.Name
		}
	}
	seen := map[string]bool{}
	primary := runningPrimary // the node that holds the primary's data at this point of the plan
	source := ""
	for i, a := range actions {
		if seen[a.Node] {
			return fmt.Sprintf("%s is acted on twice", a.Node)
		}
		seen[a.Node] = true
		if a.Reason == "" {
			return fmt.Sprintf("action %d has no reason", i+1)
		}
		if a.Source != "" {
			if source != "" && a.Source != source {
				return fmt.Sprintf("two sources: %s and %s", source, a.Source)
			}
			source = a.Source
		}
		switch a.Kind {
		case topology.Promote:
			if runningPrimary != "" {
				return "promote while a primary runs"
			}
			p := byName[a.Node]
			if p.State != topology.Running || p.Role != topology.RoleStandby {
				return "promoted a node that is not a running standby"
			}
			for _, o := range obs {
				if o.State == topology.Running && o.Role == topology.RoleStandby && ahead(o, p) {
					return fmt.Sprintf("promoted %s but %s is further ahead", p.Name, o.Name)
				}
			}
			primary = a.Node
		case topology.Start:
			if a.Source == "" {
				if primary != "" {
					return "started a second primary"
				}
				primary = a.Node
			}
		case topology.Create:
			if a.Source == "" {
				// initdb: only where no node holds data, and never over an archive's history.
				for _, o := range obs {
					if o.State != topology.Missing {
						return fmt.Sprintf("created %s as a new primary while %s holds data", a.Node, o.Name)
					}
				}
				if archived {
					return fmt.Sprintf("created %s as a new primary although the archive holds the cluster's history", a.Node)
				}
				if primary != "" {
					return "created a second primary"
				}
				primary = a.Node
			}
		case topology.Reseed, topology.Remove:
			if primary == "" {
				return fmt.Sprintf("%s %s with no primary", a.Kind, a.Node)
			}
			if a.Node == primary {
				return fmt.Sprintf("%s of the primary %s", a.Kind, a.Node)
			}
		}
	}
	if source != "" && source != primary {
		return fmt.Sprintf("source %s is not the primary %s", source, primary)
	}
	return ""
}

// ahead reports whether a's history goes further than b's.
func ahead(a, b topology.Observed) bool {
	if a.Timeline != b.Timeline {
		return a.Timeline > b.Timeline
	}
	c, err := topology.CompareLSN(a.FlushLSN, b.FlushLSN)
	return err == nil && c > 0
}
