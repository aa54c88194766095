package ec2cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// ensure makes what the instances need, reusing what exists (an interrupted apply resumes): the security
// group (unless given), one interface per node (with an Elastic IP for api_address = "public_ip"), the
// passwords, the instance profile (unless given). It returns the nodes' addresses by name.
func (se *session) ensure(ctx context.Context, t target, o *observation) (groups []string, profile string, addrs map[string]string, err error) {
	groups = se.a.SecurityGroupIDs
	if len(groups) == 0 {
		id, err := se.cloud.SecurityGroup(ctx, se.s.Name)
		if errors.Is(err, ErrNotFound) {
			tflog.Info(ctx, "creating the cluster's security group", map[string]any{"vpc": t.vpcID})
			id, err = se.cloud.CreateSecurityGroup(ctx, se.s.Name, t.vpcID, t.allowed, se.tags(""))
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("the cluster's security group: %w", err)
		}
		groups = []string{id}
	}
	addrs = map[string]string{}
	for i, n := range se.s.Nodes {
		e, ok := o.enis[n.Name]
		if !ok {
			tags := se.tags(n.Name)
			tags["pgnvme:priority"] = strconv.Itoa(i)
			tflog.Info(ctx, "creating the node's network interface", map[string]any{"node": n.Name, "subnet": t.subnets[n.Zone].ID})
			e, err = se.cloud.CreateENI(ctx, t.subnets[n.Zone].ID, groups, "pgnvme "+se.s.Name+" "+n.Name, tags)
			if err != nil {
				return nil, "", nil, fmt.Errorf("creating the network interface of node %s: %w", n.Name, err)
			}
			o.enis[n.Name] = e
		}
		if se.a.APIAddress == awsspec.APIAddressPublic {
			if e.PublicIP, err = se.cloud.PublicIP(ctx, e.ID, se.tags(n.Name)); err != nil {
				return nil, "", nil, fmt.Errorf("the public address of node %s: %w", n.Name, err)
			}
			o.enis[n.Name] = e
		}
		addrs[n.Name] = e.PrivateIP
	}
	if se.a.APIAddress != awsspec.APIAddressPublic {
		// Those of api_address = "public_ip" before, if any.
		if err := se.cloud.ReleasePublicIPs(ctx, se.s.Name, ""); err != nil {
			return nil, "", nil, fmt.Errorf("releasing the Elastic IPs: %w", err)
		}
	}
	names := se.ssmNames()
	for _, name := range []string{names.superuser, names.replication, names.restapi} {
		if err := se.cloud.PutSecret(ctx, name, password(), se.tags("")); err != nil {
			return nil, "", nil, fmt.Errorf("storing the password parameter %s: %w", name, err)
		}
	}
	doc, err := encodeSpec(se.s)
	if err != nil {
		return nil, "", nil, err
	}
	if err := se.cloud.PutParameter(ctx, specParameter(se.s.Name), doc, se.tags("")); err != nil {
		return nil, "", nil, fmt.Errorf("storing the cluster's configuration: %w", err)
	}
	profile = se.a.IAMInstanceProfile
	if profile == "" {
		profile, err = se.cloud.InstanceProfile(ctx, se.s.Name)
		if errors.Is(err, ErrNotFound) {
			tflog.Info(ctx, "creating the nodes' instance role and profile")
			profile, err = se.cloud.CreateInstanceProfile(ctx, se.s.Name, se.region, awsspec.SSMPath(se.s.Name), se.a.NodePolicyJSON, se.tags(""))
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("the nodes' instance profile: %w", err)
		}
	}
	return groups, profile, addrs, nil
}

// hadLoadBalancer reports whether the configuration last applied asked for a load balancer, so that an
// apply without one calls the load balancing API only to remove one: the state's configuration, or, when
// the state has none (a create resumed after an interruption), the one the interrupted apply kept.
func (se *session) hadLoadBalancer(ctx context.Context, prior cluster.Prior) (bool, error) {
	if prior.Spec != nil {
		return awsspec.Of(*prior.Spec).WantsLoadBalancer(), nil
	}
	return se.keptLoadBalancer(ctx)
}

// keptLoadBalancer reports whether the configuration kept in SSM (by the last apply that got as far as
// writing it) asked for a load balancer.
func (se *session) keptLoadBalancer(ctx context.Context) (bool, error) {
	v, err := se.cloud.Parameter(ctx, specParameter(se.s.Name))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the configuration last applied: %w", err)
	}
	last, err := decodeSpec(v)
	if err != nil {
		return false, err
	}
	return awsspec.Of(last).WantsLoadBalancer(), nil
}

// ensureLoadBalancer creates or completes the load balancer when aws.load_balancer asks for one (its
// targets are the interfaces' addresses, which replacements keep), and removes it when the configuration
// last applied had one and this one has not.
func (se *session) ensureLoadBalancer(ctx context.Context, t target, addrs map[string]string, had bool) error {
	if !se.a.LoadBalancer {
		if !had {
			return nil
		}
		if err := se.cloud.DeleteLoadBalancer(ctx, se.s.Name); err != nil {
			return fmt.Errorf("removing the load balancer: %w", err)
		}
		return nil
	}
	var subnets, ips []string
	for _, n := range se.s.Nodes {
		subnets = append(subnets, t.subnets[n.Zone].ID)
		ips = append(ips, addrs[n.Name])
	}
	tflog.Info(ctx, "ensuring the load balancer", map[string]any{"targets": ips})
	if _, err := se.cloud.EnsureLoadBalancer(ctx, se.s.Name, subnets, ips, se.s.TLS != nil, se.tags("")); err != nil {
		return fmt.Errorf("the load balancer: %w", err)
	}
	return nil
}

// password is a new random password: 32 characters of [a-zA-Z0-9] (no character a shell, YAML or a
// libpq URI would need to quote).
func password() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// launch starts node's instance on its interface (after the interface is free) and waits until it runs.
// replaced is the instance it replaces ("" for a first launch): with the fingerprint it makes the client
// token, so a retried apply does not launch twice.
func (se *session) launch(ctx context.Context, t target, node string, eni ENI, m machines, replaced string) (Instance, error) {
	if err := se.cloud.WaitENIAvailable(ctx, eni.ID, se.p.timeouts.Terminate); err != nil {
		return Instance{}, fmt.Errorf("waiting for node %s's network interface %s to come free: %w", node, eni.ID, err)
	}
	tags := se.tags(node)
	l := m.launches[node]
	maps.Copy(tags, l.Tags())
	sum := sha256.Sum256([]byte(se.s.Name + "/" + node + "/" + l.Fingerprint() + "/" + replaced))
	spec := RunSpec{
		ClientToken: "pgnvme-" + hex.EncodeToString(sum[:16]), Launch: l, ENIID: eni.ID,
		InstanceProfile: m.profile, UserData: m.userData[node], RootDeviceName: t.image.RootDeviceName, Tags: tags,
	}
	tflog.Info(ctx, "launching the node's instance", map[string]any{"node": node, "type": se.a.InstanceType, "zone": eni.Zone, "replaces": replaced})
	id, err := se.cloud.RunInstance(ctx, spec)
	if err != nil {
		if errors.Is(err, ErrInsufficientCapacity) {
			return Instance{}, fmt.Errorf("EC2 has no capacity for %s in zone %s now (node %s). pgnvme does not move a node to another zone on its own: "+
				"placement is yours. Apply again later, or choose another instance type or zone: %w", se.a.InstanceType, eni.Zone, node, err)
		}
		return Instance{}, fmt.Errorf("launching node %s: %w", node, err)
	}
	in, err := se.cloud.WaitRunning(ctx, id, se.p.timeouts.Launch)
	if err != nil {
		return Instance{}, fmt.Errorf("waiting for node %s's instance %s to run: %w", node, id, err)
	}
	return in, nil
}

// waitBack waits until the new instance of node answers on its own REST API as a running replica that
// streams, with a PostgreSQL started after the instance was launched (the old machine may still answer at
// the address for a moment, and the cluster's member list can show it until its key expires), then until
// the leader counts it in the quorum. Not until the cluster is whole: another lost member is the engine's
// next step (after a double loss the first replacement would wait for the second).
func (se *session) waitBack(ctx context.Context, node string, e ENI, launched time.Time) error {
	host := se.apiHost(e)
	var last string
	err := wait.Until(ctx, "node "+node+"'s new instance to stream from the primary", se.p.timeouts.Healthy, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		st, err := se.patroni.Node(ctx, host)
		if err != nil {
			last = err.Error()
			return false, wait.NotYet(err)
		}
		last = fmt.Sprintf("state %q, role %q, replication %q, PostgreSQL started %s", st.State, st.Role, st.ReplicationState, st.PostmasterStartTime)
		return st.StartedAfter(launched) && st.State == "running" && st.Role == "replica" && st.ReplicationState == "streaming", nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return se.waitStreaming(ctx, []string{node}, "node "+node+" to be back in the quorum")
}

// waitWhole waits until Patroni shows a running leader and every node streaming in the quorum.
func (se *session) waitWhole(ctx context.Context, what string) error {
	return se.waitStreaming(ctx, se.s.NodeNames(), what)
}

// waitStreaming waits until Patroni shows a running leader and each of nodes (but the leader) streaming
// in the quorum.
func (se *session) waitStreaming(ctx context.Context, nodes []string, what string) error {
	return se.waitStreamingOr(ctx, nodes, what, se.p.timeouts.Healthy, nil)
}

// waitStreamingOr is waitStreaming for at most timeout that also gives up when stop, asked at every poll,
// returns an error.
func (se *session) waitStreamingOr(ctx context.Context, nodes []string, what string, timeout time.Duration, stop func(context.Context) error) error {
	var last string
	err := wait.Until(ctx, what, timeout, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		if stop != nil {
			if err := stop(ctx); err != nil {
				return false, err
			}
		}
		o, err := se.observe(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if !o.patroniOK {
			last = o.patroniErr.Error()
			return false, nil
		}
		ok, why := whole(o.patroni, nodes, se.s.Synchronous.Number)
		last = why
		return ok, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return err
}

// Create builds the cluster: interfaces, passwords, security group and profile, then one instance per
// node, then waits until Patroni has a leader and every standby streams in the quorum. Run again after an
// interruption, it reuses what exists.
func (p *Platform) Create(ctx context.Context, s cluster.Spec) (cluster.Status, error) {
	return p.apply(ctx, s, cluster.Prior{})
}

// Update makes the cluster the spec's one step at a time, as topology.Next decides (converge): Patroni's
// dynamic configuration (parameters, timings, quorum), removed nodes, lost and added ones one at a time,
// the rolling replacement of outdated nodes (standbys first, a switchover, the old primary last), then the
// restarts of nodes whose PostgreSQL waits for one (standbys first). A node is outdated when what its
// machine was launched with (awsspec.Launch: instance type, AMI, root volume, key pair, user-data) differs
// from what the configuration asks now.
func (p *Platform) Update(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error) {
	return p.apply(ctx, s, prior)
}

func (p *Platform) apply(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error) {
	se, err := p.open(ctx, s)
	if err != nil {
		return cluster.Status{}, err
	}
	t, err := se.resolve(ctx)
	if err != nil {
		return cluster.Status{}, err
	}
	o, err := se.observe(ctx)
	if err != nil {
		return cluster.Status{}, err
	}
	if len(prior.Members) == 0 && len(o.enis) == 0 && len(o.instances) == 0 {
		if err := se.startArchiving(ctx); err != nil {
			return cluster.Status{}, err
		}
	}
	// A cluster created from another archive: its restore, planned again from what that archive holds
	// now, before anything is made. Every node forms with it (a node without it would run initdb).
	var clone *cluster.RestorePlan
	if s.Restore != nil && len(prior.Members) == 0 {
		rp, err := se.restorePlan(ctx)
		if err != nil {
			return cluster.Status{}, err
		}
		tflog.Info(ctx, "the cluster is restored from another archive", map[string]any{"restore": se.restoreSummary(rp)})
		clone = &rp
	}
	hadLB, err := se.hadLoadBalancer(ctx, prior)
	if err != nil {
		return cluster.Status{}, err
	}
	result := func(err error) (cluster.Status, error) {
		if o2, oerr := se.observe(ctx); oerr == nil {
			o = o2
		}
		return se.status(ctx, o, prior.Members, &t), err
	}
	// What no step can change (every member lost without a backup to restore, no election possible) stops
	// the apply before it makes or changes anything.
	if err := se.checkTLSChange(ctx, prior); err != nil {
		return result(err)
	}
	in := engineInput{known: prior.MemberNames()}
	se.readLoss(ctx, o, &in)
	if _, _, err := topology.Next(se.engineMembers(o, in)); errors.Is(err, topology.ErrDataLost) || errors.Is(err, topology.ErrNoElection) {
		return result(stop(ctx, err))
	}
	groups, profile, addrs, err := se.ensure(ctx, t, &o)
	if err != nil {
		return result(err)
	}
	for _, e := range o.enis {
		if len(se.a.SecurityGroupIDs) > 0 && !sameSet(e.Groups, groups) {
			if err := se.cloud.SetENISecurityGroups(ctx, e.ID, groups); err != nil {
				return result(fmt.Errorf("setting the security groups of %s: %w", e.ID, err))
			}
		}
	}
	if err := se.ensureLoadBalancer(ctx, t, addrs, hadLB); err != nil {
		return result(err)
	}
	// The certificates before any launch: a node reads its own at boot.
	if err := se.ensureTLS(ctx, o); err != nil {
		return result(err)
	}
	userData, launches, err := se.render(t, addrs)
	if err != nil {
		return result(err)
	}
	m := machines{profile: profile, userData: userData, launches: launches,
		restore: func() (map[string][]byte, error) { return se.renderRestore(t, addrs) },
		forming: func() (map[string][]byte, error) { return se.renderForm(t, addrs) }}
	if clone != nil {
		if m.form, err = se.renderClone(t, addrs, *clone); err != nil {
			return result(err)
		}
		m.formWait = cluster.RestoreWait(se.p.timeouts.Healthy, clone.Backup.Size, clone.WALBytes)
	}
	if err := se.converge(ctx, t, in, m); err != nil {
		return result(err)
	}
	if err := se.ensureProviderRole(ctx); err != nil {
		return result(err)
	}
	return result(nil)
}

// replacedID is the instance a launch of node replaces: its lost instance, if one is still listed.
func replacedID(o observation, node string) string {
	for _, in := range o.others {
		if in.Tags[awsspec.TagNode] == node {
			return in.ID
		}
	}
	return ""
}

// launchedAt is when EC2 launched in (its own clock, which the node's is synchronised with), else since.
func launchedAt(in Instance, since time.Time) time.Time {
	if !in.LaunchTime.IsZero() {
		return in.LaunchTime
	}
	return since
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}
