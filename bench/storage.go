package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// StorageBench is the talk's experiment under local.limits: two single-node clusters with the same
// PostgreSQL, tuning and data and the same memory limit (the dataset 8x memory), one on an unthrottled
// disk ("NVMe-like") and one with gp3's baseline caps and per-I/O latency ("gp3-like"), both disks' images in
// memory by default (storage_disk.go), the talk's random UPDATE on each, paired; VACUUM and logical
// decoding on both (maintenance.go); then, under the same limits on twin nodes run at once
// (storage_twins.go), pgnvme_tuning's parameters for the limited machine against PostgreSQL's defaults and
// against a peer's recommendation for the same machine (timescaledb-tune's, see peer.go).
type StorageBench struct {
	Server
	MemoryMiB  int     `json:"memory_mib"`
	Scale      int     `json:"scale"`
	DatasetGiB float64 `json:"dataset_gib"`
	Clients    int     `json:"clients"`
	Seconds    int     `json:"seconds"`
	// Disk is where both nodes' disk images lived (storageDiskMemory or storageDiskMachine); DiskUsedGiB is
	// what the two used together after the maintenance figures (the twins come after, in the same place).
	Disk        string  `json:"disk"`
	DiskUsedGiB float64 `json:"disk_used_gib"`

	NVMe RunStats `json:"nvme"`
	GP3  RunStats `json:"gp3"`
	// TPSRatio is NVMe-like TPS over gp3-like TPS per pair; the latency ratios gp3-like over NVMe-like.
	TPSRatio Stat `json:"tps_ratio_nvme_over_gp3"`
	P50Ratio Stat `json:"p50_ratio_gp3_over_nvme"`
	P95Ratio Stat `json:"p95_ratio_gp3_over_nvme"`
	P99Ratio Stat `json:"p99_ratio_gp3_over_nvme"`

	// TunedParameters is pgnvme_tuning's set for the limited machine (storage = "nvme"), GP3TunedParameters
	// the same machine's with storage = "ebs".
	TunedParameters    string `json:"tuned_parameters"`
	GP3TunedParameters string `json:"gp3_tuned_parameters"`

	// Peer is timescaledb-tune's recommendation for the same machine, what of it ran and why the rest did
	// not; nil, with PeerMissing saying why, when the peer could not be run (then no peer figures either).
	Peer        *PeerTuning `json:"peer,omitempty"`
	PeerMissing string      `json:"peer_missing,omitempty"`
	// Twins are the tuned set against the defaults, the peer and the variants on NVMe-like twins, and the
	// tuned set for storage = "ebs" against the defaults on gp3-like twins (storage_twins.go).
	Twins []TwinBench `json:"tuning"`
	Note  string      `json:"note"`
	// Maintenance is VACUUM of a measured bloat and draining a logical-decoding backlog on both nodes.
	Maintenance *MaintenanceBench `json:"maintenance,omitempty"`
}

const (
	storageMemoryMiB = 512 // pgnvme_tuning's smallest machine
	storageRatio     = 8   // dataset / memory
	storageClients   = 8
	storageDiskGiB   = 16
	// The gp3-like node's latency per I/O: gp3 is quoted at "single-digit millisecond" latency, and a small
	// random read or write on an idle gp3 volume takes about 1 ms (it crosses the network to replicated
	// storage, however idle the volume is). EBS has no volatile write cache: a write is acknowledged once
	// stored, so a flush costs next to nothing (no flush_latency_ms) and a WAL fdatasync costs its write. The talk's 19 ms page
	// reads and 11 ms WAL fsyncs are these plus queueing at 64 clients against the 3,000 IOPS cap, which
	// the cap here reproduces; they are not per-I/O figures.
	gp3ReadLatencyMS, gp3WriteLatencyMS = 1.0, 1.0
	// tunedParams is the NVMe-like cluster's parameters in the tuned arm; gp3TunedParams the gp3-like
	// cluster's in its own tuned-vs-defaults rounds (the same machine, storage = "ebs").
	tunedParams    = "data.pgnvme_tuning.lim.postgres_parameters"
	gp3TunedParams = "data.pgnvme_tuning.lim_ebs.postgres_parameters"
)

// storageTuningTF is pgnvme_tuning for the lab's limited machine running PostgreSQL major, with storage =
// "nvme" (lim, the output "tuned", a JSON object) and with storage = "ebs" (lim_ebs, "tuned_ebs"), alone in a
// workspace to read the sets before any cluster exists, and within storageClustersTF.
func storageTuningTF(major int) string {
	tf := `
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
`
	for _, t := range []struct{ name, output, storage string }{{"lim", "tuned", "nvme"}, {"lim_ebs", "tuned_ebs", "ebs"}} {
		tf += fmt.Sprintf(`
data "pgnvme_tuning" %[1]q {
  vcpus          = 2
  memory_gib     = %[4]g
  disk_gib       = %[5]d
  storage        = %[3]q
  postgres_major = %[6]d
}
output %[2]q { value = jsonencode(data.pgnvme_tuning.%[1]s.postgres_parameters) }
`, t.name, t.output, t.storage, float64(storageMemoryMiB)/1024, storageDiskGiB, major)
	}
	return tf
}

// storageClustersTF is both clusters on PostgreSQL major; nvmeParams and gp3Params are their parameters as
// HCL expressions.
func storageClustersTF(dir string, base, major int, nvmeParams, gp3Params string) string {
	return storageTuningTF(major) + storageClusterTF("nvme", "bench-nvme", nvmeParams, dir+"/nvme", base, major, false) +
		storageClusterTF("gp3", "bench-gp3", gp3Params, dir+"/gp3", base+1, major, true)
}

// storageClusterTF is one single-node cluster on PostgreSQL major under the lab's limits, NVMe-like or, with
// gp3, gp3-like: throttled to gp3's baseline and held by the latency layer.
func storageClusterTF(resource, name, params, dataDir string, port, major int, gp3 bool) string {
	extra := ""
	if gp3 {
		extra = fmt.Sprintf(`
      read_iops            = 3000
      write_iops           = 3000
      read_mib_per_second  = 125
      write_mib_per_second = 125
      read_latency_ms      = %g
      write_latency_ms     = %g`, gp3ReadLatencyMS, gp3WriteLatencyMS)
	}
	return fmt.Sprintf(`
resource "pgnvme_cluster" %q {
  name           = %q
  postgres_major = %d
  node_count     = 1
  parameters     = %s
  local {
    data_dir  = %q
    port_base = %d
    limits {
      memory_mib = %d
      disk_gib   = %d%s
    }
  }
}
`, resource, name, major, params, dataDir, port, storageMemoryMiB, storageDiskGiB, extra)
}

// benchStorage runs the section on pg with both nodes' disk images where disk says (storageDiskMemory or
// storageDiskMachine); without names tuned parameters to measure the tuned set without, with
// name=value pairs to measure the tuned set with (an arm each, beside tuned and defaults in every round).
func benchStorage(env *terraformEnv, pg postgresBin, pairs, seconds int, without, with []string, disk string) (*StorageBench, error) {
	ctx := env.ctx
	scale := pgbench.ScaleForGiB(float64(storageMemoryMiB) / 1024 * storageRatio)
	b := &StorageBench{MemoryMiB: storageMemoryMiB, Scale: scale, DatasetGiB: pgbench.SizeGiB(scale), Clients: storageClients, Seconds: seconds}
	// The tuned set first, from the data source alone: the variants are checked against it before any
	// cluster is made.
	tws, err := env.workspace("storage-tuning", map[string]string{"main.tf": storageTuningTF(pg.Major)})
	if err != nil {
		return nil, err
	}
	if err := env.run(tws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false"); err != nil {
		return nil, fmt.Errorf("pgnvme_tuning for the limited machine: %w", err)
	}
	tunedSet := map[string]string{}
	if err := env.outputJSON(tws, "tuned", &b.TunedParameters); err != nil {
		return nil, err
	}
	if err := env.outputJSON(tws, "tuned_ebs", &b.GP3TunedParameters); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(b.TunedParameters), &tunedSet); err != nil {
		return nil, fmt.Errorf("the tuned parameters %q: %w", b.TunedParameters, err)
	}
	variants, err := storageVariants(tunedSet, without, with)
	if err != nil {
		return nil, err
	}
	// The peer is asked about the machine data.pgnvme_tuning.lim describes.
	peer, err := timescaledbTune(ctx, peerMachine{VCPUs: 2, MemoryMiB: storageMemoryMiB, DiskGiB: storageDiskGiB, PostgresMajor: pg.Major})
	if err != nil {
		// Where timescaledb-tune cannot be installed, PGTune's rules for the same machine and workload.
		progress("storage under limits: timescaledb-tune not run (%v); the peer is PGTune", err)
		peer, err = pgtunePeer(pgtuneInput{Major: pg.Major, DBType: "oltp", MemoryMiB: storageMemoryMiB, CPUs: 2, Connections: storagePeerConnections,
			Storage: "nvme", DBSize: "greater_ram"})
	}
	if err != nil {
		b.PeerMissing = err.Error()
		progress("storage under limits: NO PEER, tuned is measured against defaults only: %v", err)
	} else {
		b.Peer = peer
		progress("storage under limits: peer %s %s recommends %d parameters, %d of them dropped", peer.Name, peer.Version, len(peer.Recommended), len(peer.Dropped))
	}
	scratch, removeScratch, err := storageScratch(disk, b.DatasetGiB)
	if err != nil {
		return nil, err
	}
	b.Disk = disk
	base, err := acctest.FindFreePortBase(2)
	if err != nil {
		return nil, err
	}
	cws, err := env.workspace("storage-clusters", map[string]string{"main.tf": storageClustersTF(scratch, base, pg.Major, tunedParams, tunedParams)})
	if err != nil {
		return nil, err
	}
	setBoth := func(nvmeParams, gp3Params string) error {
		if err := os.WriteFile(filepath.Join(cws, "main.tf"), []byte(storageClustersTF(scratch, base, pg.Major, nvmeParams, gp3Params)), 0o644); err != nil {
			return err
		}
		return env.run(cws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	}
	defer func() {
		progress("storage under limits: destroying both clusters")
		if err := env.destroy(cws); err != nil {
			progress("storage under limits: DESTROY FAILED, remove what is left under %s by hand (a tmpfs with -storage-disk memory): %v", scratch, err)
			return
		}
		if err := removeScratch(); err != nil {
			progress("storage under limits: %v", err)
		}
	}()
	progress("storage under limits: creating an NVMe-like and a gp3-like node on PostgreSQL %d (%d MiB memory each, %d GiB disks)", pg.Major, storageMemoryMiB, storageDiskGiB)
	if err := setBoth(tunedParams, tunedParams); err != nil {
		return nil, err
	}
	if b.Server, err = readServer(ctx, base, pg.Major); err != nil {
		return nil, err
	}
	progress("storage under limits: the nodes run PostgreSQL %s", b.ServerVersion)
	if b.Peer != nil {
		if err := dropUnofferedValues(ctx, base, b.Peer); err != nil {
			return nil, err
		}
	}
	for i, name := range []string{"NVMe-like", "gp3-like"} {
		progress("storage under limits: pgbench -i -s %d on the %s node (%.1f GiB, %.0fx memory)", scale, name, b.DatasetGiB, b.DatasetGiB*1024/storageMemoryMiB)
		if err := pgbenchInit(ctx, pg, base+i, scale); err != nil {
			return nil, fmt.Errorf("pgbench -i on the %s node: %w", name, err)
		}
	}
	rws, err := env.workspace("storage-run", map[string]string{"main.tf": storageRunTF(pg.pgbench(), scale, seconds, 1)})
	if err != nil {
		return nil, err
	}
	run := func(port int) (runResult, error) {
		got, err := talkRunsAt(env, rws, port)
		if err != nil {
			return runResult{}, err
		}
		return got[0], nil
	}

	// 1. NVMe-like against gp3-like, paired, the order alternating.
	var nvme, gp3 samples
	var tpsR, p50R, p95R, p99R []float64
	for i := 0; i < pairs; i++ {
		progress("storage under limits: NVMe-like vs gp3-like, pair %d/%d (%d s each)", i+1, pairs, seconds)
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		got := map[int]runResult{}
		for _, k := range order {
			r, err := run(base + k)
			if err != nil {
				return nil, err
			}
			got[k] = r
		}
		n, g := got[0], got[1]
		nvme.add(n)
		gp3.add(g)
		tpsR, p50R, p95R, p99R = append(tpsR, n.TPS/g.TPS), append(p50R, g.P50/n.P50), append(p95R, g.P95/n.P95), append(p99R, g.P99/n.P99)
		progress("storage under limits: pair %d/%d: NVMe-like %.0f tps p50 %.2f ms, gp3-like %.0f tps p50 %.2f ms", i+1, pairs, n.TPS, n.P50, g.TPS, g.P50)
	}
	b.NVMe, b.GP3 = nvme.stats(), gp3.stats()
	b.TPSRatio, b.P50Ratio, b.P95Ratio, b.P99Ratio = newStat(tpsR), newStat(p50R), newStat(p95R), newStat(p99R)

	// 2. The talk's maintenance figures, both nodes tuned and with wal_level = logical (a restart each).
	progress("storage under limits: both nodes tuned with wal_level = logical for VACUUM and decoding")
	if err := setBoth(maintenanceParams(tunedParams), maintenanceParams(tunedParams)); err != nil {
		return nil, fmt.Errorf("wal_level = logical: %w", err)
	}
	if b.Maintenance, err = benchMaintenance(ctx, [2]int{base, base + 1}, pairs); err != nil {
		return nil, err
	}
	if b.DiskUsedGiB, err = usedGiB(scratch); err != nil {
		return nil, err
	}
	progress("storage under limits: destroying both clusters, for the twins")
	if err := env.destroy(cws); err != nil {
		return nil, err
	}

	// 3. The tuned set against the defaults, the peer's set and the variants, on NVMe-like twins; the
	// tuned set with storage = "ebs" against the defaults on gp3-like twins, where the disk is the bottleneck.
	lab := twinLab{env: env, pg: pg, scratch: scratch, scale: scale, seconds: seconds, total: pairs}
	others := []TwinPair{{Other: "defaults", params: "null"}}
	if b.Peer != nil {
		others = append(others, TwinPair{Other: "peer", params: hclMap(b.Peer.Parameters)})
	}
	for i := range variants {
		others = append(others, TwinPair{Other: variants[i].name(), params: variants[i].params(), Variant: &variants[i]})
	}
	for _, t := range []struct {
		gp3           bool
		tuned, params string
		others        []TwinPair
	}{
		{false, tunedParams, b.TunedParameters, others},
		{true, gp3TunedParams, b.GP3TunedParameters, []TwinPair{{Other: "defaults", params: "null"}}},
	} {
		tb, err := lab.twins(t.gp3, t.tuned, t.others)
		if err != nil {
			return nil, err
		}
		tb.TunedParameters = t.params
		b.Twins = append(b.Twins, tb)
	}

	images := "on this machine's disk (-storage-disk machine): the NVMe-like node is as fast as that disk"
	if disk == storageDiskMemory {
		images = "in memory (a tmpfs): the NVMe-like node's I/O costs the loop driver's and XFS's time and no device latency (NVMe's reads take about 0.1 ms), and this machine's disk plays no part"
	}
	b.Note = fmt.Sprintf("PostgreSQL %s, 1 node each, %d MiB memory limit (page cache included), pgbench scale %d (%.1f GiB, %.0fx memory), %d clients, %d s runs; "+
		"both disk images %s (%.1f GiB used after VACUUM and decoding); "+
		"NVMe-like = a loop device, unthrottled; gp3-like = the same, throttled to 3,000 IOPS and 125 MiB/s (cgroup v1 throttles "+
		"reads and the servers' own writes, not the kernel's flusher) over a latency layer that holds each read %g ms, each write %g ms (flushes: none); the tuning: two more such nodes at a time (twins), one set on each, run at once, each run after a %d s warm-up and a CHECKPOINT", b.ServerVersion, storageMemoryMiB, scale, b.DatasetGiB, b.DatasetGiB*1024/storageMemoryMiB, storageClients, seconds,
		images, b.DiskUsedGiB, gp3ReadLatencyMS, gp3WriteLatencyMS, storageSettleSeconds)
	return b, nil
}
