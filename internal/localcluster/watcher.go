package localcluster

import (
	"context"
	_ "embed"
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

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The durability watcher keeps data_durability "preferred" writable between
// applies: a detached POSIX shell script (watcher.sh), one per cluster, run
// as the server user in its own session, that outlives the provider process.
// Every second it finds the primary, counts the named standbys streaming from
// it and, when the primary's synchronous_standby_names is not the value
// bootstrap.EffectiveSynchronousStandbyNames gives for that count, sets it
// with ALTER SYSTEM and reloads. Every value and every query is rendered here
// in Go (for each member as a possible primary and each count of streaming
// standbys) and passed as arguments: the script does no quoting.
//
// Its files, next to the manifest in the data directory root:
//
//	ROOT/pgnvme-durability.sh    the script
//	ROOT/pgnvme-durability.pid   its PID (written by the provider)
//	ROOT/pgnvme-durability.log   its output, appended across restarts
//
// It exits by itself when no member answers for watcherGiveUp in a row or
// when the PID file no longer names it.
//
// ALTER SYSTEM writes postgresql.auto.conf, which overrides pgnvme.conf
// (where every other setting, and the provider's synchronous_standby_names,
// lives). So the provider owns the setting while it works and the watcher
// owns it in between: Reconcile, ApplySettings and EnforceDurability stop the
// watcher first, remove the override from the primary (ALTER SYSTEM RESET,
// see clearOverride) before writing pgnvme.conf, and start the watcher again
// when they return (also after an error); Create starts it at its end;
// Destroy stops it and removes its files.

//go:embed watcher.sh
var watcherScript []byte

const (
	watcherScriptName = "pgnvme-durability.sh"
	watcherPIDName    = "pgnvme-durability.pid"
	watcherLogName    = "pgnvme-durability.log"
	// watcherGiveUp is how long the watcher runs on with no member answering.
	watcherGiveUp = 60 * time.Second
	// watcherShell runs the script (its cmdline identifies the watcher).
	watcherShell = "/bin/sh"
	// watcherStartTimeout bounds the wait for a started watcher to run the
	// script; watcherStopTimeout the wait for it to exit after each signal.
	watcherStartTimeout = 5 * time.Second
	watcherStopTimeout  = 3 * time.Second
	// watcherPollInterval is how often those waits look at the process.
	watcherPollInterval = 10 * time.Millisecond
)

// watcherPaths are the script, PID file and log of s's watcher.
func watcherPaths(s Spec) (script, pid, log string, err error) {
	root, err := DataDirRoot(s)
	if err != nil {
		return "", "", "", err
	}
	return filepath.Join(root, watcherScriptName), filepath.Join(root, watcherPIDName), filepath.Join(root, watcherLogName), nil
}

// WatcherWanted reports whether s gets a durability watcher: data durability
// "preferred", a synchronous number above 0 and at least one standby.
func WatcherWanted(s Spec) bool {
	return s.Synchronous.DataDurability == bootstrap.DurabilityPreferred && s.Synchronous.Number > 0 && len(s.Members) > 1
}

// WatcherRunning reports whether s's durability watcher runs with the
// arguments s asks for now. False means, when WatcherWanted(s), that the
// next Reconcile, ApplySettings or EnforceDurability must (re)start it: it
// died, gave up, or watches an older spec. A watcher that runs while s does
// not want one also reports true (as drift the other way).
func (m *Manager) WatcherRunning(s Spec) (bool, error) {
	script, pidPath, _, err := watcherPaths(s)
	if err != nil {
		return false, err
	}
	pid, err := readWatcherPID(pidPath)
	if err != nil || pid == 0 {
		return false, err
	}
	cmdline, ok := watcherCmdline(pid, script)
	if !ok {
		return false, nil
	}
	if !WatcherWanted(s) {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args, err := m.watcherArgs(ctx, s, pidPath)
	if err != nil {
		return false, err
	}
	return slices.Equal(cmdline, append([]string{watcherShell, script}, args...)), nil
}

// syncWatcher starts (or restarts) s's watcher when WatcherWanted(s), else
// stops it.
func (m *Manager) syncWatcher(ctx context.Context, s Spec) error {
	if !WatcherWanted(s) {
		return m.stopWatcher(ctx, s, false)
	}
	return m.startWatcher(ctx, s)
}

// pauseWatcher stops s's watcher before the provider changes the cluster and
// returns what to run when it is done: start the watcher again when s wants
// one, the error joined to *errp.
func (m *Manager) pauseWatcher(ctx context.Context, s Spec, errp *error) (resume func(), err error) {
	if err := m.stopWatcher(ctx, s, false); err != nil {
		return func() {}, err
	}
	return func() {
		if !WatcherWanted(s) {
			return
		}
		if err := m.startWatcher(context.WithoutCancel(ctx), s); err != nil {
			*errp = errors.Join(*errp, err)
		}
	}, nil
}

// startWatcher stops any watcher of s, writes the script and starts it
// detached as the server user: setsid, output appended to the log; then
// writes its PID file.
func (m *Manager) startWatcher(ctx context.Context, s Spec) error {
	if err := m.stopWatcher(ctx, s, false); err != nil {
		return err
	}
	script, pidPath, logPath, err := watcherPaths(s)
	if err != nil {
		return err
	}
	args, err := m.watcherArgs(ctx, s, pidPath)
	if err != nil {
		return err
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		return fmt.Errorf("starting the durability watcher: setsid (util-linux) is not installed: %w", err)
	}
	if setsid, err = filepath.Abs(setsid); err != nil {
		return err
	}
	if err := m.engine.WriteFileOwned(script, watcherScript, 0o755); err != nil {
		return fmt.Errorf("writing the durability watcher: %w", err)
	}
	if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
		if err := m.engine.WriteFileOwned(logPath, nil, 0o644); err != nil {
			return fmt.Errorf("creating the durability watcher's log: %w", err)
		}
	}
	root := filepath.Dir(script)
	const launch = `log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!`
	launchArgs := append([]string{"-c", launch, "sh", logPath, setsid, watcherShell, script}, args...)
	out, err := m.engine.RunAsServerUser(ctx, root, watcherShell, launchArgs...)
	if err != nil {
		return fmt.Errorf("starting the durability watcher: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return fmt.Errorf("starting the durability watcher: the launcher printed %q, not a PID", out)
	}
	if err := m.engine.WriteFileOwned(pidPath, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("writing the durability watcher's PID file: %w", err)
	}
	// setsid execs the shell a moment after the launcher printed its PID.
	err = wait.Until(ctx, fmt.Sprintf("PID %d to run %s", pid, script), watcherStartTimeout, watcherPollInterval, m.waitClock(),
		func(context.Context) (bool, error) {
			_, ok := watcherCmdline(pid, script)
			return ok, nil
		})
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fmt.Errorf("starting the durability watcher: %w; see %s", err, logPath)
	}
	tflog.Info(ctx, fmt.Sprintf("cluster %s: durability watcher started", s.Name), map[string]any{"pid": pid, "log": logPath})
	return nil
}

// stopWatcher stops s's watcher: its PID file removed (so it would exit by
// itself), then SIGTERM to its process group, SIGKILL after 3 s; then the
// script removed, and with removeLog its log. Nothing running is success.
func (m *Manager) stopWatcher(ctx context.Context, s Spec, removeLog bool) error {
	script, pidPath, logPath, err := watcherPaths(s)
	if err != nil {
		return err
	}
	pid, err := readWatcherPID(pidPath)
	if err != nil {
		return err
	}
	if err := os.Remove(pidPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stopping the durability watcher: %w", err)
	}
	if pid > 0 {
		if _, ok := watcherCmdline(pid, script); ok {
			if err := m.killWatcher(pid, script); err != nil {
				return err
			}
			tflog.Info(ctx, fmt.Sprintf("cluster %s: durability watcher stopped", s.Name), map[string]any{"pid": pid})
		}
	}
	var errs []error
	for _, p := range []string{script, logPath} {
		if p == logPath && !removeLog {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killWatcher ends the watcher pid and its children (psql, sleep): it leads
// its own process group (setsid). SIGTERM first, SIGKILL when it still runs
// watcherStopTimeout later. It takes no ctx: a stop once begun is finished.
func (m *Manager) killWatcher(pid int, script string) error {
	var waitErr error
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stopping the durability watcher (PID %d): %w", pid, err)
			}
		}
		waitErr = wait.Until(context.Background(), fmt.Sprintf("PID %d to exit", pid), watcherStopTimeout, watcherPollInterval, m.waitClock(),
			func(context.Context) (bool, error) {
				_, ok := watcherCmdline(pid, script)
				return !ok, nil
			})
		if waitErr == nil {
			return nil
		}
	}
	return fmt.Errorf("stopping the durability watcher: PID %d still runs after SIGKILL: %w", pid, waitErr)
}

// readWatcherPID reads the PID file; 0 when there is none.
func readWatcherPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the durability watcher's PID file: %w", err)
	}
	// Half-written or foreign: nothing to stop.
	if pid, convErr := strconv.Atoi(strings.TrimSpace(string(b))); convErr == nil && pid > 0 {
		return pid, nil
	}
	return 0, nil
}

// watcherCmdline is the command line of pid when it is a live (not zombie)
// process running script: a recycled PID is not the watcher.
func watcherCmdline(pid int, script string) ([]string, bool) {
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
	if len(args) < 2 || args[0] != watcherShell || args[1] != script {
		return nil, false
	}
	return args, true
}

// watcherArgs are the script's arguments for s (see watcher.sh): the PID
// file, psql, host, superuser, give-up seconds and stride, then for each
// member NAME PORT PROBE and the SQL literal of the effective
// synchronous_standby_names when 0, 1, ... len(standbys) named standbys
// stream, each computed with bootstrap.EffectiveSynchronousStandbyNames for
// that member as the primary.
func (m *Manager) watcherArgs(ctx context.Context, s Spec, pidPath string) ([]string, error) {
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return nil, err
	}
	stride := 3 + len(s.Members)
	args := []string{pidPath, filepath.Join(m.engine.BinDir(), "psql"), Host, m.engine.Superuser(),
		strconv.Itoa(int(watcherGiveUp / time.Second)), strconv.Itoa(stride)}
	for _, p := range s.Members {
		var standbys []string
		for _, mb := range s.Members {
			if mb.Name != p.Name {
				standbys = append(standbys, mb.Name)
			}
		}
		values := make([]string, 0, len(standbys)+1)
		for n := 0; n <= len(standbys); n++ {
			v, err := m.effective(s, major, p, standbys[:n])
			if err != nil {
				return nil, err
			}
			values = append(values, v)
		}
		args = append(args, p.Name, strconv.Itoa(p.Port), watcherProbe(standbys, values))
		for _, v := range values {
			args = append(args, sqlLiteral(v))
		}
	}
	return args, nil
}

// watcherProbe is the SQL the watcher runs on each member: "t|..." on a
// standby; on the primary "f|COUNT|MATCHES", COUNT the named standbys
// (ignoring ASCII case, as PostgreSQL matches application_name) streaming
// and MATCHES whether synchronous_standby_names is values[COUNT].
func watcherProbe(standbys, values []string) string {
	names := make([]string, len(standbys))
	for i, n := range standbys {
		names[i] = sqlLiteral(strings.ToLower(n))
	}
	var when strings.Builder
	for i, v := range values {
		fmt.Fprintf(&when, " WHEN %d THEN %s", i, sqlLiteral(v))
	}
	return "SELECT pg_is_in_recovery(), r.n, current_setting('synchronous_standby_names') = CASE r.n" + when.String() + " END" +
		" FROM (SELECT count(DISTINCT lower(application_name)) AS n FROM pg_stat_replication" +
		" WHERE state = 'streaming' AND lower(application_name) IN (" + strings.Join(names, ", ") + ")) r"
}

// sqlLiteral writes v as an SQL string literal that reads the same whatever
// standard_conforming_strings is (as pgclient quotes values).
func sqlLiteral(v string) string {
	q := "'" + strings.ReplaceAll(v, "'", "''") + "'"
	if strings.Contains(v, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// clearOverride removes an ALTER SYSTEM value of synchronous_standby_names
// (the watcher's) from running member mb and reloads it, so that pgnvme.conf
// applies again. Nothing when its postgresql.auto.conf has none.
func (m *Manager) clearOverride(ctx context.Context, mb Member) error {
	b, err := os.ReadFile(filepath.Join(mb.DataDir, "postgresql.auto.conf"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		k, _, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "synchronous_standby_names") {
			found = true
		}
	}
	if !found {
		return nil
	}
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return fmt.Errorf("removing the durability watcher's synchronous_standby_names from %s: %w", mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if err := conn.AlterSystemReset(ctx, "synchronous_standby_names"); err != nil {
		return fmt.Errorf("removing the durability watcher's synchronous_standby_names from %s: %w", mb.Name, err)
	}
	return conn.ReloadConf(ctx)
}
