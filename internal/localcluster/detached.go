package localcluster

import (
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
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// A local cluster has up to two detached scripts that work between applies: the durability watcher
// (watcher.go) and the backup scheduler (backups.go). Each is a POSIX shell script, one per cluster, run
// as the server user in its own session, that outlives the provider process. Its files are next to the
// manifest in the data directory root:
//
//	ROOT/BASE.sh    the script
//	ROOT/BASE.pid   its PID (written by the provider)
//	ROOT/BASE.log   its output, appended across restarts
//
// The provider stops both before it changes the cluster and starts them again when it is done (also
// after an error): Reconcile, ApplySettings and EnforceDurability pause them, Create starts them at its
// end, Destroy stops them and removes their files. A script exits by itself when its PID file no longer
// names it.

// detached is one such script: what it is called in messages, its files' base name, its content, whether
// a spec wants it, and its arguments for a spec.
type detached struct {
	what   string
	base   string
	script []byte
	// extra are files the script runs, by name, written beside it.
	extra  map[string][]byte
	wanted func(Spec) bool
	args   func(m *Manager, ctx context.Context, s Spec, pidPath string) ([]string, error)
}

// allDetached are every detached script of a local cluster.
func allDetached() []detached { return []detached{durabilityWatcher, backupScheduler} }

const (
	// detachedShell runs the scripts (its cmdline identifies them).
	detachedShell = "/bin/sh"
	// detachedStartTimeout bounds the wait for a started script to run; detachedStopTimeout the wait
	// for it to exit after each signal.
	detachedStartTimeout = 5 * time.Second
	detachedStopTimeout  = 3 * time.Second
	// detachedPollInterval is how often those waits look at the process.
	detachedPollInterval = 10 * time.Millisecond
)

// paths are the script, PID file and log of d for s.
func (d detached) paths(s Spec) (script, pid, log string, err error) {
	root, err := DataDirRoot(s)
	if err != nil {
		return "", "", "", err
	}
	return filepath.Join(root, d.base+".sh"), filepath.Join(root, d.base+".pid"), filepath.Join(root, d.base+".log"), nil
}

// detachedRunning reports whether d runs for s with the arguments s asks for now (see WatcherRunning).
func (m *Manager) detachedRunning(d detached, s Spec) (bool, error) {
	script, pidPath, _, err := d.paths(s)
	if err != nil {
		return false, err
	}
	pid, err := readDetachedPID(d, pidPath)
	if err != nil || pid == 0 {
		return false, err
	}
	cmdline, ok := detachedCmdline(pid, script)
	if !ok {
		return false, nil
	}
	if !d.wanted(s) {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args, err := d.args(m, ctx, s, pidPath)
	if err != nil {
		return false, err
	}
	return slices.Equal(cmdline, append([]string{detachedShell, script}, args...)), nil
}

// syncWatcher starts (or restarts) each detached script s wants, and stops the others.
func (m *Manager) syncWatcher(ctx context.Context, s Spec) error {
	var errs []error
	for _, d := range allDetached() {
		if d.wanted(s) {
			errs = append(errs, m.startDetached(ctx, d, s))
		} else {
			errs = append(errs, m.stopDetached(ctx, d, s, false))
		}
	}
	return errors.Join(errs...)
}

// stopWatcher stops every detached script of s (see stopDetached).
func (m *Manager) stopWatcher(ctx context.Context, s Spec, removeLog bool) error {
	var errs []error
	for _, d := range allDetached() {
		errs = append(errs, m.stopDetached(ctx, d, s, removeLog))
	}
	return errors.Join(errs...)
}

// pauseWatcher stops s's detached scripts before the provider changes the cluster and returns what to
// run when it is done: start again those s wants, the error joined to *errp.
func (m *Manager) pauseWatcher(ctx context.Context, s Spec, errp *error) (resume func(), err error) {
	if err := m.stopWatcher(ctx, s, false); err != nil {
		return func() {}, err
	}
	return func() {
		for _, d := range allDetached() {
			if !d.wanted(s) {
				continue
			}
			if err := m.startDetached(context.WithoutCancel(ctx), d, s); err != nil {
				*errp = errors.Join(*errp, err)
			}
		}
	}, nil
}

// startDetached stops any running d of s, writes the script and starts it detached as the server user:
// setsid, output appended to the log; then writes its PID file.
func (m *Manager) startDetached(ctx context.Context, d detached, s Spec) error {
	if err := m.stopDetached(ctx, d, s, false); err != nil {
		return err
	}
	script, pidPath, logPath, err := d.paths(s)
	if err != nil {
		return err
	}
	args, err := d.args(m, ctx, s, pidPath)
	if err != nil {
		return err
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		return fmt.Errorf("starting the %s: setsid (util-linux) is not installed: %w", d.what, err)
	}
	if setsid, err = filepath.Abs(setsid); err != nil {
		return err
	}
	if err := m.engine.WriteFileOwned(script, d.script, 0o755); err != nil {
		return fmt.Errorf("writing the %s: %w", d.what, err)
	}
	for name, content := range d.extra {
		if err := m.engine.WriteFileOwned(filepath.Join(filepath.Dir(script), name), content, 0o755); err != nil {
			return fmt.Errorf("writing the %s's %s: %w", d.what, name, err)
		}
	}
	if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
		if err := m.engine.WriteFileOwned(logPath, nil, 0o644); err != nil {
			return fmt.Errorf("creating the %s's log: %w", d.what, err)
		}
	}
	root := filepath.Dir(script)
	const launch = `log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!`
	launchArgs := []string{"-c", launch, "sh", logPath, setsid}
	if len(s.Members) > 0 && s.Members[0].TLS != nil {
		// The scripts' psql connects over TCP: with TLS, as the provider does (verify-full, client certificate).
		env, err := exec.LookPath("env")
		if err != nil {
			return fmt.Errorf("starting the %s: env is not installed: %w", d.what, err)
		}
		launchArgs = append(append(launchArgs, env), s.Members[0].TLS.Env()...)
	}
	launchArgs = append(append(launchArgs, detachedShell, script), args...)
	out, err := m.engine.RunAsServerUser(ctx, root, detachedShell, launchArgs...)
	if err != nil {
		return fmt.Errorf("starting the %s: %w", d.what, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return fmt.Errorf("starting the %s: the launcher printed %q, not a PID", d.what, out)
	}
	if err := m.engine.WriteFileOwned(pidPath, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("writing the %s's PID file: %w", d.what, err)
	}
	// setsid execs the shell a moment after the launcher printed its PID.
	err = wait.Until(ctx, fmt.Sprintf("PID %d to run %s", pid, script), detachedStartTimeout, detachedPollInterval, m.waitClock(),
		func(context.Context) (bool, error) {
			_, ok := detachedCmdline(pid, script)
			return ok, nil
		})
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("starting the %s: %w; see %s", d.what, err, logPath)
	}
	tflog.Info(ctx, fmt.Sprintf("cluster %s: %s started", s.Name, d.what), map[string]any{"pid": pid, "log": logPath})
	return nil
}

// stopDetached stops s's d: its PID file removed (so it would exit by itself), then SIGTERM to its
// process group, SIGKILL after 3 s; then the script removed, and with removeLog its log. Nothing running
// is success.
func (m *Manager) stopDetached(ctx context.Context, d detached, s Spec, removeLog bool) error {
	script, pidPath, logPath, err := d.paths(s)
	if err != nil {
		return err
	}
	pid, err := readDetachedPID(d, pidPath)
	if err != nil {
		return err
	}
	if err := os.Remove(pidPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stopping the %s: %w", d.what, err)
	}
	if pid > 0 {
		if _, ok := detachedCmdline(pid, script); ok {
			if err := m.killDetached(d, pid, script); err != nil {
				return err
			}
			tflog.Info(ctx, fmt.Sprintf("cluster %s: %s stopped", s.Name, d.what), map[string]any{"pid": pid})
		}
	}
	var errs []error
	files := []string{script, logPath}
	for name := range d.extra {
		files = append(files, filepath.Join(filepath.Dir(script), name))
	}
	for _, p := range files {
		if p == logPath && !removeLog {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killDetached ends d's process pid and its children (psql, pgbackrest, sleep): it leads its own process
// group (setsid). SIGTERM first, SIGKILL when it still runs detachedStopTimeout later. It takes no ctx:
// a stop once begun is finished.
func (m *Manager) killDetached(d detached, pid int, script string) error {
	var waitErr error
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stopping the %s (PID %d): %w", d.what, pid, err)
			}
		}
		waitErr = wait.Until(context.Background(), fmt.Sprintf("PID %d to exit", pid), detachedStopTimeout, detachedPollInterval, m.waitClock(),
			func(context.Context) (bool, error) {
				_, ok := detachedCmdline(pid, script)
				return !ok, nil
			})
		if waitErr == nil {
			return nil
		}
	}
	return fmt.Errorf("stopping the %s: PID %d still runs after SIGKILL: %w", d.what, pid, waitErr)
}

// readDetachedPID reads d's PID file; 0 when there is none.
func readDetachedPID(d detached, path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the %s's PID file: %w", d.what, err)
	}
	// Half-written or foreign: nothing to stop.
	if pid, convErr := strconv.Atoi(strings.TrimSpace(string(b))); convErr == nil && pid > 0 {
		return pid, nil
	}
	return 0, nil
}

// detachedCmdline is the command line of pid when it is a live (not zombie) process running script: a
// recycled PID is not the script.
func detachedCmdline(pid int, script string) ([]string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	if end := strings.LastIndexByte(string(stat), ')'); end < 0 || len(stat) < end+3 || stat[end+2] == 'Z' || stat[end+2] == 'X' {
		return nil, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(args) < 2 || args[0] != detachedShell || args[1] != script {
		return nil, false
	}
	return args, true
}
