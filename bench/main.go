// Command bench measures pgnvme against its baselines in one run and prints ratios side by side. It writes
// JSON under -out (git-ignored) and a short table to stdout. These machines are noisy: every figure is the
// median of -runs repetitions, and comparisons are made within the same run.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	providerBin := flag.String("provider", "bin/terraform-provider-pgnvme", "provider binary to measure")
	outDir := flag.String("out", "bench/results", "directory for the JSON results")
	runs := flag.Int("runs", 5, "repetitions per measurement (the median is reported)")
	flag.Parse()

	bin, err := filepath.Abs(*providerBin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("provider binary: %w (run `make build` first)", err)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	env, cleanup, err := newTerraformEnv(bin)
	if err != nil {
		return err
	}
	defer cleanup()

	report := &Report{
		Started:   time.Now().UTC().Format(time.RFC3339),
		GoVersion: runtime.Version(),
		CPUs:      runtime.NumCPU(),
		Runs:      *runs,
	}
	if report.Plan, err = benchPlanOverhead(env, root, *runs); err != nil {
		return fmt.Errorf("plan overhead: %w", err)
	}
	if report.Catalog, err = benchCatalog(env, *runs); err != nil {
		return fmt.Errorf("catalog against moto: %w", err)
	}
	if report.Pgbench, err = benchPgbench(env, *runs); err != nil {
		return fmt.Errorf("pgbench: %w", err)
	}
	if report.Cluster, err = benchCluster(env, root, *runs); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}

	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(*outDir, "bench-"+time.Now().UTC().Format("20060102T150405Z")+".json")
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		return err
	}
	report.print(os.Stdout)
	fmt.Printf("\nresults: %s\n", name)
	return nil
}

// Report is the JSON written for one run of the benchmarks.
type Report struct {
	Started   string        `json:"started"`
	GoVersion string        `json:"go_version"`
	CPUs      int           `json:"cpus"`
	Runs      int           `json:"runs"`
	Plan      *PlanBench    `json:"plan"`
	Catalog   *CatalogBench `json:"catalog"`
	Pgbench   *PgbenchBench `json:"pgbench"`
	Cluster   *ClusterBench `json:"cluster"`
}

func (r *Report) print(w *os.File) {
	fmt.Fprintf(w, "pgnvme bench, %d runs each, medians (%s, %d CPUs)\n\n", r.Runs, r.GoVersion, r.CPUs)
	p := r.Plan
	fmt.Fprintln(w, "terraform plan: examples/quickstart vs an empty configuration")
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "empty plan (no provider)", p.EmptySeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "quickstart plan (embedded catalog)", p.QuickstartSeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.3f s   (ratio %.2fx)\n", "provider overhead", p.OverheadSeconds, p.Ratio)
	fmt.Fprintf(w, "  %-40s %8.1f MiB\n", "provider peak RSS (VmHWM)", p.ProviderPeakRSSMiB.Median)
	c := r.Catalog
	fmt.Fprintln(w, "\npgnvme_instance_types source = \"ec2\" against moto (>= 900 GiB, x86_64, 3 zones of us-east-1)")
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "plan, embedded source", c.EmbeddedSeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "plan, ec2 source (1 data source)", c.LiveSeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "plan, ec2 source (2 identical)", c.LiveTwiceSeconds.Median)
	fmt.Fprintf(w, "  %-40s %8d     (floor %d: %s)\n", "API calls, 1 data source", c.CallsOne.Total, c.FloorCalls, c.FloorDescription)
	fmt.Fprintf(w, "  %-40s %8d     (second data source served from cache: %d extra)\n", "API calls, 2 identical data sources", c.CallsTwo.Total, c.CallsTwo.Total-c.CallsOne.Total)
	fmt.Fprintf(w, "  %-40s %s\n", "calls by action (1 data source)", c.CallsOne.String())
	pb := r.Pgbench
	fmt.Fprintf(w, "\nlocal nodes and pgbench (%s)\n", pb.Note)
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "primary + 2 standbys streaming", pb.ClusterReadySeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps\n", "pgbench CLI by hand", pb.HandTPS.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps   (paired ratio %.3f)\n", "pgnvme_pgbench, same arguments", pb.ProviderTPS.Median, pb.ProviderOverHand.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps\n", "pgnvme_pgbench, sampler off", pb.SamplerOffTPS.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps   (paired ratio %.3f)\n", "pgnvme_pgbench, sampler on", pb.SamplerOnTPS.Median, pb.SamplerOnOverOff.Median)
	c3 := r.Cluster
	fmt.Fprintln(w, "\npgnvme_cluster, local platform (talk's random UPDATE, 8 clients)")
	fmt.Fprintf(w, "  %-40s %8.3f s\n", "3 nodes by shell script", c3.ScriptCreateSeconds.Median)
	fmt.Fprintf(w, "  %-40s %8.3f s   (paired ratio %.2f)\n", "3 nodes by terraform apply", c3.ProviderCreateSeconds.Median, c3.CreateRatio.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps\n", "asynchronous replication", c3.AsyncTPS.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps   (paired ratio %.3f)\n", "ANY 1 (node-2, node-3)", c3.QuorumTPS.Median, c3.QuorumOverAsync.Median)
	fmt.Fprintf(w, "  %s\n", c3.TuningNote)
	fmt.Fprintf(w, "  %-40s %8.1f tps   p95 %.3f ms\n", "PostgreSQL defaults", c3.DefaultTPS.Median, c3.DefaultP95Ms.Median)
	fmt.Fprintf(w, "  %-40s %8.1f tps   p95 %.3f ms   (paired ratio %.3f)\n", "pgnvme_tuning parameters", c3.TunedTPS.Median, c3.TunedP95Ms.Median, c3.TunedOverDefault.Median)
}

// Stat is a set of timings or sizes with their median.
type Stat struct {
	Samples []float64 `json:"samples"`
	Median  float64   `json:"median"`
}

func newStat(samples []float64) Stat {
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	m := 0.0
	if n := len(s); n > 0 {
		if n%2 == 1 {
			m = s[n/2]
		} else {
			m = (s[n/2-1] + s[n/2]) / 2
		}
	}
	return Stat{Samples: samples, Median: m}
}

// CallCount counts AWS API calls by action.
type CallCount struct {
	Total    int            `json:"total"`
	ByAction map[string]int `json:"by_action"`
}

func (c CallCount) String() string {
	keys := make([]string, 0, len(c.ByAction))
	for k := range c.ByAction {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.ByAction[k]))
	}
	return strings.Join(parts, " ")
}
