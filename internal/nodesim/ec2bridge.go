package nodesim

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Tags the bridge reads and writes.
const (
	// tagNode names the node an instance (or ENI) is, as the EC2 platform tags it.
	tagNode = "pgnvme:node"
	// tagName names the VPC and subnets CreateVPC makes.
	tagName = "Name"
)

// Kinds of BridgeEvent.
const (
	// EventBoot: the bridge begins to boot a node for a running instance (Detail: its address, and
	// "again" for a start after a stop).
	EventBoot = "boot"
	// EventBooted: cloud-init is done on the node (Detail: how long the boot took).
	EventBooted = "booted"
	// EventBootFailed: the node could not be added or booted (Detail: the error).
	EventBootFailed = "boot-failed"
	// EventTerminated: the instance is terminated (or gone from moto) and its node removed entirely.
	EventTerminated = "terminated"
	// EventStopped: the instance is stopping or stopped, its node killed and its instance store replaced
	// by empty disks.
	EventStopped = "stopped"
)

// bridgeInterval is how often the bridge asks moto for the instances.
const bridgeInterval = time.Second

// BridgeEvent is one thing the EC2 bridge did.
type BridgeEvent struct {
	Time       time.Time
	InstanceID string
	// Node is the instance's pgnvme:node tag, the simulated node's name.
	Node string
	// Kind is one of EventBoot, EventBooted, EventBootFailed, EventTerminated, EventStopped.
	Kind   string
	Detail string
}

func (e BridgeEvent) String() string {
	s := fmt.Sprintf("%s %s %s %s", e.Time.Format("15:04:05.000"), e.InstanceID, e.Node, e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// EC2Bridge boots what moto launches: it polls moto's EC2 instances (those tagged pgnvme:node) about once
// a second, boots a simulated node for each running one, and follows the instance's life (see
// StartEC2Bridge). Close stops it.
type EC2Bridge struct {
	sim    *Sim
	region string
	ec2    *ec2.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	ops    sync.WaitGroup
	once   sync.Once

	mu        sync.Mutex
	instances map[string]*bridged
	events    []BridgeEvent
	lastErr   string
}

// What the bridge knows a simulated node of an instance to be.
const (
	nodeBooting = "booting"
	nodeRunning = "running"
	nodeFailed  = "failed"
	nodeStopped = "stopped"
)

// bridged is an instance the bridge acts on.
type bridged struct {
	id, name string
	ip       netip.Addr
	// profile is the instance's instance profile ARN ("" without one).
	profile string
	// node is the simulated node, nil until AddNode succeeded.
	node  *Node
	state string
	// busy: an operation (boot, stop, termination) runs in its goroutine; cancel ends it early.
	busy   bool
	op     string
	cancel context.CancelFunc
	// waiting: a note that the instance waits for its name or address was logged.
	waiting bool
}

// observed is an instance as moto describes it.
type observed struct {
	id, name, state, profile string
	// ip is the private address of the network interface at device index 0 (invalid when none).
	ip netip.Addr
}

// StartEC2Bridge starts the EC2 bridge for region: a goroutine that asks moto's DescribeInstances about
// once a second for the instances tagged pgnvme:node (the EC2 platform's) and makes the simulation follow
// them:
//
//   - an instance moto reports running, for which no simulated node runs, gets one: AddNode with the
//     pgnvme:node tag as its name, the private address of its network interface at device index 0 (the
//     node's ENI) as its address, its user-data (DescribeInstanceAttribute, as EC2 hands it to cloud-init),
//     one instance-store disk and moto's instance ID as its instance ID; then the node boots, in a
//     goroutine of its own;
//   - an instance that is stopping or stopped: its node is killed and its disks replaced by empty ones
//     (an instance store does not survive a stop); when it runs again, the node boots again (cloud-init's
//     once-per-instance work does not run again), with its user-data read anew;
//   - an instance that is shutting down, terminated or gone from moto: its node is removed entirely
//     (RemoveNode), so that a replacement attaching the same ENI gets the same name and address; a
//     replacement waits until then.
//
// A node killed by hand (Node.Kill) stays down while its instance runs, as a lost machine does. Errors go
// to the event log (Events) and the simulator's log; the bridge does not stop for them. ctx bounds only the
// first DescribeInstances, which must succeed; the bridge runs until Close. It also makes the nodes
// resolve region's default SSM endpoint to the AWS endpoint (AddRegion).
func (s *Sim) StartEC2Bridge(ctx context.Context, region string) (*EC2Bridge, error) {
	if err := s.AddRegion(region); err != nil {
		return nil, err
	}
	b := &EC2Bridge{sim: s, region: region, ec2: s.EC2Client(region), done: make(chan struct{}), instances: map[string]*bridged{}}
	if _, err := b.describe(ctx); err != nil {
		return nil, fmt.Errorf("starting the EC2 bridge in %s: %w", region, err)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.bridges = append(s.bridges, b)
	s.mu.Unlock()
	go b.loop()
	s.logf("nodesim %s: EC2 bridge polls moto's instances in %s", s.ID, region)
	return b, nil
}

// Close stops the bridge: the polling ends and a boot in progress is cancelled; it returns when every
// operation has ended. The nodes stay (Sim.Close, which also closes the bridge, removes them). It can be
// called more than once.
func (b *EC2Bridge) Close() {
	b.once.Do(func() {
		b.cancel()
		<-b.done
		b.ops.Wait()
	})
}

// Events is the bridge's event log so far, in order.
func (b *EC2Bridge) Events() []BridgeEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

// Node is the simulated node of the instance instanceID, or nil when the bridge has none (yet, or any
// more).
func (b *EC2Bridge) Node(instanceID string) *Node {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.instances[instanceID]; e != nil {
		return e.node
	}
	return nil
}

func (b *EC2Bridge) loop() {
	defer close(b.done)
	t := time.NewTicker(bridgeInterval)
	defer t.Stop()
	for {
		b.poll()
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// describe lists the instances tagged pgnvme:node, by ID, except the terminated ones: poll takes an
// instance it does not find for gone, as it takes a terminated one. Moto keeps every terminated instance
// and renders each one it returns, so a long test's terminated instances would otherwise cost moto most of
// the CPU of a poll every second (57 ms a call with 27 of 30 instances terminated, 16 ms without them).
func (b *EC2Bridge) describe(ctx context.Context) (map[string]observed, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found := map[string]observed{}
	p := ec2.NewDescribeInstancesPaginator(b.ec2, &ec2.DescribeInstancesInput{
		Filters: []types.Filter{
			{Name: aws.String("tag-key"), Values: []string{tagNode}},
			{Name: aws.String("instance-state-name"), Values: []string{
				string(types.InstanceStateNamePending), string(types.InstanceStateNameRunning),
				string(types.InstanceStateNameShuttingDown), string(types.InstanceStateNameStopping),
				string(types.InstanceStateNameStopped)}},
		},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the instances: %w", err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				o := observed{id: aws.ToString(in.InstanceId)}
				if in.IamInstanceProfile != nil {
					o.profile = aws.ToString(in.IamInstanceProfile.Arn)
				}
				if in.State != nil {
					o.state = string(in.State.Name)
				}
				for _, t := range in.Tags {
					if aws.ToString(t.Key) == tagNode {
						o.name = aws.ToString(t.Value)
					}
				}
				for _, nic := range in.NetworkInterfaces {
					if nic.Attachment != nil && aws.ToInt32(nic.Attachment.DeviceIndex) == 0 {
						o.ip, _ = netip.ParseAddr(aws.ToString(nic.PrivateIpAddress))
					}
				}
				found[o.id] = o
			}
		}
	}
	return found, nil
}

// poll compares moto's instances with the simulated nodes and starts what brings the nodes in line:
// terminations and stops first, so that a replacement finds its name and address free.
func (b *EC2Bridge) poll() {
	found, err := b.describe(b.ctx)
	if err != nil {
		if b.ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		repeated := b.lastErr == err.Error()
		b.lastErr = err.Error()
		b.mu.Unlock()
		if !repeated {
			b.sim.logf("EC2 bridge: %v (retrying every %s)", err, bridgeInterval)
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastErr = ""
	for _, id := range sortedKeys(b.instances) {
		e := b.instances[id]
		o, ok := found[id]
		gone := !ok || o.state == string(types.InstanceStateNameShuttingDown) || o.state == string(types.InstanceStateNameTerminated)
		stopping := ok && (o.state == string(types.InstanceStateNameStopping) || o.state == string(types.InstanceStateNameStopped))
		switch {
		case !gone && !stopping:
		case e.busy:
			if e.op == EventBoot {
				e.cancel() // the boot of a machine that is going away; the next poll acts once it ended
			}
		case gone:
			b.start(e, EventTerminated, b.terminate)
		case e.state != nodeStopped:
			b.start(e, EventStopped, b.stop)
		}
	}
	for _, id := range sortedKeys(found) {
		o := found[id]
		if o.state != string(types.InstanceStateNameRunning) {
			continue
		}
		e := b.instances[id]
		switch {
		case e == nil:
			if holder := b.holder(o); holder != nil {
				// The node of a terminated instance is still being removed (or another instance claims
				// the same node): the next poll tries again.
				if !holder.waiting {
					holder.waiting = true
					b.sim.logf("EC2 bridge: instance %s (node %s, %s) waits for instance %s's node %s (%s) to go", o.id, o.name, o.ip, holder.id, holder.name, holder.ip)
				}
				continue
			}
			e = &bridged{id: o.id, name: o.name, ip: o.ip, profile: o.profile}
			b.instances[id] = e
			b.start(e, EventBoot, b.boot)
		case !e.busy && e.state == nodeStopped:
			b.start(e, EventBoot, b.boot)
		}
	}
}

// holder is the instance of the bridge's other than o whose node has o's name or address, or nil.
func (b *EC2Bridge) holder(o observed) *bridged {
	for _, e := range b.instances {
		if e.id != o.id && (e.name == o.name || o.ip.IsValid() && e.ip == o.ip) {
			return e
		}
	}
	return nil
}

func (b *EC2Bridge) setState(e *bridged, state string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.state = state
}

// event records an event and logs it.
func (b *EC2Bridge) event(e *bridged, kind, detail string) {
	ev := BridgeEvent{Time: time.Now(), InstanceID: e.id, Node: e.name, Kind: kind, Detail: detail}
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
	msg := fmt.Sprintf("EC2 bridge: instance %s (node %s): %s", e.id, e.name, kind)
	if detail != "" {
		// A failed boot's error holds the end of cloud-init's log: the first line says enough here.
		first, _, _ := strings.Cut(detail, "\n")
		msg += ": " + first
	}
	b.sim.logf("%s", msg)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
