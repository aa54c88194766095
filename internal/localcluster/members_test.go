package localcluster_test

import (
	"reflect"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

func TestAssignMembers(t *testing.T) {
	existing := []localcluster.Member{
		{Name: "node-1", Zone: "a", Port: 5000, DataDir: "/d/node-1"},
		{Name: "node-3", Zone: "c", Port: 5002, DataDir: "/d/node-3"},
	}
	got := localcluster.AssignMembers([]string{"node-1", "node-2", "node-3", "node-4"},
		map[string]string{"node-1": "a", "node-3": "c"}, existing, "/d", 5000)
	want := []localcluster.Member{
		{Name: "node-1", Zone: "a", Port: 5000, DataDir: "/d/node-1"},
		{Name: "node-2", Zone: "local", Port: 5001, DataDir: "/d/node-2"}, // the lowest free port
		{Name: "node-3", Zone: "c", Port: 5002, DataDir: "/d/node-3"},     // keeps its port
		{Name: "node-4", Zone: "local", Port: 5003, DataDir: "/d/node-4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AssignMembers =\n%+v\nwant\n%+v", got, want)
	}
	// Removing node-2 leaves the others where they are.
	got = localcluster.AssignMembers([]string{"node-1", "node-3"}, nil, want, "/d", 5000)
	if got[1].Port != 5002 || got[0].Port != 5000 {
		t.Errorf("after removal: %+v", got)
	}
}
