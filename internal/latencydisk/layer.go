//go:build linux

package latencydisk

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/mountinfo"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The layer over a disk image ROOT/NAME.img is a detached process (it must outlive the provider, which
// Terraform starts for each command) that serves the image through FUSE:
//
//	ROOT/NAME.latency/disk   the served image (the loop device is attached to this file)
//	ROOT/NAME.latency.pid    the server's PID
//	ROOT/NAME.latency.json   its latency (rewritten, then SIGHUP, to change it in place)
//	ROOT/NAME.latency.log    its output
//
// The server is the provider's own binary run with ServerArg first (main calls MainIfServer; so must the
// TestMain of a test that starts one). After a restart of the machine nothing runs and nothing is mounted:
// Layer.Ensure starts it again before the disk is attached.

// ServerArg, as the first argument, makes the program the latency layer's server.
const ServerArg = "__pgnvme-latency-disk"

// Paths are the files of the layer over one image.
type Paths struct{ Dir, PID, Config, Log string }

// PathsOf are the layer's files for image.
func PathsOf(image string) Paths {
	base := strings.TrimSuffix(filepath.Clean(image), ".img") + ".latency"
	return Paths{Dir: base, PID: base + ".pid", Config: base + ".json", Log: base + ".log"}
}

// File is the file the layer over image serves: what the loop device is attached to.
func File(image string) string { return filepath.Join(PathsOf(image).Dir, FileName) }

// MainIfServer serves as the layer and exits when the program was started with ServerArg first;
// otherwise it returns at once.
func MainIfServer() {
	if len(os.Args) > 1 && os.Args[1] == ServerArg {
		os.Exit(serverMain(os.Args[2:]))
	}
}

// serverMain is the detached server: mount, serve until unmounted. SIGHUP re-reads the latency from the
// configuration file; SIGTERM and SIGINT unmount, unless the image is in use (a loop device is attached),
// in which case it serves on: pulling a disk from under a running file system is not a way to stop.
func serverMain(args []string) int {
	fl := flag.NewFlagSet(ServerArg, flag.ContinueOnError)
	image := fl.String("image", "", "the disk image to serve")
	if err := fl.Parse(args); err != nil || *image == "" {
		log.Printf("usage: %s -image ROOT/NAME.img", ServerArg)
		return 2
	}
	p := PathsOf(*image)
	l, err := readLatency(p.Config)
	if err != nil {
		log.Print(err)
		return 1
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	srv, err := Mount(*image, p.Dir, l)
	if err != nil {
		log.Print(err)
		return 1
	}
	log.Printf("serving %s at %s (PID %d): %s", *image, p.Dir, os.Getpid(), l)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGHUP {
				l, err := readLatency(p.Config)
				if err != nil {
					log.Printf("SIGHUP: %v; keeping %s", err, srv.Latency())
					continue
				}
				srv.SetLatency(l)
				log.Printf("SIGHUP: latency now %s", l)
				continue
			}
			err := srv.Unmount()
			switch {
			case errors.Is(err, syscall.EBUSY):
				log.Printf("%s: not unmounting %s: %v (detach its loop device first)", sig, p.Dir, err)
			case err != nil:
				// Not mounted here any more (detached): nothing of ours uses it; end the connection.
				log.Printf("%s: %s is not mounted here (%v): exiting", sig, p.Dir, err)
				os.Exit(0)
			}
		}
	}()
	err = srv.Serve()
	st := srv.Stats()
	log.Printf("unmounted; served %d reads, %d writes, %d flushes, at most %d at once", st.Reads, st.Writes, st.Flushes, st.MaxInFlight)
	if err != nil {
		log.Print(err)
		return 1
	}
	return 0
}

func readLatency(path string) (Latency, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Latency{}, fmt.Errorf("reading the latency: %w", err)
	}
	l, err := unmarshalLatency(b)
	if err != nil {
		return Latency{}, fmt.Errorf("reading the latency from %s: %w", path, err)
	}
	return l, nil
}

// Layer starts and stops the layer's server for disk images (cgroup.Layer).
type Layer struct {
	// Exe is the program run as the server, with ServerArg first; empty is this program (os.Executable).
	Exe string
	// Latency is what Ensure makes the server add.
	Latency Latency
	// KeepRunning leaves a running server's latency as it is: Ensure only starts one that does not run
	// (attaching disks again while planning, which must change nothing that runs).
	KeepRunning bool
}

const (
	startTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
	busyTimeout  = 3 * time.Second
	pollInterval = 10 * time.Millisecond
)

// File is File(image).
func (Layer) File(image string) string { return File(image) }

// Ensure makes the layer over image serve with l.Latency and returns the file to attach: a running server
// gets the new latency in place (configuration rewritten, SIGHUP; not with KeepRunning); otherwise one is
// started and waited for.
func (l Layer) Ensure(ctx context.Context, image string) (string, error) {
	image = filepath.Clean(image)
	p := PathsOf(image)
	cfg, err := marshalLatency(l.Latency)
	if err != nil {
		return "", err
	}
	pid, running := Running(image)
	mounted, err := mountedLayer(p.Dir, image)
	if err != nil {
		return "", err
	}
	if running && mounted {
		if old, err := os.ReadFile(p.Config); l.KeepRunning || err == nil && string(old) == string(cfg) {
			return File(image), nil
		}
		if err := writeFileAtomic(p.Config, cfg); err != nil {
			return "", fmt.Errorf("changing the latency of %s: %w", image, err)
		}
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			return "", fmt.Errorf("changing the latency of %s (PID %d): %w", image, pid, err)
		}
		return File(image), nil
	}
	if running {
		// Alive but not (or no longer) mounted: it is of no use; start afresh.
		if err := stopPID(pid); err != nil {
			return "", err
		}
	}
	if mounted {
		// A server that died leaves its mount behind (reads there fail with ENOTCONN).
		if err := syscall.Unmount(p.Dir, 0); err != nil {
			return "", fmt.Errorf("the latency layer of %s is not running but %s is still mounted and in use (%w): "+
				"the node's disk lost what was under it; stop the node, unmount its file system, detach its loop device "+
				"(losetup -j %s) and apply again", image, p.Dir, err, File(image))
		}
	}
	exe := l.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("the latency layer runs this program, whose path is unknown: %w", err)
		}
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return "", err
	}
	if err := writeFileAtomic(p.Config, cfg); err != nil {
		return "", err
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		return "", fmt.Errorf("starting the latency layer: setsid (util-linux) is not installed: %w", err)
	}
	// sh starts the server in the background and exits, so the server is nobody's child to reap but init's.
	const launch = `log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!`
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", launch, "sh", p.Log, setsid, exe, ServerArg, "-image", image).Output()
	if err != nil {
		return "", fmt.Errorf("starting the latency layer of %s: %w", image, err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return "", fmt.Errorf("starting the latency layer of %s: the launcher printed %q, not a PID", image, out)
	}
	if err := os.WriteFile(p.PID, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return "", err
	}
	err = wait.Until(ctx, "the latency layer of "+image+" to serve", startTimeout, pollInterval, wait.Real, func(context.Context) (bool, error) {
		if _, ok := Running(image); !ok {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
				return false, fmt.Errorf("the latency layer's server (PID %d) exited: %s", pid, tail(p.Log))
			}
			return false, nil
		}
		m, err := mountedLayer(p.Dir, image)
		return m, err
	})
	if err != nil {
		_ = Stop(context.WithoutCancel(ctx), image)
		return "", fmt.Errorf("starting the latency layer of %s: %w", image, err)
	}
	return File(image), nil
}

// Stop ends the layer over image: unmounted (its loop device must be detached first; busy is retried a
// while), its server waited for (SIGKILL when it lingers), its files removed. Nothing there is success.
func (Layer) Stop(ctx context.Context, image string) error { return Stop(ctx, image) }

// Stop is Layer.Stop.
func Stop(ctx context.Context, image string) error {
	image = filepath.Clean(image)
	p := PathsOf(image)
	pid, running := Running(image)
	mounted, err := mountedLayer(p.Dir, image)
	if err != nil {
		return err
	}
	if mounted {
		attached, err := loopAttached(File(image))
		if err != nil {
			return fmt.Errorf("stopping the latency layer %s: %w", p.Dir, err)
		}
		if attached {
			return fmt.Errorf("not stopping the latency layer %s: a loop device is still attached to %s (losetup -j %s): detach it first", p.Dir, File(image), File(image))
		}
		_, err = wait.Retry(ctx, "unmounting "+p.Dir, busyTimeout, wait.Real, func(err error) bool { return errors.Is(err, syscall.EBUSY) },
			func(context.Context) (struct{}, error) { return struct{}{}, syscall.Unmount(p.Dir, 0) })
		if errors.Is(err, syscall.EBUSY) || errors.Is(err, context.DeadlineExceeded) {
			// No loop device of ours is on it, yet it is busy: a mount namespace made while it was mounted
			// (ip netns exec, unshare) holds a copy of it, or of the node's file system above it. Detach it
			// here; the server is stopped below, which ends the copies' I/O with errors nobody waits for.
			err = syscall.Unmount(p.Dir, syscall.MNT_DETACH)
		}
		if err != nil {
			return fmt.Errorf("unmounting the latency layer %s: %w", p.Dir, err)
		}
	}
	if running {
		if err := stopPID(pid); err != nil {
			return err
		}
	}
	var errs []error
	for _, f := range []string{p.PID, p.Config, p.Log} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(p.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopPID waits for the server pid to exit after its unmount, then sends SIGTERM and SIGKILL in turn.
func stopPID(pid int) error {
	alive := func(context.Context) (bool, error) { return !serverAlive(pid), nil }
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stopping the latency layer (PID %d): %w", pid, err)
			}
		}
		if err := wait.Until(context.Background(), fmt.Sprintf("PID %d to exit", pid), stopTimeout, pollInterval, wait.Real, alive); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the latency layer's server (PID %d) does not exit", pid)
}

// Running is the PID of the layer's server over image when one runs: the PID file's process, alive (not
// a zombie) and started as the server of image (a recycled PID is not).
func Running(image string) (int, bool) {
	image = filepath.Clean(image)
	b, err := os.ReadFile(PathsOf(image).PID)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !serverAlive(pid) {
		return 0, false
	}
	c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return 0, false
	}
	args := strings.Split(strings.TrimSuffix(string(c), "\x00"), "\x00")
	if i := slices.Index(args, ServerArg); i < 0 || !slices.Equal(args[i+1:], []string{"-image", image}) {
		return 0, false
	}
	return pid, true
}

// serverAlive reports whether pid is a live process (a zombie is not).
func serverAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	end := strings.LastIndexByte(string(stat), ')')
	return end >= 0 && len(stat) >= end+3 && stat[end+2] != 'Z' && stat[end+2] != 'X'
}

// mountedLayer reports whether the layer of image is mounted at dir (from /proc/self/mountinfo: type
// fuse.pgnvme-latency, source the image). Something else mounted there is an error.
func mountedLayer(dir, image string) (bool, error) {
	mounts, err := mountinfo.At(dir)
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		if m.FSType != "fuse."+fsType || m.Source != image {
			return false, fmt.Errorf("%s is mounted (%s from %s), but not as the latency layer of %s: unmount it by hand", dir, m.FSType, m.Source, image)
		}
	}
	return len(mounts) > 0, nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tail is the end of the log at path, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// loopAttached reports whether a loop device is attached to file and not being detached: one already
// detached (autoclear) that something still holds open goes at its last close, so it does not count.
func loopAttached(file string) (bool, error) {
	matches, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return false, err
	}
	for _, m := range matches {
		if b, err := os.ReadFile(m); err != nil || strings.TrimSpace(string(b)) != file {
			continue
		}
		if a, err := os.ReadFile(filepath.Join(filepath.Dir(m), "autoclear")); err == nil && strings.TrimSpace(string(a)) == "1" {
			continue
		}
		return true, nil
	}
	return false, nil
}
