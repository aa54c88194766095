package nodesim

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
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

// unitFileExists reports whether one of the unit directories holds name.
func (m *manager) unitFileExists(name string) bool {
	for _, dir := range unitDirs {
		if _, err := os.Stat(m.n.hostPath(path.Join(dir, name))); err == nil {
			return true
		}
	}
	return false
}
