//go:build linux

package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/mountinfo"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Disk is a block device of its own for one tree of processes: a loop device on a sparse file (with direct
// I/O, so the host's page cache does not hold a second copy), formatted with XFS and mounted. I/O limits
// set on its device number apply to it alone. With a Layer, the loop device is attached to the file the
// layer serves the image as (the latency layer, internal/latencydisk), not to the image itself.
type Disk struct {
	// Image is the sparse file behind the device; Mount where it is mounted.
	Image, Mount string
	// Device is /dev/loopN and Number its device number; "" and zero while it is not attached.
	Device string
	Number Device
	// Mounted is true when Device is mounted at Mount.
	Mounted bool
}

// A Layer serves a disk's image through something in between; nil means none.
type Layer interface {
	// Ensure makes the layer over image serve (started when it does not run) and returns the file to
	// attach the loop device to.
	Ensure(ctx context.Context, image string) (string, error)
	// File is that file, whether or not the layer serves now.
	File(image string) string
	// Stop ends the layer over image, once no loop device is attached to its file. Nothing running is
	// success.
	Stop(ctx context.Context, image string) error
}

// diskPrograms are what CreateDisk runs.
var diskPrograms = []string{"losetup", "mkfs.xfs"}

// CheckDisks says, changing nothing, whether loop-device disks can be made here.
func CheckDisks() error {
	var errs []error
	for _, p := range diskPrograms {
		if _, err := exec.LookPath(p); err != nil {
			pkg := map[string]string{"losetup": "mount", "mkfs.xfs": "xfsprogs"}[p]
			errs = append(errs, fmt.Errorf("%s is not installed: install it (Debian: apt-get install %s)", p, pkg))
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		errs = append(errs, fmt.Errorf("this machine has no loop devices (/dev/loop-control: %w): load the loop module (modprobe loop) or remove the I/O limits and disk_gib", err))
	}
	return errors.Join(errs...)
}

// losetupMu serialises attaching loop devices within this process, so two disks never race for the same
// free device.
var losetupMu sync.Mutex

// CreateDisk makes a new disk: the sparse file image of sizeBytes (which must not exist), a loop device on
// it (or on layer's file over it) with direct I/O, an XFS file system, mounted (noatime) at mount, which is
// created when missing and must otherwise be an empty directory, and owned by uid:gid (mode 0750). On
// error it removes what it made.
func CreateDisk(ctx context.Context, image, mount string, sizeBytes int64, uid, gid int, layer Layer) (d Disk, err error) {
	d = Disk{Image: filepath.Clean(image), Mount: filepath.Clean(mount)}
	if entries, err := os.ReadDir(d.Mount); err == nil && len(entries) > 0 {
		return d, fmt.Errorf("mount point %s is not empty: a node's disk is mounted on an empty directory", d.Mount)
	}
	f, err := os.OpenFile(d.Image, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return d, fmt.Errorf("creating disk image: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, RemoveDisk(context.WithoutCancel(ctx), d.Image, d.Mount, layer))
		}
	}()
	terr := f.Truncate(sizeBytes)
	if err := errors.Join(terr, f.Close()); err != nil {
		return d, fmt.Errorf("sizing disk image %s: %w", d.Image, err)
	}
	if err := attach(ctx, &d, layer); err != nil {
		return d, err
	}
	if _, err := runCmd(ctx, "mkfs.xfs", "-q", d.Device); err != nil {
		return d, err
	}
	if err := os.MkdirAll(d.Mount, 0o750); err != nil {
		return d, err
	}
	if err := mountDisk(&d); err != nil {
		return d, err
	}
	if err := errors.Join(os.Chown(d.Mount, uid, gid), os.Chmod(d.Mount, 0o750)); err != nil {
		return d, fmt.Errorf("disk %s: %w", d.Mount, err)
	}
	return d, nil
}

// AttachDisk makes an existing disk usable again (after a restart of the machine): layer serving its image
// (started when it does not run; a running one takes its settings in place), the image (or layer's file)
// attached to a loop device and mounted at mount, each only when it is not already.
func AttachDisk(ctx context.Context, image, mount string, layer Layer) (Disk, error) {
	d, err := FindDisk(image, mount, layer)
	if err != nil {
		return d, err
	}
	if layer != nil {
		// Before attaching: after a restart the layer must serve again first. A running layer only takes
		// its (possibly changed) settings.
		if _, err := layer.Ensure(ctx, d.Image); err != nil {
			return d, err
		}
	}
	if d.Device == "" {
		if err := attach(ctx, &d, layer); err != nil {
			return d, err
		}
	}
	if !d.Mounted {
		if err := os.MkdirAll(d.Mount, 0o750); err != nil {
			return d, err
		}
		if err := mountDisk(&d); err != nil {
			return d, err
		}
	}
	return d, nil
}

// FindDisk reports, changing nothing, the loop device image (or layer's file over it) is attached to and
// whether it is mounted at mount. An image that does not exist is an error wrapping fs.ErrNotExist.
func FindDisk(image, mount string, layer Layer) (Disk, error) {
	d := Disk{Image: filepath.Clean(image), Mount: filepath.Clean(mount)}
	if _, err := os.Stat(d.Image); err != nil {
		return d, fmt.Errorf("disk image: %w", err)
	}
	devs, err := loopDevicesOf(backings(d.Image, layer)...)
	if err != nil {
		return d, err
	}
	if len(devs) > 0 {
		d.Device = devs[0]
		if d.Number, err = deviceNumber(d.Device); err != nil {
			return d, err
		}
	}
	src, ok, err := mountedAt(d.Mount)
	if err != nil {
		return d, err
	}
	if ok {
		if d.Device == "" || src != d.Device {
			return d, fmt.Errorf("%s is mounted from %s, not from the disk image %s: unmount it by hand", d.Mount, src, d.Image)
		}
		d.Mounted = true
	}
	return d, nil
}

// unmountTimeout bounds the retries of an unmount that finds the file system busy; detachGrace the wait
// for a detached loop device to let go of its file.
const (
	unmountTimeout = 15 * time.Second
	detachGrace    = 3 * time.Second
)

// RemoveDisk unmounts mount (when the image's device is mounted there), detaches every loop device on
// image (and on layer's file over it), stops layer, removes the image and the mount point (when empty).
// What is already gone is success.
func RemoveDisk(ctx context.Context, image, mount string, layer Layer) error {
	image, mount = filepath.Clean(image), filepath.Clean(mount)
	var errs []error
	devs, err := loopDevicesOf(backings(image, layer)...)
	if err != nil {
		errs = append(errs, err)
	}
	if src, ok, err := mountedAt(mount); err != nil {
		errs = append(errs, err)
	} else if ok {
		if !slices.Contains(devs, src) {
			return fmt.Errorf("%s is mounted from %s, not from the disk image %s: refusing to unmount it", mount, src, image)
		}
		// Processes that were just killed may still be closing their files there: busy is retried.
		_, err := wait.Retry(ctx, "unmounting "+mount, unmountTimeout, wait.Real, func(err error) bool { return errors.Is(err, syscall.EBUSY) },
			func(context.Context) (struct{}, error) { return struct{}{}, syscall.Unmount(mount, 0) })
		if err != nil {
			return fmt.Errorf("unmounting %s: %w (a process still uses it: find it with fuser -vm %s)", mount, err, mount)
		}
	}
	for _, dev := range devs {
		if _, err := runCmd(ctx, "losetup", "--detach", dev); err != nil {
			errs = append(errs, err)
		}
	}
	if layer != nil && len(devs) > 0 && len(errs) == 0 {
		// A loop device still open somewhere is only marked to detach on its last close (autoclear), and
		// holds the layer's file until then: give it a moment. It can stay open for long: a process that
		// made a mount namespace of its own while the disk was mounted (ip netns exec, unshare) holds a copy
		// of the mount, and so the device, until it exits. layer.Stop copes with that; waiting longer would not.
		_ = wait.Until(ctx, "the loop devices of "+image+" to detach", detachGrace, 20*time.Millisecond, wait.Real, func(context.Context) (bool, error) {
			left, err := loopDevicesOf(backings(image, layer)...)
			return len(left) == 0, err
		})
	}
	if layer != nil {
		if err := layer.Stop(ctx, image); err != nil {
			// The image stays: a layer that still serves it must find it.
			return errors.Join(append(errs, err)...)
		}
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if entries, err := os.ReadDir(mount); err == nil && len(entries) == 0 {
		_ = os.Remove(mount)
	}
	return errors.Join(errs...)
}

// attach puts d.Image (or, with layer, the file layer serves it as, the layer started when it does not
// run) on a free loop device with direct I/O.
func attach(ctx context.Context, d *Disk, layer Layer) error {
	backing := d.Image
	if layer != nil {
		var err error
		if backing, err = layer.Ensure(ctx, d.Image); err != nil {
			return err
		}
	}
	losetupMu.Lock()
	defer losetupMu.Unlock()
	out, err := runCmd(ctx, "losetup", "--find", "--show", "--direct-io=on", backing)
	if err != nil {
		return err
	}
	d.Device = strings.TrimSpace(out)
	d.Number, err = deviceNumber(d.Device)
	return err
}

// mountDisk mounts d.Device at d.Mount.
func mountDisk(d *Disk) error {
	if err := syscall.Mount(d.Device, d.Mount, "xfs", syscall.MS_NOATIME, ""); err != nil {
		return fmt.Errorf("mounting %s at %s: %w", d.Device, d.Mount, err)
	}
	d.Mounted = true
	return nil
}

// backings are the files a loop device of image may be attached to: image, and layer's file over it.
func backings(image string, layer Layer) []string {
	if layer == nil {
		return []string{image}
	}
	return []string{image, filepath.Clean(layer.File(image))}
}

// loopDevicesOf lists the loop devices whose backing file is one of files, from
// /sys/block/loop*/loop/backing_file.
func loopDevicesOf(files ...string) ([]string, error) {
	matches, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue // detached meanwhile
		}
		if slices.Contains(files, strings.TrimSpace(string(b))) {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(m))))
		}
	}
	return out, nil
}

// deviceNumber reads dev's major:minor from /sys/block.
func deviceNumber(dev string) (Device, error) {
	s, err := readTrim(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		return Device{}, fmt.Errorf("device number of %s: %w", dev, err)
	}
	maj, minor, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(minor, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Device{}, fmt.Errorf("device number of %s: %q", dev, s)
	}
	return Device{Major: uint32(a), Minor: uint32(b)}, nil
}

// mountedAt reports what is mounted at dir (the last mount there), from /proc/self/mountinfo.
func mountedAt(dir string) (source string, ok bool, err error) {
	mounts, err := mountinfo.At(dir)
	if err != nil || len(mounts) == 0 {
		return "", false, err
	}
	return mounts[len(mounts)-1].Source, true, nil
}

// runCmd runs a program and returns its stdout; a failure carries its stderr.
func runCmd(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
