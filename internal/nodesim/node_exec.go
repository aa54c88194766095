package nodesim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// account is a user of the node, from its /etc/passwd.
type account struct {
	name        string
	uid, gid    int
	home, shell string
}

func (n *Node) account(name string) (account, error) {
	b, err := os.ReadFile(n.hostPath("/etc/passwd"))
	if err != nil {
		return account{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 7 || f[0] != name && f[2] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			return account{}, fmt.Errorf("user %s: %w", name, err)
		}
		return account{name: f[0], uid: uid, gid: gid, home: f[5], shell: f[6]}, nil
	}
	return account{}, fmt.Errorf("node %s has no user %s", n.Name, name)
}

func (n *Node) groupID(name string) (int, error) {
	b, err := os.ReadFile(n.hostPath("/etc/group"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 3 && (f[0] == name || f[2] == name) {
			return strconv.Atoi(f[2])
		}
	}
	return 0, fmt.Errorf("node %s has no group %s", n.Name, name)
}

// nsArgs is the command prefix that runs a program in the node's namespaces as acct (nil: root).
func (n *Node) nsArgs(acct *account) []string {
	n.mu.Lock()
	h := n.holder
	n.mu.Unlock()
	pid := 0
	if h != nil {
		pid = h.pid()
	}
	a := []string{"nsenter",
		fmt.Sprintf("--mount=/proc/%d/ns/mnt", pid),
		fmt.Sprintf("--uts=/proc/%d/ns/uts", pid),
		fmt.Sprintf("--ipc=/proc/%d/ns/ipc", pid),
		"--net=" + netnsPath(n.ns), "--wdns=/", "--"}
	if acct != nil && acct.uid != 0 {
		a = append(a, "setpriv", "--reuid="+strconv.Itoa(acct.uid), "--regid="+strconv.Itoa(acct.gid), "--init-groups", "--")
	}
	return a
}

// exec runs argv in the node as user (root when ""), with stdin, in the node's cgroup, and returns its
// output (stdout and stderr); the error holds the output.
func (n *Node) exec(ctx context.Context, stdin io.Reader, user string, argv ...string) (string, error) {
	if !n.Running() {
		return "", errNotBooted
	}
	acct, err := n.account(map[bool]string{true: "root", false: user}[user == ""])
	if err != nil {
		return "", err
	}
	cg, err := n.unitCgroup("exec")
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	env := []string{"PATH=" + defaultPath, "LANG=C.UTF-8", "HOME=" + acct.home, "USER=" + acct.name, "LOGNAME=" + acct.name}
	p, err := startProc(procSpec{argv: append(n.nsArgs(&acct), argv...), env: env, cgroup: cg, out: &syncWriter{w: &out}, stdin: stdin})
	if err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
		<-p.done
		return out.String(), fmt.Errorf("%s on %s: %w", strings.Join(argv, " "), n.Name, ctx.Err())
	}
	if p.exitErr() != nil {
		return out.String(), fmt.Errorf("%s on %s: %w: %s", strings.Join(argv, " "), n.Name, p.exitErr(), strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// syncWriter serialises writes (stdout and stderr share it).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Exec runs argv in the running node (its namespaces and cgroup) as user ("" is root) and returns its
// output; the error holds the output.
func (n *Node) Exec(ctx context.Context, user string, argv ...string) (string, error) {
	return n.exec(ctx, nil, user, argv...)
}

// Systemctl runs the node's systemctl (its unit runner) with args, as a program on the node would.
func (n *Node) Systemctl(args ...string) (int, string, error) {
	n.mu.Lock()
	m := n.mgr
	n.mu.Unlock()
	if m == nil {
		return 0, "", errNotBooted
	}
	code, out := m.systemctl(args)
	return code, out, nil
}

// KillUnit sends SIGKILL to every process of unit (its cgroup: for pgnvme-patroni.service, Patroni and the
// PostgreSQL it started) and returns once they are gone, as `systemctl kill -s KILL` does. The unit runner
// then treats the main process's end as a crash (Restart=).
func (n *Node) KillUnit(ctx context.Context, unit string) error {
	if !n.Running() {
		return errNotBooted
	}
	cg, err := n.unitCgroup(unit)
	if err != nil {
		return err
	}
	return cg.kill(ctx)
}
