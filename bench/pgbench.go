package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// PgbenchBench compares pgnvme_pgbench with the pgbench CLI run by hand with the same arguments, the wait
// event sampler on against off, and measures how long internal/localnode takes to get a primary and two
// standbys streaming. The TPS figures come from rounds of three runs of DurationSeconds each (the bench's
// -decide-runs and -decide-seconds): by hand, pgnvme_pgbench with the sampler on, pgnvme_pgbench with it
// off. ProviderTPS and SamplerOnTPS are the same runs. Other work on the machine can move TPS more than the
// differences measured here, so the load average before each run is kept beside them.
type PgbenchBench struct {
	Server
	ClusterReadySeconds Stat   `json:"cluster_ready_seconds"`
	HandTPS             Stat   `json:"hand_tps"`
	ProviderTPS         Stat   `json:"provider_tps"`
	ProviderOverHand    Stat   `json:"provider_over_hand_ratio"` // per round
	SamplerOnTPS        Stat   `json:"sampler_on_tps"`
	SamplerOffTPS       Stat   `json:"sampler_off_tps"`
	SamplerOnOverOff    Stat   `json:"sampler_on_over_off_ratio"` // per round
	LoadAverage         Stat   `json:"load_average"`              // 1-minute load average before each run
	Rounds              int    `json:"rounds"`
	Scale               int    `json:"scale"`
	Clients             int    `json:"clients"`
	DurationSeconds     int    `json:"duration_seconds"`
	Synchronous         string `json:"synchronous_standby_names"`
	Note                string `json:"note"`
}

const (
	benchScale   = 10
	benchClients = 4
)

// localCluster builds a primary and two streaming standbys under dir and returns them.
func localCluster(ctx context.Context, e *localnode.Engine, dir string) (localnode.Node, []localnode.Node, error) {
	port := acctest.FreePort
	p, err := port()
	if err != nil {
		return localnode.Node{}, nil, err
	}
	primary := localnode.Node{Name: "primary", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: p, DataDir: filepath.Join(dir, "primary")}
	if err := e.InitPrimary(ctx, primary, nil); err != nil {
		return primary, nil, err
	}
	if err := e.Start(ctx, primary); err != nil {
		return primary, nil, err
	}
	var standbys []localnode.Node
	for _, name := range []string{"s1", "s2"} {
		sp, err := port()
		if err != nil {
			return primary, standbys, err
		}
		s := localnode.Node{Name: name, Role: localnode.RoleStandby, Host: "127.0.0.1", Port: sp, DataDir: filepath.Join(dir, name)}
		if err := e.CreateStandby(ctx, primary, s); err != nil {
			return primary, standbys, err
		}
		if err := e.Start(ctx, s); err != nil {
			return primary, standbys, err
		}
		standbys = append(standbys, s)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := e.Psql(ctx, primary, "postgres", "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
		if err == nil && out == "2" {
			return primary, standbys, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return primary, standbys, fmt.Errorf("standbys not streaming after 60 s: %w", err)
			}
			return primary, standbys, fmt.Errorf("standbys not streaming after 60 s: %s of 2 streaming", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func destroyCluster(ctx context.Context, e *localnode.Engine, nodes ...localnode.Node) {
	for _, n := range nodes {
		_ = e.Destroy(ctx, n)
	}
}

// benchPgbench times runs cluster starts on pg, then compares the TPS of pgbench by hand and of
// pgnvme_pgbench (sampler on and off), both running pg's pgbench, over rounds rounds of runs of seconds each.
func benchPgbench(env *terraformEnv, pg postgresBin, runs, rounds, seconds int) (*PgbenchBench, error) {
	ctx := env.ctx
	e, err := pg.engine()
	if err != nil {
		return nil, err
	}
	b := &PgbenchBench{Rounds: rounds, Scale: benchScale, Clients: benchClients, DurationSeconds: seconds, Synchronous: "ANY 1 (s1, s2)"}

	// Ready time: nothing to a primary and two streaming standbys, five times.
	var ready []float64
	for i := 0; i < runs; i++ {
		progress("local nodes: primary + 2 standbys, run %d/%d", i+1, runs)
		dir, err := os.MkdirTemp("", "pgnvme-bench-c-")
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		start := time.Now()
		p, s, err := localCluster(ctx, e, dir)
		took := time.Since(start).Seconds()
		destroyCluster(ctx, e, append(s, p)...)
		os.RemoveAll(dir)
		if err != nil {
			return nil, err
		}
		ready = append(ready, took)
	}
	b.ClusterReadySeconds = newStat(ready)

	dir, err := os.MkdirTemp("", "pgnvme-bench-c-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	primary, standbys, err := localCluster(ctx, e, dir)
	defer destroyCluster(ctx, e, append(standbys, primary)...)
	if err != nil {
		return nil, err
	}
	if b.Server, err = readServer(ctx, primary.Port, pg.Major); err != nil {
		return nil, err
	}
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'", "SELECT pg_reload_conf()"} {
		if _, err := e.Psql(ctx, primary, "postgres", sql); err != nil {
			return nil, err
		}
	}
	bin := pg.pgbench()
	work, err := os.MkdirTemp("", "pgnvme-bench-pgbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	script := filepath.Join(work, "talk.pgbench")
	if err := os.WriteFile(script, []byte(pgbench.TalkScript), 0o644); err != nil {
		return nil, err
	}
	// The arguments the data source passes (progress reports, per-transaction log), built by the same code.
	opts := pgbench.Options{
		Host: primary.Host, Port: primary.Port, User: "postgres", Database: "postgres",
		ScriptPath: script, Scale: benchScale, Clients: benchClients, Threads: min(benchClients, 2),
		DurationSeconds: seconds, Protocol: pgbench.ProtocolSimple, ProgressSeconds: 5,
	}
	if _, _, err := localnode.RunPgbench(ctx, bin, pgbench.InitArgs(opts), nil, nil); err != nil {
		return nil, fmt.Errorf("pgbench -i: %w", err)
	}
	hand := func() (float64, error) {
		logDir, err := os.MkdirTemp(work, "log-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(logDir)
		o := opts
		o.LogPrefix = filepath.Join(logDir, "txlog")
		out, _, err := localnode.RunPgbench(ctx, bin, pgbench.RunArgs(o), nil, nil)
		if err != nil {
			return 0, err
		}
		sum, err := pgbench.ParseSummary(out)
		return sum.TPS, err
	}
	tfDir := func(name string, sample bool) (string, error) {
		return env.workspace(name, map[string]string{"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
data "pgnvme_pgbench" "talk" {
  server {
    host = %q
    port = %d
  }
  script             = %q
  scale              = %d
  clients            = %d
  threads            = %d
  duration_seconds   = %d
  sample_wait_events = %t
  pgbench_path       = %q
}
output "tps" { value = data.pgnvme_pgbench.talk.tps }
`, primary.Host, primary.Port, pgbench.TalkScript, benchScale, benchClients, opts.Threads, seconds, sample, bin)})
	}
	on, err := tfDir("pgbench-on", true)
	if err != nil {
		return nil, err
	}
	off, err := tfDir("pgbench-off", false)
	if err != nil {
		return nil, err
	}
	provider := func(dir string) (float64, error) {
		if err := env.run(dir, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false"); err != nil {
			return 0, err
		}
		out, err := env.output(dir, "tps")
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(out, 64)
	}

	// Each round runs the data source with the sampler on in the middle, next to both runs it is compared
	// with, and alternates which of those goes first (by hand, on, off; then off, on, by hand), so drift on
	// the machine during a round hits both sides of each ratio alike.
	var handTPS, onTPS, offTPS, ratio, samplerRatio, load []float64
	for i := 0; i < rounds; i++ {
		var h, a, z float64
		steps := []struct {
			name string
			run  func() (float64, error)
			dst  *float64
		}{
			{"by hand", hand, &h},
			{"pgnvme_pgbench", func() (float64, error) { return provider(on) }, &a},
			{"pgnvme_pgbench, sampler off", func() (float64, error) { return provider(off) }, &z},
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, st := range steps {
			l, err := loadAverage()
			if err != nil {
				return nil, err
			}
			load = append(load, l)
			progress("pgbench round %d/%d: %s (%d s, load average %.1f)", i+1, rounds, st.name, seconds, l)
			if *st.dst, err = st.run(); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", i+1, st.name, err)
			}
		}
		handTPS, onTPS, offTPS = append(handTPS, h), append(onTPS, a), append(offTPS, z)
		ratio, samplerRatio = append(ratio, a/h), append(samplerRatio, a/z)
	}
	b.HandTPS, b.ProviderTPS, b.ProviderOverHand = newStat(handTPS), newStat(onTPS), newStat(ratio)
	b.SamplerOnTPS, b.SamplerOffTPS, b.SamplerOnOverOff = newStat(onTPS), newStat(offTPS), newStat(samplerRatio)
	b.LoadAverage = newStat(load)
	b.Note = fmt.Sprintf("PostgreSQL %s, talk's random UPDATE, %d clients, ANY 1 (s1, s2) on three local nodes sharing this machine's "+
		"%d CPUs and disk, fsync on; %d rounds of 3 runs of %d s", b.ServerVersion, benchClients, runtime.NumCPU(), rounds, seconds)
	return b, nil
}

// loadAverage is the first field of /proc/loadavg: runnable and uninterruptible tasks, averaged over a minute.
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	f, _, _ := strings.Cut(string(b), " ")
	return strconv.ParseFloat(f, 64)
}
