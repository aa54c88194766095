package nodesim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestNode_emptyMount proves that PostgreSQL never starts on an instance store that is not prepared, so
// never on the root disk: a node whose disk does not appear fails pgnvme-disks.service and never starts
// Patroni, also when someone starts it by hand (Requires=); a disk plugged in later is prepared (XFS, a
// mount unit for its UUID) and the database starts on it; unmounted by hand, a start mounts it again
// (RequiresMountsFor=); unplugged, the mount unit fails and so does the start; and without the mount
// unit, a start stops at AssertPathIsMountPoint= although the disk unit is still active.
func TestNode_emptyMount(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	c, err := s.NewCluster(ctx, nodesim.ClusterOptions{Nodes: 1, NoDisks: true, DiskWaitSeconds: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	if err := c.Boot(ctx); err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(30))
	}

	// No disk: the disk unit fails, Patroni is never started.
	waitUnit(t, n, "pgnvme-disks.service", nodesim.StateFailed)
	noPostgres(t, n, "no disk")
	if u, _ := n.Unit("pgnvme-patroni.service"); u.Starts != 0 || u.State == nodesim.StateActive {
		t.Fatalf("pgnvme-patroni.service without a disk: %+v, want never started", u)
	}
	// Started by hand, it requires the disk unit, which fails again.
	code, out, err := n.Systemctl("start", "pgnvme-patroni.service")
	if err != nil || code == 0 {
		t.Fatalf("systemctl start pgnvme-patroni.service without a disk: %d %q %v, want a failure", code, out, err)
	}
	if u, _ := n.Unit("pgnvme-patroni.service"); u.Result != nodesim.ResultDependency || u.Starts != 0 {
		t.Fatalf("pgnvme-patroni.service started by hand without a disk: %+v, want result %s and no start", u, nodesim.ResultDependency)
	}
	noPostgres(t, n, "a start by hand without a disk")
	t.Logf("no disk: pgnvme-disks.service failed, pgnvme-patroni.service never ran (by hand: %s)", strings.TrimSpace(out))

	// The disk appears: the disk unit prepares it and the database starts on it.
	if err := n.AttachDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if code, out, err := n.Systemctl("start", "pgnvme-patroni.service"); err != nil || code != 0 {
		t.Fatalf("systemctl start pgnvme-patroni.service with a disk: %d %q %v\n%s", code, out, err, n.Logs(30))
	}
	if u, _ := n.Unit(mountUnit); u.State != nodesim.StateActive {
		t.Fatalf("%s is %s, want active: the disk script mounts the instance store through it", mountUnit, u.State)
	}
	disk := n.Disks()[0]
	waitLeader(t, c)
	if src := exec(t, n, "findmnt", "-n", "-o", "SOURCE", "--target", dataDir); src != disk {
		t.Fatalf("%s is on %s, want the disk %s", dataDir, src, disk)
	}

	// Unmounted by hand under a stopped database: a start mounts the instance store again (its mount
	// unit, through RequiresMountsFor=) and the database starts on it.
	stopPatroni(t, n)
	exec(t, n, "umount", mountPoint)
	if code, out, err := n.Systemctl("start", "pgnvme-patroni.service"); err != nil || code != 0 {
		t.Fatalf("systemctl start pgnvme-patroni.service after an umount: %d %q %v\n%s", code, out, err, n.Logs(30))
	}
	waitLeader(t, c)
	if src := exec(t, n, "findmnt", "-n", "-o", "SOURCE", "--target", dataDir); src != disk {
		t.Fatalf("after an umount and a start %s is on %s, want the disk %s", dataDir, src, disk)
	}

	// The disk gone (unmounted, unplugged): the mount unit cannot find its file system, and the database
	// does not start.
	stopPatroni(t, n)
	exec(t, n, "umount", mountPoint)
	if err := n.DetachDisks(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, err = n.Systemctl("start", "pgnvme-patroni.service")
	if u, _ := n.Unit("pgnvme-patroni.service"); err != nil || code == 0 || u.Result != nodesim.ResultDependency {
		t.Fatalf("systemctl start pgnvme-patroni.service without the disk: %d %q %v, unit %+v; want a failure with result %s", code, out, err, u, nodesim.ResultDependency)
	}
	noPostgres(t, n, "a start without the disk")
	t.Logf("disk unplugged: %s", strings.TrimSpace(out))

	// And without the mount unit either, AssertPathIsMountPoint= stops the start, although the disk unit
	// is still active.
	exec(t, n, "rm", "/etc/systemd/system/"+mountUnit)
	if code, out, err := n.Systemctl("daemon-reload"); err != nil || code != 0 {
		t.Fatalf("daemon-reload: %d %q %v", code, out, err)
	}
	code, out, err = n.Systemctl("start", "pgnvme-patroni.service")
	if u, _ := n.Unit("pgnvme-patroni.service"); err != nil || code == 0 || u.Result != nodesim.ResultAssert {
		t.Fatalf("systemctl start pgnvme-patroni.service on a bare mount point: %d %q %v, unit %+v; want a failure with result %s", code, out, err, u, nodesim.ResultAssert)
	}
	if u, _ := n.Unit("pgnvme-disks.service"); u.State != nodesim.StateActive {
		t.Fatalf("pgnvme-disks.service is %s, want still active (RemainAfterExit)", u.State)
	}
	noPostgres(t, n, "a start on the bare mount point")
	t.Logf("bare mount point: %s", strings.TrimSpace(out))
}

// mountUnit is the instance store's mount unit, which the disk script writes for each boot's file system.
const mountUnit = "var-lib-pgnvme.mount"

// waitLeader waits until the single node leads with PostgreSQL running.
func waitLeader(t *testing.T, c *nodesim.Cluster) {
	t.Helper()
	n := c.Nodes[0]
	err := wait.Until(context.Background(), n.Name+" to lead", 2*time.Minute, 250*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		p, err := c.Patroni(ctx, n)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if p.Role != "primary" || p.State != patroniapi.StateRunning {
			return false, wait.NotYet(fmt.Errorf("%s is %s/%s", n.Name, p.Role, p.State))
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(30))
	}
}

// stopPatroni stops Patroni (which stops PostgreSQL) and checks nothing of PostgreSQL is left.
func stopPatroni(t *testing.T, n *nodesim.Node) {
	t.Helper()
	if code, out, err := n.Systemctl("stop", "pgnvme-patroni.service"); err != nil || code != 0 {
		t.Fatalf("systemctl stop pgnvme-patroni.service: %d %q %v", code, out, err)
	}
	noPostgres(t, n, "the stop")
}

// waitUnit waits until unit is in state on n.
func waitUnit(t *testing.T, n *nodesim.Node, unit, state string) {
	t.Helper()
	err := wait.Until(context.Background(), unit+" to be "+state, time.Minute, 100*time.Millisecond, nil, func(context.Context) (bool, error) {
		u, err := n.Unit(unit)
		if err != nil {
			return false, err
		}
		if u.State != state {
			return false, wait.NotYet(fmt.Errorf("%s is %s", unit, u.State))
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(20))
	}
}

// noPostgres fails the test when a postgres process runs on n or its data directory exists outside the
// instance store.
func noPostgres(t *testing.T, n *nodesim.Node, after string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	procs, err := n.Processes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Comm == "postgres" || strings.HasPrefix(p.Cmdline, "postgres:") {
			t.Fatalf("after %s a postgres process runs on %s: %+v", after, n.Name, p)
		}
	}
	if out, err := n.Exec(ctx, "", "mountpoint", "-q", mountPoint); err == nil {
		return // the instance store is mounted: the data directory may be there
	} else if _, err := n.Exec(ctx, "", "test", "-e", dataDir); err == nil {
		t.Fatalf("after %s %s exists on the root disk of %s: %s", after, dataDir, n.Name, out)
	}
}

// TestRemoveNode_interrupted: a removal whose context is canceled half way (as when a test ends while the
// EC2 bridge removes a terminated instance's node) leaves what it did not remove listed, so the next
// removal finishes it: the units' cgroups before the node's own, which cannot go while they exist. Before,
// the first attempt forgot them and every later one waited on the node's busy cgroup until it timed out.
func TestRemoveNode_interrupted(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	c, err := s.NewCluster(ctx, nodesim.ClusterOptions{Nodes: 1, NoDisks: true, DiskWaitSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	if err := c.Boot(ctx); err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(30))
	}
	waitUnit(t, n, "pgnvme-disks.service", nodesim.StateFailed) // a unit ran: its cgroup exists
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.RemoveNode(canceled, n); err == nil {
		t.Fatal("a removal with a canceled context reported success")
	}
	start := time.Now()
	if err := s.RemoveNode(ctx, n); err != nil {
		t.Fatalf("the removal after an interrupted one: %v", err)
	}
	if _, err := os.Stat(n.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the node's directory %s is left: %v", n.Dir, err)
	}
	t.Logf("removed after an interrupted removal in %.1f s", time.Since(start).Seconds())
}
