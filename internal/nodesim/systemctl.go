package nodesim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// systemctlShim is the node's /usr/bin/systemctl: it hands its arguments to the simulator's unit runner
// over a Unix socket (curl), prints what the runner answers and exits with its status.
const systemctlShim = `#!/bin/bash
# systemctl of the pgnvme node simulator: this machine runs no systemd; the simulator's unit runner starts
# the node's units. The arguments go to it over ` + nodeRunDir + `/systemctl.sock.
out=$(printf '%s\0' "$@" | curl -sS --max-time 1800 --unix-socket ` + nodeRunDir + `/systemctl.sock \
  --data-binary @- http://nodesim/systemctl) || {
  echo "systemctl: the node simulator's unit runner did not answer" >&2
  exit 1
}
code=${out%%$'\n'*}
rest=${out#*$'\n'}
[ "$rest" = "$out" ] && rest=
printf '%s' "$rest"
exit "$code"
`

// serveSystemctl answers the node's systemctl on runDir/systemctl.sock until the listener closes.
func (m *manager) serveSystemctl() (io.Closer, error) {
	p := filepath.Join(m.n.runDir(), "systemctl.sock")
	_ = os.Remove(p)
	l, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("systemctl socket of %s: %w", m.n.Name, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		args := strings.Split(strings.TrimSuffix(string(body), "\x00"), "\x00")
		if len(body) == 0 {
			args = nil
		}
		code, out := m.systemctl(args)
		fmt.Fprintf(w, "%d\n%s", code, out)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// systemctl runs one systemctl command line and returns its exit status and output.
func (m *manager) systemctl(args []string) (int, string) {
	var out bytes.Buffer
	noBlock, now, quiet := false, false, false
	var words []string
	signal := "SIGTERM"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-s" && i+1 < len(args):
			i++
			signal = args[i]
			continue
		case strings.HasPrefix(a, "--signal="):
			signal = strings.TrimPrefix(a, "--signal=")
			continue
		case a == "--kill-whom=all":
			continue
		}
		switch a {
		case "--no-block":
			noBlock = true
		case "--now":
			now = true
		case "-q", "--quiet":
			quiet = true
		case "--no-pager", "--system", "--no-reload", "--no-ask-password", "-l", "--full":
		default:
			if strings.HasPrefix(a, "-") {
				return 1, fmt.Sprintf("systemctl: the node simulator does not know option %s\n", a)
			}
			words = append(words, a)
		}
	}
	m.logf("systemctl %s", strings.Join(args, " "))
	if len(words) == 0 {
		return 1, "systemctl: the node simulator needs a command\n"
	}
	cmd, units := words[0], words[1:]
	for i, u := range units {
		if !strings.Contains(u, ".") {
			units[i] = u + ".service"
		}
	}
	code := 0
	failed := func(err error) {
		code = 1
		fmt.Fprintln(&out, err)
	}
	startAll := func() {
		var jobs []*job
		for _, u := range units {
			jobs = append(jobs, m.start(u, "systemctl "+cmd))
		}
		if noBlock {
			return
		}
		for _, j := range jobs {
			<-j.done
			if j.err != nil {
				failed(j.err)
			}
		}
	}
	stopAll := func() {
		for _, u := range units {
			if err := m.stop(u); err != nil {
				failed(err)
			}
		}
	}
	switch cmd {
	case "start":
		startAll()
	case "stop":
		stopAll()
	case "restart":
		stopAll()
		startAll()
	case "enable":
		for _, u := range units {
			s, err := m.enable(u)
			if !quiet {
				out.WriteString(s)
			}
			if err != nil {
				failed(err)
			}
		}
		if now && code == 0 {
			startAll()
		}
	case "disable":
		for _, u := range units {
			s := m.disable(u)
			if !quiet {
				out.WriteString(s)
			}
		}
		if now {
			stopAll()
		}
	case "mask":
		for _, u := range units {
			s, err := m.mask(u)
			out.WriteString(s)
			if err != nil {
				failed(err)
			}
		}
	case "unmask":
		for _, u := range units {
			out.WriteString(m.unmask(u))
		}
	case "reload":
		for _, u := range units {
			if err := m.reloadUnit(u); err != nil {
				failed(err)
			}
		}
	case "kill":
		sig, ok := signals[strings.TrimPrefix(strings.ToUpper(signal), "SIG")]
		if !ok {
			return 1, fmt.Sprintf("systemctl: the node simulator does not know signal %s\n", signal)
		}
		for _, u := range units {
			if err := m.kill(u, sig); err != nil {
				failed(err)
			}
		}
	case "daemon-reload":
		m.reload()
	case "is-active", "is-failed":
		want := map[string]string{"is-active": StateActive, "is-failed": StateFailed}[cmd]
		code = 3
		if cmd == "is-failed" {
			code = 1
		}
		for _, u := range units {
			st := m.status(u).State
			if !quiet {
				fmt.Fprintln(&out, st)
			}
			if st == want {
				code = 0
			}
		}
	case "is-enabled":
		code = 1
		for _, u := range units {
			st := m.enabledState(u)
			if !quiet {
				fmt.Fprintln(&out, st)
			}
			if st == "enabled" || st == "static" {
				code = 0
			}
		}
	case "status":
		for _, u := range units {
			st := m.status(u)
			fmt.Fprintf(&out, "%s - %s (%s) main PID %d, %d starts %s\n", u, st.State, st.Result, st.MainPID, st.Starts, st.Detail)
			if st.State != StateActive {
				code = 3
			}
		}
	default:
		return 1, fmt.Sprintf("systemctl: the node simulator does not run %q (it knows start, stop, restart, kill, enable, disable, mask, unmask, daemon-reload, is-active, is-failed, is-enabled, status)\n", cmd)
	}
	return code, out.String()
}

// signals are the signals systemctl kill takes, by name without SIG.
var signals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"INT": syscall.SIGINT, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2}

// kill sends sig to every process of unit (SIGKILL: cgroup.kill, and waits until they are gone).
func (m *manager) kill(unit string, sig syscall.Signal) error {
	cg, err := m.n.unitCgroup(unit)
	if err != nil {
		return err
	}
	m.logf("kill -%d %s", sig, unit)
	if sig == syscall.SIGKILL {
		return cg.kill(m.ctx)
	}
	pids, err := cg.procs()
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return err
}

// errNotBooted is returned by what needs a running node.
var errNotBooted = errors.New("the node is not running: Boot it first")
