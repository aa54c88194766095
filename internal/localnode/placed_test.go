package localnode_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// StartPlaced runs the placement on the process that becomes pg_ctl before it runs anything (still the
// waiting shell, already the run user), and the server descends from it; a failing placement starts
// nothing.
func TestLocalStartPlaced(t *testing.T) {
	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := localnode.Node{Name: "placed", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: acctest.FreePorts(t, 1)[0], DataDir: filepath.Join(baseDir(t), "placed")}
	if err := e.InitPrimary(ctx, n, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Destroy(context.Background(), n) })

	refused := errors.New("no room here")
	if err := e.StartPlaced(ctx, n, func(int) error { return refused }); err == nil || !strings.Contains(err.Error(), "no room here") {
		t.Fatalf("StartPlaced with a failing placement = %v", err)
	}
	if _, ok, _ := e.Running(n); ok {
		t.Fatal("a failing placement must start nothing")
	}

	var placed int
	var comm, uid string
	err := e.StartPlaced(ctx, n, func(pid int) error {
		placed = pid
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		comm = strings.TrimSpace(string(b))
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				uid = strings.Fields(rest)[0]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if comm != "sh" {
		t.Errorf("the placement ran on %q; want the waiting shell (nothing run yet)", comm)
	}
	if os.Geteuid() == 0 && uid == "0" {
		t.Errorf("the placed process runs as root; want the run user")
	}
	pid, ok, err := e.Running(n)
	if err != nil || !ok {
		t.Fatalf("the server does not run after StartPlaced: %v", err)
	}
	if pid == placed {
		t.Errorf("the postmaster is the placed process itself (PID %d); pg_ctl forks it", pid)
	}
	if got := psql(t, e, n, "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
	pids, err := e.ServerPIDs(n)
	if err != nil || len(pids) < 3 || pids[0] != pid {
		t.Errorf("ServerPIDs = %v, %v; want the postmaster %d first and its children", pids, err, pid)
	}
}
