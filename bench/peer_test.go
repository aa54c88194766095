package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// timescaledb-tune 0.19.0's standard output for -memory 512MB -cpus 2 -pg-version 15 -wal-disk-size 16GB
// -dry-run -quiet -yes -color=false, on 2026-12-05.
const tstuneOutput = `shared_preload_libraries = 'timescaledb'	# (change requires restart)
shared_buffers = 128MB
effective_cache_size = 384MB
maintenance_work_mem = 64MB
work_mem = 8MB
timescaledb.max_background_workers = 16
max_worker_processes = 21
max_parallel_workers_per_gather = 1
max_parallel_workers = 2
wal_buffers = 3932kB
min_wal_size = 4920MB
max_wal_size = 9840MB
default_statistics_target = 100
random_page_cost = 1.1
checkpoint_completion_target = 0.9
max_connections = 25
max_locks_per_transaction = 128
autovacuum_max_workers = 10
autovacuum_naptime = 10
default_toast_compression = lz4
jit = off
effective_io_concurrency = 256
timescaledb.last_tuned = '2026-12-05T09:15:38Z'
timescaledb.last_tuned_version = '0.19.0'
`

func TestParsePeerConf(t *testing.T) {
	got, err := parsePeerConf(tstuneOutput)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"shared_preload_libraries":       "timescaledb",
		"shared_buffers":                 "128MB",
		"wal_buffers":                    "3932kB",
		"timescaledb.last_tuned_version": "0.19.0",
		"jit":                            "off",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	if len(got) != 24 {
		t.Errorf("%d parameters, want 24", len(got))
	}

	for _, bad := range []string{"", "# only a comment\n", "shared_buffers 128MB\n", "x = 'open\n", " = 1\n"} {
		if _, err := parsePeerConf(bad); err == nil {
			t.Errorf("parsePeerConf(%q): no error", bad)
		}
	}
	if got, err := parsePeerConf("work_mem = 8MB # per sort\n"); err != nil || got["work_mem"] != "8MB" {
		t.Errorf("trailing comment: %v, %v", got, err)
	}
}

func TestDropPeerParameters(t *testing.T) {
	rec, err := parsePeerConf(tstuneOutput + "port = 5433\nstats_temp_directory = 'pg_stat_tmp'\n")
	if err != nil {
		t.Fatal(err)
	}
	kept, dropped := dropPeerParameters(rec, 15)
	wantDropped := []string{"port", "shared_preload_libraries", "stats_temp_directory",
		"timescaledb.last_tuned", "timescaledb.last_tuned_version", "timescaledb.max_background_workers"}
	if got := slices.Sorted(maps.Keys(dropped)); !slices.Equal(got, wantDropped) {
		t.Errorf("dropped %v, want %v", got, wantDropped)
	}
	if len(kept)+len(dropped) != len(rec) {
		t.Errorf("kept %d + dropped %d != %d recommended", len(kept), len(dropped), len(rec))
	}
	if kept["max_worker_processes"] != "21" || kept["max_connections"] != "25" {
		t.Errorf("kept %v", kept)
	}
	if !strings.Contains(dropped["port"], "refuses") {
		t.Errorf("port dropped because %q", dropped["port"])
	}
}

func TestHCLMap(t *testing.T) {
	got := hclMap(map[string]string{"work_mem": "8MB", "jit": "off"})
	want := "{\n    \"jit\" = \"off\"\n    \"work_mem\" = \"8MB\"\n  }"
	if got != want {
		t.Errorf("hclMap = %q, want %q", got, want)
	}
}
