package nodesim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// DefaultDiskBytes is the size of a simulated instance-store disk (a sparse file): XFS needs 300 MB.
const DefaultDiskBytes = 2 << 30

// overlaid are the directories a node sees as overlays of this machine's, with its own upper layer.
var overlaid = []string{"/etc", "/usr", "/var"}

// nodeNamePattern is a node name the simulator accepts: it names a namespace, a cgroup and a directory.
var nodeNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// NodeSpec says what node to add.
type NodeSpec struct {
	// Name is the node's name (its hostname): lower-case letters, digits and '-', at most 32.
	Name string
	// IP is the node's address, in the simulator's subnet (Sim.NodeIP gives the plan).
	IP netip.Addr
	// UserData is the node's user-data as EC2 gets it (UserData.Gzip(), or the plain #cloud-config).
	UserData []byte
	// Disks is how many instance-store disks (loop devices) the node has; 0 means none, a node whose
	// disks never appear.
	Disks int
	// DiskBytes is each disk's size; 0 means DefaultDiskBytes.
	DiskBytes int64
	// InstanceID is the instance's ID, which cloud-init keys its once-per-instance work on (the EC2 bridge
	// gives moto's); "" means a random i-... ID.
	InstanceID string
}

// Node is one simulated EC2 instance.
type Node struct {
	// Name is the node's name and hostname.
	Name string
	// IP is its address.
	IP netip.Addr
	// Dir holds the node's root volume (the overlays' upper layers), disks, sockets and logs.
	Dir string
	// InstanceID is the simulated instance's ID, which cloud-init keys its once-per-instance work on.
	InstanceID string

	sim       *Sim
	userData  []byte
	ns        string
	veth      string
	cg        *cgroup
	diskBytes int64

	mu     sync.Mutex
	disks  []*disk
	holder *proc
	mgr    *manager
	ctl    io.Closer
	boots  int
	diskN  int
	cgs    map[string]*cgroup
	// creds are its instance role's credentials under IAM enforcement (set at each boot by the EC2 bridge);
	// nil: the simulator's (Sim.InstanceEnv).
	creds *aws.Credentials
}

// InstanceEnv is what the node's instance role and VPC give every process of it (the unit runner's
// environment, as systemd's manager environment): its role's credentials under IAM enforcement, else
// Sim.InstanceEnv.
func (n *Node) InstanceEnv() []string {
	n.mu.Lock()
	c := n.creds
	n.mu.Unlock()
	if c == nil {
		return n.sim.InstanceEnv()
	}
	return instanceEnv(*c)
}

// AddNode creates a node: its network namespace on the bridge with its address, its cgroup, directories
// and disks. It does not boot it. A name or address is free again once RemoveNode removed its node.
func (s *Sim) AddNode(ctx context.Context, spec NodeSpec) (_ *Node, err error) {
	if !nodeNamePattern.MatchString(spec.Name) {
		return nil, fmt.Errorf("node name %q: use lower-case letters, digits and '-', at most 32", spec.Name)
	}
	if !s.Subnet.Contains(spec.IP) || spec.IP == s.ServiceIP || spec.IP == s.Subnet.Addr() || spec.IP.As4()[3] == 255 {
		return nil, fmt.Errorf("node %s: address %s is not a host address of %s other than the service's %s", spec.Name, spec.IP, s.Subnet, s.ServiceIP)
	}
	id := spec.InstanceID
	if id == "" {
		idb := make([]byte, 9)
		if _, err := rand.Read(idb); err != nil {
			return nil, err
		}
		id = "i-" + hex.EncodeToString(idb)[:17]
	}
	n := &Node{
		Name: spec.Name, IP: spec.IP, Dir: filepath.Join(s.Dir, spec.Name), InstanceID: id,
		sim: s, userData: spec.UserData, ns: "nodesim-" + s.ID + "-" + spec.Name,
		veth:      "v" + strconv.Itoa(int(spec.IP.As4()[3])),
		diskBytes: spec.DiskBytes, cgs: map[string]*cgroup{},
	}
	if n.diskBytes == 0 {
		n.diskBytes = DefaultDiskBytes
	}
	s.mu.Lock()
	for _, o := range s.nodes {
		if o.Name == spec.Name || o.IP == spec.IP {
			s.mu.Unlock()
			return nil, fmt.Errorf("node %s (%s) exists already", o.Name, o.IP)
		}
	}
	s.nodes = append(s.nodes, n)
	s.mu.Unlock()
	if err := os.Mkdir(n.Dir, 0o755); err != nil {
		s.forget(n)
		return nil, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.RemoveNode(context.Background(), n))
		}
	}()
	for _, d := range []string{"log", "disks", "run/notify", "run/disk/by-id"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	for _, o := range overlaid {
		for _, d := range []string{"upper", "work"} {
			if err := os.MkdirAll(filepath.Join(n.Dir, "root", o, d), 0o755); err != nil {
				return nil, err
			}
		}
	}
	if n.cg, err = newCgroup(filepath.Join(s.cgRoot.path, spec.Name)); err != nil {
		return nil, err
	}
	if err := addNetns(ctx, n.ns); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"-n", s.svcNS, "link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.ns},
		{"-n", s.svcNS, "link", "set", n.veth, "master", "br0", "up"},
		{"-n", n.ns, "addr", "add", netip.PrefixFrom(spec.IP, s.Subnet.Bits()).String(), "dev", "eth0"},
		{"-n", n.ns, "link", "set", "eth0", "up"},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			return nil, fmt.Errorf("connecting node %s: %w", spec.Name, err)
		}
	}
	for range spec.Disks {
		if err := n.AttachDisk(ctx); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// RemoveNode removes node n entirely, as a terminated instance goes: its processes, disks, veth and
// namespace, cgroups and directory (its root volume). Its name and address are free for AddNode once it
// returns.
func (s *Sim) RemoveNode(ctx context.Context, n *Node) error {
	err := n.destroy(ctx)
	if rmErr := os.RemoveAll(n.Dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("removing the directory of node %s: %w", n.Name, rmErr))
	}
	// Only a node whose every part is gone frees its name and address: a namespace or cgroup left behind
	// would collide with the next node's.
	if err != nil {
		return fmt.Errorf("removing node %s: %w", n.Name, err)
	}
	s.forget(n)
	s.logf("node %s (%s) removed", n.Name, n.IP)
	return nil
}

// forget drops n from the simulator's nodes.
func (s *Sim) forget(n *Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.nodes {
		if o == n {
			s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
			return
		}
	}
}

// hostPath is p (a path on the node) as this process reaches it: through the mount namespace of the
// node's running boot. Without a running boot it is the node's root volume's upper layer for the
// overlaid directories.
func (n *Node) hostPath(p string) string {
	n.mu.Lock()
	h := n.holder
	n.mu.Unlock()
	if h != nil && !h.exited() {
		return fmt.Sprintf("/proc/%d/root%s", h.pid(), p)
	}
	for _, o := range overlaid {
		if p == o || strings.HasPrefix(p, o+"/") {
			return filepath.Join(n.Dir, "root", o, "upper", strings.TrimPrefix(p, o))
		}
	}
	return filepath.Join(n.Dir, "nowhere", p)
}

// runDir is the node's simulator directory on this machine; the node sees it as /run/nodesim.
func (n *Node) runDir() string { return filepath.Join(n.Dir, "run") }

// LogDir holds the node's logs: manager.log (the unit runner), <unit>.log for each unit's processes,
// cloud-init.log.
func (n *Node) LogDir() string { return filepath.Join(n.Dir, "log") }

// unitCgroup is the cgroup of one unit (or of the simulator's own processes: "boot", "exec") under the
// node's.
func (n *Node) unitCgroup(name string) (*cgroup, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.cgs[name]; ok {
		return c, nil
	}
	c, err := newCgroup(filepath.Join(n.cg.path, name))
	if err != nil {
		return nil, err
	}
	n.cgs[name] = c
	return c, nil
}

// Running reports whether the node is booted (its namespaces are held).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holder != nil && !n.holder.exited()
}

// destroy removes the node: its processes, disks, namespace, cgroups.
func (n *Node) destroy(ctx context.Context) error {
	var errs []error
	errs = append(errs, n.Kill(ctx))
	// What is not removed stays listed, so that a destroy called again (after one whose context was
	// canceled) removes it: the node's own cgroup cannot go before its units' cgroups.
	n.mu.Lock()
	disks, cgs := n.disks, n.cgs
	n.mu.Unlock()
	var keptDisks []*disk
	for _, d := range disks {
		if err := d.detach(ctx); err != nil {
			errs, keptDisks = append(errs, err), append(keptDisks, d)
		}
	}
	// The veth first, synchronously: a namespace's links go with it only when the kernel gets round to it,
	// and a node added right after with the same address needs the veth's name.
	errs = append(errs, n.deleteVeth(ctx))
	errs = append(errs, delNetns(ctx, n.ns))
	keptCgs := map[string]*cgroup{}
	for name, c := range cgs {
		if err := c.remove(ctx); err != nil {
			errs, keptCgs[name] = append(errs, err), c
		}
	}
	n.mu.Lock()
	n.disks, n.cgs = keptDisks, keptCgs
	n.mu.Unlock()
	if n.cg != nil && len(keptCgs) == 0 {
		errs = append(errs, n.cg.remove(ctx))
	}
	return errors.Join(errs...)
}

// deleteVeth deletes the node's veth pair (from the service namespace's end) if it exists.
func (n *Node) deleteVeth(ctx context.Context) error {
	if n.veth == "" {
		return nil
	}
	_, err := run(ctx, "ip", "-n", n.sim.svcNS, "link", "delete", "dev", n.veth)
	if err != nil && strings.Contains(err.Error(), "Cannot find device") {
		return nil // never made, or gone with the node's namespace
	}
	return err
}
