// Command bench measures pgnvme against its baselines in one run and prints ratios side by side. It writes
// JSON under -out (git-ignored) and a short table to stdout, and a progress line to stderr before every step.
// These machines are noisy (2 shared CPUs): every figure is the median of -runs repetitions (the figures that
// decide something, the paired ratios under limits, tuned against defaults and pgnvme_pgbench against the
// pgbench CLI, of -decide-runs longer runs),
// printed with its spread (min-max), and comparisons are paired within the same run.
//
// Every section that runs PostgreSQL runs it on -postgres-major (default capacity.DefaultPostgresMajor):
// the clusters' postgres_major, pgnvme_tuning's and the peer's major, the binaries of what the bench runs by
// hand, the EC2 section's nodes; each records the server_version its servers reported. -postgres-majors
// 18,15 runs each such section once per major, one after the other, and prints their headline figures side
// by side.
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
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() (err error) {
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
	postgresMajor := flag.Int("postgres-major", capacity.DefaultPostgresMajor, "the PostgreSQL major every section runs: the clusters' postgres_major, pgnvme_tuning's and the peer's major, the binaries the bench runs by hand (/usr/lib/postgresql/<major>/bin), the EC2 section's nodes")
	postgresMajors := flag.String("postgres-majors", "", "comma-separated PostgreSQL majors, e.g. 18,15, instead of -postgres-major: each section that runs PostgreSQL runs once per major, one after the other, and the summary prints their headline figures side by side")
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
	majors := []int{*postgresMajor}
	if *postgresMajors != "" {
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "postgres-major" {
				err = fmt.Errorf("-postgres-major and -postgres-majors: give one of them")
			}
		})
		if err != nil {
			return err
		}
		if majors, err = parseMajors(*postgresMajors); err != nil {
			return err
		}
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
		Started:        time.Now().UTC().Format(time.RFC3339),
		GoVersion:      runtime.Version(),
		CPUs:           runtime.NumCPU(),
		Runs:           *runs,
		DecideRuns:     *decideRuns,
		DecideSeconds:  *seconds,
		PostgresMajors: majors,
	}
	// The sections that run PostgreSQL, each once per major (the same section's runs on each major one after
	// the other, so that they are close in time).
	type section struct {
		name, title string
		run         func(env *terraformEnv, pg postgresBin, m *MajorReport) error
	}
	sections := []section{
		{"pgbench", "pgbench", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.Pgbench, err = benchPgbench(env, pg, *runs, *decideRuns, *seconds)
			return err
		}},
		{"cluster", "cluster", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.Cluster, err = benchCluster(env, pg, root, *runs, *decideRuns, *seconds)
			return err
		}},
		{"storage", "storage under limits", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.Storage, err = benchStorage(env, pg, *decideRuns, *seconds, splitList(*storageWithout), splitList(*storageWith), *storageDisk)
			return err
		}},
		{"restore", "restore drill", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.Restore, err = benchRestore(env, pg, *runs)
			return err
		}},
		{"ec2", "EC2 platform", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.EC2, err = benchEC2(env, pg, *ec2Runs)
			return err
		}},
		{"ablation", "ablation", func(env *terraformEnv, pg postgresBin, m *MajorReport) (err error) {
			m.Ablation, err = benchAblation(env.ctx, pg, *ablationPairs, *ablationSeconds, *ablationParams)
			return err
		}},
	}
	// Every major's programs are found before anything runs.
	var pgs []postgresBin
	for _, major := range majors {
		if !slices.ContainsFunc(sections, func(s section) bool { return want(s.name) }) {
			break
		}
		pg, err := findPostgres(ctx, major)
		if err != nil {
			return fmt.Errorf("the bench's PostgreSQL %d: %w", major, err)
		}
		pgs = append(pgs, pg)
		report.Majors = append(report.Majors, &MajorReport{PostgresMajor: major, BinDir: pg.BinDir})
	}
	progress("bench: %d runs per figure, %d paired runs of %d s where a figure decides something; PostgreSQL %s",
		*runs, *decideRuns, *seconds, strings.Trim(strings.ReplaceAll(fmt.Sprint(majors), " ", ", "), "[]"))
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
	for _, s := range sections {
		if !want(s.name) {
			continue
		}
		for i, pg := range pgs {
			if len(pgs) > 1 {
				progress("%s: on PostgreSQL %d (%d of %d majors)", s.title, pg.Major, i+1, len(pgs))
			}
			if err := s.run(env.under(fmt.Sprintf("pg%d", pg.Major)), pg, report.Majors[i]); err != nil {
				return fmt.Errorf("%s, PostgreSQL %d: %w", s.title, pg.Major, err)
			}
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
	Started       string `json:"started"`
	GoVersion     string `json:"go_version"`
	CPUs          int    `json:"cpus"`
	Runs          int    `json:"runs"`
	DecideRuns    int    `json:"decide_runs"`
	DecideSeconds int    `json:"decide_seconds"`
	// PostgresMajors are the majors the sections that run PostgreSQL ran on, in order.
	PostgresMajors []int         `json:"postgres_majors"`
	Plan           *PlanBench    `json:"plan,omitempty"`
	Catalog        *CatalogBench `json:"catalog,omitempty"`
	// Majors are those sections' figures, one entry per major of PostgresMajors (none when no such section ran).
	Majors []*MajorReport `json:"majors,omitempty"`
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
	for _, m := range r.Majors {
		m.print(w, r.CPUs, line)
	}
	if len(r.Majors) > 1 {
		printBeside(w, r.Majors)
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
