package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// NodeState is what the reconciler saw of a node's process and data.
type NodeState string

const (
	// Running: the node's server process runs.
	Running NodeState = "running"
	// Stopped: the data directory is present and no server process runs.
	Stopped NodeState = "stopped"
	// Missing: there is no data directory (the node's disk or machine is lost).
	Missing NodeState = "missing"
	// Unknown: the reconciler could not tell (for example the data
	// directory could not be read). Plan refuses to decide around such a
	// node, because it might be a primary.
	Unknown NodeState = "unknown"
)

// Roles as Observed.Role holds them.
const (
	// RolePrimary is a node that is not in recovery (pg_is_in_recovery() is
	// false), or a stopped node whose data directory has no standby.signal.
	RolePrimary = "primary"
	// RoleStandby is a node in recovery, or a stopped node with standby.signal.
	RoleStandby = "standby"
)

// Observed is one node as the reconciler saw it.
type Observed struct {
	// Name is the node's name in the cluster (also its application_name).
	Name string
	// State is Running, Stopped, Missing or Unknown.
	State NodeState
	// Role is RolePrimary, RoleStandby, or "" when it could not be read. A
	// Running node with no role stops planning (it might be a primary). For
	// a Stopped node the role comes from its data directory (standby.signal).
	Role string
	// FlushLSN is the last WAL location the node has flushed to its disk,
	// "" when unknown: on a standby pg_last_wal_receive_lsn() (it keeps its
	// value after the primary is gone), on a primary
	// pg_current_wal_flush_lsn(). For a Stopped node the reconciler may fill
	// it from the WAL on disk; when it cannot, Plan treats the node's
	// position as unknown.
	FlushLSN string
	// ReplayLSN is the last WAL location a standby has replayed
	// (pg_last_wal_replay_lsn()), "" when unknown.
	ReplayLSN string
	// Timeline is the node's current timeline ID (received_tli or
	// pg_control_checkpoint(); for a Stopped node pg_controldata's "Latest
	// checkpoint's TimeLineID"), 0 when unknown. A promotion starts a new,
	// higher timeline, so a higher timeline is a later history.
	Timeline int
	// Streaming is true when the node appears in the primary's
	// pg_stat_replication.
	Streaming bool
}

// Desired is the cluster the configuration asks for.
type Desired struct {
	// Nodes are the node names in priority order. Nodes[0] becomes the
	// primary only when the cluster is created; later the primary is
	// wherever it is, and the order only breaks ties between equally
	// advanced standbys and decides which standbys go first on scale-down.
	Nodes []string
}

// ActionKind is what an Action does to its node.
type ActionKind string

const (
	// Promote ends recovery on a standby so it takes writes (pg_ctl promote).
	Promote ActionKind = "promote"
	// Repoint makes a standby stream from Source (primary_conninfo, then
	// reload).
	Repoint ActionKind = "repoint"
	// Reseed destroys whatever is left of the node and copies it again from
	// Source (pg_basebackup, or the archive) as a standby, then starts it.
	Reseed ActionKind = "reseed"
	// Start starts a stopped node on the data it has. When Source is set the
	// node is a standby: point it at Source first (its primary_conninfo may
	// name a primary that is gone), then start it.
	Start ActionKind = "start"
	// Create makes a node that never existed: the primary (initdb) when
	// Source is empty, else a standby copied from Source.
	Create ActionKind = "create"
	// Remove stops the node and deletes its data.
	Remove ActionKind = "remove"
)

// Action is one step of a plan.
type Action struct {
	Kind ActionKind
	// Node is the node the action changes.
	Node string
	// Source is the primary that Node is copied from, repointed to, or
	// started to follow; "" when the action has none.
	Source string
	// Reason is one sentence for the plan and the log saying why.
	Reason string
}

// String is the action without its reason, such as "reseed n1 from s2".
func (a Action) String() string {
	switch {
	case a.Kind == Repoint:
		return fmt.Sprintf("repoint %s to %s", a.Node, a.Source)
	case a.Kind == Reseed && a.Source != "":
		return fmt.Sprintf("reseed %s from %s", a.Node, a.Source)
	case a.Kind == Start && a.Source != "":
		return fmt.Sprintf("start %s as a standby of %s", a.Node, a.Source)
	case a.Kind == Create && a.Source == "":
		return fmt.Sprintf("create %s as the primary", a.Node)
	case a.Kind == Create:
		return fmt.Sprintf("create %s from %s", a.Node, a.Source)
	default:
		return fmt.Sprintf("%s %s", a.Kind, a.Node)
	}
}

// Summary renders actions as numbered lines for a plan warning or a log
// entry, each "N. <action>: <reason>", such as
// "1. promote s2: s2 has the highest flushed LSN ...". No actions is "".
func Summary(actions []Action) string {
	return numbered(actions, func(a Action) string { return a.Reason })
}

// numbered renders steps as lines "N. <step>: <reason>"; no steps is "".
func numbered[T fmt.Stringer](steps []T, reason func(T) string) string {
	var b strings.Builder
	for i, a := range steps {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d. %s: %s", i+1, a, reason(a))
	}
	return b.String()
}

// Errors Plan wraps, so callers can choose a diagnostic.
var (
	// ErrSplitBrain: more than one node holds a primary's history that may
	// have taken writes the others lack.
	ErrSplitBrain = errors.New("more than one primary")
	// ErrNoSurvivor: the primary is lost and no standby is running, so no
	// node can be shown to hold every acknowledged commit.
	ErrNoSurvivor = errors.New("no surviving standby")
	// ErrUndecided: something Plan needs to decide safely could not be
	// observed (a node's state or role, a WAL position, a timeline).
	ErrUndecided = errors.New("cannot decide safely")
)

// node is an observation with what Plan derives from it.
type node struct {
	Observed
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
	desired []string
	want    map[string]bool
	nodes   []*node // in observed order
	byName  map[string]*node
}

// Plan computes the actions that take the cluster from observed to desired,
// in the order they must run, or an error when no safe plan exists.
//
// Observed lists the nodes the cluster has (from the resource's state), in
// the current priority order; a name in desired that is not observed is a
// new node. With nothing observed the cluster is created: Nodes[0] as the
// primary, then each other node copied from it.
//
// Exactly one running primary P. Each other desired node is brought back
// without touching P: a standby that runs but is not streaming is repointed
// to P (it may still follow a primary that is gone), or reseeded when it is
// on an older timeline than P (it did not follow a promotion and cannot
// stream from P); a stopped standby is started following P (its own WAL
// brings it most of the way, which is cheaper than a copy); a node whose
// data directory is gone, a stopped former primary, or a stopped node whose
// role cannot be read is reseeded from P (P holds every acknowledged commit,
// so destroying their leftovers loses none); a new name is created from P;
// observed nodes no longer desired are removed last, lowest priority first,
// so the cluster never has fewer copies than it needs while it changes. P
// itself is never removed: when it is not in desired Plan refuses. A node on a
// newer timeline than P, or a stopped former primary not provably older than
// P, means P may be a stale primary started by hand: Plan refuses.
//
// No running primary, and exactly one stopped node with a primary's data
// that no other node's timeline has overtaken: it is started in place. It
// holds every commit it ever acknowledged, so a restart loses nothing and
// needs neither a promotion nor a copy; then the other nodes are handled as
// above. Two such nodes: Plan refuses.
//
// Otherwise the primary is lost. The running standby furthest ahead is
// promoted: the highest timeline, then the highest flushed LSN (the replayed
// LSN when the flush LSN is unknown or behind it), then the earliest in the
// priority order. Under synchronous_standby_names = ANY n (...) a commit is
// acknowledged only after n standbys flushed it, so every acknowledged
// commit is on at least one standby; the furthest standby therefore has
// them all, and any other choice can lose some. The other running standbys
// are repointed to it, stopped standbys provably behind it are started
// following it, and the lost primary's name (like any other lost node)
// comes back as a standby copied from it. Plan refuses when no standby is
// running (acknowledged commits may exist only on the lost primary's disk),
// when a running standby's WAL position is unknown, and when a stopped
// standby could be further ahead than the chosen one (its position unknown
// or higher): promoting then could lose commits only that standby has.
//
// Two or more running primaries (a split brain, for example after a manual
// promote): Plan refuses and names them; choosing would discard one side's
// writes.
func Plan(desired Desired, observed []Observed) ([]Action, error) {
	p, err := newPlanner(desired, observed)
	if err != nil {
		return nil, err
	}
	return p.plan()
}

func newPlanner(desired Desired, observed []Observed) (*planner, error) {
	if len(desired.Nodes) == 0 {
		return nil, errors.New("the cluster needs at least one node")
	}
	p := &planner{
		desired: desired.Nodes,
		want:    make(map[string]bool, len(desired.Nodes)),
		byName:  make(map[string]*node, len(observed)),
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
		n := &node{Observed: o, rank: len(desired.Nodes) + i}
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

func (p *planner) plan() ([]Action, error) {
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
		start := Action{Kind: Start, Node: pr.Name, Reason: fmt.Sprintf(
			"%s holds the primary's data and is stopped; starting it in place loses nothing (its WAL holds every commit it acknowledged) "+
				"and needs no failover", pr.Name)}
		return p.settle(pr, modeStarting, []Action{start})
	default:
		return nil, fmt.Errorf("%w: no primary is running and %s all hold a primary's data on the latest timeline; "+
			"pgnvme will not choose which to start, because either choice discards the other's writes: "+
			"keep the one with the writes you need, delete the others' data directories, then plan again",
			ErrSplitBrain, describeNodes(stopped))
	}
	return p.failover()
}

// failover promotes the furthest running standby.
func (p *planner) failover() ([]Action, error) {
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
		if c := compareAhead(b, a); c != 0 {
			return c
		}
		return cmp.Compare(a.rank, b.rank)
	})
	for _, n := range stopped {
		if !n.posKnown || compareAhead(n, best) > 0 {
			return nil, fmt.Errorf("%w: %s is gone; the furthest running standby is %s (%s), but stopped standby %s %s "+
				"and may hold acknowledged commits that %s lacks, so nothing is promoted: "+
				"start %s by hand (pg_ctl start), wait until it has replayed its WAL, and plan again",
				ErrUndecided, lost, best.Name, best.posText(), n.Name, stoppedAhead(n), best.Name, n.Name)
		}
	}
	promote := Action{Kind: Promote, Node: best.Name, Reason: promoteReason(best, cands)}
	return p.settle(best, modePromoted, []Action{promote})
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
func promoteReason(best *node, cands []*node) string {
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
	b.WriteString("; every commit acknowledged under ANY n is flushed on at least one standby, so promoting the furthest one loses none")
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

// create plans a new cluster: Nodes[0] as the primary, the others copied from it.
func (p *planner) create() []Action {
	first := p.desired[0]
	actions := []Action{{Kind: Create, Node: first,
		Reason: fmt.Sprintf("the cluster is new and %s is first in the node list, so it is created as the primary", first)}}
	for _, name := range p.desired[1:] {
		actions = append(actions, Action{Kind: Create, Node: name, Source: first,
			Reason: fmt.Sprintf("%s is created as a standby copied from the new primary %s", name, first)})
	}
	return actions
}

// mode is how the primary settle works around came to be.
type mode int

const (
	modeRunning  mode = iota // it runs and its standbys' streaming state is known
	modeStarting             // an earlier action starts it: nobody can be streaming from it yet
	modePromoted             // an earlier action promotes it: every other standby must be repointed
)

// settle plans every node other than pr, the primary that runs (or will,
// after the actions in head), and appends those actions to head.
func (p *planner) settle(pr *node, m mode, head []Action) ([]Action, error) {
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

	var repoint, start, reseed, create, remove []Action
	for _, name := range p.desired {
		if name == pr.Name {
			continue
		}
		n, ok := p.byName[name]
		if !ok {
			create = append(create, Action{Kind: Create, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s is new in the node list; it is created as a standby copied from primary %s", name, pr.Name)})
			continue
		}
		switch {
		case n.State == Missing:
			what := "the data directory of " + name + " is gone"
			if n.Role == RolePrimary {
				what = name + " was the primary and its data directory is gone"
			}
			reseed = append(reseed, Action{Kind: Reseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s; it comes back as a standby copied from primary %s", what, pr.Name)})
		case n.State == Stopped && n.Role == RoleStandby:
			start = append(start, Action{Kind: Start, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s is stopped with its data directory intact; it is pointed at primary %s and started, "+
					"and catches up from its own WAL instead of a new copy", name, pr.Name)})
		case n.State == Stopped && n.Role == RolePrimary:
			reseed = append(reseed, Action{Kind: Reseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("%s holds a former primary's data%s, older than primary %s's history%s; "+
					"a former primary cannot follow another without pg_rewind, so it is copied again from %s",
					name, timelineText(n), pr.Name, timelineFor(tl), pr.Name)})
		case n.State == Stopped:
			reseed = append(reseed, Action{Kind: Reseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("the data directory of %s cannot be read as a primary's or a standby's; it is copied again from primary %s", name, pr.Name)})
		case m == modePromoted:
			repoint = append(repoint, Action{Kind: Repoint, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s followed the lost primary; it must stream from the new primary %s", name, pr.Name)})
		case m == modeStarting, n.Streaming:
		case n.olderThan(tl):
			reseed = append(reseed, Action{Kind: Reseed, Node: name, Source: pr.Name,
				Reason: fmt.Sprintf("standby %s is still on timeline %d and not streaming: it did not follow the promotion to "+
					"timeline %d and cannot stream from primary %s, so it is copied again from it", name, n.Timeline, tl, pr.Name)})
		default:
			repoint = append(repoint, Action{Kind: Repoint, Node: name, Source: pr.Name,
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
		remove = append(remove, Action{Kind: Remove, Node: n.Name, Reason: why})
	}
	return slices.Concat(head, repoint, start, reseed, create, remove), nil
}

func timelineFor(tl int) string {
	if tl == 0 {
		return ""
	}
	return fmt.Sprintf(" (timeline %d)", tl)
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

// joinNames joins names as a sentence does: "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
