package nodesim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Unit states, as systemctl is-active prints them.
const (
	StateInactive     = "inactive"
	StateActivating   = "activating"
	StateActive       = "active"
	StateDeactivating = "deactivating"
	StateFailed       = "failed"
)

// Unit results, as systemd names them (systemctl show -p Result).
const (
	ResultSuccess    = "success"
	ResultExitCode   = "exit-code"
	ResultSignal     = "signal"
	ResultDependency = "dependency"
	ResultAssert     = "assert"
	ResultTimeout    = "timeout"
	ResultResources  = "resources"
)

// unitDirs are where the runner looks for unit files, in order (as systemd's system manager).
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}

// bootTargets are the targets whose .wants directories hold the units started on every boot.
var bootTargets = []string{"multi-user.target", "timers.target"}

// defaultPath is systemd's PATH for system services.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// UnitStatus is one unit as the runner sees it.
type UnitStatus struct {
	// State is StateInactive, StateActivating, StateActive, StateDeactivating or StateFailed.
	State string
	// Result is how the last start or run ended (ResultSuccess, ResultExitCode, ResultDependency, ...).
	Result string
	// MainPID is the main process of a running service, 0 when none.
	MainPID int
	// Starts counts how often the unit was started in this boot (restarts included).
	Starts int
	// Detail says why the unit failed, when it did.
	Detail string
}

// unit is the runner's state of one unit.
type unit struct {
	name    string
	file    *unitFile // nil when there is none (or masked)
	masked  bool
	state   string
	result  string
	detail  string
	job     *job
	main    *proc
	stopped bool // the main process was stopped on purpose: its end is not a failure
	restart *time.Timer
	starts  int
}

// job is a start of a unit that others can wait for.
type job struct {
	done chan struct{}
	err  error
}

func finishedJob(err error) *job {
	j := &job{done: make(chan struct{}), err: err}
	close(j.done)
	return j
}

func (j *job) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// manager is one boot's unit runner of a node: what systemd is on EC2.
type manager struct {
	n    *Node
	boot int

	mu      sync.Mutex
	units   map[string]*unit
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	journal *os.File
}

func newManager(n *Node, boot int) (*manager, error) {
	j, err := logFile(filepath.Join(n.LogDir(), "manager.log"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{n: n, boot: boot, units: map[string]*unit{}, ctx: ctx, cancel: cancel, journal: j}
	m.logf("boot %d of node %s", boot, n.Name)
	return m, nil
}

// logf writes a line to the node's manager.log.
func (m *manager) logf(format string, args ...any) {
	fmt.Fprintf(m.journal, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// close stops the runner: no more starts or restarts. The processes are the caller's to kill.
func (m *manager) close() {
	m.mu.Lock()
	m.closed = true
	for _, u := range m.units {
		if u.restart != nil {
			u.restart.Stop()
		}
	}
	m.mu.Unlock()
	m.cancel()
	m.logf("shut down")
	_ = m.journal.Close()
}

// unitLocked is the unit named name, loaded from the node's unit directories on first use.
func (m *manager) unitLocked(name string) *unit {
	if u, ok := m.units[name]; ok {
		return u
	}
	u := &unit{name: name, state: StateInactive}
	m.units[name] = u
	m.loadLocked(u)
	return u
}

// loadLocked reads u's unit file (again).
func (m *manager) loadLocked(u *unit) {
	u.file, u.masked, u.detail = nil, false, ""
	if strings.HasSuffix(u.name, ".target") {
		u.file = &unitFile{name: u.name, sections: map[string]map[string][]string{}}
		return
	}
	for _, dir := range unitDirs {
		p := m.n.hostPath(path.Join(dir, u.name))
		if t, err := os.Readlink(p); err == nil && t == "/dev/null" {
			u.masked = true
			u.detail = "masked"
			return
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f, err := parseUnit(u.name, string(b))
		if err != nil {
			u.detail = err.Error()
			return
		}
		u.file = f
		return
	}
	u.detail = "Unit " + u.name + " not found."
}

// reload drops every unit file read (daemon-reload): each is read again at its next start.
func (m *manager) reload() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.units {
		if u.job == nil || u.job.finished() {
			m.loadLocked(u)
		}
	}
	m.logf("daemon-reload")
}

// status is u's status.
func (m *manager) status(name string) UnitStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.unitLocked(name)
	st := UnitStatus{State: u.state, Result: u.result, Starts: u.starts, Detail: u.detail}
	if u.main != nil && !u.main.exited() {
		st.MainPID = u.main.pid()
	}
	return st
}

// startBootUnits starts the units the boot targets want (enabled units), without waiting.
func (m *manager) startBootUnits() {
	for _, t := range bootTargets {
		entries, err := os.ReadDir(m.n.hostPath("/etc/systemd/system/" + t + ".wants"))
		if err != nil {
			continue
		}
		for _, e := range entries {
			m.logf("%s wants %s", t, e.Name())
			m.start(e.Name(), "boot")
		}
	}
}

// start queues a start of name (and of what it requires and wants) and returns the job.
func (m *manager) start(name, why string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startLocked(name, why)
}

func (m *manager) startLocked(name, why string) *job {
	if m.closed {
		return finishedJob(errors.New("the node is shutting down"))
	}
	u := m.unitLocked(name)
	switch {
	case u.job != nil && !u.job.finished():
		return u.job
	case u.state == StateActive && !strings.HasSuffix(name, ".mount"):
		// A mount unit is active while its file system is mounted, which run checks: systemd follows
		// the mount table, and so a mount point unmounted by hand is mounted again.
		return finishedJob(nil)
	}
	if u.job != nil && u.job.finished() {
		// A unit started again is read again if its file changed since (systemd warns and uses the old
		// one until daemon-reload; the install script reloads before it starts anything).
		m.loadLocked(u)
	}
	if u.file == nil {
		u.result = ResultResources
		return finishedJob(fmt.Errorf("failed to start %s: %s", name, u.detail))
	}
	if u.restart != nil {
		u.restart.Stop()
		u.restart = nil
	}
	j := &job{done: make(chan struct{})}
	u.job = j
	u.state = StateActivating
	u.detail = ""
	m.logf("starting %s (%s)", name, why)
	requires, after := u.file.list("Unit", "Requires"), u.file.list("Unit", "After")
	// RequiresMountsFor= adds Requires= and After= on the mount units (that exist) of the path and its
	// parents.
	for _, p := range u.file.list("Unit", "RequiresMountsFor") {
		for q := path.Clean(p); ; q = path.Dir(q) {
			if mu := mountUnitName(q); m.unitFileExists(mu) {
				requires, after = append(requires, mu), append(after, mu)
			}
			if q == "/" {
				break
			}
		}
	}
	required := map[string]*job{}
	for _, r := range requires {
		required[r] = m.startLocked(r, "required by "+name)
	}
	for _, w := range u.file.list("Unit", "Wants") {
		m.startLocked(w, "wanted by "+name)
	}
	// Ordering: the jobs of units this one is After=, and of units that are Before= this one.
	var before []*job
	for _, a := range after {
		if o, ok := m.units[a]; ok && o.job != nil && !o.job.finished() {
			before = append(before, o.job)
		}
	}
	for _, o := range m.units {
		if o != u && o.file != nil && o.job != nil && !o.job.finished() && slices.Contains(o.file.list("Unit", "Before"), name) {
			before = append(before, o.job)
		}
	}
	go m.run(u, j, required, after, before)
	return j
}

// unitFileExists reports whether one of the unit directories holds name.
func (m *manager) unitFileExists(name string) bool {
	for _, dir := range unitDirs {
		if _, err := os.Stat(m.n.hostPath(path.Join(dir, name))); err == nil {
			return true
		}
	}
	return false
}

// mountUnitName is the mount unit of path p, as systemd-escape --path --suffix=mount names it.
func mountUnitName(p string) string {
	p = strings.Trim(path.Clean(p), "/")
	if p == "" {
		return "-.mount"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == ':', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String() + ".mount"
}

// run carries out a start job of u.
func (m *manager) run(u *unit, j *job, required map[string]*job, after []string, before []*job) {
	fail := func(result, detail string) {
		m.mu.Lock()
		u.state, u.result, u.detail = StateFailed, result, detail
		m.mu.Unlock()
		m.logf("%s failed (%s): %s", u.name, result, detail)
		j.err = fmt.Errorf("job for %s failed (result %s): %s", u.name, result, detail)
		close(j.done)
	}
	for _, b := range before {
		select {
		case <-b.done:
		case <-m.ctx.Done():
			fail(ResultResources, "the node shut down")
			return
		}
	}
	for r, rj := range required {
		// A required unit that is also ordered before this one must have started (systemd fails the job
		// with result "dependency"); one that is not ordered starts alongside.
		if slices.Contains(after, r) {
			if rj.finished() && rj.err != nil {
				fail(ResultDependency, fmt.Sprintf("the required unit %s failed: %v", r, rj.err))
				return
			}
			if st := m.status(r); st.State != StateActive {
				fail(ResultDependency, fmt.Sprintf("the required unit %s is %s", r, st.State))
				return
			}
		}
	}
	if strings.HasSuffix(u.name, ".target") || strings.HasSuffix(u.name, ".timer") {
		// Targets are reached at once; timers are armed but never fire in the simulator.
		m.mu.Lock()
		u.state, u.result = StateActive, ResultSuccess
		u.starts++
		m.mu.Unlock()
		close(j.done)
		return
	}
	if strings.HasSuffix(u.name, ".mount") {
		if err := m.mount(u); err != nil {
			var r *runError
			if errors.As(err, &r) {
				fail(r.result, r.detail)
			} else {
				fail(ResultResources, err.Error())
			}
			return
		}
		close(j.done)
		return
	}
	for _, p := range u.file.list("Unit", "AssertPathIsMountPoint") {
		if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", p); err != nil {
			fail(ResultAssert, "Assertion failed: AssertPathIsMountPoint="+p+" (not a mount point)")
			return
		}
	}
	if err := m.exec(u); err != nil {
		var r *runError
		if errors.As(err, &r) {
			fail(r.result, r.detail)
		} else {
			fail(ResultResources, err.Error())
		}
		return
	}
	close(j.done)
}

// mount starts a mount unit: active at once when Where= is mounted, else What= mounted on Where= (made
// first) with Type= and Options=, as systemd's mount unit does. This machine has no udev, so a
// /dev/disk/by-uuid/UUID that does not exist is looked up by mount(8) as UUID=; a UUID that no device
// has fails the unit with result "dependency", as systemd's device unit times out.
func (m *manager) mount(u *unit) error {
	f := u.file
	what, where := f.get("Mount", "What", ""), f.get("Mount", "Where", "")
	typ, opts := f.get("Mount", "Type", ""), f.get("Mount", "Options", "")
	if what == "" || where == "" || mountUnitName(where) != u.name {
		return &runError{ResultResources, fmt.Sprintf("%s needs What= and Where= with Where= matching its name (Where=%s)", u.name, where)}
	}
	done := func() error {
		m.mu.Lock()
		u.state, u.result = StateActive, ResultSuccess
		u.starts++
		m.mu.Unlock()
		m.logf("%s: %s on %s", u.name, what, where)
		return nil
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err == nil {
		return done()
	}
	spec := what
	if uuid, ok := strings.CutPrefix(what, "/dev/disk/by-uuid/"); ok {
		if _, err := os.Stat(m.n.hostPath(what)); err != nil {
			spec = "UUID=" + uuid
			if _, err := m.n.exec(m.ctx, nil, "root", "blkid", "-U", uuid); err != nil {
				return &runError{ResultDependency, fmt.Sprintf("no device has the file system UUID %s (%s): the device unit never appeared", uuid, what)}
			}
		}
	}
	args := []string{"mount"}
	if typ != "" {
		args = append(args, "-t", typ)
	}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mkdir", "-p", where); err != nil {
		return &runError{ResultResources, err.Error()}
	}
	if out, err := m.n.exec(m.ctx, nil, "root", append(args, spec, where)...); err != nil {
		return &runError{ResultExitCode, fmt.Sprintf("%s: %s", err, out)}
	}
	if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err != nil {
		return &runError{ResultExitCode, fmt.Sprintf("%s is not mounted on %s after mount(8)", what, where)}
	}
	return done()
}

// runError is a failed start with systemd's result.
type runError struct{ result, detail string }

func (e *runError) Error() string { return e.result + ": " + e.detail }

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

// stop stops u: SIGTERM to its main process (KillMode=process) or to every process of the unit's cgroup
// (the default), SIGKILL after TimeoutStopSec, and a unit that only remains active becomes inactive.
func (m *manager) stop(name string) error {
	m.mu.Lock()
	u := m.unitLocked(name)
	if u.restart != nil {
		u.restart.Stop()
		u.restart = nil
	}
	p := u.main
	if u.state == StateActive || u.state == StateActivating {
		u.state = StateDeactivating
	}
	u.stopped = true
	f := u.file
	m.mu.Unlock()
	m.logf("stopping %s", name)
	if strings.HasSuffix(name, ".mount") && f != nil {
		where := f.get("Mount", "Where", "")
		if _, err := m.n.exec(m.ctx, nil, "root", "mountpoint", "-q", where); err == nil {
			if out, err := m.n.exec(m.ctx, nil, "root", "umount", where); err != nil {
				return fmt.Errorf("stopping %s: %w: %s", name, err, out)
			}
		}
	}
	if p != nil && !p.exited() {
		timeout := 90 * time.Second
		if f != nil {
			if d, err := f.duration("Service", "TimeoutStopSec", 0); err == nil && d > 0 {
				timeout = d
			} else if d, err := f.duration("Service", "TimeoutSec", 0); err == nil && d > 0 {
				timeout = d
			}
		}
		if f != nil && f.get("Service", "KillMode", "control-group") == "process" {
			m.stopMain(u, p, timeout)
		} else {
			cg, err := m.n.unitCgroup(name)
			if err != nil {
				return err
			}
			pids, _ := cg.procs()
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
			if err := wait.Until(context.Background(), name+" to stop", timeout, 50*time.Millisecond, nil, func(context.Context) (bool, error) {
				pids, err := cg.procs()
				return err == nil && len(pids) == 0, nil
			}); err != nil {
				if err := cg.kill(context.Background()); err != nil {
					return err
				}
			}
			<-p.done
		}
	}
	m.mu.Lock()
	if u.state == StateDeactivating {
		u.state, u.result = StateInactive, ResultSuccess
	}
	m.mu.Unlock()
	return nil
}

// stopMain sends SIGTERM to p and SIGKILL after timeout.
func (m *manager) stopMain(u *unit, p *proc, timeout time.Duration) {
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		m.logf("%s: main process %d did not stop within %s; SIGKILL", u.name, p.pid(), timeout)
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
		<-p.done
	}
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
	for _, kv := range m.n.sim.InstanceEnv() {
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

// enable links name into the .wants (and .requires) directories its [Install] section names, and returns
// what it did, as systemctl enable prints it.
func (m *manager) enable(name string) (string, error) {
	m.mu.Lock()
	u := m.unitLocked(name)
	m.loadLocked(u)
	f := u.file
	m.mu.Unlock()
	if f == nil {
		return "", fmt.Errorf("failed to enable unit: %s", u.detail)
	}
	var out strings.Builder
	src := ""
	for _, dir := range unitDirs {
		if _, err := os.Stat(m.n.hostPath(path.Join(dir, name))); err == nil {
			src = path.Join(dir, name)
			break
		}
	}
	for _, kind := range []string{"WantedBy", "RequiredBy"} {
		suffix := map[string]string{"WantedBy": ".wants", "RequiredBy": ".requires"}[kind]
		for _, target := range f.list("Install", kind) {
			link := path.Join("/etc/systemd/system", target+suffix, name)
			if t, err := os.Readlink(m.n.hostPath(link)); err == nil && t == src {
				continue
			}
			if err := os.MkdirAll(m.n.hostPath(path.Dir(link)), 0o755); err != nil {
				return out.String(), err
			}
			_ = os.Remove(m.n.hostPath(link))
			if err := os.Symlink(src, m.n.hostPath(link)); err != nil {
				return out.String(), err
			}
			fmt.Fprintf(&out, "Created symlink %s → %s.\n", link, src)
		}
	}
	if len(f.list("Install", "WantedBy"))+len(f.list("Install", "RequiredBy")) == 0 {
		fmt.Fprintf(&out, "The unit files have no installation config (WantedBy=, RequiredBy=, ...) for %s.\n", name)
	}
	m.logf("enabled %s", name)
	return out.String(), nil
}

// disable removes name's links from every .wants and .requires directory.
func (m *manager) disable(name string) string {
	var out strings.Builder
	matches, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*.wants/" + name))
	more, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*.requires/" + name))
	for _, p := range append(matches, more...) {
		if err := os.Remove(p); err == nil {
			fmt.Fprintf(&out, "Removed %s.\n", strings.TrimPrefix(p, m.n.hostPath("")))
		}
	}
	return out.String()
}

// mask links name to /dev/null in /etc/systemd/system.
func (m *manager) mask(name string) (string, error) {
	link := path.Join("/etc/systemd/system", name)
	p := m.n.hostPath(link)
	if t, err := os.Readlink(p); err == nil && t == "/dev/null" {
		return "", nil
	}
	if _, err := os.Lstat(p); err == nil {
		return "", fmt.Errorf("failed to mask unit: file %s already exists", link)
	}
	if err := os.Symlink("/dev/null", p); err != nil {
		return "", err
	}
	m.mu.Lock()
	m.loadLocked(m.unitLocked(name))
	m.mu.Unlock()
	return fmt.Sprintf("Created symlink %s → /dev/null.\n", link), nil
}

// unmask removes name's link to /dev/null.
func (m *manager) unmask(name string) string {
	link := path.Join("/etc/systemd/system", name)
	if t, err := os.Readlink(m.n.hostPath(link)); err == nil && t == "/dev/null" {
		_ = os.Remove(m.n.hostPath(link))
		m.mu.Lock()
		m.loadLocked(m.unitLocked(name))
		m.mu.Unlock()
		return "Removed " + link + ".\n"
	}
	return ""
}

// enabledState is what systemctl is-enabled prints.
func (m *manager) enabledState(name string) string {
	if t, err := os.Readlink(m.n.hostPath("/etc/systemd/system/" + name)); err == nil && t == "/dev/null" {
		return "masked"
	}
	for _, kind := range []string{"wants", "requires"} {
		if ms, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*." + kind + "/" + name)); len(ms) > 0 {
			return "enabled"
		}
	}
	m.mu.Lock()
	u := m.unitLocked(name)
	m.mu.Unlock()
	switch {
	case u.file == nil:
		return "not-found"
	case len(u.file.list("Install", "WantedBy"))+len(u.file.list("Install", "RequiredBy")) == 0:
		return "static"
	}
	return "disabled"
}
