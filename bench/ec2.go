package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
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
//     restore from the archive, per GiB of database, beside the nodes' own restore and forming (first boot
//     to whole: pgBackRest's restore and recovery on the node that restores, etcd, the standbys' copies).
type EC2Bench struct {
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
	// Restore is every node lost and the apply's restore from the archive, RestoreFloor the nodes' own
	// restore and forming (first boot to whole), RestoreGiB the database's size restored.
	Restore          Stat `json:"restore_seconds"`
	RestoreFloor     Stat `json:"restore_floor_seconds"`
	RestoreGiB       Stat `json:"restore_gib"`
	RestorePerGiB    Stat `json:"restore_seconds_per_gib"`
	RestoreRatio     Stat `json:"restore_over_floor"`
	RestoredRowsLost int  `json:"archived_rows_lost"`
	WritesLost       int  `json:"acknowledged_writes_lost"`
	WritesAcked      int  `json:"acknowledged_writes"`
	runs             []ec2Run
}

// ec2Run is one run's figures, in seconds.
type ec2Run struct {
	create, createFloor, failover, replace, replaceFloor, switchover, roll, rollFloor float64
	acked, lost                                                                       int
	restore, restoreFloor, restoreGiB                                                 float64
	rowsLost                                                                          int
}

const (
	ec2Region   = "us-east-1"
	ec2TTL      = 20
	ec2LoopWait = 2
)

var ec2Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// benchEC2 runs the EC2 section runs times, each on a simulator of its own.
func benchEC2(env *terraformEnv, runs int) (*EC2Bench, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the EC2 section runs the node simulator, which needs root (network namespaces): run `make bench` as root, or leave it out with -only")
	}
	b := &EC2Bench{Runs: runs, PatroniTTL: ec2TTL, PatroniLoopWait: ec2LoopWait, FailoverFloor: ec2TTL + ec2LoopWait,
		Note: fmt.Sprintf("node simulator on this machine: moto for EC2/SSM/S3/IAM, each instance a network namespace running etcd, Patroni 4 and PostgreSQL 15, "+
			"pgBackRest archiving to moto's S3; Patroni ttl %d s, loop_wait %d s; EC2's own launch latency is not modelled (an instance boots as soon as the simulator sees it)", ec2TTL, ec2LoopWait)}
	for i := range runs {
		progress("ec2: run %d of %d", i+1, runs)
		r, err := ec2OneRun(env, i)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		b.runs = append(b.runs, r)
	}
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
	b.RestoreGiB = col(func(r ec2Run) float64 { return r.restoreGiB })
	b.RestorePerGiB = col(func(r ec2Run) float64 { return r.restore / r.restoreGiB })
	b.RestoreRatio = col(func(r ec2Run) float64 { return r.restore / r.restoreFloor })
	for _, r := range b.runs {
		b.WritesAcked += r.acked
		b.WritesLost += r.lost
		b.RestoredRowsLost += r.rowsLost
	}
	return b, nil
}

// ec2Env is one run's simulator, its Terraform working directory and the cluster's observer.
type ec2Env struct {
	fx   *nodesim.EC2Env
	dir  string
	env  []string
	name string
	obs  *observer
}

func ec2OneRun(tf *terraformEnv, i int) (r ec2Run, err error) {
	ctx := context.Background()
	fx, err := nodesim.NewEC2Env(ctx, nodesim.EC2EnvOptions{Region: ec2Region, Zones: ec2Zones, Bucket: "bench-archive"})
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, fx.Close()) }()
	dir, err := tf.workspace(fmt.Sprintf("ec2-%d", i), nil)
	if err != nil {
		return r, err
	}
	e := &ec2Env{fx: fx, dir: dir, name: "bench", env: append(append([]string{}, tf.baseEnv...), "AWS_ACCESS_KEY_ID=nodesim", "AWS_SECRET_ACCESS_KEY=nodesim-secret")}
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
	password, err := e.secret(out.SSMPath + "/superuser-password")
	if err != nil {
		return r, err
	}
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
	for _, id := range e.liveInstances() {
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
	r.restoreFloor = whole.Sub(firstBoot).Seconds()
	if r.rowsLost, err = e.rowsLost(ctx, out.ConnectionURI, password, w.acked); err != nil {
		return r, err
	}
	progress("ec2: every node lost, restored %.2f GiB in %.1f s (the nodes' own restore and forming %.1f s), %d archived rows lost",
		r.restoreGiB, r.restore, r.restoreFloor, r.rowsLost)
	return r, nil
}

// fillBytes is how much data the restore figure adds to the database (beside the writer's rows).
const fillBytes = 256 << 20

// fillAndArchive adds fillBytes of rows, switches WAL and waits until the archiver has archived the segment
// (so the archive holds everything), and returns the database's size in GiB.
func (e *ec2Env) fillAndArchive(ctx context.Context, uri, password string) (float64, error) {
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE bench_fill AS SELECT g AS id, repeat(md5(g::text), 30) AS pad FROM generate_series(1, $1::int) g", fillBytes/1000); err != nil {
		return 0, err
	}
	var seg string
	if err := conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&seg); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var last string
		if err := conn.QueryRow(ctx, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver").Scan(&last); err != nil {
			return 0, err
		}
		if len(last) >= 24 && last[:24] >= seg {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("segment %s not archived within 3 minutes (last archived %q)", seg, last)
		}
		time.Sleep(500 * time.Millisecond) //nolint:forbidigo // polling the archiver's progress
	}
	var size int64
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&size); err != nil {
		return 0, err
	}
	return float64(size) / (1 << 30), nil
}

// liveInstances are the instances the simulator runs now.
func (e *ec2Env) liveInstances() []string {
	state := map[string]string{}
	for _, ev := range e.fx.Bridge.Events() {
		state[ev.InstanceID] = ev.Kind
	}
	var out []string
	for id, kind := range state {
		if kind == nodesim.EventBoot || kind == nodesim.EventBooted {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// waitAllTerminated waits until the simulator runs no instance.
func (e *ec2Env) waitAllTerminated(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for len(e.liveInstances()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("instances %v still run %s after the terminate", e.liveInstances(), limit)
		}
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // polling the simulator's log
	}
	return nil
}

// rowsLost counts the writer's acknowledged rows missing from the restored cluster (all were archived
// before the loss, so none may be).
func (e *ec2Env) rowsLost(ctx context.Context, uri, password string, acked []int64) (int, error) {
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var found int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM bench_acked WHERE id = ANY($1)", acked).Scan(&found); err != nil {
		return 0, err
	}
	return len(acked) - found, nil
}

// config writes the cluster's configuration: three nodes in three zones, pgBackRest to the bucket, quick
// Patroni timings, instance type typ.
func (e *ec2Env) config(typ string) error {
	opts := archive.Spec{Bucket: e.fx.Bucket, Prefix: "clusters/" + e.name, Region: ec2Region,
		Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions()
	var optLines, subnetLines, nodeLines []string
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		optLines = append(optLines, fmt.Sprintf("      %q = %q", k, opts[k]))
	}
	for i, z := range ec2Zones {
		subnetLines = append(subnetLines, fmt.Sprintf("      %q = %q", z, e.fx.Subnets[z]))
		nodeLines = append(nodeLines, fmt.Sprintf("  node {\n    name = \"node-%d\"\n    zone = %q\n  }", i+1, z))
	}
	hcl := tfwork.SimProvider(ec2Region, e.fx.Sim.MotoURL()) + fmt.Sprintf(`
resource "pgnvme_cluster" "db" {
  name           = %[3]q
  postgres_major = 15
%[4]s
  parameters = { shared_buffers = "64MB", max_connections = "50" }
  archive {
    pgbackrest_options = {
%[5]s
    }
  }
  aws {
    instance_type       = %[6]q
    ami_id              = %[7]q
    subnet_ids = {
%[8]s
    }
    deletion_protection = false
    patroni {
      ttl           = %[9]d
      loop_wait     = %[10]d
      retry_timeout = 4
    }
  }
}

output "connection_uri" { value = pgnvme_cluster.db.connection_uri }
output "ssm_path" { value = pgnvme_cluster.db.aws.ssm_parameter_path }
output "instance_ids" { value = pgnvme_cluster.db.aws.instance_ids }
`, ec2Region, e.fx.Sim.MotoURL(), e.name, strings.Join(nodeLines, "\n"), strings.Join(optLines, "\n"), typ, e.fx.AMI,
		strings.Join(subnetLines, "\n"), ec2TTL, ec2LoopWait)
	return os.WriteFile(filepath.Join(e.dir, "main.tf"), []byte(hcl), 0o644)
}

// terraform runs the Terraform CLI in the simulator's service namespace (where moto and the nodes are).
func (e *ec2Env) terraform(args ...string) error {
	cmd := e.fx.Sim.Command(context.Background(), "terraform", args...)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.dir, e.env, &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("terraform %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

type ec2Outputs struct {
	ConnectionURI string
	SSMPath       string
	InstanceIDs   map[string]string
}

func (e *ec2Env) outputs() (ec2Outputs, error) {
	cmd := e.fx.Sim.Command(context.Background(), "terraform", "output", "-json")
	cmd.Dir, cmd.Env = e.dir, e.env
	b, err := cmd.Output()
	if err != nil {
		return ec2Outputs{}, fmt.Errorf("terraform output: %w", err)
	}
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return ec2Outputs{}, err
	}
	var o ec2Outputs
	err = errors.Join(json.Unmarshal(raw["connection_uri"].Value, &o.ConnectionURI), json.Unmarshal(raw["ssm_path"].Value, &o.SSMPath),
		json.Unmarshal(raw["instance_ids"].Value, &o.InstanceIDs))
	return o, err
}

func (e *ec2Env) secret(name string) (string, error) {
	return e.fx.Secret(context.Background(), name)
}

// firstBoot is when the simulator began to boot the first instance since since.
func (e *ec2Env) firstBoot(since time.Time) time.Time {
	var first time.Time
	for _, ev := range e.fx.Bridge.Events() {
		if ev.Kind == nodesim.EventBoot && ev.Time.After(since) && (first.IsZero() || ev.Time.Before(first)) {
			first = ev.Time
		}
	}
	return first
}

// nodeFloor is node's own boot and seed after since: from the simulator beginning to boot its new instance
// to the observer seeing it stream.
func (e *ec2Env) nodeFloor(node string, since time.Time) (float64, error) {
	var boot time.Time
	for _, ev := range e.fx.Bridge.Events() {
		if ev.Kind == nodesim.EventBoot && ev.Node == node && ev.Time.After(since) {
			boot = ev.Time
		}
	}
	if boot.IsZero() {
		return 0, fmt.Errorf("no new instance of %s booted", node)
	}
	streamed, ok := e.obs.firstStreaming(node, boot)
	if !ok {
		return 0, fmt.Errorf("the observer never saw %s stream after its boot", node)
	}
	return streamed.Sub(boot).Seconds(), nil
}

// switchover hands the primary to a streaming standby through Patroni's REST API (what an operator would do
// by hand) and returns the time until the connection URI takes a write.
func (e *ec2Env) switchover(ctx context.Context, out ec2Outputs, w *benchWriter) (float64, error) {
	leader, err := e.obs.leader()
	if err != nil {
		return 0, err
	}
	candidate := e.obs.streamingStandby()
	if candidate == "" {
		return 0, errors.New("no standby streams: nothing to switch over to")
	}
	password, err := e.secret(out.SSMPath + "/restapi-password")
	if err != nil {
		return 0, err
	}
	host := e.obs.host(leader)
	body := fmt.Sprintf(`{"leader":%q,"candidate":%q}`, leader, candidate)
	req, err := newRequest(ctx, "POST", "http://"+net.JoinHostPort(host, "8008")+"/switchover", body)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth("patroni", password)
	before := w.count()
	t0 := time.Now()
	resp, err := e.fx.Sim.HTTPClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST /switchover: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST /switchover: %s", resp.Status)
	}
	if err := w.waitLeaderWrite(t0, before, candidate, e.obs, 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), nil
}

// benchWriter inserts a row per commit through the multi-host URI, reconnecting on errors, and remembers the
// acknowledged ids and when each was acknowledged.
type benchWriter struct {
	mu    sync.Mutex
	acked []int64
	at    []time.Time
	uri   string
	pass  string
	stopC chan struct{}
	done  chan struct{}
}

func (e *ec2Env) connect(ctx context.Context, uri, password string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.Password, cfg.DialFunc, cfg.ConnectTimeout = password, e.fx.Sim.DialContext, 3*time.Second
	cfg.TLSConfig = nil
	for _, fb := range cfg.Fallbacks {
		fb.TLSConfig = nil
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func (e *ec2Env) startWriter(uri, password string) (*benchWriter, error) {
	ctx := context.Background()
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_acked (id bigint PRIMARY KEY)"); err != nil {
		return nil, err
	}
	w := &benchWriter{uri: uri, pass: password, stopC: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var id int64
		for {
			select {
			case <-w.stopC:
				if conn != nil {
					_ = conn.Close(ctx)
				}
				return
			default:
			}
			if conn == nil {
				if conn, err = e.connect(ctx, uri, password); err != nil {
					conn = nil
					time.Sleep(100 * time.Millisecond) //nolint:forbidigo // a client's reconnect pause
					continue
				}
			}
			id++
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := conn.Exec(cctx, "INSERT INTO bench_acked VALUES ($1)", id)
			cancel()
			if err != nil {
				_ = conn.Close(ctx)
				conn = nil
				continue
			}
			w.mu.Lock()
			w.acked, w.at = append(w.acked, id), append(w.at, time.Now())
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond) //nolint:forbidigo // a steady, light write rate
		}
	}()
	return w, nil
}

func (w *benchWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitWriteAfter waits until a commit is acknowledged that the writer sent after t0 (its index past
// before, and acknowledged after a gap: the first write the new primary took).
func (w *benchWriter) waitWriteAfter(t0 time.Time, before int, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n, at := len(w.acked), w.at
		w.mu.Unlock()
		// The first commit after a pause of over a second past t0: the writer went through the outage.
		for i := max(before, 1); i < n; i++ {
			if at[i].After(t0) && at[i].Sub(at[i-1]) > time.Second {
				return at[i], nil
			}
		}
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling the writer's own record
	}
	return time.Time{}, fmt.Errorf("no write was acknowledged within %s", limit)
}

// waitLeaderWrite waits until the observer names candidate the running leader and a commit is acknowledged
// after that.
func (w *benchWriter) waitLeaderWrite(t0 time.Time, before int, candidate string, o *observer, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if l, err := o.leader(); err == nil && l == candidate {
			since := time.Now()
			for time.Now().Before(deadline) {
				w.mu.Lock()
				last := time.Time{}
				if n := len(w.at); n > before {
					last = w.at[n-1]
				}
				w.mu.Unlock()
				if last.After(since) {
					return nil
				}
				time.Sleep(20 * time.Millisecond) //nolint:forbidigo // polling the writer's own record
			}
		}
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling the observer's record
	}
	return fmt.Errorf("%s did not take writes within %s", candidate, limit)
}

// finish stops the writer and counts the acknowledged commits missing on the primary.
func (w *benchWriter) finish(e *ec2Env) (acked, lost int, err error) {
	close(w.stopC)
	<-w.done
	ctx := context.Background()
	conn, err := e.connect(ctx, w.uri, w.pass)
	if err != nil {
		return len(w.acked), 0, err
	}
	defer conn.Close(ctx)
	var found int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM bench_acked WHERE id = ANY($1)", w.acked).Scan(&found); err != nil {
		return len(w.acked), 0, err
	}
	return len(w.acked), len(w.acked) - found, nil
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
	fmt.Fprintf(w, "  %-40s %s   per GiB %s   archived rows lost: %d\n", "database size restored", b.RestoreGiB.Format("GiB"), b.RestorePerGiB.Format("s"), b.RestoredRowsLost)
	fmt.Fprintln(w, "  floors: create, the nodes' own forming (first boot to every standby streaming); failover, Patroni's ttl + loop_wait;")
	fmt.Fprintln(w, "  replacement, the node's own boot and seed; roll, three such plus the hand switchover; restore, the nodes' own")
	fmt.Fprintln(w, "  restore and forming (first boot to whole: pgBackRest's restore and recovery on the node, etcd, the standbys' copies)")
}
