package ec2cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// The decisions are topology's (topology.Next for the apply, topology.Steps for the plan): this file maps
// what the platform observes to the engine's cluster, once, in one place.

// engineInput is what the mapping needs beyond the observation.
type engineInput struct {
	// known are the members the state records (none for a cluster not created yet): when there are, the
	// cluster has formed and held data, and a known member without a machine has lost its data.
	known []string
	// launches are what each node's machine is launched with now (nil when not rendered: no node is
	// then outdated).
	launches map[string]awsspec.Launch
	// t is the resolved target, when there is one (the client networks for the dynamic configuration).
	t *target
	// lenientConfig turns a dynamic configuration that cannot be read into a configure step (for the
	// plan, which says so) instead of an error (for the apply, which cannot go on without it).
	lenientConfig bool
	// archive is what the archive holds when the decision rests on it (see readLoss), else nil;
	// restoreWait how long a restore to its end may take (cluster.RestoreWaitOf).
	archive     *topology.ArchiveEnd
	restoreWait time.Duration
	// wal is how far each live member holds WAL, and walErrors why it could not be read, when no leader
	// can be elected (see readLoss); nil otherwise.
	wal       map[string]topology.WAL
	walErrors map[string]string
	// tls is the certificates' decision on the observation the step is decided on (viewTLS): why each
	// running node's are renewed (its due), and what its renewal then issues; zero without TLS.
	tls tlsView
}

// readLoss reads what the engine's decision rests on when members are lost beyond what Patroni handles
// (topology.Cluster.NeedsArchive): what the cluster's archive holds (the newest base backup and the newest
// segment, from the bucket: archiveHealth) when every member is lost (it is restored from it) or no leader
// can be elected, and then also how far each live member holds WAL (its own Patroni's GET /patroni, which
// needs no DCS), for the refusal to say what may be lost. What cannot be read is logged and left unread;
// the engine then says so.
func (se *session) readLoss(ctx context.Context, o observation, in *engineInput) {
	c := se.engineMembers(o, *in)
	if !c.NeedsArchive() {
		return
	}
	if c.ElectionImpossible() {
		in.wal, in.walErrors = map[string]topology.WAL{}, map[string]string{}
		for _, m := range c.Members {
			e, ok := o.enis[m.Name]
			if m.Machine != topology.MachineLive || !ok {
				continue
			}
			st, err := se.patroni.Node(ctx, se.apiHost(e))
			if err != nil {
				in.walErrors[m.Name] = err.Error()
				continue
			}
			w := nodeWAL(st)
			in.wal[m.Name] = w
			tflog.Info(ctx, "no leader can be elected: read a survivor's WAL position", map[string]any{
				"node": m.Name, "received": topology.FormatLSN(w.Received), "replayed": topology.FormatLSN(w.Replayed), "timeline": w.Timeline})
		}
	}
	if se.s.Archive == nil {
		return
	}
	leader := se.leader(o)
	defer leader.close(ctx)
	h, err := se.archiveHealth(ctx, leader)
	if err != nil || h == nil {
		tflog.Warn(ctx, "members are lost, and the archive could not be read", map[string]any{"error": fmt.Sprint(err)})
		return
	}
	in.archive, in.restoreWait = cluster.ArchiveEnd(*h), cluster.RestoreWaitOf(se.p.timeouts.Healthy, *h)
	tflog.Info(ctx, "members are lost: read the archive's end", map[string]any{
		"backup": in.archive.Backup, "last_wal": in.archive.LastWAL, "hole": in.archive.Hole})
}

// nodeWAL is how far a node holds WAL as its own Patroni reports it: a standby's received and replayed
// positions, a primary's flush position for both.
func nodeWAL(st patroniapi.NodeState) topology.WAL {
	w := topology.WAL{Received: st.XLog.ReceivedLocation, Replayed: st.XLog.ReplayedLocation, Timeline: st.Timeline}
	if st.XLog.Location > 0 {
		w.Received, w.Replayed = st.XLog.Location, st.XLog.Location
	}
	return w
}

// trustedView reports whether Patroni's view can be believed (observe distrusts a stale one), and why not.
func (o observation) trustedView() (bool, string) {
	switch {
	case o.patroniOK:
		return true, ""
	case o.patroniErr != nil:
		return false, o.patroniErr.Error()
	}
	return false, "Patroni's view was not read"
}

// liveMachine reports whether node's machine runs (or is starting), in or out of the spec: its newest
// instance, as observe decides for the spec's nodes (an older one that runs is a stray, not its machine).
func (o observation) liveMachine(node string) bool {
	if _, ok := o.instances[node]; ok {
		return true
	}
	if _, inSpec := o.lost[node]; inSpec {
		return false
	}
	i := slices.IndexFunc(o.others, func(in Instance) bool { return in.Tags[awsspec.TagNode] == node }) // newest first
	return i >= 0 && !slices.Contains(lostStates, o.others[i].State)
}

// engine is the cluster as the decision engine sees it: engineMembers, with what only the live nodes'
// Patroni can say (pending restarts, the dynamic configuration's changes).
func (se *session) engine(ctx context.Context, o observation, in engineInput) topology.Cluster {
	c := se.engineMembers(o, in)
	if !c.ViewKnown {
		return c
	}
	pending, lowers, _ := se.pendingRestart(ctx, o)
	for i := range c.Members {
		if c.Members[i].Role != "" {
			c.Members[i].PendingRestart, c.Members[i].RestartLowers = pending[c.Members[i].Name], lowers[c.Members[i].Name]
		}
	}
	if _, led := o.patroni.Leader(); led {
		se.engineConfig(ctx, o, in, &c)
	}
	return c
}

// engineMembers are the members from the observation alone (no further call): enough for the outcomes
// no step can change (every member lost, no election possible), which Next decides before anything else.
func (se *session) engineMembers(o observation, in engineInput) topology.Cluster {
	c := topology.Cluster{SyncNumber: se.s.Synchronous.Number, MaxLagBytes: se.maxLag(), Formed: len(in.known) > 0, Archive: in.archive,
		AcceptLossAt: se.s.AcceptDataLossAtLSN}
	c.ViewKnown, c.ViewError = o.trustedView()
	etcd := bootstrap.DefaultEtcdMembers(len(se.s.Nodes))
	member := func(node string, wanted bool, i int) topology.Member {
		m := topology.Member{Name: node, Wanted: wanted, Etcd: wanted && i < etcd, Machine: topology.MachineAbsent, LagBytes: -1}
		inst, live := o.instances[node]
		switch {
		case live || (!wanted && o.liveMachine(node)):
			m.Machine = topology.MachineLive
		case o.lost[node] != "" && (slices.Contains(in.known, node) || o.hadInstance(node)):
			m.Machine, m.Why = topology.MachineLost, o.lost[node]
		case !wanted:
			m.Machine, m.Why = topology.MachineLost, "it has only its network interface left"
		}
		if live && in.launches != nil {
			m.Outdated = in.launches[node].Changes(inst.Type, inst.AMI, inst.Tags)
		}
		if w, ok := in.wal[node]; ok {
			m.WAL = &w
		}
		m.WALError = in.walErrors[node]
		if m.Machine == topology.MachineLive {
			m.CertDue = in.tls.due[node]
		}
		if m.Machine != topology.MachineLive || !c.ViewKnown {
			return m
		}
		pm, listed := o.patroni.Member(node)
		if !listed {
			return m
		}
		m.Role = topology.RoleStandby
		if pm.Role == patroniapi.RoleLeader {
			m.Role = topology.RolePrimary
		}
		m.Running = postgresRuns(pm.State)
		m.Streaming = m.Role == topology.RoleStandby && pm.State == patroniapi.StateStreaming
		m.InQuorum = m.Streaming && quorumRole(pm.Role)
		if m.Role == topology.RolePrimary {
			m.LagBytes = 0
		} else {
			m.LagBytes = lagBytes(pm.Lag)
		}
		return m
	}
	for i, n := range se.s.Nodes {
		c.Members = append(c.Members, member(n.Name, true, i))
	}
	for _, node := range se.removed(o) {
		c.Members = append(c.Members, member(node, false, 0))
	}
	return c
}

// engineConfig fills the dynamic configuration's changes: the transitional ones while members are added,
// replaced or removed, and those left for after.
func (se *session) engineConfig(ctx context.Context, o observation, in engineInput, c *topology.Cluster) {
	transitional := c.MembershipPending()
	d, err := se.configDiff(ctx, o, in.t)
	var now []string
	if err == nil {
		_, now = d.patch(transitional)
		if transitional {
			_, full := d.patch(false)
			c.ConfigLater = slices.DeleteFunc(full, func(s string) bool { return slices.Contains(now, s) })
		}
	}
	switch {
	case err != nil && in.lenientConfig:
		c.ConfigChanges = []string{fmt.Sprintf("where it differs from this configuration's (it could not be read now: %v)", err)}
	case err != nil:
		c.ConfigError = err.Error()
	default:
		c.ConfigChanges = now
	}
	if len(c.ConfigLater) == 0 {
		c.ConfigLater = nil
	}
}

// hadInstance reports whether node has an instance of any state (a lost one among them).
func (o observation) hadInstance(node string) bool {
	if _, ok := o.instances[node]; ok {
		return true
	}
	return slices.ContainsFunc(o.others, func(in Instance) bool { return in.Tags[awsspec.TagNode] == node })
}

// quorumRole reports whether a Patroni role is one the leader's synchronous quorum counts.
func quorumRole(role string) bool {
	return role == patroniapi.RoleQuorumStandby || role == patroniapi.RoleSyncStandby
}
