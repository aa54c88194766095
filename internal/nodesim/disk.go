package nodesim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// diskLinkPrefix is how AWS's udev rules name an instance-store disk's by-id link (the serial follows).
const diskLinkPrefix = "nvme-Amazon_EC2_NVMe_Instance_Storage_AWS"

// disk is one simulated instance-store disk: a sparse file on a loop device, linked in the node's by-id
// directory.
type disk struct {
	file string
	dev  string
	link string
}

// AttachDisk gives the node one more empty instance-store disk: a sparse file of the node's disk size on
// a new loop device, with a by-id link under a fresh serial. A running node sees it at once (hot plug).
func (n *Node) AttachDisk(ctx context.Context) error {
	n.mu.Lock()
	n.diskN++
	k := n.diskN
	n.mu.Unlock()
	file := filepath.Join(n.Dir, "disks", fmt.Sprintf("disk%d.img", k))
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(n.diskBytes); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := run(ctx, "losetup", "--find", "--show", file)
	if err != nil {
		_ = os.Remove(file)
		return fmt.Errorf("attaching a loop device for node %s: %w", n.Name, err)
	}
	d := &disk{file: file, dev: strings.TrimSpace(out)}
	if err := n.plugDevice(d.dev); err != nil {
		return errors.Join(fmt.Errorf("node %s: %w", n.Name, err), d.detach(ctx))
	}
	serial := make([]byte, 8)
	if _, err := rand.Read(serial); err != nil {
		return errors.Join(err, d.detach(ctx))
	}
	d.link = filepath.Join(n.runDir(), "disk", "by-id", diskLinkPrefix+strings.ToUpper(hex.EncodeToString(serial)))
	if err := os.Symlink(d.dev, d.link); err != nil {
		return errors.Join(err, d.detach(ctx))
	}
	n.mu.Lock()
	n.disks = append(n.disks, d)
	n.mu.Unlock()
	return nil
}

// plugDevice makes the device node dev (/dev/loopN) in the running node's own /dev (see nodeDevScript),
// as devtmpfs makes it on a machine when a disk appears; a node not running gets it with its next boot.
func (n *Node) plugDevice(dev string) error {
	if !n.Running() {
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		return err
	}
	p := n.hostPath(dev)
	if err := syscall.Mknod(p, syscall.S_IFBLK|0o600, int(st.Rdev)); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making %s in the node's /dev: %w", dev, err)
	}
	return nil
}

// Disks are the node's instance-store disks' loop devices (/dev/loopN), in attach order.
func (n *Node) Disks() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var devs []string
	for _, d := range n.disks {
		devs = append(devs, d.dev)
	}
	return devs
}

// ReplaceDisks detaches the node's disks and attaches as many empty ones (an EC2 stop/start). The node
// must not be running.
func (n *Node) ReplaceDisks(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("node %s is running: kill it before its disks are replaced", n.Name)
	}
	n.mu.Lock()
	count := len(n.disks)
	n.mu.Unlock()
	if err := n.DetachDisks(ctx); err != nil {
		return err
	}
	for range count {
		if err := n.AttachDisk(ctx); err != nil {
			return err
		}
	}
	return nil
}

// detach removes the by-id link, detaches the loop device (only while it is still this disk's: the
// backing file says so) and removes the file.
func (d *disk) detach(ctx context.Context) error {
	var errs []error
	if d.link != "" {
		if err := os.Remove(d.link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.dev != "" {
		backing, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(d.dev), "loop", "backing_file"))
		if err == nil && strings.TrimSuffix(strings.TrimSpace(string(backing)), " (deleted)") == d.file {
			if _, err := run(ctx, "losetup", "--detach", d.dev); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(d.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DetachDisks unplugs the node's disks (their by-id links go, the loop devices are detached), as a failed
// or missing instance-store disk looks. A disk still mounted stays in use until it is unmounted.
func (n *Node) DetachDisks(ctx context.Context) error {
	n.mu.Lock()
	old := n.disks
	n.disks = nil
	n.mu.Unlock()
	var errs []error
	for _, d := range old {
		errs = append(errs, d.detach(ctx))
	}
	return errors.Join(errs...)
}
