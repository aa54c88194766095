package localnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// This file is the engine's process handling for programs that run beside a PostgreSQL server and are not
// started through pg_ctl (a Patroni, an etcd): the test fixtures start, stop and kill them with the same /proc
// reading the engine uses for a postmaster and its children.

// DaemonSpec says how to start a Daemon.
type DaemonSpec struct {
	// Program and Args are what runs.
	Program string
	Args    []string
	// Dir is the working directory.
	Dir string
	// Credential is who the program runs as; nil runs it as the caller (see Engine.ServerCredential).
	Credential *syscall.Credential
	// Env is its environment; nil is the caller's.
	Env []string
	// LogPath is the file its standard output and error are appended to (created 0644); when empty they go
	// to Output (nil discards them).
	LogPath string
	Output  io.Writer
	// Stdin is its standard input; nil is the null device.
	Stdin io.Reader
}

// Daemon is a program started in its own session, with its output in a log file. Its PID is its own (not a
// shell's), so it can be stopped, frozen and killed with its descendants.
type Daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartDaemon starts s and returns at once; a goroutine reaps the program when it exits.
func StartDaemon(s DaemonSpec) (*Daemon, error) {
	out := s.Output
	if s.LogPath != "" {
		logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer logf.Close() // the child has its own copy
		out = logf
	}
	cmd := exec.Command(s.Program, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, out, s.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: s.Credential}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Program, err)
	}
	d := &Daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// PID is the program's process ID.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Done is closed once the program has exited and was reaped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Exited reports whether the program has exited (and was reaped).
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// ExitErr is how the program ended (nil while it runs, or when it exited with status 0).
func (d *Daemon) ExitErr() error {
	if !d.Exited() {
		return nil
	}
	return d.err
}

// Freeze stops (SIGSTOP) the program and every descendant, top down, so none of them starts another process
// in between, and returns their PIDs for KillFrozen.
func (d *Daemon) Freeze() []int {
	pids := []int{d.PID()}
	for i := 0; i < len(pids); i++ {
		_ = syscall.Kill(pids[i], syscall.SIGSTOP)
		pids = append(pids, childPIDs(pids[i])...)
	}
	return pids
}

// KillFrozen sends SIGKILL to pids (from Freeze) and waits up to timeout until the program has been reaped and
// the others are gone.
func (d *Daemon) KillFrozen(pids []int, timeout time.Duration) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("SIGKILL to PID %d: %w", pid, err)
		}
	}
	return wait.Until(context.Background(), fmt.Sprintf("PIDs %v to be gone after SIGKILL", pids), timeout, 20*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			if !d.Exited() {
				return false, wait.NotYet(fmt.Errorf("PID %d not reaped yet", d.PID()))
			}
			for _, pid := range pids[1:] {
				if pidAlive(pid) {
					return false, wait.NotYet(fmt.Errorf("PID %d alive", pid))
				}
			}
			return true, nil
		})
}

// Kill is SIGKILL to the program and its descendants (frozen first), waiting up to timeout until they are
// gone; a program that has exited is left alone (its PID may be another's by now).
func (d *Daemon) Kill(timeout time.Duration) error {
	if d.Exited() {
		return nil
	}
	return d.KillFrozen(d.Freeze(), timeout)
}

// Terminate sends SIGTERM and waits up to timeout for the program to exit; then it kills it.
func (d *Daemon) Terminate(timeout time.Duration) error {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	err := wait.Until(context.Background(), fmt.Sprintf("PID %d to exit after SIGTERM", d.PID()), timeout, 50*time.Millisecond, nil,
		func(context.Context) (bool, error) { return d.Exited(), nil })
	if err != nil {
		return errors.Join(err, d.Kill(timeout))
	}
	return nil
}

// ServerCredential is the Credential a program needs to run as the engine's run user: nil when the caller is
// that user already (only root switches).
func (e *Engine) ServerCredential() *syscall.Credential {
	if !e.switchUser {
		return nil
	}
	return &syscall.Credential{Uid: e.uid, Gid: e.gid, Groups: e.groups}
}

// ServerEnv is the environment the engine gives the server programs: the caller's without libpq's PG*
// variables, LC_ALL=C, and (later entries win) the run user's HOME (for ~/.pgpass), USER and LOGNAME.
func (e *Engine) ServerEnv() []string {
	return append(cleanEnv(), "HOME="+e.home, "USER="+e.user, "LOGNAME="+e.user)
}

// TailFile is the last lines of the file at path (read from its last 256 KiB; every line when lines < 0), or a
// note in parentheses saying why there are none. For error messages.
func TailFile(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const window = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		if _, err := f.Seek(-window, io.SeekEnd); err != nil {
			return fmt.Sprintf("(log unreadable: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if lines >= 0 && len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
