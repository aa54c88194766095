package capacity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Storage is the kind of disk that holds PGDATA and pg_wal.
type Storage string

// The storage kinds [Tune] knows.
const (
	// StorageNVMe is local NVMe (EC2 instance store): ~0.1 ms reads, deep queues.
	StorageNVMe Storage = "nvme"
	// StorageSSD is any other local SSD (SATA/SAS): fast random reads, shallower queues.
	StorageSSD Storage = "ssd"
	// StorageEBS is network block storage such as gp3: ~0.5-1 ms per I/O and an
	// IOPS budget.
	StorageEBS Storage = "ebs"
)

// Workload is the shape of the queries the server runs.
type Workload string

// The workloads [Tune] knows.
const (
	// WorkloadOLTP is many short transactions from many sessions.
	WorkloadOLTP Workload = "oltp"
	// WorkloadMixed is OLTP plus reporting queries.
	WorkloadMixed Workload = "mixed"
	// WorkloadAnalytics is few sessions running large scans, sorts and joins.
	WorkloadAnalytics Workload = "analytics"
)

// Limits and defaults of [Hardware].
const (
	// MinPostgresMajor is the oldest major version Tune writes parameters for.
	MinPostgresMajor = 13
	// MaxPostgresMajor is the newest major version Tune writes parameters for.
	MaxPostgresMajor = 18
	// DefaultPostgresMajor is the major version callers should assume when
	// the user names none.
	DefaultPostgresMajor = 18
	// DefaultMaxConnections is the max_connections callers should assume
	// when the user names none (PostgreSQL's own default).
	DefaultMaxConnections = 100
	// MinMaxConnections and MaxMaxConnections bound Hardware.MaxConnections.
	MinMaxConnections = 10
	MaxMaxConnections = 10000
	// MaxVCPUs bounds Hardware.VCPUs.
	MaxVCPUs = 1024
	// MinMemoryGiB and MaxMemoryGiB bound Hardware.MemoryGiB.
	MinMemoryGiB = 0.5
	MaxMemoryGiB = 32768
	// MinDiskGiB bounds Hardware.DiskGiB from below; the upper bound is
	// math.MaxInt32 GiB.
	MinDiskGiB = 1
)

// Hardware is what [Tune] needs to know about a machine. Every field is
// taken literally (no zero-value defaults): callers fill in the defaults
// (DefaultMaxConnections, DefaultPostgresMajor, StorageNVMe, WorkloadOLTP).
type Hardware struct {
	// VCPUs is the number of vCPUs (hardware threads) PostgreSQL may use, 1 to 1024.
	VCPUs int
	// MemoryGiB is the machine's memory in GiB, 0.5 to 32768.
	MemoryGiB float64
	// DiskGiB is the size of the disk holding PGDATA and pg_wal in GiB, at least 1.
	DiskGiB float64
	// Storage is the kind of that disk.
	Storage Storage
	// Workload is the shape of the queries.
	Workload Workload
	// MaxConnections is the planned max_connections, 10 to 10000.
	MaxConnections int
	// PostgresMajor is the PostgreSQL major version, 13 to 18.
	PostgresMajor int
}

// Validate reports every problem with h, each as a sentence saying what to
// change, joined with errors.Join; nil when [Tune] accepts h.
func (h Hardware) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if h.VCPUs < 1 || h.VCPUs > MaxVCPUs {
		bad("The vCPU count is %d; set it to the machine's vCPUs, 1 to %d.", h.VCPUs, MaxVCPUs)
	}
	switch {
	case !finite(h.MemoryGiB):
		bad("The memory must be a finite number; set it to the machine's memory in GiB, %g to %d.", MinMemoryGiB, MaxMemoryGiB)
	case h.MemoryGiB < MinMemoryGiB || h.MemoryGiB > MaxMemoryGiB:
		bad("The memory is %g GiB; set it to the machine's memory in GiB, %g to %d.", h.MemoryGiB, MinMemoryGiB, MaxMemoryGiB)
	}
	switch {
	case !finite(h.DiskGiB):
		bad("The disk size must be a finite number; set it to the size of the disk holding PGDATA and pg_wal in GiB, at least %d.", MinDiskGiB)
	case h.DiskGiB < MinDiskGiB || h.DiskGiB > math.MaxInt32:
		bad("The disk size is %g GiB; set it to the size of the disk holding PGDATA and pg_wal in GiB, %d to %d.", h.DiskGiB, MinDiskGiB, math.MaxInt32)
	}
	if _, ok := storageProfiles[h.Storage]; !ok {
		bad("The storage kind %q is unknown; use %q, %q or %q.", h.Storage, StorageNVMe, StorageSSD, StorageEBS)
	}
	if _, ok := workloadProfiles[h.Workload]; !ok {
		bad("The workload %q is unknown; use %q, %q or %q.", h.Workload, WorkloadOLTP, WorkloadMixed, WorkloadAnalytics)
	}
	if h.MaxConnections < MinMaxConnections || h.MaxConnections > MaxMaxConnections {
		bad("max_connections is %d; set it to %d to %d (beyond a few hundred, put a pooler such as PgBouncer in front).",
			h.MaxConnections, MinMaxConnections, MaxMaxConnections)
	}
	if h.PostgresMajor < MinPostgresMajor || h.PostgresMajor > MaxPostgresMajor {
		bad("PostgreSQL major version %d is not supported; use %d to %d.", h.PostgresMajor, MinPostgresMajor, MaxPostgresMajor)
	}
	return errors.Join(errs...)
}

// Rule describes how [Tune] sets one parameter, for documentation.
type Rule struct {
	// Parameter is the postgresql.conf name.
	Parameter string
	// MinMajor is the first major version Tune sets it for; 0 means every
	// supported version.
	MinMajor int
	// Description is the rule in one or two sentences (Markdown).
	Description string
}

// Rules returns the tuning rules in the order [Tune] applies them.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = r.Rule
	}
	return out
}

// Tune returns PostgreSQL parameters for h, keyed by parameter name, with
// values PostgreSQL accepts verbatim in postgresql.conf and ALTER SYSTEM:
// integers, memory in whole MB or GB, times with "min", reals, "on"/"off"
// and enum names. It returns only parameters that exist in h.PostgresMajor
// (io_method and io_workers from 18 on); see [Rules] for every rule. It
// returns h.Validate's error when h is invalid.
func Tune(h Hardware) (map[string]string, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rules))
	for _, r := range rules {
		if h.PostgresMajor >= r.MinMajor {
			out[r.Parameter] = r.value(h)
		}
	}
	return out, nil
}

// storageProfile holds the rules that depend on the kind of disk.
type storageProfile struct {
	// randomPageCost: NVMe and SSD serve a random 8 kB read about as fast as
	// a sequential one. gp3 serves 3,000 IOPS (24 MB/s of random 8 kB pages)
	// against 125 MB/s sequential (reads merged up to 256 KiB per IOP):
	// uncached, a random page costs ~5 sequential ones; most random reads
	// hit the cache, hence 2.0.
	randomPageCost float64
	// ioConcurrency is effective_io_concurrency and maintenance_io_concurrency:
	// reads in flight per session that the device can absorb.
	ioConcurrency int
	// scaleAutovacuum gives more autovacuum workers to more vCPUs; on EBS
	// the IOPS budget, not the CPU, is the limit.
	scaleAutovacuum bool
	// vacuumCostPerWorker is the autovacuum_vacuum_cost_limit budget per
	// autovacuum worker (the limit is shared by all running workers).
	vacuumCostPerWorker int
}

var storageProfiles = map[Storage]storageProfile{
	StorageNVMe: {randomPageCost: 1.1, ioConcurrency: 256, scaleAutovacuum: true, vacuumCostPerWorker: 500},
	StorageSSD:  {randomPageCost: 1.1, ioConcurrency: 200, scaleAutovacuum: true, vacuumCostPerWorker: 300},
	StorageEBS:  {randomPageCost: 2.0, ioConcurrency: 16, scaleAutovacuum: false, vacuumCostPerWorker: 200},
}

// workloadProfile holds the rules that depend on the workload.
type workloadProfile struct {
	// sessionDivisor: work_mem assumes max_connections/sessionDivisor
	// queries run at once (analytics runs few, large queries).
	sessionDivisor int
	// max_parallel_workers_per_gather = min(perGatherCap, vCPUs/perGatherDivisor).
	perGatherDivisor, perGatherCap int
}

var workloadProfiles = map[Workload]workloadProfile{
	WorkloadOLTP:      {sessionDivisor: 1, perGatherDivisor: 4, perGatherCap: 2},
	WorkloadMixed:     {sessionDivisor: 2, perGatherDivisor: 4, perGatherCap: 4},
	WorkloadAnalytics: {sessionDivisor: 4, perGatherDivisor: 2, perGatherCap: 8},
}

type rule struct {
	Rule
	value func(Hardware) string
}

// rules is the table Tune applies, in order. Every value function assumes a
// validated Hardware.
var rules = []rule{
	{Rule{"max_connections", 0, "`max_connections` as given (default 100)."},
		func(h Hardware) string { return strconv.Itoa(h.MaxConnections) }},
	{Rule{"shared_buffers", 0, "25% of RAM, at most 4 TiB."},
		func(h Hardware) string { return memory(sharedBuffersMB(h)) }},
	{Rule{"effective_cache_size", 0, "75% of RAM (shared buffers plus the OS page cache), at most 15 TiB."},
		func(h Hardware) string { return memory(effectiveCacheSizeMB(h)) }},
	{Rule{"work_mem", 0, "(RAM - shared_buffers) / (sessions x 3 x (1 + max_parallel_workers_per_gather)), " +
		"sessions = max_connections / 1 (oltp), 2 (mixed), 4 (analytics); 4 MB to 1 GB."},
		func(h Hardware) string { return memory(workMemMB(h)) }},
	{Rule{"maintenance_work_mem", 0, "RAM / 16, 64 MB to 2 GB."},
		func(h Hardware) string { return memory(maintenanceWorkMemMB(h)) }},
	{Rule{"wal_buffers", 0, "shared_buffers / 32, at most 16 MB (one WAL segment)."},
		func(h Hardware) string { return memory(walBuffersMB(h)) }},
	{Rule{"max_wal_size", 0, "5% of the disk, 1 GB to 64 GB, never above 10% of the disk; whole GB from 1 GB."},
		func(h Hardware) string { return memory(maxWALSizeMB(h)) }},
	{Rule{"min_wal_size", 0, "max_wal_size / 4, at least 80 MB, never above max_wal_size; whole GB from 1 GB."},
		func(h Hardware) string { return memory(minWALSizeMB(h)) }},
	{Rule{"max_slot_wal_keep_size", 0, "10% of the disk, 1 GB to 256 GB, never above 15% of the disk; whole GB from 1 GB. " +
		"With max_wal_size this keeps pg_wal within 25% of the disk when a slot is stuck: the slot is invalidated instead of the disk filling."},
		func(h Hardware) string { return memory(maxSlotWALKeepSizeMB(h)) }},
	{Rule{"checkpoint_timeout", 0, "15 min: fewer full-page writes; recovery replays at most max_wal_size."},
		func(Hardware) string { return "15min" }},
	{Rule{"checkpoint_completion_target", 0, "0.9: spread checkpoint writes over 90% of the interval."},
		func(Hardware) string { return "0.9" }},
	{Rule{"random_page_cost", 0, "1.1 on nvme and ssd; 2.0 on ebs (gp3: 3,000 IOPS of 8 kB random reads vs 125 MB/s sequential, mostly cached)."},
		func(h Hardware) string {
			return strconv.FormatFloat(storageProfiles[h.Storage].randomPageCost, 'f', 1, 64)
		}},
	{Rule{"effective_io_concurrency", 0, "256 on nvme, 200 on ssd, 16 on ebs."},
		func(h Hardware) string { return strconv.Itoa(storageProfiles[h.Storage].ioConcurrency) }},
	{Rule{"maintenance_io_concurrency", 0, "Same as effective_io_concurrency."},
		func(h Hardware) string { return strconv.Itoa(storageProfiles[h.Storage].ioConcurrency) }},
	{Rule{"max_worker_processes", 0, "vCPUs + 4 (room for logical replication and extension workers), at least 8."},
		func(h Hardware) string { return strconv.Itoa(maxWorkerProcesses(h)) }},
	{Rule{"max_parallel_workers", 0, "vCPUs."},
		func(h Hardware) string { return strconv.Itoa(maxParallelWorkers(h)) }},
	{Rule{"max_parallel_workers_per_gather", 0, "oltp: min(2, vCPUs / 4); mixed: min(4, vCPUs / 4); analytics: min(8, vCPUs / 2)."},
		func(h Hardware) string { return strconv.Itoa(maxParallelWorkersPerGather(h)) }},
	{Rule{"max_parallel_maintenance_workers", 0, "min(4, vCPUs / 2)."},
		func(h Hardware) string { return strconv.Itoa(maxParallelMaintenanceWorkers(h)) }},
	{Rule{"autovacuum_max_workers", 0, "nvme, ssd: vCPUs / 4, 3 to 8; ebs: 3."},
		func(h Hardware) string { return strconv.Itoa(autovacuumMaxWorkers(h)) }},
	{Rule{"autovacuum_vacuum_cost_limit", 0, "Per worker 500 (nvme), 300 (ssd), 200 (ebs), times autovacuum_max_workers (the limit is shared by the running workers)."},
		func(h Hardware) string { return strconv.Itoa(autovacuumVacuumCostLimit(h)) }},
	{Rule{"wal_compression", 0, "`lz4` from 15 (cheap on CPU, halves full-page images); `on` (pglz) before."},
		func(h Hardware) string {
			if h.PostgresMajor >= 15 {
				return "lz4"
			}
			return "on"
		}},
	{Rule{"huge_pages", 0, "`try`: used when the OS has them reserved, never a startup failure."},
		func(Hardware) string { return "try" }},
	{Rule{"io_method", 18, "`worker`: asynchronous I/O through I/O worker processes, on every platform. " +
		"`io_uring` needs a server built `--with-liburing` and a kernel and container runtime that allow io_uring " +
		"(Docker's default seccomp profile blocks it)."},
		func(Hardware) string { return "worker" }},
	{Rule{"io_workers", 18, "vCPUs / 2, 3 to 32."},
		func(h Hardware) string { return strconv.Itoa(ioWorkers(h)) }},
}

// Memory and disk sizes are computed in whole MB.

const (
	mbPerGB = 1024
	mbPerTB = 1024 * 1024
)

func ramMB(h Hardware) int64  { return int64(h.MemoryGiB * mbPerGB) }
func diskMB(h Hardware) int64 { return int64(h.DiskGiB * mbPerGB) }

// sharedBuffersMB is 25% of RAM, capped at 4 TiB (PostgreSQL's limit is
// just under 8 TiB).
func sharedBuffersMB(h Hardware) int64 { return min(ramMB(h)/4, 4*mbPerTB) }

// effectiveCacheSizeMB is 75% of RAM, capped at 15 TiB (PostgreSQL's limit
// is just under 16 TiB).
func effectiveCacheSizeMB(h Hardware) int64 { return min(ramMB(h)*3/4, 15*mbPerTB) }

// workMemMB divides the memory outside shared_buffers among the sort and
// hash nodes of the queries expected at once: each query may run 3 such
// nodes (hash nodes use hash_mem_multiplier x work_mem) in the leader and in
// each parallel worker.
func workMemMB(h Hardware) int64 {
	sessions := max(1, h.MaxConnections/workloadProfiles[h.Workload].sessionDivisor)
	share := int64(sessions) * 3 * int64(1+maxParallelWorkersPerGather(h))
	return clamp((ramMB(h)-sharedBuffersMB(h))/share, 4, mbPerGB)
}

// maintenanceWorkMemMB is RAM/16, 64 MB (PostgreSQL's default) to 2 GB;
// autovacuum workers use it too (autovacuum_work_mem = -1).
func maintenanceWorkMemMB(h Hardware) int64 { return clamp(ramMB(h)/16, 64, 2*mbPerGB) }

// walBuffersMB is what wal_buffers = -1 would choose, in whole MB.
func walBuffersMB(h Hardware) int64 { return clamp(sharedBuffersMB(h)/32, 1, 16) }

// maxWALSizeMB is 5% of the disk, 1 GB to 64 GB, but never above 10% of it.
func maxWALSizeMB(h Hardware) int64 {
	d := diskMB(h)
	return wholeGB(min(clamp(d*5/100, mbPerGB, 64*mbPerGB), d*10/100))
}

// minWALSizeMB is a quarter of max_wal_size, at least PostgreSQL's default
// 80 MB, never above max_wal_size.
func minWALSizeMB(h Hardware) int64 {
	m := maxWALSizeMB(h)
	return wholeGB(min(max(m/4, 80), m))
}

// maxSlotWALKeepSizeMB is 10% of the disk, 1 GB to 256 GB, but never above
// 15% of it, so that max_wal_size + max_slot_wal_keep_size <= 25% of the disk.
func maxSlotWALKeepSizeMB(h Hardware) int64 {
	d := diskMB(h)
	return wholeGB(min(clamp(d*10/100, mbPerGB, 256*mbPerGB), d*15/100))
}

func maxWorkerProcesses(h Hardware) int { return max(8, h.VCPUs+4) }

func maxParallelWorkers(h Hardware) int { return h.VCPUs }

func maxParallelWorkersPerGather(h Hardware) int {
	p := workloadProfiles[h.Workload]
	return min(p.perGatherCap, h.VCPUs/p.perGatherDivisor)
}

func maxParallelMaintenanceWorkers(h Hardware) int { return min(4, h.VCPUs/2) }

func autovacuumMaxWorkers(h Hardware) int {
	if !storageProfiles[h.Storage].scaleAutovacuum {
		return 3
	}
	return clamp(h.VCPUs/4, 3, 8)
}

func autovacuumVacuumCostLimit(h Hardware) int {
	return min(10000, storageProfiles[h.Storage].vacuumCostPerWorker*autovacuumMaxWorkers(h))
}

func ioWorkers(h Hardware) int { return clamp(h.VCPUs/2, 3, 32) }

// memory formats whole MB as PostgreSQL reads them: "16GB" when a whole
// number of GB, else "54MB".
func memory(mb int64) string {
	if mb >= mbPerGB && mb%mbPerGB == 0 {
		return strconv.FormatInt(mb/mbPerGB, 10) + "GB"
	}
	return strconv.FormatInt(mb, 10) + "MB"
}

// wholeGB rounds sizes of 1 GB and more down to whole GB.
func wholeGB(mb int64) int64 {
	if mb >= mbPerGB {
		return mb - mb%mbPerGB
	}
	return mb
}

func clamp[T int | int64](v, lo, hi T) T { return min(max(v, lo), hi) }

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
