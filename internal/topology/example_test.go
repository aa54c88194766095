package topology_test

import (
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// The primary n1 was killed and its data directory deleted; both standbys
// still run, n3 further ahead than n2.
func ExamplePlan() {
	actions, err := topology.Plan(topology.Desired{Nodes: []string{"n1", "n2", "n3"}}, []topology.Observed{
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
// history is only in the archive, so Plan refuses rather than create an
// empty cluster beside it.
func ExamplePlan_everyNodeLost() {
	_, err := topology.Plan(topology.Desired{Nodes: []string{"n1", "n2", "n3"}, Archived: true}, []topology.Observed{
		{Name: "n1", State: topology.Missing, Role: topology.RolePrimary},
		{Name: "n2", State: topology.Missing, Role: topology.RoleStandby},
		{Name: "n3", State: topology.Missing, Role: topology.RoleStandby},
	})
	fmt.Println(err)
	// Output:
	// every member is lost: n1, n2 and n3; no node holds the cluster's data, which is only in its archive now. Creating the cluster again would start a new, empty database beside that history, so nothing is changed: restore the cluster from its archive
}
