// Package topology decides what a cluster reconciler does to bring a
// PostgreSQL cluster (one primary, N streaming standbys) from what it
// observed to what the configuration asks for: which standby to promote when
// the primary is lost, which nodes to repoint, start, reseed, create or
// remove, and in what order. It runs nothing. Both platforms map what they
// observe to a Cluster once, execute the one step Next returns, observe again
// and ask Next again, until done; their plans list Steps, Next's simulation,
// so the plan's text and the apply's steps come from the same rules. The EC2
// platform's members are machines run by Patroni, which elects a new leader
// itself; the local platform's members are processes with no failover of
// their own (Cluster.EnginePromotes), so there Next chooses the survivor to
// promote, the stopped primary to start and the standbys to repoint, start
// or reseed (planFor's rules, plan.go), and internal/localcluster executes
// them with internal/localnode.
//
// The rules protect data first and availability second:
//
//   - Nothing that might hold the only copy of an acknowledged commit is
//     destroyed. A node is reseeded or removed only while another node is (or
//     is about to be, by an earlier action of the same plan) the primary
//     that holds every acknowledged commit.
//   - A new primary is chosen only among standbys whose WAL position can be
//     read, and it is the one furthest ahead, so no commit acknowledged under
//     ANY n synchronous replication is lost.
//   - What cannot be observed is never guessed: an unreadable node, two
//     primaries, or a stopped node that may be further ahead than the chosen
//     primary stops planning with an error that says what to do.
//   - The actions are meant to run one at a time, in the order given, each
//     finished (a copied or started standby streaming) before the next begins,
//     so no two nodes are rebuilt at once.
//
// Next decides a rolling replacement (roll.go), when members' machines
// must change (instance type, image, bootstrap), on the same Member: one
// member down at a time, outdated standbys first, lowest priority first,
// each back in the quorum before the next; then the primary hands over to a
// standby in the quorum that is caught up, and is replaced as a standby. A
// roll starts only on a whole cluster whose quorum still confirms commits
// with one standby down; otherwise it refuses and says what comes first (a
// repair, a lower synchronous number, another member).
//
// Next (for members that are machines run by Patroni) adds what such a
// cluster needs on top: a cluster that never formed is formed from all its
// members at once; one whose every member is lost has lost its data
// (ErrDataLost: no launch brings it back, and a new empty database would
// write over its archive); one without a leader waits for Patroni's failover
// while the live members hold the DCS's majority, and otherwise no election
// can happen (ErrNoElection). With a leader it changes the dynamic
// configuration, removes, replaces and adds members one at a time (a leader
// being removed hands over first to a member proven caught up), rolls
// outdated machines, and restarts members whose PostgreSQL waits
// for it, standbys first.
package topology
