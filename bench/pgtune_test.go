package main

import (
	"maps"
	"slices"
	"testing"
)

// TestPGTune: PGTune's rules against values worked out by hand from its source (pgtuneSource), for the
// storage section's machine and two others that reach the rules' other branches.
func TestPGTune(t *testing.T) {
	for _, c := range []struct {
		name string
		in   pgtuneInput
		want map[string]string
	}{
		{"the storage section's machine", pgtuneInput{Major: 15, DBType: "oltp", MemoryMiB: 512, CPUs: 2, Connections: 100, Storage: "nvme", DBSize: "greater_ram"}, map[string]string{
			"max_connections": "100", "shared_buffers": "128MB", "effective_cache_size": "384MB", "maintenance_work_mem": "32MB",
			"checkpoint_completion_target": "0.9", "wal_buffers": "3932kB", "default_statistics_target": "100", "random_page_cost": "1.1",
			"effective_io_concurrency": "1000", "work_mem": "4MB", "huge_pages": "off", "jit": "off", "wal_compression": "lz4",
			"min_wal_size": "2GB", "max_wal_size": "8GB",
		}},
		{"a large warehouse", pgtuneInput{Major: 18, DBType: "dw", MemoryMiB: 64 * 1024, CPUs: 32, Storage: "ssd", DBSize: "mid_ram"}, map[string]string{
			"max_connections": "40", "shared_buffers": "16GB", "effective_cache_size": "48GB", "maintenance_work_mem": "8GB",
			"checkpoint_completion_target": "0.9", "wal_buffers": "16MB", "default_statistics_target": "500", "random_page_cost": "4",
			"effective_io_concurrency": "200", "max_worker_processes": "32", "max_parallel_workers_per_gather": "16",
			"max_parallel_workers": "32", "max_parallel_maintenance_workers": "4", "work_mem": "116508kB", "huge_pages": "try",
			"wal_compression": "lz4", "min_wal_size": "4GB", "max_wal_size": "16GB", "autovacuum_max_workers": "5",
			"autovacuum_work_mem": "2GB", "io_method": "io_uring",
		}},
		{"a desktop", pgtuneInput{Major: 13, DBType: "desktop", MemoryMiB: 4096, CPUs: 2, Storage: "hdd", DBSize: "less_ram"}, map[string]string{
			"max_connections": "20", "shared_buffers": "256MB", "effective_cache_size": "1GB", "maintenance_work_mem": "256MB",
			"checkpoint_completion_target": "0.9", "wal_buffers": "7864kB", "default_statistics_target": "100", "random_page_cost": "1.1",
			"effective_io_concurrency": "2", "work_mem": "10141kB", "huge_pages": "off", "wal_compression": "on",
			"min_wal_size": "100MB", "max_wal_size": "2GB", "wal_level": "minimal", "max_wal_senders": "0",
		}},
	} {
		got, err := pgtune(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, k := range slices.Sorted(maps.Keys(c.want)) {
			if got[k] != c.want[k] {
				t.Errorf("%s: %s = %q, want %q", c.name, k, got[k], c.want[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := c.want[k]; !ok {
				t.Errorf("%s: %s = %q recommended, not expected", c.name, k, got[k])
			}
		}
	}
	for _, bad := range []pgtuneInput{
		{Major: 15, DBType: "olap", MemoryMiB: 512, Storage: "nvme", DBSize: "mid_ram"},
		{Major: 15, DBType: "oltp", MemoryMiB: 512, Storage: "tape", DBSize: "mid_ram"},
		{Major: 15, DBType: "oltp", MemoryMiB: 512, Storage: "nvme", DBSize: "huge"},
		{Major: 9, DBType: "oltp", MemoryMiB: 512, Storage: "nvme", DBSize: "mid_ram"},
	} {
		if _, err := pgtune(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestPGTunePeer: the storage section's peer from PGTune keeps what pgnvme_cluster takes and says why it
// drops the rest.
func TestPGTunePeer(t *testing.T) {
	p, err := pgtunePeer(pgtuneInput{Major: 15, DBType: "oltp", MemoryMiB: storageMemoryMiB, CPUs: 2, Connections: storagePeerConnections, Storage: "nvme", DBSize: "greater_ram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kept %v; dropped %v", p.Parameters, p.Dropped)
	if len(p.Parameters)+len(p.Dropped) != len(p.Recommended) || p.Parameters["shared_buffers"] != "128MB" || p.Parameters["wal_compression"] != "lz4" {
		t.Errorf("peer: %+v", p)
	}
}
