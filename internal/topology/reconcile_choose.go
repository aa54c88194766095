package topology

import (
	"fmt"
	"strings"
)

// The choices Next makes among the members once the cluster has a leader: which member restarts next, and
// which takes over from a leader that is being removed.

// nextRenew is the renewal of the first member with a live machine whose certificates are due, if any.
func (c Cluster) nextRenew() (Step, bool) {
	for _, m := range c.Members {
		if m.Machine == MachineLive && m.CertDue != "" {
			return Step{Kind: StepRenew, Node: m.Name, Reason: m.CertDue + "; it reloads them (no restart, no failover), and the apply waits " +
				"until it serves the new certificate"}, true
		}
	}
	return Step{}, false
}

// nextRestart is the restart of a member whose PostgreSQL waits for one, or done when none waits; every
// other member must be serving. Standbys go first, in the configuration's order, and the leader last: a
// standby may run a setting higher than its primary's. Where the leader waits to lower a setting a hot
// standby must not have below its primary's (Member.RestartLowers: max_connections and the like), it is
// the other way round: the leader goes first, and each standby after it, once it has replayed the
// leader's new value, since a standby restarted first with the lower value refuses to start (or, run by
// Patroni, starts with its primary's higher one and waits for a second restart).
func (c Cluster) nextRestart(leader Member) (Step, bool, error) {
	var restart *Member
	for i := range c.Members {
		m := &c.Members[i]
		if len(m.PendingRestart) == 0 || m.Machine != MachineLive {
			continue
		}
		if m.Name == leader.Name && len(m.RestartLowers) > 0 {
			restart = m
			break
		}
		if restart == nil || restart.Name == leader.Name {
			restart = m
		}
	}
	if restart == nil {
		return Step{}, true, nil
	}
	if problems := c.notServing(restart.Name); len(problems) > 0 {
		return Step{}, false, fmt.Errorf("%w: %s waits for a restart, but %s; a restart takes its member down for a moment and needs every other member "+
			"running and confirming commits, so nothing is restarted: apply again once the cluster is whole", ErrDegraded, restart.Name, strings.Join(problems, "; "))
	}
	reason := "its PostgreSQL waits for a restart to apply " + strings.Join(restart.PendingRestart, ", ")
	switch {
	case restart.Name == leader.Name && len(restart.RestartLowers) > 0:
		reason += fmt.Sprintf("; it leads and lowers %s, which a hot standby must not have below its primary's, so it goes before the standbys",
			strings.Join(restart.RestartLowers, ", "))
	case restart.Name == leader.Name:
		reason += "; it leads, so it goes after every standby"
	}
	return Step{Kind: StepRestart, Node: restart.Name, Reason: reason}, false, nil
}

// handover is the member (that keep accepts) to take over from the leader, first in leadOrder among those
// streaming in the quorum within the lag limit (one whose machine is outdated only when no current one is),
// or "" and why none is.
func (c Cluster) handover(keep func(Member) bool) (string, string) {
	var unfit []string
	var best *candidate
	bestName := ""
	for i, m := range c.Members {
		if !keep(m) || m.Role == RolePrimary {
			continue
		}
		cand := candidate{Unfit: c.unfitToLead(m), Outdated: len(m.Outdated) > 0, Rank: i}
		if cand.Unfit != "" {
			unfit = append(unfit, m.Name+" "+cand.Unfit)
			continue
		}
		if best == nil || leadOrder(cand, *best) < 0 {
			best, bestName = &cand, m.Name
		}
	}
	switch {
	case best != nil:
		return bestName, ""
	case len(unfit) == 0:
		return "", "no other member"
	}
	return "", strings.Join(unfit, "; ")
}

// unfitToLead says why standby m cannot take over from the leader in a switchover ("" when it can): it
// must run, stream and be counted in the quorum, and be at most MaxLagBytes behind.
func (c Cluster) unfitToLead(m Member) string {
	if m.Role != RoleStandby || !m.Running || !Counted(m.Streaming, m.InQuorum, c.SyncNumber) {
		return "does not stream in the quorum"
	}
	return tooFarBehind(m.LagBytes, c.MaxLagBytes)
}

// tooFarBehind says why a standby lag bytes behind cannot take over where at most maxLag is allowed ("" when
// it can): a lag that cannot be read (-1) is not proven caught up. Switchover, handover and roll targets
// share it.
func tooFarBehind(lag, maxLag int64) string {
	switch {
	case lag < 0:
		return "has a lag that cannot be read"
	case lag > maxLag:
		return fmt.Sprintf("is %d bytes behind", lag)
	}
	return ""
}
