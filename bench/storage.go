package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// StorageBench is the talk's experiment under local.limits: two single-node clusters with the same
// PostgreSQL, tuning and data and the same memory limit (the dataset 8x memory), one on an unthrottled
// disk ("NVMe-like") and one throttled to gp3's baseline ("gp3-like"), the talk's random UPDATE on each,
// paired; then, under the same limits, pgnvme_tuning's parameters for the limited memory against
// PostgreSQL's defaults on the NVMe-like node, paired.
type StorageBench struct {
	MemoryMiB  int     `json:"memory_mib"`
	Scale      int     `json:"scale"`
	DatasetGiB float64 `json:"dataset_gib"`
	Clients    int     `json:"clients"`
	Seconds    int     `json:"seconds"`

	NVMe RunStats `json:"nvme"`
	GP3  RunStats `json:"gp3"`
	// TPSRatio is NVMe-like TPS over gp3-like TPS per pair; the latency ratios gp3-like over NVMe-like.
	TPSRatio Stat `json:"tps_ratio_nvme_over_gp3"`
	P50Ratio Stat `json:"p50_ratio_gp3_over_nvme"`
	P95Ratio Stat `json:"p95_ratio_gp3_over_nvme"`
	P99Ratio Stat `json:"p99_ratio_gp3_over_nvme"`

	Tuned            RunStats `json:"tuned"`
	Defaults         RunStats `json:"defaults"`
	TunedOverDefault Stat     `json:"tuned_over_default_ratio"`
	TunedWins        int      `json:"tuned_wins"`
	TunedParameters  string   `json:"tuned_parameters"`
	Note             string   `json:"note"`
}

// RunStats are one side of a paired comparison.
type RunStats struct {
	TPS Stat `json:"tps"`
	P50 Stat `json:"p50_ms"`
	P95 Stat `json:"p95_ms"`
	P99 Stat `json:"p99_ms"`
	// DataFileRead and WALWrite are the shares (0-1) of sampled backends in IO:DataFileRead and
	// LWLock:WALWrite.
	DataFileRead Stat `json:"io_datafileread_share"`
	WALWrite     Stat `json:"lwlock_walwrite_share"`
}

// runResult is one pgnvme_pgbench run.
type runResult struct {
	TPS  float64            `json:"tps"`
	P50  float64            `json:"p50"`
	P95  float64            `json:"p95"`
	P99  float64            `json:"p99"`
	Wait map[string]float64 `json:"wait"`
}

// samples collects runResults for RunStats.
type samples struct{ tps, p50, p95, p99, dfr, wal []float64 }

func (s *samples) add(r runResult) {
	s.tps, s.p50, s.p95, s.p99 = append(s.tps, r.TPS), append(s.p50, r.P50), append(s.p95, r.P95), append(s.p99, r.P99)
	s.dfr, s.wal = append(s.dfr, r.Wait["IO:DataFileRead"]), append(s.wal, r.Wait["LWLock:WALWrite"])
}

func (s *samples) stats() RunStats {
	return RunStats{TPS: newStat(s.tps), P50: newStat(s.p50), P95: newStat(s.p95), P99: newStat(s.p99), DataFileRead: newStat(s.dfr), WALWrite: newStat(s.wal)}
}

const (
	storageMemoryMiB = 512 // pgnvme_tuning's smallest machine
	storageRatio     = 8   // dataset / memory
	storageClients   = 8
	storageDiskGiB   = 16
)

func storageClustersTF(dir string, base int, nvmeTuned bool) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
data "pgnvme_tuning" "lim" {
  vcpus          = 2
  memory_gib     = %g
  disk_gib       = %d
  storage        = "nvme"
  postgres_major = 15
}
resource "pgnvme_cluster" "nvme" {
  name       = "bench-nvme"
  node_count = 1
  parameters = %t ? data.pgnvme_tuning.lim.postgres_parameters : null
  local {
    data_dir  = "%s/nvme"
    port_base = %d
    limits {
      memory_mib = %d
      disk_gib   = %d
    }
  }
}
resource "pgnvme_cluster" "gp3" {
  name       = "bench-gp3"
  node_count = 1
  parameters = data.pgnvme_tuning.lim.postgres_parameters
  local {
    data_dir  = "%s/gp3"
    port_base = %d
    limits {
      memory_mib           = %d
      disk_gib             = %d
      read_iops            = 3000
      write_iops           = 3000
      read_mib_per_second  = 125
      write_mib_per_second = 125
    }
  }
}
output "tuned" { value = jsonencode(data.pgnvme_tuning.lim.postgres_parameters) }
`, float64(storageMemoryMiB)/1024, storageDiskGiB, nvmeTuned, dir, base, storageMemoryMiB, storageDiskGiB, dir, base+1, storageMemoryMiB, storageDiskGiB)
}

func storageRunTF(scale, seconds int) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
variable "port" { type = number }
data "pgnvme_pgbench" "talk" {
  server           = { host = "127.0.0.1", port = var.port }
  script           = %q
  scale            = %d
  clients          = %d
  threads          = 2
  protocol         = "prepared"
  duration_seconds = %d
}
output "r" {
  value = {
    tps  = data.pgnvme_pgbench.talk.tps
    p50  = data.pgnvme_pgbench.talk.latency_p50_ms
    p95  = data.pgnvme_pgbench.talk.latency_p95_ms
    p99  = data.pgnvme_pgbench.talk.latency_p99_ms
    wait = data.pgnvme_pgbench.talk.wait_events
  }
}
`, pgbench.TalkScript, scale, storageClients, seconds)
}

func benchStorage(env *terraformEnv, pairs, seconds int) (*StorageBench, error) {
	ctx := context.Background()
	scale := pgbench.ScaleForGiB(float64(storageMemoryMiB) / 1024 * storageRatio)
	b := &StorageBench{MemoryMiB: storageMemoryMiB, Scale: scale, DatasetGiB: pgbench.SizeGiB(scale), Clients: storageClients, Seconds: seconds}
	scratch, err := os.MkdirTemp("", "pgnvme-bench-lim-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(scratch, 0o755); err != nil {
		return nil, err
	}
	base, err := acctest.FindFreePortBase(2)
	if err != nil {
		return nil, err
	}
	cws, err := env.workspace("storage-clusters", map[string]string{"main.tf": storageClustersTF(scratch, base, true)})
	if err != nil {
		return nil, err
	}
	setTuned := func(tuned bool) error {
		if err := os.WriteFile(filepath.Join(cws, "main.tf"), []byte(storageClustersTF(scratch, base, tuned)), 0o644); err != nil {
			return err
		}
		return env.run(cws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	}
	defer func() {
		progress("storage under limits: destroying both clusters")
		if err := env.run(cws, "destroy", "-auto-approve", "-input=false", "-no-color", "-lock=false"); err != nil {
			progress("storage under limits: DESTROY FAILED, remove what is left under %s by hand: %v", scratch, err)
			return
		}
		_ = os.RemoveAll(scratch)
	}()
	progress("storage under limits: creating an NVMe-like and a gp3-like node (%d MiB memory each, %d GiB disks)", storageMemoryMiB, storageDiskGiB)
	if err := setTuned(true); err != nil {
		return nil, err
	}
	if tuned, err := env.output(cws, "tuned"); err == nil {
		b.TunedParameters = tuned
	}
	for i, name := range []string{"NVMe-like", "gp3-like"} {
		progress("storage under limits: pgbench -i -s %d on the %s node (%.1f GiB, %.0fx memory)", scale, name, b.DatasetGiB, b.DatasetGiB*1024/storageMemoryMiB)
		if err := pgbenchInit(ctx, base+i, scale); err != nil {
			return nil, fmt.Errorf("pgbench -i on the %s node: %w", name, err)
		}
	}
	rws, err := env.workspace("storage-run", map[string]string{"main.tf": storageRunTF(scale, seconds)})
	if err != nil {
		return nil, err
	}
	run := func(port int) (runResult, error) {
		var r runResult
		if err := env.run(rws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false", fmt.Sprintf("-var=port=%d", port)); err != nil {
			return r, err
		}
		err := env.outputJSON(rws, "r", &r)
		return r, err
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

	// 2. Tuned for the limited memory against PostgreSQL's defaults, on the NVMe-like node, paired.
	var tuned, defaults samples
	var ratio []float64
	for i := 0; i < pairs; i++ {
		progress("storage under limits: tuned vs defaults on the NVMe-like node, pair %d/%d (%d s each)", i+1, pairs, seconds)
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		got := map[bool]runResult{}
		for _, t := range order {
			if err := setTuned(t); err != nil {
				return nil, err
			}
			r, err := run(base)
			if err != nil {
				return nil, err
			}
			got[t] = r
		}
		tuned.add(got[true])
		defaults.add(got[false])
		ratio = append(ratio, got[true].TPS/got[false].TPS)
		if ratio[len(ratio)-1] > 1 {
			b.TunedWins++
		}
		progress("storage under limits: pair %d/%d: tuned %.0f tps, defaults %.0f tps", i+1, pairs, got[true].TPS, got[false].TPS)
	}
	b.Tuned, b.Defaults, b.TunedOverDefault = tuned.stats(), defaults.stats(), newStat(ratio)
	b.Note = fmt.Sprintf("1 node each, %d MiB memory limit (page cache included), pgbench scale %d (%.1f GiB, %.0fx memory), %d clients, %d s runs; "+
		"NVMe-like = a loop device on this machine's disk, unthrottled; gp3-like = the same, throttled to 3,000 IOPS and 125 MiB/s (cgroup v1 throttles "+
		"reads and the servers' own writes, not the kernel's flusher)", storageMemoryMiB, scale, b.DatasetGiB, b.DatasetGiB*1024/storageMemoryMiB, storageClients, seconds)
	return b, nil
}

// outputJSON decodes one output value into v.
func (e *terraformEnv) outputJSON(dir, name string, v any) error {
	cmd := exec.Command("terraform", "output", "-json", name)
	cmd.Dir = dir
	cmd.Env = e.baseEnv
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("terraform output %s: %w", name, err)
	}
	return json.Unmarshal(out, v)
}

func (b *StorageBench) print(w *os.File, line func(string, Stat, string, string)) {
	fmt.Fprintf(w, "\nthe talk's experiment under local.limits (%s)\n", b.Note)
	side := func(name string, r RunStats) {
		line(name+" TPS", r.TPS, "tps", "")
		line(name+" p50 / p95 / p99", r.P50, "ms", "   p95 "+r.P95.Format("ms")+"   p99 "+r.P99.Format("ms"))
		line(name+" IO:DataFileRead share", r.DataFileRead, "", "   LWLock:WALWrite "+r.WALWrite.Format(""))
	}
	side("NVMe-like", b.NVMe)
	side("gp3-like", b.GP3)
	line("TPS NVMe-like / gp3-like, paired", b.TPSRatio, "x", fmt.Sprintf("   talk: %.1fx (16,030 / 1,734 TPS)", 16030.0/1734))
	line("p50 gp3-like / NVMe-like, paired", b.P50Ratio, "x", fmt.Sprintf("   talk: %.1fx (36.9 / 4.0 ms)", 36.9/4.0))
	line("p95 gp3-like / NVMe-like, paired", b.P95Ratio, "x", "")
	line("p99 gp3-like / NVMe-like, paired", b.P99Ratio, "x", "")
	fmt.Fprintf(w, "  tuned for %d MiB (pgnvme_tuning, nvme) vs PostgreSQL defaults on the NVMe-like node\n", b.MemoryMiB)
	side("defaults", b.Defaults)
	side("tuned", b.Tuned)
	line("tuned / defaults TPS, paired", b.TunedOverDefault, "x", fmt.Sprintf("   tuned won %d of %d pairs", b.TunedWins, len(b.TunedOverDefault.Samples)))
}
