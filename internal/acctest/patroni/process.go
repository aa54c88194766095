package patroni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// process is a program the fixture started in its own session, with its output in a log file.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess starts program with args in dir, as cred when it is not nil, with env (the test's own when
// nil), writing its output to logPath (appended).
func startProcess(program string, args []string, dir string, cred *syscall.Credential, env []string, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", program, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) exitErr() error {
	if !p.exited() {
		return nil
	}
	return p.err
}

// freeze stops (SIGSTOP) the process and every descendant, top down, and returns their PIDs.
func (p *process) freeze() []int {
	pids := []int{p.cmd.Process.Pid}
	for i := 0; i < len(pids); i++ {
		_ = syscall.Kill(pids[i], syscall.SIGSTOP)
		pids = append(pids, childPIDs(pids[i])...)
	}
	return pids
}

// killFrozen sends SIGKILL to pids (from freeze) and waits until the process has been reaped and the others
// are gone.
func (p *process) killFrozen(pids []int) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("SIGKILL to PID %d: %w", pid, err)
		}
	}
	return wait.Until(context.Background(), fmt.Sprintf("PIDs %v to be gone after SIGKILL", pids), stepTimeout, 20*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			if !p.exited() {
				return false, wait.NotYet(fmt.Errorf("PID %d not reaped yet", p.cmd.Process.Pid))
			}
			for _, pid := range pids[1:] {
				if alive(pid) {
					return false, wait.NotYet(fmt.Errorf("PID %d alive", pid))
				}
			}
			return true, nil
		})
}

// kill is SIGKILL to the process and its descendants; a process that has exited is left alone (its PID may
// be another's by now).
func (p *process) kill() error {
	if p.exited() {
		return nil
	}
	return p.killFrozen(p.freeze())
}

// terminate sends SIGTERM and waits up to timeout for the process to exit; then it kills it.
func (p *process) terminate(timeout time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	err := wait.Until(context.Background(), fmt.Sprintf("PID %d to exit after SIGTERM", p.cmd.Process.Pid), timeout, 50*time.Millisecond, nil,
		func(context.Context) (bool, error) { return p.exited(), nil })
	if err != nil {
		return errors.Join(err, p.kill())
	}
	return nil
}

// childPIDs lists the live processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if ppid, state, ok := procStat(p); ok && ppid == pid && state != 'Z' {
			kids = append(kids, p)
		}
	}
	return kids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads the parent PID and state of pid from /proc/PID/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, false
	}
	return ppid, fields[0][0], true
}
