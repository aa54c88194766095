package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The decision engine of a cluster whose members are machines run by Patroni (the EC2 platform): given
// the cluster as observed, Next says the one next step of an apply and why; Steps simulates the whole
// apply for the plan. The adapter maps what it sees to a Cluster once, executes the step, observes again
// and asks Next again, until done, so the plan's text and the apply's steps come from the same rules.

// Machine is what became of a member's machine.
type Machine string

const (
	// MachineLive: the member's machine runs (or is starting).
	MachineLive Machine = "live"
	// MachineLost: the member had a machine and it is gone or stopped, and its data with it (instance store).
	MachineLost Machine = "lost"
	// MachineAbsent: the member never had a machine (a new cluster's node, or one just added).
	MachineAbsent Machine = "absent"
)

// Member is one member as the adapter observed it.
type Member struct {
	// Name is the member's name (its Patroni name and application_name).
	Name string
	// Wanted is true when the configuration names the member; false for one it no longer names (being
	// removed) that still has a machine or an address.
	Wanted bool
	// Machine is what became of its machine; Why says how a lost one was lost (for the plan).
	Machine Machine
	Why     string
	// Etcd is true when the member votes in the cluster's DCS (an etcd member on its machine).
	Etcd bool
	// Role is RolePrimary when Patroni's view names the member the leader and its PostgreSQL runs,
	// RoleStandby when the view lists it as a replica, "" when the view does not list it (or there is no
	// trustworthy view: see Cluster.ViewKnown).
	Role string
	// Running is true when the member's PostgreSQL runs as Patroni's view says (a leader running, a
	// replica running or streaming).
	Running bool
	// Streaming is true when the standby streams from the leader; InQuorum when it does and the leader's
	// synchronous quorum counts it.
	Streaming, InQuorum bool
	// LagBytes is how far the standby is behind the leader, -1 when unknown.
	LagBytes int64
	// Outdated names why the member's machine must change ("instance_type m6id.large -> m6id.xlarge");
	// empty when the machine is current. Only a live machine can be outdated.
	Outdated []string
	// PendingRestart names the settings its PostgreSQL waits to apply with a restart; empty when none.
	// RestartLowers names those of them whose new value is lower than the running one and which a hot
	// standby must not have below its primary's (bootstrap.StandbyLimitsLowered); on the leader they make
	// it restart before the standbys.
	PendingRestart []string
	RestartLowers  []string
	// WAL is how far the member's PostgreSQL holds WAL, as its own Patroni reads it from PostgreSQL (which
	// needs no DCS); nil when not read (WALError says why, when it was tried). The adapter reads it for the
	// live members when no leader can be elected (Cluster.ElectionImpossible): the refusal says what the
	// survivors hold.
	WAL      *WAL
	WALError string
	// Unseen says why the member's state or role could not be read ("" when they were): on a cluster the
	// engine promotes in, such a member might be a primary taking writes, so Next decides nothing around it.
	Unseen string
	// CertDue says why the certificates of a member with a live machine are to be renewed before they end
	// or because they no longer name what they must ("" when they are not): the adapter decides it from the
	// certificates it keeps (pki.Check) at its clock's now. A member without a live machine gets new
	// certificates with its launch, not a renewal.
	CertDue string

	// made is true for a member the simulated apply made (Steps): it starts with the configuration's
	// settings, so a settings change after it leaves it nothing to restart for.
	made bool
}

// WAL is how far a member's PostgreSQL holds WAL, as 64-bit positions (FormatLSN prints them): a standby's
// Received (what its WAL receiver flushed) and Replayed; a primary's Received and Replayed are both its
// flush position. 0 is unknown.
type WAL struct {
	Received, Replayed uint64
	Timeline           int
}

// Cluster is the whole cluster as observed, with what the configuration asks of it.
type Cluster struct {
	// Members are the wanted members in the configuration's order (the first the preferred primary),
	// then the members being removed, in any order.
	Members []Member
	// SyncNumber is n of synchronous_standby_names = ANY n (...), 0 for asynchronous replication.
	SyncNumber int
	// MaxLagBytes is how far behind the leader a standby may be to take over (maximum_lag_on_failover).
	MaxLagBytes int64
	// Formed is true when the cluster has formed before (the state records its members), so that a
	// member without a live machine has lost data rather than never held any.
	Formed bool
	// ViewKnown is true when a live member's Patroni answered with a view the adapter trusts (a view whose
	// leader's machine is lost is stale: the adapter leaves every Role empty and sets ViewKnown false).
	ViewKnown bool
	// ViewError says why there is no trustworthy view ("" when there is one).
	ViewError string
	// ConfigChanges are what making Patroni's dynamic configuration the configuration's would change now
	// ("path: old -> new"), while members are added or removed the transitional one (a quorum no larger
	// than the members there are); nil when none or when it cannot be read (ConfigError says why).
	ConfigChanges []string
	ConfigError   string
	// ConfigLater are the changes left for after the members are added or removed (the full quorum);
	// nil when none.
	ConfigLater []string
	// ConfigRestarts are the settings the configuration change leaves every running member waiting to apply
	// with a restart, and ConfigLowers those of them it lowers that a hot standby must not have below its
	// primary's, where they are known before the change applies (the local platform reads the settings'
	// contexts); nil where they are not (Patroni's members report theirs once it applied).
	ConfigRestarts, ConfigLowers []string
	// Archive is what the cluster's archive holds, which the apply of a formed cluster whose every member
	// is lost rests on (NeedsArchive): the adapter reads it then. nil when not read (or no archive).
	Archive *ArchiveEnd
	// AcceptLossAt is accept_data_loss_at_lsn: the WAL position ("X/Y") at which the operator accepts
	// losing what only lost members held, when no leader can be elected. It promotes the one member left
	// only while that member is exactly there (StepTakeOver); "" accepts nothing.
	AcceptLossAt string

	// EnginePromotes is true when the members run no failover of their own (the local platform's
	// processes): with no leader, Next chooses the survivor to promote (StepPromote) or the stopped primary
	// to start, where on the EC2 platform it waits for Patroni's election. The members' WAL (timeline and
	// positions) is then read for every member with data, running or stopped, and a member's Role is also
	// read from a stopped member's data directory.
	EnginePromotes bool
	// Archived is true when the cluster archives its WAL (EnginePromotes only): its history then outlives
	// its members, so a cluster whose every member is lost is restored from the archive, never created
	// again empty.
	Archived bool
	// Quorum is how many standbys flush a commit before it is acknowledged, when that is guaranteed
	// (EnginePromotes only; synchronous replication whose number is never lowered: data durability
	// "required"), 0 when it is not. A failover then promotes a survivor only when fewer than Quorum
	// standbys were lost with the primary, unless AcceptLossAt accepts the loss.
	Quorum int
}

// NeedsArchive reports whether Next's decision for c rests on what the archive holds (Cluster.Archive):
// the cluster had formed and no member has a live machine (it is restored from the archive), or no leader
// can be elected (the refusal says how far the archive goes beside the survivors).
func (c Cluster) NeedsArchive() bool {
	allLost := c.Formed && !slices.ContainsFunc(c.Members, func(m Member) bool { return m.Machine == MachineLive })
	if c.EnginePromotes {
		return allLost && c.Archived
	}
	return allLost || c.ElectionImpossible()
}

// ElectionImpossible reports whether the cluster had formed, has live members, and no member leads while
// too few of the DCS's members live for it to have a majority: Patroni cannot elect a leader (Next refuses
// with ErrNoElection), and what the live members hold (Member.WAL) is what the refusal reports.
func (c Cluster) ElectionImpossible() bool {
	if _, led := c.leader(); led || !c.Formed || c.EnginePromotes {
		return false
	}
	voters := c.filter(func(m Member) bool { return m.Etcd })
	liveVoters := c.filter(func(m Member) bool { return m.Etcd && m.Machine == MachineLive })
	live := c.filter(func(m Member) bool { return m.Machine == MachineLive })
	return len(live) > 0 && 2*len(liveVoters) <= len(voters)
}

// Outcomes that no step can reach: the adapter reports them as they are.
var (
	// ErrDataLost: the cluster had formed and no member's machine is left, so no member holds its data;
	// what it held is only in its archive, and the archive holds no base backup to restore (or could not
	// be read). Starting a new, empty database would write over that history.
	ErrDataLost = errors.New("every member is lost")
	// ErrNoElection: the leader is gone and the members left are too few for the DCS to have a majority,
	// so Patroni cannot elect a leader and no member can be proven to hold every acknowledged commit.
	ErrNoElection = errors.New("no leader can be elected")
)

// Next returns the one next step of an apply of c, or done when the cluster is as the configuration asks.
//
// The rules, in order:
//
//   - A member with a live machine whose certificates are due is renewed first (StepRenew), one at a time
//     in the configuration's order: a renewal is a reload, with no restart and no failover, and a
//     certificate that ends stops replication and the DCS whatever else the apply was to do.
//   - No member has a live machine: a cluster that never formed is formed from every wanted member at
//     once (etcd and Patroni need them all to start). One that had formed has lost its data: it is
//     restored from the archive's newest base backup to the end of the archive (StepRestore: every
//     member launched at once, as when it formed, with Patroni's bootstrap from the archive), or, when
//     the archive holds no backup or was not read, no launch brings it back (ErrDataLost).
//   - No leader: a cluster that never formed launches its members without a machine at once, or waits for
//     the ones it has to elect a leader. One that had formed waits for Patroni's failover when the live
//     members hold the DCS's majority; otherwise no election can happen (ErrNoElection), and launching
//     new members cannot help: they would join a DCS without a majority.
//   - With a leader: the dynamic configuration first (pg_hba with every member's address, a quorum no
//     larger than the members there are), then the members being removed go, the last first (a leader
//     among them hands over first, to a standby proven caught up), then each lost member is replaced and
//     each added one launched, in the configuration's order, one at a time.
//   - Then the configuration's full quorum, then the rolling replacement of outdated machines (nextRoll:
//     standbys first, a switchover, the old primary last; the cluster must be whole), then the restarts
//     of members whose PostgreSQL waits for one, standbys first and the leader last (the leader first when
//     it lowers a hot standby's limit: nextRestart).
//
// Where the members run no failover of their own (Cluster.EnginePromotes, the local platform), the rules
// before the restarts are the engine's instead (nextEngine): it promotes, starts, repoints, reseeds, adds,
// replaces and removes members itself, then changes their settings.
func Next(c Cluster) (s Step, done bool, err error) {
	if err := c.check(); err != nil {
		return Step{}, false, err
	}
	if s, ok := c.nextRenew(); ok {
		return s, false, nil
	}
	if c.EnginePromotes {
		return c.nextEngine()
	}
	live := c.filter(func(m Member) bool { return m.Machine == MachineLive })
	leader, hasLeader := c.leader()
	switch {
	case len(live) == 0 && !c.Formed:
		return c.form(), false, nil
	case len(live) == 0:
		var lost, nodes []string
		for _, m := range c.Members {
			if m.Wanted {
				lost = append(lost, fmt.Sprintf("%s (%s)", m.Name, orDefault(m.Why, "it has no machine")))
				nodes = append(nodes, m.Name)
			}
		}
		if err := restorable(c.Archive, strings.Join(lost, ", "), "its data went with its machines"); err != nil {
			return Step{}, false, err
		}
		return Step{Kind: StepRestore, Nodes: nodes, Reason: fmt.Sprintf(
			"every member is lost (%s), and the cluster's data is in its archive: every member is launched at once, and the one that "+
				"forms the new etcd cluster first is restored %s. It leads on the next timeline and continues the same archive; "+
				"the others are copied from it", strings.Join(lost, ", "), restoreExtent(c.Archive))}, false, nil
	case !hasLeader && !c.Formed:
		if missing := c.filter(func(m Member) bool { return m.Wanted && m.Machine != MachineLive }); len(missing) > 0 {
			return c.form(), false, nil
		}
		return Step{Kind: StepAwaitLeader, Reason: fmt.Sprintf("every member's machine runs (%s); Patroni forms the cluster and elects its leader", names(live))}, false, nil
	case !hasLeader:
		voters := c.filter(func(m Member) bool { return m.Etcd })
		liveVoters := c.filter(func(m Member) bool { return m.Etcd && m.Machine == MachineLive })
		if 2*len(liveVoters) > len(voters) {
			now := "no member leads now"
			if !c.ViewKnown && c.ViewError != "" {
				now = "no member is known to lead now (" + c.ViewError + ")"
			}
			return Step{Kind: StepAwaitLeader, Reason: fmt.Sprintf("%s; %s of the DCS's %d members live (%s), so Patroni elects a leader among the live members (%s)",
				now, count(len(liveVoters)), len(voters), names(liveVoters), names(live))}, false, nil
		}
		var gone []string
		var lost []Member
		for _, m := range c.Members {
			if m.Machine != MachineLive {
				gone = append(gone, fmt.Sprintf("%s (%s)", m.Name, orDefault(m.Why, "it has no machine")))
				lost = append(lost, m)
			}
		}
		takeover, why := c.takeover(live)
		if why == "" {
			return takeover, false, nil
		}
		return Step{}, false, fmt.Errorf("%w: no member leads, and only %s of the DCS's %d members live (%s) while %s are lost, so the DCS has no majority and Patroni cannot elect a leader. %s%s",
			ErrNoElection, count(len(liveVoters)), len(voters), names(liveVoters), strings.Join(gone, ", "), c.atRisk(live, lost), why)
	}

	if problems := c.notServing(leader.Name); !c.Formed && len(problems) > 0 &&
		!slices.ContainsFunc(c.Members, func(m Member) bool { return m.Wanted && m.Machine != MachineLive }) {
		return Step{Kind: StepAwaitMembers, Reason: fmt.Sprintf("the cluster is forming: %s leads, and %s", leader.Name, strings.Join(problems, "; "))}, false, nil
	}
	if c.ConfigError != "" {
		return Step{}, false, fmt.Errorf("the dynamic configuration cannot be read on the leader %s: %s", leader.Name, c.ConfigError)
	}
	pending := c.MembershipPending()
	if len(c.ConfigChanges) > 0 {
		reason := "Patroni's dynamic configuration differs from this configuration's: " + strings.Join(c.ConfigChanges, "; ")
		if pending {
			reason += " (while members are added, removed or replaced, the quorum asks no more of them than there are)"
		}
		return Step{Kind: StepConfigure, Reason: reason + "; every member reloads, and each whose PostgreSQL then waits for a restart is restarted after, standbys first"}, false, nil
	}
	// Members being removed go first, the last first, unless one leads: it goes once the members that stay
	// are there to take over.
	for i := len(c.Members) - 1; i >= 0; i-- {
		if m := c.Members[i]; !m.Wanted && m.Name != leader.Name {
			return Step{Kind: StepRemove, Node: m.Name, Reason: "the configuration no longer names it: its machine is terminated and its network interface deleted"}, false, nil
		}
	}
	for _, m := range c.Members {
		switch {
		case !m.Wanted || m.Machine == MachineLive:
		case m.Machine == MachineLost:
			return Step{Kind: StepReplace, Node: m.Name, Reason: orDefault(m.Why, "it has no machine") + "; a new machine joins as a standby on the same address, seeded from the archive or the leader"}, false, nil
		default:
			return Step{Kind: StepAdd, Node: m.Name, Reason: "the configuration adds it: a machine on its own network interface joins as a standby, seeded from the archive or the leader"}, false, nil
		}
	}
	if !slices.ContainsFunc(c.Members, func(m Member) bool { return m.Wanted && m.Name == leader.Name }) {
		target, why := c.handover(func(m Member) bool { return m.Wanted })
		if target == "" {
			return Step{Kind: StepAwaitHandover, Node: leader.Name, Reason: fmt.Sprintf("%s leads and is being removed, and no member that stays can take over yet (%s)", leader.Name, why)}, false, nil
		}
		return Step{Kind: StepSwitchover, Node: leader.Name, Target: target,
			Reason: fmt.Sprintf("%s leads and is being removed, so it first hands over to %s, the first member that stays and streams in the quorum at most %d bytes behind", leader.Name, target, c.MaxLagBytes)}, false, nil
	}
	if slices.ContainsFunc(c.Members, func(m Member) bool { return m.Wanted && len(m.Outdated) > 0 }) {
		s, _, err := c.nextRoll()
		if s.Kind == StepRoll {
			s.Reason += c.outdatedWhy(s.Node)
		}
		return s, false, err
	}
	return c.nextRestart(leader)
}

// MembershipPending reports whether members are still to be added, replaced or removed: while they are,
// the dynamic configuration is the transitional one.
func (c Cluster) MembershipPending() bool {
	return slices.ContainsFunc(c.Members, func(m Member) bool { return !m.Wanted || m.Machine != MachineLive })
}

// Counted reports whether a standby confirms commits for the quorum: streaming and counted by it, or only
// streaming when replication is asynchronous. It is the one definition the adapters use.
func Counted(streaming, inQuorum bool, syncNumber int) bool {
	return streaming && (inQuorum || syncNumber == 0)
}

func (c Cluster) check() error {
	if len(c.Members) == 0 {
		return errors.New("the cluster has no members")
	}
	var errs []error
	for i, m := range c.Members {
		if m.Name == "" {
			return fmt.Errorf("member %d has no name", i+1)
		}
		if slices.ContainsFunc(c.Members[:i], func(o Member) bool { return o.Name == m.Name }) {
			return fmt.Errorf("member %s was observed twice", m.Name)
		}
		switch m.Machine {
		case MachineLive, MachineLost, MachineAbsent:
		default:
			errs = append(errs, fmt.Errorf("member %s: machine %q: use %q, %q or %q", m.Name, m.Machine, MachineLive, MachineLost, MachineAbsent))
		}
		if m.Role != RolePrimary && m.Role != RoleStandby && m.Role != "" {
			errs = append(errs, fmt.Errorf("member %s: role %q: use %q, %q or \"\"", m.Name, m.Role, RolePrimary, RoleStandby))
		}
		if m.Machine != MachineLive && (m.Role != "" || len(m.Outdated) > 0 || len(m.PendingRestart) > 0 || m.CertDue != "") {
			errs = append(errs, fmt.Errorf("member %s: a member without a live machine has no role, is not outdated and waits for no restart or renewal", m.Name))
		}
		if m.Wanted && i > 0 && !c.Members[i-1].Wanted {
			errs = append(errs, fmt.Errorf("member %s: wanted members come before the members being removed", m.Name))
		}
	}
	if c.SyncNumber < 0 || c.MaxLagBytes < 0 {
		errs = append(errs, fmt.Errorf("synchronous number %d and lag limit %d: use 0 or more", c.SyncNumber, c.MaxLagBytes))
	}
	// Where the engine promotes, two primaries are observed as they are (a split brain, or a stopped former
	// primary) and the engine's rules refuse or repair them.
	if n := len(c.filter(func(m Member) bool { return m.Role == RolePrimary })); n > 1 && !c.EnginePromotes {
		errs = append(errs, fmt.Errorf("%d members lead: Patroni's view names one leader", n))
	}
	return errors.Join(errs...)
}

// notServing says which wanted members other than except neither lead nor confirm commits.
func (c Cluster) notServing(except string) []string {
	var out []string
	for _, m := range c.Members {
		switch {
		case !m.Wanted || m.Name == except:
		case m.Machine != MachineLive:
			out = append(out, m.Name+" has no machine")
		case !m.Running:
			out = append(out, m.Name+"'s PostgreSQL does not run")
		case m.Role == RolePrimary:
		case m.Role != RoleStandby || !Counted(m.Streaming, m.InQuorum, c.SyncNumber):
			out = append(out, m.Name+" does not stream in the quorum")
		}
	}
	return out
}

// leader is the member that leads: Patroni's leader, with a live machine, running.
func (c Cluster) leader() (Member, bool) {
	for _, m := range c.Members {
		if m.Role == RolePrimary && m.Machine == MachineLive && m.Running && c.ViewKnown {
			return m, true
		}
	}
	return Member{}, false
}

func (c Cluster) filter(keep func(Member) bool) []Member {
	var out []Member
	for _, m := range c.Members {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func (c Cluster) wantedNames() []string {
	var out []string
	for _, m := range c.Members {
		if m.Wanted {
			out = append(out, m.Name)
		}
	}
	return out
}

// form launches every wanted member without a live machine.
func (c Cluster) form() Step {
	var nodes []string
	for _, m := range c.Members {
		if m.Wanted && m.Machine != MachineLive {
			nodes = append(nodes, m.Name)
		}
	}
	reason := "a new cluster: etcd and Patroni form it from every member at once, and Patroni elects the leader"
	if slices.ContainsFunc(c.Members, func(m Member) bool { return m.Machine == MachineLive }) {
		reason = "the cluster never formed (its create stopped part-way): the members without a machine are launched at once, and Patroni forms it"
	}
	return Step{Kind: StepForm, Nodes: nodes, Reason: reason}
}

func (c Cluster) outdatedWhy(node string) string {
	for _, m := range c.Members {
		if m.Name == node && len(m.Outdated) > 0 {
			return " (" + strings.Join(m.Outdated, "; ") + ")"
		}
	}
	return ""
}

func names(ms []Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func count(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
