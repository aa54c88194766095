package topology_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// whole is a cluster of names, the first leading, every other streaming in the quorum, all current.
func whole(names ...string) topology.Cluster {
	c := topology.Cluster{SyncNumber: 1, MaxLagBytes: maxLag, Formed: true, ViewKnown: true}
	for i, n := range names {
		m := topology.Member{Name: n, Wanted: true, Machine: topology.MachineLive, Etcd: i < 3, Role: topology.RoleStandby, Running: true, Streaming: true, InQuorum: true}
		if i == 0 {
			m.Role, m.Streaming, m.InQuorum = topology.RolePrimary, false, false
		}
		c.Members = append(c.Members, m)
	}
	return c
}

// lose makes node's machine lost.
func lose(c topology.Cluster, nodes ...string) topology.Cluster {
	c.Members = slices.Clone(c.Members)
	for i, m := range c.Members {
		if slices.Contains(nodes, m.Name) {
			c.Members[i] = topology.Member{Name: m.Name, Wanted: m.Wanted, Etcd: m.Etcd, Machine: topology.MachineLost, Why: "its instance is terminated", LagBytes: -1}
		}
	}
	return c
}

func stepStrings(steps []topology.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}

func TestSteps_cases(t *testing.T) {
	rolled := whole("n1", "n2", "n3")
	for i := range rolled.Members {
		rolled.Members[i].Outdated = []string{"instance_type m6id.large -> m6id.xlarge"}
	}
	added := whole("n1", "n2", "n3", "n4")
	added.Members[3] = topology.Member{Name: "n4", Wanted: true, Machine: topology.MachineAbsent, LagBytes: -1}
	added.ConfigChanges = []string{"postgresql.pg_hba: [3 entries] -> [4 entries]"}
	removedPrimary := whole("n4", "n1", "n2", "n3")
	removedPrimary.Members = append(removedPrimary.Members[1:], removedPrimary.Members[0])
	removedPrimary.Members[3].Wanted = false
	noLeaderYet := lose(whole("n1", "n2", "n3"), "n1")
	for i := range noLeaderYet.Members {
		noLeaderYet.Members[i].Role, noLeaderYet.Members[i].Running = "", false
	}
	noLeaderYet.ViewKnown = false
	fresh := topology.Cluster{SyncNumber: 1, MaxLagBytes: maxLag}
	for _, n := range []string{"n1", "n2", "n3"} {
		fresh.Members = append(fresh.Members, topology.Member{Name: n, Wanted: true, Machine: topology.MachineAbsent, Etcd: true, LagBytes: -1})
	}
	interrupted := fresh
	interrupted.Members = slices.Clone(fresh.Members)
	interrupted.Members[0] = topology.Member{Name: "n1", Wanted: true, Machine: topology.MachineLive, Etcd: true, LagBytes: -1}
	pending := whole("n1", "n2", "n3")
	pending.Members[0].PendingRestart = []string{"shared_buffers"}
	pending.Members[2].PendingRestart = []string{"shared_buffers"}

	for _, tc := range []struct {
		name string
		c    topology.Cluster
		want []string
		err  error
	}{
		{"whole", whole("n1", "n2", "n3"), nil, nil},
		{"one standby lost", lose(whole("n1", "n2", "n3"), "n3"), []string{"replace n3"}, nil},
		{"the primary lost, Patroni failed over", func() topology.Cluster {
			c := lose(whole("n1", "n2", "n3"), "n1")
			c.Members[1].Role, c.Members[1].Streaming, c.Members[1].InQuorum = topology.RolePrimary, false, false
			return c
		}(), []string{"replace n1"}, nil},
		{"the primary lost, failover under way", noLeaderYet, []string{"wait for a leader", "replace n1"}, nil},
		{"every member lost, the archive not read", lose(whole("n1", "n2", "n3"), "n1", "n2", "n3"), nil, topology.ErrDataLost},
		{"every member lost, no base backup in the archive", func() topology.Cluster {
			c := lose(whole("n1", "n2", "n3"), "n1", "n2", "n3")
			c.Archive = &topology.ArchiveEnd{LastWAL: "000000010000000000000004"}
			return c
		}(), nil, topology.ErrDataLost},
		{"every member lost, restored from the archive", func() topology.Cluster {
			c := lose(whole("n1", "n2", "n3"), "n1", "n2", "n3")
			c.Archive = &topology.ArchiveEnd{Backup: "base_000000010000000000000002", LastWAL: "000000010000000000000004"}
			return c
		}(), []string{"restore the cluster from its archive onto n1, n2, n3"}, nil},
		{"the primary and a standby lost", lose(whole("n1", "n2", "n3"), "n1", "n2"), nil, topology.ErrNoElection},
		{"a new cluster", fresh, []string{"form the cluster from n1, n2, n3"}, nil},
		{"an interrupted create", interrupted, []string{"form the cluster from n2, n3"}, nil},
		{"an instance-type roll", rolled, []string{"replace n3 (roll)", "replace n2 (roll)", "switchover n1 to n2", "replace n1 (roll)"}, nil},
		{"a node added", added, []string{"change Patroni's dynamic configuration", "add n4"}, nil},
		{"a node removed while it leads", removedPrimary, []string{"switchover n4 to n1", "remove n4"}, nil},
		{"restarts, the leader last", pending, []string{"restart n3", "restart n1"}, nil},
		{"a forming cluster with a leader", func() topology.Cluster {
			c := whole("n1", "n2", "n3")
			c.Formed = false
			c.Members[2].Streaming, c.Members[2].InQuorum = false, false
			return c
		}(), []string{"wait for every member to stream"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := topology.Steps(tc.c)
			if !errors.Is(err, tc.err) || (err != nil) != (tc.err != nil) {
				t.Fatalf("Steps: error %v; want %v (steps %v)", err, tc.err, stepStrings(steps))
			}
			if got := stepStrings(steps); !slices.Equal(got, tc.want) {
				t.Errorf("Steps: %q; want %q\n%s", got, tc.want, topology.StepsSummary(steps))
			}
			s, done, nerr := topology.Next(tc.c)
			switch {
			case tc.err != nil && !errors.Is(nerr, tc.err):
				t.Errorf("Next: error %v; want %v", nerr, tc.err)
			case tc.err == nil && len(tc.want) == 0 && !done:
				t.Errorf("Next: %s; want done", s)
			case tc.err == nil && len(tc.want) > 0 && s.String() != tc.want[0]:
				t.Errorf("Next: %s; want %s, the plan's first step", s, tc.want[0])
			}
		})
	}
}

func TestSteps_quorumLater(t *testing.T) {
	// Adding n4 with ANY 2: the quorum stays at the live count until n4 streams, then rises.
	c := whole("n1", "n2", "n3", "n4")
	c.Members[3] = topology.Member{Name: "n4", Wanted: true, Machine: topology.MachineAbsent, LagBytes: -1}
	c.SyncNumber = 2
	c.ConfigChanges = []string{"postgresql.pg_hba: [3 entries] -> [4 entries]"}
	c.ConfigLater = []string{"synchronous_node_count: 1 -> 2"}
	steps, err := topology.Steps(c)
	want := []string{"change Patroni's dynamic configuration", "add n4", "change Patroni's dynamic configuration"}
	if err != nil || !slices.Equal(stepStrings(steps), want) {
		t.Fatalf("Steps: %q, %v; want %q", stepStrings(steps), err, want)
	}
	if !strings.Contains(steps[2].Reason, "synchronous_node_count: 1 -> 2") {
		t.Errorf("the second configure step should name the quorum: %s", steps[2].Reason)
	}
}

func TestNext_staleViewIsNoLeader(t *testing.T) {
	// A survivor whose DCS is gone still shows the lost leader: the adapter drops the view, and the engine
	// neither configures through the lost leader nor replaces around it.
	c := lose(whole("n1", "n2", "n3"), "n1", "n2")
	c.ViewKnown, c.ViewError = false, "the view's leader n1 has no live machine"
	for i := range c.Members {
		c.Members[i].Role = ""
	}
	if _, _, err := topology.Next(c); !errors.Is(err, topology.ErrNoElection) || !strings.Contains(err.Error(), "1 of the DCS's 3 members live (n3)") {
		t.Errorf("Next: %v; want ErrNoElection naming the one live DCS member", err)
	}
}

// TestSteps_invariants runs the engine over every small topology: 1 to 3 wanted members and at most one
// being removed, each member's machine live, lost or absent, a live one leading, a standby streaming in the
// quorum or not, caught up or far behind, current or outdated, the cluster formed or not. For each it
// checks what must always hold, step by step through the simulation.
func TestSteps_invariants(t *testing.T) {
	type variant struct {
		machine              topology.Machine
		role                 string
		running, streaming   bool
		lag                  int64
		outdated, restarting bool
	}
	var variants []variant
	for _, machine := range []topology.Machine{topology.MachineLive, topology.MachineLost, topology.MachineAbsent} {
		if machine != topology.MachineLive {
			variants = append(variants, variant{machine: machine, lag: -1})
			continue
		}
		for _, role := range []string{topology.RolePrimary, topology.RoleStandby, ""} {
			for _, streaming := range []bool{true, false} {
				for _, lag := range []int64{0, 2 * maxLag, -1} {
					for _, outdated := range []bool{false, true} {
						for _, restarting := range []bool{false, true} {
							if role != topology.RoleStandby && (streaming || lag != 0) || restarting && (outdated || lag != 0) {
								continue
							}
							variants = append(variants, variant{machine, role, role != "", streaming, lag, outdated, restarting})
						}
					}
				}
			}
		}
	}
	checked, refused, engineChecked := 0, 0, 0
	var build func(prefix []variant, n int)
	build = func(prefix []variant, n int) {
		if len(prefix) == n {
			for _, removed := range []bool{false, true} {
				if removed && n < 2 {
					continue
				}
				for _, formed := range []bool{false, true} {
					for _, syncNumber := range []int{0, 1} {
						for _, engine := range []bool{false, true} {
							c := topology.Cluster{SyncNumber: syncNumber, MaxLagBytes: maxLag, Formed: formed, ViewKnown: true, EnginePromotes: engine}
							if engine && (slices.ContainsFunc(prefix, func(v variant) bool { return v.outdated }) || !formed && slices.ContainsFunc(prefix, func(v variant) bool { return v.machine == topology.MachineLost })) {
								continue // no machine to roll where the engine promotes; a member is lost only once the cluster formed
							}
							for i, v := range prefix {
								m := topology.Member{Name: fmt.Sprintf("n%d", i+1), Wanted: !removed || i != n-1, Machine: v.machine, Etcd: i < 3 && !engine,
									Role: v.role, Running: v.running, Streaming: v.streaming, InQuorum: v.streaming, LagBytes: v.lag}
								if v.outdated {
									m.Outdated = []string{"instance_type a -> b"}
								}
								if v.restarting {
									m.PendingRestart = []string{"shared_buffers"}
								}
								if engine && v.machine == topology.MachineLive {
									// The engine reads every member's WAL: the lag stands for how far behind the furthest it is
									// (unknown: not read), and a member whose role was not read was not seen.
									m.WAL = &topology.WAL{Timeline: 1}
									if v.lag >= 0 {
										m.WAL.Received = uint64(0x4000000 - v.lag)
									}
									if v.role == "" {
										m.Unseen = "its role cannot be read"
									}
								}
								c.Members = append(c.Members, m)
							}
							if slices.ContainsFunc(c.Members, func(m topology.Member) bool { return !m.Wanted && m.Machine == topology.MachineAbsent }) {
								continue // a member being removed had a machine or an address
							}
							checked++
							if engine {
								engineChecked++
							}
							if err := invariants(c); err != nil {
								if errors.Is(err, errRefused) {
									refused++
									continue
								}
								t.Fatalf("%v\ncluster: %+v", err, c)
							}
							if err := renewalsFirst(c); err != nil {
								t.Fatalf("%v\ncluster: %+v", err, c)
							}
						}
					}
				}
			}
			return
		}
		for _, v := range variants {
			if v.role == topology.RolePrimary && slices.ContainsFunc(prefix, func(p variant) bool { return p.role == topology.RolePrimary }) {
				continue
			}
			build(append(slices.Clone(prefix), v), n)
		}
	}
	for n := 1; n <= 3; n++ {
		build(nil, n)
	}
	t.Logf("%d topologies checked (%d where the engine promotes), %d refused (as they should be)", checked, engineChecked, refused)
	if checked < 10000 || engineChecked < 5000 {
		t.Errorf("only %d topologies checked, %d where the engine promotes", checked, engineChecked)
	}
}

var errRefused = errors.New("refused")

// renewalsFirst checks c with every live member's certificates due: the apply renews each of them once,
// first, in the configuration's order, and then takes the very steps it takes for c (a renewal changes
// nothing else), or refuses as it does.
func renewalsFirst(c topology.Cluster) error {
	due := c
	due.Members = slices.Clone(c.Members)
	var want []string
	for i := range due.Members {
		if due.Members[i].Machine == topology.MachineLive {
			due.Members[i].CertDue = "its certificate ends within early_renewal_hours"
			want = append(want, "renew "+due.Members[i].Name+"'s certificates")
		}
	}
	steps, err := topology.Steps(c)
	dsteps, derr := topology.Steps(due)
	want = append(want, stepStrings(steps)...)
	if (err == nil) != (derr == nil) || (err != nil && err.Error() != derr.Error()) || !slices.Equal(stepStrings(dsteps), want) {
		return fmt.Errorf("with every live member's certificates due: steps %q (%s); want %q (%s)", stepStrings(dsteps), errText(derr), want, errText(err))
	}
	return nil
}

// errText is err's message, or "no error" for nil: for a message that reports either outcome (%w of nil
// prints %!w(<nil>)).
func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// invariants walks c's simulated apply and reports the first rule broken.
func invariants(c topology.Cluster) error {
	steps, err := topology.Steps(c)
	lost := !slices.ContainsFunc(c.Members, func(m topology.Member) bool { return m.Machine == topology.MachineLive })
	if c.Formed && lost && c.EnginePromotes && !c.Archived {
		// Nothing is left to keep without an archive: formed again from the first member.
		if err != nil || len(steps) == 0 || steps[0].Kind != topology.StepForm {
			return fmt.Errorf("every member lost without an archive: want the cluster formed again, got steps %q, error %w", stepStrings(steps), err)
		}
	} else if c.Formed && lost {
		if !errors.Is(err, topology.ErrDataLost) {
			return fmt.Errorf("no member holds the data: want ErrDataLost, got steps %q, error %w", stepStrings(steps), err)
		}
		return errRefused
	}
	if err != nil && strings.Contains(err.Error(), "bug in the provider") {
		return err
	}
	if first, done, nerr := topology.Next(c); (nerr == nil) != (err == nil || len(steps) > 0) ||
		(len(steps) > 0 && first.String() != steps[0].String()) || (done != (err == nil && len(steps) == 0)) {
		return fmt.Errorf("Next (%s, done %v, %s) is not the plan's first step (%q, %s)", first, done, errText(nerr), stepStrings(steps), errText(err))
	}
	cur := c
	cur.Members = slices.Clone(c.Members)
	for _, s := range steps {
		byName := map[string]topology.Member{}
		for _, m := range cur.Members {
			byName[m.Name] = m
		}
		switch s.Kind {
		case topology.StepForm:
			live := slices.ContainsFunc(cur.Members, func(m topology.Member) bool { return m.Machine == topology.MachineLive })
			if cur.Formed && (!cur.EnginePromotes || cur.Archived || live) {
				return fmt.Errorf("%s: a cluster that had formed is never formed anew (initdb over its data)", s)
			}
		case topology.StepPromote:
			if _, ok := leaderOf(cur); ok || !cur.EnginePromotes {
				return fmt.Errorf("%s while a member leads, or where Patroni elects", s)
			}
			p := byName[s.Node]
			if p.Machine != topology.MachineLive || !p.Running || p.Role != topology.RoleStandby || p.WAL == nil || p.WAL.Received == 0 {
				return fmt.Errorf("%s: %+v is not a running standby whose WAL position is known", s, p)
			}
			for _, m := range cur.Members {
				if m.Machine == topology.MachineLive && m.Role == topology.RoleStandby && m.WAL != nil && m.WAL.Received > p.WAL.Received {
					return fmt.Errorf("%s, but %s is further ahead (%+v)", s, m.Name, m.WAL)
				}
			}
		case topology.StepSwitchover:
			tg := byName[s.Target]
			if tg.Machine != topology.MachineLive || tg.Role != topology.RoleStandby || !tg.Running || !topology.Counted(tg.Streaming, tg.InQuorum, cur.SyncNumber) ||
				tg.LagBytes < 0 || tg.LagBytes > cur.MaxLagBytes || (len(tg.Outdated) > 0 && byName[s.Node].Wanted) {
				return fmt.Errorf("%s: the target %+v is not proven caught up", s, tg)
			}
		case topology.StepRoll, topology.StepRestart:
			for _, m := range cur.Members {
				if m.Name == s.Node || !m.Wanted {
					continue
				}
				serving := m.Machine == topology.MachineLive && m.Running && (m.Role == topology.RolePrimary || (m.Role == topology.RoleStandby && topology.Counted(m.Streaming, m.InQuorum, cur.SyncNumber)))
				if !serving {
					return fmt.Errorf("%s takes %s down while %s does not serve: two members down", s, s.Node, m.Name)
				}
			}
		case topology.StepReplace, topology.StepAdd, topology.StepReseed, topology.StepRepoint, topology.StepRemove:
			if _, ok := leaderOf(cur); !ok {
				return fmt.Errorf("%s without a leader to seed from", s)
			}
		}
		cur = topology.AfterStep(cur, s)
	}
	if err != nil {
		return errRefused
	}
	return nil
}

func leaderOf(c topology.Cluster) (topology.Member, bool) {
	for _, m := range c.Members {
		if m.Role == topology.RolePrimary && m.Machine == topology.MachineLive && m.Running && c.ViewKnown {
			return m, true
		}
	}
	return topology.Member{}, false
}

func TestNext_noElectionSaysWhatIsAtRisk(t *testing.T) {
	// The refusal says how far the survivor and the archive hold WAL, and from where commits may be lost:
	// the furthest of the two.
	stale := func() topology.Cluster {
		c := lose(whole("n1", "n2", "n3"), "n1", "n2")
		c.ViewKnown = false
		for i := range c.Members {
			c.Members[i].Role = ""
		}
		return c
	}
	if !stale().ElectionImpossible() || !stale().NeedsArchive() || whole("n1", "n2", "n3").ElectionImpossible() || lose(whole("n1", "n2", "n3"), "n1").ElectionImpossible() {
		t.Fatal("ElectionImpossible/NeedsArchive: want true for the primary and a standby lost, false for a whole cluster or one lost node")
	}
	for _, tc := range []struct {
		name string
		wal  *topology.WAL
		err  string
		end  string // the archive's newest segment
		want []string
	}{
		{"the survivor is furthest", &topology.WAL{Received: 0x9A0F2D8, Replayed: 0x9A0F100, Timeline: 3}, "", "000000030000000000000008",
			[]string{"n3 holds WAL up to 0/9A0F2D8 (replayed up to 0/9A0F100) on timeline 3", "the archive's newest segment is 000000030000000000000008 (WAL up to 0/9000000)",
				"Acknowledged commits after 0/9A0F2D8 (the furthest of these, on n3) may be lost", "the lost members (n1, n2) may have flushed WAL"}},
		{"the archive is furthest", &topology.WAL{Received: 0x8000100, Replayed: 0x8000100, Timeline: 3}, "", "0000000300000010000000FF",
			[]string{"n3 holds WAL up to 0/8000100 on timeline 3", "(WAL up to 11/0)", "after 11/0 (the furthest of these, on the archive)", "catches up to the archive's end by itself"}},
		{"the survivor's position unknown", nil, "GET /patroni on 10.0.0.3: connection refused", "000000030000000000000008",
			[]string{"n3's WAL position could not be read (GET /patroni on 10.0.0.3: connection refused)", "cannot be said while n3's WAL position is unknown"}},
		{"no archive read", &topology.WAL{Received: 0x9A0F2D8, Replayed: 0x9A0F2D8, Timeline: 3}, "", "",
			[]string{"what the archive holds is not known", "after 0/9A0F2D8 (the furthest of these, on n3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := stale()
			c.Members[2].WAL, c.Members[2].WALError = tc.wal, tc.err
			if tc.end != "" {
				c.Archive = &topology.ArchiveEnd{Backup: "b", LastWAL: tc.end}
			}
			_, _, err := topology.Next(c)
			if !errors.Is(err, topology.ErrNoElection) {
				t.Fatalf("Next: %v; want ErrNoElection", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestSegmentEnd(t *testing.T) {
	for name, want := range map[string]string{"000000010000000000000001": "0/2000000", "000000030000000000000008": "0/9000000", "0000000A00000002000000FF": "3/0"} {
		if got, err := topology.SegmentEnd(name); err != nil || topology.FormatLSN(got) != want {
			t.Errorf("SegmentEnd(%s) = %s, %v; want %s", name, topology.FormatLSN(got), err, want)
		}
	}
	for _, bad := range []string{"", "00000001000000000000001", "000000010000000000000100", "00000001000000000000000G"} {
		if _, err := topology.SegmentEnd(bad); err == nil {
			t.Errorf("SegmentEnd(%q): want an error", bad)
		}
	}
}

func TestNext_takeover(t *testing.T) {
	// The primary and a standby lost: accept_data_loss_at_lsn at exactly the survivor's position promotes
	// it, and the lost members are replaced after; at any other position, or unset, the engine refuses
	// and names the position to accept.
	lost := func(accept string) topology.Cluster {
		c := lose(whole("n1", "n2", "n3"), "n1", "n2")
		c.ViewKnown = false
		for i := range c.Members {
			c.Members[i].Role = ""
		}
		c.Members[2].WAL = &topology.WAL{Received: 0x9A0F2D8, Replayed: 0x9A0F100, Timeline: 3}
		c.AcceptLossAt = accept
		return c
	}
	steps, err := topology.Steps(lost("0/9a0f2d8"))
	want := []string{"promote n3, accepting the loss after 0/9A0F2D8", "replace n1", "replace n2"}
	if err != nil || !slices.Equal(stepStrings(steps), want) {
		t.Fatalf("Steps: %q, %v; want %q", stepStrings(steps), err, want)
	}
	if steps[0].Kind != topology.StepTakeOver || steps[0].Node != "n3" || steps[0].At != "0/9A0F2D8" ||
		!strings.Contains(steps[0].Reason, "acknowledged commits only the lost members held (after 0/9A0F2D8) are given up") {
		t.Errorf("the takeover step: %+v", steps[0])
	}
	for _, tc := range []struct{ accept, want string }{
		{"", `set accept_data_loss_at_lsn = "0/9A0F2D8" and apply`},
		{"0/9A0F100", `accept_data_loss_at_lsn is "0/9A0F100", which accepts the loss only at exactly that position, and n3 is at 0/9A0F2D8`},
	} {
		if _, _, err := topology.Next(lost(tc.accept)); !errors.Is(err, topology.ErrNoElection) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("accept_data_loss_at_lsn %q: %v; want ErrNoElection saying %q", tc.accept, err, tc.want)
		}
	}
	// Two survivors (five members, three etcd voters, two of them lost with the primary): the override
	// promotes only a lone survivor.
	c := lose(whole("n1", "n2", "n3", "n4", "n5"), "n1", "n2")
	c.ViewKnown = false
	for i := range c.Members {
		c.Members[i].Role = ""
		c.Members[i].WAL = &topology.WAL{Received: 0x9A0F2D8}
	}
	c.AcceptLossAt = "0/9A0F2D8"
	if _, _, err := topology.Next(c); !errors.Is(err, topology.ErrNoElection) || !strings.Contains(err.Error(), "it promotes the one member left, and 3 are") {
		t.Errorf("three survivors: %v; want ErrNoElection saying the override promotes one member only", err)
	}
}

// TestSteps_restartOrder: settings that wait for a restart restart the standbys first and the leader last,
// unless the leader lowers a setting a hot standby must not have below its primary's: then the leader goes
// first. The same rule on both platforms.
func TestSteps_restartOrder(t *testing.T) {
	for _, engine := range []bool{false, true} {
		for _, tc := range []struct {
			lowers []string
			want   []string
		}{
			{nil, []string{"restart n2", "restart n3", "restart n1"}},
			{[]string{"max_connections"}, []string{"restart n1", "restart n2", "restart n3"}},
		} {
			c := whole("n1", "n2", "n3")
			c.EnginePromotes = engine
			for i := range c.Members {
				c.Members[i].PendingRestart = []string{"max_connections"}
				if engine {
					c.Members[i].Etcd = false
					c.Members[i].WAL = &topology.WAL{Received: 0x3000000, Timeline: 1}
				}
				if i == 0 {
					c.Members[i].RestartLowers = tc.lowers
				}
			}
			steps, err := topology.Steps(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := stepStrings(steps); !slices.Equal(got, tc.want) {
				t.Errorf("engine promotes %v, leader lowers %v: steps %q, want %q", engine, tc.lowers, got, tc.want)
			}
			if len(tc.lowers) > 0 && !strings.Contains(steps[0].Reason, "lowers max_connections") {
				t.Errorf("the leader's restart does not say why it goes first: %s", steps[0].Reason)
			}
		}
	}
}
