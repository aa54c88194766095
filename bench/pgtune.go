package main

import (
	"fmt"
	"math"
)

// PGTune's recommendation, the storage section's peer where timescaledb-tune cannot be installed. PGTune
// (pgtune.leopard.in.ua) is a web page whose rules live in its JavaScript; it has no command line and no
// package the bench could run, so its rules are written here again, for Linux, from its source at
// pgtuneSource (src/features/configuration/configurationSlice.js, and formatValue in
// src/common/components/configurationView/index.jsx for the units). pgtune_test.go checks them against
// values worked out by hand from those rules.
const (
	pgtuneName   = "PGTune (rules of le0pard/pgtune, written again in bench/pgtune.go)"
	pgtuneSource = "github.com/le0pard/pgtune@7caef27"
)

// pgtuneInput is PGTune's form: the PostgreSQL version, the workload ("web", "oltp", "dw", "desktop",
// "mixed"), memory, CPUs, connections (0: PGTune's default for the workload), the storage ("ssd", "hdd",
// "san", "nvme") and the database's size against memory ("less_ram", "mid_ram", "greater_ram").
type pgtuneInput struct {
	Major       int
	DBType      string
	MemoryMiB   int
	CPUs        int
	Connections int
	Storage     string
	DBSize      string
}

// pgtune is PGTune's postgresql.conf for in, on Linux, as name -> value in PGTune's own units.
func pgtune(in pgtuneInput) (map[string]string, error) {
	byType := func(web, oltp, dw, desktop, mixed float64) float64 {
		return map[string]float64{"web": web, "oltp": oltp, "dw": dw, "desktop": desktop, "mixed": mixed}[in.DBType]
	}
	switch in.DBType {
	case "web", "oltp", "dw", "desktop", "mixed":
	default:
		return nil, fmt.Errorf("PGTune has no database type %q", in.DBType)
	}
	ioConcurrency := map[string]int{"hdd": 2, "ssd": 200, "san": 300, "nvme": 1000}
	if _, ok := ioConcurrency[in.Storage]; !ok {
		return nil, fmt.Errorf("PGTune has no storage %q", in.Storage)
	}
	switch in.DBSize {
	case "less_ram", "mid_ram", "greater_ram":
	default:
		return nil, fmt.Errorf("PGTune has no database size %q", in.DBSize)
	}
	if in.Major < 10 || in.MemoryMiB <= 0 {
		return nil, fmt.Errorf("PGTune's rules here take PostgreSQL 10 or later and a memory size")
	}
	const mib, gib = 1024.0, 1024.0 * 1024 // in kB, PGTune's unit
	memKB := float64(in.MemoryMiB) * mib
	out := map[string]string{}
	set := func(name string, v any) { out[name] = fmt.Sprint(v) }

	conns := float64(in.Connections)
	if conns == 0 {
		conns = byType(200, 300, 40, 20, 100)
	}
	set("max_connections", int(conns))
	shared := math.Floor(memKB / byType(4, 4, 4, 16, 4))
	set("shared_buffers", pgtuneSize(shared))
	set("effective_cache_size", pgtuneSize(math.Floor(memKB*byType(3, 3, 3, 1, 3)/4)))
	maint := math.Min(math.Floor(memKB/byType(16, 16, 8, 16, 16)), 8*gib)
	set("maintenance_work_mem", pgtuneSize(maint))
	set("checkpoint_completion_target", 0.9)
	wal := math.Floor(3 * shared / 100)
	if wal > 16*mib {
		wal = 16 * mib
	}
	if wal > 14*mib && wal < 16*mib {
		wal = 16 * mib
	}
	if wal < 32 {
		wal = 32
	}
	set("wal_buffers", pgtuneSize(wal))
	set("default_statistics_target", int(byType(100, 100, 500, 100, 100)))
	randomPageCost := 1.1
	if in.DBSize != "less_ram" && (in.Storage == "hdd" || in.DBType == "dw") {
		randomPageCost = 4
	}
	set("random_page_cost", randomPageCost)
	set("effective_io_concurrency", ioConcurrency[in.Storage])

	workers := 8.0 // max_worker_processes' default, which work_mem counts when no parallel settings are made
	if in.CPUs >= 4 {
		perGather := math.Ceil(float64(in.CPUs) / 2)
		if in.DBType != "dw" && perGather > 4 {
			perGather = 4
		}
		workers = float64(in.CPUs)
		set("max_worker_processes", in.CPUs)
		set("max_parallel_workers_per_gather", int(perGather))
		set("max_parallel_workers", in.CPUs)
		if in.Major >= 11 {
			set("max_parallel_maintenance_workers", int(math.Min(math.Ceil(float64(in.CPUs)/2), 4)))
		}
	}
	workMem := (memKB - shared) / ((conns + workers) * 3)
	work := math.Floor(workMem / byType(1, 1, 2, 6, 2))
	switch in.DBSize {
	case "less_ram":
		work = math.Floor(work * 1.3)
	case "greater_ram":
		work = math.Floor(work * 0.9)
	}
	if work < 4*mib {
		work = 4 * mib
	}
	set("work_mem", pgtuneSize(work))
	if shared >= 2*gib {
		set("huge_pages", "try")
	} else {
		set("huge_pages", "off")
	}
	if in.Major >= 12 && (in.DBType == "web" || in.DBType == "oltp" || in.DBType == "mixed") {
		set("jit", "off")
	}
	if in.Major >= 15 {
		set("wal_compression", "lz4")
	} else {
		set("wal_compression", "on")
	}
	set("min_wal_size", pgtuneSize(byType(1024, 2048, 4096, 100, 1024)*mib))
	set("max_wal_size", pgtuneSize(byType(4096, 8192, 16384, 2048, 4096)*mib))
	if in.DBType == "desktop" {
		set("wal_level", "minimal")
		set("max_wal_senders", 0)
	}
	if in.CPUs >= 32 {
		set("autovacuum_max_workers", 5)
	} else if in.CPUs >= 16 {
		set("autovacuum_max_workers", 4)
	}
	if maint >= 2*gib {
		set("autovacuum_work_mem", pgtuneSize(2*gib))
	}
	if in.Major >= 18 {
		set("io_method", "io_uring")
	}
	return out, nil
}

// pgtuneSize writes kB as PGTune does: in GB or MB when that loses nothing, else in kB.
func pgtuneSize(kb float64) string {
	v := int64(kb)
	switch {
	case v%(1024*1024) == 0:
		return fmt.Sprintf("%dGB", v/(1024*1024))
	case v%1024 == 0:
		return fmt.Sprintf("%dMB", v/1024)
	}
	return fmt.Sprintf("%dkB", v)
}

// storagePeerConnections is the connection count PGTune is given for the storage section: PostgreSQL's
// default max_connections, which the tuned and the defaults arms run with (pgnvme_tuning sets none).
const storagePeerConnections = 100

// pgtunePeer is PGTune's recommendation for in as the storage section's peer, with what pgnvme_cluster
// would refuse dropped.
func pgtunePeer(in pgtuneInput) (*PeerTuning, error) {
	rec, err := pgtune(in)
	if err != nil {
		return nil, err
	}
	kept, dropped := dropPeerParameters(rec, in.Major)
	return &PeerTuning{
		Name:    pgtuneName,
		Version: pgtuneSource,
		Command: fmt.Sprintf("PGTune's form: PostgreSQL %d, Linux, %s, %d MB memory, %d CPUs, %d connections, %s storage, database size %s",
			in.Major, in.DBType, in.MemoryMiB, in.CPUs, in.Connections, in.Storage, in.DBSize),
		Recommended: rec,
		Parameters:  kept,
		Dropped:     dropped,
	}, nil
}
