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
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// ec2Env is one run's simulator, its Terraform working directory and the cluster's observer.
type ec2Env struct {
	fx   *nodesim.EC2Env
	dir  string
	env  []string
	name string
	// major is the cluster's postgres_major.
	major int
	obs   *observer
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
	if err := conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal() - 1)").Scan(&seg); err != nil {
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

// server reads the server_version of the server uri reaches, checked against the cluster's major.
func (e *ec2Env) server(ctx context.Context, uri, password string) (Server, error) {
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		return Server{}, fmt.Errorf("reading server_version: %w", err)
	}
	defer conn.Close(ctx)
	var version string
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num')::int").Scan(&version, &num); err != nil {
		return Server{}, fmt.Errorf("reading server_version: %w", err)
	}
	return checkServer(e.major, version, num)
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

// archiveOptions are the cluster's pgBackRest options: the bucket, under clusters/<name>.
func (e *ec2Env) archiveOptions() map[string]string {
	return archive.Spec{Bucket: e.fx.Bucket, Prefix: "clusters/" + e.name, Region: ec2Region,
		Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions()
}

// config writes the cluster's configuration: three nodes in three zones, pgBackRest to the bucket, quick
// Patroni timings, instance type typ.
func (e *ec2Env) config(typ string) error {
	opts := e.archiveOptions()
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
  postgres_major = %[11]d
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
		strings.Join(subnetLines, "\n"), ec2TTL, ec2LoopWait, e.major)
	return os.WriteFile(filepath.Join(e.dir, "main.tf"), []byte(hcl), 0o644)
}

// terraform runs the Terraform CLI in the simulator's service namespace (where moto and the nodes are).
func (e *ec2Env) terraform(args ...string) error {
	return e.terraformWith(nil, args...)
}

// terraformWith is terraform with extra in the environment, after the run's own.
func (e *ec2Env) terraformWith(extra []string, args ...string) error {
	cmd := e.fx.Sim.Command(context.Background(), "terraform", args...)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.dir, append(append([]string{}, e.env...), extra...), &out, &out
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
	if err := w.waitLeaderWrite(before, candidate, e.obs, 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), nil
}

// walListPages is how many pages of 1,000 keys a listing of the cluster's WAL in the archive takes, as the
// refresh's floor counts it: one, when the simulator's listing (a single page) finds fewer than 1,000 keys.
func (e *ec2Env) walListPages(ctx context.Context) (int, error) {
	loc, ok := archive.LocationOf(e.archiveOptions(), nil, e.name)
	if !ok {
		return 0, fmt.Errorf("the bench's archive options name no S3 location")
	}
	keys, err := e.fx.Sim.ListObjects(ctx, ec2Region, loc.Bucket, loc.Keys[0])
	switch {
	case err != nil:
		return 0, fmt.Errorf("listing the archive's WAL: %w", err)
	case len(keys) == 0:
		return 0, fmt.Errorf("the archive holds no WAL under s3://%s/%s: the bench's location is wrong", loc.Bucket, loc.Keys[0])
	case len(keys) >= 1000:
		return 0, fmt.Errorf("the archive holds 1,000 or more WAL objects: count the listing's pages with a paginated listing")
	}
	return 1, nil
}
