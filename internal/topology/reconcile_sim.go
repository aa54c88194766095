package topology

import (
	"fmt"
	"slices"
)

// Steps simulates the apply Next drives from c, for the plan: each step is assumed to succeed (a formed
// cluster's first wanted member leads, a failover elects the live member least behind, a replaced, added
// or rolled member comes back current and streaming in the quorum, a switchover swaps the two roles, a
// configuration change applies, a restart applies its settings). Restarts that a configuration change
// will need are not known until it applies: the configure step's reason says so. It refuses as Next does.
func Steps(c Cluster) ([]Step, error) {
	c = c.clone()
	var steps []Step
	for range 5*len(c.Members) + 8 {
		s, done, err := Next(c)
		if err != nil {
			return steps, err
		}
		if done {
			return steps, nil
		}
		steps = append(steps, s)
		c = AfterStep(c, s)
	}
	return nil, fmt.Errorf("the apply's steps did not finish after %d (%s): this is a bug in the provider", len(steps), StepsSummary(steps))
}

// AfterStep is c as Steps assumes it is after s succeeds.
func AfterStep(c Cluster, s Step) Cluster {
	c = c.clone()
	c.simulate(s)
	return c
}

func (c Cluster) clone() Cluster {
	c.Members = slices.Clone(c.Members)
	return c
}

// simulate changes c as step s would when it succeeds.
func (c *Cluster) simulate(s Step) {
	set := func(name string, f func(m *Member)) {
		for i := range c.Members {
			if c.Members[i].Name == name {
				f(&c.Members[i])
			}
		}
	}
	// fresh is a member on a new, current machine, streaming in the quorum.
	fresh := func(m *Member) {
		*m = Member{Name: m.Name, Wanted: m.Wanted, Etcd: m.Etcd, Machine: MachineLive, Role: RoleStandby, Running: true, Streaming: true, InQuorum: true, made: true}
	}
	if c.EnginePromotes && c.simulateEngine(s) {
		return
	}
	switch s.Kind {
	case StepForm, StepRestore:
		for _, n := range s.Nodes {
			set(n, fresh)
		}
		c.ViewKnown = true
		if _, ok := c.leader(); !ok {
			c.elect()
		}
	case StepAwaitLeader:
		c.ViewKnown = true
		c.elect()
	case StepTakeOver:
		c.ViewKnown = true
		set(s.Node, func(m *Member) {
			m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes, m.WAL = RolePrimary, true, false, false, 0, nil
		})
	case StepAwaitMembers:
		for i := range c.Members {
			if m := &c.Members[i]; m.Wanted && m.Machine == MachineLive && m.Role != RolePrimary {
				m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes = RoleStandby, true, true, true, 0
			}
		}
	case StepAwaitHandover:
		// Assumed to end with a standby caught up: the first that stays.
		for i := range c.Members {
			if m := &c.Members[i]; m.Wanted && m.Machine == MachineLive && m.Role != RolePrimary {
				m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes = RoleStandby, true, true, true, 0
				break
			}
		}
	case StepConfigure:
		c.ConfigChanges = nil
	case StepSwitchover:
		set(s.Node, func(m *Member) {
			m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes = RoleStandby, true, true, true, 0
		})
		set(s.Target, func(m *Member) {
			m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes = RolePrimary, true, false, false, 0
		})
	case StepRemove:
		c.Members = slices.DeleteFunc(c.Members, func(m Member) bool { return m.Name == s.Node })
	case StepReplace, StepAdd, StepRoll:
		set(s.Node, fresh)
	case StepRestart:
		set(s.Node, func(m *Member) { m.PendingRestart, m.RestartLowers = nil, nil })
	case StepRenew:
		set(s.Node, func(m *Member) { m.CertDue = "" })
	}
	if !c.MembershipPending() && len(c.ConfigLater) > 0 {
		c.ConfigChanges, c.ConfigLater = c.ConfigLater, nil
	}
}

// elect makes the live member first in leadOrder by how far behind it is (the first in order among equals,
// one whose lag is unknown last) the leader, as Patroni's failover would, and the other live members its
// standbys.
func (c *Cluster) elect() {
	best := -1
	var first candidate
	for i, m := range c.Members {
		if m.Machine != MachineLive {
			continue
		}
		cand := candidate{Behind: m.LagBytes, Rank: i}
		if m.LagBytes < 0 {
			cand.Unfit = "its lag cannot be read"
		}
		if best < 0 || leadOrder(cand, first) < 0 {
			best, first = i, cand
		}
	}
	for i := range c.Members {
		m := &c.Members[i]
		if m.Machine != MachineLive {
			continue
		}
		m.Running, m.LagBytes = true, 0
		if i == best {
			m.Role, m.Streaming, m.InQuorum = RolePrimary, false, false
		} else {
			m.Role, m.Streaming, m.InQuorum = RoleStandby, true, true
		}
	}
}
