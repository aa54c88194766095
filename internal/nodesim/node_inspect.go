package nodesim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Unit is the status of a unit in the running boot.
func (n *Node) Unit(name string) (UnitStatus, error) {
	n.mu.Lock()
	m := n.mgr
	n.mu.Unlock()
	if m == nil {
		return UnitStatus{}, errNotBooted
	}
	return m.status(name), nil
}

// Logs is the end of each of the node's logs (the unit runner's, cloud-init's, each unit's), for failure
// messages.
func (n *Node) Logs(lines int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(n.LogDir())
	for _, e := range entries {
		p := filepath.Join(n.LogDir(), e.Name())
		fmt.Fprintf(&b, "--- %s\n%s\n", p, tail(p, lines))
	}
	return b.String()
}

// ReadFile reads the file at p as the running node sees it.
func (n *Node) ReadFile(p string) ([]byte, error) {
	if !n.Running() {
		return nil, errNotBooted
	}
	return os.ReadFile(n.hostPath(p))
}

// Process is a process of a node.
type Process struct {
	PID int
	// Unit is the unit it belongs to (its cgroup), or the simulator's own "init", "cloud-init", "exec".
	Unit string
	// Comm is its command name, Cmdline its arguments joined by spaces.
	Comm, Cmdline string
}

// Processes are the node's live processes, by their cgroups (the machine's PID namespace is shared, so
// this, not pgrep, tells a node's processes from anyone else's).
func (n *Node) Processes() ([]Process, error) {
	n.mu.Lock()
	cgs := make(map[string]*cgroup, len(n.cgs))
	for k, v := range n.cgs {
		cgs[k] = v
	}
	n.mu.Unlock()
	var out []Process
	for unit, cg := range cgs {
		pids, err := cg.procs()
		if err != nil {
			return nil, err
		}
		for _, pid := range pids {
			comm, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			cmdline, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err1 != nil || err2 != nil {
				continue // gone meanwhile
			}
			out = append(out, Process{PID: pid, Unit: unit, Comm: strings.TrimSpace(string(comm)),
				Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
		}
	}
	return out, nil
}
