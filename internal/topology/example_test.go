package topology_test

import (
	"fmt"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// A cluster whose members run no failover of their own (the local platform): the primary n1 was killed and
// its data directory deleted; both standbys still run, n3 further ahead than n2. The engine promotes n3, which
// points n2 at it, and n1 comes back as a standby copied from n3.
func ExampleSteps_enginePromotes() {
	standby := func(name string, received uint64) topology.Member {
		return topology.Member{Name: name, Wanted: true, Machine: topology.MachineLive, Role: topology.RoleStandby, Running: true, LagBytes: -1,
			WAL: &topology.WAL{Received: received, Replayed: 0x3000060, Timeline: 1}}
	}
	steps, err := topology.Steps(topology.Cluster{EnginePromotes: true, Formed: true, ViewKnown: true, SyncNumber: 1, Quorum: 1, Members: []topology.Member{
		{Name: "n1", Wanted: true, Machine: topology.MachineLost, Why: "its data directory is gone", LagBytes: -1},
		standby("n2", 0x3000060),
		standby("n3", 0x3000148),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(topology.StepsSummary(steps))
	// Output:
	// 1. promote n3: n3 has the highest flushed LSN 0/3000148 on timeline 1 of the surviving standbys (n2: flushed LSN 0/3000060 on timeline 1); every commit acknowledged under ANY n is flushed on at least one standby, so promoting the furthest one loses none; then standby n2, which followed the lost primary, is pointed at n3 and streams from it
	// 2. replace n1 from n3: the data directory of n1 is gone; it comes back as a standby copied from primary n3
}

// Every member is gone with its data, and the cluster archives its WAL: its history is only in the archive,
// so the first member is restored from it and the others are copied from the restored primary. Without a
// base backup in the archive, Next refuses rather than create an empty cluster beside it.
func ExampleSteps_everyMemberLost() {
	c := topology.Cluster{EnginePromotes: true, Formed: true, ViewKnown: true, Archived: true}
	for _, n := range []string{"n1", "n2", "n3"} {
		c.Members = append(c.Members, topology.Member{Name: n, Wanted: true, Machine: topology.MachineLost, LagBytes: -1})
	}
	fmt.Println(c.NeedsArchive())
	c.Archive = &topology.ArchiveEnd{
		Backup: "20261202-101500F", BackupAt: time.Date(2026, 12, 2, 10, 16, 2, 0, time.UTC),
		LastWAL: "000000010000000000000009", LastWALAt: time.Date(2026, 12, 2, 11, 42, 7, 0, time.UTC),
	}
	steps, _ := topology.Steps(c)
	fmt.Println(topology.StepsSummary(steps))
	c.Archive = &topology.ArchiveEnd{LastWAL: "000000010000000000000009"}
	_, err := topology.Steps(c)
	fmt.Println(err)
	// Output:
	// true
	// 1. restore the cluster from its archive onto n1: every node (n1, n2 and n3) is lost, and the cluster's data is in its archive: n1 is restored from the archive's newest base backup 20261202-101500F (finished 2026-12-02 10:16:02 UTC) and the WAL archived after it, to the end of the archive, last segment 000000010000000000000009 archived at 2026-12-02 11:42:07 UTC; commits after that are lost. It becomes the primary on the next timeline and continues the same archive
	// 2. replace n2 from n1: the data directory of n2 is gone; it comes back as a standby copied from primary n1
	// 3. replace n3 from n1: the data directory of n3 is gone; it comes back as a standby copied from primary n1
	// every member is lost: n1, n2 and n3; no node holds the cluster's data, which is only in its archive now, and the archive holds no base backup to restore from (its WAL alone cannot rebuild a database). Creating the cluster again would start a new, empty database beside that history, so nothing is changed
}
