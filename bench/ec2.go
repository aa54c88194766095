package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// EC2Bench is the EC2 platform's own timings on the node simulator (moto for the AWS APIs; each instance a
// network namespace with real etcd, Patroni and PostgreSQL), each beside the floor that the platform cannot
// beat, as a ratio:
//   - create (terraform apply of a new 3-node cluster) beside the nodes' own forming: from the first
//     instance's boot to every standby streaming, as an observer polling Patroni sees it;
//   - failover, from the primary's instance terminated until the same connection_uri takes a write, beside
//     Patroni's ttl + loop_wait (the leader key must expire before a standby may take over);
//   - replacement of the lost node (terraform apply) beside that node's own boot and seed: from its new
//     instance's boot to it streaming;
//   - a hand switchover (POST /switchover) until the new primary takes a write, for the roll's floor;
//   - a rolling replacement of all three nodes (a new instance type) beside three replacements' floors plus
//     one switchover;
//   - every node lost (all three instances terminated once the archive holds everything) and the apply's
//     restore from the archive, per GiB of database, beside pgBackRest's own restore of the same base
//     backup by hand on a node with PostgreSQL replaying the same WAL to its end, and beside the nodes' own
//     restore and forming (first boot to whole: that restore, etcd, the standbys' copies);
//   - the calls one refresh of the healthy cluster makes to AWS, Patroni and PostgreSQL, per kind, beside
//     the fewest that read what it reports (refreshFloor).
type EC2Bench struct {
	Server
	Runs            int     `json:"runs"`
	Note            string  `json:"note"`
	PatroniTTL      int     `json:"patroni_ttl"`
	PatroniLoopWait int     `json:"patroni_loop_wait"`
	Create          Stat    `json:"create_seconds"`
	CreateFloor     Stat    `json:"create_floor_seconds"`
	Failover        Stat    `json:"failover_seconds"`
	FailoverFloor   float64 `json:"failover_floor_seconds"`
	Replace         Stat    `json:"replace_seconds"`
	ReplaceFloor    Stat    `json:"replace_floor_seconds"`
	Switchover      Stat    `json:"switchover_seconds"`
	Roll            Stat    `json:"roll_seconds"`
	RollFloor       Stat    `json:"roll_floor_seconds"`
	CreateRatio     Stat    `json:"create_over_floor"`
	FailoverRatio   Stat    `json:"failover_over_floor"`
	ReplaceRatio    Stat    `json:"replace_over_floor"`
	RollRatio       Stat    `json:"roll_over_floor"`
	// Restore is every node lost and the apply's restore from the archive; RestoreFloor pgBackRest's own
	// restore of the same base backup by hand on a node, with PostgreSQL replaying the same WAL to its end;
	// RestoreNodes the nodes' own restore and forming (first boot to whole); RestoreGiB the database's size.
	Restore           Stat `json:"restore_seconds"`
	RestoreFloor      Stat `json:"restore_floor_seconds"`
	RestoreNodes      Stat `json:"restore_nodes_seconds"`
	RestoreGiB        Stat `json:"restore_gib"`
	RestorePerGiB     Stat `json:"restore_seconds_per_gib"`
	RestoreRatio      Stat `json:"restore_over_floor"`
	RestoreNodesRatio Stat `json:"restore_over_nodes"`
	RestoredRowsLost  int  `json:"archived_rows_lost"`
	// Refresh is one refresh of the healthy new cluster (terraform plan -refresh-only): its time, the calls
	// it made to AWS, Patroni and PostgreSQL (from the provider's debug log) and their floor.
	RefreshSeconds   Stat             `json:"refresh_seconds"`
	RefreshCalls     Stat             `json:"refresh_calls"`
	RefreshFloor     Stat             `json:"refresh_calls_floor"`
	RefreshRatio     Stat             `json:"refresh_calls_over_floor"`
	RefreshByKind    []refreshKindRow `json:"refresh_calls_by_kind"`
	RefreshCallsSeen string           `json:"refresh_calls_seen"`
	WritesLost       int              `json:"acknowledged_writes_lost"`
	WritesAcked      int              `json:"acknowledged_writes"`
	runs             []ec2Run
}

// ec2Run is one run's figures, in seconds.
type ec2Run struct {
	create, createFloor, failover, replace, replaceFloor, switchover, roll, rollFloor float64
	acked, lost                                                                       int
	restore, restoreFloor, restoreNodes, restoreGiB                                   float64
	rowsLost                                                                          int
	refresh                                                                           refreshCalls
	refreshFloor                                                                      []callFloor
	server                                                                            Server
}

const (
	ec2Region   = "us-east-1"
	ec2TTL      = 20
	ec2LoopWait = 2
)

var ec2Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// benchEC2 runs the EC2 section runs times on pg's major, each on a simulator of its own.
func benchEC2(env *terraformEnv, pg postgresBin, runs int) (*EC2Bench, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the EC2 section runs the node simulator, which needs root (network namespaces): run `make bench` as root, or leave it out with -only")
	}
	b := &EC2Bench{Runs: runs, PatroniTTL: ec2TTL, PatroniLoopWait: ec2LoopWait, FailoverFloor: ec2TTL + ec2LoopWait}
	var servers []Server
	for i := range runs {
		progress("ec2: run %d of %d, PostgreSQL %d", i+1, runs, pg.Major)
		r, err := ec2OneRun(env, pg.Major, i)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		b.runs, servers = append(b.runs, r), append(servers, r.server)
	}
	b.Server = Server{PostgresMajor: pg.Major, ServerVersion: serverVersions(servers...)}
	b.Note = fmt.Sprintf("node simulator on this machine: moto for EC2/SSM/S3/IAM, each instance a network namespace running etcd, Patroni 4 and PostgreSQL %s, "+
		"pgBackRest archiving to moto's S3; Patroni ttl %d s, loop_wait %d s; EC2's own launch latency is not modelled (an instance boots as soon as the simulator sees it)", b.ServerVersion, ec2TTL, ec2LoopWait)
	col := func(f func(ec2Run) float64) Stat {
		var s []float64
		for _, r := range b.runs {
			s = append(s, f(r))
		}
		return newStat(s)
	}
	b.Create, b.CreateFloor = col(func(r ec2Run) float64 { return r.create }), col(func(r ec2Run) float64 { return r.createFloor })
	b.Failover = col(func(r ec2Run) float64 { return r.failover })
	b.Replace, b.ReplaceFloor = col(func(r ec2Run) float64 { return r.replace }), col(func(r ec2Run) float64 { return r.replaceFloor })
	b.Switchover = col(func(r ec2Run) float64 { return r.switchover })
	b.Roll, b.RollFloor = col(func(r ec2Run) float64 { return r.roll }), col(func(r ec2Run) float64 { return r.rollFloor })
	b.CreateRatio = col(func(r ec2Run) float64 { return r.create / r.createFloor })
	b.FailoverRatio = col(func(r ec2Run) float64 { return r.failover / b.FailoverFloor })
	b.ReplaceRatio = col(func(r ec2Run) float64 { return r.replace / r.replaceFloor })
	b.RollRatio = col(func(r ec2Run) float64 { return r.roll / r.rollFloor })
	b.Restore, b.RestoreFloor = col(func(r ec2Run) float64 { return r.restore }), col(func(r ec2Run) float64 { return r.restoreFloor })
	b.RestoreNodes = col(func(r ec2Run) float64 { return r.restoreNodes })
	b.RestoreNodesRatio = col(func(r ec2Run) float64 { return r.restore / r.restoreNodes })
	b.RestoreGiB = col(func(r ec2Run) float64 { return r.restoreGiB })
	b.RestorePerGiB = col(func(r ec2Run) float64 { return r.restore / r.restoreGiB })
	b.RestoreRatio = col(func(r ec2Run) float64 { return r.restore / r.restoreFloor })
	b.RefreshSeconds = col(func(r ec2Run) float64 { return r.refresh.Seconds })
	b.RefreshCalls = col(func(r ec2Run) float64 { return float64(r.refresh.total()) })
	b.RefreshFloor = col(func(r ec2Run) float64 { return float64(floorTotal(r.refreshFloor)) })
	b.RefreshRatio = col(func(r ec2Run) float64 { return float64(r.refresh.total()) / float64(floorTotal(r.refreshFloor)) })
	b.RefreshByKind = byKind(b.runs)
	b.RefreshCallsSeen = b.runs[len(b.runs)-1].refresh.String()
	for _, r := range b.runs {
		b.WritesAcked += r.acked
		b.WritesLost += r.lost
		b.RestoredRowsLost += r.rowsLost
	}
	return b, nil
}

// ec2OneRun is one run of the section, the cluster on PostgreSQL major.
func ec2OneRun(tf *terraformEnv, major, i int) (r ec2Run, err error) {
	ctx := context.Background()
	fx, err := nodesim.NewEC2Env(ctx, nodesim.EC2EnvOptions{Region: ec2Region, Zones: ec2Zones, Bucket: "bench-archive"})
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, fx.Close()) }()
	// Interrupted (Ctrl-C, or SIGTERM to the bench's process group), the run removes its simulator before
	// the bench exits: its moto, stunnel and nodes live in the simulator's own cgroup and namespaces, which
	// the signal does not reach.
	closeOnSignal := make(chan os.Signal, 1)
	signal.Notify(closeOnSignal, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() { signal.Stop(closeOnSignal); close(done) }()
	go func() {
		select {
		case sig := <-closeOnSignal:
			fmt.Fprintf(os.Stderr, "bench: %s: removing simulator %s\n", sig, fx.Sim.ID)
			if err := fx.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bench: removing simulator %s: %v (go run ./cmd/nodesim -clean %s)\n", fx.Sim.ID, err, fx.Sim.ID)
			}
			os.Exit(130)
		case <-done:
		}
	}()
	dir, err := tf.workspace(fmt.Sprintf("ec2-%d", i), nil)
	if err != nil {
		return r, err
	}
	e := &ec2Env{fx: fx, dir: dir, name: "bench", major: major, env: append(append([]string{}, tf.baseEnv...), "AWS_ACCESS_KEY_ID=nodesim", "AWS_SECRET_ACCESS_KEY=nodesim-secret")}
	e.obs = newObserver(fx)
	defer e.obs.stop()

	// Create.
	if err := e.config("m6id.large"); err != nil {
		return r, err
	}
	start := time.Now()
	if err := e.terraform("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return r, err
	}
	r.create = time.Since(start).Seconds()
	defer func() {
		if derr := e.terraform("destroy", "-auto-approve", "-input=false", "-no-color"); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	firstBoot := e.firstBoot(start)
	whole, ok := e.obs.firstWhole(start)
	if !ok || firstBoot.IsZero() {
		return r, errors.New("the observer never saw the new cluster whole, or no instance booted")
	}
	r.createFloor = whole.Sub(firstBoot).Seconds()
	progress("ec2: created in %.1f s (the nodes' own forming %.1f s)", r.create, r.createFloor)

	out, err := e.outputs()
	if err != nil {
		return r, err
	}
	// One refresh of the healthy cluster, its calls counted.
	if r.refresh, err = e.refresh(); err != nil {
		return r, err
	}
	pages, err := e.walListPages(ctx)
	if err != nil {
		return r, err
	}
	r.refreshFloor = refreshFloor(pages, len(out.InstanceIDs))
	progress("ec2: one refresh %.1f s, %d calls (floor %d): %s", r.refresh.Seconds, r.refresh.total(), floorTotal(r.refreshFloor), r.refresh)
	password, err := e.secret(out.SSMPath + "/superuser-password")
	if err != nil {
		return r, err
	}
	if r.server, err = e.server(ctx, out.ConnectionURI, password); err != nil {
		return r, err
	}
	progress("ec2: the nodes run PostgreSQL %s", r.server.ServerVersion)
	w, err := e.startWriter(out.ConnectionURI, password)
	if err != nil {
		return r, err
	}
	writing := true
	defer func() {
		if writing {
			acked, lost, werr := w.finish(e)
			r.acked, r.lost = acked, lost
			err = errors.Join(err, werr)
		}
	}()

	// Failover: the primary's instance terminated; until the URI takes a write again.
	primary, err := e.obs.leader()
	if err != nil {
		return r, err
	}
	before := w.count()
	t0 := time.Now()
	if err := fx.Terminate(ctx, out.InstanceIDs[primary]); err != nil {
		return r, err
	}
	back, err := w.waitWriteAfter(t0, before, 3*time.Minute)
	if err != nil {
		return r, fmt.Errorf("after terminating the primary %s: %w", primary, err)
	}
	r.failover = back.Sub(t0).Seconds()
	progress("ec2: failover %.1f s (floor %d s)", r.failover, ec2TTL+ec2LoopWait)

	// Replacement of the lost node.
	start = time.Now()
	if err := e.terraform("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return r, err
	}
	r.replace = time.Since(start).Seconds()
	floor, err := e.nodeFloor(primary, start)
	if err != nil {
		return r, err
	}
	r.replaceFloor = floor
	progress("ec2: replaced %s in %.1f s (its own boot and seed %.1f s)", primary, r.replace, r.replaceFloor)

	// A switchover by hand, for the roll's floor.
	if r.switchover, err = e.switchover(ctx, out, w); err != nil {
		return r, err
	}
	progress("ec2: switchover by hand %.1f s", r.switchover)
	// The old primary rejoins as a standby before the roll (which needs every member streaming).
	if err := e.obs.waitSettled(time.Now(), 10*time.Second, 2*time.Minute); err != nil {
		return r, fmt.Errorf("after the switchover: %w", err)
	}

	// Rolling replacement of every node.
	if err := e.config("m6id.xlarge"); err != nil {
		return r, err
	}
	start = time.Now()
	if err := e.terraform("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return r, err
	}
	r.roll = time.Since(start).Seconds()
	var nodes float64
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		f, err := e.nodeFloor(n, start)
		if err != nil {
			return r, err
		}
		nodes += f
	}
	r.rollFloor = nodes + r.switchover
	progress("ec2: rolled 3 nodes in %.1f s (floor %.1f s)", r.roll, r.rollFloor)

	// Every node lost: the writer stops, the archive is brought up to date, every instance terminated;
	// the apply restores the cluster from the archive.
	writing = false
	if r.acked, r.lost, err = w.finish(e); err != nil {
		return r, err
	}
	if r.restoreGiB, err = e.fillAndArchive(ctx, out.ConnectionURI, password); err != nil {
		return r, err
	}
	live := e.liveInstances()
	if len(live) == 0 {
		return r, errors.New("no instance runs before the loss of every node")
	}
	label, timeline, err := e.archivedEnd(ctx, live[0])
	if err != nil {
		return r, err
	}
	for _, id := range live {
		if err := fx.Terminate(ctx, id); err != nil {
			return r, err
		}
	}
	if err := e.waitAllTerminated(2 * time.Minute); err != nil {
		return r, err
	}
	start = time.Now()
	if err := e.terraform("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return r, err
	}
	r.restore = time.Since(start).Seconds()
	firstBoot = e.firstBoot(start)
	whole, ok = e.obs.firstWhole(firstBoot)
	if !ok || firstBoot.IsZero() {
		return r, errors.New("the observer never saw the restored cluster whole")
	}
	r.restoreNodes = whole.Sub(firstBoot).Seconds()
	if r.rowsLost, err = e.rowsLost(ctx, out.ConnectionURI, password, w.acked); err != nil {
		return r, err
	}
	leader, err := e.obs.leader()
	if err != nil {
		return r, err
	}
	restoredOut, err := e.outputs()
	if err != nil {
		return r, err
	}
	if r.restoreFloor, err = e.handRestore(ctx, restoredOut.InstanceIDs[leader], label, timeline); err != nil {
		return r, err
	}
	progress("ec2: every node lost, restored %.2f GiB in %.1f s (the same restore by hand %.1f s: backup %s, timeline %d to its end; the nodes' own restore and forming %.1f s), %d archived rows lost",
		r.restoreGiB, r.restore, r.restoreFloor, label, timeline, r.restoreNodes, r.rowsLost)
	return r, nil
}

func (b *EC2Bench) print(w *os.File) {
	fmt.Fprintf(w, "\nEC2 platform on the node simulator, medians of %d runs (%s)\n", b.Runs, b.Note)
	row := func(label string, s, floor Stat, ratio Stat) {
		fmt.Fprintf(w, "  %-40s %s   floor %s   ratio %s\n", label, s.Format("s"), floor.Format("s"), ratio.Format(""))
	}
	row("create (terraform apply)", b.Create, b.CreateFloor, b.CreateRatio)
	row("failover until the URI takes writes", b.Failover, newStat([]float64{b.FailoverFloor}), b.FailoverRatio)
	row("lost node replaced (terraform apply)", b.Replace, b.ReplaceFloor, b.ReplaceRatio)
	fmt.Fprintf(w, "  %-40s %s\n", "switchover by hand (POST /switchover)", b.Switchover.Format("s"))
	row("3-node rolling replacement", b.Roll, b.RollFloor, b.RollRatio)
	fmt.Fprintf(w, "  %-40s %d of %d\n", "acknowledged commits lost", b.WritesLost, b.WritesAcked)
	row("every node lost, restored (apply)", b.Restore, b.RestoreFloor, b.RestoreRatio)
	fmt.Fprintf(w, "  %-40s %s   ratio %s\n", "the nodes' own restore and forming", b.RestoreNodes.Format("s"), b.RestoreNodesRatio.Format(""))
	fmt.Fprintf(w, "  %-40s %s   per GiB %s   archived rows lost: %d\n", "database size restored", b.RestoreGiB.Format("GiB"), b.RestorePerGiB.Format("s"), b.RestoredRowsLost)
	fmt.Fprintf(w, "  %-40s %s\n", "one refresh (plan -refresh-only)", b.RefreshSeconds.Format("s"))
	fmt.Fprintf(w, "  %-40s %s   floor %s   ratio %s\n", "calls one refresh makes", b.RefreshCalls.Format(""), b.RefreshFloor.Format(""), b.RefreshRatio.Format(""))
	for _, k := range b.RefreshByKind {
		fmt.Fprintf(w, "    %-38s %s   floor %d: %s\n", k.Kind, k.Calls.Format(""), k.Floor, k.Reads)
	}
	fmt.Fprintf(w, "    calls of the last run: %s\n", b.RefreshCallsSeen)
	fmt.Fprintln(w, "  floors: create, the nodes' own forming (first boot to every standby streaming); failover, Patroni's ttl + loop_wait;")
	fmt.Fprintln(w, "  replacement, the node's own boot and seed; roll, three such plus the hand switchover; restore, pgBackRest's restore")
	fmt.Fprintln(w, "  of the same base backup by hand on a node and PostgreSQL replaying the same WAL to its end (no etcd, Patroni or")
	fmt.Fprintln(w, "  standbys); the nodes' own restore and forming is first boot to whole (that restore, etcd, the standbys' copies)")
}
