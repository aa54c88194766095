//go:build linux

package latencydisk_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cgroup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
)

// TestMain lets this test binary serve as the detached latency layer (Layer starts os.Executable()).
func TestMain(m *testing.M) {
	latencydisk.MainIfServer()
	os.Exit(m.Run())
}

// stack is a loop device with direct I/O on a file, formatted with XFS and mounted: the disk of a node.
type stack struct {
	dev, mnt string
}

// newStack attaches backing to a loop device with direct I/O, formats and mounts it; cleanup undoes each
// step by name.
func newStack(t *testing.T, backing string) *stack {
	t.Helper()
	out, err := exec.Command("losetup", "--find", "--show", "--direct-io=on", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup on %s: %v: %s", backing, err, out)
	}
	s := &stack{dev: strings.TrimSpace(string(out)), mnt: t.TempDir()}
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", s.dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", s.dev, err, out)
		}
	})
	dio, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(s.dev), "loop/dio"))
	if err != nil || strings.TrimSpace(string(dio)) != "1" {
		t.Fatalf("%s on %s has no direct I/O (loop/dio %q, %v)", s.dev, backing, dio, err)
	}
	if out, err := exec.Command("mkfs.xfs", "-q", s.dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v: %s", err, out)
	}
	if err := syscall.Mount(s.dev, s.mnt, "xfs", syscall.MS_NOATIME, ""); err != nil {
		t.Fatalf("mounting %s: %v", s.dev, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(s.mnt, 0); err != nil {
			t.Errorf("unmounting %s: %v", s.mnt, err)
		}
	})
	return s
}

// sparseImage makes a sparse file of size bytes in dir.
func sparseImage(t *testing.T, dir string, size int64) string {
	t.Helper()
	p := filepath.Join(dir, "node.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Truncate(size), f.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}

// serve mounts the layer over image at a new directory and serves it until cleanup, which unmounts it
// (after the loop device above it is gone: cleanups run last-registered first) and waits for Serve.
// A process that made a mount namespace of its own while the disk was mounted (the node simulator's
// nodes do, in other packages' tests running beside this one) keeps a copy of the mounts, and so the loop
// device and the layer's file, until it exits: then the layer is detached here as layer.Stop does, and
// the copy's I/O ends with this test binary, which serves it.
func serve(t *testing.T, image string, l latencydisk.Latency) (*latencydisk.Server, string) {
	t.Helper()
	dir := t.TempDir()
	srv, err := latencydisk.Mount(image, dir, l)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := srv.Unmount()
			if err == nil {
				break
			}
			if errors.Is(err, syscall.EBUSY) && time.Now().After(deadline) {
				holders := mountHolders(dir)
				if len(holders) == 0 {
					t.Errorf("unmounting the latency layer at %s: %v, and no other mount namespace holds it", dir, err)
					return
				}
				if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
					t.Errorf("detaching the latency layer at %s: %v", dir, err)
				}
				t.Logf("the latency layer at %s is held by other mount namespaces (PIDs %v): detached here", dir, holders)
				return
			}
			if !errors.Is(err, syscall.EBUSY) {
				t.Errorf("unmounting the latency layer at %s: %v", dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after the unmount")
		}
	})
	return srv, filepath.Join(dir, latencydisk.FileName)
}

// mountHolders lists the processes in a mount namespace other than this one's that have dir mounted.
func mountHolders(dir string) []int {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscanf(p.Name(), "%d", &pid); err != nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err != nil || ns == self {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid)); err == nil && strings.Contains(string(b), " "+dir+" ") {
			pids = append(pids, pid)
		}
	}
	return pids
}

const (
	blockSize = 8192 // PostgreSQL's page
	dataBytes = 64 << 20
)

// writeData writes a file of dataBytes at path with O_DIRECT and fsyncs it, so reads of it miss every cache.
func writeData(t *testing.T, path string) {
	t.Helper()
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_DIRECT, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := alignedBuf(1 << 20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for off := int64(0); off < dataBytes; off += int64(len(buf)) {
		if _, err := syscall.Pwrite(fd, buf, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Fsync(fd); err != nil {
		t.Fatal(err)
	}
}

func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	skip := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[skip : skip+n]
}

// readTimes times n O_DIRECT reads of blockSize at random offsets of path by workers goroutines; it
// returns the times and the reads per second.
func readTimes(t *testing.T, path string, n, workers int) ([]time.Duration, float64) {
	t.Helper()
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var mu sync.Mutex
	var times []time.Duration
	var wg sync.WaitGroup
	var firstErr error
	start := time.Now()
	for range workers {
		wg.Go(func() {
			buf := alignedBuf(blockSize)
			for range n / workers {
				off := rand.Int64N(dataBytes/blockSize) * blockSize
				t0 := time.Now()
				_, err := syscall.Pread(fd, buf, off)
				d := time.Since(t0)
				mu.Lock()
				times = append(times, d)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("reading %s: %v", path, firstErr)
	}
	return times, float64(len(times)) / time.Since(start).Seconds()
}

// fsyncTimes times n fdatasyncs of path, each after an 8 KiB write into its already allocated blocks
// (as PostgreSQL's WAL: no metadata changes, so the file system issues one device cache flush).
func fsyncTimes(t *testing.T, path string, n int) []time.Duration {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, blockSize)
	var times []time.Duration
	for i := range n {
		if _, err := f.WriteAt(buf, int64(i%64)*blockSize); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	return times
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// The latency is real: on XFS on a loop device with direct I/O on the layer's file (how a node's disk is
// built), every 8 KiB O_DIRECT random read takes at least the read latency and every fdatasync at least
// the flush latency (the layer answers an I/O no earlier than its latency after it arrived, as the docs
// say: the device's own time is hidden under the latency, not added to it); concurrent reads overlap
// (the layer is not a queue of one); changing the latency takes effect at once; and the counters show the
// I/O reached the layer. The latencies are chosen well above what the same stack takes without them, so a
// layer that held nothing fails even on a machine whose disk is slow (CI runs other packages' tests
// beside this one, and their fsyncs make this disk's take milliseconds).
func TestLatency_readsAndFlushesOnLoopXFS(t *testing.T) {
	const reads, fsyncs = 300, 60
	image := sparseImage(t, t.TempDir(), 512<<20)
	srv, file := serve(t, image, latencydisk.Latency{})
	st := newStack(t, file)
	data := filepath.Join(st.mnt, "data")
	writeData(t, data)

	baseReads, _ := readTimes(t, data, reads, 1)
	baseFsyncs := fsyncTimes(t, data, fsyncs)
	readLat := max(2*time.Millisecond, (4 * median(baseReads)).Round(100*time.Microsecond))
	flushLat := max(3*time.Millisecond, (4 * median(baseFsyncs)).Round(100*time.Microsecond))

	srv.SetLatency(latencydisk.Latency{Read: readLat, Flush: flushLat})
	// The lower bounds hold whatever the machine does; the upper ones and the overlap need CPU when a request
	// wakes, which other packages' tests beside this one may take: a measurement out of bounds is taken again,
	// up to three times, and a layer that is wrong is wrong every time.
	for attempt := 1; ; attempt++ {
		problems := measureLatencies(t, srv, data, reads, fsyncs, readLat, flushLat, baseReads, baseFsyncs)
		if len(problems) == 0 {
			break
		}
		if attempt == 3 {
			for _, p := range problems {
				t.Error(p)
			}
			break
		}
		t.Logf("attempt %d out of bounds, measuring again: %s", attempt, strings.Join(problems, "; "))
	}
}

// measureLatencies reads and flushes through srv at readLat and flushLat and returns what is out of bounds.
func measureLatencies(t *testing.T, srv *latencydisk.Server, data string, reads, fsyncs int, readLat, flushLat time.Duration, baseReads, baseFsyncs []time.Duration) []string {
	t.Helper()
	var problems []string
	before := srv.Stats()
	slowReads, _ := readTimes(t, data, reads, 1)
	slowFsyncs := fsyncTimes(t, data, fsyncs)
	after := srv.Stats()
	t.Logf("8 KiB O_DIRECT random reads: median %v without the latency, %v with %v", median(baseReads), median(slowReads), readLat)
	t.Logf("8 KiB write + fdatasync: median %v without the latency, %v with %v per flush", median(baseFsyncs), median(slowFsyncs), flushLat)
	t.Logf("the layer answered %d reads and %d flushes meanwhile", after.Reads-before.Reads, after.Flushes-before.Flushes)

	// A read takes at least the latency, and not much more than the latency plus the read without it.
	if got := median(slowReads); got < readLat {
		t.Errorf("the median read took %v, want at least %v", got, readLat)
	} else if most := readLat + median(baseReads) + time.Millisecond; got > most {
		problems = append(problems, fmt.Sprintf("the median read took %v, want at most %v", got, most))
	}
	// An fdatasync waits for at least one flush; XFS may add a journal write with a second one.
	if got := median(slowFsyncs); got < flushLat {
		t.Errorf("the median fdatasync took %v, want at least %v (one flush)", got, flushLat)
	} else if most := 2*flushLat + median(baseFsyncs) + 2*time.Millisecond; got > most {
		problems = append(problems, fmt.Sprintf("the median fdatasync took %v, want at most %v (two flushes, and the device's own time)", got, most))
	}
	if after.Reads-before.Reads < int64(reads) || after.Flushes-before.Flushes < int64(fsyncs) {
		t.Errorf("the layer saw %d reads and %d flushes, want at least %d and %d: I/O is bypassing it",
			after.Reads-before.Reads, after.Flushes-before.Flushes, reads, fsyncs)
	}

	// 8 readers at once: requests overlap in the layer, so the device does far more than one read per
	// latency (a layer that served one request at a time would cap it at 1 / readLat per second).
	times, perSecond := readTimes(t, data, 8*100, 8)
	t.Logf("8 concurrent readers: median %v, %.0f reads/s; at most %d I/Os held at once", median(times), perSecond, srv.Stats().MaxInFlight)
	if perSecond < 3/readLat.Seconds() || srv.Stats().MaxInFlight < 4 {
		problems = append(problems, fmt.Sprintf("8 concurrent readers did %.0f reads/s with at most %d in flight: the layer serialises I/O (want > %.0f/s)",
			perSecond, srv.Stats().MaxInFlight, 3/readLat.Seconds()))
	}
	return problems
}

// A latency under a millisecond is that latency, not a millisecond: NVMe's reads take about 0.1 ms, and a
// layer that held each request with time.Sleep (whose timers wake in whole milliseconds) made a 0.2 ms
// read latency 1.1 ms. Every read takes at least the latency; the reads' median must stay well under a
// millisecond: the latency, the read without it, and 0.4 ms for the kernel's timer latency and scheduling.
// A busy machine only adds time, so the best of three tries counts (a layer that rounds to a millisecond
// passes none of them).
func TestLatency_underAMillisecond(t *testing.T) {
	const reads = 300
	image := sparseImage(t, t.TempDir(), 512<<20)
	srv, file := serve(t, image, latencydisk.Latency{})
	st := newStack(t, file)
	data := filepath.Join(st.mnt, "data")
	writeData(t, data)

	const readLat = 200 * time.Microsecond
	var tries []string
	for try := range 3 {
		srv.SetLatency(latencydisk.Latency{})
		baseReads, _ := readTimes(t, data, reads, 1)
		srv.SetLatency(latencydisk.Latency{Read: readLat})
		slowReads, _ := readTimes(t, data, reads, 1)
		got, most := median(slowReads), readLat+median(baseReads)+400*time.Microsecond
		t.Logf("try %d: 8 KiB O_DIRECT random reads: median %v without the latency, %v with %v", try+1, median(baseReads), got, readLat)
		if least := slices.Min(slowReads); least < readLat {
			t.Fatalf("a read took %v with a read latency of %v", least, readLat)
		}
		if got <= most {
			return
		}
		tries = append(tries, fmt.Sprintf("%v (want at most %v)", got, most))
	}
	t.Errorf("with a read latency of %v the median read took %s: the layer holds sub-millisecond latencies too long", readLat, strings.Join(tries, ", "))
}

// medianRead is the median time of n 8 KiB O_DIRECT reads at random offsets of the first size bytes of path.
func medianRead(t *testing.T, path string, size int64, n int) time.Duration {
	t.Helper()
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := alignedBuf(blockSize)
	var times []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := syscall.Pread(fd, buf, rand.Int64N(size/blockSize)*blockSize); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	return median(times)
}

// The detached layer: Ensure starts the server (this test binary, as the provider's binary in use) and it
// serves the image; Ensure again with another latency changes it in place (same PID); a server killed
// with SIGKILL leaves a dead mount that Ensure replaces with a new server; Stop leaves no process, mount
// or file.
func TestLayer_ensureChangeRestartStop(t *testing.T) {
	image := sparseImage(t, t.TempDir(), 64<<20)
	p := latencydisk.PathsOf(image)
	ctx := t.Context()
	t.Cleanup(func() {
		if err := latencydisk.Stop(context.Background(), image); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if pid, ok := latencydisk.Running(image); ok {
			t.Errorf("the server (PID %d) still runs after Stop", pid)
		}
		for _, f := range []string{p.Dir, p.PID, p.Config, p.Log} {
			if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s is left after Stop (%v)", f, err)
			}
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), p.Dir) {
			t.Errorf("%s is still mounted after Stop", p.Dir)
		}
	})

	slow := latencydisk.Layer{Latency: latencydisk.Latency{Read: 3 * time.Millisecond}}
	file, err := slow.Ensure(ctx, image)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	pid, ok := latencydisk.Running(image)
	if !ok || file != latencydisk.File(image) {
		t.Fatalf("Ensure = %s; Running = %d, %v", file, pid, ok)
	}
	if st, err := os.Stat(file); err != nil || st.Size() != 64<<20 {
		t.Fatalf("the served file: %v, %v", st, err)
	}
	// At least the latency always; at most twice it when the machine leaves the layer CPU (measured again, up
	// to three times, when it does not).
	for attempt := 1; ; attempt++ {
		got := medianRead(t, file, 64<<20, 40)
		if got < 3*time.Millisecond {
			t.Errorf("median read through the layer at 3 ms: %v, want at least 3 ms", got)
		}
		if got <= 6*time.Millisecond {
			break
		}
		if attempt == 3 {
			t.Errorf("median read through the layer at 3 ms: %v, want at most 6 ms", got)
			break
		}
		t.Logf("attempt %d: median read through the layer at 3 ms: %v, measuring again", attempt, got)
	}

	fast := latencydisk.Layer{Latency: latencydisk.Latency{Read: 500 * time.Microsecond}}
	if _, err := fast.Ensure(ctx, image); err != nil {
		t.Fatalf("Ensure with another latency: %v", err)
	}
	if again, _ := latencydisk.Running(image); again != pid {
		t.Errorf("changing the latency restarted the server (PID %d -> %d); want it changed in place", pid, again)
	}
	// SIGHUP is asynchronous: the new latency holds within a moment.
	deadline := time.Now().Add(5 * time.Second)
	for got := medianRead(t, file, 64<<20, 40); got > 2*time.Millisecond; got = medianRead(t, file, 64<<20, 40) {
		if time.Now().After(deadline) {
			t.Fatalf("median read %v after the latency went from 3 ms to 0.5 ms", got)
		}
	}

	// As if the machine lost the server: its mount stays, dead.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := latencydisk.Running(image); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed server still runs")
		}
	}
	if _, err := fast.Ensure(ctx, image); err != nil {
		t.Fatalf("Ensure after the server died: %v", err)
	}
	if again, ok := latencydisk.Running(image); !ok || again == pid {
		t.Fatalf("after the server died, Ensure left Running = %d, %v", again, ok)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the new server does not serve: %v", err)
	}
}

// A node's disk on the layer is removed even while another mount namespace holds a copy of its mounts (a
// process that unshared its mounts while the disk was mounted, as `ip netns exec` does): the loop device
// then stays open after the detach, so the layer cannot be unmounted normally. RemoveDisk must still
// return without error, stop the layer's server and leave nothing mounted here; the held copy ends when
// its process does.
func TestLayer_removeWhileAnotherNamespaceHoldsTheDisk(t *testing.T) {
	dir := t.TempDir()
	image, mount := filepath.Join(dir, "node-1.img"), filepath.Join(dir, "node-1")
	ctx := t.Context()
	layer := latencydisk.Layer{Latency: latencydisk.Latency{Read: time.Millisecond}}
	d, err := cgroup.CreateDisk(ctx, image, mount, 512<<20, os.Getuid(), os.Getgid(), layer)
	if err != nil {
		t.Fatalf("CreateDisk: %v", err)
	}
	t.Cleanup(func() { _ = cgroup.RemoveDisk(context.Background(), image, mount, layer) })
	if err := os.WriteFile(filepath.Join(mount, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pid, ok := latencydisk.Running(image)
	if !ok {
		t.Fatal("no layer runs after CreateDisk")
	}

	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", holder.Process.Pid))
		if strings.Contains(string(b), mount) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unshared process never saw %s mounted", mount)
		}
	}

	start := time.Now()
	if err := cgroup.RemoveDisk(ctx, image, mount, latencydisk.Layer{}); err != nil {
		t.Fatalf("RemoveDisk with the disk held in another namespace: %v", err)
	}
	t.Logf("removed in %s with %s (loop %s) held elsewhere", time.Since(start).Round(time.Millisecond), mount, d.Device)
	if got, ok := latencydisk.Running(image); ok || serverAlive(pid) {
		t.Errorf("the layer's server still runs (PID %d / %d)", pid, got)
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(b), dir) {
		t.Errorf("something under %s is still mounted here", dir)
	}
	if _, err := os.Stat(image); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the image is left (%v)", err)
	}
}

// serverAlive reports whether pid runs (a zombie does not).
func serverAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
