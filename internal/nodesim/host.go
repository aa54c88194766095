package nodesim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Programs of this machine the simulator runs itself (the nodes run their own from their PATH).
var hostPrograms = []string{"ip", "nsenter", "unshare", "setpriv", "losetup", "cloud-init", "curl", "mountpoint", "mkfs.xfs", "blkid"}

// checkHost fails, naming what to install, when this machine cannot run the simulator.
func checkHost() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("the node simulator needs root (network namespaces, loop devices, mounts, cgroups): run it as root"))
	}
	for _, p := range hostPrograms {
		if _, err := exec.LookPath(p); err != nil {
			errs = append(errs, fmt.Errorf("%s is not on PATH: run `bash scripts/test-deps.sh` as root (packages iproute2, util-linux, mount, cloud-init, curl, xfsprogs)", p))
		}
	}
	return errors.Join(errs...)
}

// run runs a program of this machine and returns its output; the error holds the output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// cgroup is a cgroup v2 directory that holds every process of one node (or of the service namespace).
type cgroup struct {
	path string
}

// cgroup2Root is where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a
// hybrid machine).
func cgroup2Root() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(s.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted (the simulator puts each node's processes in a cgroup v2 to kill them all at once): mount one, e.g. mount -t cgroup2 none /sys/fs/cgroup/unified")
}

// newCgroup makes the cgroup at path (its parent must exist).
func newCgroup(path string) (*cgroup, error) {
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making cgroup %s: %w", path, err)
	}
	return &cgroup{path: path}, nil
}

// procs are the PIDs in the cgroup.
func (c *cgroup) procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.path, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// populated reports whether the cgroup or a descendant holds a process (cgroup.events).
func (c *cgroup) populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(c.path, "cgroup.events"))
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), "populated 1"), nil
}

// kill SIGKILLs every process in the cgroup and its descendants (cgroup.kill) and waits until none is
// left. A cgroup removed already has none.
func (c *cgroup) kill(ctx context.Context) error {
	if _, err := os.Stat(c.path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.path, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("killing the processes of cgroup %s: %w", c.path, err)
	}
	return wait.Until(ctx, "the processes of cgroup "+c.path+" to be gone", stepTimeout, 20*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			busy, err := c.populated()
			if err != nil {
				return false, err
			}
			if busy {
				return false, wait.NotYet(errors.New("processes left"))
			}
			return true, nil
		})
}

// remove kills what is left and removes the cgroup once it is empty: killed processes whose parent has
// not reaped them yet (a postmaster's parent is init) keep it populated for a moment.
func (c *cgroup) remove(ctx context.Context) error {
	if err := c.kill(ctx); err != nil {
		return err
	}
	return wait.Until(ctx, "cgroup "+c.path+" to be removed", stepTimeout, 20*time.Millisecond, nil,
		func(context.Context) (bool, error) {
			err := os.Remove(c.path)
			switch {
			case err == nil || errors.Is(err, os.ErrNotExist):
				return true, nil
			case errors.Is(err, syscall.EBUSY):
				return false, wait.NotYet(err)
			}
			return false, fmt.Errorf("removing cgroup %s: %w", c.path, err)
		})
}

// proc is a program the simulator started, in a cgroup and its own session (a localnode.Daemon); done is
// closed once it has exited.
type proc struct {
	d    *localnode.Daemon
	done <-chan struct{}
}

// procSpec says how to start a proc.
type procSpec struct {
	argv   []string
	env    []string
	cgroup *cgroup
	out    io.Writer // stdout and stderr; nil discards
	stdin  io.Reader
}

func startProc(s procSpec) (*proc, error) {
	argv := s.argv
	if s.cgroup != nil {
		// The process moves itself into the cgroup before it runs the program, so everything it starts is
		// in there. Not CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD): on this machine's kernel (6.18) a
		// process cloned into a cgroup that was once killed through cgroup.kill gets SIGKILL at once.
		argv = append([]string{"/bin/sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, s.cgroup.path}, argv...)
	}
	env := s.env
	if env == nil {
		env = []string{}
	}
	d, err := localnode.StartDaemon(localnode.DaemonSpec{Program: argv[0], Args: argv[1:], Env: env, Output: s.out, Stdin: s.stdin})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(s.argv, " "), err)
	}
	return &proc{d: d, done: d.Done()}, nil
}

func (p *proc) pid() int { return p.d.PID() }

func (p *proc) exited() bool { return p.d.Exited() }

// exitErr is how the process ended (nil while it runs or after exit status 0).
func (p *proc) exitErr() error { return p.d.ExitErr() }

// status describes how the process ended: "exit status 1", "signal: killed", or "" while it runs.
func (p *proc) status() string {
	switch {
	case !p.exited():
		return ""
	case p.d.ExitErr() == nil:
		return "exit status 0"
	}
	return p.d.ExitErr().Error()
}

// failed reports whether the process ended with a non-zero status or a signal (systemd's on-failure).
func (p *proc) failed() bool { return p.d.ExitErr() != nil }

// logFile opens path for appending.
func logFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// tail is the last lines of the file at path (localnode.TailFile).
func tail(path string, lines int) string { return localnode.TailFile(path, lines) }
