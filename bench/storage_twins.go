package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// TwinBench is pgnvme_tuning's set for the lab's limited machine against other sets on two identical
// single-node clusters ("twins": the same limits, disk kind and data), the two sets of a pair run at once,
// one on each twin, which twin runs the tuned set alternating from round to round. Both runs share the
// machine's good and bad seconds, so their ratio carries the sets' difference and little of the machine's
// noise; run one after the other, two runs of the same set on this 2-CPU machine differ by up to ±8 %,
// which hides a tuning worth a few per cent. What it measures is each set's throughput while the other runs
// beside it on the same 2 CPUs: a set that needs less CPU per transaction gets more of them done; the
// control pair (the tuned set on both twins) is the method's own spread.
type TwinBench struct {
	// Node is "NVMe-like" or "gp3-like": both twins' kind.
	Node            string `json:"node"`
	TunedParameters string `json:"tuned_parameters"`
	Rounds          int    `json:"rounds"`
	// Control is the tuned set against itself; Pairs the tuned set against the defaults first, then the
	// peer's set and the variants where measured.
	Control TwinPair   `json:"control"`
	Pairs   []TwinPair `json:"pairs"`
	// TunedNeverBelowDefaults is whether the tuned set had at least the defaults' TPS in every round.
	TunedNeverBelowDefaults bool `json:"tuned_never_below_defaults"`
}

// TwinPair is the tuned set against one other set, run at once on the twins, once per round.
type TwinPair struct {
	// Other names the other set ("defaults", "peer", a variant's name, or "tuned" for the control).
	Other string   `json:"other"`
	Tuned RunStats `json:"tuned"`
	Run   RunStats `json:"other_run"`
	// TunedOver is the tuned set's TPS over the other's within each round; TunedWins counts the rounds above 1.
	TunedOver Stat `json:"tuned_over_other_ratio"`
	TunedWins int  `json:"tuned_wins"`
	// Variant is the variant this pair measures, nil for the others.
	Variant *StorageVariant `json:"variant,omitempty"`

	params string
}

// twinLab is what the twins need from the section: where to put them and the workload.
type twinLab struct {
	env                   *terraformEnv
	pg                    postgresBin
	scratch               string
	scale, seconds, total int
}

// storageTwinsTF is the twins of one kind (gp3: gp3-like, else NVMe-like) on PostgreSQL major with
// parameters a and b.
func storageTwinsTF(dir string, base, major int, gp3 bool, a, b string) string {
	kind := "nvme"
	if gp3 {
		kind = "gp3"
	}
	return storageTuningTF(major) + storageClusterTF("twin_a", "bench-twin-a-"+kind, a, dir+"/twin-a-"+kind, base, major, gp3) +
		storageClusterTF("twin_b", "bench-twin-b-"+kind, b, dir+"/twin-b-"+kind, base+1, major, gp3)
}

// twinRounds is the number of rounds for runs (the section's pairs): even, so that each twin runs the
// tuned set in half of them.
func twinRounds(runs int) int {
	return runs + runs%2
}

// twins makes the twins of one kind, loads the dataset into both, and measures the tuned set (tuned, an
// HCL expression) against itself and against each of others, one pair of each per round; it destroys the
// twins before it returns.
func (l twinLab) twins(gp3 bool, tuned string, others []TwinPair) (tb TwinBench, err error) {
	ctx, env := l.env.ctx, l.env
	tb = TwinBench{Node: "NVMe-like", Rounds: twinRounds(l.total)}
	if gp3 {
		tb.Node = "gp3-like"
	}
	log := func(format string, a ...any) {
		progress("storage under limits: %s twins: "+format, append([]any{tb.Node}, a...)...)
	}
	base, err := acctest.FindFreePortBase(2)
	if err != nil {
		return tb, err
	}
	ws, err := env.workspace("storage-twins-"+strings.ToLower(strings.TrimSuffix(tb.Node, "-like")), map[string]string{"main.tf": storageTwinsTF(l.scratch, base, l.pg.Major, gp3, tuned, tuned)})
	if err != nil {
		return tb, err
	}
	set := func(a, b string) error {
		if err := os.WriteFile(filepath.Join(ws, "main.tf"), []byte(storageTwinsTF(l.scratch, base, l.pg.Major, gp3, a, b)), 0o644); err != nil {
			return err
		}
		return env.run(ws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	}
	defer func() {
		log("destroying both")
		if derr := env.destroy(ws); derr != nil && err == nil {
			err = fmt.Errorf("destroying the %s twins: %w", tb.Node, derr)
		}
	}()
	log("creating two identical nodes (%d MiB memory each, %d GiB disks)", storageMemoryMiB, storageDiskGiB)
	if err := set(tuned, tuned); err != nil {
		return tb, err
	}
	ports := [2]int{base, base + 1}
	log("pgbench -i -s %d on both at once", l.scale)
	var g errgroup.Group
	for _, port := range ports {
		g.Go(func() error { return pgbenchInit(ctx, l.pg, port, l.scale) })
	}
	if err := g.Wait(); err != nil {
		return tb, fmt.Errorf("pgbench -i on the %s twins: %w", tb.Node, err)
	}
	rws, err := env.workspace("storage-twin-run", map[string]string{"main.tf": storageRunTF(l.pg.pgbench(), l.scale, l.seconds, 2)})
	if err != nil {
		return tb, err
	}
	// pairs[0] is the control: the tuned set against itself.
	pairs := append([]TwinPair{{Other: "tuned", params: tuned}}, others...)
	tunedS, otherS := make([]samples, len(pairs)), make([]samples, len(pairs))
	ratios := make([][]float64, len(pairs))
	for i := 0; i < tb.Rounds; i++ {
		var line []string
		for k := range pairs {
			p := &pairs[k]
			// The tuned set on twin a in even rounds, on twin b in odd ones.
			t := i % 2
			params := [2]string{tuned, p.params}
			if t == 1 {
				params = [2]string{p.params, tuned}
			}
			log("round %d/%d, tuned vs %s at once (%d s; tuned on twin %c)", i+1, tb.Rounds, p.Other, l.seconds, 'a'+t)
			if err := set(params[0], params[1]); err != nil {
				return tb, fmt.Errorf("tuned vs %s: %w", p.Other, err)
			}
			var g errgroup.Group
			for _, port := range ports {
				g.Go(func() error { return settle(ctx, l.pg, port, l.scale) })
			}
			if err := g.Wait(); err != nil {
				return tb, fmt.Errorf("tuned vs %s: %w", p.Other, err)
			}
			got, err := talkRunsAt(env, rws, ports[0], ports[1])
			if err != nil {
				return tb, fmt.Errorf("tuned vs %s: %w", p.Other, err)
			}
			tr, or := got[t], got[1-t]
			tunedS[k].add(tr)
			otherS[k].add(or)
			ratios[k] = append(ratios[k], tr.TPS/or.TPS)
			if tr.TPS > or.TPS {
				p.TunedWins++
			}
			line = append(line, fmt.Sprintf("tuned %.0f vs %s %.0f tps (%.3fx)", tr.TPS, p.Other, or.TPS, tr.TPS/or.TPS))
		}
		log("round %d/%d: %s", i+1, tb.Rounds, strings.Join(line, ", "))
	}
	for k := range pairs {
		pairs[k].Tuned, pairs[k].Run, pairs[k].TunedOver = tunedS[k].stats(), otherS[k].stats(), newStat(ratios[k])
	}
	tb.Control, tb.Pairs = pairs[0], pairs[1:]
	tb.TunedNeverBelowDefaults = len(tb.Pairs) > 0 && tb.Pairs[0].Other == "defaults" && tb.Pairs[0].TunedOver.Min >= 1
	return tb, nil
}

// settle brings the node at port to the same state before every run: the talk's workload for
// storageSettleSeconds (discarded), then a CHECKPOINT. An arm's parameters come by an apply that restarts
// the server (cold shared_buffers, a shutdown checkpoint just written) or only reloads it (warm, the
// previous arm's dirty pages and WAL since the last checkpoint); without it the arms would start from
// whatever the switch left.
func settle(ctx context.Context, pg postgresBin, port, scale int) error {
	if _, err := talkRun(ctx, pg, port, scale, storageSettleSeconds); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint after the warm-up: %w", err)
	}
	return nil
}

// storageSettleSeconds is the warm-up before each run of the twins.
const storageSettleSeconds = 10
