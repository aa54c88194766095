package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// ClusterBench measures pgnvme_cluster on the local platform: its create time against the same three nodes
// made by a shell script, the cost of ANY 1 quorum commit against asynchronous replication on the same
// nodes, and tuned parameters against PostgreSQL's defaults on the talk's workload.
type ClusterBench struct {
	Server
	ProviderCreateSeconds Stat   `json:"provider_create_seconds"`
	ScriptCreateSeconds   Stat   `json:"script_create_seconds"`
	CreateRatio           Stat   `json:"create_ratio_provider_over_script"`
	QuorumTPS             Stat   `json:"quorum_tps"`
	AsyncTPS              Stat   `json:"async_tps"`
	QuorumOverAsync       Stat   `json:"quorum_over_async_ratio"`
	TunedTPS              Stat   `json:"tuned_tps"`
	DefaultTPS            Stat   `json:"default_tps"`
	TunedOverDefault      Stat   `json:"tuned_over_default_ratio"`
	TunedP95Ms            Stat   `json:"tuned_p95_ms"`
	DefaultP95Ms          Stat   `json:"default_p95_ms"`
	TunedParameters       string `json:"tuned_parameters"`
	TuningNote            string `json:"tuning_note"`
	// TunedWins counts the pairs in which the tuned parameters had the higher TPS.
	TunedWins int `json:"tuned_wins"`
}

const (
	tuningScale    = 100 // 1.46 GiB of tables and indexes: about 3x the tuned shared_buffers, 12x the default
	quorumSeconds  = 5
	tuningMemoryGB = 2
)

// clusterTF is a cluster of nodes nodes on PostgreSQL major, number of them synchronous, with params (an
// HCL argument, empty for none), and pgnvme_tuning for the same major beside it.
func clusterTF(dataDir string, base, major, nodes, number int, params string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
data "pgnvme_tuning" "small" {
  vcpus          = 2
  memory_gib     = %[1]d
  disk_gib       = 20
  storage        = "ssd"
  postgres_major = %[7]d
}
resource "pgnvme_cluster" "b" {
  name           = "bench"
  postgres_major = %[7]d
  node_count     = %[2]d
  synchronous { number = %[3]d }
  %[4]s
  local {
    data_dir  = %[5]q
    port_base = %[6]d
  }
}
output "tuned" { value = jsonencode(data.pgnvme_tuning.small.postgres_parameters) }
`, tuningMemoryGB, nodes, number, params, dataDir, base, major)
}

func benchCluster(env *terraformEnv, pg postgresBin, root string, runs, decideRuns, tuningSeconds int) (*ClusterBench, error) {
	b := &ClusterBench{}
	ctx := env.ctx
	scratch, err := os.MkdirTemp("", "pgnvme-bench-k-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	if err := os.Chmod(scratch, 0o755); err != nil {
		return nil, err
	}

	// 1. Create time, paired: terraform apply of a 3-node pgnvme_cluster against the shell script.
	var prov, script, ratio []float64
	for i := 0; i < runs; i++ {
		progress("cluster create: run %d/%d, terraform apply of 3 nodes, then the shell script", i+1, runs)
		base, err := acctest.FindFreePortBase(3)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(scratch, fmt.Sprintf("p%d", i))
		ws, err := env.workspace(fmt.Sprintf("cluster-create-%d", i), map[string]string{"main.tf": clusterTF(dir, base, pg.Major, 3, 1, "")})
		if err != nil {
			return nil, err
		}
		start := time.Now()
		err = env.run(ws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
		p := time.Since(start).Seconds()
		if err = errors.Join(err, env.destroy(ws)); err != nil {
			return nil, err
		}
		base, err = acctest.FindFreePortBase(3)
		if err != nil {
			return nil, err
		}
		sdir := filepath.Join(scratch, fmt.Sprintf("s%d", i))
		start = time.Now()
		out, err := exec.Command("bash", filepath.Join(root, "bench", "handmade-cluster.sh"), sdir, fmt.Sprint(base), pg.BinDir).CombinedOutput()
		s := time.Since(start).Seconds()
		stopHandmade(ctx, pg, sdir, base)
		if err != nil {
			return nil, fmt.Errorf("handmade cluster: %w\n%s", err, out)
		}
		prov, script, ratio = append(prov, p), append(script, s), append(ratio, p/s)
	}
	b.ProviderCreateSeconds, b.ScriptCreateSeconds, b.CreateRatio = newStat(prov), newStat(script), newStat(ratio)

	// 2. ANY 1 against asynchronous on the same three nodes: the same cluster, the synchronous number
	// switched by apply (no restart), the talk's script by the pgbench CLI.
	base, err := acctest.FindFreePortBase(3)
	if err != nil {
		return nil, err
	}
	qdir := filepath.Join(scratch, "quorum")
	qws, err := env.workspace("cluster-quorum", map[string]string{"main.tf": clusterTF(qdir, base, pg.Major, 3, 1, "")})
	if err != nil {
		return nil, err
	}
	setNumber := func(n int) error {
		if err := os.WriteFile(filepath.Join(qws, "main.tf"), []byte(clusterTF(qdir, base, pg.Major, 3, n, "")), 0o644); err != nil {
			return err
		}
		return env.run(qws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	}
	progress("quorum vs async: creating 3 nodes")
	if err := setNumber(1); err != nil {
		return nil, err
	}
	defer func() { _ = env.destroy(qws) }()
	if b.Server, err = readServer(ctx, base, pg.Major); err != nil {
		return nil, err
	}
	if err := pgbenchInit(ctx, pg, base, 10); err != nil {
		return nil, err
	}
	var q, a, qa []float64
	for i := 0; i < runs; i++ {
		order := []int{1, 0}
		if i%2 == 1 {
			order = []int{0, 1}
		}
		got := map[int]float64{}
		progress("quorum vs async: pair %d/%d (%d s each)", i+1, runs, quorumSeconds)
		for _, n := range order {
			if err := setNumber(n); err != nil {
				return nil, err
			}
			s, err := talkRun(ctx, pg, base, 10, quorumSeconds)
			if err != nil {
				return nil, err
			}
			got[n] = s.TPS
		}
		q, a, qa = append(q, got[1]), append(a, got[0]), append(qa, got[1]/got[0])
	}
	b.QuorumTPS, b.AsyncTPS, b.QuorumOverAsync = newStat(q), newStat(a), newStat(qa)
	if err := env.destroy(qws); err != nil {
		return nil, err
	}

	// 3. Tuned against defaults: one node, the talk's workload at a dataset several times shared_buffers;
	// the parameters switched by apply (a restart: shared_buffers).
	base, err = acctest.FindFreePortBase(1)
	if err != nil {
		return nil, err
	}
	tdir := filepath.Join(scratch, "tuning")
	tws, err := env.workspace("cluster-tuning", map[string]string{"main.tf": clusterTF(tdir, base, pg.Major, 1, 0, "")})
	if err != nil {
		return nil, err
	}
	setTuned := func(tuned bool) error {
		params := ""
		if tuned {
			params = "parameters = data.pgnvme_tuning.small.postgres_parameters"
		}
		if err := os.WriteFile(filepath.Join(tws, "main.tf"), []byte(clusterTF(tdir, base, pg.Major, 1, 0, params)), 0o644); err != nil {
			return err
		}
		return env.run(tws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	}
	progress("tuned vs defaults: creating 1 node, pgbench -i -s %d", tuningScale)
	if err := setTuned(false); err != nil {
		return nil, err
	}
	defer func() { _ = env.destroy(tws) }()
	if tuned, err := env.output(tws, "tuned"); err == nil {
		b.TunedParameters = tuned
	}
	if err := pgbenchInit(ctx, pg, base, tuningScale); err != nil {
		return nil, err
	}
	var tt, dt, tr, tp, dp []float64
	for i := 0; i < decideRuns; i++ {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		progress("tuned vs defaults: pair %d/%d (%d s each)", i+1, decideRuns, tuningSeconds)
		for _, tuned := range order {
			if err := setTuned(tuned); err != nil {
				return nil, err
			}
			s, stats, err := talkRunWithLog(ctx, pg, base, tuningScale, tuningSeconds)
			if err != nil {
				return nil, err
			}
			if tuned {
				tt, tp = append(tt, s.TPS), append(tp, stats.P95)
			} else {
				dt, dp = append(dt, s.TPS), append(dp, stats.P95)
			}
		}
		tr = append(tr, tt[len(tt)-1]/dt[len(dt)-1])
		if tr[len(tr)-1] > 1 {
			b.TunedWins++
		}
		progress("tuned vs defaults: pair %d/%d: tuned %.0f tps, defaults %.0f tps", i+1, decideRuns, tt[len(tt)-1], dt[len(dt)-1])
	}
	b.TunedTPS, b.DefaultTPS, b.TunedOverDefault = newStat(tt), newStat(dt), newStat(tr)
	b.TunedP95Ms, b.DefaultP95Ms = newStat(tp), newStat(dp)
	b.TuningNote = fmt.Sprintf("1 node, pgbench scale %d (%.2f GiB), tuned for %d GiB memory (shared_buffers 512MB) vs PostgreSQL defaults (128MB), %d s runs",
		tuningScale, pgbench.SizeGiB(tuningScale), tuningMemoryGB, tuningSeconds)
	return b, nil
}

func stopHandmade(ctx context.Context, pg postgresBin, dir string, base int) {
	e, err := pg.engine()
	if err != nil {
		return
	}
	for i := 1; i <= 3; i++ {
		_ = e.Destroy(ctx, localnode.Node{Name: fmt.Sprintf("node-%d", i), Role: localnode.RoleStandby, Host: "127.0.0.1", Port: base + i - 1, DataDir: filepath.Join(dir, fmt.Sprintf("node-%d", i))})
	}
	os.RemoveAll(dir)
}

// pgbenchInit loads pgbench's tables at scale into the server at port, with pg's pgbench.
func pgbenchInit(ctx context.Context, pg postgresBin, port, scale int) error {
	o := pgbench.Options{Host: "127.0.0.1", Port: port, User: "postgres", Database: "postgres", Scale: scale}
	_, _, err := localnode.RunPgbench(ctx, pg.pgbench(), pgbench.InitArgs(o), nil, nil)
	return err
}

func talkOptions(dir string, port, scale, seconds int) (pgbench.Options, error) {
	script := filepath.Join(dir, "talk.pgbench")
	if err := os.WriteFile(script, []byte(pgbench.TalkScript), 0o644); err != nil {
		return pgbench.Options{}, err
	}
	return pgbench.Options{
		Host: "127.0.0.1", Port: port, User: "postgres", Database: "postgres", ScriptPath: script, Scale: scale,
		Clients: 8, Threads: 2, DurationSeconds: seconds, Protocol: pgbench.ProtocolPrepared, ProgressSeconds: seconds,
	}, nil
}

// talkRun runs the talk's random UPDATE against the server at port with pg's pgbench.
func talkRun(ctx context.Context, pg postgresBin, port, scale, seconds int) (pgbench.Summary, error) {
	s, _, err := talkRunWithLog(ctx, pg, port, scale, seconds)
	return s, err
}

func talkRunWithLog(ctx context.Context, pg postgresBin, port, scale, seconds int) (pgbench.Summary, pgbench.LogStats, error) {
	dir, err := os.MkdirTemp("", "pgnvme-bench-talk-")
	if err != nil {
		return pgbench.Summary{}, pgbench.LogStats{}, err
	}
	defer os.RemoveAll(dir)
	o, err := talkOptions(dir, port, scale, seconds)
	if err != nil {
		return pgbench.Summary{}, pgbench.LogStats{}, err
	}
	o.LogPrefix = filepath.Join(dir, "txlog")
	out, _, err := localnode.RunPgbench(ctx, pg.pgbench(), pgbench.RunArgs(o), nil, nil)
	if err != nil {
		return pgbench.Summary{}, pgbench.LogStats{}, err
	}
	sum, err := pgbench.ParseSummary(out)
	if err != nil {
		return sum, pgbench.LogStats{}, err
	}
	files, _ := filepath.Glob(o.LogPrefix + ".*")
	var acc pgbench.LogAccumulator
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return sum, pgbench.LogStats{}, err
		}
		err = acc.Add(fh)
		fh.Close()
		if err != nil {
			return sum, pgbench.LogStats{}, err
		}
	}
	stats, err := acc.Stats()
	return sum, stats, err
}
