package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
)

func (b *StorageBench) print(w *os.File, line func(string, Stat, string, string)) {
	fmt.Fprintf(w, "\nthe talk's experiment under local.limits (%s)\n", b.Note)
	// side prints one node's runs, each figure beside the talk's for the same kind of volume (64 clients on
	// real hardware: TPS, p50 and the share of samples in IO:DataFileRead).
	side := func(name string, r RunStats, talkTPS string, talkP50, talkShare float64) {
		line(name+" TPS", r.TPS, "tps", "   talk: "+talkTPS+" TPS")
		line(name+" p50 / p95 / p99", r.P50, "ms", "   p95 "+r.P95.Format("ms")+"   p99 "+r.P99.Format("ms")+fmt.Sprintf("   talk p50: %.1f ms", talkP50))
		line(name+" IO:DataFileRead share", r.DataFileRead, "", "   LWLock:WALWrite "+r.WALWrite.Format("")+fmt.Sprintf("   talk: %.2f", talkShare))
		if r.AioIoCompletion.Max > 0 {
			line(name+" IO:AioIoCompletion share", r.AioIoCompletion, "", "   reads handed to I/O workers")
		}
		line(name+" checkpoints begun in a run", r.Checkpoints, "", "")
	}
	side("NVMe-like", b.NVMe, "16,030", 4.0, 0.14)
	side("gp3-like", b.GP3, "1,734", 36.9, 0.45)
	line("TPS NVMe-like / gp3-like, paired", b.TPSRatio, "x", fmt.Sprintf("   talk: %.1fx (16,030 / 1,734 TPS)", 16030.0/1734))
	line("p50 gp3-like / NVMe-like, paired", b.P50Ratio, "x", fmt.Sprintf("   talk: %.1fx (36.9 / 4.0 ms)", 36.9/4.0))
	line("p95 gp3-like / NVMe-like, paired", b.P95Ratio, "x", "")
	line("p99 gp3-like / NVMe-like, paired", b.P99Ratio, "x", "")
	if b.Peer != nil {
		fmt.Fprintf(w, "  peer: %s\n  peer parameters used: %s\n", b.Peer.Command, formatParams(b.Peer.Parameters))
		for _, k := range slices.Sorted(maps.Keys(b.Peer.Dropped)) {
			fmt.Fprintf(w, "  peer parameter dropped: %s = %s (%s)\n", k, b.Peer.Recommended[k], b.Peer.Dropped[k])
		}
	} else {
		fmt.Fprintf(w, "  peer not measured: %s\n", b.PeerMissing)
	}
	for _, t := range b.Twins {
		t.print(w, b.MemoryMiB, line)
	}
	if m := b.Maintenance; m != nil {
		fmt.Fprintf(w, "  VACUUM of %d%% of the accounts updated (autovacuum off) and a logical-decoding backlog (test_decoding), both nodes tuned, wal_level = logical\n", m.BloatRowsPercent)
		m.print(line)
	}
}

// print writes the twins' lines: each pair's ratio with the rounds tuned won, the other set's TPS beside
// the tuned set's, and the checkpoints each began in a run.
func (t TwinBench) print(w *os.File, memoryMiB int, line func(string, Stat, string, string)) {
	storage := "nvme"
	if t.Node == "gp3-like" {
		storage = "ebs"
	}
	fmt.Fprintf(w, "  pgnvme_tuning for %d MiB (storage = %q) against other sets on two %s twins at once, %d rounds, the tuned set on each twin in half of them\n",
		memoryMiB, storage, t.Node, t.Rounds)
	for _, p := range append([]TwinPair{t.Control}, t.Pairs...) {
		label, extra := "tuned / "+p.Other+" TPS, at once", fmt.Sprintf("   tuned won %d of %d rounds", p.TunedWins, len(p.TunedOver.Samples))
		switch {
		case p.Other == "tuned":
			label, extra = "tuned / tuned TPS, at once (control)", "   the method's own spread"
		case p.Variant != nil:
			label = "tuned / variant TPS, at once"
			extra += " against " + p.Other
		case p.Other == "defaults":
			extra += fmt.Sprintf("; never below the defaults: %s", map[bool]string{true: "yes", false: "NO"}[t.TunedNeverBelowDefaults])
		}
		line(label, p.TunedOver, "x", extra)
		if p.Other != "tuned" {
			line("  "+p.Other+" TPS", p.Run.TPS, "tps", "   tuned beside it "+p.Tuned.TPS.Format("tps"))
		}
		line("  checkpoints begun in a run", p.Run.Checkpoints, "", "   tuned beside it "+p.Tuned.Checkpoints.Format(""))
	}
}
