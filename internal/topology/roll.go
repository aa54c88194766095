package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The rolling replacement of members whose machines are outdated, as Next decides it once the cluster has
// a leader and no member is to be added, replaced or removed: on the engine's own Member, in the
// configuration's order (the first the most preferred primary).

// Errors the rolling replacement (and the restarts, ErrDegraded) wrap, so callers can choose a diagnostic.
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

// rollMember is a wanted member with its rank: its index in the configuration's order.
type rollMember struct {
	Member
	rank int
}

// state is the member as the roll sees it: its machine lost or absent (Missing), its role unread while
// it does not run (Unknown), stopped, or running.
func (m *rollMember) state() NodeState {
	switch {
	case m.Machine != MachineLive:
		return Missing
	case m.Role == "" && !m.Running:
		return Unknown
	case !m.Running:
		return Stopped
	}
	return Running
}

func (m *rollMember) outdated() bool { return len(m.Outdated) > 0 }

// roll is one decision's input: the wanted members, most preferred first.
type roll struct {
	members    []*rollMember
	syncNumber int
	maxLag     int64
}

// nextRoll is the one next step of the rolling replacement of c's outdated machines, or done when no
// wanted member is outdated (whatever the cluster's health: repairing it comes first in Next). The
// executor runs the step, waits until a replaced member is back in the quorum (or a switchover's new
// leader runs and the old one streams from it), observes again and asks Next again.
//
// The rules, so that no acknowledged commit is lost and the cluster keeps taking writes:
//
//   - The cluster must be whole: exactly one running primary and every other member a running standby
//     streaming from it and counted by its quorum (streaming is enough when replication is asynchronous).
//     Otherwise a member is already down or not confirming commits, and replacing another would make two:
//     the roll refuses (ErrDegraded); repair first.
//   - Every member is replaced as a standby (the primary after a switchover), so with one standby down the
//     others must still be at least SyncNumber, or commits would wait until it is back: the roll refuses
//     before the first step (ErrQuorumTooSmall); lower the number or add a member first. A single-member
//     cluster cannot hand over at all (ErrSingleNode).
//   - Outdated standbys go first, one at a time, lowest priority first, so the preferred primaries are
//     replaced last.
//   - Then, when the primary is outdated, it hands over to the standby first in leadOrder among those in
//     the quorum, not outdated, and whose lag is known and at most MaxLagBytes; when none is, the roll
//     refuses (ErrNoSwitchoverTarget) and says why each is unfit. The old primary, now an outdated
//     standby, is then replaced like any other.
func (c Cluster) nextRoll() (Step, bool, error) {
	r := &roll{syncNumber: c.SyncNumber, maxLag: c.MaxLagBytes}
	for i, m := range c.Members {
		if m.Wanted {
			r.members = append(r.members, &rollMember{Member: m, rank: i})
		}
	}
	return r.next()
}

// counted reports whether standby m confirms commits for the quorum (Counted).
func (r *roll) counted(m *rollMember) bool {
	return m.Role == RoleStandby && m.state() == Running && Counted(m.Streaming, m.InQuorum, r.syncNumber)
}

func (r *roll) next() (Step, bool, error) {
	if !slices.ContainsFunc(r.members, (*rollMember).outdated) {
		return Step{}, true, nil
	}
	pr, err := r.healthy()
	if err != nil {
		return Step{}, false, err
	}
	if len(r.members) == 1 {
		return Step{}, false, fmt.Errorf("%w: %s is the only member and must move to a new machine; "+
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

	// Every roll replaces at least one standby (the old primary after a switchover), so the quorum is
	// checked before the first step, not halfway. The cluster is whole, so every standby is counted.
	if left := len(standbys) - 1; left < r.syncNumber {
		return Step{}, false, fmt.Errorf("%w: replacing a member takes one standby down, which leaves %d %s to confirm commits, "+
			"fewer than ANY %d needs, so commits would wait until it is back (every member is replaced as a standby, the primary after a switchover): "+
			"lower synchronous.number to %d or add a member first, then apply again",
			ErrQuorumTooSmall, left, plural(left, "standby", "standbys"), r.syncNumber, left)
	}

	var outdated []*rollMember
	for _, m := range standbys {
		if m.outdated() {
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
		if m.state() == Running && m.Role == RolePrimary {
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
		switch st := m.state(); {
		case st == Running && m.Role == RolePrimary:
		case st == Stopped:
			problems = append(problems, m.Name+" is stopped")
		case st == Missing:
			problems = append(problems, m.Name+" is missing (its machine or data is gone)")
		case st == Unknown:
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
func (r *roll) replace(outdated, standbys []*rollMember) Step {
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
	return Step{Kind: StepRoll, Node: m.Name, Reason: b.String()}
}

// switchover hands the outdated primary over to the best standby.
func (r *roll) switchover(pr *rollMember, standbys []*rollMember) (Step, bool, error) {
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
		return Step{}, false, fmt.Errorf("%w: primary %s must move to a new machine and first hands over to a standby that is "+
			"in the quorum, not outdated and %s, but none is (%s): wait until a standby catches up (or raise the switchover lag limit), then apply again",
			ErrNoSwitchoverTarget, pr.Name, limit, strings.Join(unfit, "; "))
	}
	reason := fmt.Sprintf("primary %s must move to a new machine, so it first hands over to %s, the highest-priority standby "+
		"that is in the quorum, not outdated and %s (%d bytes behind)", pr.Name, target.Name, limit, target.LagBytes)
	if len(unfit) > 0 {
		reason += "; passed over: " + strings.Join(unfit, "; ")
	}
	reason += fmt.Sprintf("; %s is then replaced as a standby", pr.Name)
	return Step{Kind: StepSwitchover, Node: pr.Name, Target: target.Name, Reason: reason}, false, nil
}

// unfit says why standby m cannot take over from the primary, "" when it can.
func (r *roll) unfit(m *rollMember) string {
	switch {
	case !r.counted(m):
		return "is not in the quorum"
	case m.outdated():
		return "is outdated too"
	}
	return tooFarBehind(m.LagBytes, r.maxLag)
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
