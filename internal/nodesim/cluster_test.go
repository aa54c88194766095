package nodesim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/patroni"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// dataDir and mountPoint are the rendered defaults (bootstrap.DefaultEC2MountPoint).
const (
	mountPoint = "/var/lib/pgnvme"
	dataDir    = mountPoint + "/data"
)

// newSim starts a simulator for the test and removes everything it made when the test ends.
func newSim(t *testing.T) *nodesim.Sim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := nodesim.New(ctx, nodesim.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the simulator: %v", err)
		}
	})
	return s
}

// startCluster renders, adds and boots a cluster and waits until it has a leader and quorum standbys.
func startCluster(t *testing.T, s *nodesim.Sim, opts nodesim.ClusterOptions) (*nodesim.Cluster, nodesim.Status) {
	t.Helper()
	ctx := context.Background()
	c, err := s.NewCluster(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := c.Boot(ctx); err != nil {
		t.Fatalf("%v\n%s", err, c.Logs(30))
	}
	booted := time.Since(began)
	st := waitStatus(t, c, "a leader and quorum standbys", 3*time.Minute, patroni.QuorumOf(len(c.Nodes)))
	t.Logf("%d nodes: cloud-init done after %.1f s, leader and quorum standbys after %.1f s: %s",
		len(c.Nodes), booted.Seconds(), time.Since(began).Seconds(), st)
	return c, st
}

// waitStatus polls Patroni's /cluster until cond holds, and fails the test with the nodes' logs when it
// does not within timeout.
func waitStatus(t *testing.T, c *nodesim.Cluster, what string, timeout time.Duration, cond func(nodesim.Status) error) nodesim.Status {
	t.Helper()
	last, err := patroni.PollStatus(what, timeout, 250*time.Millisecond, c.Status, cond)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs(25))
	}
	return last
}

// query runs sql on n and fails the test with n's logs when it fails.
func query(t *testing.T, c *nodesim.Cluster, n *nodesim.Node, sql string) string {
	t.Helper()
	v, err := c.Query(context.Background(), n, sql)
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(20))
	}
	return v
}

// exec runs argv on n and fails the test when it fails.
func exec(t *testing.T, n *nodesim.Node, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := n.Exec(ctx, "", argv...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestCluster_forms boots three nodes from the user-data bootstrap.RenderEC2 renders for them and checks
// what the user-data promises: etcd healthy with three members, Patroni with a leader and two quorum
// standbys, ANY 1 of the two in synchronous_standby_names, PGDATA on the instance store's XFS (the loop
// device, not the root disk), WAL archived and a base backup taken with pgBackRest in the bucket over TLS.
// Then an EC2 stop/start of a standby (empty disk, same identity) rejoins as a quorum standby.
func TestCluster_forms(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	c, st := startCluster(t, s, nodesim.ClusterOptions{})

	// etcd: every member healthy and listing the three.
	for _, n := range c.Nodes {
		members, err := c.EtcdMembers(ctx, n)
		if err != nil {
			t.Fatalf("etcd on %s: %v\n%s", n.Name, err, n.Logs(20))
		}
		slices.Sort(members)
		if !slices.Equal(members, []string{"pg-1", "pg-2", "pg-3"}) {
			t.Fatalf("etcd on %s lists members %v, want pg-1, pg-2, pg-3", n.Name, members)
		}
	}

	// The leader waits for ANY 1 of the two others.
	lm, _ := st.Leader()
	leader := c.Node(lm.Name)
	var standbys []string
	for _, n := range c.Nodes {
		if n != leader {
			standbys = append(standbys, n.Name)
		}
	}
	ssn := query(t, c, leader, "SHOW synchronous_standby_names")
	spec, err := quorum.Parse(ssn)
	if err != nil {
		t.Fatalf("synchronous_standby_names on %s = %q: %v", leader.Name, ssn, err)
	}
	if names := slices.Sorted(slices.Values(spec.Names)); spec.Method != quorum.MethodAny || spec.Number != 1 || !slices.Equal(names, standbys) {
		t.Fatalf("synchronous_standby_names on %s = %q, want ANY 1 of %v", leader.Name, ssn, standbys)
	}
	if got := query(t, c, leader, "SELECT string_agg(application_name || ':' || sync_state, ',' ORDER BY application_name) FROM pg_stat_replication"); got != standbys[0]+":quorum,"+standbys[1]+":quorum" {
		t.Fatalf("pg_stat_replication on %s: %s, want both standbys quorum", leader.Name, got)
	}
	t.Logf("leader %s: synchronous_standby_names = %s", leader.Name, ssn)
	// The nodes run the default major (ClusterOptions' default), with its own asynchronous I/O.
	version, ioMethod := query(t, c, leader, "SHOW server_version"), query(t, c, leader, "SHOW io_method")
	t.Logf("leader %s: PostgreSQL %s, io_method %s", leader.Name, version, ioMethod)
	if want := fmt.Sprintf("%d.", capacity.DefaultPostgresMajor); !strings.HasPrefix(version, want) {
		t.Errorf("server_version on %s = %s, want the default major %d", leader.Name, version, capacity.DefaultPostgresMajor)
	}

	// PGDATA is on the instance store: the loop device's XFS, not the root disk.
	if got := query(t, c, leader, "SHOW data_directory"); got != dataDir {
		t.Fatalf("data_directory on %s = %s, want %s", leader.Name, got, dataDir)
	}
	for _, n := range c.Nodes {
		disks := n.Disks()
		source := exec(t, n, "findmnt", "-n", "-o", "SOURCE", "--target", dataDir)
		fstype := exec(t, n, "stat", "-f", "-c", "%T", dataDir)
		dataDev := exec(t, n, "stat", "-c", "%d", dataDir)
		rootDev := exec(t, n, "stat", "-c", "%d", "/")
		loopDev := exec(t, n, "stat", "-L", "-c", "%Hr:%Lr", disks[0])
		mountDev := exec(t, n, "mountpoint", "-d", mountPoint)
		if len(disks) != 1 || source != disks[0] || fstype != "xfs" || dataDev == rootDev || mountDev != loopDev {
			t.Fatalf("%s: %s is on %s (%s, device %s, mount %s), root disk device %s; want the loop device %v (%s) with XFS",
				n.Name, dataDir, source, fstype, dataDev, mountDev, rootDev, disks, loopDev)
		}
		t.Logf("%s: %s on %s (%s, device %s), root disk device %s", n.Name, dataDir, source, fstype, loopDev, rootDev)
	}

	// The first backup and the stanza come from Patroni's post_bootstrap on the first leader; nothing
	// runs the backup unit. WAL reaches the bucket.
	query(t, c, leader, "SELECT pg_switch_wal()::text")
	err = wait.Until(ctx, "WAL archived by pgBackRest", time.Minute, 500*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		n, err := c.Query(ctx, leader, "SELECT archived_count::text FROM pg_stat_archiver")
		if err != nil {
			return false, wait.NotYet(err)
		}
		if n == "0" {
			return false, wait.NotYet(errors.New("archived_count 0"))
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, leader.Logs(30))
	}
	keys, err := s.ListObjects(ctx, c.Region, c.Archive.Bucket, c.Archive.Prefix+"/pgbackrest/")
	if err != nil {
		t.Fatal(err)
	}
	var backups, wal int
	for _, k := range keys {
		switch {
		case strings.Contains(k, "/backup/") && strings.HasSuffix(k, "backup.manifest"):
			backups++
		case strings.Contains(k, "/archive/") && strings.Contains(k, "-"):
			wal++
		}
	}
	if backups == 0 || wal == 0 {
		t.Fatalf("the bucket holds %d backup manifests and %d WAL files under %s/pgbackrest, want some of each: %v", backups, wal, c.Archive.Prefix, keys)
	}
	t.Logf("pgBackRest over TLS: %d objects in the bucket (%d backup manifests, %d WAL segments)", len(keys), backups, wal)

	// EC2 stop/start of a standby: its processes die, its instance store comes back empty, and it boots
	// again from the same user-data, as the same instance. It rejoins as a quorum standby.
	standby := c.Node(standbys[0])
	stopped := time.Now()
	if err := standby.StopStart(ctx); err != nil {
		t.Fatalf("%v\n%s", err, standby.Logs(30))
	}
	waitRejoined(t, c, leader, standby, stopped)
	rejoined := time.Since(stopped)
	method := "pg_basebackup"
	if b, err := os.ReadFile(filepath.Join(standby.LogDir(), "pgnvme-patroni.service.log")); err == nil && strings.Contains(string(b), "replica has been created using pgbackrest") {
		method = "pgBackRest restore from the bucket"
	}
	t.Logf("stop/start of %s (new disk %v): quorum standby again %.1f s after the stop, seeded by %s",
		standby.Name, standby.Disks(), rejoined.Seconds(), method)
	// The disk script made a file system on the new disk and rewrote the mount unit for its UUID.
	disk := standby.Disks()[0]
	uuid := exec(t, standby, "blkid", "-p", "-s", "UUID", "-o", "value", disk)
	unit, err := standby.ReadFile("/etc/systemd/system/" + mountUnit)
	if err != nil {
		t.Fatal(err)
	}
	if src := exec(t, standby, "findmnt", "-n", "-o", "SOURCE", "--target", dataDir); src != disk || !strings.Contains(string(unit), "What=/dev/disk/by-uuid/"+uuid+"\n") {
		t.Fatalf("after the stop/start %s is on %s (want %s), and %s is:\n%s\nwant What= the new file system's UUID %s", dataDir, src, disk, mountUnit, unit, uuid)
	}
}

// waitRejoined waits until n, restarted at since, streams from leader as a quorum standby again: its own
// Patroni (this boot's) reports a streaming replica, the leader has a walsender for it started after
// since with sync_state quorum, and /cluster names it a quorum standby.
func waitRejoined(t *testing.T, c *nodesim.Cluster, leader, n *nodesim.Node, since time.Time) {
	t.Helper()
	err := wait.Until(context.Background(), n.Name+" to rejoin as a quorum standby", 3*time.Minute, 250*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		p, err := c.Patroni(ctx, n)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if p.Role != "replica" || p.ReplicationState != patroniapi.StateStreaming {
			return false, wait.NotYet(fmt.Errorf("%s: %s, %s, %s", n.Name, p.Role, p.State, p.ReplicationState))
		}
		sync, err := c.Query(ctx, leader, fmt.Sprintf("SELECT coalesce(max(sync_state) FILTER (WHERE backend_start > to_timestamp(%f)), 'none') FROM pg_stat_replication WHERE application_name = '%s'",
			float64(since.UnixMicro())/1e6, n.Name))
		if err != nil {
			return false, wait.NotYet(err)
		}
		if sync != "quorum" {
			return false, wait.NotYet(fmt.Errorf("the leader's walsender for %s since the restart: %s", n.Name, sync))
		}
		s, err := c.Status(ctx)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if err := patroni.QuorumOf(len(c.Nodes))(s); err != nil {
			return false, wait.NotYet(err)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs(25))
	}
}
