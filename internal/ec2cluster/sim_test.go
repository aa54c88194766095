package ec2cluster_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := acctest.RemoveProviderBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the provider built for the tests:", err)
	}
	os.Exit(code)
}

// simRegion has more zones than the cluster's three nodes: a fourth node needs a zone of its own.
const simRegion = "us-east-1"

var simZones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}

// simEnv is a node simulator with its EC2 bridge, a VPC in moto over the simulator's network, an archive
// bucket, and a Terraform working directory whose commands run in the simulator's service namespace (where
// moto answers at 127.0.0.1:5000 and the nodes at their addresses).
type simEnv struct {
	t   *testing.T
	fx  *nodesim.EC2Env
	sim *nodesim.Sim
	// region, zones, bridge, ec2, subnets and ami are the region the configuration's cluster runs in
	// (simRegion, until moveTo).
	region  string
	zones   []string
	bridge  *nodesim.EC2Bridge
	ec2     *ec2.Client
	subnets map[string]string
	ami     string
	dir     string
	env     []string
	bucket  string
	// params is the cluster's parameters in HCL ("" for the first ones); fourth adds node-4; launch adds
	// lines to the aws block (launch settings such as root_volume_gib).
	params string
	fourth bool
	launch string
	// iamEnforced: enforceIAM ran; the configurations give the nodes their archive's policy.
	iamEnforced bool
	// backup is the cluster's backup block in HCL ("" for none); restore its restore block; accept is
	// accept_data_loss_at_lsn ("" for none).
	backup, restore, accept string
	// tls is the cluster's tls block in HCL ("" for none); roots, once set, are the authority the test's
	// connections verify the nodes with (sslmode from the URI, verify-full with TLS).
	tls   string
	roots *x509.CertPool
}

// newSimEnv starts a simulator with its EC2 environment and a Terraform working directory for t.
//
// Each simulator is its own (namespaces, cgroups, moto, bucket), so the tests that make one call
// t.Parallel: go test runs two at a time on two CPUs, and the TLS tests then run beside the long lifecycle
// test rather than after it (most of their time is waiting on the nodes' boots and timers).
func newSimEnv(t *testing.T) *simEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fx := acctest.StartEC2Env(ctx, t, nodesim.EC2EnvOptions{Region: simRegion, Zones: simZones, Bucket: "tf-acc-archive"})
	e := &simEnv{t: t, fx: fx, sim: fx.Sim, region: fx.Region, zones: simZones, bridge: fx.Bridge, ec2: fx.EC2, subnets: fx.Subnets, ami: fx.AMI, bucket: fx.Bucket}
	e.dir = t.TempDir()
	e.env = append(append(os.Environ(), tfwork.CLIEnv(acctest.TerraformCLIConfig(t, acctest.ProviderBinary(t)))...),
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"TF_LOG_PROVIDER=INFO", "TF_LOG_PATH="+filepath.Join(e.dir, "terraform.log"))
	return e
}

// refreshEvery is what the tests that wait for something a refresh reports (archive_status) leave between
// two refreshes: a refresh reads the whole cluster (EC2, Patroni, the archive) and takes seconds of CPU.
const refreshEvery = 5 * time.Second

// refreshUntil refreshes the state (terraform apply -refresh-only) until check, reading it, reports done,
// failing the test after timeout.
func (e *simEnv) refreshUntil(timeout time.Duration, what string, check func() (bool, string)) {
	e.t.Helper()
	acctest.WaitForEvery(e.t, timeout, refreshEvery, what, func() (bool, string) {
		e.mustTerraform("apply", "-refresh-only", "-auto-approve", "-no-color", "-input=false")
		return check()
	})
}

// enforceIAM turns IAM enforcement on in the simulator's moto (nodesim.Sim.EnforceIAM): from then on the
// provider signs as an IAM user whose only policy is the published operator policy
// (awsclient.OperatorPolicy, with moto's own names of some S3 actions: acctest.PolicyOnMoto), each node
// as its instance profile's role, with the policy the provider gave it, and the test's own checks as the
// simulator.
func (e *simEnv) enforceIAM(ctx context.Context) {
	e.t.Helper()
	op := e.enforceIAMUsers(ctx, map[string]string{"operator": awsclient.OperatorPolicy()})["operator"]
	e.env = append(e.env, "AWS_ACCESS_KEY_ID="+op.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+op.SecretAccessKey)
}

// enforceIAMUsers turns IAM enforcement on as enforceIAM does, with an IAM user for each of users (name ->
// policy, given with moto's own names added), and returns their credentials; Terraform's are left as they
// were.
func (e *simEnv) enforceIAMUsers(ctx context.Context, users map[string]string) map[string]aws.Credentials {
	e.t.Helper()
	onMoto := map[string]string{}
	for u, doc := range users {
		onMoto[u] = acctest.PolicyOnMoto(e.t, doc)
	}
	creds, err := e.sim.EnforceIAM(ctx, onMoto)
	if err != nil {
		e.t.Fatal(err)
	}
	e.iamEnforced = true
	return creds
}

// moveTo makes the configurations written from now on run their cluster in region, in zones (at least
// three), archiving to bucket there: the simulator gets an EC2 bridge and a VPC in region
// (nodesim.EC2Env.InRegion). The nodes of the first region must be gone (their addresses are reused).
func (e *simEnv) moveTo(ctx context.Context, region string, zones []string, bucket string) {
	e.t.Helper()
	fx, err := e.fx.InRegion(ctx, nodesim.EC2EnvOptions{Region: region, Zones: zones})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := fx.Close(); err != nil {
			e.t.Errorf("closing the bridge in %s: %v", region, err)
		}
	})
	e.region, e.zones, e.bridge, e.ec2, e.subnets, e.ami, e.bucket = region, zones, fx.Bridge, fx.EC2, fx.Subnets, fx.AMI, bucket
}

// config writes the configuration: three nodes in three zones, archived with pgBackRest to the bucket at
// the simulator's endpoint, quick Patroni timings.
func (e *simEnv) config(name, instanceType string, deletionProtection bool) {
	e.t.Helper()
	opts := archive.Spec{Bucket: e.bucket, Prefix: "clusters/" + name, Region: e.region,
		Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions()
	var optLines, subnetLines []string
	for _, k := range sortedKeys(opts) {
		optLines = append(optLines, fmt.Sprintf("      %q = %q", k, opts[k]))
	}
	for _, z := range e.zones {
		subnetLines = append(subnetLines, fmt.Sprintf("      %q = %q", z, e.subnets[z]))
	}
	params := e.params
	if params == "" {
		params = `{ shared_buffers = "64MB", max_connections = "50" }`
	}
	accept := ""
	if e.accept != "" {
		accept = fmt.Sprintf("\n  accept_data_loss_at_lsn = %q", e.accept)
	}
	fourth := ""
	if e.fourth {
		fourth = fmt.Sprintf("\n  node {\n    name = \"node-4\"\n    zone = %q\n  }", e.zones[3])
	}
	launch := e.launch
	if e.iamEnforced && !strings.Contains(launch, "node_policy_json") {
		// The nodes' grant on their archive, as pgnvme_archive_bucket's node_policy_json gives it: under IAM
		// enforcement the nodes act as their role, which has only what the provider gave it.
		launch += "\n    node_policy_json = <<-EOT\n" + archive.Spec{Bucket: e.bucket, Prefix: "clusters/" + name, Region: e.region}.NodePolicyJSON() + "\n    EOT"
	}
	hcl := tfwork.SimProvider(e.region, e.sim.MotoURL()) + fmt.Sprintf(`
resource "pgnvme_cluster" "db" {
  name           = %[3]q
  node {
    name = "node-1"
    zone = %[15]q
  }
  node {
    name = "node-2"
    zone = %[16]q
  }
  node {
    name = "node-3"
    zone = %[17]q
  }%[10]s%[12]s%[13]s%[14]s
  parameters = %[9]s
  archive {
    pgbackrest_options = {
%[4]s
    }
  }
  aws {
    instance_type = %[5]q
    ami_id        = %[6]q
    subnet_ids = {
%[7]s
    }
    tags                = { team = "tf-acc" }
    load_balancer       = true
    deletion_protection = %[8]t%[11]s
    patroni {
      ttl           = 20
      loop_wait     = 2
      retry_timeout = 4
    }
  }
}

output "connection_uri" { value = pgnvme_cluster.db.connection_uri }
output "read_only_connection_uri" { value = pgnvme_cluster.db.read_only_connection_uri }
`, e.region, e.sim.MotoURL(), name, strings.Join(optLines, "\n"), instanceType, e.ami, strings.Join(subnetLines, "\n"), deletionProtection, params, fourth, launch, e.backup+e.tls, e.restore, accept,
		e.zones[0], e.zones[1], e.zones[2])
	if err := os.WriteFile(filepath.Join(e.dir, "main.tf"), []byte(hcl), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// terraform runs the Terraform CLI in the service namespace; it returns the combined output and error.
// A node that fails to boot stops the command at once (the apply would wait for Patroni until its timeout).
func (e *simEnv) terraform(args ...string) (string, error) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	argv := append([]string{"--net=/run/netns/" + e.sim.ServiceNamespace(), "--", "terraform"}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", argv...)
	cmd.Dir, cmd.Env = e.dir, e.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	failed := make(chan string, 1)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for _, ev := range e.bridge.Events() {
					if ev.Kind == "boot-failed" && ev.Time.After(start) {
						failed <- ev.String()
						cancel()
						return
					}
				}
			}
		}
	}()
	err := cmd.Run()
	select {
	case f := <-failed:
		return out.String(), fmt.Errorf("a node failed to boot, terraform stopped: %s", f)
	default:
	}
	return out.String(), err
}

// mustTerraform runs terraform and fails the test (with the nodes' logs) when it fails; it returns the
// output and the seconds it took.
func (e *simEnv) mustTerraform(args ...string) (string, float64) {
	e.t.Helper()
	start := time.Now()
	out, err := e.terraform(args...)
	if err != nil {
		e.t.Fatalf("terraform %s: %v\n%s\n%s", strings.Join(args, " "), err, out, e.logs())
	}
	return out, time.Since(start).Seconds()
}

func (e *simEnv) logs() string {
	var b strings.Builder
	if log, err := os.ReadFile(filepath.Join(e.dir, "terraform.log")); err == nil {
		keep := filepath.Join(os.TempDir(), "ec2cluster-"+e.t.Name()+"-terraform.log")
		if os.WriteFile(keep, log, 0o644) == nil {
			fmt.Fprintf(&b, "terraform's log: %s\n", keep)
		}
	}
	if out, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err == nil {
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				fmt.Fprintf(&b, "moto: %s %s launched %s reason %q\n", aws.ToString(in.InstanceId), in.State.Name,
					aws.ToTime(in.LaunchTime).Format("15:04:05"), aws.ToString(in.StateTransitionReason))
			}
		}
	}
	for _, ev := range e.bridge.Events() {
		fmt.Fprintf(&b, "%s %s %s %s %s\n", ev.Time.Format("15:04:05.0"), ev.Kind, ev.Node, ev.InstanceID, ev.Detail)
	}
	return b.String()
}

// state is `terraform show -json`'s cluster values.
type clusterState struct {
	Nodes []struct {
		Name, Zone, Role, Host, State string
	} `json:"nodes"`
	ConnectionURI           string `json:"connection_uri"`
	ReadOnlyConnectionURI   string `json:"read_only_connection_uri"`
	PostgresMajor           int    `json:"postgres_major"`
	SynchronousStandbyNames string `json:"synchronous_standby_names"`
	TLS                     *struct {
		CACertificate string            `json:"ca_certificate"`
		NotAfter      map[string]string `json:"not_after"`
	} `json:"tls"`
	ArchiveStatus *struct {
		LastArchivedWAL  string  `json:"last_archived_wal"`
		ArchivedSegments int     `json:"archived_segments"`
		FirstMissingWAL  *string `json:"first_missing_wal"`
		ArchivingOK      *bool   `json:"archiving_ok"`
		BackupCount      int     `json:"backup_count"`
		LastBackupLabel  string  `json:"last_backup_label"`
		LastBackupType   string  `json:"last_backup_type"`
		RecoverableFrom  string  `json:"recoverable_from"`
		VerifiedTimeline *int    `json:"verified_timeline"`
		VerificationOK   *bool   `json:"verification_ok"`
		VerificationText *string `json:"verification_detail"`
	} `json:"archive_status"`
	Restored *struct {
		From             string  `json:"from"`
		Backup           string  `json:"backup"`
		Target           string  `json:"target"`
		ReachedLSN       string  `json:"reached_lsn"`
		ReachedTime      *string `json:"reached_time"`
		Timeline         int     `json:"timeline"`
		WALReplayedBytes int64   `json:"wal_replayed_bytes"`
		Seconds          float64 `json:"seconds"`
	} `json:"restored"`
	AWS struct {
		InstanceIDs       map[string]string `json:"instance_ids"`
		NetworkInterfaces map[string]string `json:"network_interface_ids"`
		PrivateIPs        map[string]string `json:"private_ips"`
		SSMPath           string            `json:"ssm_parameter_path"`
		SecurityGroupID   string            `json:"security_group_id"`
		LoadBalancerDNS   string            `json:"load_balancer_dns_name"`
		InstanceProfile   string            `json:"instance_profile"`
		ConfigApplied     *bool             `json:"configuration_applied"`
		PendingRestart    []string          `json:"pending_restart"`
	} `json:"aws"`
}

func (e *simEnv) state() clusterState {
	e.t.Helper()
	out, _ := e.mustTerraform("show", "-json")
	var doc struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string          `json:"address"`
					Values  json.RawMessage `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		e.t.Fatalf("terraform show -json: %v\n%s", err, out)
	}
	for _, r := range doc.Values.RootModule.Resources {
		if r.Address == "pgnvme_cluster.db" {
			var st clusterState
			if err := json.Unmarshal(r.Values, &st); err != nil {
				e.t.Fatal(err)
			}
			return st
		}
	}
	e.t.Fatalf("no pgnvme_cluster.db in the state:\n%s", out)
	return clusterState{}
}

// writer inserts rows one commit at a time through the multi-host URI (libpq's target_session_attrs
// semantics, as pgx implements them) and remembers each acknowledged id; connection errors reconnect.
type writer struct {
	e        *simEnv
	uri      string
	password string
	mu       sync.Mutex
	acked    []int64
	failures int
	lastErr  error
	stop     chan struct{}
	done     chan struct{}
}

func (e *simEnv) connect(ctx context.Context, uri, password string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.Password = password
	cfg.DialFunc = e.sim.DialContext
	cfg.ConnectTimeout = 3 * time.Second
	for _, fb := range cfg.Fallbacks {
		if e.roots == nil || fb.TLSConfig == nil {
			fb.TLSConfig = nil
			continue
		}
		fb.TLSConfig.RootCAs = e.roots
	}
	if e.roots == nil || cfg.TLSConfig == nil {
		cfg.TLSConfig = nil
	} else {
		cfg.TLSConfig.RootCAs = e.roots
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func (e *simEnv) startWriter(uri, password string) *writer {
	w := &writer{e: e, uri: uri, password: password, stop: make(chan struct{}), done: make(chan struct{})}
	ctx := context.Background()
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		e.t.Fatalf("writer: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS acked (id bigint PRIMARY KEY)"); err != nil {
		e.t.Fatal(err)
	}
	var id int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM acked").Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				if conn != nil {
					_ = conn.Close(ctx)
				}
				return
			default:
			}
			if conn == nil {
				c, err := e.connect(ctx, uri, password)
				if err != nil {
					w.mu.Lock()
					w.failures++
					w.lastErr = err
					w.mu.Unlock()
					time.Sleep(200 * time.Millisecond) //nolint:forbidigo // a client's reconnect pause, not a wait for a condition
					continue
				}
				conn = c
			}
			id++
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := conn.Exec(cctx, "INSERT INTO acked VALUES ($1)", id)
			cancel()
			if err != nil {
				w.mu.Lock()
				w.failures++
				w.lastErr = err
				w.mu.Unlock()
				_ = conn.Close(ctx)
				conn = nil
				continue
			}
			w.mu.Lock()
			w.acked = append(w.acked, id)
			w.mu.Unlock()
		}
	}()
	return w
}

// await waits until the writer has n commits acknowledged.
func (w *writer) await(n int) {
	w.e.t.Helper()
	err := wait.Until(context.Background(), fmt.Sprintf("%d commits acknowledged", n), 90*time.Second, 200*time.Millisecond, nil, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked) >= n, nil
	})
	if err != nil {
		w.e.t.Fatalf("the writer: %v (%d failures, the last: %v)", err, w.failures, w.lastErr)
	}
}

// count is how many commits the writer has had acknowledged so far.
func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// halt stops the writer where it is, checking nothing, and returns the ids of the commits acknowledged.
func (w *writer) halt() []int64 {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

// finish waits until the writer has 20 more commits acknowledged (the cluster takes writes after the
// apply), stops it and checks that every acknowledged commit is on the primary; it returns how many were
// acknowledged.
func (w *writer) finish() int {
	w.e.t.Helper()
	w.mu.Lock()
	target := len(w.acked) + 20
	w.mu.Unlock()
	err := wait.Until(context.Background(), "20 more commits acknowledged", 90*time.Second, 200*time.Millisecond, nil, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked) >= target, nil
	})
	if err != nil {
		w.mu.Lock()
		w.e.t.Errorf("the cluster takes no writes after the apply: %v (%d failures, the last: %v)", err, w.failures, w.lastErr)
		w.mu.Unlock()
	}
	close(w.stop)
	<-w.done
	ctx := context.Background()
	conn, err := w.e.connect(ctx, w.uri, w.password)
	if err != nil {
		w.e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var found int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM acked WHERE id = ANY($1)", w.acked).Scan(&found); err != nil {
		w.e.t.Fatal(err)
	}
	if found != len(w.acked) {
		w.e.t.Errorf("%d acknowledged commits lost of %d", len(w.acked)-found, len(w.acked))
	}
	return len(w.acked)
}

// secret reads an SSM SecureString from moto through the simulator's endpoint.
func (e *simEnv) secret(name string) string {
	e.t.Helper()
	v, err := e.secretErr(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// awsConfig is the simulator's SDK configuration in the test's region (signed as the simulator, also under
// IAM enforcement).
func (e *simEnv) awsConfig() aws.Config {
	return e.sim.AWSConfig(e.region)
}

func (e *simEnv) secretErr(name string) (string, error) {
	c := ssm.NewFromConfig(e.awsConfig(), func(o *ssm.Options) { o.BaseEndpoint = aws.String(nodesim.AWSEndpoint) })
	out, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Parameter.Value), nil
}

// loadBalancerTargets are the load balancer's target groups' health check paths and registered target
// addresses, by target group name; nil when there is no load balancer.
func (e *simEnv) loadBalancerTargets(ctx context.Context, name string) map[string][]string {
	e.t.Helper()
	c := elasticloadbalancingv2.NewFromConfig(e.awsConfig(), func(o *elasticloadbalancingv2.Options) { o.BaseEndpoint = aws.String(nodesim.AWSEndpoint) })
	lbs, err := c.DescribeLoadBalancers(ctx, &elasticloadbalancingv2.DescribeLoadBalancersInput{Names: []string{name}})
	if err != nil || len(lbs.LoadBalancers) == 0 {
		return nil
	}
	tgs, err := c.DescribeTargetGroups(ctx, &elasticloadbalancingv2.DescribeTargetGroupsInput{LoadBalancerArn: lbs.LoadBalancers[0].LoadBalancerArn})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, tg := range tgs.TargetGroups {
		h, err := c.DescribeTargetHealth(ctx, &elasticloadbalancingv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			e.t.Fatal(err)
		}
		key := aws.ToString(tg.TargetGroupName) + " " + aws.ToString(tg.HealthCheckPath)
		for _, d := range h.TargetHealthDescriptions {
			out[key] = append(out[key], aws.ToString(d.Target.Id))
		}
		sort.Strings(out[key])
	}
	return out
}

func (e *simEnv) profileExists(ctx context.Context, name string) bool {
	c := iam.NewFromConfig(e.awsConfig(), func(o *iam.Options) { o.BaseEndpoint = aws.String(nodesim.AWSEndpoint) })
	_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	return err == nil
}

func (e *simEnv) terminate(id string) {
	e.t.Helper()
	if _, err := e.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		e.t.Fatal(err)
	}
}

// waitLeader waits until Patroni (read through the state's addresses) names a leader other than not.
func (e *simEnv) waitLeader(st clusterState, not string) string {
	e.t.Helper()
	var leader string
	err := wait.Until(context.Background(), "a new leader", 2*time.Minute, time.Second, nil, func(ctx context.Context) (bool, error) {
		for _, n := range st.Nodes {
			var c struct {
				Members []struct{ Name, Role, State string } `json:"members"`
			}
			if err := e.getJSON(ctx, e.restURL(n.Host, "/cluster"), &c); err != nil {
				continue
			}
			for _, m := range c.Members {
				if m.Role == "leader" && m.State == "running" && m.Name != not {
					leader = m.Name
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		e.t.Fatalf("%v\n%s", err, e.logs())
	}
	return leader
}

// waitSettled waits until Patroni lists every node of st: one running leader and every other node
// streaming in the quorum with a known lag under 1 MiB (what the engine needs to choose a handover target),
// so that a plan taken now is the decision the apply takes.
func (e *simEnv) waitSettled(st clusterState) {
	e.t.Helper()
	last := ""
	err := wait.Until(context.Background(), "every node to stream in the quorum", 2*time.Minute, time.Second, nil, func(ctx context.Context) (bool, error) {
		var c struct {
			Members []struct {
				Name, Role, State string
				Lag               json.RawMessage
			} `json:"members"`
		}
		for _, n := range st.Nodes {
			if err := e.getJSON(ctx, e.restURL(n.Host, "/cluster"), &c); err == nil {
				break
			}
		}
		ok := len(c.Members) == len(st.Nodes)
		for _, m := range c.Members {
			var lag int64
			switch {
			case m.Role == "leader":
				ok = ok && m.State == "running"
			case m.Role != "quorum_standby" && m.Role != "sync_standby", m.State != "streaming", json.Unmarshal(m.Lag, &lag) != nil, lag > 1<<20:
				ok = false
			}
		}
		last = fmt.Sprintf("%+v", c.Members)
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%v (last seen: %s)\n%s", err, last, e.logs())
	}
}

// restURL is the URL of path on host's Patroni REST API: https once the test verifies the cluster's
// authority (e.roots), else http.
func (e *simEnv) restURL(host, path string) string {
	scheme := "http"
	if e.roots != nil {
		scheme = "https"
	}
	return scheme + "://" + host + ":8008" + path
}

// getJSON decodes the answer to GET url; https URLs are verified against the cluster's authority.
func (e *simEnv) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := e.sim.HTTPClient()
	if strings.HasPrefix(url, "https://") {
		client = e.tlsClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
