package localnode

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// childPIDs lists live children only: a child that exited and was not reaped yet (a zombie, as a backend is
// for a moment after it exits) is left out. Listed, it made joining a server's processes to a cgroup fail
// (a zombie cannot be moved, so it always looked left outside).
func TestChildPIDs_skipsZombies(t *testing.T) {
	live := exec.Command("sleep", "30")
	dead := exec.Command("true")
	for _, c := range []*exec.Cmd{live, dead} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		_ = live.Process.Kill()
		_ = live.Wait()
		_ = dead.Wait()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := readProcStat(dead.Process.Pid)
		if err == nil && st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exited child %d did not become a zombie: %+v, %v", dead.Process.Pid, st, err)
		}
		time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling /proc for the child's state
	}
	kids := childPIDs(os.Getpid())
	if !slices.Contains(kids, live.Process.Pid) || slices.Contains(kids, dead.Process.Pid) {
		t.Errorf("childPIDs = %v; want the live child %d and not the zombie %d", kids, live.Process.Pid, dead.Process.Pid)
	}
}
