package nodesim

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// start runs op for e in a goroutine of its own; b.mu is held.
func (b *EC2Bridge) start(e *bridged, op string, fn func(ctx context.Context, e *bridged)) {
	ctx, cancel := context.WithCancel(b.ctx)
	e.busy, e.op, e.cancel = true, op, cancel
	if op == EventBoot {
		e.state = nodeBooting
	}
	b.ops.Add(1)
	go func() {
		defer b.ops.Done()
		defer cancel()
		fn(ctx, e)
		b.mu.Lock()
		e.busy, e.op, e.cancel = false, "", nil
		b.mu.Unlock()
	}()
}

// boot adds the node of a newly running instance, or takes the node of a stopped one, and boots it.
func (b *EC2Bridge) boot(ctx context.Context, e *bridged) {
	b.mu.Lock()
	n := e.node
	b.mu.Unlock()
	detail := e.ip.String()
	if n != nil {
		detail += ", again"
	}
	b.event(e, EventBoot, detail)
	fail := func(err error) {
		b.setState(e, nodeFailed)
		b.event(e, EventBootFailed, err.Error())
	}
	if !e.ip.IsValid() {
		fail(fmt.Errorf("instance %s has no network interface at device index 0 with a private address", e.id))
		return
	}
	userData, err := b.userData(ctx, e.id)
	if err != nil {
		fail(err)
		return
	}
	if n == nil {
		n, err = b.sim.AddNode(ctx, NodeSpec{Name: e.name, IP: e.ip, UserData: userData, Disks: 1, InstanceID: e.id})
		if err != nil {
			fail(err)
			return
		}
		b.mu.Lock()
		e.node = n
		b.mu.Unlock()
	} else {
		n.userData = userData // as EC2 hands a started instance the user-data it has now
	}
	if b.sim.iamEnforced() {
		profile, err := b.profile(ctx, e)
		if err != nil {
			fail(err)
			return
		}
		creds, err := b.sim.instanceCredentials(ctx, b.region, profile, e.id)
		if err != nil {
			fail(err)
			return
		}
		n.mu.Lock()
		n.creds = &creds
		n.mu.Unlock()
	}
	began := time.Now()
	if err := n.Boot(ctx); err != nil {
		fail(err)
		return
	}
	b.setState(e, nodeRunning)
	b.event(e, EventBooted, time.Since(began).Round(time.Millisecond).String())
}

// profileWait bounds how long a booting instance's profile may take to show: moto associates it with the
// instance just after RunInstances made the instance, so a DescribeInstances in between shows none.
const profileWait = 10 * time.Second

// profile is e's instance profile ARN as moto describes the instance now ("" when it shows none within
// profileWait: an instance launched without one).
func (b *EC2Bridge) profile(ctx context.Context, e *bridged) (string, error) {
	if e.profile != "" {
		return e.profile, nil
	}
	err := wait.Until(ctx, "instance "+e.id+"'s profile to show", profileWait, 200*time.Millisecond, wait.Real, func(ctx context.Context) (bool, error) {
		out, err := b.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{e.id}})
		if err != nil {
			return false, fmt.Errorf("reading instance %s's profile: %w", e.id, err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				if in.IamInstanceProfile != nil {
					e.profile = aws.ToString(in.IamInstanceProfile.Arn)
				}
			}
		}
		return e.profile != "", nil
	})
	var timedOut *wait.TimeoutError
	if errors.As(err, &timedOut) {
		return "", nil // none within profileWait: an instance launched without one
	}
	return e.profile, err
}

// userData is the instance's user-data as EC2 gives it to cloud-init (gzip as launched: base64 decoded
// only).
func (b *EC2Bridge) userData(ctx context.Context, id string) ([]byte, error) {
	out, err := b.ec2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{
		InstanceId: aws.String(id),
		Attribute:  types.InstanceAttributeNameUserData,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the user-data of instance %s: %w", id, err)
	}
	if out.UserData == nil || aws.ToString(out.UserData.Value) == "" {
		return nil, nil
	}
	ud, err := base64.StdEncoding.DecodeString(aws.ToString(out.UserData.Value))
	if err != nil {
		return nil, fmt.Errorf("the user-data of instance %s is not base64: %w", id, err)
	}
	return ud, nil
}

// stop kills the node of a stopping instance and replaces its disks with empty ones.
func (b *EC2Bridge) stop(ctx context.Context, e *bridged) {
	b.mu.Lock()
	n := e.node
	b.mu.Unlock()
	var err error
	if n != nil {
		err = errors.Join(n.Kill(ctx), n.ReplaceDisks(ctx))
	}
	b.setState(e, nodeStopped)
	detail := ""
	if err != nil {
		detail = "error: " + err.Error()
	}
	b.event(e, EventStopped, detail)
}

// terminate removes the node of a terminated instance; when that fails, the next poll tries again.
func (b *EC2Bridge) terminate(ctx context.Context, e *bridged) {
	b.mu.Lock()
	n := e.node
	b.mu.Unlock()
	if n != nil {
		if err := b.sim.RemoveNode(ctx, n); err != nil {
			b.sim.logf("EC2 bridge: instance %s (node %s) is terminated; %v (retrying)", e.id, e.name, err)
			return
		}
	}
	b.mu.Lock()
	e.node = nil
	delete(b.instances, e.id)
	b.mu.Unlock()
	b.event(e, EventTerminated, "")
}
