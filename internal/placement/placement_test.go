package placement_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/placement"
)

// zones returns us-east-1 style zones for the given ID suffixes, in the
// order given (the names deliberately do not sort like the IDs).
func zones(ids ...string) []catalog.Zone {
	names := map[string]string{"az1": "us-east-1c", "az2": "us-east-1d", "az3": "us-east-1f", "az4": "us-east-1a", "az5": "us-east-1b", "az6": "us-east-1e"}
	out := make([]catalog.Zone, len(ids))
	for i, id := range ids {
		out[i] = catalog.Zone{Name: names[id], ID: "use1-" + id}
	}
	return out
}

func node(name, id string) placement.Node {
	return placement.Node{Name: name, Zone: zones(id)[0].Name, ZoneID: "use1-" + id}
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name string
		req  placement.Request
		want placement.Result
	}{
		{
			name: "3 nodes in 3 zones",
			req:  placement.Request{NodeCount: 3, Zones: zones("az3", "az1", "az2")},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3")},
				DistinctZones:    3,
				SurvivesZoneLoss: true,
			},
		},
		{
			name: "3 nodes in 6 zones take the 3 lowest IDs",
			req:  placement.Request{NodeCount: 3, Zones: zones("az6", "az4", "az2", "az5", "az3", "az1")},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3")},
				DistinctZones:    3,
				SurvivesZoneLoss: true,
			},
		},
		{
			name: "3 nodes sharing 2 zones",
			req:  placement.Request{NodeCount: 3, Zones: zones("az2", "az1"), AllowShared: true},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az1")},
				DistinctZones:    2,
				SurvivesZoneLoss: false, // az1 holds the primary and a standby
			},
		},
		{
			name: "1 node has no standby",
			req:  placement.Request{NodeCount: 1, Zones: zones("az2", "az1")},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{},
				DistinctZones:    1,
				SurvivesZoneLoss: false,
			},
		},
		{
			// az1: node-1 (primary), node-4; az2: node-2, node-5; az3: node-3.
			// Losing az1 can lose a commit acknowledged by node-4 alone.
			name: "5 nodes sharing 3 zones, ANY 1",
			req:  placement.Request{NodeCount: 5, Zones: zones("az1", "az2", "az3"), AllowShared: true, SyncNumber: 1},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3"), node("node-4", "az1"), node("node-5", "az2")},
				DistinctZones:    3,
				SurvivesZoneLoss: false,
			},
		},
		{
			// Same layout under ANY 2: every commit has a copy outside az1,
			// and each loss leaves 3 or 4 of 5 nodes, a majority and >= 3.
			name: "5 nodes sharing 3 zones, ANY 2",
			req:  placement.Request{NodeCount: 5, Zones: zones("az1", "az2", "az3"), AllowShared: true, SyncNumber: 2},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3"), node("node-4", "az1"), node("node-5", "az2")},
				DistinctZones:    3,
				SurvivesZoneLoss: true,
			},
		},
		{
			name: "2 nodes in 2 zones keep no majority",
			req:  placement.Request{NodeCount: 2, Zones: zones("az1", "az2")},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2")},
				DistinctZones:    2,
				SurvivesZoneLoss: false,
			},
		},
		{
			name: "named nodes, AllowShared unused with enough zones",
			req:  placement.Request{NodeCount: 3, NodeNames: []string{"pg-a", "pg-b", "pg-c"}, Zones: zones("az5", "az4", "az6"), AllowShared: true},
			want: placement.Result{
				Primary:          node("pg-a", "az4"),
				Standbys:         []placement.Node{node("pg-b", "az5"), node("pg-c", "az6")},
				DistinctZones:    3,
				SurvivesZoneLoss: true,
			},
		},
		{
			name: "5 nodes in 5 zones, ANY 3",
			req:  placement.Request{NodeCount: 5, Zones: zones("az1", "az2", "az3", "az4", "az5"), SyncNumber: 3},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3"), node("node-4", "az4"), node("node-5", "az5")},
				DistinctZones:    5,
				SurvivesZoneLoss: true,
			},
		},
		{
			name: "5 nodes in 5 zones, ANY 4 cannot keep acknowledging",
			req:  placement.Request{NodeCount: 5, Zones: zones("az1", "az2", "az3", "az4", "az5"), SyncNumber: 4},
			want: placement.Result{
				Primary:          node("node-1", "az1"),
				Standbys:         []placement.Node{node("node-2", "az2"), node("node-3", "az3"), node("node-4", "az4"), node("node-5", "az5")},
				DistinctZones:    5,
				SurvivesZoneLoss: false,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := append([]catalog.Zone(nil), tt.req.Zones...)
			got, err := placement.Place(tt.req)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Place =\n%+v\nwant\n%+v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.req.Zones, input) {
				t.Errorf("Place reordered the caller's zones: %v", tt.req.Zones)
			}
			again, _ := placement.Place(tt.req)
			if !reflect.DeepEqual(again, got) {
				t.Errorf("Place is not deterministic: %+v then %+v", got, again)
			}
		})
	}
}

func TestPlaceTooFewZones(t *testing.T) {
	_, err := placement.Place(placement.Request{NodeCount: 3, Zones: zones("az2", "az1")})
	var tfz *placement.TooFewZonesError
	if !errors.As(err, &tfz) {
		t.Fatalf("Place error = %v, want *TooFewZonesError", err)
	}
	want := &placement.TooFewZonesError{Need: 3, Have: 2, ZoneIDs: []string{"use1-az1", "use1-az2"}}
	if !reflect.DeepEqual(tfz, want) {
		t.Errorf("error = %+v, want %+v", tfz, want)
	}
	for _, s := range []string{"offered in 2 availability zone(s) (use1-az1, use1-az2)", "3 nodes need 3 distinct zones", "choose an instance type", "add zones", "allow_shared_zones"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestPlaceBadRequests(t *testing.T) {
	tests := []struct {
		name        string
		req         placement.Request
		contains    string
		tooFewZones bool
	}{
		{"no nodes", placement.Request{NodeCount: 0, Zones: zones("az1")}, "at least 1", false},
		{"negative nodes", placement.Request{NodeCount: -2, Zones: zones("az1")}, "at least 1", false},
		{"too few names", placement.Request{NodeCount: 3, NodeNames: []string{"a", "b"}, Zones: zones("az1", "az2", "az3")}, "2 node names for 3 nodes", false},
		{"too many names", placement.Request{NodeCount: 1, NodeNames: []string{"a", "b"}, Zones: zones("az1")}, "2 node names for 1 nodes", false},
		{"duplicate names", placement.Request{NodeCount: 3, NodeNames: []string{"a", "b", "a"}, Zones: zones("az1", "az2", "az3")}, `node names 1 ("a") and 3 ("a")`, false},
		{"names differing in case", placement.Request{NodeCount: 2, NodeNames: []string{"Pg1", "pg1"}, Zones: zones("az1", "az2")}, "ignoring letter case", false},
		{"empty name", placement.Request{NodeCount: 2, NodeNames: []string{"a", ""}, Zones: zones("az1", "az2")}, "node name 2 is empty", false},
		{"no zones", placement.Request{NodeCount: 3}, "not offered in any", true},
		{"no zones, sharing allowed", placement.Request{NodeCount: 1, AllowShared: true}, "not offered in any", true},
		{"zone without ID", placement.Request{NodeCount: 1, Zones: []catalog.Zone{{Name: "us-east-1a"}}}, "no zone ID", false},
		{"duplicate zone", placement.Request{NodeCount: 2, Zones: zones("az1", "az2", "az1")}, "use1-az1 is listed twice", false},
		{"negative sync number", placement.Request{NodeCount: 3, Zones: zones("az1", "az2", "az3"), SyncNumber: -1}, "at least 1", false},
		{"sync number above standbys", placement.Request{NodeCount: 3, Zones: zones("az1", "az2", "az3"), SyncNumber: 3}, "only 2 standbys", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := placement.Place(tt.req)
			if err == nil {
				t.Fatalf("Place = %+v, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			var tfz *placement.TooFewZonesError
			if errors.As(err, &tfz) != tt.tooFewZones {
				t.Errorf("error %T, TooFewZonesError wanted: %v", err, tt.tooFewZones)
			}
		})
	}
}

func TestSurvivesZoneLoss(t *testing.T) {
	tests := []struct {
		name       string
		primary    placement.Node
		standbys   []placement.Node
		syncNumber int
		want       bool
	}{
		{"3 zones ANY 1", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3")}, 1, true},
		{"3 zones ANY 2 leaves too few to acknowledge", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3")}, 2, false},
		{"3 zones asynchronous", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3")}, 0, false},
		{"3 zones negative is asynchronous", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3")}, -1, false},
		{"single node", node("p", "az1"), nil, 1, false},
		{"standbys share a zone without the primary, no majority", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az2")}, 1, false},
		{"4 nodes 4 zones ANY 1", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3"), node("c", "az4")}, 1, true},
		{"4 nodes 4 zones ANY 2", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az3"), node("c", "az4")}, 2, true},
		{"4 nodes 2 zones", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az1"), node("c", "az2")}, 1, false},
		{"primary alone, standbys paired, ANY 1", node("p", "az1"), []placement.Node{node("a", "az2"), node("b", "az2"), node("c", "az3"), node("d", "az3")}, 1, true},
		{"zone names when IDs are missing", placement.Node{Name: "p", Zone: "x"}, []placement.Node{{Name: "a", Zone: "y"}, {Name: "b", Zone: "z"}}, 1, true},
		{"no zone at all is one zone", placement.Node{Name: "p"}, []placement.Node{{Name: "a"}, {Name: "b"}}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placement.SurvivesZoneLoss(tt.primary, tt.standbys, tt.syncNumber); got != tt.want {
				t.Errorf("SurvivesZoneLoss = %v, want %v", got, tt.want)
			}
		})
	}
}
