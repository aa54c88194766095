package provider_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

const clusterAddr = "pgnvme_cluster.demo"

// clusterDir is a short directory the postgres user can reach (pgfixture.ServerDir), removed after the
// test.
func clusterDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(pgfixture.ServerDir(t, "tfacc-"), "c")
}

func clusterConfig(dataDir string, portBase int, extra string) string {
	return fmt.Sprintf(`
resource "pgnvme_cluster" "demo" {
  name = "tf-acc"
  node {
    name = "node-1"
    zone = "zone-a"
  }
  node {
    name = "node-2"
    zone = "zone-b"
  }
  node {
    name = "node-3"
    zone = "zone-c"
  }
  synchronous {
    method          = "any"
    number          = 1
    data_durability = "required"
    commit          = "on"
  }
  local {
    data_dir  = %q
    port_base = %d
  }
%s
}
`, dataDir, portBase, extra)
}

// repoBeside makes a pgBackRest repository directory next to the cluster's data directory, owned by the
// server's user, and returns its path.
func repoBeside(t *testing.T, dir string) string {
	t.Helper()
	repo := filepath.Join(filepath.Dir(dir), "repo")
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MkdirAllOwned(repo, 0o750); err != nil {
		t.Fatal(err)
	}
	return repo
}

func psqlAt(t *testing.T, port int, sql string) string {
	t.Helper()
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Psql(context.Background(), localnode.Node{Name: "probe", Host: "127.0.0.1", Port: port}, "postgres", sql)
	if err != nil {
		t.Fatalf("psql on port %d: %v", port, err)
	}
	return out
}

func tryPsqlAt(port int, sql string) (string, error) {
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		return "", err
	}
	return e.Psql(context.Background(), localnode.Node{Name: "probe", Host: "127.0.0.1", Port: port}, "postgres", sql)
}

// loseNode kills a node's processes and deletes its data directory: the machine is gone.
func loseNode(t *testing.T, dataDir string, port int) {
	t.Helper()
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := localnode.Node{Name: filepath.Base(dataDir), Host: "127.0.0.1", Port: port, DataDir: dataDir}
	if err := e.Kill(n); err != nil {
		t.Fatalf("killing %s: %v", n.Name, err)
	}
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
}

func nodeCheck(name, role string, port int) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"name": knownvalue.StringExact(name), "zone": knownvalue.NotNull(), "role": knownvalue.StringExact(role),
		"host": knownvalue.StringExact("127.0.0.1"), "port": knownvalue.Int64Exact(int64(port)),
		"state": knownvalue.StringExact("running"),
	})
}

// localClusterGone is the CheckDestroy: the local platform itself finds nothing of the cluster (no data
// directory, no manifest) and no process answers on its ports.
func localClusterGone(dataDir string, base, n int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s := cluster.Spec{Name: "tf-acc", Block: &localspec.Block{DataDir: dataDir, PortBase: base}}
		for i := range n {
			s.Nodes = append(s.Nodes, cluster.Node{Name: fmt.Sprintf("node-%d", i+1)})
		}
		exists, err := localcluster.NewPlatform().Exists(s, nil)
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("the local platform still finds the cluster under %s after destroy", dataDir)
		}
		for i := range n {
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", base+i), time.Second); err == nil {
				c.Close()
				return fmt.Errorf("something still listens on port %d after destroy", base+i)
			}
		}
		return nil
	}
}

func TestAccCluster_basic(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	config := clusterConfig(dir, base, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("nodes"), knownvalue.ListExact([]knownvalue.Check{
						nodeCheck("node-1", "primary", base), nodeCheck("node-2", "standby", base+1), nodeCheck("node-3", "standby", base+2),
					})),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("connection_uri"), knownvalue.StringExact(fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/postgres", base))),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("id"), knownvalue.StringExact("tf-acc")),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("local").AtMapKey("data_dirs"), knownvalue.MapExact(map[string]knownvalue.Check{
						"node-1": knownvalue.StringExact(filepath.Join(dir, "node-1")), "node-2": knownvalue.StringExact(filepath.Join(dir, "node-2")),
						"node-3": knownvalue.StringExact(filepath.Join(dir, "node-3")),
					})),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("local").AtMapKey("durability_watcher_running"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact(`ANY 1 ("node-2", "node-3")`)),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_degraded"), knownvalue.Bool(false)),
				},
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT application_name || '|' || sync_state FROM pg_stat_replication ORDER BY 1"); got != "node-2|quorum\nnode-3|quorum" {
						return fmt.Errorf("sync states %q, want both standbys in quorum", got)
					}
					return nil
				},
			},
			{
				ResourceName:      clusterAddr,
				ImportState:       true,
				ImportStateId:     "local:" + dir,
				ImportStateVerify: true,
			},
		},
	})
}

// A standby whose machine is lost (processes killed, data deleted) shows in the next plan; the apply
// re-creates that node alone and it rejoins the quorum.
func TestAccCluster_standbyLoss(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	config := clusterConfig(dir, base, "")
	var primaryStart string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					primaryStart = psqlAt(t, base, "SELECT pg_postmaster_start_time()")
					loseNode(t, filepath.Join(dir, "node-3"), base+2)
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(clusterAddr, plancheck.ResourceActionUpdate)},
				},
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT application_name || '|' || sync_state FROM pg_stat_replication ORDER BY 1"); got != "node-2|quorum\nnode-3|quorum" {
						return fmt.Errorf("after the repair: %q, want both standbys in quorum", got)
					}
					if got := psqlAt(t, base, "SELECT pg_postmaster_start_time()"); got != primaryStart {
						return fmt.Errorf("the primary was restarted (%s -> %s): only node-3 should be replaced", primaryStart, got)
					}
					return nil
				},
			},
		},
	})
}

// ackWriter commits numbered rows one at a time and records each number whose commit returned; it stops at
// the first failed commit (the primary is gone: that commit was not acknowledged) and keeps its error.
type ackWriter struct {
	mu    sync.Mutex
	acked []int
	err   error
	stop  chan struct{}
	done  chan struct{}
}

func startWriter(t *testing.T, port int) *ackWriter {
	t.Helper()
	return startWriterVia(t, func(sql string) (string, error) { return tryPsqlAt(port, sql) })
}

// startWriterVia is startWriter with run as the way to the primary.
func startWriterVia(t *testing.T, run func(sql string) (string, error)) *ackWriter {
	t.Helper()
	if _, err := run("CREATE TABLE IF NOT EXISTS acked (n int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	w := &ackWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for n := 1; ; n++ {
			select {
			case <-w.stop:
				return
			default:
			}
			if _, err := run(fmt.Sprintf("INSERT INTO acked VALUES (%d)", n)); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			w.acked = append(w.acked, n)
			w.mu.Unlock()
		}
	}()
	return w
}

// await waits until n commits are acknowledged (rather than for a time, which a loaded machine fills with
// fewer), failing the test if the writer stopped first.
func (w *ackWriter) await(t *testing.T, n int) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("%d commits acknowledged", n), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			t.Fatalf("the writer stopped after %d commits: %v", len(w.acked), w.err)
		}
		return len(w.acked) >= n
	})
}

// count is how many commits have been acknowledged so far.
func (w *ackWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *ackWriter) finish() []int {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.acked...)
}

// Zero loss: a writer commits under ANY 1, the primary's machine is lost mid-stream, and after the apply
// promotes the standby with the highest flushed LSN every acknowledged number is on the new primary.
func TestAccCluster_primaryLoss(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	config := clusterConfig(dir, base, "")
	var acked []int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					w := startWriter(t, base)
					w.await(t, 20)
					loseNode(t, filepath.Join(dir, "node-1"), base)
					acked = w.finish()
					if len(acked) < 10 {
						return fmt.Errorf("only %d commits acknowledged before the loss", len(acked))
					}
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					newStateCheckWithAddr(clusterAddr, func(_ context.Context, attrs map[string]any) error {
						primary, _ := attrs["primary"].(map[string]any)
						port, err := strconv.Atoi(fmt.Sprint(primary["port"]))
						if err != nil || port == base {
							return fmt.Errorf("primary after failover = %v", attrs["primary"])
						}
						got := psqlAt(t, port, "SELECT count(*), coalesce(max(n), 0) FROM acked")
						parts := strings.Split(got, "|")
						count, _ := strconv.Atoi(parts[0])
						missing := 0
						for _, n := range acked {
							if psqlAt(t, port, fmt.Sprintf("SELECT count(*) FROM acked WHERE n = %d", n)) != "1" {
								missing++
							}
						}
						t.Logf("checked %d acknowledged commits on the new primary (port %d): %d missing; it holds %d rows", len(acked), port, missing, count)
						if missing > 0 {
							return fmt.Errorf("%d acknowledged commits lost", missing)
						}
						states := psqlAt(t, port, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'quorum'")
						if states != "2" {
							return fmt.Errorf("after failover %s standbys in quorum, want 2", states)
						}
						return nil
					}),
				},
			},
		},
	})
}

// A reload-only parameter restarts nothing; a restart-only one restarts every node, standbys first.
func TestAccCluster_parameters(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	starts := func() []time.Time {
		var out []time.Time
		for i := 0; i < 3; i++ {
			ts, err := time.Parse("2006-01-02 15:04:05.999999-07", psqlAt(t, base+i, "SELECT pg_postmaster_start_time()"))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ts)
		}
		return out
	}
	var before []time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{
				Config: clusterConfig(dir, base, `  parameters = { work_mem = "8MB", shared_buffers = "128MB" }`),
				Check:  func(*terraform.State) error { before = starts(); return nil },
			},
			{
				Config: clusterConfig(dir, base, `  parameters = { work_mem = "16MB", shared_buffers = "128MB" }`),
				Check: func(*terraform.State) error {
					after := starts()
					for i := range after {
						if !after[i].Equal(before[i]) {
							return fmt.Errorf("node-%d restarted for a reload-only parameter", i+1)
						}
					}
					if got := psqlAt(t, base+1, "SHOW work_mem"); got != "16MB" {
						return fmt.Errorf("work_mem on node-2 = %s", got)
					}
					return nil
				},
			},
			{
				Config: clusterConfig(dir, base, `  parameters = { work_mem = "16MB", shared_buffers = "160MB" }`),
				Check: func(*terraform.State) error {
					after := starts()
					for i := range after {
						if !after[i].After(before[i]) {
							return fmt.Errorf("node-%d was not restarted for shared_buffers", i+1)
						}
						if got := psqlAt(t, base+i, "SHOW shared_buffers"); got != "160MB" {
							return fmt.Errorf("shared_buffers on node-%d = %s", i+1, got)
						}
					}
					if !after[1].Before(after[0]) || !after[2].Before(after[0]) {
						return fmt.Errorf("the primary restarted before a standby: %v", after)
					}
					before = after
					return nil
				},
			},
			{
				// Changing the synchronous setting restarts nothing.
				Config: strings.Replace(clusterConfig(dir, base, `  parameters = { work_mem = "16MB", shared_buffers = "160MB" }`), "number          = 1", "number          = 2", 1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact(`ANY 2 ("node-2", "node-3")`)),
				},
				Check: func(*terraform.State) error {
					after := starts()
					for i := range after {
						if !after[i].Equal(before[i]) {
							return fmt.Errorf("node-%d restarted for a synchronous change", i+1)
						}
					}
					return nil
				},
			},
		},
	})
}

// A standby lost while a writer commits is re-created from the archive (pgBackRest, a local repository),
// and every acknowledged commit is on it once it streams again.
func TestAccCluster_standbyLossFromArchive(t *testing.T) {
	dir := clusterDir(t)
	repo := repoBeside(t, dir)
	base := acctest.FreePortBase(t, 3)
	config := clusterConfig(dir, base, fmt.Sprintf(`  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = %q
    }
  }`, repo))
	var acked []int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT archived_count > 0 FROM pg_stat_archiver"); got != "t" {
						return fmt.Errorf("nothing archived after create")
					}
					w := startWriter(t, base)
					w.await(t, 10)
					loseNode(t, filepath.Join(dir, "node-3"), base+2)
					// Commits go on under ANY 1 with the other standby.
					w.await(t, w.count()+5)
					acked = w.finish()
					if len(acked) == 0 {
						return fmt.Errorf("no commit was acknowledged")
					}
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				Check: func(*terraform.State) error {
					log, err := os.ReadFile(filepath.Join(dir, "node-3.pgbackrest", "log", "tf-acc-restore.log"))
					if err != nil {
						return fmt.Errorf("node-3 has no pgBackRest restore log, so it was not seeded from the archive: %w", err)
					}
					if !strings.Contains(string(log), "restore command begin") {
						return fmt.Errorf("node-3's restore log shows no restore")
					}
					waitFor(t, 30*time.Second, "node-3 to replay every acknowledged commit", func() bool {
						return psqlAt(t, base+2, fmt.Sprintf("SELECT count(*) FROM acked WHERE n <= %d", acked[len(acked)-1])) == strconv.Itoa(len(acked))
					})
					t.Logf("checked %d acknowledged commits on node-3 after its reseed from the archive", len(acked))
					return nil
				},
			},
		},
	})
}

func TestAccCluster_badInputs(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	// A directory only root may enter: PostgreSQL, running as postgres, could not use it.
	private, err := os.MkdirTemp("", "tfacc-private-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(private)
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	c := func(body string) string {
		return fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  local {\n    data_dir = %q\n    port_base = %d\n  }\n%s\n}\n", dir, base, body)
	}
	archive := "archive { pgbackrest_options = { \"repo1-path\" = \"/tmp/tf-acc-repo\" } }\n"
	runBadInputs(t, []badInput{
		{"number not below node count", c("node_count = 2\nsynchronous { number = 2 }"), `(?s)Invalid Synchronous Replication.*more than the cluster's 1 standbys`},
		{"duplicate node names", c("node { name = \"a\" }\nnode { name = \"A\" }"), `(?s)node.*(Duplicate|lower-case)`},
		{"node count out of range", c("node_count = 10"), `(?s)node_count.*between 1 and 9`},
		{"count and nodes", c("node_count = 2\nnode { name = \"a\" }"), `(?s)Invalid Attribute Combination`},
		{"archive with neither option map", c("archive { backup_on_create = true }"), `(?s)Missing Archive Options.*pgbackrest_options`},
		{"wal-g on the local platform", c("archive { walg_env = { WALG_S3_PREFIX = \"s3://b/p\" } }"), `(?s)WAL-G On The Local Platform`},
		{"backlog bound below the WAL a node holds", c("archive {\n  pgbackrest_options = { \"repo1-path\" = \"/tmp/tf-acc-repo\" }\n  max_backlog_gib = 1\n}"),
			`(?s)Invalid Archive.*max_backlog_gib.*below 2560 MiB`},
		{"backup without archive", c("backup { schedule = \"hourly\" }"), `(?s)Backup Without Archive.*add an\s+archive block`},
		{"backup schedule that does not parse", c(archive + "backup { schedule = \"every day at 3\" }"), `(?s)Invalid Backup Policy.*schedule.*"every day at 3".*not a day of the week`},
		{"backup schedule out of range", c(archive + "backup { schedule = \"*-*-* 25:00\" }"), `(?s)Invalid Backup Policy.*hour 25`},
		{"retention of 0 full backups", c(archive + "backup {\n  retention { min_full_backups = 0 }\n}"), `(?s)Invalid Backup Policy.*min_full_backups.*at least 1`},
		{"full_every 0", c(archive + "backup { full_every = 0 }"), `(?s)Invalid Backup Policy.*full_every is 0`},
		{"relative data_dir", "resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  local { data_dir = \"data\" }\n}\n", `(?s)data_dir.*absolute path`},
		{"port range collides", fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  node_count = 1\n  local {\n    data_dir = %q\n    port_base = %d\n  }\n}\n", dir, busyPort), `(?s)Cannot Create Cluster Here.*` + strconv.Itoa(busyPort)},
		{"unreachable data_dir", fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  local {\n    data_dir = %q\n    port_base = %d\n  }\n}\n", filepath.Join(private, "c"), base), `(?s)Cannot Create Cluster Here`},
		{"port_base past the last port", fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  local {\n    data_dir = %q\n    port_base = 65534\n  }\n}\n", dir),
			`(?s)Invalid Port Base.*needs\s+ports\s+65534\s+to\s+65536;\s+choose\s+a\s+base\s+from\s+1024\s+to\s+65533`},
		{"reserved parameter", c("parameters = { port = \"5433\" }"), `(?s)Invalid Parameter.*"port" is set by the platform`},
		// Without postgres_major the cluster runs the newest installed major (18 on the test machines), which
		// no longer has PostgreSQL 16's parameters.
		{"a parameter of an older major", c("parameters = { old_snapshot_threshold = \"-1\" }"),
			`(?s)Invalid Parameter.*"old_snapshot_threshold" is one of\s+PostgreSQL\s+16\s+and\s+earlier.*runs\s+PostgreSQL\s+18`},
		{"a parameter of another major given", c("postgres_major = 15\nparameters = { old_snapshot_threshold = \"-1\", io_method = \"worker\" }"),
			`(?s)Invalid Parameter.*"io_method" is one of\s+PostgreSQL\s+18\s+and\s+later.*runs\s+PostgreSQL\s+15`},
		// Before: the framework's "Missing Attribute Configuration ... Exactly one of these attributes must be configured: [local,aws]".
		{"no platform block", "resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n}\n", `(?s)Missing Platform Block.*local \{ data_dir =.*aws \{ instance_type`},
		{"cluster name", strings.Replace(c(""), "tf-acc", "TF_acc", 1), `(?s)Invalid Cluster Name.*lower-case`},
	})
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused plan created %s", dir)
	}
}

// node_count up adds standbys that join the quorum; down removes the lowest-priority standby, never the
// primary, and nothing else restarts.
func TestAccCluster_scale(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 4)
	cfg := func(count int) string {
		return fmt.Sprintf(`
resource "pgnvme_cluster" "demo" {
  name       = "tf-acc"
  node_count = %d
  local {
    data_dir  = %q
    port_base = %d
  }
}
`, count, dir, base)
	}
	var primaryStart string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 4),
		Steps: []resource.TestStep{
			{
				Config: cfg(2),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact(`ANY 1 ("node-2")`)),
				},
				Check: func(*terraform.State) error {
					primaryStart = psqlAt(t, base, "SELECT pg_postmaster_start_time()")
					return nil
				},
			},
			{
				Config: cfg(4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact(`ANY 1 ("node-2", "node-3", "node-4")`)),
				},
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT string_agg(application_name || '|' || sync_state, ',' ORDER BY application_name) FROM pg_stat_replication"); got != "node-2|quorum,node-3|quorum,node-4|quorum" {
						return fmt.Errorf("after scaling up: %s", got)
					}
					return nil
				},
			},
			{
				Config: cfg(3),
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_replication"); got != "node-2,node-3" {
						return fmt.Errorf("after scaling down the standbys are %s, want node-2,node-3", got)
					}
					if _, err := os.Stat(filepath.Join(dir, "node-4")); err == nil {
						return fmt.Errorf("node-4's data directory is still there")
					}
					if got := psqlAt(t, base, "SELECT pg_postmaster_start_time()"); got != primaryStart {
						return fmt.Errorf("the primary restarted while scaling")
					}
					return nil
				},
			},
		},
	})
}

// priorStateCheck asserts on the refreshed state a plan starts from.
type priorStateCheck struct {
	addr string
	f    func(attrs map[string]any) error
}

func (c priorStateCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if req.Plan.PriorState == nil || req.Plan.PriorState.Values == nil {
		resp.Error = fmt.Errorf("the plan has no prior state")
		return
	}
	for _, r := range req.Plan.PriorState.Values.RootModule.Resources {
		if r.Address == c.addr {
			resp.Error = c.f(r.AttributeValues)
			return
		}
	}
	resp.Error = fmt.Errorf("%s not in the prior state", c.addr)
}

// stopStandbys stops node-2 and node-3 cleanly (their data stays).
func stopStandbys(t *testing.T, dir string, base int) {
	t.Helper()
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		n := localnode.Node{Name: fmt.Sprintf("node-%d", i), Role: localnode.RoleStandby, Host: "127.0.0.1", Port: base + i - 1,
			DataDir: filepath.Join(dir, fmt.Sprintf("node-%d", i))}
		if err := e.Stop(context.Background(), n, "fast"); err != nil {
			t.Fatalf("stopping %s: %v", n.Name, err)
		}
	}
}

// commitWithin runs one commit and reports whether it returned within d (a commit still waiting is
// cancelled, so the test never blocks on it).
func commitWithin(t *testing.T, port int, d time.Duration) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := tryPsqlAt(port, "INSERT INTO durability DEFAULT VALUES")
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(d):
		psqlAt(t, port, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
		if err := <-done; err != nil {
			t.Logf("the cancelled commit: %v", err)
		}
		return false
	}
}

// With both standbys down, preferred keeps commits flowing and the refresh reports the degradation;
// required makes commits wait for a standby.
func TestAccCluster_durability(t *testing.T) {
	for _, tc := range []struct {
		durability string
		flows      bool
	}{{"preferred", true}, {"required", false}} {
		t.Run(tc.durability, func(t *testing.T) {
			dir := clusterDir(t)
			base := acctest.FreePortBase(t, 3)
			config := strings.Replace(clusterConfig(dir, base, ""), `data_durability = "required"`, `data_durability = "`+tc.durability+`"`, 1)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
				CheckDestroy:             localClusterGone(dir, base, 3),
				Steps: []resource.TestStep{
					{
						Config: config,
						Check: func(*terraform.State) error {
							psqlAt(t, base, "CREATE TABLE IF NOT EXISTS durability (n serial PRIMARY KEY)")
							stopStandbys(t, dir, base)
							if got := commitWithin(t, base, 8*time.Second); got != tc.flows {
								return fmt.Errorf("%s with both standbys down: commit returned = %v, want %v", tc.durability, got, tc.flows)
							}
							if tc.flows {
								// The watcher dies: the refresh shows it, the next apply restarts it.
								pid, err := os.ReadFile(filepath.Join(dir, "pgnvme-durability.pid"))
								if err != nil {
									return fmt.Errorf("no watcher pid file: %w", err)
								}
								n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
								if err != nil {
									return err
								}
								if p, err := os.FindProcess(n); err == nil {
									_ = p.Kill()
								}
							}
							return nil
						},
						ExpectNonEmptyPlan: true,
					},
					{
						Config: config,
						ConfigPlanChecks: resource.ConfigPlanChecks{
							PreApply: []plancheck.PlanCheck{priorStateCheck{addr: clusterAddr, f: func(attrs map[string]any) error {
								if attrs["synchronous_degraded"] != true {
									return fmt.Errorf("the refresh with both standbys down says synchronous_degraded = %v", attrs["synchronous_degraded"])
								}
								local, _ := attrs["local"].(map[string]any)
								if local["durability_watcher_running"] != false {
									return fmt.Errorf("the refresh says the watcher runs (%v): preferred's was killed, required has none", local["durability_watcher_running"])
								}
								return nil
							}}},
						},
						ConfigStateChecks: []statecheck.StateCheck{
							statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_degraded"), knownvalue.Bool(false)),
							statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact(`ANY 1 ("node-2", "node-3")`)),
							statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("local").AtMapKey("durability_watcher_running"), knownvalue.Bool(tc.flows)),
						},
					},
				},
			})
		})
	}
}
