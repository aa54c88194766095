package main

import (
	"fmt"
	"os"
	"strings"
)

// MajorReport is the figures of the sections that run PostgreSQL, on one major.
type MajorReport struct {
	PostgresMajor int `json:"postgres_major"`
	// BinDir is where the major's programs were found (what the bench ran by hand ran from there).
	BinDir   string         `json:"bin_dir"`
	Pgbench  *PgbenchBench  `json:"pgbench,omitempty"`
	Cluster  *ClusterBench  `json:"cluster,omitempty"`
	Storage  *StorageBench  `json:"storage,omitempty"`
	Ablation *AblationBench `json:"ablation,omitempty"`
	Restore  *RestoreBench  `json:"restore,omitempty"`
	EC2      *EC2Bench      `json:"ec2,omitempty"`
}

// servers are the servers the sections that ran reported.
func (m *MajorReport) servers() []Server {
	var out []Server
	if m.Pgbench != nil {
		out = append(out, m.Pgbench.Server)
	}
	if m.Cluster != nil {
		out = append(out, m.Cluster.Server)
	}
	if m.Storage != nil {
		out = append(out, m.Storage.Server)
	}
	if m.Restore != nil {
		out = append(out, m.Restore.Server)
	}
	if m.EC2 != nil {
		out = append(out, m.EC2.Server)
	}
	if m.Ablation != nil {
		out = append(out, m.Ablation.Server)
	}
	return out
}

func (m *MajorReport) print(w *os.File, cpus int, line func(string, Stat, string, string)) {
	fmt.Fprintf(w, "\n=== PostgreSQL %d (server_version %s, read from the sections' servers; programs in %s) ===\n",
		m.PostgresMajor, serverVersions(m.servers()...), m.BinDir)
	if pb := m.Pgbench; pb != nil {
		fmt.Fprintf(w, "\nlocal nodes and pgbench (%s)\n", pb.Note)
		line("primary + 2 standbys streaming", pb.ClusterReadySeconds, "s", "")
		line("pgbench CLI by hand", pb.HandTPS, "tps", "")
		line("pgnvme_pgbench, same arguments", pb.ProviderTPS, "tps", "   paired ratio over hand "+pb.ProviderOverHand.Format(""))
		line("pgnvme_pgbench, sampler off", pb.SamplerOffTPS, "tps", "   paired ratio on/off "+pb.SamplerOnOverOff.Format(""))
		line("load average before each run", pb.LoadAverage, "", fmt.Sprintf("   (%d CPUs)", cpus))
	}
	if c3 := m.Cluster; c3 != nil {
		fmt.Fprintf(w, "\npgnvme_cluster, local platform, PostgreSQL %s (talk's random UPDATE, 8 clients)\n", c3.ServerVersion)
		line("3 nodes by shell script", c3.ScriptCreateSeconds, "s", "")
		line("3 nodes by terraform apply", c3.ProviderCreateSeconds, "s", "   paired ratio "+c3.CreateRatio.Format(""))
		line("asynchronous replication", c3.AsyncTPS, "tps", "")
		line("ANY 1 (node-2, node-3)", c3.QuorumTPS, "tps", "   paired ratio "+c3.QuorumOverAsync.Format(""))
		fmt.Fprintf(w, "  %s\n", c3.TuningNote)
		line("PostgreSQL defaults", c3.DefaultTPS, "tps", "   p95 "+c3.DefaultP95Ms.Format("ms"))
		line("pgnvme_tuning parameters", c3.TunedTPS, "tps", "   p95 "+c3.TunedP95Ms.Format("ms"))
		line("tuned / defaults, paired", c3.TunedOverDefault, "", fmt.Sprintf("   tuned won %d of %d pairs", c3.TunedWins, len(c3.TunedOverDefault.Samples)))
	}
	if st := m.Storage; st != nil {
		st.print(w, line)
	}
	if rb := m.Restore; rb != nil {
		rb.print(w)
	}
	if e := m.EC2; e != nil {
		e.print(w)
	}
	if a := m.Ablation; a != nil {
		a.print(w)
	}
}

// headline is one row of the table that sets the majors side by side.
type headline struct {
	label, unit string
	stat        Stat
}

// headlines are m's figures for that table: each section's ratios and the medians behind them.
func (m *MajorReport) headlines() []headline {
	var out []headline
	add := func(label string, s Stat, unit string) {
		out = append(out, headline{label: label, unit: unit, stat: s})
	}
	if p := m.Pgbench; p != nil {
		add("pgbench: primary + 2 standbys streaming", p.ClusterReadySeconds, "s")
		add("pgbench: pgnvme_pgbench / by hand", p.ProviderOverHand, "x")
	}
	if c := m.Cluster; c != nil {
		add("cluster: create, apply / script", c.CreateRatio, "x")
		add("cluster: ANY 1 / async TPS", c.QuorumOverAsync, "x")
		add("cluster: tuned TPS", c.TunedTPS, "tps")
		add("cluster: tuned / defaults TPS", c.TunedOverDefault, "x")
	}
	if st := m.Storage; st != nil {
		add("storage: NVMe-like TPS", st.NVMe.TPS, "tps")
		add("storage: gp3-like TPS", st.GP3.TPS, "tps")
		add("storage: TPS NVMe-like / gp3-like", st.TPSRatio, "x")
		add("storage: NVMe-like p50", st.NVMe.P50, "ms")
		add("storage: gp3-like p50", st.GP3.P50, "ms")
		add("storage: p50 gp3-like / NVMe-like", st.P50Ratio, "x")
		if mt := st.Maintenance; mt != nil {
			add("storage: VACUUM gp3-like / NVMe-like", mt.VacuumRatio, "x")
			add("storage: decoding NVMe-like / gp3-like", mt.DecodeRatio, "x")
		}
		for _, t := range st.Twins {
			add("storage: "+t.Node+" twins, tuned / tuned", t.Control.TunedOver, "x")
			for _, p := range t.Pairs {
				add("storage: "+t.Node+" twins, tuned / "+p.Other, p.TunedOver, "x")
			}
		}
	}
	if r := m.Restore; r != nil {
		for _, s := range r.Sizes {
			add(fmt.Sprintf("restore: scale %d, drill / by hand", s.Scale), s.DrillOverHand, "x")
		}
	}
	if e := m.EC2; e != nil {
		add("ec2: create", e.Create, "s")
		add("ec2: create / nodes' own forming", e.CreateRatio, "x")
		add("ec2: failover", e.Failover, "s")
		add("ec2: failover / (ttl + loop_wait)", e.FailoverRatio, "x")
		add("ec2: lost node replaced", e.Replace, "s")
		add("ec2: replaced / node's boot and seed", e.ReplaceRatio, "x")
		add("ec2: 3-node roll", e.Roll, "s")
		add("ec2: roll / floor", e.RollRatio, "x")
		add("ec2: every node lost, restored", e.Restore, "s")
		add("ec2: restored / pgBackRest by hand", e.RestoreRatio, "x")
		add("ec2: calls one refresh makes", e.RefreshCalls, "")
	}
	if a := m.Ablation; a != nil {
		for _, r := range a.Rows {
			if !r.SameAsDefault {
				add("ablation: "+r.Parameter+" / defaults", r.Ratio, "x")
			}
		}
	}
	return out
}

// printBeside prints the majors' headline figures side by side, one column per major, in the order run.
func printBeside(w *os.File, majors []*MajorReport) {
	var labels []string
	cells := map[string][]string{}
	for i, m := range majors {
		for _, h := range m.headlines() {
			if _, ok := cells[h.label]; !ok {
				labels = append(labels, h.label)
				cells[h.label] = make([]string, len(majors))
			}
			cells[h.label][i] = strings.Join(strings.Fields(h.stat.Format(h.unit)), " ")
		}
	}
	if len(labels) == 0 {
		return
	}
	names := make([]string, len(majors))
	for i, m := range majors {
		names[i] = fmt.Sprint(m.PostgresMajor)
	}
	fmt.Fprintf(w, "\nPostgreSQL %s side by side: medians [min-max]; each ratio is paired within its own major's runs, and the majors ran one\n"+
		"after the other (each section on every major before the next section), so the machine's drift between them is in their difference\n",
		strings.Join(names, " beside "))
	fmt.Fprintf(w, "  %-42s", "")
	for _, m := range majors {
		fmt.Fprintf(w, " %-32s", "PostgreSQL "+serverVersions(m.servers()...))
	}
	fmt.Fprintln(w)
	for _, l := range labels {
		fmt.Fprintf(w, "  %-42s", l)
		for _, c := range cells[l] {
			if c == "" {
				c = "-"
			}
			fmt.Fprintf(w, " %-32s", c)
		}
		fmt.Fprintln(w)
	}
}
