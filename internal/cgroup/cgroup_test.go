//go:build linux

package cgroup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cgroup"
)

// group is a fresh group name for t, removed (with its processes moved out) when t ends.
func group(t *testing.T, h *cgroup.Hierarchy) string {
	t.Helper()
	name := fmt.Sprintf("tf-acc-cgroup/%d-%s", os.Getpid(), strings.ToLower(t.Name()))
	if err := h.Ensure(name); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Remove(name); err != nil {
			t.Errorf("Remove: %v", err)
		}
		if h.Exists(name) {
			t.Errorf("cgroup %s is left after Remove", name)
		}
	})
	return name
}

func hierarchy(t *testing.T) *cgroup.Hierarchy {
	t.Helper()
	h := cgroup.Open("")
	if err := h.Check(); err != nil {
		t.Fatalf("this machine cannot limit processes (the tests need root and the memory and blkio/io controllers): %v", err)
	}
	return h
}

// startIn starts argv inside group: a shell that waits on its stdin is placed in the group and only then
// execs argv, so argv and everything it starts are born in the group.
func startIn(t *testing.T, h *cgroup.Hierarchy, name string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `read -r _ && exec "$@"`, "sh"}, argv...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := h.Join(name, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("Join: %v", err)
	}
	if _, err := io.WriteString(in, "\n"); err != nil {
		t.Fatal(err)
	}
	_ = in.Close()
	return cmd
}

// A group holds the process put in it, its limits read back as written, and its memory use stays under
// the limit while the process reads a file four times larger through the page cache.
func TestGroup_memoryLimitHolds(t *testing.T) {
	h := hierarchy(t)
	name := group(t, h)
	const limit = 32 << 20
	if err := h.Set(name, cgroup.Limits{MemoryBytes: limit}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Get(name, cgroup.Device{}); err != nil || got.MemoryBytes != limit {
		t.Fatalf("Get = %+v, %v; want the memory limit %d", got, err, limit)
	}
	sleeper := startIn(t, h, name, "sleep", "30")
	if in, err := h.Contains(name, sleeper.Process.Pid); err != nil || !in {
		t.Errorf("Contains(PID %d, put in the group) = %v, %v; want true", sleeper.Process.Pid, in, err)
	}
	if in, err := h.Contains(name, os.Getpid()); err != nil || in {
		t.Errorf("Contains(the test's own PID %d) = %v, %v; want false", os.Getpid(), in, err)
	}
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	if in, err := h.Contains(name, sleeper.Process.Pid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Contains(PID %d, ended and reaped) = %v, %v; want fs.ErrNotExist", sleeper.Process.Pid, in, err)
	}

	file := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("dd", "if=/dev/urandom", "of="+file, "bs=1M", "count=128", "oflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v\n%s", err, out)
	}
	reader := startIn(t, h, name, "dd", "if="+file, "of=/dev/null", "bs=1M")
	if err := reader.Wait(); err != nil {
		t.Fatalf("reading 128 MiB in the group: %v", err)
	}
	st, err := h.Stats(name, cgroup.Device{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read 128 MiB under a 32 MiB limit: peak %d MiB, now %d MiB", st.MaxMemoryBytes>>20, st.MemoryBytes>>20)
	if st.MaxMemoryBytes > limit || st.MaxMemoryBytes < limit/2 {
		t.Errorf("peak memory %d bytes; want it at most the limit %d (and the page cache using it)", st.MaxMemoryBytes, limit)
	}
	if err := h.Set(name, cgroup.Limits{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get(name, cgroup.Device{}); got.MemoryBytes != 0 {
		t.Errorf("a zero limit removes it: %+v", got)
	}
}

// On a disk of its own, a group's read and write IOPS stay at their limits, measured from the group's own
// counters, while the same reads unthrottled run far faster; the limits read back as written and are
// removed by zero.
func TestDisk_iopsLimitsHold(t *testing.T) {
	if err := cgroup.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	h := hierarchy(t)
	name := group(t, h)
	dir := t.TempDir()
	ctx := context.Background()
	d, err := cgroup.CreateDisk(ctx, filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt"), 1<<30, os.Getuid(), os.Getgid(), nil)
	if err != nil {
		t.Fatalf("CreateDisk: %v", err)
	}
	t.Cleanup(func() {
		if err := cgroup.RemoveDisk(context.Background(), d.Image, d.Mount, nil); err != nil {
			t.Errorf("RemoveDisk: %v", err)
		}
		if _, err := cgroup.FindDisk(d.Image, d.Mount, nil); err == nil {
			t.Errorf("the disk image %s is left", d.Image)
		}
	})
	if !d.Mounted || d.Device == "" || d.Number.IsZero() {
		t.Fatalf("CreateDisk = %+v", d)
	}
	if again, err := cgroup.AttachDisk(ctx, d.Image, d.Mount, nil); err != nil || again.Device != d.Device {
		t.Fatalf("AttachDisk on an attached disk changes nothing: %+v, %v", again, err)
	}
	file := filepath.Join(d.Mount, "data")
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+file, "bs=1M", "count=64", "oflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v\n%s", err, out)
	}

	// iops runs dd with direct I/O of 8 kB blocks in the group for the duration and returns the
	// operations per second the group's counters show.
	iops := func(read bool, seconds int) float64 {
		t.Helper()
		before, err := h.Stats(name, d.Number)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"timeout", fmt.Sprint(seconds), "dd", "if=" + file, "of=/dev/null", "bs=8k", "iflag=direct"}
		if !read {
			args = []string{"timeout", fmt.Sprint(seconds), "dd", "if=/dev/zero", "of=" + file, "bs=8k", "count=8192", "oflag=direct", "conv=notrunc"}
		}
		start := time.Now()
		_ = startIn(t, h, name, args...).Wait() // timeout ends dd: exit status 124
		elapsed := time.Since(start).Seconds()
		after, err := h.Stats(name, d.Number)
		if err != nil {
			t.Fatal(err)
		}
		if read {
			return float64(after.ReadIOs-before.ReadIOs) / elapsed
		}
		return float64(after.WriteIOs-before.WriteIOs) / elapsed
	}
	// Unthrottled: the whole file once, counted and timed by dd itself. A 1 s timeout can end before dd
	// has started on a loaded machine, and the group's throttle counters count nothing on a device
	// without throttle rules (Linux 6.x skips blk-throttle there).
	free := func() float64 {
		t.Helper()
		report := filepath.Join(dir, "dd.txt")
		_ = startIn(t, h, name, "sh", "-c", `exec dd if="$1" of=/dev/null bs=8k iflag=direct 2>"$2"`, "sh", file, report).Wait()
		b, _ := os.ReadFile(report)
		// "8192+0 records in ... 67108864 bytes (67 MB, 64 MiB) copied, 0.0789 s, 851 MB/s"
		m := regexp.MustCompile(`(?s)^(\d+)\+\d+ records in.*copied, ([0-9.]+) s`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("unthrottled read of %s: dd said %q", file, b)
		}
		ios, _ := strconv.ParseFloat(string(m[1]), 64)
		secs, _ := strconv.ParseFloat(string(m[2]), 64)
		if ios == 0 || secs <= 0 {
			t.Fatalf("unthrottled read of %s: dd said %q", file, b)
		}
		return ios / secs
	}()
	l := cgroup.Limits{Device: d.Number, ReadIOPS: 200, WriteIOPS: 100}
	if err := h.Set(name, l); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Get(name, d.Number); err != nil || got != l {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, l)
	}
	reads, writes := iops(true, 3), iops(false, 3)
	t.Logf("8 kB direct reads: %.0f IOPS unthrottled, %.0f at a 200 limit; writes %.0f at a 100 limit", free, reads, writes)
	if reads < 150 || reads > 230 {
		t.Errorf("read IOPS %.0f under a limit of 200", reads)
	}
	if writes < 75 || writes > 115 {
		t.Errorf("write IOPS %.0f under a limit of 100", writes)
	}
	if free < 3*reads {
		t.Errorf("unthrottled reads (%.0f IOPS) are not clearly faster than throttled ones (%.0f): is the limit real?", free, reads)
	}
	if err := h.Set(name, cgroup.Limits{Device: d.Number}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get(name, d.Number); got != (cgroup.Limits{Device: d.Number}) {
		t.Errorf("zero limits remove the device's rules: %+v", got)
	}
}

// Without the controllers (an empty directory as the root), Check says which are missing.
func TestCheck_missingControllers(t *testing.T) {
	err := cgroup.Open(t.TempDir()).Check()
	if err == nil || !strings.Contains(err.Error(), "no cgroup memory controller") || !strings.Contains(err.Error(), "no cgroup blkio controller") {
		t.Fatalf("Check on an empty root = %v; want both controllers reported missing", err)
	}
}

// Remove moves the processes still in the group out (they keep running) and removes its empty parents.
func TestRemove_movesProcessesOut(t *testing.T) {
	h := hierarchy(t)
	name := fmt.Sprintf("tf-acc-cgroup-rm/%d/node", os.Getpid())
	if err := h.Ensure(name); err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, h, name, "sleep", "30")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := h.Remove(name); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if h.Exists(name) || h.Exists("tf-acc-cgroup-rm") {
		t.Errorf("the group or its parents are left")
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Errorf("the process should still run: %v", err)
	}
	if err := h.Remove(name); err != nil {
		t.Errorf("removing a removed group: %v", err)
	}
}
