package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// The rolling replacement's tests keep their tables of members as a roll sees them (RollMember, a
// priority list); these test-only helpers turn each into the engine's Cluster, in the priority's order,
// and ask the roll the engine asks (Cluster.nextRoll).

// RollMember is one member as a roll test writes it.
type RollMember struct {
	Name      string
	State     NodeState
	Role      string
	Streaming bool
	InQuorum  bool
	LagBytes  int64
	Outdated  bool
}

// RollKind and RollAction are the engine's step kinds and steps.
type (
	RollKind   = StepKind
	RollAction = Step
)

const (
	RollReplace    = StepRoll
	RollSwitchover = StepSwitchover
)

// rollCluster is members as the engine's cluster: every member wanted, in the priority's order (members
// it does not name after it, in observed order), each with a live machine but a Missing one.
func rollCluster(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) Cluster {
	sorted := slices.Clone(members)
	rank := func(m RollMember) int {
		if i := slices.Index(priority, m.Name); i >= 0 {
			return i
		}
		return len(priority) + slices.IndexFunc(members, func(o RollMember) bool { return o.Name == m.Name })
	}
	slices.SortStableFunc(sorted, func(a, b RollMember) int { return cmp.Compare(rank(a), rank(b)) })
	c := Cluster{SyncNumber: syncNumber, MaxLagBytes: maxLagBytes, Formed: true, ViewKnown: true}
	for _, m := range sorted {
		mb := Member{Name: m.Name, Wanted: true, Machine: MachineLive, Role: m.Role, LagBytes: m.LagBytes,
			Running: m.State == Running, Streaming: m.Streaming, InQuorum: m.InQuorum}
		switch m.State {
		case Missing:
			mb = Member{Name: m.Name, Wanted: true, Machine: MachineLost, LagBytes: -1}
		case Unknown:
			mb.Role, mb.Running = "", false
		}
		if m.Outdated {
			mb.Outdated = []string{"instance_type a -> b"}
		}
		c.Members = append(c.Members, mb)
	}
	return c
}

// NextRoll is the roll's next step for members.
func NextRoll(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) (RollAction, bool, error) {
	return rollCluster(members, priority, syncNumber, maxLagBytes).nextRoll()
}

// PlanRoll is the whole roll from members, each step assumed to succeed as Steps assumes.
func PlanRoll(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) ([]RollAction, error) {
	c := rollCluster(members, priority, syncNumber, maxLagBytes)
	var steps []Step
	for range 2*len(c.Members) + 2 {
		s, done, err := c.nextRoll()
		if err != nil {
			return nil, err
		}
		if done {
			return steps, nil
		}
		steps = append(steps, s)
		c = AfterStep(c, s)
	}
	return nil, fmt.Errorf("rolling replacement did not finish after %d steps (%s): this is a bug in the provider", len(steps), StepsSummary(steps))
}

// RollSummary is StepsSummary.
func RollSummary(steps []RollAction) string { return StepsSummary(steps) }
