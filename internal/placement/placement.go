// Package placement chooses availability zones for a primary and its
// standbys, and judges whether a synchronous quorum survives the loss of a
// zone.
//
// Zones are identified by zone ID ("use1-az6"), which names the same physical
// zone in every AWS account; zone names ("us-east-1a") are account-specific
// and only carried along.
package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// Node is one PostgreSQL server and the zone it runs in.
type Node struct {
	// Name is the node's name, also its application_name as a standby.
	Name string
	// Zone is the zone's name, such as "us-east-1a".
	Zone string
	// ZoneID is the zone's ID, such as "use1-az6".
	ZoneID string
}

// Request says what to place.
type Request struct {
	// NodeCount is the number of nodes, primary included (>= 1).
	NodeCount int
	// NodeNames optionally names the nodes, primary first. When empty the
	// nodes are "node-1" to "node-N". When given it must have NodeCount
	// names, none empty, no two equal ignoring letter case (they become
	// standbys' application_name values, which PostgreSQL compares that way).
	NodeNames []string
	// Zones are the candidate zones, where the instance type is offered, in
	// any order; Place sorts them by ID. Each needs an ID, and no ID may
	// repeat.
	Zones []catalog.Zone
	// AllowShared allows more than one node in a zone when there are fewer
	// zones than nodes.
	AllowShared bool
	// SyncNumber is n in ANY n: how many standbys confirm each commit. 0
	// means 1. With more than one node it must not exceed the standby count.
	SyncNumber int
}

// Result is a placement.
type Result struct {
	// Primary is the first node, in the zone with the lowest ID.
	Primary Node
	// Standbys are the other nodes, in order.
	Standbys []Node
	// DistinctZones is how many different zones the nodes use.
	DistinctZones int
	// SurvivesZoneLoss is SurvivesZoneLoss(Primary, Standbys, SyncNumber).
	SurvivesZoneLoss bool
}

// TooFewZonesError says there are fewer candidate zones than nodes and
// sharing a zone was not allowed, or that there is no candidate zone at all.
type TooFewZonesError struct {
	// Need is the number of zones wanted: one per node.
	Need int
	// Have is the number of candidate zones.
	Have int
	// ZoneIDs are the candidate zones' IDs, sorted.
	ZoneIDs []string
}

// Error says how many zones the type is offered in, which, and what to do.
func (e *TooFewZonesError) Error() string {
	if e.Have == 0 {
		return fmt.Sprintf("the instance type is not offered in any of the candidate availability zones, and %d node(s) need at least one: choose an instance type offered in this region's zones, or add zones where it is offered", e.Need)
	}
	return fmt.Sprintf("the instance type is offered in %d availability zone(s) (%s) but %d nodes need %d distinct zones: choose an instance type offered in more zones, add zones where it is offered, or set allow_shared_zones = true to put more than one node in a zone (losing that zone then loses several nodes)",
		e.Have, strings.Join(e.ZoneIDs, ", "), e.Need, e.Need)
}

// Place puts node i (0 is the primary) in zone i mod len(zones), with the
// zones sorted by ID: the result depends only on the request, and with enough
// zones the nodes take the lowest zone IDs, one each.
//
// When there are fewer zones than nodes and AllowShared is false, the error
// is a *TooFewZonesError; with no zones at all it is one whatever
// AllowShared says. Other bad requests (NodeCount < 1, NodeNames of the
// wrong length, empty or repeated, a zone without ID or repeated, a
// negative SyncNumber or one above the standby count) are plain errors.
func Place(r Request) (Result, error) {
	if r.NodeCount < 1 {
		return Result{}, fmt.Errorf("node count is %d: it must be at least 1 (one primary, then standbys)", r.NodeCount)
	}
	names, err := nodeNames(r)
	if err != nil {
		return Result{}, err
	}
	syncNumber := r.SyncNumber
	switch {
	case syncNumber < 0:
		return Result{}, fmt.Errorf("synchronous standby number is %d: it must be at least 1 (0 means 1)", syncNumber)
	case syncNumber == 0:
		syncNumber = 1
	}
	if r.NodeCount > 1 && syncNumber > r.NodeCount-1 {
		return Result{}, fmt.Errorf("synchronous standby number is %d but %d nodes have only %d standbys: no commit could be confirmed; lower the number or add nodes", syncNumber, r.NodeCount, r.NodeCount-1)
	}

	zones := slices.Clone(r.Zones)
	slices.SortFunc(zones, func(a, b catalog.Zone) int { return strings.Compare(a.ID, b.ID) })
	ids := make([]string, len(zones))
	for i, z := range zones {
		if z.ID == "" {
			return Result{}, fmt.Errorf("candidate zone %q has no zone ID: placement compares zones by ID", z.Name)
		}
		if i > 0 && z.ID == zones[i-1].ID {
			return Result{}, fmt.Errorf("candidate zone %s is listed twice: list each zone once", z.ID)
		}
		ids[i] = z.ID
	}
	if len(zones) == 0 || (len(zones) < r.NodeCount && !r.AllowShared) {
		return Result{}, &TooFewZonesError{Need: r.NodeCount, Have: len(zones), ZoneIDs: ids}
	}

	nodes := make([]Node, r.NodeCount)
	for i := range nodes {
		z := zones[i%len(zones)]
		nodes[i] = Node{Name: names[i], Zone: z.Name, ZoneID: z.ID}
	}
	res := Result{
		Primary:       nodes[0],
		Standbys:      nodes[1:],
		DistinctZones: min(len(zones), r.NodeCount),
	}
	res.SurvivesZoneLoss = SurvivesZoneLoss(res.Primary, res.Standbys, syncNumber)
	return res, nil
}

// nodeNames returns the request's names or the defaults, checked.
func nodeNames(r Request) ([]string, error) {
	if len(r.NodeNames) == 0 {
		names := make([]string, r.NodeCount)
		for i := range names {
			names[i] = fmt.Sprintf("node-%d", i+1)
		}
		return names, nil
	}
	if len(r.NodeNames) != r.NodeCount {
		return nil, fmt.Errorf("%d node names for %d nodes: give one name per node, primary first, or none for node-1 to node-%d", len(r.NodeNames), r.NodeCount, r.NodeCount)
	}
	for i, n := range r.NodeNames {
		if n == "" {
			return nil, fmt.Errorf("node name %d is empty", i+1)
		}
		for j := range i {
			if strings.EqualFold(r.NodeNames[j], n) {
				return nil, fmt.Errorf("node names %d (%q) and %d (%q) are the same ignoring letter case: PostgreSQL matches standby names that way, so use distinct names", j+1, r.NodeNames[j], i+1, n)
			}
		}
	}
	return slices.Clone(r.NodeNames), nil
}

// zoneKey identifies a node's zone: its ZoneID, or its Zone name when the ID
// is empty. Nodes with neither share the empty key, the cautious reading.
func zoneKey(n Node) string {
	if n.ZoneID != "" {
		return n.ZoneID
	}
	return n.Zone
}

// SurvivesZoneLoss reports whether a cluster whose commits wait for ANY
// syncNumber standbys comes through the loss of any single zone (every node
// in it at once). It is true when, for every zone the nodes use, losing it:
//
//  1. cannot lose an acknowledged commit: a commit is acknowledged once it
//     is on the primary and at least syncNumber standbys, so it can be lost
//     only if the zone holds the primary and at least syncNumber standbys;
//  2. leaves a strict majority of the nodes, so a consensus store (etcd
//     under Patroni) on the same machines can still elect a leader;
//  3. leaves at least syncNumber+1 nodes: a primary and enough standbys to
//     keep acknowledging synchronous commits.
//
// Zones are compared by ZoneID, or by Zone when ZoneID is empty. A
// syncNumber below 1 means asynchronous replication: commits live only on
// the primary, so losing its zone loses them and the result is false. A
// single node (no standbys) never survives.
func SurvivesZoneLoss(primary Node, standbys []Node, syncNumber int) bool {
	syncNumber = max(syncNumber, 0)
	total := 1 + len(standbys)
	inZone := map[string]int{zoneKey(primary): 1}
	standbysInZone := map[string]int{}
	for _, s := range standbys {
		inZone[zoneKey(s)]++
		standbysInZone[zoneKey(s)]++
	}
	primaryZone := zoneKey(primary)
	for zone, lost := range inZone {
		if zone == primaryZone && standbysInZone[zone] >= syncNumber {
			return false // (1) every copy of a commit can sit in this zone
		}
		left := total - lost
		if 2*left <= total {
			return false // (2) no majority left
		}
		if left < syncNumber+1 {
			return false // (3) too few nodes to acknowledge commits
		}
	}
	return true
}
