package topology

import (
	"errors"
	"fmt"
	"strings"
	"time"
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
	// directory could not be read). Next refuses to decide around such a
	// node, because it might be a primary.
	Unknown NodeState = "unknown"
)

// Roles as observation.Role holds them.
const (
	// RolePrimary is a node that is not in recovery (pg_is_in_recovery() is
	// false), or a stopped node whose data directory has no standby.signal.
	RolePrimary = "primary"
	// RoleStandby is a node in recovery, or a stopped node with standby.signal.
	RoleStandby = "standby"
)

// observation is one node as the reconciler saw it.
type observation struct {
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
	// it from the WAL on disk; when it cannot, the rules treat the node's
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

// wants is the cluster the configuration asks for.
type wants struct {
	// Nodes are the node names in priority order. Nodes[0] becomes the
	// primary only when the cluster is created; later the primary is
	// wherever it is, and the order only breaks ties between equally
	// advanced standbys and decides which standbys go first on scale-down.
	Nodes []string
	// Archived is true when the cluster archives its WAL: its history then outlives its nodes, and a
	// cluster whose every node is lost must be restored from the archive, never created again empty.
	Archived bool
	// Archive is what the archive holds, which the plan of an archived cluster whose every node is lost
	// rests on (NeedsArchive): the adapter reads it then. nil when not read.
	Archive *ArchiveEnd
	// Quorum is how many standbys flush a commit before it is acknowledged, when that is guaranteed
	// (synchronous replication whose number is never lowered: data durability "required"); 0 when it is
	// not. A failover then promotes a survivor only when fewer than Quorum standbys were lost with the
	// primary: otherwise a commit may be on lost nodes alone.
	Quorum int
	// AcceptLossAt is a WAL position ("X/Y") at which the operator accepts that loss: when the furthest
	// survivor of such a failover holds WAL up to exactly this position, it is promoted, and whatever
	// acknowledged commits only the lost nodes held are given up. At any other position the failover is
	// refused as without it, so a value left in the configuration never accepts a later loss. "" accepts
	// none.
	AcceptLossAt string
}

// ArchiveEnd is what a cluster's archive holds for a restore to the end of it.
type ArchiveEnd struct {
	// Backup is the label of the newest base backup ("" when the archive holds none) and BackupAt when
	// it finished.
	Backup   string
	BackupAt time.Time
	// LastWAL is the newest complete WAL segment in the archive ("" when none) and LastWALAt when it
	// arrived there.
	LastWAL   string
	LastWALAt time.Time
	// Hole is the first segment missing between the backup and LastWAL ("" when none): replay stops
	// before it.
	Hole string
}

// ActionKind is what an Action does to its node.
type actionKind string

const (
	// Promote ends recovery on a standby so it takes writes (pg_ctl promote).
	actPromote actionKind = "promote"
	// Repoint makes a standby stream from Source (primary_conninfo, then
	// reload).
	actRepoint actionKind = "repoint"
	// Reseed destroys whatever is left of the node and copies it again from
	// Source (pg_basebackup, or the archive) as a standby, then starts it.
	actReseed actionKind = "reseed"
	// Start starts a stopped node on the data it has. When Source is set the
	// node is a standby: point it at Source first (its primary_conninfo may
	// name a primary that is gone), then start it.
	actStart actionKind = "start"
	// Create makes a node that never existed: the primary (initdb) when
	// Source is empty, else a standby copied from Source.
	actCreate actionKind = "create"
	// Remove stops the node and deletes its data.
	actRemove actionKind = "remove"
	// Restore makes the node the primary from the archive, every node being lost: the newest base backup,
	// then every archived WAL segment after it (archive recovery to the end of the archive), then the
	// end of recovery, which starts the next timeline.
	actRestore actionKind = "restore"
)

// Action is one step of a plan.
type action struct {
	Kind actionKind
	// Node is the node the action changes.
	Node string
	// Source is the primary that Node is copied from, repointed to, or
	// started to follow; "" when the action has none.
	Source string
	// Reason is one sentence for the plan and the log saying why.
	Reason string
}

// String is the action without its reason, such as "reseed n1 from s2".
func (a action) String() string {
	switch {
	case a.Kind == actRepoint:
		return fmt.Sprintf("repoint %s to %s", a.Node, a.Source)
	case a.Kind == actReseed && a.Source != "":
		return fmt.Sprintf("reseed %s from %s", a.Node, a.Source)
	case a.Kind == actStart && a.Source != "":
		return fmt.Sprintf("start %s as a standby of %s", a.Node, a.Source)
	case a.Kind == actCreate && a.Source == "":
		return fmt.Sprintf("create %s as the primary", a.Node)
	case a.Kind == actCreate:
		return fmt.Sprintf("create %s from %s", a.Node, a.Source)
	case a.Kind == actRestore:
		return fmt.Sprintf("restore %s from the archive as the primary", a.Node)
	default:
		return fmt.Sprintf("%s %s", a.Kind, a.Node)
	}
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

// Errors Next wraps, so callers can choose a diagnostic.
var (
	// ErrSplitBrain: more than one node holds a primary's history that may
	// have taken writes the others lack.
	ErrSplitBrain = errors.New("more than one primary")
	// ErrNoSurvivor: the primary is lost and no standby is running, so no
	// node can be shown to hold every acknowledged commit.
	ErrNoSurvivor = errors.New("no surviving standby")
	// ErrQuorumLost: the primary and as many standbys as flush every acknowledged commit are lost
	// together, so no survivor can be shown to hold every acknowledged commit (wants.Quorum).
	ErrQuorumLost = errors.New("no survivor is proven to hold every acknowledged commit")
	// ErrUndecided: something Next needs to decide safely could not be
	// observed (a node's state or role, a WAL position, a timeline).
	ErrUndecided = errors.New("cannot decide safely")
)

// ErrDataLost (declared with the engine of members run by Patroni, which
// returns it too) is also the error of the rules of a cluster the engine promotes in for an archived cluster whose every
// node is lost.

// planFor computes the actions that take the cluster from observed to desired,
// in the order they must run, or an error when no safe plan exists.
//
// observed lists the nodes the cluster has (from the resource's state), in
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
// itself is never removed: when it is not in desired Next refuses. A node on a
// newer timeline than P, or a stopped former primary not provably older than
// P, means P may be a stale primary started by hand: Next refuses.
//
// No running primary, and exactly one stopped node with a primary's data
// that no other node's timeline has overtaken: it is started in place. It
// holds every commit it ever acknowledged, so a restart loses nothing and
// needs neither a promotion nor a copy; then the other nodes are handled as
// above. Two such nodes: Next refuses.
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
// comes back as a standby copied from it. Next refuses when no standby is
// running (acknowledged commits may exist only on the lost primary's disk),
// when a running standby's WAL position is unknown, and when a stopped
// standby could be further ahead than the chosen one (its position unknown
// or higher): promoting then could lose commits only that standby has.
//
// Two or more running primaries (a split brain, for example after a manual
// promote): Next refuses and names them; choosing would discard one side's
// writes.
//
// Every observed node lost (no data directory anywhere): no node holds the
// cluster's data. With an archive (wants.Archived) its history is there
// only, and a cluster created again (initdb) would be a new, empty database
// beside it: never. When the archive holds a base backup (wants.Archive,
// read because NeedsArchive said so), Nodes[0] is restored from it to the end
// of the archive as the primary (Restore: it continues the same archive on
// the next timeline), and each other node is created from it; without a
// backup, or when the archive was not read, Next refuses (ErrDataLost) and
// says why. Without an archive nothing is left to lose: the cluster is
// created again as a new one, like a cluster never created.
func planFor(desired wants, observed []observation) ([]action, error) {
	p, err := newPlanner(desired, observed)
	if err != nil {
		return nil, err
	}
	return p.plan()
}

// joinNames joins names as a sentence does: "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
