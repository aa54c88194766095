package ec2cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Plan checks the spec against AWS and says what the apply will do: for a new cluster that it can be
// created (subnets, type, zones, AMI); for an existing one which lost nodes it replaces and, when
// instances must change, the rolling replacement's order, and the changes to Patroni's dynamic
// configuration (parameters, timings, quorum) with the restarts they need.
func (p *Platform) Plan(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Plan, error) {
	se, err := p.open(ctx, s)
	if err != nil {
		return cluster.Plan{}, err
	}
	t, err := se.resolve(ctx)
	if err != nil {
		return cluster.Plan{}, err
	}
	if err := se.checkArchiveBucket(ctx); err != nil {
		return cluster.Plan{}, err
	}
	plan := cluster.Plan{PostgresMajor: major(s), Platform: &awsspec.Status{Region: se.region, AMIID: t.image.ID, SSMPath: awsspec.SSMPath(s.Name)}}
	o, err := se.observe(ctx)
	if err != nil {
		return cluster.Plan{}, err
	}
	if err := se.checkTLSChange(ctx, prior); err != nil {
		return cluster.Plan{}, err
	}
	if len(prior.Members) == 0 {
		if err := se.planTLS(ctx, &plan, o, false, tlsView{}); err != nil {
			return cluster.Plan{}, err
		}
		if awsspec.Of(s).IAMInstanceProfile == "" && len(o.enis) == 0 {
			// IAM is global: the role and profile pgnvme-<name> of a cluster of the same name in another
			// region (or left behind) would be taken over, its SSM policy rewritten, and removed with this one.
			if _, err := se.cloud.InstanceProfile(ctx, s.Name); err == nil {
				return cluster.Plan{}, cluster.Errorf([]string{"name"}, "Instance Profile Exists",
					"The IAM role and instance profile pgnvme-%s exist already, but no network interface of a cluster %q does in %s: "+
						"they belong to a cluster of the same name in another region, or were left behind. IAM names are global, so this "+
						"cluster would take them over. Choose another name, give aws.iam_instance_profile, or delete the leftover role and profile.",
					s.Name, s.Name, se.region)
			} else if !errors.Is(err, ErrNotFound) {
				return cluster.Plan{}, err
			}
		}
		// What only a rendering can tell, the user-data's size, before anything is made.
		if _, _, err := se.render(t, standInAddrs(s)); err != nil {
			return cluster.Plan{}, err
		}
		restore := ""
		if s.Restore != nil {
			rp, err := se.restorePlan(ctx)
			if err != nil {
				return cluster.Plan{}, err
			}
			restore = se.restoreSummary(rp)
		}
		if len(o.enis) == 0 && len(o.instances) == 0 {
			if err := se.startArchiving(ctx); err != nil {
				return cluster.Plan{}, err
			}
			plan.Actions = restore
		} else {
			launches, err := se.launchesIfAddressed(t, o)
			if err != nil {
				return cluster.Plan{}, err
			}
			steps, _ := plannedSteps(se.engine(ctx, o, engineInput{launches: launches, t: &t, lenientConfig: true}))
			plan.Actions = fmt.Sprintf("resume: %d network interfaces and %d instances tagged %s=%s exist already (an interrupted apply?); the apply reuses them. "+
				"If they belong to another cluster of the same name, choose another name. Then:\n%s", len(o.enis), len(o.instances), awsspec.TagCluster, s.Name, steps)
			if restore != "" {
				plan.Actions += "\nThe nodes still to launch: " + restore
			}
		}
		for i, n := range s.Nodes {
			role := cluster.RoleStandby
			if i == 0 {
				role = cluster.RolePrimary
			}
			plan.Members = append(plan.Members, cluster.Member{Name: n.Name, Zone: n.Zone, Role: role, State: cluster.StateRunning, Port: bootstrap.DefaultEC2Port})
		}
		plan.Promoting = true // the addresses come with the interfaces, and Patroni elects the leader
		return plan, nil
	}
	if _, _, err := awsspec.NodeListChange(prior.MemberNames(), s.NodeNames()); err != nil {
		return cluster.Plan{}, err
	}
	for _, n := range s.Nodes {
		if _, ok := o.enis[n.Name]; !ok {
			plan.Promoting = true // a new interface, a new address
		}
	}
	launches, err := se.launchesIfAddressed(t, o)
	if err != nil {
		return cluster.Plan{}, err
	}
	v, err := se.viewTLS(ctx, o)
	if err != nil {
		return cluster.Plan{}, err
	}
	var steps []topology.Step
	in := engineInput{known: prior.MemberNames(), launches: launches, t: &t, lenientConfig: true, tls: v}
	se.readLoss(ctx, o, &in)
	plan.Actions, steps = plannedSteps(se.engine(ctx, o, in))
	for _, st := range steps {
		switch st.Kind {
		case topology.StepAdd, topology.StepRemove:
			plan.Membership, plan.Replaces = true, true
		case topology.StepForm, topology.StepRestore, topology.StepReplace, topology.StepRoll:
			plan.Replaces = true
		}
		if st.Kind == topology.StepSwitchover || st.Kind == topology.StepAwaitLeader || st.Kind == topology.StepForm || st.Kind == topology.StepRestore || st.Kind == topology.StepTakeOver {
			plan.Promoting = true
		}
	}
	if err := se.planTLS(ctx, &plan, o, true, v); err != nil {
		return cluster.Plan{}, err
	}
	members, _ := se.members(o, prior.Members)
	for i := range members {
		members[i].State = cluster.StateRunning
		if members[i].Role == "" {
			members[i].Role = cluster.RoleStandby
		}
	}
	plan.Members = members
	return plan, nil
}

// Read observes the cluster: its instances in EC2 and Patroni's view. A node whose instance is gone or
// stopped is missing (its instance store is wiped); an unreachable REST API is a warning only.
func (p *Platform) Read(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error) {
	se, err := p.open(ctx, s)
	if err != nil {
		return cluster.Status{}, err
	}
	o, err := se.observe(ctx)
	if err != nil {
		return cluster.Status{}, err
	}
	return se.status(ctx, o, prior.Members, nil), nil
}

// Delete terminates the instances and removes the interfaces, and what the platform created (security
// group, instance role and profile, password parameters); never the archive. It refuses while
// deletion_protection is set.
func (p *Platform) Delete(ctx context.Context, s cluster.Spec, _ cluster.Prior) error {
	if a := awsspec.Of(s); a != nil && a.DeletionProtection {
		return cluster.Errorf([]string{"aws", "deletion_protection"}, "Deletion Protection Is On",
			"The cluster %s has aws.deletion_protection = true, so destroy (or a replacement) is refused and nothing was removed. "+
				"Its data lives on instance store: a destroy loses every byte not in the archive. To destroy it, set deletion_protection = false, apply, then destroy.", s.Name)
	}
	se, err := p.open(ctx, s)
	if err != nil {
		return err
	}
	o, err := se.observe(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for _, in := range o.instances {
		ids = append(ids, in.ID)
	}
	for _, in := range o.others {
		if in.State != "terminated" {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) > 0 {
		tflog.Info(ctx, "terminating the cluster's instances", map[string]any{"instances": ids})
		if err := se.cloud.Terminate(ctx, ids, p.timeouts.Terminate); err != nil {
			return fmt.Errorf("terminating the instances: %w", err)
		}
	}
	// s is the state's configuration; the kept one too, in case an apply that removed the load balancer
	// stopped before it was gone.
	if had, err := se.keptLoadBalancer(ctx); err != nil {
		return err
	} else if had || se.a.LoadBalancer {
		if err := se.cloud.DeleteLoadBalancer(ctx, s.Name); err != nil {
			return fmt.Errorf("deleting the load balancer: %w", err)
		}
	}
	if err := se.cloud.ReleasePublicIPs(ctx, s.Name, ""); err != nil {
		return fmt.Errorf("releasing the Elastic IPs: %w", err)
	}
	var errs []error
	for _, e := range o.enis {
		if err := se.cloud.WaitENIAvailable(ctx, e.ID, p.timeouts.Terminate); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if err := se.cloud.DeleteENI(ctx, e.ID); err != nil {
			errs = append(errs, fmt.Errorf("deleting network interface %s: %w", e.ID, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if id, err := se.cloud.SecurityGroup(ctx, s.Name); err == nil {
		if err := se.cloud.DeleteSecurityGroup(ctx, id, p.timeouts.Terminate); err != nil {
			return fmt.Errorf("deleting security group %s: %w", id, err)
		}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := se.cloud.DeleteInstanceProfile(ctx, s.Name); err != nil {
		return fmt.Errorf("deleting the instance profile: %w", err)
	}
	n := se.ssmNames()
	if err := se.cloud.DeleteSecrets(ctx, append([]string{n.superuser, n.replication, n.restapi, specParameter(s.Name), awsspec.TakeoverParameter(s.Name)}, se.tlsParameters(o)...)); err != nil {
		return fmt.Errorf("deleting the password parameters: %w", err)
	}
	return nil
}

// ImportPrefix starts an import ID of a cluster on EC2: aws:<region>:<name>.
const ImportPrefix = "aws:"

// Import finds a cluster by region and name through its tags: the nodes from its interfaces (in their
// priority order), zones and subnets, the instance type and AMI from its instances. The archive and the
// parameters are not read back: the configuration gives them, and an apply that renders the same
// user-data changes nothing.
func (p *Platform) Import(ctx context.Context, id string) (cluster.Spec, []cluster.Member, error) {
	region, name, ok := strings.Cut(strings.TrimPrefix(id, ImportPrefix), ":")
	if !strings.HasPrefix(id, ImportPrefix) || !ok || region == "" || name == "" {
		return cluster.Spec{}, nil, fmt.Errorf("the import ID %q is not aws:<region>:<cluster name>, such as aws:eu-west-1:orders", id)
	}
	a := &awsspec.Block{Region: region, DeletionProtection: true, APIAddress: awsspec.APIAddressPrivate, RootVolumeGiB: awsspec.DefaultRootVolumeGiB}
	s := cluster.Spec{Name: name, Block: a}
	se, err := p.open(ctx, s)
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	enis, err := se.cloud.ENIs(ctx, name)
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	if len(enis) == 0 {
		return cluster.Spec{}, nil, fmt.Errorf("no network interface in %s is tagged %s=%s: no such cluster", region, awsspec.TagCluster, name)
	}
	slices.SortFunc(enis, func(a, b ENI) int {
		ai, _ := strconv.Atoi(a.Tags["pgnvme:priority"])
		bi, _ := strconv.Atoi(b.Tags["pgnvme:priority"])
		return ai - bi
	})
	a.SubnetIDs = map[string]string{}
	created, _ := se.cloud.SecurityGroup(ctx, name)
	for _, e := range enis {
		s.Nodes = append(s.Nodes, cluster.Node{Name: e.Tags[awsspec.TagNode], Zone: e.Zone})
		a.SubnetIDs[e.Zone] = e.SubnetID
		if !slices.Equal(e.Groups, []string{created}) && len(a.SecurityGroupIDs) == 0 {
			a.SecurityGroupIDs = slices.Clone(e.Groups)
		}
	}
	o, err := se.observe(ctx)
	if err != nil {
		return cluster.Spec{}, nil, err
	}
	for _, in := range o.instances {
		a.InstanceType, a.AMIID = in.Type, in.AMI
		break
	}
	if _, err := se.cloud.InstanceProfile(ctx, name); errors.Is(err, ErrNotFound) {
		tflog.Warn(ctx, "the cluster's instance profile was not created by the provider; set aws.iam_instance_profile to it")
	}
	st := se.status(ctx, o, nil, nil)
	if v, err := se.cloud.Parameter(ctx, specParameter(name)); err == nil {
		// The configuration as last applied: every input, the archive and parameters included.
		kept, err := decodeSpec(v)
		if err != nil {
			return cluster.Spec{}, nil, err
		}
		if awsspec.Of(kept) == nil {
			return cluster.Spec{}, nil, fmt.Errorf("the configuration parameter %s holds no aws block", specParameter(name))
		}
		if kept.TLS != nil {
			// Its REST API answers https only: read it again with the cluster's authority.
			if se, err = p.open(ctx, kept); err != nil {
				return cluster.Spec{}, nil, err
			}
			if o, err = se.observe(ctx); err != nil {
				return cluster.Spec{}, nil, err
			}
			st = se.status(ctx, o, nil, nil)
		}
		return kept, st.Members, nil
	} else if !errors.Is(err, ErrNotFound) {
		return cluster.Spec{}, nil, err
	}
	tflog.Warn(ctx, "the cluster's configuration parameter is missing: the archive and the parameters are not imported")
	in := cluster.Input{Name: name, Nodes: s.Nodes, Blocks: []cluster.BlockInput{&awsspec.Input{Block: *a}}}
	return cluster.FromInput(in), st.Members, nil
}

// launchesIfAddressed are what each node's machine would be launched with now, when every node has its
// interface; nil otherwise (without every address the user-data cannot be rendered: the nodes without one
// are new, and the others are rolled only when the addresses they hold change, which the apply renders).
func (se *session) launchesIfAddressed(t target, o observation) (map[string]awsspec.Launch, error) {
	addrs := map[string]string{}
	for _, n := range se.s.Nodes {
		e, ok := o.enis[n.Name]
		if !ok {
			return nil, nil
		}
		addrs[n.Name] = e.PrivateIP
	}
	_, launches, err := se.render(t, addrs)
	return launches, err
}

// plannedSteps is the engine's simulation of the apply from c as the plan's numbered lines, and its
// steps. When the engine refuses, the last line is the step where the apply stops: the plan says so rather
// than failing, so that other changes (deletion_protection, to destroy what is left) can still apply.
func plannedSteps(c topology.Cluster) (string, []topology.Step) {
	steps, err := topology.Steps(c)
	text := topology.StepsSummary(steps)
	if err != nil {
		if text != "" {
			text += "\n"
		}
		text += fmt.Sprintf("%d. %s: %s", len(steps)+1, stopStep, refusal(err))
	}
	return text, steps
}
