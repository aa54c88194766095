package localnode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// startShell starts script under sh as a Daemon logging to a file in a fresh directory, killed at cleanup.
func startShell(t *testing.T, script string) (*localnode.Daemon, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "out.log")
	d, err := localnode.StartDaemon(localnode.DaemonSpec{Program: "/bin/sh", Args: []string{"-c", script}, Dir: dir, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Kill(10 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return d, log
}

// stateOf is the state letter of /proc/PID/stat ("" when pid is gone).
func stateOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// Kill freezes the program and its descendants (a grandchild too), SIGKILLs them and returns once all are
// gone and the program is reaped; its output is in the log file.
func TestDaemon_killTakesDescendants(t *testing.T) {
	// The outer sleep is forked first, then the inner shell, which says "ready" once its sleep is forked.
	d, log := startShell(t, `sleep 300 & sh -c 'sleep 300 & echo ready; wait' & wait`)
	deadline := time.Now().Add(10 * time.Second)
	for localnode.TailFile(log, 1) != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("the shell did not start its descendants: %s", localnode.TailFile(log, 5))
		}
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // waiting for the shell to fork
	}
	pids := d.Freeze()
	deadline = time.Now().Add(10 * time.Second)
	if len(pids) != 4 || pids[0] != d.PID() {
		t.Fatalf("Freeze = %v; want the shell %d first, then the outer sleep, the inner shell and its sleep", pids, d.PID())
	}
	// SIGSTOP is delivered asynchronously: a busy machine shows a process running for a moment after it.
	for _, p := range pids {
		for st := stateOf(p); st != "T"; st = stateOf(p) {
			if time.Now().After(deadline) {
				t.Fatalf("after Freeze PID %d is in state %q, want T (stopped)", p, st)
			}
			time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling /proc for the process's state
		}
	}
	if d.Exited() {
		t.Fatal("a frozen program counts as exited")
	}
	if err := d.KillFrozen(pids, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !d.Exited() || d.ExitErr() == nil || !strings.Contains(d.ExitErr().Error(), "killed") {
		t.Errorf("after KillFrozen: exited %v, exit error %v; want exited by SIGKILL", d.Exited(), d.ExitErr())
	}
	for _, p := range pids {
		if st := stateOf(p); st != "" && st != "Z" {
			t.Errorf("PID %d still in state %q after KillFrozen", p, st)
		}
	}
	if got := localnode.TailFile(log, 5); got != "ready" {
		t.Errorf("TailFile(log) = %q, want the program's output %q", got, "ready")
	}
	if err := d.Kill(time.Second); err != nil {
		t.Errorf("Kill of an exited program: %v, want nil", err)
	}
}

// Terminate ends a program that exits on SIGTERM at once, and kills one that ignores it once the timeout is
// over.
func TestDaemon_terminate(t *testing.T) {
	polite, _ := startShell(t, `trap 'exit 0' TERM; while :; do sleep 0.05; done`)
	stubborn, _ := startShell(t, `trap '' TERM; while :; do sleep 0.05; done`)
	time.Sleep(200 * time.Millisecond) //nolint:forbidigo // let the shells set their traps

	began := time.Now()
	if err := polite.Terminate(10 * time.Second); err != nil || polite.ExitErr() != nil {
		t.Errorf("Terminate of a program that exits on SIGTERM: %v, exit %v; want nil, status 0", err, polite.ExitErr())
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Terminate took %s for a program that exits on SIGTERM", took)
	}

	err := stubborn.Terminate(time.Second)
	if err == nil || !strings.Contains(err.Error(), "after SIGTERM") {
		t.Errorf("Terminate of a program ignoring SIGTERM: %v, want the timeout", err)
	}
	if !stubborn.Exited() {
		t.Error("a program ignoring SIGTERM still runs after Terminate")
	}
}

// TailFile gives the last lines, every line for a negative count, and a note for a missing file.
func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lines int
		want  string
	}{{2, "b\nc"}, {3, "a\nb\nc"}, {10, "a\nb\nc"}, {-1, "a\nb\nc"}, {0, ""}} {
		if got := localnode.TailFile(path, c.lines); got != c.want {
			t.Errorf("TailFile(%d) = %q, want %q", c.lines, got, c.want)
		}
	}
	if got := localnode.TailFile(path+".missing", 3); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("TailFile(missing) = %q, want a note", got)
	}
}

// Without LogPath the output goes to Output (stdout and stderr), and Stdin is the program's input.
func TestDaemon_outputAndStdin(t *testing.T) {
	var out bytes.Buffer
	d, err := localnode.StartDaemon(localnode.DaemonSpec{
		Program: "/bin/sh", Args: []string{"-c", `cat; echo "to stderr, HOME=$HOME" >&2; exit 3`},
		Env: []string{}, Output: &out, Stdin: strings.NewReader("from stdin\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		_ = d.Kill(time.Second)
		t.Fatal("the program did not exit within 10 s")
	}
	if want := "from stdin\nto stderr, HOME=\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if err := d.ExitErr(); err == nil || err.Error() != "exit status 3" {
		t.Errorf("ExitErr = %v, want exit status 3", err)
	}
}
