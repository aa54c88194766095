package capacity_test

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// m6id4xlargeNVMeGiB is 950 GB in GiB.
const m6id4xlargeNVMeGiB = 950e9 / (1 << 30)

var (
	commonKeys = []string{
		"shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem", "wal_buffers", "max_wal_size",
		"min_wal_size", "max_slot_wal_keep_size", "checkpoint_timeout", "checkpoint_completion_target",
		"random_page_cost", "effective_io_concurrency", "maintenance_io_concurrency", "max_worker_processes",
		"max_parallel_workers", "max_parallel_workers_per_gather", "max_parallel_maintenance_workers",
		"autovacuum_max_workers", "autovacuum_vacuum_cost_limit", "wal_compression", "huge_pages", "max_connections",
	}
	pg18Keys = []string{"io_method", "io_workers"}
)

func hw(vcpus int, memGiB, diskGiB float64, st capacity.Storage, wl capacity.Workload, conns, major int) capacity.Hardware {
	return capacity.Hardware{VCPUs: vcpus, MemoryGiB: memGiB, DiskGiB: diskGiB, Storage: st, Workload: wl, MaxConnections: conns, PostgresMajor: major}
}

func TestTune_examples(t *testing.T) {
	m6id15 := map[string]string{
		"max_connections":                  "100",
		"shared_buffers":                   "16GB",
		"effective_cache_size":             "48GB",
		"work_mem":                         "54MB", // (65536 - 16384) / (100 x 3 x (1 + 2)) = 54.6
		"maintenance_work_mem":             "2GB",
		"wal_buffers":                      "16MB",
		"max_wal_size":                     "44GB", // 5% of 884.76 GiB = 44.2 GiB
		"min_wal_size":                     "11GB",
		"max_slot_wal_keep_size":           "88GB", // 10% of 884.76 GiB = 88.5 GiB
		"checkpoint_timeout":               "15min",
		"checkpoint_completion_target":     "0.9",
		"random_page_cost":                 "1.1",
		"effective_io_concurrency":         "256",
		"maintenance_io_concurrency":       "256",
		"max_worker_processes":             "20",
		"max_parallel_workers":             "16",
		"max_parallel_workers_per_gather":  "2",
		"max_parallel_maintenance_workers": "4",
		"autovacuum_max_workers":           "4",
		"autovacuum_vacuum_cost_limit":     "2000",
		"wal_compression":                  "lz4",
		"huge_pages":                       "try",
	}
	m6id18 := maps.Clone(m6id15)
	m6id18["io_method"] = "worker"
	m6id18["io_workers"] = "8"

	m6id13 := maps.Clone(m6id15)
	m6id13["wal_compression"] = "on"

	analytics := maps.Clone(m6id18)
	analytics["max_parallel_workers_per_gather"] = "8"
	analytics["work_mem"] = "72MB" // 49152 / (25 x 3 x 9) = 72.8

	ebs := maps.Clone(m6id18)
	ebs["random_page_cost"] = "2.0"
	ebs["effective_io_concurrency"] = "16"
	ebs["maintenance_io_concurrency"] = "16"
	ebs["autovacuum_max_workers"] = "3"
	ebs["autovacuum_vacuum_cost_limit"] = "600"

	tiny := map[string]string{
		"max_connections":                  "100",
		"shared_buffers":                   "256MB",
		"effective_cache_size":             "768MB",
		"work_mem":                         "4MB", // (1024 - 256) / 300 = 2.56, floor 4
		"maintenance_work_mem":             "64MB",
		"wal_buffers":                      "8MB",
		"max_wal_size":                     "1GB",
		"min_wal_size":                     "256MB",
		"max_slot_wal_keep_size":           "1GB",
		"checkpoint_timeout":               "15min",
		"checkpoint_completion_target":     "0.9",
		"random_page_cost":                 "1.1",
		"effective_io_concurrency":         "256",
		"maintenance_io_concurrency":       "256",
		"max_worker_processes":             "8",
		"max_parallel_workers":             "1",
		"max_parallel_workers_per_gather":  "0",
		"max_parallel_maintenance_workers": "0",
		"autovacuum_max_workers":           "3",
		"autovacuum_vacuum_cost_limit":     "1500",
		"wal_compression":                  "lz4",
		"huge_pages":                       "try",
		"io_method":                        "worker",
		"io_workers":                       "3",
	}

	for _, tc := range []struct {
		name string
		h    capacity.Hardware
		want map[string]string
	}{
		{"m6id.4xlarge oltp 18", hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 18), m6id18},
		{"m6id.4xlarge oltp 15", hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 15), m6id15},
		{"m6id.4xlarge oltp 13", hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 13), m6id13},
		{"m6id.4xlarge analytics 18", hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadAnalytics, 100, 18), analytics},
		{"same machine on ebs 18", hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageEBS, capacity.WorkloadOLTP, 100, 18), ebs},
		{"tiny 18", hw(1, 1, 10, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 18), tiny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := capacity.Tune(tc.h)
			if err != nil {
				t.Fatalf("Tune: %v", err)
			}
			for _, k := range slices.Sorted(maps.Keys(tc.want)) {
				if got[k] != tc.want[k] {
					t.Errorf("%s = %q, want %q", k, got[k], tc.want[k])
				}
			}
			for k := range got {
				if _, ok := tc.want[k]; !ok {
					t.Errorf("unexpected %s = %q", k, got[k])
				}
			}
		})
	}
}

// TestTune_invariants checks the rules' promises over a grid of hardware.
func TestTune_invariants(t *testing.T) {
	n := 0
	for _, vcpus := range []int{1, 2, 3, 4, 8, 16, 48, 64, 192, 1024} {
		for _, mem := range []float64{0.5, 1, 3.7, 8, 64, 512, 4096, 32768} {
			for _, disk := range []float64{1, 1.5, 10, 100, m6id4xlargeNVMeGiB, 13969.8, 60000, math.MaxInt32} {
				for _, st := range []capacity.Storage{capacity.StorageNVMe, capacity.StorageSSD, capacity.StorageEBS} {
					for _, wl := range []capacity.Workload{capacity.WorkloadOLTP, capacity.WorkloadMixed, capacity.WorkloadAnalytics} {
						for _, conns := range []int{10, 100, 10000} {
							for major := capacity.MinPostgresMajor; major <= capacity.MaxPostgresMajor; major++ {
								h := hw(vcpus, mem, disk, st, wl, conns, major)
								got, err := capacity.Tune(h)
								if err != nil {
									t.Fatalf("Tune(%+v): %v", h, err)
								}
								if err := checkInvariants(h, got); err != nil {
									t.Fatalf("Tune(%+v): %v\n%v", h, err, got)
								}
								n++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d hardware shapes", n)
}

func checkInvariants(h capacity.Hardware, p map[string]string) error {
	want := slices.Clone(commonKeys)
	if h.PostgresMajor >= 18 {
		want = append(want, pg18Keys...)
	}
	if got := slices.Sorted(maps.Keys(p)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		return fmt.Errorf("keys = %v, want %v", got, slices.Sorted(slices.Values(want)))
	}

	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	mb := func(k string) int64 {
		v, err := parseMB(p[k])
		if err != nil {
			fail("%s: %v", k, err)
		}
		return v
	}
	integer := func(k string, lo, hi int) int {
		v, err := strconv.Atoi(p[k])
		if err != nil {
			fail("%s = %q is not an integer", k, p[k])
		} else if v < lo || v > hi {
			fail("%s = %d outside PostgreSQL's range %d..%d", k, v, lo, hi)
		}
		return v
	}
	real := func(k string, lo, hi float64) {
		if v, err := strconv.ParseFloat(p[k], 64); err != nil || v < lo || v > hi {
			fail("%s = %q is not a number in %g..%g", k, p[k], lo, hi)
		}
	}

	ram := int64(h.MemoryGiB * 1024)
	disk := int64(h.DiskGiB * 1024)
	sb, ecs, wm, mwm, wb := mb("shared_buffers"), mb("effective_cache_size"), mb("work_mem"), mb("maintenance_work_mem"), mb("wal_buffers")
	maxWAL, minWAL, slot := mb("max_wal_size"), mb("min_wal_size"), mb("max_slot_wal_keep_size")

	// PostgreSQL's ranges (64-bit builds), in MB.
	if sb < 1 || sb >= 8*1024*1024 || sb >= ram {
		fail("shared_buffers %d MB: want at least 1 MB, under 8 TiB and under RAM (%d MB)", sb, ram)
	}
	if ecs < sb || ecs >= 16*1024*1024 || ecs >= ram {
		fail("effective_cache_size %d MB: want between shared_buffers and RAM, under 16 TiB", ecs)
	}
	if wm < 4 || wm > 2047 {
		fail("work_mem %d MB: want 4 MB to 2047 MB", wm)
	}
	if mwm < 1 || mwm > 2048 {
		fail("maintenance_work_mem %d MB: want 1 MB to 2 GB", mwm)
	}
	if wb < 1 || wb > 16 {
		fail("wal_buffers %d MB: want 1 to 16 MB", wb)
	}
	if minWAL < 32 || maxWAL < 32 {
		fail("min_wal_size %d MB, max_wal_size %d MB: both must be at least two 16 MB segments", minWAL, maxWAL)
	}
	if minWAL > maxWAL {
		fail("min_wal_size %d MB > max_wal_size %d MB", minWAL, maxWAL)
	}
	if 4*(maxWAL+slot) > disk {
		fail("max_wal_size %d MB + max_slot_wal_keep_size %d MB exceed 25%% of the disk (%d MB)", maxWAL, slot, disk)
	}
	if slot < 1 {
		fail("max_slot_wal_keep_size %d MB: want a positive guard (-1 is unlimited)", slot)
	}

	workers := integer("max_worker_processes", 0, 262143)
	parallel := integer("max_parallel_workers", 0, 1024)
	perGather := integer("max_parallel_workers_per_gather", 0, 1024)
	maint := integer("max_parallel_maintenance_workers", 0, 1024)
	if perGather > parallel || parallel > workers {
		fail("want per_gather (%d) <= max_parallel_workers (%d) <= max_worker_processes (%d)", perGather, parallel, workers)
	}
	if maint > parallel {
		fail("max_parallel_maintenance_workers %d > max_parallel_workers %d", maint, parallel)
	}
	av := integer("autovacuum_max_workers", 1, 16) // 18's default autovacuum_worker_slots is 16
	integer("autovacuum_vacuum_cost_limit", 1, 10000)
	integer("effective_io_concurrency", 0, 1000)
	integer("maintenance_io_concurrency", 0, 1000)
	conns := integer("max_connections", 1, 262143)
	if conns != h.MaxConnections {
		fail("max_connections = %d, want %d", conns, h.MaxConnections)
	}
	if conns+av+workers+10+1 > 262143 {
		fail("backends exceed PostgreSQL's 262143")
	}
	real("random_page_cost", 0, 1.79e308)
	real("checkpoint_completion_target", 0, 1)
	if p["checkpoint_timeout"] != "15min" {
		fail("checkpoint_timeout = %q", p["checkpoint_timeout"])
	}
	if p["huge_pages"] != "try" {
		fail("huge_pages = %q", p["huge_pages"])
	}
	if wantWC := map[bool]string{true: "lz4", false: "on"}[h.PostgresMajor >= 15]; p["wal_compression"] != wantWC {
		fail("wal_compression = %q on %d, want %q", p["wal_compression"], h.PostgresMajor, wantWC)
	}
	if h.PostgresMajor >= 18 {
		if p["io_method"] != "worker" {
			fail("io_method = %q", p["io_method"])
		}
		integer("io_workers", 1, 32)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// parseMB reads a memory value as Tune writes it: whole MB or GB.
func parseMB(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mb     int64
	}{{"GB", 1024}, {"MB", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a whole number of %s", s, u.suffix)
			}
			return v * u.mb, nil
		}
	}
	return 0, fmt.Errorf("%q has no MB or GB unit", s)
}

func TestTune_monotonicInRAM(t *testing.T) {
	prev := int64(0)
	for mem := 0.5; mem <= 1024; mem *= 2 {
		p, err := capacity.Tune(hw(8, mem, 500, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 18))
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := parseMB(p["shared_buffers"])
		if sb <= prev {
			t.Errorf("shared_buffers %d MB at %g GiB does not grow (was %d MB)", sb, mem, prev)
		}
		prev = sb
	}
}

func TestHardwareValidate(t *testing.T) {
	ok := hw(16, 64, 884.76, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 18)
	with := func(f func(*capacity.Hardware)) capacity.Hardware {
		h := ok
		f(&h)
		return h
	}
	for _, tc := range []struct {
		name string
		h    capacity.Hardware
		want []string // substrings of the error; none means valid
	}{
		{"m6id.4xlarge", ok, nil},
		{"tiny", hw(1, 1, 10, capacity.StorageSSD, capacity.WorkloadMixed, 10, 13), nil},
		{"smallest", hw(1, 0.5, 1, capacity.StorageEBS, capacity.WorkloadAnalytics, 10, 13), nil},
		{"largest", hw(1024, 32768, math.MaxInt32, capacity.StorageNVMe, capacity.WorkloadOLTP, 10000, 18), nil},
		{"zero vCPUs", with(func(h *capacity.Hardware) { h.VCPUs = 0 }), []string{"The vCPU count is 0; set it to the machine's vCPUs, 1 to 1024."}},
		{"negative vCPUs", with(func(h *capacity.Hardware) { h.VCPUs = -4 }), []string{"vCPU count is -4"}},
		{"too many vCPUs", with(func(h *capacity.Hardware) { h.VCPUs = 1025 }), []string{"vCPU count is 1025"}},
		{"zero memory", with(func(h *capacity.Hardware) { h.MemoryGiB = 0 }), []string{"The memory is 0 GiB; set it to the machine's memory in GiB, 0.5 to 32768."}},
		{"negative memory", with(func(h *capacity.Hardware) { h.MemoryGiB = -1 }), []string{"memory is -1 GiB"}},
		{"NaN memory", with(func(h *capacity.Hardware) { h.MemoryGiB = math.NaN() }), []string{"memory must be a finite number"}},
		{"too much memory", with(func(h *capacity.Hardware) { h.MemoryGiB = 40000 }), []string{"memory is 40000 GiB"}},
		{"zero disk", with(func(h *capacity.Hardware) { h.DiskGiB = 0 }), []string{"The disk size is 0 GiB; set it to the size of the disk holding PGDATA and pg_wal in GiB"}},
		{"small disk", with(func(h *capacity.Hardware) { h.DiskGiB = 0.5 }), []string{"disk size is 0.5 GiB"}},
		{"infinite disk", with(func(h *capacity.Hardware) { h.DiskGiB = math.Inf(1) }), []string{"disk size must be a finite number"}},
		{"unknown storage", with(func(h *capacity.Hardware) { h.Storage = "hdd" }), []string{`The storage kind "hdd" is unknown; use "nvme", "ssd" or "ebs".`}},
		{"empty storage", with(func(h *capacity.Hardware) { h.Storage = "" }), []string{`storage kind "" is unknown`}},
		{"unknown workload", with(func(h *capacity.Hardware) { h.Workload = "olap" }), []string{`The workload "olap" is unknown; use "oltp", "mixed" or "analytics".`}},
		{"too few connections", with(func(h *capacity.Hardware) { h.MaxConnections = 5 }), []string{"max_connections is 5; set it to 10 to 10000"}},
		{"zero connections", with(func(h *capacity.Hardware) { h.MaxConnections = 0 }), []string{"max_connections is 0"}},
		{"too many connections", with(func(h *capacity.Hardware) { h.MaxConnections = 20000 }), []string{"max_connections is 20000"}},
		{"major too old", with(func(h *capacity.Hardware) { h.PostgresMajor = 12 }), []string{"PostgreSQL major version 12 is not supported; use 13 to 18."}},
		{"major too new", with(func(h *capacity.Hardware) { h.PostgresMajor = 19 }), []string{"major version 19 is not supported"}},
		{"zero value reports everything", capacity.Hardware{}, []string{"vCPU count is 0", "memory is 0", "disk size is 0", "storage kind", "workload", "max_connections is 0", "major version 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.Validate()
			_, tuneErr := capacity.Tune(tc.h)
			if (err == nil) != (tuneErr == nil) {
				t.Errorf("Validate = %v but Tune's error = %v", err, tuneErr)
			}
			wantValidation(t, err, tc.want)
		})
	}
}

func TestRules(t *testing.T) {
	rules := capacity.Rules()
	var names []string
	for _, r := range rules {
		names = append(names, r.Parameter)
		if strings.TrimSpace(r.Description) == "" {
			t.Errorf("%s has no description", r.Parameter)
		}
		if r.MinMajor != 0 && (r.MinMajor < capacity.MinPostgresMajor || r.MinMajor > capacity.MaxPostgresMajor) {
			t.Errorf("%s: MinMajor %d outside the supported versions", r.Parameter, r.MinMajor)
		}
	}
	p, err := capacity.Tune(hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, capacity.MaxPostgresMajor))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(slices.Values(names)), slices.Sorted(maps.Keys(p)); !slices.Equal(got, want) {
		t.Errorf("Rules() lists %v, Tune sets %v", got, want)
	}
}

// TestDocs_listEveryRule keeps the data source pages in step with the rules.
func TestDocs_listEveryRule(t *testing.T) {
	for _, page := range []string{"tuning.md.tmpl", "capacity_plan.md.tmpl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "templates", "data-sources", page))
		if err != nil {
			t.Fatalf("reading the %s template: %v", page, err)
		}
		for _, r := range capacity.Rules() {
			if !strings.Contains(string(b), "`"+r.Parameter+"`") {
				t.Errorf("%s does not mention `%s`", page, r.Parameter)
			}
		}
	}
}
