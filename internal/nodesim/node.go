package nodesim

import (
	"bytes"
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
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
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

// account is a user of the node, from its /etc/passwd.
type account struct {
	name        string
	uid, gid    int
	home, shell string
}

func (n *Node) account(name string) (account, error) {
	b, err := os.ReadFile(n.hostPath("/etc/passwd"))
	if err != nil {
		return account{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 7 || f[0] != name && f[2] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			return account{}, fmt.Errorf("user %s: %w", name, err)
		}
		return account{name: f[0], uid: uid, gid: gid, home: f[5], shell: f[6]}, nil
	}
	return account{}, fmt.Errorf("node %s has no user %s", n.Name, name)
}

func (n *Node) groupID(name string) (int, error) {
	b, err := os.ReadFile(n.hostPath("/etc/group"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 3 && (f[0] == name || f[2] == name) {
			return strconv.Atoi(f[2])
		}
	}
	return 0, fmt.Errorf("node %s has no group %s", n.Name, name)
}

// nsArgs is the command prefix that runs a program in the node's namespaces as acct (nil: root).
func (n *Node) nsArgs(acct *account) []string {
	n.mu.Lock()
	h := n.holder
	n.mu.Unlock()
	pid := 0
	if h != nil {
		pid = h.pid()
	}
	a := []string{"nsenter",
		fmt.Sprintf("--mount=/proc/%d/ns/mnt", pid),
		fmt.Sprintf("--uts=/proc/%d/ns/uts", pid),
		fmt.Sprintf("--ipc=/proc/%d/ns/ipc", pid),
		"--net=" + netnsPath(n.ns), "--wdns=/", "--"}
	if acct != nil && acct.uid != 0 {
		a = append(a, "setpriv", "--reuid="+strconv.Itoa(acct.uid), "--regid="+strconv.Itoa(acct.gid), "--init-groups", "--")
	}
	return a
}

// exec runs argv in the node as user (root when ""), with stdin, in the node's cgroup, and returns its
// output (stdout and stderr); the error holds the output.
func (n *Node) exec(ctx context.Context, stdin io.Reader, user string, argv ...string) (string, error) {
	if !n.Running() {
		return "", errNotBooted
	}
	acct, err := n.account(map[bool]string{true: "root", false: user}[user == ""])
	if err != nil {
		return "", err
	}
	cg, err := n.unitCgroup("exec")
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	env := []string{"PATH=" + defaultPath, "LANG=C.UTF-8", "HOME=" + acct.home, "USER=" + acct.name, "LOGNAME=" + acct.name}
	p, err := startProc(procSpec{argv: append(n.nsArgs(&acct), argv...), env: env, cgroup: cg, out: &syncWriter{w: &out}, stdin: stdin})
	if err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
		<-p.done
		return out.String(), fmt.Errorf("%s on %s: %w", strings.Join(argv, " "), n.Name, ctx.Err())
	}
	if p.err != nil {
		return out.String(), fmt.Errorf("%s on %s: %w: %s", strings.Join(argv, " "), n.Name, p.err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// syncWriter serialises writes (stdout and stderr share it).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Exec runs argv in the running node (its namespaces and cgroup) as user ("" is root) and returns its
// output; the error holds the output.
func (n *Node) Exec(ctx context.Context, user string, argv ...string) (string, error) {
	return n.exec(ctx, nil, user, argv...)
}

// Running reports whether the node is booted (its namespaces are held).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holder != nil && !n.holder.exited()
}

// Unit is the status of a unit in the running boot.
func (n *Node) Unit(name string) (UnitStatus, error) {
	n.mu.Lock()
	m := n.mgr
	n.mu.Unlock()
	if m == nil {
		return UnitStatus{}, errNotBooted
	}
	return m.status(name), nil
}

// Systemctl runs the node's systemctl (its unit runner) with args, as a program on the node would.
func (n *Node) Systemctl(args ...string) (int, string, error) {
	n.mu.Lock()
	m := n.mgr
	n.mu.Unlock()
	if m == nil {
		return 0, "", errNotBooted
	}
	code, out := m.systemctl(args)
	return code, out, nil
}

// Boot boots the node: its mount, UTS and IPC namespaces with the overlays and fresh tmpfs, the
// simulator's files, the unit runner with the enabled units started, and cloud-init's stages on the
// user-data (which, on the instance's first boot, write the files and run the install script). It returns
// when cloud-init is done; the units go on starting.
func (n *Node) Boot(ctx context.Context) (err error) {
	n.mu.Lock()
	if n.holder != nil && !n.holder.exited() {
		n.mu.Unlock()
		return fmt.Errorf("node %s is running already", n.Name)
	}
	n.boots++
	boot := n.boots
	n.mu.Unlock()
	defer func() {
		if err != nil {
			err = fmt.Errorf("booting node %s (boot %d): %w", n.Name, boot, err)
		}
	}()
	began := time.Now()
	if err := n.startHolder(ctx); err != nil {
		return err
	}
	if err := n.mountFilesystems(ctx); err != nil {
		return err
	}
	if boot == 1 {
		// The simulated AMI enables no service of its own: this machine's enabled units (its
		// postgresql.service, etcd.service, ...) are not the image's.
		for _, t := range bootTargets {
			if err := os.RemoveAll(n.hostPath("/etc/systemd/system/" + t + ".wants")); err != nil {
				return err
			}
		}
	}
	if err := n.writeSimulatorFiles(boot); err != nil {
		return err
	}
	m, err := newManager(n, boot)
	if err != nil {
		return err
	}
	ctl, err := m.serveSystemctl()
	if err != nil {
		m.close()
		return err
	}
	n.mu.Lock()
	n.mgr, n.ctl = m, ctl
	n.mu.Unlock()
	m.startBootUnits()
	if err := n.runCloudInit(ctx, m); err != nil {
		return err
	}
	n.sim.logf("node %s (%s) booted (boot %d) in %s", n.Name, n.IP, boot, time.Since(began).Round(time.Millisecond))
	return nil
}

// startHolder starts the process that holds the node's mount, UTS and IPC namespaces for the boot.
func (n *Node) startHolder(ctx context.Context) error {
	cg, err := n.unitCgroup("init")
	if err != nil {
		return err
	}
	out, err := logFile(filepath.Join(n.LogDir(), "init.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	h, err := startProc(procSpec{
		argv:   []string{"nsenter", "--net=" + netnsPath(n.ns), "--", "unshare", "--mount", "--uts", "--ipc", "--propagation", "private", "--", "sleep", "infinity"},
		env:    []string{"PATH=" + defaultPath},
		cgroup: cg,
		out:    out,
	})
	if err != nil {
		return err
	}
	own, _ := os.Readlink("/proc/self/ns/mnt")
	err = wait.Until(ctx, "the namespaces of node "+n.Name, stepTimeout, 10*time.Millisecond, nil, func(context.Context) (bool, error) {
		if h.exited() {
			return false, fmt.Errorf("the namespace holder exited: %s: %s", h.status(), tail(filepath.Join(n.LogDir(), "init.log"), 5))
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", h.pid()))
		mnt, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", h.pid()))
		if strings.TrimSpace(string(comm)) != "sleep" || mnt == own {
			return false, wait.NotYet(errors.New("not yet in its namespaces"))
		}
		return true, nil
	})
	if err != nil {
		_ = syscall.Kill(h.pid(), syscall.SIGKILL)
		return err
	}
	n.mu.Lock()
	n.holder = h
	n.mu.Unlock()
	return nil
}

// nodeDevScript gives the node a /dev of its own with the instance store's by-id links at
// /dev/disk/by-id, as udev makes them on EC2, so that the rendered default glob
// (bootstrap.DefaultInstanceStoreGlob) finds the disks. This machine's /dev may have no /dev/disk to
// mount on, and a directory made in its devtmpfs would be the whole machine's: so a tmpfs gets copies of
// this machine's device nodes and links (cp -a makes the nodes with mknod; --one-file-system leaves out
// what is mounted below /dev), the mounts below /dev again, and /dev/disk as the node's disk directory
// (/run/nodesim/disk, which DiskGlob also reads); then it is moved onto /dev. A disk attached later gets
// its device node there too (AttachDisk).
const nodeDevScript = `dev=/run/nodesim-dev
mkdir -p "$dev"
mount -t tmpfs -o mode=0755,nosuid,size=4m tmpfs "$dev"
cp -a --one-file-system /dev/. "$dev"/
for m in pts mqueue hugepages; do
  if mountpoint -q "/dev/$m"; then mkdir -p "$dev/$m" && mount --rbind "/dev/$m" "$dev/$m"; fi
done
mkdir -p "$dev/disk" "$dev/shm"
mount --bind ` + nodeRunDir + `/disk "$dev/disk"
mount --move "$dev" /dev
rmdir "$dev"
`

// mountFilesystems makes the node's file system view in its mount namespace: /etc, /usr and /var as
// overlays with the node's upper layers, fresh tmpfs on /run, /tmp and /dev/shm, the simulator directory
// on /run/nodesim, a /dev of the node's own with the instance store's links in /dev/disk/by-id
// (nodeDevScript), /run/postgresql as Debian's tmpfiles.d makes it, and the hostname.
func (n *Node) mountFilesystems(ctx context.Context) error {
	var b strings.Builder
	b.WriteString("set -eu\n")
	for _, o := range overlaid {
		root := filepath.Join(n.Dir, "root", o)
		fmt.Fprintf(&b, "mount -t overlay overlay -o lowerdir=%s,upperdir=%s/upper,workdir=%s/work %s\n", o, root, root, o)
	}
	fmt.Fprintf(&b, "mount -t tmpfs -o mode=0755,nosuid,nodev,size=256m tmpfs /run\n")
	fmt.Fprintf(&b, "mkdir -p %s /run/lock && mount --bind %s %s\n", nodeRunDir, n.runDir(), nodeRunDir)
	fmt.Fprintf(&b, "mount -t tmpfs -o mode=1777,nosuid,nodev,size=512m tmpfs /tmp\n")
	b.WriteString(nodeDevScript)
	fmt.Fprintf(&b, "mount -t tmpfs -o mode=1777,nosuid,nodev,size=512m tmpfs /dev/shm\n")
	fmt.Fprintf(&b, "install -d -m 2775 -o postgres -g postgres /run/postgresql\n")
	// Programs that ask whether systemd runs look for this (sd_booted(3)); the disk script then writes
	// a mount unit and starts it, as on EC2.
	fmt.Fprintf(&b, "mkdir -p /run/systemd/system\n")
	fmt.Fprintf(&b, "hostname %s\n", n.Name)
	// The sockets of a previous boot.
	_ = os.Remove(filepath.Join(n.runDir(), "systemctl.sock"))
	if entries, err := os.ReadDir(filepath.Join(n.runDir(), "notify")); err == nil {
		for _, e := range entries {
			_ = os.Remove(filepath.Join(n.runDir(), "notify", e.Name()))
		}
	}
	if _, err := n.exec(ctx, strings.NewReader(b.String()), "", "sh", "-s"); err != nil {
		return fmt.Errorf("mounting the node's file systems: %w", err)
	}
	return nil
}

// runCloudInit runs cloud-init's four boot stages in the node, as its systemd units do, with the
// manager's environment; its output goes to cloud-init.log.
func (n *Node) runCloudInit(ctx context.Context, m *manager) error {
	cg, err := n.unitCgroup("cloud-init")
	if err != nil {
		return err
	}
	logPath := filepath.Join(n.LogDir(), "cloud-init.log")
	// PGNVME_INSTALL=check: the install script checks the programs this machine provides and installs
	// nothing (no package repository has Patroni 4 for Debian 12 here).
	env := append([]string{"PATH=" + defaultPath, "LANG=C.UTF-8", "PGNVME_INSTALL=check"}, n.sim.InstanceEnv()...)
	root := &account{name: "root"}
	for _, stage := range [][]string{
		{"cloud-init", "init", "--local"},
		{"cloud-init", "init"},
		{"cloud-init", "modules", "--mode=config"},
		{"cloud-init", "modules", "--mode=final"},
	} {
		out, err := logFile(logPath)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "==== %s boot %d: %s\n", time.Now().Format("15:04:05.000"), m.boot, strings.Join(stage, " "))
		m.logf("%s", strings.Join(stage, " "))
		p, err := startProc(procSpec{argv: append(n.nsArgs(root), stage...), env: env, cgroup: cg, out: out})
		out.Close()
		if err != nil {
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			_ = syscall.Kill(p.pid(), syscall.SIGKILL)
			<-p.done
			return ctx.Err()
		}
		if p.failed() {
			return fmt.Errorf("%s: %s; the end of %s:\n%s", strings.Join(stage, " "), p.status(), logPath, tail(logPath, 30))
		}
	}
	return nil
}

// Kill ends the node as a lost machine ends: the unit runner stops restarting anything and every process
// of the node gets SIGKILL (cgroup.kill). The mount namespace, and with it the instance store's mount,
// goes with the last process. Its disks stay attached (a reboot keeps them; StopStart replaces them).
func (n *Node) Kill(ctx context.Context) error {
	n.mu.Lock()
	m, ctl := n.mgr, n.ctl
	n.mgr, n.ctl = nil, nil
	n.mu.Unlock()
	if m != nil {
		m.close()
	}
	if ctl != nil {
		_ = ctl.Close()
	}
	var err error
	if n.cg != nil {
		err = n.cg.kill(ctx)
	}
	n.mu.Lock()
	n.holder = nil
	n.mu.Unlock()
	return err
}

// StopStart is an EC2 stop and start: the node is killed, its instance-store disks are replaced with
// empty ones (new loop devices, new serials), and it boots again from the same user-data, as the same
// instance (cloud-init's once-per-instance work does not run again).
func (n *Node) StopStart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	if err := n.ReplaceDisks(ctx); err != nil {
		return err
	}
	return n.Boot(ctx)
}

// destroy removes the node: its processes, disks, namespace, cgroups.
func (n *Node) destroy(ctx context.Context) error {
	var errs []error
	errs = append(errs, n.Kill(ctx))
	n.mu.Lock()
	disks := n.disks
	n.disks = nil
	cgs := n.cgs
	n.cgs = map[string]*cgroup{}
	n.mu.Unlock()
	for _, d := range disks {
		errs = append(errs, d.detach(ctx))
	}
	// The veth first, synchronously: a namespace's links go with it only when the kernel gets round to it,
	// and a node added right after with the same address needs the veth's name.
	errs = append(errs, n.deleteVeth(ctx))
	errs = append(errs, delNetns(ctx, n.ns))
	for _, c := range cgs {
		errs = append(errs, c.remove(ctx))
	}
	if n.cg != nil {
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

// Logs is the end of each of the node's logs (the unit runner's, cloud-init's, each unit's), for failure
// messages.
func (n *Node) Logs(lines int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(n.LogDir())
	for _, e := range entries {
		p := filepath.Join(n.LogDir(), e.Name())
		fmt.Fprintf(&b, "--- %s\n%s\n", p, tail(p, lines))
	}
	return b.String()
}

// KillUnit sends SIGKILL to every process of unit (its cgroup: for pgnvme-patroni.service, Patroni and the
// PostgreSQL it started) and returns once they are gone, as `systemctl kill -s KILL` does. The unit runner
// then treats the main process's end as a crash (Restart=).
func (n *Node) KillUnit(ctx context.Context, unit string) error {
	if !n.Running() {
		return errNotBooted
	}
	cg, err := n.unitCgroup(unit)
	if err != nil {
		return err
	}
	return cg.kill(ctx)
}

// ReadFile reads the file at p as the running node sees it.
func (n *Node) ReadFile(p string) ([]byte, error) {
	if !n.Running() {
		return nil, errNotBooted
	}
	return os.ReadFile(n.hostPath(p))
}

// Process is a process of a node.
type Process struct {
	PID int
	// Unit is the unit it belongs to (its cgroup), or the simulator's own "init", "cloud-init", "exec".
	Unit string
	// Comm is its command name, Cmdline its arguments joined by spaces.
	Comm, Cmdline string
}

// Processes are the node's live processes, by their cgroups (the machine's PID namespace is shared, so
// this, not pgrep, tells a node's processes from anyone else's).
func (n *Node) Processes() ([]Process, error) {
	n.mu.Lock()
	cgs := make(map[string]*cgroup, len(n.cgs))
	for k, v := range n.cgs {
		cgs[k] = v
	}
	n.mu.Unlock()
	var out []Process
	for unit, cg := range cgs {
		pids, err := cg.procs()
		if err != nil {
			return nil, err
		}
		for _, pid := range pids {
			comm, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			cmdline, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err1 != nil || err2 != nil {
				continue // gone meanwhile
			}
			out = append(out, Process{PID: pid, Unit: unit, Comm: strings.TrimSpace(string(comm)),
				Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
		}
	}
	return out, nil
}
