package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
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
	scratch               string
	scale, seconds, total int
}

// storageTwinsTF is the twins of one kind (gp3: gp3-like, else NVMe-like) with parameters a and b.
func storageTwinsTF(dir string, base int, gp3 bool, a, b string) string {
	kind := "nvme"
	if gp3 {
		kind = "gp3"
	}
	return storageTuningTF() + storageClusterTF("twin_a", "bench-twin-a-"+kind, a, dir+"/twin-a-"+kind, base, gp3) +
		storageClusterTF("twin_b", "bench-twin-b-"+kind, b, dir+"/twin-b-"+kind, base+1, gp3)
}

// storageRunTF is the talk's pgbench run on the server at var.port_<name>, output <name>, for each of names:
// with two, Terraform reads both data sources at once (the twins).
func storageRunTF(scale, seconds int, names ...string) string {
	tf := `
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
`
	for _, t := range names {
		tf += fmt.Sprintf(`
variable "port_%[1]s" { type = number }
data "pgnvme_pgbench" %[1]q {
  server           = { host = "127.0.0.1", port = var.port_%[1]s }
  script           = %[2]q
  scale            = %[3]d
  clients          = %[4]d
  threads          = 2
  protocol         = "prepared"
  duration_seconds = %[5]d
}
output %[1]q {
  value = {
    tps  = data.pgnvme_pgbench.%[1]s.tps
    p50  = data.pgnvme_pgbench.%[1]s.latency_p50_ms
    p95  = data.pgnvme_pgbench.%[1]s.latency_p95_ms
    p99  = data.pgnvme_pgbench.%[1]s.latency_p99_ms
    wait = data.pgnvme_pgbench.%[1]s.wait_events
  }
}
`, t, pgbench.TalkScript, scale, storageClients, seconds)
	}
	return tf
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
	ws, err := env.workspace("storage-twins-"+strings.ToLower(strings.TrimSuffix(tb.Node, "-like")), map[string]string{"main.tf": storageTwinsTF(l.scratch, base, gp3, tuned, tuned)})
	if err != nil {
		return tb, err
	}
	set := func(a, b string) error {
		if err := os.WriteFile(filepath.Join(ws, "main.tf"), []byte(storageTwinsTF(l.scratch, base, gp3, a, b)), 0o644); err != nil {
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
	if err := both(ports, func(port int) error { return pgbenchInit(ctx, port, l.scale) }); err != nil {
		return tb, fmt.Errorf("pgbench -i on the %s twins: %w", tb.Node, err)
	}
	rws, err := env.workspace("storage-twin-run", map[string]string{"main.tf": storageRunTF(l.scale, l.seconds, "a", "b")})
	if err != nil {
		return tb, err
	}
	// run runs the talk's workload on both twins at once and counts the checkpoints each began.
	run := func() ([2]runResult, error) {
		var got [2]runResult
		var before [2]float64
		for i, port := range ports {
			var err error
			if before[i], err = checkpointsBegun(ctx, port); err != nil {
				return got, fmt.Errorf("checkpoints before the run: %w", err)
			}
		}
		if err := env.run(rws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false",
			fmt.Sprintf("-var=port_a=%d", ports[0]), fmt.Sprintf("-var=port_b=%d", ports[1])); err != nil {
			return got, err
		}
		for i, port := range ports {
			if err := env.outputJSON(rws, []string{"a", "b"}[i], &got[i]); err != nil {
				return got, err
			}
			after, err := checkpointsBegun(ctx, port)
			if err != nil {
				return got, fmt.Errorf("checkpoints after the run: %w", err)
			}
			got[i].Checkpoints = after - before[i]
		}
		return got, nil
	}
	tb.Control = TwinPair{Other: "tuned", params: tuned}
	pairs := append([]*TwinPair{&tb.Control}, pointers(others)...)
	tunedS, otherS := make([]samples, len(pairs)), make([]samples, len(pairs))
	ratios := make([][]float64, len(pairs))
	for i := 0; i < tb.Rounds; i++ {
		var line []string
		for k, p := range pairs {
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
			if err := both(ports, func(port int) error { return settle(ctx, port, l.scale) }); err != nil {
				return tb, fmt.Errorf("tuned vs %s: %w", p.Other, err)
			}
			got, err := run()
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
	for k, p := range pairs {
		p.Tuned, p.Run, p.TunedOver = tunedS[k].stats(), otherS[k].stats(), newStat(ratios[k])
	}
	tb.Pairs = others
	tb.TunedNeverBelowDefaults = len(others) > 0 && others[0].Other == "defaults" && others[0].TunedOver.Min >= 1
	return tb, nil
}

// pointers is a pointer to each element of ps, in order.
func pointers[T any](ps []T) []*T {
	out := make([]*T, len(ps))
	for i := range ps {
		out[i] = &ps[i]
	}
	return out
}

// both runs f for both ports at once and returns the first error.
func both(ports [2]int, f func(port int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, port := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(port)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// settle brings the node at port to the same state before every run: the talk's workload for
// storageSettleSeconds (discarded), then a CHECKPOINT. An arm's parameters come by an apply that restarts
// the server (cold shared_buffers, a shutdown checkpoint just written) or only reloads it (warm, the
// previous arm's dirty pages and WAL since the last checkpoint); without it the arms would start from
// whatever the switch left.
func settle(ctx context.Context, port, scale int) error {
	if _, err := talkRun(ctx, port, scale, storageSettleSeconds); err != nil {
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
