package localspec_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

func intp(n int) *int { return &n }

// localBlock is a local block as the configuration gives it.
func localBlock(b localspec.Block) []cluster.BlockInput { return []cluster.BlockInput{&b} }

func TestLimitsDefaults(t *testing.T) {
	in := func(l *localspec.Limits) *localspec.Limits {
		return cluster.FromInput(cluster.Input{Name: "d", Blocks: localBlock(localspec.Block{DataDir: "/d", Limits: l})}).Block.(*localspec.Block).Limits
	}
	if got := in(&localspec.Limits{}); got != nil {
		t.Errorf("limits that set nothing are none: %+v", got)
	}
	if got := in(&localspec.Limits{MemoryMiB: 512}); got.Device() || got.DiskGiB != 0 {
		t.Errorf("a memory limit alone needs no device: %+v", got)
	}
	if got := in(&localspec.Limits{ReadIOPS: 3000}); !got.Device() || got.DiskGiB != localspec.DefaultDiskGiB {
		t.Errorf("an I/O limit gets a device of the default size: %+v", got)
	}
	if got := in(&localspec.Limits{DiskGiB: 4}); !got.Device() || got.IO() {
		t.Errorf("disk_gib alone gives a device without I/O limits: %+v", got)
	}
	if got := in(&localspec.Limits{ReadLatencyMS: 1}); !got.Device() || !got.Latency() || got.DiskGiB != localspec.DefaultDiskGiB {
		t.Errorf("a latency alone gets a device of the default size: %+v", got)
	}
}

func TestReplacementReason(t *testing.T) {
	mem := &localspec.Limits{MemoryMiB: 512}
	dev := &localspec.Limits{MemoryMiB: 512, ReadIOPS: 3000, DiskGiB: 16}
	tests := []struct {
		old, new *localspec.Limits
		want     string
	}{
		{nil, mem, ""},
		{mem, &localspec.Limits{MemoryMiB: 1024}, ""},
		{dev, &localspec.Limits{MemoryMiB: 256, ReadIOPS: 100, WriteMiBPerSecond: 10, DiskGiB: 16}, ""},
		{mem, dev, "moves to its own block device"},
		{dev, nil, "leaves its own block device"},
		{dev, &localspec.Limits{ReadIOPS: 3000, DiskGiB: 20}, "16 GiB -> 20 GiB"},
		{dev, &localspec.Limits{MemoryMiB: 512, ReadIOPS: 3000, DiskGiB: 16, ReadLatencyMS: 1}, "moves onto the latency layer"},
		{&localspec.Limits{DiskGiB: 16, ReadLatencyMS: 1}, &localspec.Limits{DiskGiB: 16}, "leaves the latency layer"},
		{&localspec.Limits{DiskGiB: 16, ReadLatencyMS: 1}, &localspec.Limits{DiskGiB: 16, ReadLatencyMS: 2, FlushLatencyMS: 1}, ""},
		{mem, &localspec.Limits{MemoryMiB: 512, FlushLatencyMS: 1, DiskGiB: 16}, "moves to its own block device"},
	}
	for _, tt := range tests {
		got := localspec.ReplacementReason(tt.old, tt.new)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ReplacementReason(%+v, %+v) = %q, want %q", tt.old, tt.new, got, tt.want)
		}
	}
}

func TestAssignDevice(t *testing.T) {
	s := cluster.FromInput(cluster.Input{Name: "d", NodeCount: intp(2), Blocks: localBlock(localspec.Block{DataDir: "/d", PortBase: 5000, Limits: &localspec.Limits{ReadIOPS: 100}})})
	got := localspec.Assign(s, nil)
	if got[0].DataDir != "/d/node-1/data" || got[1].DataDir != "/d/node-2/data" {
		t.Errorf("a node with its own device keeps its data below the mount point: %+v", got)
	}
}

func TestAssign(t *testing.T) {
	s := cluster.FromInput(cluster.Input{Name: "d", Nodes: []cluster.Node{{Name: "node-1", Zone: "a"}, {Name: "node-2"}, {Name: "node-3", Zone: "c"}, {Name: "node-4"}},
		Blocks: localBlock(localspec.Block{DataDir: "/d", PortBase: 5000})})
	prior := []cluster.Member{{Name: "node-1", Port: 5000, DataDir: "/d/node-1"}, {Name: "node-3", Port: 5002, DataDir: "/old/node-3"}}
	got := localspec.Assign(s, prior)
	want := []cluster.Member{
		{Name: "node-1", Zone: "a", Host: "127.0.0.1", Port: 5000, DataDir: "/d/node-1"},
		{Name: "node-2", Zone: "local", Host: "127.0.0.1", Port: 5001, DataDir: "/d/node-2"}, // the lowest free port
		{Name: "node-3", Zone: "c", Host: "127.0.0.1", Port: 5002, DataDir: "/old/node-3"},   // keeps its identity
		{Name: "node-4", Zone: "local", Host: "127.0.0.1", Port: 5003, DataDir: "/d/node-4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign =\n%+v\nwant\n%+v", got, want)
	}
	// Removing node-2 leaves the others where they are.
	s.Nodes = slices.Delete(s.Nodes, 1, 2)
	got = localspec.Assign(s, want)
	if got[0].Port != 5000 || got[1].Port != 5002 || got[2].Port != 5003 {
		t.Errorf("after removing node-2: %+v", got)
	}
}

func TestDevicesPending(t *testing.T) {
	device := &localspec.Limits{DiskGiB: 4}
	made := []cluster.Member{{Name: "node-1", BlockDevice: "7:0"}, {Name: "node-2", BlockDevice: "7:1"}}
	added := append(slices.Clone(made), cluster.Member{Name: "node-3"})
	for _, tc := range []struct {
		name    string
		limits  *localspec.Limits
		planned []cluster.Member
		exists  bool
		want    bool
	}{
		{"no limits", nil, added, true, false},
		{"limits without a device", &localspec.Limits{MemoryMiB: 512}, added, true, false},
		{"a new cluster", device, made, false, true},
		{"every device made", device, made, true, false},
		{"a node added", device, added, true, true},
		{"no node planned", device, nil, false, false},
	} {
		if got := localspec.DevicesPending(tc.limits, tc.planned, tc.exists); got != tc.want {
			t.Errorf("%s: DevicesPending = %v; want %v", tc.name, got, tc.want)
		}
	}
}
