package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// failover promotes the furthest running standby.
func (p *planner) failover() ([]action, error) {
	var cands, stopped []*node
	for _, n := range p.nodes {
		if n.Role != RoleStandby {
			continue
		}
		switch n.State {
		case Running:
			cands = append(cands, n)
		case Stopped:
			stopped = append(stopped, n)
		}
	}
	lost := p.lostPrimary()
	if len(cands) == 0 {
		msg := fmt.Sprintf("%s is gone and no standby is running, so no node can be shown to hold every acknowledged commit: "+
			"they may exist only on the lost primary's disk", lost)
		if len(stopped) > 0 {
			msg += fmt.Sprintf("; stopped standby %s may hold them too, but its WAL position cannot be compared while it is stopped: "+
				"start it by hand (pg_ctl start), wait until it has replayed its WAL, and plan again", namesOf(stopped))
		} else {
			msg += "; recover that disk, or restore the cluster from its archive"
		}
		return nil, fmt.Errorf("%w: %s", ErrNoSurvivor, msg)
	}
	var blind []*node
	for _, n := range cands {
		if !n.posKnown {
			blind = append(blind, n)
		}
	}
	if len(blind) > 0 {
		return nil, fmt.Errorf("%w: %s is gone and the WAL position of running standby %s cannot be read; "+
			"promoting any standby could then lose acknowledged commits, so nothing is changed: plan again when every standby reports its LSNs",
			ErrUndecided, lost, namesOf(blind))
	}
	best := slices.MinFunc(cands, func(a, b *node) int {
		return leadOrder(candidate{Timeline: a.Timeline, Pos: a.pos, Rank: a.rank}, candidate{Timeline: b.Timeline, Pos: b.pos, Rank: b.rank})
	})
	for _, n := range stopped {
		if !n.posKnown || compareAhead(n, best) > 0 {
			return nil, fmt.Errorf("%w: %s is gone; the furthest running standby is %s (%s), but stopped standby %s %s "+
				"and may hold acknowledged commits that %s lacks, so nothing is promoted: "+
				"start %s by hand (pg_ctl start), wait until it has replayed its WAL, and plan again",
				ErrUndecided, lost, best.Name, best.posText(), n.Name, stoppedAhead(n), best.Name, n.Name)
		}
	}
	if err := p.quorumSurvives(best); err != nil {
		return nil, err
	}
	reason := promoteReason(best, cands, p.quorum)
	if p.acceptedLoss {
		reason = fmt.Sprintf("%s holds WAL up to %s%s, the furthest of the survivors, and accept_data_loss_at_lsn = %q accepts exactly that: "+
			"acknowledged commits only the lost nodes held (after %s) are given up", best.Name, best.posText(), timelineText(best), p.acceptLossAt, FormatLSN(best.pos))
	}
	promote := action{Kind: actPromote, Node: best.Name, Reason: reason}
	return p.settle(best, modePromoted, []action{promote})
}

// quorumSurvives refuses a failover to best when the lost standbys could hold acknowledged commits no
// survivor has: with wants.Quorum standbys flushing every acknowledged commit, the furthest survivor is
// proven to hold them all only while fewer than Quorum standbys were lost with the primary. The lost nodes
// are the missing ones, one of which was the primary (failover is planned only when no primary runs or can
// be started).
func (p *planner) quorumSurvives(best *node) error {
	if p.quorum == 0 {
		return nil
	}
	var missing []*node
	for _, n := range p.nodes {
		if n.State == Missing {
			missing = append(missing, n)
		}
	}
	lost := len(missing)
	if lost > 0 {
		lost-- // one of them is the lost primary, whether its role is known or not
	}
	if lost < p.quorum {
		return nil
	}
	if at, err := ParseLSN(p.acceptLossAt); err == nil && best.posKnown && best.pos == at {
		p.acceptedLoss = true
		return nil
	}
	var names []string
	for _, n := range missing {
		names = append(names, n.Name)
	}
	flushed, standbys := "1 standby", "1 standby"
	if p.quorum > 1 {
		flushed = fmt.Sprintf("%d standbys", p.quorum)
	}
	if lost > 1 {
		standbys = fmt.Sprintf("%d standbys", lost)
	}
	archived := ""
	if p.archived {
		archived = " (with what its restore_command fetched from the archive)"
	}
	return fmt.Errorf("%w: %s (the primary and %s) are lost together. Every commit was acknowledged once %s had flushed it, so a "+
		"commit acknowledged by the lost standbys alone may be on no surviving node: the furthest survivor, %s, holds WAL up to %s%s%s. "+
		"pgnvme promotes a survivor only when it is proven to hold every acknowledged commit, and it cannot be here, so nothing is changed. "+
		"Bring back a lost node's data directory and start it, then plan again; or, accepting the loss of whatever only the lost nodes "+
		"held (commits after %s), set accept_data_loss_at_lsn = %q and apply: %s is then promoted, as long as it is still exactly there, "+
		"and the lost nodes are copied from it%s",
		ErrQuorumLost, joinNames(names), standbys, flushed, best.Name, best.posText(), timelineText(best), archived, best.posText(), lsnOrEmpty(best), best.Name, mismatch(p.acceptLossAt, best))
}

// lsnOrEmpty is n's position as accept_data_loss_at_lsn takes it ("" when unknown).
func lsnOrEmpty(n *node) string {
	if !n.posKnown {
		return ""
	}
	return FormatLSN(n.pos)
}

// mismatch says why acceptLossAt, when set, did not accept the loss at n.
func mismatch(acceptLossAt string, n *node) string {
	if acceptLossAt == "" {
		return ""
	}
	return fmt.Sprintf(" (accept_data_loss_at_lsn is %q, which accepts the loss only at exactly that position, and %s is not there)", acceptLossAt, n.Name)
}

// compareAhead orders two standbys by how far their history goes: the later
// timeline first (it has seen a promotion the other has not), then the
// higher WAL position. An unknown timeline (0) compares as the oldest.
func compareAhead(a, b *node) int {
	if c := cmp.Compare(a.Timeline, b.Timeline); c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// stoppedAhead says why a stopped standby blocks a promotion.
func stoppedAhead(n *node) string {
	if !n.posKnown {
		return "has an unknown WAL position"
	}
	return "is further ahead (" + n.posText() + timelineText(n) + ")"
}

func timelineText(n *node) string {
	if n.Timeline == 0 {
		return ""
	}
	return fmt.Sprintf(" on timeline %d", n.Timeline)
}

// promoteReason explains the choice of best among cands.
func promoteReason(best *node, cands []*node, quorum int) string {
	var tied, others []string
	for _, n := range cands {
		switch {
		case n == best:
		case compareAhead(n, best) == 0:
			tied = append(tied, n.Name)
		default:
			others = append(others, fmt.Sprintf("%s: %s%s", n.Name, n.posText(), timelineText(n)))
		}
	}
	var b strings.Builder
	if len(tied) > 0 {
		fmt.Fprintf(&b, "%s and %s have the same %s%s, the highest of the surviving standbys; %s comes first in the node list",
			best.Name, strings.Join(tied, " and "), best.posText(), timelineText(best), best.Name)
	} else {
		fmt.Fprintf(&b, "%s has the highest %s%s of the surviving standbys", best.Name, best.posText(), timelineText(best))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(others, ", "))
	}
	if quorum > 0 {
		b.WriteString("; every commit acknowledged under ANY n is flushed on at least one standby, so promoting the furthest one loses none")
	} else {
		b.WriteString("; no synchronous quorum is guaranteed (data durability preferred, or none), so a commit acknowledged while fewer " +
			"standbys streamed may exist only on the lost primary")
	}
	return b.String()
}

// lostPrimary names the primary that is gone, when an observation says which
// (a missing node whose state remembers it as the primary).
func (p *planner) lostPrimary() string {
	var names []string
	for _, n := range p.nodes {
		if n.Role == RolePrimary && n.State == Missing {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return "the primary"
	}
	return "primary " + joinNames(names)
}
