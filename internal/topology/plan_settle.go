package topology

import (
	"fmt"
	"slices"
	"strings"
)

// mode is how the primary settle works around came to be.
type mode int

const (
	modeRunning  mode = iota // it runs and its standbys' streaming state is known
	modeStarting             // an earlier action starts it: nobody can be streaming from it yet
	modePromoted             // an earlier action promotes it: every other standby must be repointed
)

// settle plans every node other than pr, the primary that runs (or will,
// after the actions in head), and appends those actions to head.
func (p *planner) settle(pr *node, m mode, head []action) ([]action, error) {
	if !p.want[pr.Name] {
		return nil, fmt.Errorf("primary %s is not in the node list (%s): pgnvme never removes the primary; "+
			"keep %s in the list, or remove other nodes instead", pr.Name, strings.Join(p.desired, ", "), pr.Name)
	}
	tl := pr.Timeline
	if m == modePromoted && tl > 0 {
		tl++ // a promotion starts the next timeline
	}
	for _, n := range p.nodes {
		if n == pr || !n.hasData() {
			continue
		}
		if tl > 0 && n.Timeline > tl {
			return nil, fmt.Errorf("%w: %s is on timeline %d, newer than primary %s's timeline %d: %s may be a former primary "+
				"started by hand, and %s may hold writes it lacks, so nothing is changed: "+
				"decide which node's data to keep, stop and delete the other, then plan again",
				ErrSplitBrain, n.Name, n.Timeline, pr.Name, tl, pr.Name, n.Name)
		}
		if n.State == Stopped && n.Role == RolePrimary && !n.olderThan(tl) {
			return nil, fmt.Errorf("%w: stopped %s holds a primary's data%s and primary %s runs%s; "+
				"%s is not provably an older history, so its data is not replaced: "+
				"decide which node's data to keep, delete the other's data directory, then plan again",
				ErrSplitBrain, n.Name, timelineText(n), pr.Name, timelineFor(tl), n.Name)
		}
	}

	var repoint, start, reseed, create, remove []action
	var followers []string
	for _, name := range p.desired {
		if name == pr.Name {
			continue
		}
		n, ok := p.byName[name]
		if !ok {
			create = append(create, action{Kind: actCreate, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s is new in the node list; it is created as a standby copied from primary %s", name, pr.Name)})
			continue
		}
		switch {
		case n.State == Missing:
			what := "the data directory of " + name + " is gone"
			if n.Role == RolePrimary {
				what = name + " was the primary and its data directory is gone"
			}
			reseed = append(reseed, action{Kind: actReseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s; it comes back as a standby copied from primary %s", what, pr.Name)})
		case n.State == Stopped && n.Role == RoleStandby:
			start = append(start, action{Kind: actStart, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s is stopped with its data directory intact; it is pointed at primary %s and started, "+
					"and catches up from its own WAL instead of a new copy", name, pr.Name)})
		case n.State == Stopped && n.Role == RolePrimary:
			reseed = append(reseed, action{Kind: actReseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s holds a former primary's data%s, older than primary %s's history%s; "+
					"a former primary cannot follow another without pg_rewind, so it is copied again from %s",
					name, timelineText(n), pr.Name, timelineFor(tl), pr.Name)})
		case n.State == Stopped:
			reseed = append(reseed, action{Kind: actReseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("the data directory of %s cannot be read as a primary's or a standby's; it is copied again from primary %s", name, pr.Name)})
		case m == modePromoted:
			// The promotion points it at the new primary: it followed the lost one.
			followers = append(followers, name)
		case m == modeStarting, n.Streaming:
		case n.olderThan(tl):
			reseed = append(reseed, action{Kind: actReseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s is still on timeline %d and not streaming: it did not follow the promotion to "+
					"timeline %d and cannot stream from primary %s, so it is copied again from it", name, n.Timeline, tl, pr.Name)})
		default:
			repoint = append(repoint, action{Kind: actRepoint, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s runs but is not streaming from primary %s; it is pointed at %s and reloaded", name, pr.Name, pr.Name)})
		}
	}
	for i := len(p.nodes) - 1; i >= 0; i-- {
		n := p.nodes[i]
		if n == pr || p.want[n.Name] {
			continue
		}
		why := fmt.Sprintf("%s is no longer in the node list; extra nodes are removed after every other change, lowest priority first", n.Name)
		if n.State == Missing {
			why = fmt.Sprintf("%s is no longer in the node list and its data directory is already gone", n.Name)
		}
		remove = append(remove, action{Kind: actRemove, Node: n.Name, Reason: why})
	}
	if len(followers) > 0 {
		head[0].Reason += fmt.Sprintf("; then standby %s, which followed the lost primary, is pointed at %s and streams from it", joinNames(followers), pr.Name)
	}
	return slices.Concat(head, repoint, start, reseed, create, remove), nil
}

func timelineFor(tl int) string {
	if tl == 0 {
		return ""
	}
	return fmt.Sprintf(" (timeline %d)", tl)
}
