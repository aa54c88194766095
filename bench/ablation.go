package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// AblationBench takes the cluster section's "tuned against defaults" apart: the same case (one node,
// pgbench scale tuningScale, pgnvme_tuning's parameters for tuningMemoryGB GiB, the talk's random UPDATE with
// 8 clients), with "defaults + one tuned parameter" against "defaults" for every parameter of the tuned set,
// and the whole set against defaults, each paired with the order alternating from pair to pair. Every run
// follows the same preparation in both arms: pgnvme.conf rewritten, a restart, VACUUM of pgbench_accounts
// (so no autovacuum of it lands in one run and not the other), CHECKPOINT, sync and a short pause.
type AblationBench struct {
	Server
	Scale    int               `json:"scale"`
	Seconds  int               `json:"seconds"`
	Pairs    int               `json:"pairs"`
	Hardware capacity.Hardware `json:"hardware"`
	Tuned    map[string]string `json:"tuned_parameters"`
	Rows     []AblationRow     `json:"rows"`
	Note     string            `json:"note"`
}

// AblationRow is one parameter (or the whole set, fullSet) against PostgreSQL's defaults.
type AblationRow struct {
	Parameter string `json:"parameter"`
	Value     string `json:"value"`
	// Default is the server's setting with no parameters (current_setting, with its unit).
	Default string `json:"default"`
	// SameAsDefault: the server reads the tuned value as its default setting; such a run would be defaults
	// against defaults, so it is not measured.
	SameAsDefault bool `json:"same_as_default"`
	WithTPS       Stat `json:"with_tps"`
	DefaultTPS    Stat `json:"default_tps"`
	// Ratio is WithTPS / DefaultTPS per pair; Wins counts the pairs above 1.
	Ratio Stat `json:"ratio"`
	Wins  int  `json:"wins"`
	// WAL bytes written per transaction in each arm.
	WithWALPerTx    Stat `json:"with_wal_bytes_per_tx"`
	DefaultWALPerTx Stat `json:"default_wal_bytes_per_tx"`
}

// fullSet names the row of the whole tuned set.
const fullSet = "(full tuned set)"

// ablationSettle is the pause after CHECKPOINT and sync before each run.
const ablationSettle = 2 * time.Second

// ablationHardware is what bench/cluster.go's clusterTF gives pgnvme_tuning for PostgreSQL major (with the
// data source's defaults: oltp, 100 connections).
func ablationHardware(major int) capacity.Hardware {
	return capacity.Hardware{VCPUs: 2, MemoryGiB: tuningMemoryGB, DiskGiB: 20, Storage: capacity.StorageSSD,
		Workload: capacity.WorkloadOLTP, MaxConnections: capacity.DefaultMaxConnections, PostgresMajor: major}
}

// benchAblation measures pairs pairs of seconds-long runs per row on pg; only, when not empty, names the
// parameters to measure (fullSet's row is "full").
func benchAblation(ctx context.Context, pg postgresBin, pairs, seconds int, only string) (*AblationBench, error) {
	h := ablationHardware(pg.Major)
	tuned, err := capacity.Tune(h)
	if err != nil {
		return nil, err
	}
	b := &AblationBench{Scale: tuningScale, Seconds: seconds, Pairs: pairs, Hardware: h, Tuned: tuned}
	e, err := pg.engine()
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "pgnvme-bench-abl-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	if err := os.Chmod(scratch, 0o755); err != nil {
		return nil, err
	}
	port, err := acctest.FreePort()
	if err != nil {
		return nil, err
	}
	n := localnode.Node{Name: "ablation", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: port, DataDir: filepath.Join(scratch, "ablation")}
	progress("ablation: creating 1 node on port %d, pgbench -i -s %d (%.2f GiB)", port, tuningScale, pgbench.SizeGiB(tuningScale))
	defer func() {
		if err := e.Destroy(context.Background(), n); err != nil {
			progress("ablation: DESTROY FAILED, stop the server in %s by hand: %v", n.DataDir, err)
		}
	}()
	if err := e.InitPrimary(ctx, n, nil); err != nil {
		return nil, err
	}
	if err := e.Start(ctx, n); err != nil {
		return nil, err
	}
	if b.Server, err = readServer(ctx, port, pg.Major); err != nil {
		return nil, err
	}
	if err := pgbenchInit(ctx, pg, port, tuningScale); err != nil {
		return nil, err
	}

	// Which tuned values differ from the server's defaults at all: the settings with no parameters against
	// those with the whole set (each parameter is set alone to the same value as in the set).
	names := slices.Sorted(maps.Keys(tuned))
	restart := func(params map[string]string) error {
		if err := e.SetParameters(n, params); err != nil {
			return err
		}
		if err := e.Stop(ctx, n, "fast"); err != nil {
			return err
		}
		return e.Start(ctx, n)
	}
	settings := func() (map[string][2]string, error) {
		quoted := make([]string, len(names))
		for i, k := range names {
			quoted[i] = "'" + k + "'"
		}
		out, err := e.Psql(ctx, n, "postgres", "SELECT name, setting, current_setting(name) FROM pg_settings WHERE name IN ("+strings.Join(quoted, ", ")+")")
		if err != nil {
			return nil, err
		}
		m := map[string][2]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Split(line, "|"); len(f) == 3 {
				m[f[0]] = [2]string{f[1], f[2]}
			}
		}
		return m, nil
	}
	if err := restart(nil); err != nil {
		return nil, err
	}
	def, err := settings()
	if err != nil {
		return nil, err
	}
	if err := restart(tuned); err != nil {
		return nil, err
	}
	withAll, err := settings()
	if err != nil {
		return nil, err
	}

	type arm struct {
		row    AblationRow
		params map[string]string
	}
	var arms []*arm
	wanted := func(name string) bool { return only == "" || strings.Contains(","+only+",", ","+name+",") }
	for _, k := range names {
		if !wanted(k) {
			continue
		}
		r := AblationRow{Parameter: k, Value: tuned[k], Default: def[k][1], SameAsDefault: def[k][0] == withAll[k][0]}
		if r.SameAsDefault {
			b.Rows = append(b.Rows, r)
			continue
		}
		arms = append(arms, &arm{row: r, params: map[string]string{k: tuned[k]}})
	}
	if wanted("full") {
		arms = append(arms, &arm{row: AblationRow{Parameter: fullSet, Value: "all", Default: "none"}, params: tuned})
	}
	if len(arms) == 0 {
		return nil, fmt.Errorf("-ablation-params %q: no parameter of the tuned set differs from its default (names: %s, full)", only, strings.Join(names, ","))
	}

	progress("ablation: %d rows of %d pairs of %d s runs (about %d min; %d tuned values are the defaults)",
		len(arms), pairs, seconds, len(arms)*pairs*2*(seconds+9)/60, len(b.Rows))

	// One run: the same preparation in both arms, then the talk's script; TPS and WAL bytes per transaction.
	runOnce := func(params map[string]string) (tps, walPerTx float64, err error) {
		if err := restart(params); err != nil {
			return 0, 0, err
		}
		for _, sql := range []string{"VACUUM pgbench_accounts", "CHECKPOINT"} {
			if _, err := e.Psql(ctx, n, "postgres", sql); err != nil {
				return 0, 0, err
			}
		}
		syscall.Sync()
		time.Sleep(ablationSettle)
		lsn, err := e.Psql(ctx, n, "postgres", "SELECT pg_current_wal_lsn()")
		if err != nil {
			return 0, 0, err
		}
		s, err := talkRun(ctx, pg, port, tuningScale, seconds)
		if err != nil {
			return 0, 0, err
		}
		wal, err := e.Psql(ctx, n, "postgres", fmt.Sprintf("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '%s')", lsn))
		if err != nil {
			return 0, 0, err
		}
		bytes, err := strconv.ParseFloat(wal, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("WAL written %q: %w", wal, err)
		}
		if s.Transactions == 0 {
			return 0, 0, fmt.Errorf("pgbench ran no transaction (WAL written %q)", wal)
		}
		return s.TPS, bytes / float64(s.Transactions), nil
	}

	type sides struct{ with, def, ratio, withWAL, defWAL []float64 }
	got := make([]sides, len(arms))
	for i := 0; i < pairs; i++ {
		for j, a := range arms {
			// Alternate the order from pair to pair, and from row to row within a round.
			order := []bool{true, false}
			if (i+j)%2 == 1 {
				order = []bool{false, true}
			}
			tps, wal := map[bool]float64{}, map[bool]float64{}
			for _, with := range order {
				params := map[string]string(nil)
				if with {
					params = a.params
				}
				if tps[with], wal[with], err = runOnce(params); err != nil {
					return nil, fmt.Errorf("%s, pair %d: %w", a.row.Parameter, i+1, err)
				}
			}
			g := &got[j]
			g.with, g.def, g.ratio = append(g.with, tps[true]), append(g.def, tps[false]), append(g.ratio, tps[true]/tps[false])
			g.withWAL, g.defWAL = append(g.withWAL, wal[true]), append(g.defWAL, wal[false])
			if tps[true] > tps[false] {
				a.row.Wins++
			}
			progress("ablation: pair %d/%d, %s = %s: %.0f tps, defaults %.0f tps (%.3fx); WAL/tx %.0f vs %.0f B",
				i+1, pairs, a.row.Parameter, a.row.Value, tps[true], tps[false], tps[true]/tps[false], wal[true], wal[false])
		}
	}
	for j, a := range arms {
		g := got[j]
		a.row.WithTPS, a.row.DefaultTPS, a.row.Ratio = newStat(g.with), newStat(g.def), newStat(g.ratio)
		a.row.WithWALPerTx, a.row.DefaultWALPerTx = newStat(g.withWAL), newStat(g.defWAL)
		b.Rows = append(b.Rows, a.row)
	}
	b.Note = fmt.Sprintf("1 node, pgbench scale %d (%.2f GiB), pgnvme_tuning for %d vCPUs, %g GiB, %g GiB %s, PostgreSQL %d (server_version %s); "+
		"talk's random UPDATE, 8 clients, %d pairs of %d s runs; each run after a restart, VACUUM pgbench_accounts, CHECKPOINT, sync",
		tuningScale, pgbench.SizeGiB(tuningScale), h.VCPUs, h.MemoryGiB, h.DiskGiB, h.Storage, h.PostgresMajor, b.ServerVersion, pairs, seconds)
	return b, nil
}

func (b *AblationBench) print(w *os.File) {
	fmt.Fprintf(w, "\ntuned against defaults, one parameter at a time (%s)\n", b.Note)
	fmt.Fprintf(w, "  %-34s %-10s %-10s %-26s %-6s %s\n", "defaults + parameter", "value", "default", "TPS / defaults, paired", "won", "WAL per tx, with / defaults")
	for _, r := range b.Rows {
		if r.SameAsDefault {
			fmt.Fprintf(w, "  %-34s %-10s %-10s %s\n", r.Parameter, r.Value, r.Default, "the default: not measured")
			continue
		}
		fmt.Fprintf(w, "  %-34s %-10s %-10s %-26s %d/%-4d %.0f / %.0f B\n", r.Parameter, r.Value, r.Default, r.Ratio.Format(""),
			r.Wins, len(r.Ratio.Samples), r.WithWALPerTx.Median, r.DefaultWALPerTx.Median)
	}
}
