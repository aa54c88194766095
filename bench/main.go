// Command bench measures pgnvme against its baselines in one run and prints ratios side by side. It writes
// JSON under -out (git-ignored) and a short table to stdout, and a progress line to stderr before every step.
// These machines are noisy (2 shared CPUs): every figure is the median of -runs repetitions (the figures that
// decide something, the paired ratios under limits, tuned against defaults and pgnvme_pgbench against the
// pgbench CLI, of -decide-runs longer runs),
// printed with its spread (min-max), and comparisons are paired within the same run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
	decideRuns := flag.Int("decide-runs", 5, "paired repetitions of the figures that decide something (tuned vs defaults, NVMe-like vs gp3-like, pgnvme_pgbench vs the pgbench CLI); at least 3")
	seconds := flag.Int("decide-seconds", 30, "length of each pgbench run behind those figures")
	only := flag.String("only", "", "comma-separated sections to run (plan,catalog,pgbench,cluster,storage,restore,ec2,ablation); empty runs all but ablation, which runs only when named")
	ec2Runs := flag.Int("ec2-runs", 3, "ec2: runs of the EC2 platform's section (create, failover, replacement, switchover, roll on the node simulator; about 5 minutes each)")
	ablationPairs := flag.Int("ablation-pairs", 3, "ablation: paired runs per parameter; at least 1")
	ablationSeconds := flag.Int("ablation-seconds", 12, "ablation: length of each pgbench run")
	storageWithout := flag.String("storage-without", "", "storage: comma-separated tuned parameters; each adds a pair \"tuned vs the tuned set without it\" to the NVMe-like twins' rounds (about a minute per pair and round)")
	storageWith := flag.String("storage-with", "", "storage: comma-separated name=value pairs; each adds a pair \"tuned vs the tuned set with name = value\" to the NVMe-like twins' rounds")
	storageDisk := flag.String("storage-disk", storageDiskMemory, "storage: where both nodes' disk images live: \"memory\" (a tmpfs the bench mounts, about 19 GiB of available memory needed; the figures then do not depend on this machine's disk) or \"machine\" (this machine's disk, under the temporary directory)")
	ablationParams := flag.String("ablation-params", "", "ablation: comma-separated tuned parameters to measure, \"full\" for the whole set; empty measures each and the whole set")
	flag.Parse()
	if *decideRuns < 3 {
		return fmt.Errorf("-decide-runs %d: medians need at least 3 paired runs", *decideRuns)
	}
	if *ablationPairs < 1 || *ablationSeconds < 1 {
		return fmt.Errorf("-ablation-pairs %d, -ablation-seconds %d: both must be at least 1", *ablationPairs, *ablationSeconds)
	}
	// ablation is long (a pair of runs for every tuned parameter): it runs only when -only names it.
	want := func(section string) bool {
		named := strings.Contains(","+*only+",", ","+section+",")
		return named || (*only == "" && section != "ablation")
	}

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
	// The first SIGINT or SIGTERM ends ctx: the running section stops its commands and removes what it made
	// (its clusters' destroy), then the bench exits with the error. A second signal exits at once.
	ctx, interrupted := context.WithCancel(context.Background())
	defer interrupted()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-signals
		if !ok {
			return
		}
		signal.Stop(signals)
		progress("bench: %s: stopping the running section and removing what it made (a second signal exits at once)", sig)
		interrupted()
	}()
	defer func() { signal.Stop(signals); close(signals) }()
	env, cleanup, err := newTerraformEnv(ctx, bin)
	if err != nil {
		return err
	}
	defer cleanup()

	report := &Report{
		Started:       time.Now().UTC().Format(time.RFC3339),
		GoVersion:     runtime.Version(),
		CPUs:          runtime.NumCPU(),
		Runs:          *runs,
		DecideRuns:    *decideRuns,
		DecideSeconds: *seconds,
	}
	progress("bench: %d runs per figure, %d paired runs of %d s where a figure decides something", *runs, *decideRuns, *seconds)
	if want("plan") {
		if report.Plan, err = benchPlanOverhead(env, root, *runs); err != nil {
			return fmt.Errorf("plan overhead: %w", err)
		}
	}
	if want("catalog") {
		if report.Catalog, err = benchCatalog(env, *runs); err != nil {
			return fmt.Errorf("catalog against moto: %w", err)
		}
	}
	if want("pgbench") {
		if report.Pgbench, err = benchPgbench(env, *runs, *decideRuns, *seconds); err != nil {
			return fmt.Errorf("pgbench: %w", err)
		}
	}
	if want("cluster") {
		if report.Cluster, err = benchCluster(env, root, *runs, *decideRuns, *seconds); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	if want("storage") {
		if report.Storage, err = benchStorage(env, *decideRuns, *seconds, splitList(*storageWithout), splitList(*storageWith), *storageDisk); err != nil {
			return fmt.Errorf("storage under limits: %w", err)
		}
	}
	if want("restore") {
		if report.Restore, err = benchRestore(env, *runs); err != nil {
			return fmt.Errorf("restore drill: %w", err)
		}
	}
	if want("ec2") {
		if report.EC2, err = benchEC2(env, *ec2Runs); err != nil {
			return fmt.Errorf("EC2 platform: %w", err)
		}
	}
	if want("ablation") {
		if report.Ablation, err = benchAblation(env.ctx, *ablationPairs, *ablationSeconds, *ablationParams); err != nil {
			return fmt.Errorf("ablation: %w", err)
		}
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
	Started       string         `json:"started"`
	GoVersion     string         `json:"go_version"`
	CPUs          int            `json:"cpus"`
	Runs          int            `json:"runs"`
	DecideRuns    int            `json:"decide_runs"`
	DecideSeconds int            `json:"decide_seconds"`
	Plan          *PlanBench     `json:"plan,omitempty"`
	Catalog       *CatalogBench  `json:"catalog,omitempty"`
	Pgbench       *PgbenchBench  `json:"pgbench,omitempty"`
	Cluster       *ClusterBench  `json:"cluster,omitempty"`
	Storage       *StorageBench  `json:"storage,omitempty"`
	Ablation      *AblationBench `json:"ablation,omitempty"`
	Restore       *RestoreBench  `json:"restore,omitempty"`
	EC2           *EC2Bench      `json:"ec2,omitempty"`
}

// started is when the command started, for the progress lines.
var started = time.Now()

// progress prints one line to stderr with the time since the start, so a long run shows where it is.
func progress(format string, args ...any) {
	d := time.Since(started).Round(time.Second)
	fmt.Fprintf(os.Stderr, "[%3dm%02ds] %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, args...))
}

func (r *Report) print(w *os.File) {
	fmt.Fprintf(w, "pgnvme bench (%s, %d CPUs): medians of %d runs, [min-max] beside each; paired figures that decide something: %d runs of %d s\n",
		r.GoVersion, r.CPUs, r.Runs, r.DecideRuns, r.DecideSeconds)
	line := func(label string, s Stat, unit string, extra string) {
		fmt.Fprintf(w, "  %-40s %s%s\n", label, s.Format(unit), extra)
	}
	if p := r.Plan; p != nil {
		fmt.Fprintln(w, "\nterraform plan: examples/quickstart vs an empty configuration")
		line("empty plan (no provider)", p.EmptySeconds, "s", "")
		line("quickstart plan (embedded catalog)", p.QuickstartSeconds, "s", "")
		fmt.Fprintf(w, "  %-40s %8.3f s   (ratio %.2fx, of the medians)\n", "provider overhead", p.OverheadSeconds, p.Ratio)
		line("provider peak RSS (VmHWM)", p.ProviderPeakRSSMiB, "MiB", "")
	}
	if c := r.Catalog; c != nil {
		fmt.Fprintln(w, "\npgnvme_instance_types source = \"ec2\" against moto (>= 900 GiB, x86_64, 3 zones of us-east-1)")
		line("plan, embedded source", c.EmbeddedSeconds, "s", "")
		line("plan, ec2 source (1 data source)", c.LiveSeconds, "s", "")
		line("plan, ec2 source (2 identical)", c.LiveTwiceSeconds, "s", "")
		fmt.Fprintf(w, "  %-40s %8d     (floor %d: %s)\n", "API calls, 1 data source", c.CallsOne.Total, c.FloorCalls, c.FloorDescription)
		fmt.Fprintf(w, "  %-40s %8d     (second data source served from cache: %d extra)\n", "API calls, 2 identical data sources", c.CallsTwo.Total, c.CallsTwo.Total-c.CallsOne.Total)
		fmt.Fprintf(w, "  %-40s %s\n", "calls by action (1 data source)", c.CallsOne.String())
	}
	if pb := r.Pgbench; pb != nil {
		fmt.Fprintf(w, "\nlocal nodes and pgbench (%s)\n", pb.Note)
		line("primary + 2 standbys streaming", pb.ClusterReadySeconds, "s", "")
		line("pgbench CLI by hand", pb.HandTPS, "tps", "")
		line("pgnvme_pgbench, same arguments", pb.ProviderTPS, "tps", "   paired ratio over hand "+pb.ProviderOverHand.Format(""))
		line("pgnvme_pgbench, sampler off", pb.SamplerOffTPS, "tps", "   paired ratio on/off "+pb.SamplerOnOverOff.Format(""))
		line("load average before each run", pb.LoadAverage, "", fmt.Sprintf("   (%d CPUs)", r.CPUs))
	}
	if c3 := r.Cluster; c3 != nil {
		fmt.Fprintln(w, "\npgnvme_cluster, local platform (talk's random UPDATE, 8 clients)")
		line("3 nodes by shell script", c3.ScriptCreateSeconds, "s", "")
		line("3 nodes by terraform apply", c3.ProviderCreateSeconds, "s", "   paired ratio "+c3.CreateRatio.Format(""))
		line("asynchronous replication", c3.AsyncTPS, "tps", "")
		line("ANY 1 (node-2, node-3)", c3.QuorumTPS, "tps", "   paired ratio "+c3.QuorumOverAsync.Format(""))
		fmt.Fprintf(w, "  %s\n", c3.TuningNote)
		line("PostgreSQL defaults", c3.DefaultTPS, "tps", "   p95 "+c3.DefaultP95Ms.Format("ms"))
		line("pgnvme_tuning parameters", c3.TunedTPS, "tps", "   p95 "+c3.TunedP95Ms.Format("ms"))
		line("tuned / defaults, paired", c3.TunedOverDefault, "", fmt.Sprintf("   tuned won %d of %d pairs", c3.TunedWins, len(c3.TunedOverDefault.Samples)))
	}
	if st := r.Storage; st != nil {
		st.print(w, line)
	}
	if rb := r.Restore; rb != nil {
		rb.print(w)
	}
	if e := r.EC2; e != nil {
		e.print(w)
	}
	if a := r.Ablation; a != nil {
		a.print(w)
	}
}

// Stat is a set of timings, sizes or ratios with their median and spread.
type Stat struct {
	Samples []float64 `json:"samples"`
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
}

func newStat(samples []float64) Stat {
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	out := Stat{Samples: samples}
	if n := len(s); n > 0 {
		out.Min, out.Max = s[0], s[n-1]
		if n%2 == 1 {
			out.Median = s[n/2]
		} else {
			out.Median = (s[n/2-1] + s[n/2]) / 2
		}
	}
	return out
}

// Format is the median with its unit and the spread beside it: "1734.2 tps [1650.1-1790.3]".
func (s Stat) Format(unit string) string {
	digits := 3
	switch m := math.Abs(s.Median); {
	case m >= 1000:
		digits = 0
	case m >= 100:
		digits = 1
	case m >= 10:
		digits = 2
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
	if unit != "" {
		unit = " " + unit
	}
	return fmt.Sprintf("%8s%-4s [%s-%s]", f(s.Median), unit, f(s.Min), f(s.Max))
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

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
