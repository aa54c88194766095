package ec2cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// machines are what the apply launches with: each node's user-data and launch.
type machines struct {
	profile  string
	userData map[string][]byte
	launches map[string]awsspec.Launch
	// restore renders each node's user-data for a restore from the archive (every member lost), only
	// when the apply restores.
	restore func() (map[string][]byte, error)
	// form is each node's user-data for the cluster's forming, when it is the restore from another archive
	// of a cluster with a restore block; formWait how long that restore may take (cluster.RestoreWait).
	form     map[string][]byte
	formWait time.Duration
	// forming renders each node's user-data for the forming of a new, empty cluster (every node at once:
	// etcd does not wait for members that are launched with it), only when the apply forms it.
	forming func() (map[string][]byte, error)
}

// converge drives the cluster to the spec one step at a time: it observes, maps the observation to the
// engine's cluster, executes the one step topology.Next gives, and observes again, until done. The plan
// lists topology.Steps of the same mapping, so what it says is what this does. Each step is logged as
// "apply step" with the step's words, the same as the plan's.
func (se *session) converge(ctx context.Context, t target, in engineInput, m machines) error {
	in.launches, in.t = m.launches, &t
	var patched time.Time // when the dynamic configuration last changed
	settled := true       // a Patroni loop has passed since
	joined := false       // a step launched a member (each waits only until that member is in the quorum)
	for i := 0; ; i++ {
		if i > 8*len(se.s.Nodes)+16 {
			return errors.New("the apply did not converge; this is a bug in the provider: report it with the log (TF_LOG=INFO)")
		}
		o, err := se.observe(ctx)
		if err != nil {
			return err
		}
		if in.tls, err = se.viewTLS(ctx, o); err != nil {
			return err
		}
		c := se.engine(ctx, o, in)
		step, done, err := topology.Next(c)
		if err != nil {
			return stop(ctx, err)
		}
		if (done || step.Kind == topology.StepRestart) && !settled {
			// Only once each member has applied a configuration change does its PostgreSQL say which
			// settings wait for a restart: wait out a Patroni loop, then decide again.
			if err := wait.Sleep(ctx, se.p.clock, patched.Add(se.loopWait()+se.retryTimeout()).Sub(se.p.clock.Now())); err != nil {
				return err
			}
			settled = true
			continue
		}
		if done {
			if joined {
				return se.waitWhole(ctx, "every member to stream in the quorum")
			}
			return nil
		}
		start := se.p.clock.Now()
		tflog.Info(ctx, "apply step", map[string]any{"apply_step": step.String(), "reason": step.Reason})
		if err := se.execute(ctx, step, c, o, t, in, m); err != nil {
			return err
		}
		switch step.Kind {
		case topology.StepReplace, topology.StepAdd, topology.StepRoll:
			joined = true
		case topology.StepConfigure:
			patched, settled = se.p.clock.Now(), false
		case topology.StepForm:
			in.known = se.s.NodeNames() // formed: from now on a member without a machine has lost data
		case topology.StepRestore:
			in.archive = nil // restored: the members hold the data again
		}
		tflog.Info(ctx, "apply step done", map[string]any{"apply_step": step.String(), "seconds": se.p.clock.Now().Sub(start).Seconds()})
	}
}

// stopStep is the plan's and the log's word for the engine's refusal: the apply stops there.
const stopStep = "stop"

// stop logs the engine's refusal err as the apply's last step and returns it as the user reads it.
func stop(ctx context.Context, err error) error {
	err = refusal(err)
	tflog.Info(ctx, "apply step", map[string]any{"apply_step": stopStep, "reason": err.Error()})
	return err
}

// execute runs one step and waits for its outcome.
func (se *session) execute(ctx context.Context, step topology.Step, c topology.Cluster, o observation, t target, in engineInput, m machines) error {
	switch step.Kind {
	case topology.StepForm:
		// Every member at once: etcd and Patroni form the cluster from all of them.
		fm, what := m, "the cluster to have a leader and every standby streaming in the quorum"
		var before map[string]bool
		if m.form != nil {
			fm.userData, what = m.form, "the cluster restored from another archive to have a leader and every standby streaming in the quorum"
			before = se.restoreAttemptsBefore(ctx)
		} else {
			data, err := m.forming()
			if err != nil {
				return fmt.Errorf("rendering the user-data of the forming: %w", err)
			}
			fm.userData = data
		}
		for _, node := range step.Nodes {
			if err := se.terminateLost(ctx, o, node); err != nil {
				return err
			}
			if _, err := se.launch(ctx, t, node, o.enis[node], fm, replacedID(o, node)); err != nil {
				return err
			}
		}
		if m.form != nil {
			return se.waitRestored(ctx, what, before, true, m.formWait)
		}
		return se.waitWhole(ctx, what)
	case topology.StepRestore:
		// Every member at once, as when the cluster formed, each with the bootstrap from the archive: the
		// member that takes the new etcd cluster's initialize key restores, the others copy it.
		data, err := m.restore()
		if err != nil {
			return fmt.Errorf("rendering the user-data of the restore: %w", err)
		}
		rm := m
		rm.userData = data
		before := se.restoreAttemptsBefore(ctx)
		for _, node := range step.Nodes {
			if err := se.terminateLost(ctx, o, node); err != nil {
				return err
			}
			if _, err := se.launch(ctx, t, node, o.enis[node], rm, replacedID(o, node)); err != nil {
				return err
			}
		}
		return se.waitRestored(ctx, "the cluster restored from its archive to have a leader and every standby streaming in the quorum", before, false, in.restoreWait)
	case topology.StepTakeOver:
		return se.takeOver(ctx, o, step)
	case topology.StepAwaitLeader, topology.StepAwaitHandover, topology.StepAwaitMembers:
		return se.await(ctx, step, in)
	case topology.StepConfigure:
		if _, err := se.configure(ctx, o, &t, c.MembershipPending()); err != nil {
			return fmt.Errorf("changing Patroni's dynamic configuration: %w", err)
		}
		return nil
	case topology.StepSwitchover:
		return se.switchover(ctx, o, step.Node, step.Target)
	case topology.StepRemove:
		return se.remove(ctx, o, step.Node)
	case topology.StepReplace, topology.StepAdd:
		if err := se.terminateLost(ctx, o, step.Node); err != nil {
			return err
		}
		return se.launchAndJoin(ctx, t, step.Node, o, m, replacedID(o, step.Node))
	case topology.StepRoll:
		old := o.instances[step.Node]
		if err := se.cloud.Terminate(ctx, []string{old.ID}, se.p.timeouts.Terminate); err != nil {
			return fmt.Errorf("terminating node %s's instance %s: %w", step.Node, old.ID, err)
		}
		return se.launchAndJoin(ctx, t, step.Node, o, m, old.ID)
	case topology.StepRenew:
		return se.renewTLS(ctx, in.tls, o, step.Node)
	case topology.StepRestart:
		leader, _ := o.patroni.Leader()
		host := se.apiHost(o.enis[step.Node])
		st, err := se.patroni.Node(ctx, host)
		if err != nil {
			return fmt.Errorf("reading node %s's state: %w", step.Node, err)
		}
		password, err := se.cloud.Secret(ctx, se.ssmNames().restapi)
		if err != nil {
			return fmt.Errorf("reading the REST API password from SSM: %w", err)
		}
		return se.restartNode(ctx, step.Node, host, st, step.Node == leader.Name, password)
	}
	return fmt.Errorf("step %q has no executor; this is a bug in the provider", step.Kind)
}

// await waits until the engine decides something other than step: the cluster changed by itself (Patroni
// elected a leader, a standby caught up).
func (se *session) await(ctx context.Context, step topology.Step, in engineInput) error {
	last := step.Reason
	err := wait.Until(ctx, step.String(), se.p.timeouts.Healthy, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		o, err := se.observe(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		next, done, nerr := topology.Next(se.engine(ctx, o, in))
		switch {
		case nerr != nil:
			// Not yet: while a failover is under way the engine can refuse for a moment (a view without
			// a leader in a cluster that lost its majority only briefly); the wait's timeout ends it.
			last = nerr.Error()
			return false, wait.NotYet(nerr)
		case !done && next.String() == step.String():
			last = next.Reason
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return nil
}

// launchAndJoin launches node's new machine and waits until it streams in the quorum.
func (se *session) launchAndJoin(ctx context.Context, t target, node string, o observation, m machines, replaced string) error {
	start := se.p.clock.Now()
	in, err := se.launch(ctx, t, node, o.enis[node], m, replaced)
	if err != nil {
		return err
	}
	return se.waitBack(ctx, node, o.enis[node], launchedAt(in, start))
}

// terminateLost terminates node's lost instances that are not terminated yet: a stopped instance's
// instance store is gone, and it holds the node's network interface.
func (se *session) terminateLost(ctx context.Context, o observation, node string) error {
	var stale []string
	for _, in := range o.others {
		if in.Tags[awsspec.TagNode] == node && in.State != "terminated" {
			stale = append(stale, in.ID)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	tflog.Info(ctx, "terminating the lost node's instance", map[string]any{"node": node, "instances": stale})
	if err := se.cloud.Terminate(ctx, stale, se.p.timeouts.Terminate); err != nil {
		return fmt.Errorf("terminating node %s's lost instance: %w", node, err)
	}
	return nil
}

// refusal is the engine's refusal as the user reads it: what happened, and what to do.
func refusal(err error) error {
	switch {
	case errors.Is(err, topology.ErrDataLost):
		return cluster.Errorf(nil, "Every Node Lost",
			"%v. The provider restores such a cluster from its archive's newest base backup, and never starts a new, empty database over an "+
				"archive that holds the cluster's history, so it launched nothing. When the archive could not be read, make it readable from where "+
				"Terraform runs (the provider's S3 access to the archive bucket) and apply again. When it holds no base backup, its WAL alone cannot "+
				"rebuild the database: to give up the data, destroy this cluster (deletion_protection = false) and create it again with an empty archive prefix.", err)
	case errors.Is(err, topology.ErrNoElection):
		return cluster.Errorf(nil, "No Leader Can Be Elected",
			"%v. Launching new members cannot help: they would join a DCS without a majority. Patroni does not promote a survivor it cannot prove holds "+
				"every acknowledged commit (under quorum commit a commit may have been confirmed by a lost standby alone), and the provider promotes one only at "+
				"the position accept_data_loss_at_lsn accepts. Nothing was changed. A lost instance's instance store is gone with it, so the survivors and "+
				"the archive hold all there is. The other way back is the archive, giving up whatever the survivors hold past its end: stop or terminate "+
				"the surviving instances and apply, and every node is then lost, and the apply restores the cluster to the end of its archive (the plan "+
				"says from which backup).", err)
	}
	return err
}
