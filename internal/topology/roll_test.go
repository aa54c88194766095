package topology_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// maxLag is the switchover lag limit the tests use.
const maxLag = 16 << 20

// Member helpers: the usual shapes of a member during a roll.

func rollPrimary(name string) topology.RollMember {
	return topology.RollMember{Name: name, State: topology.Running, Role: topology.RolePrimary, LagBytes: 0}
}

// rollStandby is a running standby streaming and counted by the quorum.
func rollStandby(name string, lag int64) topology.RollMember {
	return topology.RollMember{Name: name, State: topology.Running, Role: topology.RoleStandby, Streaming: true, InQuorum: true, LagBytes: lag}
}

func old(m topology.RollMember) topology.RollMember {
	m.Outdated = true
	return m
}

// rollStep is a roll action without its reason.
type rollStep struct {
	Kind         topology.RollKind
	Node, Target string
}

func rollSteps(actions []topology.RollAction) []rollStep {
	out := make([]rollStep, len(actions))
	for i, a := range actions {
		out[i] = rollStep{a.Kind, a.Node, a.Target}
	}
	return out
}

func replace(node string) rollStep { return rollStep{topology.RollReplace, node, ""} }

func switchover(from, to string) rollStep { return rollStep{topology.RollSwitchover, from, to} }

func TestNextRoll(t *testing.T) {
	three := []string{"n1", "n2", "n3"}
	tests := []struct {
		name     string
		members  []topology.RollMember
		priority []string
		sync     int
		want     rollStep // zero when done
		reason   string   // substring expected in the reason
	}{
		{
			name:     "nothing outdated: done",
			members:  []topology.RollMember{rollPrimary("n1"), rollStandby("n2", 0), rollStandby("n3", 0)},
			priority: three,
			sync:     1,
		},
		{
			name:     "nothing outdated and degraded: done, repairing is Plan's work",
			members:  []topology.RollMember{rollPrimary("n1"), {Name: "n2", State: topology.Missing, Role: topology.RoleStandby}, rollStandby("n3", 0)},
			priority: three,
			sync:     1,
		},
		{
			name:     "one outdated standby",
			members:  []topology.RollMember{rollPrimary("n1"), old(rollStandby("n2", 0)), rollStandby("n3", 0)},
			priority: three,
			sync:     1,
			want:     replace("n2"),
			reason:   "standby n2 must move to a new machine; while it is down n3 still confirms commits for ANY 1",
		},
		{
			name:     "outdated standbys: lowest priority first",
			members:  []topology.RollMember{old(rollPrimary("n1")), old(rollStandby("n2", 0)), old(rollStandby("n3", 0)), rollStandby("n4", 0)},
			priority: []string{"n1", "n2", "n3", "n4"},
			sync:     2,
			want:     replace("n3"),
			reason:   "of the outdated standbys n2 and n3 it has the lowest priority, and the preferred primaries go last; while it is down n2 and n4 still confirm commits for ANY 2",
		},
		{
			name:     "priority is the node list, not the observed order",
			members:  []topology.RollMember{old(rollStandby("n3", 0)), rollPrimary("n1"), old(rollStandby("n2", 0))},
			priority: []string{"n1", "n3", "n2"},
			sync:     1,
			want:     replace("n2"),
		},
		{
			name:     "a member not in the priority list ranks last",
			members:  []topology.RollMember{rollPrimary("n1"), old(rollStandby("x", 0)), old(rollStandby("n2", 0)), old(rollStandby("n3", 0))},
			priority: three,
			sync:     1,
			want:     replace("x"),
		},
		{
			name:     "outdated standbys go before the outdated primary",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", 0), old(rollStandby("n3", 0))},
			priority: three,
			sync:     1,
			want:     replace("n3"),
		},
		{
			name:     "only the primary outdated: switch over to the highest priority caught-up standby",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", 0), rollStandby("n3", 0)},
			priority: three,
			sync:     1,
			want:     switchover("n1", "n2"),
			reason:   "primary n1 must move to a new machine, so it first hands over to n2",
		},
		{
			name:     "switchover passes over a standby behind the lag limit",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", maxLag+1), rollStandby("n3", maxLag)},
			priority: three,
			sync:     1,
			want:     switchover("n1", "n3"),
			reason:   fmt.Sprintf("passed over: n2 is %d bytes behind; n1 is then replaced as a standby", maxLag+1),
		},
		{
			name:     "switchover passes over a standby whose lag is unknown",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", -1), rollStandby("n3", 10)},
			priority: three,
			sync:     1,
			want:     switchover("n1", "n3"),
			reason:   "n2 has a lag that cannot be read",
		},
		{
			name:     "the primary need not be first in the priority list",
			members:  []topology.RollMember{rollStandby("n1", 0), rollStandby("n2", 0), old(rollPrimary("n3"))},
			priority: three,
			sync:     1,
			want:     switchover("n3", "n1"),
		},
		{
			name:     "after the switchover the old primary is replaced as a standby",
			members:  []topology.RollMember{old(rollStandby("n1", 0)), rollPrimary("n2"), rollStandby("n3", 0)},
			priority: three,
			sync:     1,
			want:     replace("n1"),
		},
		{
			name:     "two members, asynchronous: the standby can go down",
			members:  []topology.RollMember{old(rollPrimary("n1")), old(rollStandby("n2", 0))},
			priority: []string{"n1", "n2"},
			sync:     0,
			want:     replace("n2"),
			reason:   "replication is asynchronous, so commits do not wait for it while it is down",
		},
		{
			name: "asynchronous: a streaming standby need not be counted by a quorum",
			members: []topology.RollMember{
				old(rollPrimary("n1")),
				{Name: "n2", State: topology.Running, Role: topology.RoleStandby, Streaming: true, LagBytes: 0},
			},
			priority: []string{"n1", "n2"},
			sync:     0,
			want:     switchover("n1", "n2"),
		},
		{
			name:     "lag exactly at the limit is caught up",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", maxLag), rollStandby("n3", 0)},
			priority: three,
			sync:     1,
			want:     switchover("n1", "n2"),
		},
		{
			name:     "single member, nothing outdated: done",
			members:  []topology.RollMember{rollPrimary("n1")},
			priority: []string{"n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.members)
			got, done, err := topology.NextRoll(tt.members, tt.priority, tt.sync, maxLag)
			if err != nil {
				t.Fatalf("NextRoll: %v", err)
			}
			if !reflect.DeepEqual(tt.members, before) {
				t.Errorf("NextRoll changed its input: %+v, was %+v", tt.members, before)
			}
			if wantDone := tt.want == (rollStep{}); done != wantDone {
				t.Fatalf("NextRoll = %s, done %v; want %v, done %v", got, done, tt.want, wantDone)
			}
			if done {
				if got.Kind != "" {
					t.Errorf("NextRoll done with action %+v, want none", got)
				}
				return
			}
			if s := rollSteps([]topology.RollAction{got})[0]; s != tt.want {
				t.Fatalf("NextRoll = %s: %s; want %v", got, got.Reason, tt.want)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason of %s = %q, want it to contain %q", got, got.Reason, tt.reason)
			}
			again, _, _ := topology.NextRoll(tt.members, tt.priority, tt.sync, maxLag)
			if !reflect.DeepEqual(again, got) {
				t.Errorf("NextRoll is not deterministic: %+v, then %+v", got, again)
			}
		})
	}
}

func TestNextRollRefuses(t *testing.T) {
	three := []string{"n1", "n2", "n3"}
	tests := []struct {
		name     string
		members  []topology.RollMember
		priority []string
		sync     int
		maxLag   *int64 // nil: the tests' maxLag
		is       error  // wrapped sentinel, nil for input errors
		contains []string
	}{
		{
			name:     "a standby is stopped",
			members:  []topology.RollMember{rollPrimary("n1"), {Name: "n2", State: topology.Stopped, Role: topology.RoleStandby}, old(rollStandby("n3", 0))},
			priority: three,
			sync:     1,
			is:       topology.ErrDegraded,
			contains: []string{"n2 is stopped", "repair the cluster first, then apply again after the repair"},
		},
		{
			name:     "the outdated member itself is down (a replacement that did not finish)",
			members:  []topology.RollMember{rollPrimary("n1"), rollStandby("n2", 0), old(topology.RollMember{Name: "n3", State: topology.Missing, Role: topology.RoleStandby})},
			priority: three,
			sync:     1,
			is:       topology.ErrDegraded,
			contains: []string{"n3 is missing"},
		},
		{
			name: "a standby is not counted by the quorum",
			members: []topology.RollMember{
				old(rollPrimary("n1")), rollStandby("n2", 0),
				{Name: "n3", State: topology.Running, Role: topology.RoleStandby, Streaming: true, LagBytes: 0},
			},
			priority: three,
			sync:     1,
			is:       topology.ErrDegraded,
			contains: []string{"standby n3 is not counted by primary n1's synchronous quorum (ANY 1)"},
		},
		{
			name: "a standby is not streaming, even asynchronous",
			members: []topology.RollMember{
				old(rollPrimary("n1")), rollStandby("n2", 0),
				{Name: "n3", State: topology.Running, Role: topology.RoleStandby, LagBytes: -1},
			},
			priority: three,
			sync:     0,
			is:       topology.ErrDegraded,
			contains: []string{"standby n3 is not streaming from primary n1"},
		},
		{
			name:     "no primary",
			members:  []topology.RollMember{old(rollStandby("n1", 0)), rollStandby("n2", 0)},
			priority: []string{"n1", "n2"},
			is:       topology.ErrDegraded,
			contains: []string{"no primary runs"},
		},
		{
			name:     "two primaries",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollPrimary("n2"), rollStandby("n3", 0)},
			priority: three,
			is:       topology.ErrDegraded,
			contains: []string{"n1 and n2 all run as primaries"},
		},
		{
			name:     "a running member whose role cannot be read",
			members:  []topology.RollMember{old(rollPrimary("n1")), {Name: "n2", State: topology.Running}, rollStandby("n3", 0)},
			priority: three,
			is:       topology.ErrDegraded,
			contains: []string{"n2 runs but its role cannot be read"},
		},
		{
			name:     "a member whose state cannot be read",
			members:  []topology.RollMember{old(rollPrimary("n1")), {Name: "n2", State: topology.Unknown}, rollStandby("n3", 0)},
			priority: three,
			is:       topology.ErrDegraded,
			contains: []string{"n2's state cannot be read"},
		},
		{
			name:     "two members with ANY 1: commits would wait",
			members:  []topology.RollMember{rollPrimary("n1"), old(rollStandby("n2", 0))},
			priority: []string{"n1", "n2"},
			sync:     1,
			is:       topology.ErrQuorumTooSmall,
			contains: []string{"leaves 0 standbys to confirm commits, fewer than ANY 1 needs", "lower synchronous.number to 0 or add a member first"},
		},
		{
			name:     "only the primary outdated, two members with ANY 1: refused before the switchover",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", 0)},
			priority: []string{"n1", "n2"},
			sync:     1,
			is:       topology.ErrQuorumTooSmall,
		},
		{
			name:     "three members with ANY 2",
			members:  []topology.RollMember{rollPrimary("n1"), rollStandby("n2", 0), old(rollStandby("n3", 0))},
			priority: three,
			sync:     2,
			is:       topology.ErrQuorumTooSmall,
			contains: []string{"leaves 1 standby to confirm commits, fewer than ANY 2 needs", "lower synchronous.number to 1"},
		},
		{
			name:     "single member",
			members:  []topology.RollMember{old(rollPrimary("n1"))},
			priority: []string{"n1"},
			is:       topology.ErrSingleNode,
			contains: []string{"n1 is the only member", "replacing it stops the cluster: add members first (a roll needs at least synchronous.number + 2)"},
		},
		{
			name:     "no standby caught up",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", -1), rollStandby("n3", maxLag+1)},
			priority: three,
			sync:     1,
			is:       topology.ErrNoSwitchoverTarget,
			contains: []string{
				fmt.Sprintf("at most %d bytes behind, but none is (n2 has a lag that cannot be read; n3 is %d bytes behind)", maxLag, maxLag+1),
				"wait until a standby catches up",
			},
		},
		{
			name:     "lag limit 0: only a standby with no lag",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", 1)},
			priority: []string{"n1", "n2"},
			maxLag:   new(int64(0)),
			is:       topology.ErrNoSwitchoverTarget,
			contains: []string{"n2 is 1 bytes behind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxLagBytes := int64(maxLag)
			if tt.maxLag != nil {
				maxLagBytes = *tt.maxLag
			}
			got, done, err := topology.NextRoll(tt.members, tt.priority, tt.sync, maxLagBytes)
			if err == nil {
				t.Fatalf("NextRoll = %s, done %v; want an error", got, done)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("NextRoll: %v; want an error wrapping %v", err, tt.is)
			}
			if tt.is == nil {
				for _, s := range []error{topology.ErrDegraded, topology.ErrQuorumTooSmall, topology.ErrSingleNode, topology.ErrNoSwitchoverTarget} {
					if errors.Is(err, s) {
						t.Errorf("NextRoll: %v; an input error should wrap no sentinel", err)
					}
				}
			}
			for _, sub := range tt.contains {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("NextRoll: %v; want it to contain %q", err, sub)
				}
			}
			if _, perr := topology.PlanRoll(tt.members, tt.priority, tt.sync, maxLagBytes); perr == nil || perr.Error() != err.Error() {
				t.Errorf("PlanRoll: %v; want NextRoll's error %v", perr, err)
			}
		})
	}
}

func TestPlanRoll(t *testing.T) {
	tests := []struct {
		name     string
		members  []topology.RollMember
		priority []string
		sync     int
		want     []rollStep
	}{
		{
			name:     "nothing outdated",
			members:  []topology.RollMember{rollPrimary("n1"), rollStandby("n2", 0), rollStandby("n3", 0)},
			priority: []string{"n1", "n2", "n3"},
			sync:     1,
			want:     []rollStep{},
		},
		{
			name:     "every member of three, ANY 1",
			members:  []topology.RollMember{old(rollPrimary("n1")), old(rollStandby("n2", 0)), old(rollStandby("n3", 0))},
			priority: []string{"n1", "n2", "n3"},
			sync:     1,
			want:     []rollStep{replace("n3"), replace("n2"), switchover("n1", "n2"), replace("n1")},
		},
		{
			name: "every member of five, ANY 2, after a failover, a lagging preferred standby",
			members: []topology.RollMember{
				old(rollStandby("n1", maxLag+1)), old(rollStandby("n2", 0)), old(rollPrimary("n3")), old(rollStandby("n4", -1)), old(rollStandby("n5", 0)),
			},
			priority: []string{"n1", "n2", "n3", "n4", "n5"},
			sync:     2,
			want:     []rollStep{replace("n5"), replace("n4"), replace("n2"), replace("n1"), switchover("n3", "n1"), replace("n3")},
		},
		{
			name:     "only the primary: a lagging standby is passed over",
			members:  []topology.RollMember{old(rollPrimary("n1")), rollStandby("n2", -1), rollStandby("n3", 0)},
			priority: []string{"n1", "n2", "n3"},
			sync:     1,
			want:     []rollStep{switchover("n1", "n3"), replace("n1")},
		},
		{
			name:     "two members, asynchronous",
			members:  []topology.RollMember{old(rollPrimary("n1")), old(rollStandby("n2", 0))},
			priority: []string{"n1", "n2"},
			want:     []rollStep{replace("n2"), switchover("n1", "n2"), replace("n1")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.members)
			got, err := topology.PlanRoll(tt.members, tt.priority, tt.sync, maxLag)
			if err != nil {
				t.Fatalf("PlanRoll: %v", err)
			}
			if !reflect.DeepEqual(tt.members, before) {
				t.Errorf("PlanRoll changed its input")
			}
			if !reflect.DeepEqual(rollSteps(got), tt.want) {
				t.Fatalf("PlanRoll =\n%s\nwant steps %v", topology.RollSummary(got), tt.want)
			}
			for _, a := range got {
				if a.Reason == "" {
					t.Errorf("%s has no reason", a)
				}
			}
		})
	}
}

func TestRollSummary(t *testing.T) {
	got, err := topology.PlanRoll(
		[]topology.RollMember{old(rollPrimary("n1")), old(rollStandby("n2", 0)), rollStandby("n3", 0)},
		[]string{"n1", "n2", "n3"}, 1, maxLag)
	if err != nil {
		t.Fatalf("PlanRoll: %v", err)
	}
	want := strings.Join([]string{
		"1. replace n2 (roll): standby n2 must move to a new machine; while it is down n3 still confirms commits for ANY 1",
		fmt.Sprintf("2. switchover n1 to n2: primary n1 must move to a new machine, so it first hands over to n2, the highest-priority standby "+
			"that is in the quorum, not outdated and at most %d bytes behind (0 bytes behind); n1 is then replaced as a standby", maxLag),
		"3. replace n1 (roll): standby n1 must move to a new machine; while it is down n3 still confirms commits for ANY 1",
	}, "\n")
	if s := topology.RollSummary(got); s != want {
		t.Errorf("RollSummary =\n%s\nwant\n%s", s, want)
	}
	if s := topology.RollSummary(nil); s != "" {
		t.Errorf("RollSummary(nil) = %q, want empty", s)
	}
}

// rollShapes are the member shapes TestRollInvariants combines, each
// outdated or not: primaries, the running primary; streaming, a running
// standby streaming and counted by the quorum, or streaming and not counted
// (as every standby is under asynchronous replication), each with a lag
// within the limit, unknown, or over it; faulty, a running standby not
// streaming, a running member whose role cannot be read, a stopped standby,
// a stopped primary, a missing member, one whose state cannot be read. (The
// lag of a member that does not stream is no observation: it is unknown.)
func rollShapes() (primaries, streaming, faulty []topology.RollMember) {
	for _, outdated := range []bool{false, true} {
		add := func(to *[]topology.RollMember, m topology.RollMember) {
			m.Outdated = outdated
			*to = append(*to, m)
		}
		add(&primaries, topology.RollMember{State: topology.Running, Role: topology.RolePrimary})
		for _, inQuorum := range []bool{true, false} {
			for _, lag := range []int64{maxLag, -1, maxLag + 1} {
				add(&streaming, topology.RollMember{State: topology.Running, Role: topology.RoleStandby, Streaming: true, InQuorum: inQuorum, LagBytes: lag})
			}
		}
		add(&faulty, topology.RollMember{State: topology.Running, Role: topology.RoleStandby, LagBytes: -1})
		add(&faulty, topology.RollMember{State: topology.Running, LagBytes: -1})
		add(&faulty, topology.RollMember{State: topology.Stopped, Role: topology.RoleStandby, LagBytes: -1})
		add(&faulty, topology.RollMember{State: topology.Stopped, Role: topology.RolePrimary, LagBytes: -1})
		add(&faulty, topology.RollMember{State: topology.Missing, Role: topology.RoleStandby, LagBytes: -1})
		add(&faulty, topology.RollMember{State: topology.Unknown, LagBytes: -1})
	}
	return primaries, streaming, faulty
}

// TestRollInvariants runs a rolling replacement from every start in these
// families, each with every synchronous number from 0 to members-1 (the
// members' order is their priority):
//   - 1 to 3 members: every combination of all the shapes of rollShapes, so
//     every placement of the primary (none and several included) and every
//     state;
//   - 4 members: the running primary at each place, the others every
//     combination of the streaming and faulty shapes;
//   - 5 members: the running primary at each place, the others every
//     combination of the streaming shapes.
//
// Every start that can roll (one running primary, every other member a
// streaming standby) is among them for 1 to 5 members; what is left out is
// refused as degraded, and refusals with several or no primaries, and with
// faulty members, are covered with fewer members. It drives NextRoll as the
// executor does, applying each action to the simulated cluster, and checks at
// every step:
//   - every member runs when one is replaced or a switchover starts (never
//     two down);
//   - a replaced member is an outdated standby, the lowest-priority one, and
//     the standbys that stay still confirm commits for ANY n;
//   - a switchover comes from the outdated primary once no standby is
//     outdated, to the highest-priority standby in the quorum, not outdated
//     and within the lag limit;
//   - the primary is replaced only after it handed over, each member at
//     most once, and the roll ends with no member outdated;
//   - NextRoll refuses exactly when the start is degraded or unsafe, with the
//     sentinel for the reason, and only before the first step;
//   - PlanRoll returns the same actions as the steps.
func TestRollInvariants(t *testing.T) {
	primaries, streaming, faulty := rollShapes()
	all := slices.Concat(primaries, streaming, faulty)
	standbys := slices.Concat(streaming, faulty)
	// A family is the shapes each member may take.
	type family struct {
		name   string
		shapes [][]topology.RollMember
	}
	var families []family
	for n := 1; n <= 3; n++ {
		families = append(families, family{fmt.Sprintf("%d_any", n), slices.Repeat([][]topology.RollMember{all}, n)})
	}
	for _, f := range []struct {
		n      int
		others []topology.RollMember
	}{{4, standbys}, {5, streaming}} {
		for p := range f.n {
			shapes := slices.Repeat([][]topology.RollMember{f.others}, f.n)
			shapes[p] = primaries
			families = append(families, family{fmt.Sprintf("%d_primary_%d", f.n, p+1), shapes})
		}
	}

	var (
		mu    sync.Mutex
		total = rollCounts{refused: map[error]int{}}
	)
	t.Run("families", func(t *testing.T) {
		for _, f := range families {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				n := len(f.shapes)
				names := make([]string, n)
				for i := range names {
					names[i] = fmt.Sprintf("n%d", i+1)
				}
				idx := make([]int, n)
				members := make([]topology.RollMember, n)
				c := rollCounts{refused: map[error]int{}}
				for {
					for i, k := range idx {
						members[i] = f.shapes[i][k]
						members[i].Name = names[i]
					}
					for syncNumber := range n {
						if msg := checkRoll(members, names, syncNumber, &c); msg != "" {
							t.Fatalf("members %s, ANY %d:\n%s", describeRoll(members), syncNumber, msg)
						}
					}
					// Next combination.
					i := 0
					for ; i < n; i++ {
						if idx[i]++; idx[i] < len(f.shapes[i]) {
							break
						}
						idx[i] = 0
					}
					if i == n {
						break
					}
				}
				mu.Lock()
				defer mu.Unlock()
				total.topologies += c.topologies
				total.done += c.done
				total.rolled += c.rolled
				total.steps += c.steps
				for k, v := range c.refused {
					total.refused[k] += v
				}
			})
		}
	})
	t.Logf("covered %d topologies (members and synchronous number): %d done at once, %d rolled in %d steps; "+
		"refused: %d degraded, %d quorum too small, %d single node, %d no switchover target",
		total.topologies, total.done, total.rolled, total.steps, total.refused[topology.ErrDegraded], total.refused[topology.ErrQuorumTooSmall],
		total.refused[topology.ErrSingleNode], total.refused[topology.ErrNoSwitchoverTarget])
}

type rollCounts struct {
	topologies, done, rolled, steps int
	refused                         map[error]int
}

// counted mirrors the quorum rule: a running standby streaming and counted
// by the quorum, or only streaming under asynchronous replication.
func counted(m topology.RollMember, syncNumber int) bool {
	return m.State == topology.Running && m.Role == topology.RoleStandby && m.Streaming && (m.InQuorum || syncNumber == 0)
}

func caughtUp(m topology.RollMember) bool { return m.LagBytes >= 0 && m.LagBytes <= maxLag }

// wantRefusal is the sentinel NextRoll must refuse start with, nil when the
// roll must go ahead (or is done).
func wantRefusal(start []topology.RollMember, syncNumber int) error {
	if !slices.ContainsFunc(start, func(m topology.RollMember) bool { return m.Outdated }) {
		return nil
	}
	primaries, whole := 0, true
	var primary topology.RollMember
	outdatedStandby, target := false, false
	for _, m := range start {
		switch {
		case m.State == topology.Running && m.Role == topology.RolePrimary:
			primaries++
			primary = m
		case !counted(m, syncNumber):
			whole = false
		default:
			outdatedStandby = outdatedStandby || m.Outdated
			target = target || caughtUp(m)
		}
	}
	switch {
	case primaries != 1 || !whole:
		return topology.ErrDegraded
	case len(start) == 1:
		return topology.ErrSingleNode
	case len(start)-2 < syncNumber:
		return topology.ErrQuorumTooSmall
	case primary.Outdated && !outdatedStandby && !target:
		// Replaced standbys come back caught up, so a target is missing only
		// when none is outdated and none is caught up now.
		return topology.ErrNoSwitchoverTarget
	}
	return nil
}

// checkRoll drives a roll from start and returns the first broken rule, "" when none.
func checkRoll(start []topology.RollMember, priority []string, syncNumber int, c *rollCounts) string {
	c.topologies++
	want := wantRefusal(start, syncNumber)
	a, done, err := topology.NextRoll(start, priority, syncNumber, maxLag)
	switch {
	case err != nil && (want == nil || !errors.Is(err, want)):
		return fmt.Sprintf("NextRoll: %v; want refusal %v", err, want)
	case err != nil:
		c.refused[want]++
		return ""
	case want != nil:
		return fmt.Sprintf("NextRoll = %s, done %v; want refusal %v", a, done, want)
	case done:
		if slices.ContainsFunc(start, func(m topology.RollMember) bool { return m.Outdated }) {
			return "done with a member outdated"
		}
		c.done++
		return ""
	}
	cur := slices.Clone(start)
	rank := func(name string) int { return slices.Index(priority, name) }
	origPrimary := ""
	for _, m := range start {
		if m.State == topology.Running && m.Role == topology.RolePrimary {
			origPrimary = m.Name
		}
	}
	var actions []topology.RollAction
	replaced := map[string]bool{}
	switched := false
	for step := 0; ; step++ {
		if step > 2*len(cur)+2 {
			return "the roll does not end:\n" + topology.RollSummary(actions)
		}
		if step > 0 {
			a, done, err = topology.NextRoll(cur, priority, syncNumber, maxLag)
			if err != nil {
				return fmt.Sprintf("refused after %d steps: %v\n%s", step, err, topology.RollSummary(actions))
			}
		}
		if done {
			break
		}
		actions = append(actions, a)
		if a.Reason == "" {
			return fmt.Sprintf("%s has no reason", a)
		}
		for _, m := range cur {
			if m.State != topology.Running {
				return fmt.Sprintf("%s while %s is down (%s)", a, m.Name, m.State)
			}
		}
		i := slices.IndexFunc(cur, func(m topology.RollMember) bool { return m.Name == a.Node })
		if i < 0 {
			return fmt.Sprintf("%s names no member", a)
		}
		switch a.Kind {
		case topology.RollReplace:
			m := cur[i]
			if m.Role != topology.RoleStandby {
				return fmt.Sprintf("%s replaces a %s", a, m.Role)
			}
			if a.Node == origPrimary && !switched {
				return fmt.Sprintf("%s replaces the primary before a switchover", a)
			}
			if !m.Outdated {
				return fmt.Sprintf("%s replaces a member that is not outdated", a)
			}
			if replaced[a.Node] {
				return fmt.Sprintf("%s replaces it twice", a)
			}
			replaced[a.Node] = true
			left := 0
			for _, o := range cur {
				if o.Name == a.Node {
					continue
				}
				if counted(o, syncNumber) {
					left++
				}
				if o.Role == topology.RoleStandby && o.Outdated && rank(o.Name) > rank(a.Node) {
					return fmt.Sprintf("%s before the lower-priority outdated standby %s", a, o.Name)
				}
			}
			if left < syncNumber {
				return fmt.Sprintf("%s leaves %d standbys for ANY %d", a, left, syncNumber)
			}
			cur[i] = topology.RollMember{Name: a.Node, State: topology.Running, Role: topology.RoleStandby, Streaming: true, InQuorum: true}
		case topology.RollSwitchover:
			if cur[i].Role != topology.RolePrimary || !cur[i].Outdated {
				return fmt.Sprintf("%s from a member that is not the outdated primary", a)
			}
			if switched {
				return fmt.Sprintf("%s is a second switchover", a)
			}
			switched = true
			j := slices.IndexFunc(cur, func(m topology.RollMember) bool { return m.Name == a.Target })
			if j < 0 || j == i {
				return fmt.Sprintf("%s: bad target", a)
			}
			fit := func(m topology.RollMember) bool { return counted(m, syncNumber) && !m.Outdated && caughtUp(m) }
			if !fit(cur[j]) {
				return fmt.Sprintf("%s to a target not in the quorum and caught up: %+v", a, cur[j])
			}
			for _, o := range cur {
				if o.Role == topology.RoleStandby && o.Outdated {
					return fmt.Sprintf("%s while standby %s is still outdated", a, o.Name)
				}
				if fit(o) && rank(o.Name) < rank(a.Target) {
					return fmt.Sprintf("%s but %s is fit and preferred", a, o.Name)
				}
			}
			cur[i].Role, cur[i].Streaming, cur[i].InQuorum, cur[i].LagBytes = topology.RoleStandby, true, true, 0
			cur[j].Role, cur[j].Streaming, cur[j].InQuorum, cur[j].LagBytes = topology.RolePrimary, false, false, 0
		default:
			return fmt.Sprintf("unknown action kind %q", a.Kind)
		}
	}
	for _, m := range cur {
		if m.Outdated {
			return fmt.Sprintf("done with %s still outdated", m.Name)
		}
	}
	for _, m := range start {
		if m.Outdated && !replaced[m.Name] {
			return fmt.Sprintf("outdated %s was never replaced", m.Name)
		}
	}
	var primary topology.RollMember
	for _, m := range start {
		if m.Name == origPrimary {
			primary = m
		}
	}
	if primary.Outdated != switched {
		return fmt.Sprintf("primary outdated %v, switched over %v", primary.Outdated, switched)
	}
	plan, err := topology.PlanRoll(start, priority, syncNumber, maxLag)
	if err != nil {
		return fmt.Sprintf("PlanRoll: %v", err)
	}
	if !reflect.DeepEqual(plan, actions) {
		return fmt.Sprintf("PlanRoll =\n%s\nsteps =\n%s", topology.RollSummary(plan), topology.RollSummary(actions))
	}
	if len(actions) > 0 {
		c.rolled++
		c.steps += len(actions)
	}
	return ""
}

func describeRoll(ms []topology.RollMember) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s{%s %q streaming=%v quorum=%v lag=%d outdated=%v}", m.Name, m.State, m.Role, m.Streaming, m.InQuorum, m.LagBytes, m.Outdated)
	}
	return strings.Join(parts, " ")
}

// Every member of a three-member cluster under ANY 1 must move to a new
// machine: the standbys go first, lowest priority first, then the primary
// hands over and is replaced last.
// Example: every machine of a three-member cluster outdated (an instance type changed). The engine rolls the
// standbys first, the lowest priority first, hands the primary over, then replaces it.
func ExampleSteps_roll() {
	outdated := []string{"instance_type m6id.large -> m6id.xlarge"}
	steps, err := topology.Steps(topology.Cluster{SyncNumber: 1, MaxLagBytes: 16 << 20, Formed: true, ViewKnown: true, Members: []topology.Member{
		{Name: "n1", Wanted: true, Etcd: true, Machine: topology.MachineLive, Role: topology.RolePrimary, Running: true, Outdated: outdated},
		{Name: "n2", Wanted: true, Etcd: true, Machine: topology.MachineLive, Role: topology.RoleStandby, Running: true, Streaming: true, InQuorum: true, LagBytes: 4096, Outdated: outdated},
		{Name: "n3", Wanted: true, Etcd: true, Machine: topology.MachineLive, Role: topology.RoleStandby, Running: true, Streaming: true, InQuorum: true, Outdated: outdated},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(topology.StepsSummary(steps))
	// Output:
	// 1. replace n3 (roll): standby n3 must move to a new machine; of the outdated standbys n2 and n3 it has the lowest priority, and the preferred primaries go last; while it is down n2 still confirms commits for ANY 1 (instance_type m6id.large -> m6id.xlarge)
	// 2. replace n2 (roll): standby n2 must move to a new machine; while it is down n3 still confirms commits for ANY 1 (instance_type m6id.large -> m6id.xlarge)
	// 3. switchover n1 to n2: primary n1 must move to a new machine, so it first hands over to n2, the highest-priority standby that is in the quorum, not outdated and at most 16777216 bytes behind (0 bytes behind); n1 is then replaced as a standby
	// 4. replace n1 (roll): standby n1 must move to a new machine; while it is down n3 still confirms commits for ANY 1 (instance_type m6id.large -> m6id.xlarge)
}
