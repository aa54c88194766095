package topology

import (
	"fmt"
	"strings"
)

// StepKind is what a Step does.
type StepKind string

const (
	// StepForm launches the machines of Nodes at once, so that etcd and Patroni form the cluster from all
	// of them (a new cluster, or one whose create stopped before it formed), and waits until it has a
	// leader and every standby streams.
	StepForm StepKind = "form"
	// StepRestore launches the machines of Nodes at once, as StepForm does, for a formed cluster whose
	// every member is lost: the member that takes Patroni's initialize key restores the archive's newest
	// base backup and replays the archive to its end, then leads on the next timeline; the others are
	// copied from it. It waits until the cluster has a leader and every standby streams.
	StepRestore StepKind = "restore"
	// StepTakeOver makes Node, the one member left of a cluster that lost its leader with the DCS's
	// majority, the leader at exactly the WAL position At the operator accepted the loss at
	// (accept_data_loss_at_lsn): its etcd member becomes a new one-member etcd cluster that keeps the
	// DCS's data, and Patroni fails over to it. The lost members are replaced after it.
	StepTakeOver StepKind = "take-over"
	// StepAwaitLeader waits until Patroni elects a leader among the live members (a failover under way).
	StepAwaitLeader StepKind = "await-leader"
	// StepAwaitHandover waits until a standby can take over from the leader Node, which is being removed.
	StepAwaitHandover StepKind = "await-handover"
	// StepAwaitMembers waits until every member of a cluster that is forming streams in the quorum.
	StepAwaitMembers StepKind = "await-members"
	// StepConfigure makes Patroni's dynamic configuration the configuration's (PATCH /config).
	StepConfigure StepKind = "configure"
	// StepSwitchover hands the leader role from Node to Target and waits until Node streams from Target.
	StepSwitchover StepKind = "switchover"
	// StepRemove removes Node (not the leader): its machine and address go, and the cluster is whole
	// without it.
	StepRemove StepKind = "remove"
	// StepReplace launches a new machine for the lost member Node and waits until it streams in the quorum.
	StepReplace StepKind = "replace"
	// StepAdd launches the machine of Node, added to the cluster, and waits until it streams in the quorum.
	StepAdd StepKind = "add"
	// StepRoll replaces the live, outdated standby Node with a new machine (a rolling replacement).
	StepRoll StepKind = "roll"
	// StepRestart restarts Node's PostgreSQL to apply settings only a restart applies.
	StepRestart StepKind = "restart"
	// StepRenew issues Node's certificates again from the cluster's authority (Member.CertDue says why)
	// and waits until its running PostgreSQL (and, on EC2, Patroni's REST API) serves the new one; the
	// member reloads them, with no restart.
	StepRenew StepKind = "renew"

	// The steps of a cluster whose members run no failover of their own (Cluster.EnginePromotes: the
	// local platform), where the engine does what Patroni does on the EC2 platform. StepForm and
	// StepRestore launch only the first member there (Nodes has one name): it becomes the primary, and the
	// others are added from it one at a time (StepAdd, StepReplace with Source).

	// StepPromote ends recovery on the standby Node, the furthest ahead of the survivors of a lost primary,
	// so it takes writes, and points every other running standby at it.
	StepPromote StepKind = "promote"
	// StepStart starts the stopped Node on the data it has: a standby pointed at Source first, or (Source
	// empty) the primary, in place.
	StepStart StepKind = "start"
	// StepRepoint points the running standby Node at Source and restarts it, so it streams from Source.
	StepRepoint StepKind = "repoint"
	// StepReseed destroys what Node holds (a former primary, a standby that cannot follow Source's timeline,
	// an unreadable data directory) and copies it again from Source as a standby.
	StepReseed StepKind = "reseed"
)

// Step is one step of an apply.
type Step struct {
	Kind StepKind
	// Node is the member the step changes; for StepForm and StepRestore, Nodes are the members launched,
	// for StepConfigure where the engine promotes the members whose settings change.
	Node  string
	Nodes []string
	// Target is the member that leads after a switchover.
	Target string
	// Source is the member that Node is copied from, pointed at or started to follow, on a cluster the
	// engine promotes in (Cluster.EnginePromotes); "" otherwise.
	Source string
	// At is the WAL position a StepTakeOver accepts the loss at ("X/Y", as accept_data_loss_at_lsn).
	At string
	// Reason is one sentence for the plan and the log saying why.
	Reason string
}

// String is the step without its reason, the same words in the plan and in the apply's log: "replace
// node-2", "switchover node-1 to node-2", "form node-1, node-2, node-3".
func (s Step) String() string {
	switch s.Kind {
	case StepForm:
		return "form the cluster from " + strings.Join(s.Nodes, ", ")
	case StepRestore:
		return "restore the cluster from its archive onto " + strings.Join(s.Nodes, ", ")
	case StepAwaitLeader:
		return "wait for a leader"
	case StepAwaitHandover:
		return "wait for a standby to take over from " + s.Node
	case StepAwaitMembers:
		return "wait for every member to stream"
	case StepConfigure:
		if len(s.Nodes) > 0 { // where the engine promotes: each member's own settings
			return "change the settings of " + strings.Join(s.Nodes, ", ")
		}
		return "change Patroni's dynamic configuration"
	case StepSwitchover:
		return fmt.Sprintf("switchover %s to %s", s.Node, s.Target)
	case StepRoll:
		return "replace " + s.Node + " (roll)"
	case StepRenew:
		return "renew " + s.Node + "'s certificates"
	case StepTakeOver:
		return fmt.Sprintf("promote %s, accepting the loss after %s", s.Node, s.At)
	case StepRepoint:
		return fmt.Sprintf("repoint %s to %s", s.Node, s.Source)
	case StepStart:
		if s.Source == "" {
			return "start " + s.Node + " as the primary"
		}
		return fmt.Sprintf("start %s as a standby of %s", s.Node, s.Source)
	}
	if s.Source != "" {
		return fmt.Sprintf("%s %s from %s", s.Kind, s.Node, s.Source)
	}
	return string(s.Kind) + " " + s.Node
}

// StepsSummary renders steps as numbered lines "N. <step>: <reason>"; no steps is "".
func StepsSummary(steps []Step) string {
	return numbered(steps, func(s Step) string { return s.Reason })
}
