package topology_test

import (
	"fmt"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// The primary n1 was killed and its data directory deleted; both standbys
// still run, n3 further ahead than n2.
func ExamplePlan() {
	actions, err := topology.Plan(topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Quorum: 1}, []topology.Observed{
		{Name: "n1", State: topology.Missing, Role: topology.RolePrimary},
		{Name: "n2", State: topology.Running, Role: topology.RoleStandby, FlushLSN: "0/3000060", ReplayLSN: "0/3000060", Timeline: 1},
		{Name: "n3", State: topology.Running, Role: topology.RoleStandby, FlushLSN: "0/3000148", ReplayLSN: "0/3000060", Timeline: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(topology.Summary(actions))
	// Output:
	// 1. promote n3: n3 has the highest flushed LSN 0/3000148 on timeline 1 of the surviving standbys (n2: flushed LSN 0/3000060 on timeline 1); every commit acknowledged under ANY n is flushed on at least one standby, so promoting the furthest one loses none
	// 2. repoint n2 to n3: standby n2 followed the lost primary; it must stream from the new primary n3
	// 3. reseed n1 from n3: n1 was the primary and its data directory is gone; it comes back as a standby copied from primary n3
}

// Every node is gone with its data, and the cluster archives its WAL: its
// history is only in the archive, so the first node is restored from it and
// the others are copied from the restored primary. Without a base backup in
// the archive, Plan refuses rather than create an empty cluster beside it.
func ExamplePlan_everyNodeLost() {
	lost := []topology.Observed{
		{Name: "n1", State: topology.Missing, Role: topology.RolePrimary},
		{Name: "n2", State: topology.Missing, Role: topology.RoleStandby},
		{Name: "n3", State: topology.Missing, Role: topology.RoleStandby},
	}
	desired := topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true}
	fmt.Println(topology.NeedsArchive(desired, lost))
	desired.Archive = &topology.ArchiveEnd{
		Backup: "20261202-101500F", BackupAt: time.Date(2026, 12, 2, 10, 16, 2, 0, time.UTC),
		LastWAL: "000000010000000000000009", LastWALAt: time.Date(2026, 12, 2, 11, 42, 7, 0, time.UTC),
	}
	actions, _ := topology.Plan(desired, lost)
	fmt.Println(topology.Summary(actions))
	desired.Archive = &topology.ArchiveEnd{LastWAL: "000000010000000000000009"}
	_, err := topology.Plan(desired, lost)
	fmt.Println(err)
	// Output:
	// true
	// 1. restore n1 from the archive as the primary: every node (n1, n2 and n3) is lost, and the cluster's data is in its archive: n1 is restored from the archive's newest base backup 20261202-101500F (finished 2026-12-02 10:16:02 UTC) and the WAL archived after it, to the end of the archive, last segment 000000010000000000000009 archived at 2026-12-02 11:42:07 UTC; commits after that are lost. It becomes the primary on the next timeline and continues the same archive
	// 2. create n2 from n1: n2 is created as a standby copied from the restored primary n1
	// 3. create n3 from n1: n3 is created as a standby copied from the restored primary n1
	// every member is lost: n1, n2 and n3; no node holds the cluster's data, which is only in its archive now, and the archive holds no base backup to restore from (its WAL alone cannot rebuild a database). Creating the cluster again would start a new, empty database beside that history, so nothing is changed
}
