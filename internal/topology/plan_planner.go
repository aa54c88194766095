package topology

import (
	"errors"
	"fmt"
)

// node is an observation with what planFor derives from it.
type node struct {
	observation
	rank     int    // priority: the index in Desired.Nodes, else after them in observed order
	pos      uint64 // max(flush, replay): the WAL surely on this node's disk
	posKnown bool
	flushed  bool // pos is the flush LSN (else the replay LSN)
}

// posText describes n's WAL position for a reason.
func (n *node) posText() string {
	if n.flushed {
		return "flushed LSN " + FormatLSN(n.pos)
	}
	return "replayed LSN " + FormatLSN(n.pos) + " (flushed LSN unknown)"
}

// olderThan reports whether n is known to be on a timeline before tl (both
// known): its history ends before a promotion that tl has seen.
func (n *node) olderThan(tl int) bool { return n.Timeline > 0 && tl > 0 && n.Timeline < tl }

// hasData reports whether n's data directory is present.
func (n *node) hasData() bool { return n.State == Running || n.State == Stopped }

type planner struct {
	desired  []string
	archived bool
	archive  *ArchiveEnd
	quorum   int
	// acceptLossAt is wants.AcceptLossAt; acceptedLoss is set once a failover promoted at it.
	acceptLossAt string
	acceptedLoss bool
	want         map[string]bool
	nodes        []*node // in observed order
	byName       map[string]*node
}

func newPlanner(desired wants, observed []observation) (*planner, error) {
	if len(desired.Nodes) == 0 {
		return nil, errors.New("the cluster needs at least one node")
	}
	p := &planner{
		desired:      desired.Nodes,
		archived:     desired.Archived,
		archive:      desired.Archive,
		quorum:       desired.Quorum,
		acceptLossAt: desired.AcceptLossAt,
		want:         make(map[string]bool, len(desired.Nodes)),
		byName:       make(map[string]*node, len(observed)),
	}
	rank := make(map[string]int, len(desired.Nodes))
	for i, name := range desired.Nodes {
		if name == "" {
			return nil, fmt.Errorf("node %d of the node list has no name", i+1)
		}
		if p.want[name] {
			return nil, fmt.Errorf("node %s appears twice in the node list: node names must be unique", name)
		}
		p.want[name] = true
		rank[name] = i
	}
	var errs []error
	for i, o := range observed {
		if o.Name == "" {
			return nil, fmt.Errorf("observed node %d has no name", i+1)
		}
		if p.byName[o.Name] != nil {
			return nil, fmt.Errorf("node %s was observed twice", o.Name)
		}
		n := &node{observation: o, rank: len(desired.Nodes) + i}
		if r, ok := rank[o.Name]; ok {
			n.rank = r
		}
		if err := n.check(); err != nil {
			errs = append(errs, err)
		}
		p.nodes = append(p.nodes, n)
		p.byName[o.Name] = n
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// check validates an observation and derives its WAL position.
func (n *node) check() error {
	switch n.State {
	case Running, Stopped, Missing, Unknown:
	default:
		return fmt.Errorf("node %s: state %q: use %q, %q, %q or %q", n.Name, n.State, Running, Stopped, Missing, Unknown)
	}
	if n.Role != RolePrimary && n.Role != RoleStandby && n.Role != "" {
		return fmt.Errorf("node %s: role %q: use %q, %q or \"\" when it cannot be read", n.Name, n.Role, RolePrimary, RoleStandby)
	}
	if n.Timeline < 0 {
		return fmt.Errorf("node %s: timeline %d: use a timeline ID (1 or more) or 0 when unknown", n.Name, n.Timeline)
	}
	if n.FlushLSN != "" {
		v, err := ParseLSN(n.FlushLSN)
		if err != nil {
			return fmt.Errorf("node %s: flush LSN: %w", n.Name, err)
		}
		n.pos, n.posKnown, n.flushed = v, true, true
	}
	if n.ReplayLSN != "" {
		v, err := ParseLSN(n.ReplayLSN)
		if err != nil {
			return fmt.Errorf("node %s: replay LSN: %w", n.Name, err)
		}
		// WAL is flushed before it is replayed, so a replay position past the
		// reported flush position (a receiver restarted without a primary
		// reports where it started) is the better lower bound.
		if !n.posKnown || v > n.pos {
			n.pos, n.posKnown, n.flushed = v, true, false
		}
	}
	return nil
}

func (p *planner) plan() ([]action, error) {
	// A node that cannot be seen might be a primary taking writes.
	var unseen []string
	for _, n := range p.nodes {
		switch {
		case n.State == Unknown:
			unseen = append(unseen, n.Name+" (state unknown)")
		case n.State == Running && n.Role == "":
			unseen = append(unseen, n.Name+" (runs, role unreadable)")
		}
	}
	if len(unseen) > 0 {
		return nil, fmt.Errorf("%w: cannot observe %s; any of them might be a primary, so nothing is changed: "+
			"wait until every node accepts connections (or fix what keeps it from being read) and plan again", ErrUndecided, joinNames(unseen))
	}

	if len(p.nodes) == 0 {
		return p.create(), nil
	}
	if lost := p.allLost(); lost != nil {
		if p.archived {
			return p.restore(lost)
		}
		return p.createAgain(lost), nil
	}

	var primaries []*node
	for _, n := range p.nodes {
		if n.State == Running && n.Role == RolePrimary {
			primaries = append(primaries, n)
		}
	}
	switch len(primaries) {
	case 0:
	case 1:
		return p.settle(primaries[0], modeRunning, nil)
	default:
		return nil, fmt.Errorf("%w: %s all run as primaries (split brain, for example after a manual promote); "+
			"pgnvme will not choose between them, because either choice discards the other's writes: "+
			"keep the one with the writes you need, stop the others and delete their data directories, then plan again",
			ErrSplitBrain, describeNodes(primaries))
	}

	// No running primary: restart a stopped primary in place when one is current.
	maxTL := 0
	for _, n := range p.nodes {
		if n.hasData() {
			maxTL = max(maxTL, n.Timeline)
		}
	}
	var stopped, unreadable []*node
	for _, n := range p.nodes {
		switch {
		case n.State != Stopped:
		case n.Role == "":
			unreadable = append(unreadable, n)
		case n.Role == RolePrimary && !n.olderThan(maxTL):
			stopped = append(stopped, n)
		}
	}
	if len(unreadable) > 0 {
		return nil, fmt.Errorf("%w: no primary is running and the role of stopped %s cannot be read from its data directory; "+
			"it might hold the primary's data, so nothing is changed: check the data directory and plan again",
			ErrUndecided, namesOf(unreadable))
	}
	switch len(stopped) {
	case 0:
	case 1:
		pr := stopped[0]
		start := action{Kind: actStart, Node: pr.Name, Reason: fmt.Sprintf(
			"%s holds the primary's data and is stopped; starting it in place loses nothing (its WAL holds every commit it acknowledged) "+
				"and needs no failover", pr.Name)}
		return p.settle(pr, modeStarting, []action{start})
	default:
		return nil, fmt.Errorf("%w: no primary is running and %s all hold a primary's data on the latest timeline; "+
			"pgnvme will not choose which to start, because either choice discards the other's writes: "+
			"keep the one with the writes you need, delete the others' data directories, then plan again",
			ErrSplitBrain, describeNodes(stopped))
	}
	return p.failover()
}

// create plans a new cluster: Nodes[0] as the primary, the others copied from it.
func (p *planner) create() []action {
	first := p.desired[0]
	actions := []action{{Kind: actCreate, Node: first,
		Reason: fmt.Sprintf("the cluster is new and %s is first in the node list, so it is created as the primary", first)}}
	for _, name := range p.desired[1:] {
		actions = append(actions, action{Kind: actCreate, Node: name, Source: first,
			Reason: fmt.Sprintf("%s is created as a standby copied from the new primary %s", name, first)})
	}
	return actions
}

// allLost are the names of the observed nodes when every one of them is lost (no data directory), else nil.
func (p *planner) allLost() []string {
	var lost []string
	for _, n := range p.nodes {
		if n.State != Missing {
			return nil
		}
		lost = append(lost, n.Name)
	}
	return lost
}

// createAgain plans a cluster whose every node is lost and which has no archive: created again as a new
// one (create), the primary's reason saying that nothing was left to keep.
func (p *planner) createAgain(lost []string) []action {
	actions := p.create()
	actions[0].Reason = fmt.Sprintf("every node (%s) is lost and no archive holds the cluster's data, so nothing is left to keep: "+
		"the cluster is created again, %s first in the node list as the primary", joinNames(lost), actions[0].Node)
	return actions
}

// restore plans an archived cluster whose every node is lost: Nodes[0] restored from the archive's newest
// backup to the end of the archive as the primary, the others copied from it. Without a backup (or
// without a reading of the archive) nothing can be restored, and a cluster created again would be a new,
// empty database beside the archived history: ErrDataLost.
func (p *planner) restore(lost []string) ([]action, error) {
	if err := restorable(p.archive, joinNames(lost), "no node holds the cluster's data"); err != nil {
		return nil, err
	}
	actions := p.create()
	first := actions[0].Node
	actions[0] = action{Kind: actRestore, Node: first, Reason: fmt.Sprintf(
		"every node (%s) is lost, and the cluster's data is in its archive: %s is restored %s. It becomes the primary on the next timeline and "+
			"continues the same archive", joinNames(lost), first, restoreExtent(p.archive))}
	for i := range actions[1:] {
		actions[i+1].Reason = fmt.Sprintf("%s is created as a standby copied from the restored primary %s", actions[i+1].Node, first)
	}
	return actions, nil
}

// restorable is nil when a restores the data of a cluster whose every member (lost: their names and how
// they were lost) is gone: it was read and holds a base backup. Otherwise ErrDataLost, saying why nothing
// can be restored; gone says what the loss means ("no node holds the cluster's data").
func restorable(a *ArchiveEnd, lost, gone string) error {
	refuse := func(why string) error {
		return fmt.Errorf("%w: %s; %s, which is only in its archive now, and %s", ErrDataLost, lost, gone, why)
	}
	switch {
	case a == nil:
		return refuse("the archive could not be read to restore from it, so nothing is changed: make the archive readable from here and plan again")
	case a.Backup == "":
		return refuse("the archive holds no base backup to restore from (its WAL alone cannot rebuild a database). " +
			"Creating the cluster again would start a new, empty database beside that history, so nothing is changed")
	}
	return nil
}

// restoreExtent says what a restore to the end of archive a starts from and reaches, and what it loses:
// "from the archive's newest base backup B (finished T) and the WAL archived after it, to the end of the
// archive, last segment S archived at T; commits after that are lost".
func restoreExtent(a *ArchiveEnd) string {
	end := "to the end of the archive"
	switch {
	case a.Hole != "":
		end = fmt.Sprintf("up to the archive's first missing segment %s (replay cannot pass it; the archive's newest segment is %s)", a.Hole, a.LastWAL)
	case a.LastWAL != "" && !a.LastWALAt.IsZero():
		end += fmt.Sprintf(", last segment %s archived at %s", a.LastWAL, a.LastWALAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	case a.LastWAL != "":
		end += fmt.Sprintf(", last segment %s", a.LastWAL)
	}
	backup := a.Backup
	if !a.BackupAt.IsZero() {
		backup += " (finished " + a.BackupAt.UTC().Format("2006-01-02 15:04:05 UTC") + ")"
	}
	return fmt.Sprintf("from the archive's newest base backup %s and the WAL archived after it, %s; commits after that are lost", backup, end)
}

// describeNodes names nodes with their timelines, such as "n1 (timeline 1) and s2 (timeline 2)".
func describeNodes(nodes []*node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name
		if n.Timeline > 0 {
			parts[i] += fmt.Sprintf(" (timeline %d)", n.Timeline)
		}
	}
	return joinNames(parts)
}

func namesOf(nodes []*node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name
	}
	return joinNames(parts)
}
