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

// Both standbys are gone with the primary: nothing can be shown to hold the
// acknowledged commits, so Plan refuses.
func ExamplePlan_noSurvivor() {
	_, err := topology.Plan(topology.Desired{Nodes: []string{"n1", "n2", "n3"}}, []topology.Observed{
		{Name: "n1", State: topology.Missing, Role: topology.RolePrimary},
		{Name: "n2", State: topology.Missing, Role: topology.RoleStandby},
		{Name: "n3", State: topology.Missing, Role: topology.RoleStandby},
	})
	fmt.Println(err)
	// Output:
	// no surviving standby: primary n1 is gone and no standby is running, so no node can be shown to hold every acknowledged commit: they may exist only on the lost primary's disk; recover that disk, or restore the cluster from its archive
}
