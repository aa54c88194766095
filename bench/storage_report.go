package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
)

func (b *StorageBench) print(w *os.File, line func(string, Stat, string, string)) {
	fmt.Fprintf(w, "\nthe talk's experiment under local.limits (%s)\n", b.Note)
	side := func(name string, r RunStats) {
		line(name+" TPS", r.TPS, "tps", "")
		line(name+" p50 / p95 / p99", r.P50, "ms", "   p95 "+r.P95.Format("ms")+"   p99 "+r.P99.Format("ms"))
		line(name+" IO:DataFileRead share", r.DataFileRead, "", "   LWLock:WALWrite "+r.WALWrite.Format(""))
		line(name+" checkpoints begun in a run", r.Checkpoints, "", "")
	}
	side("NVMe-like", b.NVMe)
	side("gp3-like", b.GP3)
	line("TPS NVMe-like / gp3-like, paired", b.TPSRatio, "x", fmt.Sprintf("   talk: %.1fx (16,030 / 1,734 TPS)", 16030.0/1734))
	line("p50 gp3-like / NVMe-like, paired", b.P50Ratio, "x", fmt.Sprintf("   talk: %.1fx (36.9 / 4.0 ms)", 36.9/4.0))
	line("p95 gp3-like / NVMe-like, paired", b.P95Ratio, "x", "")
	line("p99 gp3-like / NVMe-like, paired", b.P99Ratio, "x", "")
	peer := "no peer"
	if b.Peer != nil {
		peer = fmt.Sprintf("the peer (%s %s) for the same machine", b.Peer.Name, b.Peer.Version)
	}
	fmt.Fprintf(w, "  tuned for %d MiB (pgnvme_tuning, nvme) vs PostgreSQL defaults vs %s on the NVMe-like node\n", b.MemoryMiB, peer)
	side("defaults", b.Defaults)
	side("tuned", b.Tuned)
	if b.PeerRun != nil {
		side("peer", *b.PeerRun)
	}
	rounds := len(b.TunedOverDefault.Samples)
	line("tuned / defaults TPS, paired", b.TunedOverDefault, "x", fmt.Sprintf("   tuned won %d of %d rounds", b.TunedWins, rounds))
	if b.PeerRun != nil {
		line("tuned / peer TPS, paired", *b.TunedOverPeer, "x", fmt.Sprintf("   tuned won %d of %d rounds", b.TunedWinsOverPeer, rounds))
		line("peer / defaults TPS, paired", *b.PeerOverDefault, "x", "")
		fmt.Fprintf(w, "  peer: %s\n  peer parameters used: %s\n", b.Peer.Command, formatParams(b.Peer.Parameters))
		for _, k := range slices.Sorted(maps.Keys(b.Peer.Dropped)) {
			fmt.Fprintf(w, "  peer parameter dropped: %s = %s (%s)\n", k, b.Peer.Recommended[k], b.Peer.Dropped[k])
		}
	} else {
		fmt.Fprintf(w, "  peer not measured: %s\n", b.PeerMissing)
	}
	for _, v := range b.Variants {
		tunedValue := v.TunedValue
		if tunedValue == "" {
			tunedValue = "not set"
		}
		side(v.name(), v.Run)
		line("tuned / "+v.name()+" TPS, paired", v.TunedOver, "x", fmt.Sprintf("   tuned (%s %s) won %d of %d rounds", v.Parameter, tunedValue, v.TunedWins, rounds))
		line(v.name()+" / defaults TPS, paired", v.OverDefaults, "x", "")
	}
	if len(b.GP3TunedOverDefault.Samples) > 0 {
		fmt.Fprintf(w, "  tuned for %d MiB with storage = \"ebs\" (pgnvme_tuning) vs PostgreSQL defaults on the gp3-like node, where the disk is the bottleneck\n", b.MemoryMiB)
		side("gp3-like defaults", b.GP3Defaults)
		side("gp3-like tuned (ebs)", b.GP3Tuned)
		line("tuned (ebs) / defaults TPS on gp3-like, paired", b.GP3TunedOverDefault, "x",
			fmt.Sprintf("   tuned won %d of %d rounds", b.GP3TunedWins, len(b.GP3TunedOverDefault.Samples)))
	}
	if m := b.Maintenance; m != nil {
		fmt.Fprintf(w, "  VACUUM of %d%% of the accounts updated (autovacuum off) and a logical-decoding backlog (test_decoding), both nodes tuned, wal_level = logical\n", m.BloatRowsPercent)
		m.print(line)
	}
}
