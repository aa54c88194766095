package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cgroup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// Limits (Spec.Limits): each member's server processes run in their own cgroup,
//
//	pgnvme/<cluster name>-<8 hex digits of the data directory root's SHA-256>/<member name>
//
// (in the memory and blkio controllers on cgroup v1, in the unified hierarchy on v2), with the memory
// limit and, on the member's own device, the I/O limits. The postmaster is born there (StartPlaced) and
// every backend it starts inherits it. With a device (Limits.Device), a member's files live on a loop
// device of its own:
//
//	ROOT/NAME.img        the sparse disk image (Limits.DiskGiB)
//	ROOT/NAME/           its XFS file system, mounted here, owned by the server user
//	ROOT/NAME/data/      the member's data directory
//	ROOT/NAME/NAME.log   its server log (and NAME.pgbackrest/ with an archive)
//
// On cgroup v1 a buffered write is throttled only when a server process writes it back itself (fsync,
// or memory pressure in its cgroup); the kernel's flusher threads write the rest unthrottled. WAL commits
// and checkpoints' fsyncs are the server's own; v2 throttles all of them.
//
// With a latency (Limits.Latency), the image is served through the latency layer (internal/latencydisk),
// a detached FUSE server per member, and the loop device is attached to the file it serves:
//
//	ROOT/NAME.latency/disk   the image as the layer serves it (each read, write and flush held back)
//	ROOT/NAME.latency.pid    the layer's server (this provider's binary, started detached)
//	ROOT/NAME.latency.json   its latencies, rewritten and reloaded in place when they change
//	ROOT/NAME.latency.log    its output
//
// The IOPS and throughput limits stay on the loop device above the layer, so they cap what reaches it.

// Limiter is the cgroup part of internal/cgroup the platform uses.
type Limiter interface {
	// Check says whether limits can be applied on this machine.
	Check() error
	Ensure(group string) error
	Set(group string, l cgroup.Limits) error
	Join(group string, pid int) error
	// Contains errs with fs.ErrNotExist for a process that has ended or is exiting.
	Contains(group string, pid int) (bool, error)
	Remove(group string) error
	Exists(group string) bool
}

// Disks are the loop-device disks of internal/cgroup; l are the limits the disk is made or attached for
// (its latency layer).
type Disks interface {
	Check(l *localspec.Limits) error
	Create(ctx context.Context, image, mount string, sizeBytes int64, uid, gid int, l *localspec.Limits) (cgroup.Disk, error)
	// Attach with keep leaves a running latency layer's latency as it is (see AttachDisks).
	Attach(ctx context.Context, image, mount string, l *localspec.Limits, keep bool) (cgroup.Disk, error)
	Find(image, mount string) (cgroup.Disk, error)
	Remove(ctx context.Context, image, mount string) error
}

// loopDisks are Disks with internal/cgroup's functions and internal/latencydisk's layer.
type loopDisks struct{}

func (loopDisks) Check(l *localspec.Limits) error {
	err := cgroup.CheckDisks()
	if l.Latency() {
		if _, ferr := os.Stat("/dev/fuse"); ferr != nil {
			err = errors.Join(err, fmt.Errorf("a latency needs FUSE (/dev/fuse: %w): load the fuse module (modprobe fuse) or remove the latencies", ferr))
		}
	}
	return err
}
func (loopDisks) Create(ctx context.Context, image, mount string, size int64, uid, gid int, l *localspec.Limits) (cgroup.Disk, error) {
	return cgroup.CreateDisk(ctx, image, mount, size, uid, gid, latencyLayer(l, false))
}
func (loopDisks) Attach(ctx context.Context, image, mount string, l *localspec.Limits, keep bool) (cgroup.Disk, error) {
	return cgroup.AttachDisk(ctx, image, mount, latencyLayer(l, keep))
}

// Find and Remove look for a layer whatever the limits say now: one left by earlier limits is found and
// stopped.
func (loopDisks) Find(image, mount string) (cgroup.Disk, error) {
	return cgroup.FindDisk(image, mount, latencydisk.Layer{})
}
func (loopDisks) Remove(ctx context.Context, image, mount string) error {
	return cgroup.RemoveDisk(ctx, image, mount, latencydisk.Layer{})
}

// latencyLayer is the latency layer l asks for (with keep, one that runs keeps its latency); nil (none)
// without a latency.
func latencyLayer(l *localspec.Limits, keep bool) cgroup.Layer {
	if !l.Latency() {
		return nil
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return latencydisk.Layer{Latency: latencydisk.Latency{Read: ms(l.ReadLatencyMS), Write: ms(l.WriteLatencyMS), Flush: ms(l.FlushLatencyMS)}, KeepRunning: keep}
}

// CgroupName is the cgroup of member mb of s (relative to each controller's root).
func CgroupName(s Spec, mb Member) string {
	root, err := DataDirRoot(s)
	if err != nil {
		root = filepath.Dir(filepath.Clean(mb.DataDir))
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join("pgnvme", s.Name+"-"+hex.EncodeToString(sum[:4]), mb.Name)
}

// DiskImage and DiskMount are member mb's disk image and where it is mounted (only meaningful when s
// gives each member a device).
func DiskImage(mb Member) string { return DiskMount(mb) + ".img" }

// DiskMount is where member mb's device is mounted: the parent of its data directory.
func DiskMount(mb Member) string { return filepath.Dir(filepath.Clean(mb.DataDir)) }

// CheckLimits says, changing nothing, whether s's limits can be applied on this machine: root, the
// cgroup controllers, and for a device per member the loop-device tools and room for the disks. Nil when
// s has no limits.
func (m *Manager) CheckLimits(s Spec) error {
	if s.Limits == nil {
		return nil
	}
	errs := []error{m.limiter.Check()}
	if s.Limits.Device() {
		errs = append(errs, m.disks.Check(s.Limits))
		if root, err := DataDirRoot(s); err == nil {
			errs = append(errs, roomForDisks(s, root))
		}
	}
	return errors.Join(errs...)
}

// roomForDisks fails when the file system that will hold the disk images of s's members that have none
// yet has less free space than their size: the images are sparse, but a node whose disk cannot grow gets
// I/O errors.
func roomForDisks(s Spec, root string) error {
	var need int64
	for _, mb := range s.Members {
		if _, err := os.Stat(DiskImage(mb)); errors.Is(err, fs.ErrNotExist) {
			need += s.Limits.DiskGiB << 30
		}
	}
	if need == 0 {
		return nil
	}
	dir := root
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space under %s: %w", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) //nolint:gosec,unconvert // block counts fit in int64; Bsize is int32 on 32-bit Linux
	if free < need {
		return fmt.Errorf("the members' disks need %d GiB under %s (disk_gib = %d each) and only %d GiB are free: lower local.limits.disk_gib or free space",
			need>>30, dir, s.Limits.DiskGiB, free>>30)
	}
	return nil
}

// cgroupLimits are s's limits for a member whose device (zero when none) is dev.
func cgroupLimits(l *localspec.Limits, dev cgroup.Device) cgroup.Limits {
	out := cgroup.Limits{MemoryBytes: l.MemoryMiB << 20}
	if l.Device() && !dev.IsZero() {
		out.Device = dev
		out.ReadIOPS, out.WriteIOPS = l.ReadIOPS, l.WriteIOPS
		out.ReadBPS, out.WriteBPS = l.ReadMiBPerSecond<<20, l.WriteMiBPerSecond<<20
	}
	return out
}

// prepareMember gives mb what its limits need before its data is made or its server starts: its disk
// (created, or attached again after a restart of the machine) and its cgroup with the limits written.
// Nothing without limits.
func (m *Manager) prepareMember(ctx context.Context, s Spec, mb Member) error {
	if s.Limits == nil {
		return nil
	}
	var dev cgroup.Device
	if s.Limits.Device() {
		d, err := m.disks.Attach(ctx, DiskImage(mb), DiskMount(mb), s.Limits, false)
		if errors.Is(err, fs.ErrNotExist) {
			uid, gid := m.engine.RunAsIDs()
			tflog.Info(ctx, "creating the node's disk", map[string]any{"node": mb.Name, "image": DiskImage(mb), "gib": s.Limits.DiskGiB,
				"read_latency_ms": s.Limits.ReadLatencyMS, "write_latency_ms": s.Limits.WriteLatencyMS, "flush_latency_ms": s.Limits.FlushLatencyMS})
			d, err = m.disks.Create(ctx, DiskImage(mb), DiskMount(mb), s.Limits.DiskGiB<<30, uid, gid, s.Limits)
		}
		if err != nil {
			return fmt.Errorf("node %s: its disk: %w", mb.Name, err)
		}
		dev = d.Number
	}
	group := CgroupName(s, mb)
	if err := m.limiter.Ensure(group); err != nil {
		return fmt.Errorf("node %s: %w", mb.Name, err)
	}
	if err := m.limiter.Set(group, cgroupLimits(s.Limits, dev)); err != nil {
		return fmt.Errorf("node %s: writing its limits: %w", mb.Name, err)
	}
	return nil
}

// start starts member mb (as node n) in its cgroup when s has limits, else as localnode starts it.
func (m *Manager) start(ctx context.Context, s Spec, mb Member, n localnode.Node) error {
	if s.Limits == nil {
		return m.engine.Start(ctx, n)
	}
	if err := m.prepareMember(ctx, s, mb); err != nil {
		return err
	}
	group := CgroupName(s, mb)
	return m.engine.StartPlaced(ctx, n, func(pid int) error { return m.limiter.Join(group, pid) })
}

// ApplyLimits makes the members' limits what s asks for, in place: each member's cgroup limits rewritten
// (memory, IOPS, throughput) and its running server processes moved into its cgroup (a server started
// before limits were set); with no limits, the members' cgroups removed and their processes moved back
// to the root group. A device cannot come or go here: that is a replacement (localspec.ReplacementReason).
func (m *Manager) ApplyLimits(ctx context.Context, s Spec) error {
	var errs []error
	for _, mb := range s.Members {
		group := CgroupName(s, mb)
		if s.Limits == nil {
			if m.limiter.Exists(group) {
				tflog.Info(ctx, "removing the node's limits", map[string]any{"node": mb.Name, "cgroup": group})
				errs = append(errs, m.limiter.Remove(group))
			}
			continue
		}
		if !hasData(mb) {
			continue // a member not made yet gets its limits when it is
		}
		if err := m.prepareMember(ctx, s, mb); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.joinServer(group, Node(mb, localnode.RoleStandby)); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", mb.Name, err))
		}
	}
	return errors.Join(errs...)
}

// joinServer moves n's running server into group: the postmaster first, so what it starts from then on is
// born in the group, and then the processes it started, listed only after the postmaster moved (a list taken
// before it would miss a backend forked in between). It then checks each of the server's processes and
// moves any still outside, a few rounds at most. A process that ended meanwhile is skipped, and so is one
// that is exiting, which no cgroup takes (Limiter.Contains says both are gone).
func (m *Manager) joinServer(group string, n localnode.Node) error {
	pids, err := m.engine.ServerPIDs(n)
	if err != nil || len(pids) == 0 {
		return err
	}
	if err := m.limiter.Join(group, pids[0]); err != nil {
		return err
	}
	for range joinRounds {
		if pids, err = m.engine.ServerPIDs(n); err != nil {
			return err
		}
		var errs []error
		moved := 0
		for _, pid := range pids {
			in, err := m.limiter.Contains(group, pid)
			if errors.Is(err, fs.ErrNotExist) || in {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			moved++
			if err := m.limiter.Join(group, pid); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
		}
		if moved == 0 || len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	return fmt.Errorf("processes of %s kept appearing outside cgroup %s after %d rounds of moving them", n.Name, group, joinRounds)
}

// joinRounds bounds joinServer's check-and-move rounds.
const joinRounds = 5

// AttachDisks attaches and mounts again the disks of s's members whose images exist but are not in use
// (after a restart of the machine), so their data is where Observe looks; a latency layer that does not
// run is started first, one that runs keeps its latency (this runs at plan time too: ApplyLimits changes
// it). Nothing without devices.
func (m *Manager) AttachDisks(ctx context.Context, s Spec) error {
	if !s.Limits.Device() {
		return nil
	}
	var errs []error
	for _, mb := range s.Members {
		if _, err := os.Stat(DiskImage(mb)); err != nil {
			continue
		}
		if _, err := m.disks.Attach(ctx, DiskImage(mb), DiskMount(mb), s.Limits, true); err != nil {
			errs = append(errs, fmt.Errorf("node %s: attaching its disk again: %w", mb.Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeLimits removes member mb's cgroup and, when s gives members a device, its disk (unmounted,
// detached, image deleted). Its server must be stopped and its files removed first. What is gone is
// success.
func (m *Manager) removeLimits(ctx context.Context, s Spec, mb Member) error {
	errs := []error{m.limiter.Remove(CgroupName(s, mb))}
	if s.Limits.Device() {
		errs = append(errs, m.disks.Remove(ctx, DiskImage(mb), DiskMount(mb)))
	}
	return errors.Join(errs...)
}

// memberDevice is mb's block device ("" when it has none or it is not attached).
func (m *Manager) memberDevice(s Spec, mb Member) string {
	if !s.Limits.Device() {
		return ""
	}
	d, err := m.disks.Find(DiskImage(mb), DiskMount(mb))
	if err != nil {
		return ""
	}
	return d.Device
}
