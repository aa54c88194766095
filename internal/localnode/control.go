package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// pgCtlTimeout is pg_ctl's -t: how long start, stop and promote wait, in seconds.
const pgCtlTimeout = "60"

// Named timeouts and poll intervals of the engine's waits.
const (
	// acceptTimeout bounds the wait for a started server to accept connections.
	acceptTimeout = 30 * time.Second
	// acceptPollInterval is how often pg_isready asks while the server starts.
	acceptPollInterval = 50 * time.Millisecond
	// killTimeout bounds the wait for killed processes to be gone.
	killTimeout = 10 * time.Second
	// killPollInterval is how often Kill looks whether they are gone.
	killPollInterval = 20 * time.Millisecond
)

// Start starts n with pg_ctl (as the run user, logging to n.LogFile()) and
// waits until the server accepts connections on n.Host:n.Port. The server is
// detached in its own session: it outlives the caller (the provider process
// exits after an apply). A node that is already running is left as it is. A
// stale postmaster.pid (from a killed server) is removed first.
func (e *Engine) Start(ctx context.Context, n Node) error {
	return e.StartPlaced(ctx, n, nil)
}

// Placement puts the process with the given PID somewhere before it starts
// the server, such as into a cgroup: whatever it does, the server and every
// process it starts inherit.
type Placement func(pid int) error

// StartPlaced is Start with place run on the process that becomes pg_ctl
// (and so the server's ancestor) before that process runs anything: a small
// shell, started as the run user, that waits on its standard input, is
// placed, and then replaces itself with pg_ctl. When place fails, nothing
// starts. A nil place is Start. A node that is already running is left as it
// is (and where it is).
func (e *Engine) StartPlaced(ctx context.Context, n Node, place Placement) error {
	if err := n.Validate(); err != nil {
		return err
	}
	if _, ok, err := e.Running(n); err != nil {
		return fmt.Errorf("starting %s %s: %w", n.Role, n.Name, err)
	} else if ok {
		if err := e.waitAccepting(ctx, n); err != nil {
			return fmt.Errorf("%s %s is running but %w", n.Role, n.Name, err)
		}
		return nil
	}
	dir := n.dataDir()
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		return fmt.Errorf("starting %s %s: no data directory at %s (%w): create it with InitPrimary or CreateStandby", n.Role, n.Name, dir, err)
	}
	if err := os.Remove(filepath.Join(dir, "postmaster.pid")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("starting %s %s: removing the stale postmaster.pid: %w", n.Role, n.Name, err)
	}
	if err := e.ensureSocketDir(n); err != nil {
		return fmt.Errorf("starting %s %s: %w", n.Role, n.Name, err)
	}
	if err := removeStaleSocketLock(n); err != nil {
		return fmt.Errorf("starting %s %s: %w", n.Role, n.Name, err)
	}
	if err := e.ensureLogFile(n); err != nil {
		return fmt.Errorf("starting %s %s: log file %s: %w", n.Role, n.Name, n.LogFile(), err)
	}
	cmd := e.serverCmd(ctx, filepath.Dir(dir), "pg_ctl", "start", "-w", "-t", pgCtlTimeout, "-D", dir, "-l", n.LogFile())
	if place != nil {
		cmd = placedCmd(cmd)
	}
	if _, _, err := runPlaced(cmd, place); err != nil {
		return fmt.Errorf("starting %s %s on %s:%d: %w\nlast lines of %s:\n%s", n.Role, n.Name, n.Host, n.Port, err, n.LogFile(), e.LogTail(n, 20))
	}
	if err := e.waitAccepting(ctx, n); err != nil {
		return fmt.Errorf("started %s %s, but %w\nlast lines of %s:\n%s", n.Role, n.Name, err, n.LogFile(), e.LogTail(n, 20))
	}
	return nil
}

// placedCmd turns cmd (not started) into a shell that first waits for a
// line on its standard input (runPlaced sends it once the shell is placed)
// and then replaces itself with cmd's program, keeping its PID, user,
// environment and directory.
func placedCmd(cmd *exec.Cmd) *exec.Cmd {
	cmd.Args = append([]string{"sh", "-c", `read -r _ && exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	return cmd
}

// runPlaced is run with place applied to the process after it started and
// before it reads the line that lets it continue (see placedCmd); nil place
// is run.
func runPlaced(cmd *exec.Cmd, place Placement) (stdout, stderr string, err error) {
	if place == nil {
		return run(cmd)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", "", err
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("%s: %w", filepath.Base(cmd.Args[3]), err)
	}
	if err := place(cmd.Process.Pid); err != nil {
		_ = in.Close() // read fails, the shell exits without running anything
		_ = cmd.Wait()
		return "", "", fmt.Errorf("placing %s before it starts: %w", filepath.Base(cmd.Args[3]), err)
	}
	_, werr := io.WriteString(in, "\n")
	_ = in.Close()
	err = cmd.Wait()
	stdout, stderr = out.String(), errb.String()
	if err = errors.Join(werr, err); err != nil {
		msg := strings.TrimSpace(stderr)
		if msg == "" {
			msg = strings.TrimSpace(stdout)
		}
		return stdout, stderr, fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Args[3]), err, msg)
	}
	return stdout, stderr, nil
}

// ServerPIDs are n's postmaster and the processes it started (backends,
// checkpointer, WAL writer, ...), postmaster first; none when n is not
// running.
func (e *Engine) ServerPIDs(n Node) ([]int, error) {
	pid, ok, err := e.Running(n)
	if err != nil || !ok {
		return nil, err
	}
	return append([]int{pid}, childPIDs(pid)...), nil
}

// removeStaleSocketLock removes the socket lock file (and socket) a killed
// server left behind when the PID in it is gone or a zombie. PostgreSQL
// removes stale locks itself only when their PID no longer exists, and an
// orphaned postmaster that was killed stays a zombie until init reaps it.
func removeStaleSocketLock(n Node) error {
	sock := filepath.Join(n.SocketDir(), ".s.PGSQL."+strconv.Itoa(n.Port))
	pid, err := readPIDFile(sock + ".lock")
	if err != nil || pid == 0 || pidAlive(pid) {
		return err
	}
	for _, p := range []string{sock + ".lock", sock} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the stale %s: %w", p, err)
		}
	}
	return nil
}

// ensureLogFile creates n's log file, owned by the run user, so pg_ctl can
// append to it even when the run user cannot write the directory.
func (e *Engine) ensureLogFile(n Node) error {
	f, err := os.OpenFile(n.LogFile(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return e.chown(n.LogFile())
}

// waitAccepting polls pg_isready until n accepts connections over TCP. The
// error says "it does not accept connections ..." with pg_isready's last
// answer, or, when the server stopped meanwhile (its data directory has no
// postmaster.pid: a recovery that failed after pg_ctl saw it start), the end
// of its log at once.
func (e *Engine) waitAccepting(ctx context.Context, n Node) error {
	err := wait.Until(ctx, "pg_isready to succeed", acceptTimeout, acceptPollInterval, e.clock, func(ctx context.Context) (bool, error) {
		cmd := e.clientCmd(ctx, n, "pg_isready", "-q", "-h", n.Host, "-p", strconv.Itoa(n.Port), "-U", e.superuser, "-d", "postgres", "-t", "5")
		if err := cmd.Run(); err != nil {
			if _, statErr := os.Stat(filepath.Join(n.dataDir(), "PG_VERSION")); statErr == nil {
				if _, running, rerr := e.Running(n); rerr == nil && !running {
					return false, fmt.Errorf("its server stopped; last lines of %s:\n%s", n.LogFile(), e.LogTail(n, 20))
				}
			}
			return false, wait.NotYet(fmt.Errorf("pg_isready: %w; 1 = rejecting, 2 = no response", err))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("it does not accept connections on %s:%d: %w", n.Host, n.Port, err)
	}
	return nil
}

// Stop stops n with pg_ctl stop in mode "fast" (the default when empty:
// disconnect clients, shut down cleanly), "smart" (wait for clients to
// leave) or "immediate" (no shutdown checkpoint; crash recovery on the next
// start). A node that is not running, or has no data directory, is success.
func (e *Engine) Stop(ctx context.Context, n Node, mode string) error {
	switch mode {
	case "":
		mode = "fast"
	case "fast", "smart", "immediate":
	default:
		return fmt.Errorf("stopping %s: shutdown mode %q: use fast, smart or immediate", n.Name, mode)
	}
	if _, ok, err := e.Running(n); err != nil {
		return fmt.Errorf("stopping %s %s: %w", n.Role, n.Name, err)
	} else if !ok {
		return nil
	}
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "pg_ctl", "stop", "-w", "-t", pgCtlTimeout, "-D", n.dataDir(), "-m", mode)
	if _, _, err := run(cmd); err != nil {
		if _, ok, rerr := e.Running(n); rerr == nil && !ok {
			return nil
		}
		return fmt.Errorf("stopping %s %s (%s): %w", n.Role, n.Name, mode, err)
	}
	return nil
}

// Kill ends n as a machine loss would: SIGKILL to the postmaster (its PID
// from postmaster.pid) and to every process it had started (backends,
// WAL sender and receiver, checkpointer, ...), then waits until all are gone.
// Nothing is flushed or shut down. A node that is not running is success.
// For fault tests and for the cluster resource's node-loss handling.
func (e *Engine) Kill(n Node) error {
	pid, ok, err := e.Running(n)
	if err != nil {
		return fmt.Errorf("killing %s %s: %w", n.Role, n.Name, err)
	}
	if !ok {
		return nil
	}
	// Stopped, the postmaster cannot start a child between the listing and the kill.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s %s: PID %d: %w", n.Role, n.Name, pid, err)
	}
	pids := append([]int{pid}, childPIDs(pid)...)
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing %s %s: PID %d: %w", n.Role, n.Name, p, err)
		}
	}
	// Kill takes no ctx: killTimeout alone bounds the wait.
	what := fmt.Sprintf("the processes of %s %s to be gone after SIGKILL", n.Role, n.Name)
	err = wait.Until(context.Background(), what, killTimeout, killPollInterval, e.clock, func(context.Context) (bool, error) {
		var alive []int
		for _, p := range pids {
			if pidAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) > 0 {
			return false, wait.NotYet(fmt.Errorf("PIDs %v still alive", alive))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("killing %s %s: %w", n.Role, n.Name, err)
	}
	return nil
}

// Running reports whether n's server runs: its postmaster.pid names a live
// (not zombie) postgres process whose working directory, where readable, is
// n's data directory. No data directory or no postmaster.pid is not running,
// without error.
func (e *Engine) Running(n Node) (pid int, ok bool, err error) {
	pid, err = readPostmasterPID(n.dataDir())
	if err != nil || pid == 0 {
		return 0, false, err
	}
	if !isPostmasterOf(pid, n.dataDir()) {
		return 0, false, nil
	}
	return pid, true, nil
}

// Promote ends recovery on standby n (pg_ctl promote) and waits until it
// takes writes.
func (e *Engine) Promote(ctx context.Context, n Node) error {
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "pg_ctl", "promote", "-w", "-t", pgCtlTimeout, "-D", n.dataDir())
	if _, _, err := run(cmd); err != nil {
		return fmt.Errorf("promoting %s: %w", n.Name, err)
	}
	return nil
}

// Reload makes n re-read its configuration files (pg_ctl reload, SIGHUP).
func (e *Engine) Reload(ctx context.Context, n Node) error {
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "pg_ctl", "reload", "-D", n.dataDir())
	if _, _, err := run(cmd); err != nil {
		return fmt.Errorf("reloading %s: %w", n.Name, err)
	}
	return nil
}

// Repoint points standby at newPrimary: it replaces primary_conninfo in the
// standby's postgresql.auto.conf (keeping application_name = its name). The
// caller then reloads (PostgreSQL 13 and later) or restarts the standby; with
// recovery_target_timeline 'latest' (the default) it follows a promoted
// standby's new timeline, provided it had not replayed past the promotion
// point. A node without standby.signal is refused: turning a former primary
// into a standby needs pg_rewind or a new copy.
func (e *Engine) Repoint(ctx context.Context, standby, newPrimary Node) error {
	if err := errors.Join(ctx.Err(), standby.Validate(), newPrimary.Validate()); err != nil {
		return err
	}
	dir := standby.dataDir()
	if _, err := os.Stat(filepath.Join(dir, "standby.signal")); err != nil {
		return fmt.Errorf("repointing %s to %s: %s is not a standby (%w): a former primary needs pg_rewind or a new copy",
			standby.Name, newPrimary.Name, standby.Name, err)
	}
	auto := filepath.Join(dir, "postgresql.auto.conf")
	b, err := os.ReadFile(auto)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("repointing %s: %w", standby.Name, err)
	}
	text := setPrimaryConninfo(string(b), conninfo(newPrimary, e.superuser, standby.Name))
	if err := e.writeFile(auto, []byte(text), 0o600); err != nil {
		return fmt.Errorf("repointing %s: %w", standby.Name, err)
	}
	return nil
}

// Destroy stops n immediately (SIGKILL when that fails) and removes its data
// directory, log file and socket directory. A node that is already gone is
// success. It refuses to remove a non-empty directory that does not look like
// a PostgreSQL data directory.
func (e *Engine) Destroy(ctx context.Context, n Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	if err := e.Stop(ctx, n, "immediate"); err != nil {
		if kerr := e.Kill(n); kerr != nil {
			return fmt.Errorf("destroying %s: %w", n.Name, errors.Join(err, kerr))
		}
	}
	if pid, ok, err := e.Running(n); err != nil {
		return fmt.Errorf("destroying %s: %w", n.Name, err)
	} else if ok {
		return fmt.Errorf("destroying %s: its server (PID %d) is still running", n.Name, pid)
	}
	dir := n.dataDir()
	if err := checkRemovable(dir); err != nil {
		return fmt.Errorf("destroying %s: %w", n.Name, err)
	}
	var errs []error
	errs = append(errs, os.RemoveAll(dir))
	if err := os.Remove(n.LogFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if sock := n.SocketDir(); sock != dir {
		errs = append(errs, os.RemoveAll(sock))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroying %s: %w", n.Name, err)
	}
	return nil
}

// ConfiguredRole reads n's role from its data directory: RoleStandby when
// standby.signal is present, else RolePrimary. No data directory is an error
// wrapping fs.ErrNotExist.
func (e *Engine) ConfiguredRole(n Node) (Role, error) {
	if _, err := os.Stat(filepath.Join(n.dataDir(), "PG_VERSION")); err != nil {
		return "", fmt.Errorf("node %s has no data directory at %s: %w", n.Name, n.dataDir(), err)
	}
	if _, err := os.Stat(filepath.Join(n.dataDir(), "standby.signal")); err == nil {
		return RoleStandby, nil
	}
	return RolePrimary, nil
}

// checkRemovable allows removing dir when it is absent, empty, or looks like
// a PostgreSQL data directory (complete or partly copied).
func checkRemovable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, marker := range []string{"PG_VERSION", "global", "base", "pg_wal", "backup_label"} {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("refusing to remove %s: it is not empty and is not a PostgreSQL data directory", dir)
}
