package nodesim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

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
	err = wait.Until(ctx, "the namespaces of node "+n.Name, stepTimeout, 10*time.Millisecond, wait.Real, func(context.Context) (bool, error) {
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
	env := append([]string{"PATH=" + defaultPath, "LANG=C.UTF-8", "PGNVME_INSTALL=check"}, n.InstanceEnv()...)
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
