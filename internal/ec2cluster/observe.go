package ec2cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// observation is the cluster as AWS and Patroni show it.
type observation struct {
	enis map[string]ENI // by node
	// instances are each node's newest instance when it runs (or is starting); lost are the nodes whose
	// newest instance is gone, stopped, stopping or shutting down (their instance store is wiped), with why.
	instances map[string]Instance
	lost      map[string]string
	// others are instances of the cluster no node owns now, or older duplicates.
	others []Instance
	// patroni is GET /cluster, when a node answered (patroniErr says why not).
	patroni    patroniapi.Status
	patroniOK  bool
	patroniErr error
}

// lostStates are the EC2 states in which a node's instance store is gone or going.
var lostStates = []string{"shutting-down", "terminated", "stopping", "stopped"}

// observe reads the cluster's interfaces and instances, and Patroni's view from the nodes' addresses.
func (se *session) observe(ctx context.Context) (observation, error) {
	o := observation{enis: map[string]ENI{}, instances: map[string]Instance{}, lost: map[string]string{}}
	enis, err := se.cloud.ENIs(ctx, se.s.Name)
	if err != nil {
		return o, fmt.Errorf("listing the cluster's network interfaces: %w", err)
	}
	for _, e := range enis {
		o.enis[e.Tags[awsspec.TagNode]] = e
	}
	insts, err := se.cloud.Instances(ctx, se.s.Name)
	if err != nil {
		return o, fmt.Errorf("listing the cluster's instances: %w", err)
	}
	// A node's newest instance is its machine. Once that one is stopping, stopped, shutting down or
	// terminated the node is lost, whatever older instance of it EC2 still lists: EC2 launches no instance
	// on an interface another one holds, so an older instance that runs beside a newer one holds no node
	// (moto launches again for a repeated client token, and its Patroni never answers). Such strays are
	// others, which a replacement of the node terminates.
	slices.SortStableFunc(insts, func(a, b Instance) int { return b.LaunchTime.Compare(a.LaunchTime) }) // newest first
	decided := map[string]bool{}
	for _, in := range insts {
		node := in.Tags[awsspec.TagNode]
		if decided[node] || !slices.ContainsFunc(se.s.Nodes, func(n cluster.Node) bool { return n.Name == node }) {
			o.others = append(o.others, in)
			continue
		}
		decided[node] = true
		if slices.Contains(lostStates, in.State) {
			o.lost[node] = fmt.Sprintf("its instance %s is %s, and its instance store with it", in.ID, in.State)
			o.others = append(o.others, in)
			continue
		}
		o.instances[node] = in
	}
	for _, n := range se.s.Nodes {
		if _, ok := o.instances[n.Name]; !ok {
			if _, why := o.lost[n.Name]; !why {
				o.lost[n.Name] = "it has no instance"
			}
		}
	}
	var hosts []string
	for _, n := range se.s.Nodes {
		if e, ok := o.enis[n.Name]; ok {
			if _, live := o.instances[n.Name]; live {
				hosts = append(hosts, se.apiHost(e))
			}
		}
	}
	if len(hosts) == 0 {
		o.patroniErr = fmt.Errorf("no node has a running instance")
		return o, nil
	}
	var from string
	o.patroni, from, o.patroniErr = se.patroni.Cluster(ctx, hosts)
	o.patroniOK = o.patroniErr == nil
	if l, ok := o.patroni.Leader(); o.patroniOK && ok && !o.liveMachine(l.Name) {
		// A member that lost its DCS shows what it last knew (or the leader key has not expired yet):
		// nothing in the view can be trusted.
		o.patroniOK = false
		o.patroniErr = fmt.Errorf("the view of the cluster from %s names %s the leader, but %s's machine is lost: the view is stale", from, l.Name, l.Name)
	}
	return o, nil
}

// createdGroup is the security group the platform created, as the nodes' interfaces show it (they are in
// that group alone when the configuration names none); "" when no interface says, and the group must be
// looked up by name (one DescribeSecurityGroups a refresh spares).
func (o observation) createdGroup() string {
	group := ""
	for _, e := range o.enis {
		if len(e.Groups) != 1 || (group != "" && e.Groups[0] != group) {
			return ""
		}
		group = e.Groups[0]
	}
	return group
}

// runningProfile is the name of the instance profile every live instance runs with, "" when none runs or
// they differ (then it is looked up). The apply checks the profile itself before it launches.
func (o observation) runningProfile() string {
	name := ""
	for _, in := range o.instances {
		_, n, ok := strings.Cut(in.InstanceProfileARN, ":instance-profile/")
		if !ok || (name != "" && path.Base(n) != name) {
			return ""
		}
		name = path.Base(n)
	}
	return name
}

// apiHost is the address the provider reaches a node's REST API at.
func (se *session) apiHost(e ENI) string {
	if se.a.APIAddress == awsspec.APIAddressPublic && e.PublicIP != "" {
		return e.PublicIP
	}
	return e.PrivateIP
}

// members are the nodes as observed; prior roles stand in when Patroni could not be read.
func (se *session) members(o observation, prior []cluster.Member) ([]cluster.Member, []string) {
	var warnings []string
	priorRole := map[string]string{}
	for _, m := range prior {
		priorRole[m.Name] = m.Role
	}
	if !o.patroniOK && len(o.instances) > 0 {
		warnings = append(warnings, fmt.Sprintf("Patroni's REST API could not be read, so the nodes' roles are the last known ones and nothing is planned from them: %v", o.patroniErr))
	}
	var out []cluster.Member
	for _, n := range se.s.Nodes {
		m := cluster.Member{Name: n.Name, Zone: n.Zone, Port: bootstrap.DefaultEC2Port}
		if e, ok := o.enis[n.Name]; ok {
			m.Host = e.PrivateIP
		}
		in, live := o.instances[n.Name]
		switch {
		case !live:
			m.State = cluster.StateMissing
		case !o.patroniOK:
			m.State, m.Role = cluster.StateRunning, priorRole[n.Name]
		default:
			pm, listed := o.patroni.Member(n.Name)
			m.State = cluster.StateRunning
			switch {
			case !listed:
				m.State = cluster.StateStopped
				warnings = append(warnings, fmt.Sprintf("Node %s's instance %s is %s but Patroni does not list it (still booting, or PostgreSQL failed to start: see its console output).", n.Name, in.ID, in.State))
			case pm.Role == patroniapi.RoleLeader:
				m.Role = cluster.RolePrimary
			default:
				m.Role = cluster.RoleStandby
			}
			if listed && !postgresRuns(pm.State) {
				m.State = cluster.StateStopped
				warnings = append(warnings, fmt.Sprintf("Node %s's PostgreSQL is %q in Patroni's view, not running (Patroni restarts it; if it stays so, see the node's Patroni log).", n.Name, pm.State))
			}
		}
		out = append(out, m)
	}
	return out, warnings
}

// postgresRuns reports whether a member's state in GET /cluster is a running PostgreSQL: a leader
// running, a replica streaming or replaying the archive.
func postgresRuns(state string) bool {
	return state == patroniapi.StateRunning || state == patroniapi.StateStreaming || state == "in archive recovery"
}

// lagBytes is Patroni's lag (a number of bytes, or "unknown") or -1.
func lagBytes(raw json.RawMessage) int64 {
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return -1
	}
	return n
}

// whole reports whether the cluster has a running leader and every node streaming from it, counted by the
// quorum when the cluster replicates synchronously; why says what is missing.
func whole(st patroniapi.Status, nodes []string, syncNumber int) (ok bool, why string) {
	leader, found := st.Leader()
	if !found || leader.State != patroniapi.StateRunning {
		return false, "no running leader"
	}
	var missing []string
	for _, n := range nodes {
		if n == leader.Name {
			continue
		}
		m, ok := st.Member(n)
		switch {
		case !ok:
			missing = append(missing, n+" not listed")
		case m.State != patroniapi.StateStreaming:
			missing = append(missing, n+" "+m.State)
		case !topology.Counted(true, quorumRole(m.Role), syncNumber):
			missing = append(missing, n+" not in the quorum ("+m.Role+")")
		}
	}
	if len(missing) > 0 {
		return false, strings.Join(missing, ", ")
	}
	return true, ""
}

// synchronous reads synchronous_standby_names on the leader.
func (se *session) synchronous(ctx context.Context, leader *leaderSession) (string, error) {
	conn, err := leader.get(ctx)
	if err != nil {
		return "", err
	}
	return conn.Setting(ctx, "synchronous_standby_names")
}

// leaderSession is one session to an observation's leader, opened on first use and shared by every read
// of one status (synchronous_standby_names, the WAL position, the archiver's failures), so a refresh
// opens one session and reads the password once.
type leaderSession struct {
	se     *session
	o      observation
	conn   *pgclient.Conn
	err    error
	opened bool
}

func (se *session) leader(o observation) *leaderSession { return &leaderSession{se: se, o: o} }

func (l *leaderSession) get(ctx context.Context) (*pgclient.Conn, error) {
	if !l.opened {
		l.conn, l.err = l.se.leaderConn(ctx, l.o)
		l.opened = true
	}
	return l.conn, l.err
}

func (l *leaderSession) close(ctx context.Context) {
	if l.conn != nil {
		l.conn.Close(ctx)
	}
}

// superuserPassword is the superuser's password from SSM, read once per session.
func (se *session) superuserPassword(ctx context.Context) (string, error) {
	if se.superuser != "" {
		return se.superuser, nil
	}
	password, err := se.cloud.Secret(ctx, se.ssmNames().superuser)
	if err != nil {
		return "", fmt.Errorf("reading the superuser's password from SSM: %w", err)
	}
	se.superuser = password
	return password, nil
}

// leaderConn is a session to Patroni's leader: on a cluster with TLS as the provider's role
// (bootstrap.ProviderUser) by a client certificate issued for the session (providerLogin), else as the
// superuser with its password from SSM, over TLS verified against the cluster's authority when it has one.
func (se *session) leaderConn(ctx context.Context, o observation) (*pgclient.Conn, error) {
	leader, ok := o.patroni.Leader()
	if !o.patroniOK || !ok {
		return nil, fmt.Errorf("no leader is known")
	}
	e, ok := o.enis[leader.Name]
	if !ok {
		return nil, fmt.Errorf("the leader %s is no node of this cluster", leader.Name)
	}
	c := pgclient.Config{Host: se.apiHost(e), Port: bootstrap.DefaultEC2Port, Database: "postgres", SSLMode: "prefer"}
	if se.roots != nil {
		// The node's certificate names its addresses: verified as a client copying connection_uri would.
		c.SSLMode, c.RootCAs = "verify-full", se.roots
	}
	if se.ca != nil {
		conn, err := se.providerLogin(ctx, c)
		if err == nil || !pgclient.IsAuthenticationFailed(err) {
			return conn, err
		}
		// The role or its pg_hba line is not there yet (a cluster restored from one without it, or made
		// before the provider logged in so): the superuser, this once; the plan says the apply makes it.
		se.providerRoleMissing = true
		tflog.Warn(ctx, "the provider cannot log in by its certificate: logging in as the superuser", map[string]any{"error": err.Error()})
	}
	password, err := se.superuserPassword(ctx)
	if err != nil {
		return nil, err
	}
	c.User, c.Password = bootstrap.DefaultSuperuser, password
	return pgclient.Connect(ctx, c)
}

// archiveHealth reads the cluster's archive in its bucket (every WAL object and when it was written, the
// base backups) and the segment the leader writes, and judges them (archive.Assess) against
// archive_timeout and the nodes' backup schedule. nil without an archive in S3; without a leader, the
// WAL is left unjudged.
func (se *session) archiveHealth(ctx context.Context, leader *leaderSession) (*archive.Health, error) {
	loc, api, ok, err := se.archive(ctx)
	if !ok || err != nil {
		return nil, err
	}
	r := archive.Reading{Tool: loc.Tool, ArchiveTimeout: bootstrap.ArchiveTimeout(se.s.Parameters), BackupEvery: se.s.Archive.BackupPolicy().Interval(se.p.clock.Now())}
	if err := readArchive(ctx, api, loc, &r); err != nil {
		return nil, err
	}
	if r.Verification, err = awsclient.ReadArchiveVerification(ctx, api, loc); err != nil {
		return nil, err
	}
	if conn, err := leader.get(ctx); err == nil {
		pos, err := conn.WALPosition(ctx)
		failures, ferr := conn.ArchiverFailures(ctx)
		if lsn, lerr := topology.ParseLSN(pos.FlushLSN); err == nil && ferr == nil && lerr == nil && !pos.InRecovery {
			r.Current, r.Failures = archive.SegmentName(uint32(pos.Timeline), lsn), failures
		}
	}
	h := archive.Assess(r, se.p.clock.Now())
	return &h, nil
}

// readArchive reads the WAL objects and the base backups of the archive at loc into r.
func readArchive(ctx context.Context, api awsclient.ArchiveReaderAPI, loc archive.Location, r *archive.Reading) (err error) {
	if r.WAL, err = awsclient.ListArchiveWAL(ctx, api, loc); err != nil {
		return err
	}
	r.Backups, err = awsclient.ReadArchiveBackups(ctx, api, loc)
	return err
}

// status is the cluster's status from an observation.
func (se *session) status(ctx context.Context, o observation, prior []cluster.Member, t *target) cluster.Status {
	members, warnings := se.members(o, prior)
	st := cluster.Status{Members: members, PostgresMajor: major(se.s), Warnings: warnings, Leftovers: len(o.enis) > 0}
	as := &awsspec.Status{Region: se.region, AMIID: se.a.AMIID, InstanceIDs: map[string]string{}, NetworkInterfaceID: map[string]string{},
		PrivateIPs: map[string]string{}, SSMPath: awsspec.SSMPath(se.s.Name)}
	if t != nil && t.image.ID != "" {
		as.AMIID = t.image.ID
	}
	for node, e := range o.enis {
		as.NetworkInterfaceID[node], as.PrivateIPs[node] = e.ID, e.PrivateIP
	}
	for node, in := range o.instances {
		as.InstanceIDs[node] = in.ID
		if as.AMIID == "" {
			as.AMIID = in.AMI
		}
	}
	if len(se.a.SecurityGroupIDs) == 0 {
		as.SecurityGroupID = o.createdGroup()
		if as.SecurityGroupID == "" {
			if id, err := se.cloud.SecurityGroup(ctx, se.s.Name); err == nil {
				as.SecurityGroupID = id
			}
		}
	}
	if se.a.IAMInstanceProfile == "" {
		as.InstanceProfile = o.runningProfile()
		if as.InstanceProfile == "" {
			if name, err := se.cloud.InstanceProfile(ctx, se.s.Name); err == nil {
				as.InstanceProfile = name
			}
		}
	}
	if se.a.LoadBalancer {
		lb, err := se.cloud.LoadBalancer(ctx, se.s.Name)
		switch {
		case err == nil:
			as.LoadBalancerDNSName = lb.DNSName
		case !errors.Is(err, ErrNotFound):
			st.Warnings = append(st.Warnings, fmt.Sprintf("the load balancer could not be read: %v", err))
		}
	}
	st.Platform = as
	leader := se.leader(o)
	defer leader.close(ctx)
	if o.patroniOK {
		ssn, err := se.synchronous(ctx, leader)
		if err != nil {
			st.Warnings = append(st.Warnings, fmt.Sprintf("synchronous_standby_names could not be read on the leader: %v", err))
		} else {
			st.SynchronousKnown, st.SynchronousStandbyNames = true, ssn
			counted := 0
			for _, m := range o.patroni.Members {
				if m.Role != patroniapi.RoleLeader && topology.Counted(m.State == patroniapi.StateStreaming, quorumRole(m.Role), se.s.Synchronous.Number) {
					counted++
				}
			}
			st.Degraded = counted < se.s.Synchronous.Number
		}
	}
	var err error
	if st.Archive, err = se.archiveHealth(ctx, leader); err != nil {
		st.Warnings = append(st.Warnings, fmt.Sprintf("The archive could not be read, so archive_status is unknown (null): %v", err))
	}
	if st.Restored, err = se.restored(ctx); err != nil {
		st.Warnings = append(st.Warnings, fmt.Sprintf("What the restore that created the cluster did could not be read from its archive: %v", err))
	}
	if o.patroniOK {
		patch, _, _, err := se.configChanges(ctx, o, t, false)
		pending, _, warnings := se.pendingRestart(ctx, o)
		st.Warnings = append(st.Warnings, warnings...)
		for _, n := range se.s.Nodes {
			if _, p := pending[n.Name]; p {
				as.PendingRestart = append(as.PendingRestart, n.Name)
			}
		}
		if err != nil {
			st.Warnings = append(st.Warnings, fmt.Sprintf("Patroni's dynamic configuration could not be read: %v", err))
		} else {
			as.ConfigKnown, as.ConfigApplied = len(warnings) == 0, patch == nil && len(pending) == 0
		}
	}
	if st.TLS, err = se.tlsStatus(ctx, o); err != nil {
		st.Warnings = append(st.Warnings, fmt.Sprintf("The cluster's certificates could not be read, so tls.not_after is unknown: %v", err))
	}
	tflog.Debug(ctx, "observed the cluster", map[string]any{"instances": len(o.instances), "lost": slices.Sorted(maps.Keys(o.lost)), "patroni": o.patroniOK})
	return st
}

// ssmNames are the cluster's password parameters.
type ssmNames struct{ superuser, replication, restapi string }

func (se *session) ssmNames() ssmNames {
	su, repl, rest := awsspec.SSMParameterNames(se.s.Name)
	return ssmNames{superuser: su, replication: repl, restapi: rest}
}
