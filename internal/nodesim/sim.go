package nodesim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

const (
	// DiskGlob is an EC2Node.InstanceStoreGlob for a simulated node: the node's by-id directory, which
	// holds one nvme-Amazon_EC2_NVMe_Instance_Storage_AWS<serial> link per loop device. The node sees the
	// same directory at /dev/disk/by-id, so the default (bootstrap.DefaultInstanceStoreGlob) finds the
	// disks too.
	DiskGlob = "/run/nodesim/disk/by-id/*NVMe_Instance_Storage_*"
	// AWSHost is the simulated AWS endpoint's host name (https, port 443), as the nodes' /etc/hosts and
	// DialContext resolve it to the service address. Under .test (RFC 2606), so that nothing can reach a
	// real service by mistake.
	AWSHost = "aws.nodesim.test"
	// AWSEndpoint is the simulated AWS endpoint's URL.
	AWSEndpoint = "https://" + AWSHost

	// nodeRunDir is where a node sees its simulator directory (sockets, by-id links).
	nodeRunDir = "/run/nodesim"
	// stepTimeout bounds one step: a command, a process's start or end.
	stepTimeout = 2 * time.Minute
	// firstNodeHost is the host part of the first node's address (.1 is the service address).
	firstNodeHost = 11
)

// Options say where and how a simulator runs.
type Options struct {
	// Dir is the directory that holds the run's directory (nodesim-<id>); "" means /tmp. It must not be
	// under /etc, /usr, /var or /run, which the nodes overlay.
	Dir string
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Sim is one run of the simulator: a service namespace with the bridge and the simulated AWS endpoint, and
// the nodes added to it.
type Sim struct {
	// ID is the run's random suffix: every name the run gives (namespaces, cgroups, directories) has it.
	ID string
	// Dir is the run's directory: Dir/<node> per node, Dir/svc for the service namespace.
	Dir string
	// Subnet is the nodes' network, a /24 in 198.18.0.0/15.
	Subnet netip.Prefix
	// ServiceIP is the service namespace's address (the bridge's): the AWS endpoint.
	ServiceIP netip.Addr
	// CAFile is the AWS endpoint's self-signed certificate (PEM), which the nodes trust.
	CAFile string

	logf      func(format string, args ...any)
	svcNS     string
	svcNSFile *os.File
	cgRoot    *cgroup
	svcCg     *cgroup
	aws       *awsService
	client    *http.Client

	mu sync.Mutex
	// enforced: EnforceIAM ran, and the simulator signs as creds (its IAM user).
	enforced bool
	creds    aws.Credentials
	nodes    []*Node
	regions  []string
	bridges  []*EC2Bridge
}

// New creates a simulator: its directory, cgroup, service namespace with the bridge, and the AWS endpoint
// (moto behind stunnel). Close removes all of it. It fails, naming what to install, when a part is
// missing.
func New(ctx context.Context, opts Options) (_ *Sim, err error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	base := opts.Dir
	if base == "" {
		base = "/tmp"
	}
	base, err = filepath.Abs(base)
	if err != nil {
		return nil, err
	}
	for _, o := range overlaid {
		if base == o || strings.HasPrefix(base, o+"/") {
			return nil, fmt.Errorf("the simulator's directory %s is under %s, which the nodes overlay; use another, such as /tmp", base, o)
		}
	}
	idb := make([]byte, 3)
	if _, err := rand.Read(idb); err != nil {
		return nil, err
	}
	third, err := rand.Int(rand.Reader, big.NewInt(254))
	if err != nil {
		return nil, err
	}
	s := &Sim{
		ID:      hex.EncodeToString(idb),
		Subnet:  netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(third.Int64() + 1), 0}), 24),
		logf:    opts.Logf,
		regions: slices.Clone(defaultRegions),
	}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	s.ServiceIP = s.host(1)
	s.Dir = filepath.Join(base, "nodesim-"+s.ID)
	s.svcNS = "nodesim-" + s.ID + "-svc"
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	if err := s.writeOwner(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(s.Dir, "svc"), 0o755); err != nil {
		return nil, err
	}
	root, err := cgroup2Root()
	if err != nil {
		return nil, err
	}
	if s.cgRoot, err = newCgroup(filepath.Join(root, "nodesim-"+s.ID)); err != nil {
		return nil, err
	}
	if s.svcCg, err = newCgroup(filepath.Join(s.cgRoot.path, "svc")); err != nil {
		return nil, err
	}
	if err := s.makeServiceNetwork(ctx); err != nil {
		return nil, err
	}
	s.client = s.newHTTPClient()
	if err := s.startAWS(ctx); err != nil {
		return nil, err
	}
	s.logf("nodesim %s: service namespace %s, network %s, AWS endpoint %s at %s, directory %s (if this process dies: go run ./cmd/nodesim -clean %s)",
		s.ID, s.svcNS, s.Subnet, AWSEndpoint, s.ServiceIP, s.Dir, s.ID)
	return s, nil
}

// host is the address with host part h in the subnet.
func (s *Sim) host(h int) netip.Addr {
	a := s.Subnet.Addr().As4()
	a[3] = byte(h)
	return netip.AddrFrom4(a)
}

// NodeIP is the address plan: the i-th node (from 0) gets .11, .12, ...
func (s *Sim) NodeIP(i int) netip.Addr { return s.host(firstNodeHost + i) }

// ServiceNamespace is the name of the service namespace (ip netns), where `ip netns exec NAME psql -h
// NODE-IP ...` reaches the nodes.
func (s *Sim) ServiceNamespace() string { return s.svcNS }

// makeServiceNetwork creates the service namespace and the bridge in it, with the service address.
func (s *Sim) makeServiceNetwork(ctx context.Context) error {
	if err := addNetns(ctx, s.svcNS); err != nil {
		return err
	}
	f, err := os.Open(netnsPath(s.svcNS))
	if err != nil {
		return err
	}
	s.svcNSFile = f
	for _, args := range [][]string{
		{"-n", s.svcNS, "link", "add", "br0", "type", "bridge"},
		{"-n", s.svcNS, "addr", "add", netip.PrefixFrom(s.ServiceIP, s.Subnet.Bits()).String(), "dev", "br0"},
		{"-n", s.svcNS, "link", "set", "br0", "up"},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			return fmt.Errorf("making the bridge: %w", err)
		}
	}
	return nil
}

// Nodes are the nodes added so far, in order.
func (s *Sim) Nodes() []*Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes)
}

// Node is the node named name, or nil.
func (s *Sim) Node(name string) *Node {
	for _, n := range s.Nodes() {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Close removes everything the simulator made: its EC2 bridges stop, each node (its processes, loop
// devices, namespace and cgroup) goes, then the AWS endpoint, the service namespace, the cgroups and the
// directory. It can be called more than once.
func (s *Sim) Close() error {
	ctx := context.Background()
	s.mu.Lock()
	bridges := s.bridges
	s.bridges = nil
	s.mu.Unlock()
	for _, b := range bridges {
		b.Close()
	}
	var errs []error
	for _, n := range s.Nodes() {
		errs = append(errs, n.destroy(ctx))
	}
	s.mu.Lock()
	s.nodes = nil
	s.mu.Unlock()
	if s.svcCg != nil {
		errs = append(errs, s.svcCg.remove(ctx))
		s.svcCg = nil
	}
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	if s.svcNSFile != nil {
		_ = s.svcNSFile.Close()
		s.svcNSFile = nil
	}
	if s.svcNS != "" {
		errs = append(errs, delNetns(ctx, s.svcNS))
	}
	if s.cgRoot != nil {
		errs = append(errs, s.cgRoot.remove(ctx))
		s.cgRoot = nil
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// netnsPath is where ip netns keeps the namespace named name.
func netnsPath(name string) string { return "/run/netns/" + name }

// addNetns creates the network namespace name with IPv6 off (only IPv4 198.18 addresses exist in it) and
// its loopback up.
func addNetns(ctx context.Context, name string) error {
	if _, err := run(ctx, "ip", "netns", "add", name); err != nil {
		return err
	}
	if _, err := run(ctx, "nsenter", "--net="+netnsPath(name), "--", "sh", "-c",
		"echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6"); err != nil {
		return fmt.Errorf("turning IPv6 off in %s: %w", name, err)
	}
	_, err := run(ctx, "ip", "-n", name, "link", "set", "lo", "up")
	return err
}

// delNetns deletes the network namespace name (and the links in it) if it exists.
func delNetns(ctx context.Context, name string) error {
	if _, err := os.Stat(netnsPath(name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := run(ctx, "ip", "netns", "delete", name)
	return err
}
