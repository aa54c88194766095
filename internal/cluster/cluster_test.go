package cluster_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

func TestFromInputDefaults(t *testing.T) {
	in := cluster.Input{Name: "demo", Local: &cluster.Local{DataDir: "/d"}, Archive: &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-path": "/r"}}}
	s := cluster.FromInput(in)
	want := cluster.Spec{
		Given:       &in,
		Name:        "demo",
		Nodes:       []cluster.Node{{Name: "node-1", Zone: "local"}, {Name: "node-2", Zone: "local"}, {Name: "node-3", Zone: "local"}},
		Synchronous: bootstrap.Synchronous{Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: "on"},
		Archive:     &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, BackupOnCreate: true},
		Local:       &cluster.Local{DataDir: "/d", PortBase: cluster.DefaultPortBase},
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("FromInput =\n%+v\nwant\n%+v", s, want)
	}
	one := cluster.FromInput(cluster.Input{Name: "x", NodeCount: intp(1), Archive: &cluster.ArchiveInput{BackupOnCreate: boolp(false)}})
	if one.Synchronous.Number != 0 || len(one.Nodes) != 1 || one.Archive.BackupOnCreate {
		t.Errorf("a single node defaults to asynchronous and backup_on_create=false is kept: %+v", one)
	}
	if p := one.Platform(); p != "" {
		t.Errorf("no platform block: Platform() = %q", p)
	}
}

// TestValidate: every rule once, each problem at its attribute.
func TestValidate(t *testing.T) {
	valid := func() cluster.Input {
		return cluster.Input{Name: "demo", Local: &cluster.Local{DataDir: "/var/lib/pgnvme/demo"}}
	}
	tests := []struct {
		name   string
		change func(*cluster.Input)
		path   string // "" = valid
		detail string
	}{
		{"valid", func(*cluster.Input) {}, "", ""},
		{"no platform", func(in *cluster.Input) { in.Local = nil }, "<root>", "exactly one platform block"},
		{"cluster name", func(in *cluster.Input) { in.Name = "Demo_1" }, "name", "lower-case letter"},
		{"node name", func(in *cluster.Input) { in.Nodes = []cluster.Node{{Name: "n1"}, {Name: "N2"}} }, "node", "lower-case letter"},
		{"duplicate node names", func(in *cluster.Input) { in.Nodes = []cluster.Node{{Name: "n1"}, {Name: "n1"}} }, "node", "listed twice"},
		{"too many nodes", func(in *cluster.Input) { in.NodeCount = intp(10) }, "node", "give it 1 to 9"},
		{"number for required", func(in *cluster.Input) { in.NodeCount = intp(2); in.Synchronous.Number = intp(2) }, "synchronous.number", "more than the cluster's 1 standbys"},
		{"preferred may ask for more", func(in *cluster.Input) {
			in.Synchronous.Number, in.Synchronous.DataDurability = intp(5), "preferred"
		}, "", ""},
		{"method", func(in *cluster.Input) { in.Synchronous.Method = "all" }, "synchronous.method", "not supported"},
		{"commit", func(in *cluster.Input) { in.Synchronous.Commit = "maybe" }, "synchronous.commit", "not supported"},
		{"reserved parameter", func(in *cluster.Input) { in.Parameters = map[string]string{"port": "1"} }, "parameters", `"port" is set by the platform`},
		{"wal-g on local", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/p"}}
		}, "archive.walg_env", "archives with pgBackRest"},
		{"archive without options", func(in *cluster.Input) { in.Archive = &cluster.ArchiveInput{} }, "archive", "needs pgbackrest_options"},
		{"pgbackrest node option", func(in *cluster.Input) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"pg1-path": "/x"}}
		}, "archive.pgbackrest_options", "belongs to one node"},
		{"relative data dir", func(in *cluster.Input) { in.Local.DataDir = "data" }, "local.data_dir", "absolute path"},
		{"ports past 65535", func(in *cluster.Input) { in.Local.PortBase = 65534 }, "local.port_base", "at most 65535"},
		{"major", func(in *cluster.Input) { in.PostgresMajor = 9 }, "postgres_major", "not supported"},
		{"limits", func(in *cluster.Input) {
			in.Local.Limits = &cluster.Limits{MemoryMiB: 512, ReadIOPS: 3000, WriteIOPS: 3000, ReadMiBPerSecond: 125, WriteMiBPerSecond: 125, DiskGiB: 20}
		}, "", ""},
		{"negative memory", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{MemoryMiB: -1} }, "local.limits.memory_mib", "positive number of MiB"},
		{"negative read iops", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{ReadIOPS: -3000} }, "local.limits.read_iops", "positive number"},
		{"negative write throughput", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{WriteMiBPerSecond: -5} }, "local.limits.write_mib_per_second", "positive number"},
		{"negative disk", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{DiskGiB: -1} }, "local.limits.disk_gib", "positive number of GiB"},
		{"iops past the bound", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{WriteIOPS: 20_000_000} }, "local.limits.write_iops", "check the unit"},
		{"memory below the default shared_buffers", func(in *cluster.Input) { in.Local.Limits = &cluster.Limits{MemoryMiB: 160} }, "local.limits.memory_mib", "at least 192"},
		{"memory below shared_buffers", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "1GB"}
			in.Local.Limits = &cluster.Limits{MemoryMiB: 1024}
		}, "local.limits.memory_mib", "shared_buffers is 1024 MiB"},
		{"memory below shared_buffers in pages", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "65536"} // 512 MiB of 8 kB pages
			in.Local.Limits = &cluster.Limits{MemoryMiB: 520}
		}, "local.limits.memory_mib", "at least 576"},
		{"memory fits tuned shared_buffers", func(in *cluster.Input) {
			in.Parameters = map[string]string{"shared_buffers": "128MB"}
			in.Local.Limits = &cluster.Limits{MemoryMiB: 192}
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.change(&in)
			errs := cluster.Validate(cluster.FromInput(in))
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("Validate: %v, want none", errs)
				}
				return
			}
			for _, e := range errs {
				p := strings.Join(e.Path, ".")
				if p == "" {
					p = "<root>"
				}
				if p == tt.path && strings.Contains(e.Detail, tt.detail) && e.Summary != "" {
					return
				}
			}
			t.Fatalf("Validate: %v; want one at %s containing %q", errs, tt.path, tt.detail)
		})
	}
}

// Each problem is reported once, even where bootstrap and the product both have something to say.
func TestValidateReportsOnce(t *testing.T) {
	errs := cluster.Validate(cluster.FromInput(cluster.Input{Name: "BAD", NodeCount: intp(12), Local: &cluster.Local{DataDir: "/d"}, Archive: &cluster.ArchiveInput{}}))
	seen := map[string]int{}
	for _, e := range errs {
		seen[strings.Join(e.Path, ".")]++
	}
	for _, p := range []string{"name", "node", "archive"} {
		if seen[p] != 1 {
			t.Errorf("%d problems at %s, want 1: %v", seen[p], p, errs)
		}
	}
}

func TestFieldErrors(t *testing.T) {
	a := cluster.Errorf([]string{"local"}, "A", "a")
	b := cluster.Errorf([]string{"nodes"}, "B", "b")
	fields, others := cluster.FieldErrors(joinErrs(a, b, errPlain))
	if len(fields) != 2 || fields[0] != a || fields[1] != b || len(others) != 1 {
		t.Fatalf("FieldErrors = %v, %v", fields, others)
	}
}

func TestLimitsDefaults(t *testing.T) {
	in := func(l *cluster.Limits) *cluster.Limits {
		return cluster.FromInput(cluster.Input{Name: "d", Local: &cluster.Local{DataDir: "/d", Limits: l}}).Local.Limits
	}
	if got := in(&cluster.Limits{}); got != nil {
		t.Errorf("limits that set nothing are none: %+v", got)
	}
	if got := in(&cluster.Limits{MemoryMiB: 512}); got.Device() || got.DiskGiB != 0 {
		t.Errorf("a memory limit alone needs no device: %+v", got)
	}
	if got := in(&cluster.Limits{ReadIOPS: 3000}); !got.Device() || got.DiskGiB != cluster.DefaultDiskGiB {
		t.Errorf("an I/O limit gets a device of the default size: %+v", got)
	}
	if got := in(&cluster.Limits{DiskGiB: 4}); !got.Device() || got.IO() {
		t.Errorf("disk_gib alone gives a device without I/O limits: %+v", got)
	}
}

func TestReplacementReason(t *testing.T) {
	mem := &cluster.Limits{MemoryMiB: 512}
	dev := &cluster.Limits{MemoryMiB: 512, ReadIOPS: 3000, DiskGiB: 16}
	tests := []struct {
		old, new *cluster.Limits
		want     string
	}{
		{nil, mem, ""},
		{mem, &cluster.Limits{MemoryMiB: 1024}, ""},
		{dev, &cluster.Limits{MemoryMiB: 256, ReadIOPS: 100, WriteMiBPerSecond: 10, DiskGiB: 16}, ""},
		{mem, dev, "moves to its own block device"},
		{dev, nil, "leaves its own block device"},
		{dev, &cluster.Limits{ReadIOPS: 3000, DiskGiB: 20}, "16 GiB -> 20 GiB"},
	}
	for _, tt := range tests {
		got := cluster.ReplacementReason(tt.old, tt.new)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ReplacementReason(%+v, %+v) = %q, want %q", tt.old, tt.new, got, tt.want)
		}
	}
}

func TestAssignLocalDevice(t *testing.T) {
	s := cluster.FromInput(cluster.Input{Name: "d", NodeCount: intp(2), Local: &cluster.Local{DataDir: "/d", PortBase: 5000, Limits: &cluster.Limits{ReadIOPS: 100}}})
	got := cluster.AssignLocal(s, nil)
	if got[0].DataDir != "/d/node-1/data" || got[1].DataDir != "/d/node-2/data" {
		t.Errorf("a node with its own device keeps its data below the mount point: %+v", got)
	}
}

func TestAssignLocal(t *testing.T) {
	s := cluster.FromInput(cluster.Input{Name: "d", Nodes: []cluster.Node{{Name: "node-1", Zone: "a"}, {Name: "node-2"}, {Name: "node-3", Zone: "c"}, {Name: "node-4"}},
		Local: &cluster.Local{DataDir: "/d", PortBase: 5000}})
	prior := []cluster.Member{{Name: "node-1", Port: 5000, DataDir: "/d/node-1"}, {Name: "node-3", Port: 5002, DataDir: "/old/node-3"}}
	got := cluster.AssignLocal(s, prior)
	want := []cluster.Member{
		{Name: "node-1", Zone: "a", Host: "127.0.0.1", Port: 5000, DataDir: "/d/node-1"},
		{Name: "node-2", Zone: "local", Host: "127.0.0.1", Port: 5001, DataDir: "/d/node-2"}, // the lowest free port
		{Name: "node-3", Zone: "c", Host: "127.0.0.1", Port: 5002, DataDir: "/old/node-3"},   // keeps its identity
		{Name: "node-4", Zone: "local", Host: "127.0.0.1", Port: 5003, DataDir: "/d/node-4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AssignLocal =\n%+v\nwant\n%+v", got, want)
	}
	// Removing node-2 leaves the others where they are.
	s.Nodes = slices.Delete(s.Nodes, 1, 2)
	got = cluster.AssignLocal(s, want)
	if got[0].Port != 5000 || got[1].Port != 5002 || got[2].Port != 5003 {
		t.Errorf("after removing node-2: %+v", got)
	}
}

func TestPlanned(t *testing.T) {
	members := []cluster.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	got, promoting := cluster.Planned(members, nil, nil, true)
	if promoting || got[0].Role != cluster.RolePrimary || got[1].Role != cluster.RoleStandby || got[2].State != cluster.StateRunning {
		t.Errorf("create: %+v %v", got, promoting)
	}
	known := map[string]string{"n1": "", "n2": cluster.RolePrimary, "n3": cluster.RoleStandby}
	got, promoting = cluster.Planned(members, known, []topology.Action{{Kind: topology.Reseed, Node: "n1", Source: "n2"}}, false)
	if promoting || got[0].Role != cluster.RoleStandby || got[1].Role != cluster.RolePrimary {
		t.Errorf("reseed of the old primary: %+v", got)
	}
	_, promoting = cluster.Planned(members, known, []topology.Action{{Kind: topology.Promote, Node: "n3"}}, false)
	if !promoting {
		t.Error("a promotion makes the roles unknown")
	}
}

func TestConnectionURIAndGone(t *testing.T) {
	m := []cluster.Member{{Name: "a", Role: cluster.RoleStandby, Host: "127.0.0.1", Port: 1}, {Name: "b", Role: cluster.RolePrimary, Host: "::1", Port: 5432}}
	uri, p, ok := cluster.ConnectionURI(m, "postgres", "postgres")
	if !ok || p.Name != "b" || uri != "postgresql://postgres@[::1]:5432/postgres" {
		t.Errorf("ConnectionURI = %q %v %v", uri, p, ok)
	}
	m[0].Role = cluster.RolePrimary
	if _, _, ok := cluster.ConnectionURI(m, "postgres", "postgres"); ok {
		t.Error("two primaries: no URI")
	}
	if (cluster.Status{Members: []cluster.Member{{State: cluster.StateMissing}, {State: cluster.StateStopped}}}).Gone() {
		t.Error("a stopped member is not gone")
	}
	if !(cluster.Status{Members: []cluster.Member{{State: cluster.StateMissing}}}).Gone() {
		t.Error("every member missing is gone")
	}
}
