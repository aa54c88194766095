package topology

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Observation helpers: the usual shapes of a node.

func primary(name string, tl int, flush string) observation {
	return observation{Name: name, State: Running, Role: RolePrimary, FlushLSN: flush, Timeline: tl}
}

func streaming(name string, tl int, flush string) observation {
	return observation{Name: name, State: Running, Role: RoleStandby, FlushLSN: flush, ReplayLSN: flush, Timeline: tl, Streaming: true}
}

// orphan is a running standby whose primary is gone (or that is not streaming).
func orphan(name string, tl int, flush string) observation {
	o := streaming(name, tl, flush)
	o.Streaming = false
	return o
}

func stopped(name, role string, tl int) observation {
	return observation{Name: name, State: Stopped, Role: role, Timeline: tl}
}

// missing is a node whose data directory is gone; role is what state remembered.
func missing(name, role string) observation {
	return observation{Name: name, State: Missing, Role: role}
}

func nodes(names ...string) wants { return wants{Nodes: names} }

// step is a step without its reason: Node is the first of Nodes for a form or a restore.
type step struct {
	Kind         StepKind
	Node, Source string
}

func steps(ss []Step) []step {
	out := make([]step, len(ss))
	for i, s := range ss {
		out[i] = step{s.Kind, s.Node, s.Source}
		if s.Node == "" && len(s.Nodes) > 0 {
			out[i].Node = s.Nodes[0]
		}
	}
	return out
}

// engine is the cluster of the engine-promoted platform that desired and observed describe: the observed
// nodes as members (the wanted ones in desired's order first), the desired ones not observed absent.
func engine(desired wants, observed []observation) Cluster {
	c := Cluster{EnginePromotes: true, Formed: len(observed) > 0, ViewKnown: true, Archived: desired.Archived,
		Archive: desired.Archive, Quorum: desired.Quorum, AcceptLossAt: desired.AcceptLossAt}
	member := func(o observation, wanted bool) Member {
		m := Member{Name: o.Name, Wanted: wanted, Role: o.Role, Streaming: o.Streaming, InQuorum: o.Streaming, LagBytes: -1}
		switch o.State {
		case Running:
			m.Machine, m.Running = MachineLive, true
			if o.Role == "" {
				m.Unseen = "its role cannot be read"
			}
		case Stopped:
			m.Machine = MachineLive
		case Unknown:
			m.Machine, m.Unseen, m.Role = MachineLive, "its state cannot be read", ""
		default:
			m.Machine, m.Role, m.Streaming, m.InQuorum = MachineLost, "", false, false
		}
		if m.Machine == MachineLive {
			w := &WAL{Timeline: o.Timeline}
			if v, err := ParseLSN(o.FlushLSN); err == nil && o.FlushLSN != "" {
				w.Received = v
			}
			if v, err := ParseLSN(o.ReplayLSN); err == nil && o.ReplayLSN != "" {
				w.Replayed = v
			}
			m.WAL = w
		}
		return m
	}
	byName := map[string]observation{}
	for _, o := range observed {
		byName[o.Name] = o
	}
	for _, n := range desired.Nodes {
		if o, ok := byName[n]; ok {
			c.Members = append(c.Members, member(o, true))
		} else {
			c.Members = append(c.Members, Member{Name: n, Wanted: true, Machine: MachineAbsent, LagBytes: -1})
		}
	}
	for _, o := range observed {
		if !slices.Contains(desired.Nodes, o.Name) {
			c.Members = append(c.Members, member(o, false))
		}
	}
	return c
}

// plan is the steps the engine-promoted platform's plan lists for desired and observed.
func plan(desired wants, observed []observation) ([]Step, error) {
	return Steps(engine(desired, observed))
}

func TestPlan(t *testing.T) {
	three := nodes("n1", "n2", "n3")
	tests := []struct {
		name     string
		desired  wants
		observed []observation
		want     []step
		// reasons holds substrings expected in the reason of the action at the same index.
		reasons []string
	}{
		{
			name:    "create from nothing: first node is the primary",
			desired: three,
			want: []step{
				{StepForm, "n1", ""},
				{StepAdd, "n2", "n1"},
				{StepAdd, "n3", "n1"},
			},
			reasons: []string{"n1 is first in the node list"},
		},
		{
			name:     "every node lost, no archive: nothing is left to keep, created again",
			desired:  three,
			observed: []observation{missing("n1", RoleStandby), missing("n2", RolePrimary), missing("n3", RoleStandby)},
			want: []step{
				{StepForm, "n1", ""},
				{StepReplace, "n2", "n1"},
				{StepReplace, "n3", "n1"},
			},
			reasons: []string{"every node (n1, n2 and n3) is lost and no archive holds the cluster's data"},
		},
		{
			name: "every node lost, with a backup in the archive: the first node restored, the others copied from it",
			desired: wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true,
				Archive: &ArchiveEnd{Backup: "20261202-101500F", LastWAL: "000000020000000000000009", Hole: "000000020000000000000007"}},
			observed: []observation{missing("n1", RoleStandby), missing("n2", RolePrimary), missing("n3", RoleStandby)},
			want: []step{
				{StepRestore, "n1", ""},
				{StepReplace, "n2", "n1"},
				{StepReplace, "n3", "n1"},
			},
			reasons: []string{"n1 is restored from the archive's newest base backup 20261202-101500F",
				"comes back as a standby copied from primary n1"},
		},
		{
			name:     "all healthy",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000060")},
			want:     []step{},
		},
		{
			name:    "healthy after a failover: the primary need not be first",
			desired: three,
			observed: []observation{
				streaming("n1", 2, "0/5000000"), primary("n2", 2, "0/5000000"), streaming("n3", 2, "0/5000000"),
			},
			want: []step{},
		},
		{
			name:     "one standby missing",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), missing("n3", RoleStandby)},
			want:     []step{{StepReplace, "n3", "n1"}},
			reasons:  []string{"data directory of n3 is gone"},
		},
		{
			name:     "stopped standby with data is started, not reseeded",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), stopped("n2", RoleStandby, 1), streaming("n3", 1, "0/3000148")},
			want:     []step{{StepStart, "n2", "n1"}},
			reasons:  []string{"catches up from its own WAL"},
		},
		{
			name:    "primary and one standby of four lost under ANY 2: a survivor holds every acknowledged commit",
			desired: wants{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Quorum: 2},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby),
				orphan("n3", 1, "0/3000148"), orphan("n4", 1, "0/3000060"), orphan("n5", 1, "0/3000060")},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
				{StepReplace, "n2", "n3"},
			},
		},
		{
			name:     "primary and a standby lost under ANY 1, the loss accepted at the survivor's exact position: it is promoted",
			desired:  wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1, AcceptLossAt: "0/3000148"},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), orphan("n3", 1, "0/3000148")},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
				{StepReplace, "n2", "n3"},
			},
			reasons: []string{`accept_data_loss_at_lsn = "0/3000148" accepts exactly that: acknowledged commits only the lost nodes held (after 0/3000148) are given up`},
		},
		{
			name:     "primary and a standby lost without a guaranteed quorum (preferred): the survivor is promoted",
			desired:  three,
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), orphan("n3", 1, "0/3000148")},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
				{StepReplace, "n2", "n3"},
			},
		},
		{
			name:    "primary killed: promote the furthest standby, repoint the other, reseed the old primary",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000060"), orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
			},
			reasons: []string{
				"then standby n2, which followed the lost primary, is pointed at n3 and streams from it",
				"the data directory of n1 is gone",
			},
		},
		{
			name:    "LSN tie: priority order wins, from the node list not the observation order",
			desired: nodes("n1", "n3", "n2"),
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
			},
			reasons: []string{"n3 and n2 have the same flushed LSN 0/3000148 on timeline 1, the highest of the surviving standbys; n3 comes first"},
		},
		{
			name:    "written the same way or not, equal LSNs tie",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/0300A148"), orphan("n3", 1, "0/300a148"),
			},
			want: []step{
				{StepPromote, "n2", ""},
				{StepReplace, "n1", "n2"},
			},
		},
		{
			name:    "LSNs compare as numbers, not text",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/FFFFFFFF"), orphan("n3", 1, "1/0"),
			},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
			},
		},
		{
			name:    "a later timeline beats a higher LSN",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/9000000"), orphan("n3", 2, "0/5000000"),
			},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReplace, "n1", "n3"},
			},
		},
		{
			name:    "flush LSN unknown: the replayed LSN counts",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary),
				{Name: "n2", State: Running, Role: RoleStandby, ReplayLSN: "0/4000000", Timeline: 1},
				orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{StepPromote, "n2", ""},
				{StepReplace, "n1", "n2"},
			},
			reasons: []string{"n2 has the highest replayed LSN 0/4000000 (flushed LSN unknown)"},
		},
		{
			name:    "replayed past the reported flush (receiver restarted): the replayed LSN counts",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary),
				{Name: "n2", State: Running, Role: RoleStandby, FlushLSN: "0/1000000", ReplayLSN: "0/4000000", Timeline: 1},
				orphan("n3", 1, "0/3000148"),
			},
			want: []step{
				{StepPromote, "n2", ""},
				{StepReplace, "n1", "n2"},
			},
		},
		{
			name:    "primary killed with its data intact: start it in place, no failover",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 1), orphan("n2", 1, "0/3000060"), orphan("n3", 1, "0/3000148"),
			},
			want:    []step{{StepStart, "n1", ""}},
			reasons: []string{"starting it in place loses nothing"},
		},
		{
			name:    "whole cluster stopped (reboot): primary first, then the standbys following it",
			desired: three,
			observed: []observation{
				stopped("n1", RoleStandby, 2), stopped("n2", RolePrimary, 2), stopped("n3", RoleStandby, 2),
			},
			want: []step{
				{StepStart, "n2", ""},
				{StepStart, "n1", "n2"},
				{StepStart, "n3", "n2"},
			},
		},
		{
			name:    "stale former primary on an older timeline: promote among standbys and reseed it",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 1), missing("n2", RolePrimary), orphan("n3", 2, "0/6000000"),
			},
			want: []step{
				{StepPromote, "n3", ""},
				{StepReseed, "n1", "n3"},
				{StepReplace, "n2", "n3"},
			},
			reasons: []string{"", "former primary's data on timeline 1, older than primary n3's history (timeline 3)"},
		},
		{
			name:    "stale former primary while the new primary runs: reseed it",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 1), primary("n2", 2, "0/6000000"), streaming("n3", 2, "0/6000000"),
			},
			want: []step{{StepReseed, "n1", "n2"}},
		},
		{
			name:    "stopped standby provably behind during a failover: started after the promotion",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: Stopped, Role: RoleStandby, FlushLSN: "0/3000060", Timeline: 1},
			},
			want: []step{
				{StepPromote, "n2", ""},
				{StepStart, "n3", "n2"},
				{StepReplace, "n1", "n2"},
			},
		},
		{
			name:     "running standby not streaming: repoint",
			desired:  three,
			observed: []observation{primary("n1", 2, "0/3000148"), streaming("n2", 2, "0/3000148"), orphan("n3", 2, "0/3000060")},
			want:     []step{{StepRepoint, "n3", "n1"}},
		},
		{
			name:     "running standby left on an older timeline: reseed",
			desired:  three,
			observed: []observation{primary("n1", 2, "0/3000148"), streaming("n2", 2, "0/3000148"), orphan("n3", 1, "0/3000060")},
			want:     []step{{StepReseed, "n3", "n1"}},
			reasons:  []string{"did not follow the promotion"},
		},
		{
			name:     "stopped node with an unreadable role while a primary runs: reseed",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), stopped("n3", "", 0)},
			want:     []step{{StepReseed, "n3", "n1"}},
		},
		{
			name:     "scale up 3 to 5",
			desired:  nodes("n1", "n2", "n3", "n4", "n5"),
			observed: []observation{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000148")},
			want:     []step{{StepAdd, "n4", "n1"}, {StepAdd, "n5", "n1"}},
		},
		{
			name:    "scale down 5 to 3: lowest priority first",
			desired: three,
			observed: []observation{
				primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), streaming("n3", 1, "0/3000148"),
				streaming("n4", 1, "0/3000148"), missing("n5", RoleStandby),
			},
			want:    []step{{StepRemove, "n5", ""}, {StepRemove, "n4", ""}},
			reasons: []string{"already gone", "lowest priority first"},
		},
		{
			name:    "repairs come before removals",
			desired: nodes("n1", "n2"),
			observed: []observation{
				primary("n1", 1, "0/3000148"), missing("n2", RoleStandby), streaming("n3", 1, "0/3000148"),
			},
			want: []step{{StepReplace, "n2", "n1"}, {StepRemove, "n3", ""}},
		},
		{
			name:    "failover while scaling up and down",
			desired: nodes("n1", "n2", "n4"),
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000060"),
			},
			want: []step{
				{StepPromote, "n2", ""},
				{StepReplace, "n1", "n2"},
				{StepAdd, "n4", "n2"},
				{StepRemove, "n3", ""},
			},
		},
		{
			name:     "single node, healthy",
			desired:  nodes("n1"),
			observed: []observation{primary("n1", 1, "0/3000148")},
			want:     []step{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan(tt.desired, tt.observed)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if !reflect.DeepEqual(steps(got), tt.want) {
				t.Fatalf("Plan =\n%s\nwant steps %v", StepsSummary(got), tt.want)
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
		desired  wants
		observed []observation
		is       error // wrapped sentinel, nil for input errors
		contains []string
	}{
		{
			name:     "every node lost, with an archive: its history is only there",
			desired:  wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), missing("n3", RoleStandby)},
			is:       ErrDataLost,
			contains: []string{"n1, n2 and n3", "only in its archive now", "the archive could not be read"},
		},
		{
			name: "every node lost, with an archive without a base backup",
			desired: wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true,
				Archive: &ArchiveEnd{LastWAL: "000000010000000000000003"}},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), missing("n3", RoleStandby)},
			is:       ErrDataLost,
			contains: []string{"holds no base backup", "new, empty database"},
		},
		{
			name:     "primary lost and no standby running (one standby never made)",
			desired:  three,
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), stopped("n3", RoleStandby, 1)},
			is:       ErrNoSurvivor,
			contains: []string{"the primary is gone and no standby is running"},
		},
		{
			name:     "primary lost and the standbys stopped",
			desired:  three,
			observed: []observation{missing("n1", RolePrimary), stopped("n2", RoleStandby, 1), stopped("n3", RoleStandby, 1)},
			is:       ErrNoSurvivor,
			contains: []string{"only on the lost primary's disk", "stopped standby n2 and n3"},
		},
		{
			name:     "two running primaries",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), primary("n2", 2, "0/3000200"), streaming("n3", 1, "0/3000148")},
			is:       ErrSplitBrain,
			contains: []string{"n1 (timeline 1) and n2 (timeline 2) all run as primaries"},
		},
		{
			name:    "two stopped primaries on the latest timeline",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 2), stopped("n2", RolePrimary, 2), orphan("n3", 1, "0/3000148"),
			},
			is:       ErrSplitBrain,
			contains: []string{"n1 (timeline 2) and n2 (timeline 2)"},
		},
		{
			name:    "a stopped former primary not provably older than the running one",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 2), primary("n2", 2, "0/3000148"), streaming("n3", 2, "0/3000148"),
			},
			is:       ErrSplitBrain,
			contains: []string{"stopped n1 holds a primary's data on timeline 2"},
		},
		{
			name:    "a stopped former primary with an unknown timeline",
			desired: three,
			observed: []observation{
				stopped("n1", RolePrimary, 0), primary("n2", 2, "0/3000148"), streaming("n3", 2, "0/3000148"),
			},
			is: ErrSplitBrain,
		},
		{
			name:    "a standby on a newer timeline than the primary",
			desired: three,
			observed: []observation{
				primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), orphan("n3", 2, "0/3000200"),
			},
			is:       ErrSplitBrain,
			contains: []string{"n3 is on timeline 2, newer than primary n1's timeline 1"},
		},
		{
			name:     "a node in unknown state",
			desired:  three,
			observed: []observation{primary("n1", 1, "0/3000148"), streaming("n2", 1, "0/3000148"), {Name: "n3", State: Unknown}},
			is:       ErrUndecided,
			contains: []string{"n3 (state unknown)"},
		},
		{
			name:     "a running node whose role cannot be read",
			desired:  three,
			observed: []observation{missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"), {Name: "n3", State: Running}},
			is:       ErrUndecided,
			contains: []string{"n3 (runs, role unreadable)"},
		},
		{
			name:     "no primary and a stopped node whose role cannot be read",
			desired:  three,
			observed: []observation{stopped("n1", "", 1), orphan("n2", 1, "0/3000148"), orphan("n3", 1, "0/3000148")},
			is:       ErrUndecided,
			contains: []string{"stopped n1"},
		},
		{
			name:    "primary lost and a running standby's position unknown",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: Running, Role: RoleStandby, Timeline: 1},
			},
			is:       ErrUndecided,
			contains: []string{"WAL position of running standby n3 cannot be read"},
		},
		{
			name:    "primary lost and a stopped standby may be ahead",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"), stopped("n3", RoleStandby, 1),
			},
			is:       ErrUndecided,
			contains: []string{"stopped standby n3 has an unknown WAL position"},
		},
		{
			name:    "primary lost and a stopped standby is ahead",
			desired: three,
			observed: []observation{
				missing("n1", RolePrimary), orphan("n2", 1, "0/3000148"),
				{Name: "n3", State: Stopped, Role: RoleStandby, FlushLSN: "0/4000000", Timeline: 1},
			},
			is:       ErrUndecided,
			contains: []string{"stopped standby n3 is further ahead (flushed LSN 0/4000000 on timeline 1)"},
		},
		{
			name:     "the primary is not in the node list",
			desired:  three,
			observed: []observation{streaming("n1", 1, "0/1"), streaming("n2", 1, "0/1"), streaming("n3", 1, "0/1"), primary("n4", 1, "0/1")},
			contains: []string{"primary n4 is not in the node list (n1, n2, n3): pgnvme never removes the primary"},
		},
		{name: "no nodes", desired: nodes(), contains: []string{"the cluster has no members"}},
		{name: "empty name", desired: nodes("n1", ""), contains: []string{"member 2 has no name"}},
		{name: "duplicate name", desired: nodes("n1", "n2", "n1"), contains: []string{"member n1 was observed twice"}},
		{
			name:     "primary and a standby lost together under ANY 1: the survivor is not proven complete",
			desired:  wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), orphan("n3", 1, "0/3000148")},
			is:       ErrQuorumLost,
			contains: []string{"n1 and n2 (the primary and 1 standby) are lost together", "once 1 standby had flushed it", "n3, holds WAL up to flushed LSN 0/3000148 on timeline 1 (with what its restore_command fetched",
				`set accept_data_loss_at_lsn = "0/3000148"`},
		},
		{
			name:    "primary and two standbys lost under ANY 2 of four",
			desired: wants{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Quorum: 2},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), missing("n3", RoleStandby),
				orphan("n4", 1, "0/3000148"), orphan("n5", 1, "0/3000060")},
			is:       ErrQuorumLost,
			contains: []string{"n1, n2 and n3 (the primary and 2 standbys) are lost together", "once 2 standbys had flushed it"},
		},
		{
			name:     "the loss accepted at another position than the survivor's: refused, a value left behind accepts nothing later",
			desired:  wants{Nodes: []string{"n1", "n2", "n3"}, Archived: true, Quorum: 1, AcceptLossAt: "0/3000060"},
			observed: []observation{missing("n1", RolePrimary), missing("n2", RoleStandby), orphan("n3", 1, "0/3000148")},
			is:       ErrQuorumLost,
			contains: []string{`accept_data_loss_at_lsn is "0/3000060", which accepts the loss only at exactly that position, and n3 is not there`},
		},
		{
			name:     "two nodes lost, neither known as the primary: one of them was",
			desired:  wants{Nodes: []string{"n1", "n2", "n3"}, Quorum: 1},
			observed: []observation{missing("n1", ""), missing("n2", ""), orphan("n3", 1, "0/3000148")},
			is:       ErrQuorumLost,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan(tt.desired, tt.observed)
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
	observed := []observation{
		streaming("n1", 2, "0/5000000"), streaming("n2", 2, "0/5000000"), streaming("n3", 2, "0/5000000"),
		streaming("n4", 2, "0/5000000"), primary("n5", 2, "0/5000000"),
	}
	got, err := plan(wants{Nodes: []string{"n1", "n2", "n5"}}, observed)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := []step{{StepRemove, "n4", ""}, {StepRemove, "n3", ""}}
	if !reflect.DeepEqual(steps(got), want) {
		t.Errorf("Plan =\n%s\nwant %v", StepsSummary(got), want)
	}
}

func TestStepsSummary_engine(t *testing.T) {
	ss := []Step{
		{Kind: StepPromote, Node: "s2", Reason: "s2 is furthest"},
		{Kind: StepRepoint, Node: "s3", Source: "s2", Reason: "r"},
		{Kind: StepReseed, Node: "n1", Source: "s2", Reason: "r"},
		{Kind: StepStart, Node: "s4", Source: "s2", Reason: "r"},
		{Kind: StepStart, Node: "p", Reason: "r"},
		{Kind: StepForm, Nodes: []string{"n1"}, Reason: "r"},
		{Kind: StepAdd, Node: "n5", Source: "s2", Reason: "r"},
		{Kind: StepReplace, Node: "n2", Source: "s2", Reason: "r"},
		{Kind: StepRemove, Node: "n6", Reason: "r"},
	}
	want := strings.Join([]string{
		"1. promote s2: s2 is furthest",
		"2. repoint s3 to s2: r",
		"3. reseed n1 from s2: r",
		"4. start s4 as a standby of s2: r",
		"5. start p as the primary: r",
		"6. form the cluster from n1: r",
		"7. add n5 from s2: r",
		"8. replace n2 from s2: r",
		"9. remove n6: r",
	}, "\n")
	if got := StepsSummary(ss); got != want {
		t.Errorf("StepsSummary =\n%s\nwant\n%s", got, want)
	}
	if got := StepsSummary(nil); got != "" {
		t.Errorf("StepsSummary(nil) = %q, want empty", got)
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
		state     NodeState
		role      string
		streaming bool
	}
	shapes := []shape{
		{Running, RolePrimary, false},
		{Running, RoleStandby, true},
		{Running, RoleStandby, false},
		{Stopped, RolePrimary, false},
		{Stopped, RoleStandby, false},
		{Stopped, "", false},
		{Missing, RolePrimary, false},
		{Missing, "", false},
	}
	lsns := []string{"0/1000000", "0/2000000", ""}
	tls := []int{1, 2}
	desireds := []wants{nodes("n1", "n2", "n3"), nodes("n1", "n2"), nodes("n1", "n2", "n3", "n4"), {Nodes: []string{"n1", "n2", "n3"}, Archived: true}}

	var variants []observation
	for _, s := range shapes {
		for _, l := range lsns {
			for _, tl := range tls {
				variants = append(variants, observation{State: s.state, Role: s.role, Streaming: s.streaming, FlushLSN: l, Timeline: tl})
			}
		}
	}
	checked, planned := 0, 0
	for _, a := range variants {
		for _, b := range variants {
			for _, c := range variants {
				obs := []observation{a, b, c}
				obs[0].Name, obs[1].Name, obs[2].Name = "n1", "n2", "n3"
				for _, d := range desireds {
					checked++
					actions, err := plan(d, obs)
					if err != nil {
						continue
					}
					planned++
					if msg := violation(obs, d.Archived, actions); msg != "" {
						t.Fatalf("observed %+v, desired %v:\n%s\n%s", obs, d.Nodes, StepsSummary(actions), msg)
					}
				}
			}
		}
	}
	t.Logf("checked %d situations, %d planned", checked, planned)
}

func violation(obs []observation, archived bool, actions []Step) string {
	byName := map[string]observation{}
	var runningPrimary string
	for _, o := range obs {
		byName[o.Name] = o
		if o.State == Running && o.Role == RolePrimary {
			runningPrimary = o.Name
		}
	}
	seen := map[string]bool{}
	primary := runningPrimary // the node that holds the primary's data at this point of the plan
	source := ""
	for i, a := range actions {
		if a.Node == "" && len(a.Nodes) == 1 {
			a.Node = a.Nodes[0]
		}
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
		case StepPromote:
			if runningPrimary != "" {
				return "promote while a primary runs"
			}
			p := byName[a.Node]
			if p.State != Running || p.Role != RoleStandby {
				return "promoted a node that is not a running standby"
			}
			for _, o := range obs {
				if o.State == Running && o.Role == RoleStandby && ahead(o, p) {
					return fmt.Sprintf("promoted %s but %s is further ahead", p.Name, o.Name)
				}
			}
			primary = a.Node
		case StepStart:
			if a.Source == "" {
				if primary != "" {
					return "started a second primary"
				}
				primary = a.Node
			}
		case StepForm:
			{
				// initdb: only where no node holds data, and never over an archive's history.
				for _, o := range obs {
					if o.State != Missing {
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
		case StepReseed, StepReplace, StepRemove:
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
func ahead(a, b observation) bool {
	if a.Timeline != b.Timeline {
		return a.Timeline > b.Timeline
	}
	c, err := CompareLSN(a.FlushLSN, b.FlushLSN)
	return err == nil && c > 0
}
