package topology

import (
	"slices"
	"strings"
)

// nextEngine is Next for a cluster whose members run no failover of their own (Cluster.EnginePromotes):
// the repairs the planner's rules (plan_planner.go, plan_failover.go, plan_settle.go) decide, one at a
// time, then the settings change (StepConfigure, when ConfigChanges lists one), then the restarts every
// cluster shares (nextRestart).
//
// The planner sees c as the local platform observes its processes: a member with a live machine runs,
// is stopped (its role read from its data directory) or could not be seen; a lost member has no data
// directory; an absent one never existed. Its first action is the step, so an apply that observes again
// after each step and the plan that simulates them (Steps) follow the same rules.
func (c Cluster) nextEngine() (Step, bool, error) {
	actions, err := planFor(c.desired(), c.observed())
	if err != nil {
		return Step{}, false, err
	}
	if len(actions) > 0 {
		return c.stepOf(actions[0]), false, nil
	}
	leader, _ := c.leader()
	if len(c.ConfigChanges) > 0 {
		reason := "the members' settings differ from this configuration's: " + strings.Join(c.ConfigChanges, "; ") + "; every member reloads"
		if len(c.ConfigRestarts) > 0 {
			reason += ", and each running member then waits for a restart to apply " + strings.Join(c.ConfigRestarts, ", ")
		}
		var nodes []string
		for _, m := range c.Members {
			if m.Wanted && m.Machine == MachineLive {
				nodes = append(nodes, m.Name)
			}
		}
		return Step{Kind: StepConfigure, Nodes: nodes, Reason: reason}, false, nil
	}
	return c.nextRestart(leader)
}

// desired is what the configuration asks of c, as the planner takes it.
func (c Cluster) desired() wants {
	return wants{Nodes: c.wantedNames(), Archived: c.Archived, Archive: c.Archive, Quorum: c.Quorum, AcceptLossAt: c.AcceptLossAt}
}

// observed are c's members that ever existed, as the planner takes them.
func (c Cluster) observed() []observation {
	var out []observation
	for _, m := range c.Members {
		if m.Machine == MachineAbsent {
			continue
		}
		o := observation{Name: m.Name, Role: m.Role, Streaming: m.Streaming}
		switch {
		case m.Machine == MachineLost:
			o.State, o.Role = Missing, ""
		case m.Running:
			o.State = Running
			if m.Unseen != "" {
				o.Role = ""
			}
		case m.Unseen != "":
			o.State, o.Role = Unknown, ""
		default:
			o.State = Stopped
		}
		if m.WAL != nil && m.Machine == MachineLive {
			if m.WAL.Received != 0 {
				o.FlushLSN = FormatLSN(m.WAL.Received)
			}
			if m.WAL.Replayed != 0 {
				o.ReplayLSN = FormatLSN(m.WAL.Replayed)
			}
			o.Timeline = m.WAL.Timeline
		}
		out = append(out, o)
	}
	return out
}

// stepOf is the planner's action a as a step.
func (c Cluster) stepOf(a action) Step {
	s := Step{Node: a.Node, Source: a.Source, Reason: a.Reason}
	switch a.Kind {
	case actCreate:
		s.Kind = StepAdd
		if a.Source == "" {
			s.Kind, s.Node, s.Nodes = StepForm, "", []string{a.Node}
		}
	case actRestore:
		s.Kind, s.Node, s.Nodes = StepRestore, "", []string{a.Node}
	case actPromote:
		s.Kind = StepPromote
	case actRepoint:
		s.Kind = StepRepoint
	case actStart:
		s.Kind = StepStart
	case actReseed:
		s.Kind = StepReseed
		if i := slices.IndexFunc(c.Members, func(m Member) bool { return m.Name == a.Node }); i >= 0 && c.Members[i].Machine != MachineLive {
			s.Kind = StepReplace
		}
	case actRemove:
		s.Kind = StepRemove
	}
	return s
}

// simulateEngine changes c as the engine's own step s would when it succeeds (Cluster.EnginePromotes);
// false when s is not one of them.
func (c *Cluster) simulateEngine(s Step) bool {
	leaderTimeline := func() int {
		if l, ok := c.leader(); ok && l.WAL != nil {
			return l.WAL.Timeline
		}
		return 0
	}
	follow := func(m *Member, tl int) {
		m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes, m.Unseen = RoleStandby, true, true, true, 0, ""
		if m.WAL != nil && tl > 0 {
			w := *m.WAL
			w.Timeline = tl
			m.WAL = &w
		}
	}
	switch s.Kind {
	case StepConfigure:
		c.ConfigChanges = nil
		for i := range c.Members {
			// A member the apply made (added, replaced, reseeded, formed) started with the new settings, but
			// for those a hot standby must not have below its primary's, which it started with at its
			// primary's (higher) value while the change lowers them: it restarts for them too.
			if m := &c.Members[i]; m.Machine == MachineLive && m.Running && (!m.made || len(c.ConfigLowers) > 0) && len(c.ConfigRestarts) > 0 {
				m.PendingRestart, m.RestartLowers = slices.Clone(c.ConfigRestarts), slices.Clone(c.ConfigLowers)
			}
		}
	case StepPromote:
		tl := 0
		for i := range c.Members {
			if m := &c.Members[i]; m.Name == s.Node {
				m.Role, m.Running, m.Streaming, m.InQuorum, m.LagBytes = RolePrimary, true, false, false, 0
				if m.WAL != nil && m.WAL.Timeline > 0 {
					w := *m.WAL
					w.Timeline++
					m.WAL, tl = &w, w.Timeline
				}
			}
		}
		for i := range c.Members {
			if m := &c.Members[i]; m.Name != s.Node && m.Wanted && m.Machine == MachineLive && m.Running && m.Role == RoleStandby {
				follow(m, tl)
			}
		}
	case StepStart:
		tl := leaderTimeline()
		for i := range c.Members {
			m := &c.Members[i]
			switch {
			case m.Name == s.Node && s.Source == "":
				m.Running = true
				if m.WAL != nil {
					tl = m.WAL.Timeline
				}
			case m.Name == s.Node:
				follow(m, tl)
			}
		}
		if s.Source == "" {
			// The running standbys followed the stopped primary and stream from it again once it runs.
			for i := range c.Members {
				if m := &c.Members[i]; m.Name != s.Node && m.Wanted && m.Machine == MachineLive && m.Running && m.Role == RoleStandby {
					follow(m, tl)
				}
			}
		}
	case StepRepoint:
		tl := leaderTimeline()
		for i := range c.Members {
			if m := &c.Members[i]; m.Name == s.Node {
				follow(m, tl)
			}
		}
	case StepReseed:
		for i := range c.Members {
			if m := &c.Members[i]; m.Name == s.Node {
				*m = Member{Name: m.Name, Wanted: m.Wanted, Machine: MachineLive, Role: RoleStandby, Running: true, Streaming: true, InQuorum: true, made: true}
			}
		}
	default:
		return false
	}
	return true
}
