package cgroup

import (
	"bufio"
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

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Disk is a block device of its own for one tree of processes: a loop device on a sparse file (with direct
// I/O, so the host's page cache does not hold a second copy), formatted with XFS and mounted. I/O limits
// set on its device number apply to it alone.
type Disk struct {
	// Image is the sparse file behind the device; Mount where it is mounted.
	Image, Mount string
	// Device is /dev/loopN and Number its device number; "" and zero while it is not attached.
	Device string
	Number Device
	// Mounted is true when Device is mounted at Mount.
	Mounted bool
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
// it with direct I/O, an XFS file system, mounted (noatime) at mount, which is created when missing and
// must otherwise be an empty directory, and owned by uid:gid (mode 0750). On error it removes what it made.
func CreateDisk(ctx context.Context, image, mount string, sizeBytes int64, uid, gid int) (d Disk, err error) {
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
			err = errors.Join(err, RemoveDisk(context.WithoutCancel(ctx), d.Image, d.Mount))
		}
	}()
	terr := f.Truncate(sizeBytes)
	if err := errors.Join(terr, f.Close()); err != nil {
		return d, fmt.Errorf("sizing disk image %s: %w", d.Image, err)
	}
	if err := attach(ctx, &d); err != nil {
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

// AttachDisk makes an existing disk usable again (after a restart of the machine): its image attached to a
// loop device and mounted at mount, each only when it is not already.
func AttachDisk(ctx context.Context, image, mount string) (Disk, error) {
	d, err := FindDisk(image, mount)
	if err != nil {
		return d, err
	}
	if d.Device == "" {
		if err := attach(ctx, &d); err != nil {
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

// FindDisk reports, changing nothing, the loop device image is attached to and whether it is mounted at
// mount. An image that does not exist is an error wrapping fs.ErrNotExist.
func FindDisk(image, mount string) (Disk, error) {
	d := Disk{Image: filepath.Clean(image), Mount: filepath.Clean(mount)}
	if _, err := os.Stat(d.Image); err != nil {
		return d, fmt.Errorf("disk image: %w", err)
	}
	devs, err := loopDevicesOf(d.Image)
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

// unmountTimeout bounds the retries of an unmount that finds the file system busy.
const unmountTimeout = 15 * time.Second

// RemoveDisk unmounts mount (when the image's device is mounted there), detaches every loop device on
// image, removes the image and the mount point (when empty). What is already gone is success.
func RemoveDisk(ctx context.Context, image, mount string) error {
	image, mount = filepath.Clean(image), filepath.Clean(mount)
	var errs []error
	devs, err := loopDevicesOf(image)
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
	if err := os.Remove(image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if entries, err := os.ReadDir(mount); err == nil && len(entries) == 0 {
		_ = os.Remove(mount)
	}
	return errors.Join(errs...)
}

// attach puts d.Image on a free loop device with direct I/O.
func attach(ctx context.Context, d *Disk) error {
	losetupMu.Lock()
	defer losetupMu.Unlock()
	out, err := runCmd(ctx, "losetup", "--find", "--show", "--direct-io=on", d.Image)
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

// loopDevicesOf lists the loop devices whose backing file is image, from /sys/block/loop*/loop/backing_file.
func loopDevicesOf(image string) ([]string, error) {
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
		if strings.TrimSpace(string(b)) == image {
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
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || unescapeMount(fields[4]) != dir {
			continue
		}
		for i, fld := range fields {
			if fld == "-" && i+2 < len(fields) {
				source, ok = unescapeMount(fields[i+2]), true
			}
		}
	}
	return source, ok, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
