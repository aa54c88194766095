package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RollMember is one member as observed during a rolling replacement.
type RollMember struct {
	// Name is the member's name in the cluster (also its application_name).
	Name string
	// State is Running, Stopped, Missing or Unknown.
	State NodeState
	// Role is RolePrimary, RoleStandby, or "" when it could not be read.
	Role string
	// Streaming is true when the standby appears in the primary's
	// pg_stat_replication with state "streaming".
	Streaming bool
	// InQuorum is true when the standby is streaming and the primary's
	// synchronous quorum counts it (sync_state "quorum" or "sync"). With
	// asynchronous replication (synchronous number 0) no standby is counted
	// (sync_state is "async") and NextRoll looks at Streaming only.
	InQuorum bool
	// LagBytes is the primary's current WAL position minus the standby's
	// flushed (or replayed) position, in bytes; -1 when unknown.
	LagBytes int64
	// Outdated is true when the member's machine must change (instance type,
	// image, bootstrap): the roll replaces it.
	Outdated bool
}

// RollKind is what a RollAction does.
type RollKind string

const (
	// RollReplace takes the standby Node down and brings a new machine up
	// with the same identity as a standby of the primary.
	RollReplace RollKind = "replace"
	// RollSwitchover makes the primary Node hand over to the standby Target
	// (a clean shutdown of Node, Target promoted, Node following Target).
	RollSwitchover RollKind = "switchover"
)

// RollAction is one step of a rolling replacement.
type RollAction struct {
	Kind RollKind
	// Node is the standby replaced, or the primary that hands over.
	Node string
	// Target is the standby that becomes the primary in a switchover; "" for
	// a replacement.
	Target string
	// Reason is one sentence for the plan and the log saying why.
	Reason string
}

// String is the action without its reason, such as "replace n3" or
// "switchover n1 to n2".
func (a RollAction) String() string {
	if a.Kind == RollSwitchover {
		return fmt.Sprintf("switchover %s to %s", a.Node, a.Target)
	}
	return fmt.Sprintf("%s %s", a.Kind, a.Node)
}

// RollSummary renders actions as Summary does: numbered lines
// "N. <action>: <reason>". No actions is "".
func RollSummary(actions []RollAction) string {
	return numbered(actions, func(a RollAction) string { return a.Reason })
}

// Errors NextRoll and PlanRoll wrap, so callers can choose a diagnostic.
var (
	// ErrDegraded: a member is down, not streaming, not in the quorum, or
	// the primary is not exactly one running node. Repair comes first (Next).
	ErrDegraded = errors.New("cluster degraded")
	// ErrQuorumTooSmall: with one standby down, fewer standbys would remain
	// than the synchronous quorum needs, so commits would wait.
	ErrQuorumTooSmall = errors.New("quorum too small to replace a member")
	// ErrSingleNode: the only member is the primary; replacing it means downtime.
	ErrSingleNode = errors.New("single-node cluster")
	// ErrNoSwitchoverTarget: the primary must be replaced and no standby is
	// in the quorum, up to date and caught up enough to take over.
	ErrNoSwitchoverTarget = errors.New("no switchover target")
)

// rollMember is a member with its priority.
type rollMember struct {
	RollMember
	rank int // the index in priority, else after them in observed order
}

// roll is one decision's input, checked.
type roll struct {
	members    []*rollMember // by priority, most preferred first
	syncNumber int
	maxLag     int64
}

// NextRoll returns the one next action of a rolling replacement for the
// cluster as it is now, or done when no member is outdated (whatever the
// cluster's health: repairing it is Next's work first). The executor runs the
// action, waits until a replaced member is back in the quorum (or a
// switchover's new primary runs and the old one streams from it), observes
// again and calls NextRoll again, until done.
//
// Priority is the desired node order, the first name the most preferred
// primary; members not in it rank after it in observed order. SyncNumber is
// n of synchronous_standby_names = ANY n (...), 0 for asynchronous
// replication. MaxLagBytes is how far behind the primary a switchover target
// may be.
//
// The rules, so that no acknowledged commit is lost and the cluster keeps
// taking writes:
//
//   - The cluster must be whole: exactly one running primary and every other
//     member a running standby streaming from it and counted by its quorum
//     (streaming is enough when replication is asynchronous). Otherwise a
//     member is already down or not confirming commits, and replacing
//     another would make two: NextRoll refuses (ErrDegraded); repair first.
//   - Every member is replaced as a standby (the primary after a
//     switchover), so with one standby down the others must still be at
//     least syncNumber, or commits would wait until it is back: NextRoll
//     refuses before the first step (ErrQuorumTooSmall); lower the number or
//     add a member first. A single-node cluster cannot hand over at all
//     (ErrSingleNode).
//   - Outdated standbys go first, one at a time, lowest priority first, so
//     the preferred primaries are replaced last.
//   - Then, when the primary is outdated, it hands over to the
//     highest-priority standby that is in the quorum, not outdated, and
//     whose lag is known and at most maxLagBytes; when none is, NextRoll
//     refuses (ErrNoSwitchoverTarget) and says why each is unfit. The old
//     primary, now an outdated standby, is then replaced like any other.
//
// Other errors report malformed input.
func NextRoll(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) (a RollAction, done bool, err error) {
	r, err := newRoll(members, priority, syncNumber, maxLagBytes)
	if err != nil {
		return RollAction{}, false, err
	}
	return r.next()
}

// PlanRoll is the whole rolling replacement NextRoll would drive from
// members, for the plan output: it simulates NextRoll assuming each step
// succeeds (a replaced member comes back a running standby in the quorum,
// caught up and no longer outdated; a switchover swaps the two roles, the
// old primary caught up). No member outdated is no actions. It refuses as
// NextRoll does on members.
func PlanRoll(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) ([]RollAction, error) {
	cur := slices.Clone(members)
	var actions []RollAction
	// Each member is replaced at most once and there is at most one
	// switchover, so a longer roll is a bug.
	for range 2*len(cur) + 2 {
		a, done, err := NextRoll(cur, priority, syncNumber, maxLagBytes)
		if err != nil {
			return nil, err
		}
		if done {
			return actions, nil
		}
		actions = append(actions, a)
		for i := range cur {
			m := &cur[i]
			switch {
			case a.Kind == RollReplace && m.Name == a.Node:
				*m = RollMember{Name: m.Name, State: Running, Role: RoleStandby, Streaming: true, InQuorum: true}
			case a.Kind == RollSwitchover && m.Name == a.Node:
				m.Role, m.Streaming, m.InQuorum, m.LagBytes = RoleStandby, true, true, 0
			case a.Kind == RollSwitchover && m.Name == a.Target:
				m.Role, m.Streaming, m.InQuorum, m.LagBytes = RolePrimary, false, false, 0
			}
		}
	}
	return nil, fmt.Errorf("rolling replacement did not finish after %d steps (%s): this is a bug in the provider", len(actions), RollSummary(actions))
}

func newRoll(members []RollMember, priority []string, syncNumber int, maxLagBytes int64) (*roll, error) {
	if len(members) == 0 {
		return nil, errors.New("the cluster has no members")
	}
	if syncNumber < 0 {
		return nil, fmt.Errorf("synchronous number %d: use 0 (asynchronous) or more", syncNumber)
	}
	if maxLagBytes < 0 {
		return nil, fmt.Errorf("switchover lag limit %d bytes: use 0 or more", maxLagBytes)
	}
	// Clusters are small: linear searches instead of maps.
	for i, name := range priority {
		if name == "" {
			return nil, fmt.Errorf("name %d of the priority list is empty", i+1)
		}
		if slices.Contains(priority[:i], name) {
			return nil, fmt.Errorf("%s appears twice in the priority list: names must be unique", name)
		}
	}
	r := &roll{members: make([]*rollMember, len(members)), syncNumber: syncNumber, maxLag: maxLagBytes}
	all := make([]rollMember, len(members))
	var errs []error
	for i, m := range members {
		if m.Name == "" {
			return nil, fmt.Errorf("member %d has no name", i+1)
		}
		if slices.ContainsFunc(members[:i], func(o RollMember) bool { return o.Name == m.Name }) {
			return nil, fmt.Errorf("member %s was observed twice", m.Name)
		}
		switch m.State {
		case Running, Stopped, Missing, Unknown:
		default:
			errs = append(errs, fmt.Errorf("member %s: state %q: use %q, %q, %q or %q", m.Name, m.State, Running, Stopped, Missing, Unknown))
		}
		if m.Role != RolePrimary && m.Role != RoleStandby && m.Role != "" {
			errs = append(errs, fmt.Errorf("member %s: role %q: use %q, %q or \"\" when it cannot be read", m.Name, m.Role, RolePrimary, RoleStandby))
		}
		if m.LagBytes < -1 {
			errs = append(errs, fmt.Errorf("member %s: lag %d bytes: use 0 or more, or -1 when unknown", m.Name, m.LagBytes))
		}
		rm := &all[i]
		rm.RollMember, rm.rank = m, slices.Index(priority, m.Name)
		if rm.rank < 0 {
			rm.rank = len(priority) + i
		}
		r.members[i] = rm
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Priority order from here on, so reasons and errors do not depend on
	// the order members were observed in.
	slices.SortFunc(r.members, func(a, b *rollMember) int { return cmp.Compare(a.rank, b.rank) })
	return r, nil
}

// counted reports whether standby m confirms commits for the quorum (Counted).
func (r *roll) counted(m *rollMember) bool {
	return m.Role == RoleStandby && m.State == Running && Counted(m.Streaming, m.InQuorum, r.syncNumber)
}

func (r *roll) next() (RollAction, bool, error) {
	if !slices.ContainsFunc(r.members, func(m *rollMember) bool { return m.Outdated }) {
		return RollAction{}, true, nil
	}
	pr, err := r.healthy()
	if err != nil {
		return RollAction{}, false, err
	}
	if len(r.members) == 1 {
		return RollAction{}, false, fmt.Errorf("%w: %s is the only member and must move to a new machine; "+
			"with no standby to hand over to, replacing it stops the cluster: add members first "+
			"(a roll needs at least synchronous.number + 2), then apply again, and the roll hands over to a standby before replacing %s",
			ErrSingleNode, pr.Name, pr.Name)
	}

	var standbys []*rollMember // by priority, most preferred first
	for _, m := range r.members {
		if m != pr {
			standbys = append(standbys, m)
		}
	}

	// Every roll replaces at least one standby (the old primary after a
	// switchover), so the quorum is checked before the first step, not
	// halfway. The cluster is whole, so every standby is counted.
	if left := len(standbys) - 1; left < r.syncNumber {
		return RollAction{}, false, fmt.Errorf("%w: replacing a member takes one standby down, which leaves %d %s to confirm commits, "+
			"fewer than ANY %d needs, so commits would wait until it is back (every member is replaced as a standby, the primary after a switchover): "+
			"lower synchronous.number to %d or add a member first, then apply again",
			ErrQuorumTooSmall, left, plural(left, "standby", "standbys"), r.syncNumber, left)
	}

	var outdated []*rollMember
	for _, m := range standbys {
		if m.Outdated {
			outdated = append(outdated, m)
		}
	}
	if len(outdated) > 0 {
		return r.replace(outdated, standbys), false, nil
	}
	return r.switchover(pr, standbys)
}

// healthy returns the primary when the cluster is whole, else an
// ErrDegraded that lists what is wrong.
func (r *roll) healthy() (*rollMember, error) {
	var primaries []*rollMember
	for _, m := range r.members {
		if m.State == Running && m.Role == RolePrimary {
			primaries = append(primaries, m)
		}
	}
	var problems []string
	var pr *rollMember
	from := "the primary"
	switch len(primaries) {
	case 0:
		problems = append(problems, "no primary runs")
	case 1:
		pr = primaries[0]
		from = "primary " + pr.Name
	default:
		problems = append(problems, fmt.Sprintf("%s all run as primaries", rollNames(primaries)))
	}
	for _, m := range r.members {
		switch {
		case m.State == Running && m.Role == RolePrimary:
		case m.State == Stopped:
			problems = append(problems, m.Name+" is stopped")
		case m.State == Missing:
			problems = append(problems, m.Name+" is missing (its machine or data is gone)")
		case m.State == Unknown:
			problems = append(problems, m.Name+"'s state cannot be read")
		case m.Role == "":
			problems = append(problems, m.Name+" runs but its role cannot be read")
		case !m.Streaming:
			problems = append(problems, fmt.Sprintf("standby %s is not streaming from %s", m.Name, from))
		case !m.InQuorum && r.syncNumber > 0:
			problems = append(problems, fmt.Sprintf("standby %s is not counted by %s's synchronous quorum (ANY %d)", m.Name, from, r.syncNumber))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s; a rolling replacement takes one member down at a time and needs every other member "+
			"running and confirming commits, so nothing is replaced: repair the cluster first, then apply again after the repair",
			ErrDegraded, strings.Join(problems, "; "))
	}
	return pr, nil
}

// replace takes the lowest-priority outdated standby.
func (r *roll) replace(outdated, standbys []*rollMember) RollAction {
	m := outdated[len(outdated)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "standby %s must move to a new machine", m.Name)
	if len(outdated) > 1 {
		fmt.Fprintf(&b, "; of the outdated standbys %s it has the lowest priority, and the preferred primaries go last", rollNames(outdated))
	}
	if r.syncNumber == 0 {
		b.WriteString("; replication is asynchronous, so commits do not wait for it while it is down")
	} else {
		var rest []*rollMember
		for _, s := range standbys {
			if s != m {
				rest = append(rest, s)
			}
		}
		fmt.Fprintf(&b, "; while it is down %s still confirm%s commits for ANY %d", rollNames(rest), plural(len(rest), "s", ""), r.syncNumber)
	}
	return RollAction{Kind: RollReplace, Node: m.Name, Reason: b.String()}
}

// switchover hands the outdated primary over to the best standby.
func (r *roll) switchover(pr *rollMember, standbys []*rollMember) (RollAction, bool, error) {
	var unfit []string
	var target *rollMember
	var best candidate
	for _, m := range standbys {
		c := candidate{Unfit: r.unfit(m), Rank: m.rank}
		switch {
		case c.Unfit != "":
			unfit = append(unfit, m.Name+" "+c.Unfit)
		case target == nil || leadOrder(c, best) < 0:
			target, best = m, c
		}
	}
	limit := fmt.Sprintf("at most %d bytes behind", r.maxLag)
	if target == nil {
		return RollAction{}, false, fmt.Errorf("%w: primary %s must move to a new machine and first hands over to a standby that is "+
			"in the quorum, not outdated and %s, but none is (%s): wait until a standby catches up (or raise the switchover lag limit), then apply again",
			ErrNoSwitchoverTarget, pr.Name, limit, strings.Join(unfit, "; "))
	}
	reason := fmt.Sprintf("primary %s must move to a new machine, so it first hands over to %s, the highest-priority standby "+
		"that is in the quorum, not outdated and %s (%d bytes behind)", pr.Name, target.Name, limit, target.LagBytes)
	if len(unfit) > 0 {
		reason += "; passed over: " + strings.Join(unfit, "; ")
	}
	reason += fmt.Sprintf("; %s is then replaced as a standby", pr.Name)
	return RollAction{Kind: RollSwitchover, Node: pr.Name, Target: target.Name, Reason: reason}, false, nil
}

// unfit says why standby m cannot take over from the primary, "" when it can.
func (r *roll) unfit(m *rollMember) string {
	switch {
	case !r.counted(m):
		return "is not in the quorum"
	case m.Outdated:
		return "is outdated too"
	case m.LagBytes < 0:
		return "has a lag that cannot be read"
	case m.LagBytes > r.maxLag:
		return fmt.Sprintf("is %d bytes behind", m.LagBytes)
	}
	return ""
}

func rollNames(ms []*rollMember) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return joinNames(names)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
