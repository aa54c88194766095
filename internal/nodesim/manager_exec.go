package nodesim

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultPath is systemd's PATH for system services.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exec runs u's Exec lines by its Type and leaves it active (or inactive, for a oneshot without
// RemainAfterExit).
func (m *manager) exec(u *unit) error {
	f := u.file
	typ := f.get("Service", "Type", "simple")
	pre, err1 := f.commands("ExecStartPre")
	mains, err2 := f.commands("ExecStart")
	posts, err3 := f.commands("ExecStartPost")
	timeout, err4 := f.duration("Service", "TimeoutStartSec", 0)
	if timeout == 0 {
		timeout, _ = f.duration("Service", "TimeoutSec", 90*time.Second)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return &runError{ResultResources, err.Error()}
	}
	if timeout == 0 {
		timeout = 24 * time.Hour
	}
	env, acct, err := m.environment(u)
	if err != nil {
		return &runError{ResultResources, err.Error()}
	}
	m.mu.Lock()
	u.starts++
	u.stopped = false
	m.mu.Unlock()

	runAll := func(what string, cmds []execCmd) error {
		for _, c := range cmds {
			p, err := m.spawn(u, what, c, env, acct)
			if err != nil {
				return &runError{ResultResources, err.Error()}
			}
			select {
			case <-p.done:
			case <-time.After(timeout):
				_ = syscall.Kill(p.pid(), syscall.SIGKILL)
				<-p.done
				return &runError{ResultTimeout, fmt.Sprintf("%s=%s timed out after %s", what, c.line, timeout)}
			case <-m.ctx.Done():
				<-p.done
				return &runError{ResultResources, "the node shut down"}
			}
			if p.failed() && !c.ignoreFailure {
				return &runError{ResultExitCode, fmt.Sprintf("%s=%s: %s", what, c.line, p.status())}
			}
		}
		return nil
	}
	if err := runAll("ExecStartPre", pre); err != nil {
		return err
	}
	switch typ {
	case "oneshot":
		if err := runAll("ExecStart", mains); err != nil {
			return err
		}
		if err := runAll("ExecStartPost", posts); err != nil {
			return err
		}
		m.mu.Lock()
		u.result = ResultSuccess
		u.state = StateInactive
		if f.boolean("Service", "RemainAfterExit", false) {
			u.state = StateActive
		}
		m.mu.Unlock()
		m.logf("%s finished: %s", u.name, u.state)
		return nil
	case "simple", "exec", "notify":
	default:
		return &runError{ResultResources, "Type=" + typ + " is not supported by the node simulator"}
	}
	if len(mains) != 1 {
		return &runError{ResultResources, fmt.Sprintf("Type=%s needs exactly one ExecStart, not %d", typ, len(mains))}
	}
	var notify *net.UnixConn
	ready := make(chan struct{})
	if typ == "notify" {
		var err error
		notify, err = m.notifySocket(u, ready)
		if err != nil {
			return &runError{ResultResources, err.Error()}
		}
		defer notify.Close()
		env = append(env, "NOTIFY_SOCKET="+path.Join(nodeRunDir, "notify", u.name))
	}
	p, err := m.spawn(u, "ExecStart", mains[0], env, acct)
	if err != nil {
		return &runError{ResultResources, err.Error()}
	}
	m.mu.Lock()
	u.main = p
	m.mu.Unlock()
	go m.watch(u, p)
	if typ == "notify" {
		select {
		case <-ready:
		case <-p.done:
			return &runError{ResultExitCode, fmt.Sprintf("the main process exited before READY=1: %s", p.status())}
		case <-time.After(timeout):
			m.stopMain(u, p, 10*time.Second)
			return &runError{ResultTimeout, fmt.Sprintf("no READY=1 within %s", timeout)}
		case <-m.ctx.Done():
			return &runError{ResultResources, "the node shut down"}
		}
	}
	m.mu.Lock()
	if u.main == p && !p.exited() {
		u.state, u.result = StateActive, ResultSuccess
	}
	m.mu.Unlock()
	m.logf("%s started: main PID %d", u.name, p.pid())
	env = append(env, "MAINPID="+strconv.Itoa(p.pid()))
	return runAll("ExecStartPost", posts)
}

// notifySocket listens on the unit's NOTIFY_SOCKET and closes ready at READY=1.
func (m *manager) notifySocket(u *unit, ready chan struct{}) (*net.UnixConn, error) {
	p := filepath.Join(m.n.runDir(), "notify", u.name)
	_ = os.Remove(p)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET of %s: %w", u.name, err)
	}
	if err := os.Chmod(p, 0o666); err != nil { // the service's user sends to it
		c.Close()
		return nil, err
	}
	go func() {
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" {
					once.Do(func() { close(ready) })
				}
			}
		}
	}()
	return c, nil
}

// watch waits for u's main process to end and restarts u as Restart= says.
func (m *manager) watch(u *unit, p *proc) {
	<-p.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.main != p || m.closed {
		return
	}
	u.main = nil
	m.logf("%s: main process %d ended: %s", u.name, p.pid(), p.status())
	if u.stopped {
		u.state, u.result = StateInactive, ResultSuccess
		return
	}
	result := ResultSuccess
	if p.failed() {
		result = ResultExitCode
		if strings.HasPrefix(p.status(), "signal") {
			result = ResultSignal
		}
	}
	restart := u.file.get("Service", "Restart", "no")
	again := restart == "always" || restart == "on-failure" && result != ResultSuccess ||
		restart == "on-abnormal" && result == ResultSignal
	if !again {
		u.result = result
		u.state = StateInactive
		if result != ResultSuccess {
			u.state = StateFailed
			u.detail = "main process: " + p.status()
		}
		return
	}
	delay, err := u.file.duration("Service", "RestartSec", 100*time.Millisecond)
	if err != nil {
		delay = 100 * time.Millisecond
	}
	u.state, u.result, u.detail = StateActivating, result, "auto-restart after "+p.status()
	m.logf("%s: restarting in %s (Restart=%s)", u.name, delay, restart)
	u.restart = time.AfterFunc(delay, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed || u.state != StateActivating || u.main != nil {
			return
		}
		u.state = StateFailed // not active: startLocked starts it again
		m.startLocked(u.name, "Restart="+restart)
	})
}

// environment is the environment and the account u's processes run with, as systemd builds them: the
// manager's (PATH, LANG and the instance's), the user's (HOME, USER, LOGNAME, SHELL with User=),
// Environment= and EnvironmentFile= in order.
func (m *manager) environment(u *unit) ([]string, *account, error) {
	env := map[string]string{"PATH": defaultPath, "LANG": "C.UTF-8"}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	order = append(order, "PATH", "LANG")
	for _, kv := range m.n.InstanceEnv() {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	acct, err := m.n.account(u.file.get("Service", "User", "root"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", u.name, err)
	}
	if g := u.file.get("Service", "Group", ""); g != "" {
		gid, err := m.n.groupID(g)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", u.name, err)
		}
		acct.gid = gid
	}
	if u.file.get("Service", "User", "") != "" {
		set("HOME", acct.home)
		set("USER", acct.name)
		set("LOGNAME", acct.name)
		set("SHELL", acct.shell)
	}
	for _, v := range u.file.values("Service", "Environment") {
		words, err := splitCommand(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: Environment=%s: %w", u.name, v, err)
		}
		for _, w := range words {
			if k, val, ok := strings.Cut(w, "="); ok {
				set(k, val)
			}
		}
	}
	for _, v := range u.file.values("Service", "EnvironmentFile") {
		optional := strings.HasPrefix(v, "-")
		p := strings.TrimPrefix(v, "-")
		b, err := os.ReadFile(m.n.hostPath(p))
		if err != nil {
			if optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, fmt.Errorf("%s: EnvironmentFile=%s: %w", u.name, p, err)
		}
		vars, keys, err := parseEnvFile(string(b))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: EnvironmentFile=%s: %w", u.name, p, err)
		}
		for _, k := range keys {
			set(k, vars[k])
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out, &acct, nil
}

// spawn starts one Exec line of u in the node, in u's cgroup, with its output in u's log.
func (m *manager) spawn(u *unit, what string, c execCmd, env []string, acct *account) (*proc, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	argv := expand(c.words, vars)
	cg, err := m.n.unitCgroup(u.name)
	if err != nil {
		return nil, err
	}
	out, err := logFile(filepath.Join(m.n.LogDir(), u.name+".log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	fmt.Fprintf(out, "==== %s boot %d: %s=%s (as %s)\n", time.Now().Format("15:04:05.000"), m.boot, what, strings.Join(argv, " "), acct.name)
	p, err := startProc(procSpec{argv: append(m.n.nsArgs(acct), argv...), env: env, cgroup: cg, out: out})
	if err != nil {
		return nil, err
	}
	m.logf("%s: %s PID %d: %s", u.name, what, p.pid(), strings.Join(argv, " "))
	return p, nil
}

// reloadUnit runs ExecReload= of the active service name, with its environment and MAINPID, as systemctl reload
// does; a unit that is not active, or has no ExecReload=, fails as systemd's would.
func (m *manager) reloadUnit(name string) error {
	m.mu.Lock()
	u := m.unitLocked(name)
	f, p, state := u.file, u.main, u.state
	m.mu.Unlock()
	if f == nil || state != StateActive || p == nil || p.exited() {
		return fmt.Errorf("%s is not active, cannot reload", name)
	}
	cmds, err := f.commands("ExecReload")
	if err != nil {
		return err
	}
	if len(cmds) == 0 {
		return fmt.Errorf("%s has no ExecReload=, cannot reload", name)
	}
	env, acct, err := m.environment(u)
	if err != nil {
		return err
	}
	env = append(env, "MAINPID="+strconv.Itoa(p.pid()))
	m.logf("reloading %s", name)
	for _, c := range cmds {
		rp, err := m.spawn(u, "ExecReload", c, env, acct)
		if err != nil {
			return err
		}
		select {
		case <-rp.done:
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(rp.pid(), syscall.SIGKILL)
			<-rp.done
			return fmt.Errorf("ExecReload=%s of %s timed out", c.line, name)
		}
		if rp.failed() && !c.ignoreFailure {
			return fmt.Errorf("ExecReload=%s of %s: %s", c.line, name, rp.status())
		}
	}
	return nil
}
