package localcluster_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// stepTimeout bounds each cluster operation in these tests, and ctxT's context, which most tests use for
// several: generous, since CI runs these beside other packages' tests on 2 CPUs, several times slower
// than alone (TestFailoverLeavesNoHoleInTheArchive: 29 s alone, 124 s in CI).
const stepTimeout = 3 * time.Minute

// anyOne is ANY 1 with the given durability.
func anyOne(d bootstrap.Durability) bootstrap.Synchronous {
	return bootstrap.Synchronous{Method: quorum.MethodAny, Number: 1, DataDurability: d, Commit: bootstrap.CommitOn}
}

// newCluster returns a manager and a spec of members n1 (primary), n2, n3 on
// free loopback ports under a fresh short directory; cleanup destroys it.
func newCluster(t *testing.T, sync bootstrap.Synchronous) (*localcluster.Manager, localcluster.Spec, string) {
	t.Helper()
	m, err := localcluster.NewManager("")
	if err != nil {
		t.Fatalf("the local cluster needs PostgreSQL: %v", err)
	}
	localcluster.SetStreamTimeout(m, time.Minute)
	root, err := os.MkdirTemp("", "pgnvme-lc-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := acctest.FreePorts(t, 3)
	s := localcluster.Spec{Name: "tf-acc-" + strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-")), Synchronous: sync}
	for i, name := range []string{"n1", "n2", "n3"} {
		s.Members = append(s.Members, localcluster.Member{Name: name, Zone: "z" + strconv.Itoa(i+1), Port: ports[i], DataDir: filepath.Join(root, name)})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		if err := m.Destroy(ctx, s); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		_ = os.RemoveAll(root)
	})
	return m, s, root
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	t.Cleanup(cancel)
	return ctx
}

func create(t *testing.T, m *localcluster.Manager, s localcluster.Spec) {
	t.Helper()
	start := time.Now()
	created, err := m.Create(ctxT(t), s)
	if err != nil {
		t.Fatalf("Create (created %v): %v", created, err)
	}
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(created, want) {
		t.Fatalf("Create returned %v, want %v", created, want)
	}
	t.Logf("created %s in %s", s.Name, time.Since(start).Round(time.Millisecond))
}

func observe(t *testing.T, m *localcluster.Manager, s localcluster.Spec) map[string]localcluster.Status {
	t.Helper()
	st, err := m.Observe(ctxT(t), s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]localcluster.Status{}
	for _, x := range st {
		out[x.Name] = x
	}
	return out
}

// planAndReconcile observes, plans and reconciles, checks that the apply executed the steps the plan
// listed, and returns them.
func planAndReconcile(t *testing.T, m *localcluster.Manager, s localcluster.Spec) []topology.Step {
	t.Helper()
	st, err := m.Observe(ctxT(t), s)
	if err != nil {
		t.Fatal(err)
	}
	planned, err := m.PlanSteps(ctxT(t), s, st)
	if err != nil {
		t.Fatalf("Plan: %v (observed %+v)", err, st)
	}
	t.Logf("plan:\n%s", topology.StepsSummary(planned))
	start := time.Now()
	done, err := m.Reconcile(ctxT(t), s)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	t.Logf("reconciled in %s", time.Since(start).Round(time.Millisecond))
	if !slices.EqualFunc(planned, done, func(a, b topology.Step) bool { return a.String() == b.String() }) {
		t.Errorf("the plan listed\n%s\nthe apply executed\n%s", topology.StepsSummary(planned), topology.StepsSummary(done))
	}
	return planned
}

// wantHealthy checks one running primary and two running standbys, both
// streaming with sync_state syncState; it returns the primary.
func wantHealthy(t *testing.T, m *localcluster.Manager, s localcluster.Spec, syncState string) localcluster.Member {
	t.Helper()
	var primary localcluster.Member
	primaries := 0
	for _, x := range observe(t, m, s) {
		if x.State != localcluster.StateRunning {
			t.Errorf("%s is %s, want running (%s)", x.Name, x.State, x.Error)
		}
		switch x.Role {
		case topology.RolePrimary:
			primary = x.Member
			primaries++
		case topology.RoleStandby:
			if !x.Streaming || x.SyncState != syncState {
				t.Errorf("standby %s: streaming %v, sync_state %q; want streaming, %q", x.Name, x.Streaming, x.SyncState, syncState)
			}
		default:
			t.Errorf("%s has role %q (%s)", x.Name, x.Role, x.Error)
		}
	}
	if primaries != 1 {
		t.Fatalf("%d primaries, want 1", primaries)
	}
	return primary
}

func connect(t *testing.T, ctx context.Context, mb localcluster.Member) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=5", mb.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// writer commits rows numbered from "from" into table acked on mb, one per transaction,
// and records each number whose commit was acknowledged.
type writer struct {
	acked []int
	count atomic.Int64
	done  chan error
	stop  atomic.Bool
}

func startWriter(t *testing.T, ctx context.Context, mb localcluster.Member, from int) *writer {
	t.Helper()
	if _, err := connect(t, ctx, mb).Exec(ctx, "CREATE TABLE IF NOT EXISTS acked (n int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	w := &writer{done: make(chan error, 1)}
	go func() {
		conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", mb.Port))
		if err != nil {
			w.done <- err
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		for i := from; !w.stop.Load(); i++ {
			if _, err := conn.Exec(ctx, "INSERT INTO acked VALUES ($1)", i); err != nil {
				w.done <- nil // the server is gone: i was not acknowledged
				return
			}
			w.acked = append(w.acked, i)
			w.count.Add(1)
		}
		w.done <- nil
	}()
	return w
}

// waitFor waits until the writer has n acknowledged commits.
func (w *writer) waitFor(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for w.count.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the writer has %d acknowledged commits after 20 s, want %d", w.count.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the writer (if it still runs) and returns the acknowledged numbers.
func (w *writer) finish(t *testing.T) []int {
	t.Helper()
	w.stop.Store(true)
	if err := <-w.done; err != nil {
		t.Fatal(err)
	}
	if len(w.acked) == 0 {
		t.Fatal("the writer had no commit acknowledged")
	}
	return w.acked
}

// checkAcked checks that every acknowledged number is in table acked on mb.
func checkAcked(t *testing.T, ctx context.Context, mb localcluster.Member, acked []int) {
	t.Helper()
	rows, err := connect(t, ctx, mb).Query(ctx, "SELECT n FROM acked")
	if err != nil {
		t.Fatal(err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	present := map[int]bool{}
	for _, n := range have {
		present[n] = true
	}
	var lost []int
	for _, n := range acked {
		if !present[n] {
			lost = append(lost, n)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged commits are missing on %s: %v", len(lost), len(acked), mb.Name, lost[:min(len(lost), 20)])
	}
	t.Logf("zero loss: all %d acknowledged commits are on %s (%d rows there)", len(acked), mb.Name, len(have))
}

// waitReplayed waits until standby sb has replayed everything primary has written.
func waitReplayed(t *testing.T, ctx context.Context, primary, sb localcluster.Member) {
	t.Helper()
	var target string
	if err := connect(t, ctx, primary).QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&target); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, ctx, sb)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done bool
		if err := conn.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has not replayed up to %s after 30 s", sb.Name, target)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreateObserveDestroy(t *testing.T) {
	t.Parallel()
	m, s, root := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	create(t, m, s)
	p := wantHealthy(t, m, s, "quorum")
	if p.Name != "n1" {
		t.Errorf("primary is %s, want n1", p.Name)
	}
	if got, err := localcluster.ReadManifest(root); err != nil || len(got.Members) != 3 || got.Name != s.Name {
		t.Errorf("ReadManifest: %+v, %v", got, err)
	}
	var pids []int
	eng := m.Engine()
	for _, mb := range s.Members {
		pid, ok, err := eng.Running(localcluster.Node(mb, localnode.RoleStandby))
		if err != nil || !ok {
			t.Fatalf("%s not running: %v", mb.Name, err)
		}
		pids = append(pids, pid)
	}
	if err := m.Destroy(ctxT(t), s); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z") {
				t.Errorf("process %d still runs after Destroy", pid)
			}
		}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(root)
		t.Errorf("after Destroy %s still exists with %d entries", root, len(entries))
	}
	if err := m.Destroy(ctxT(t), s); err != nil {
		t.Errorf("a second Destroy: %v", err)
	}
}

// lose kills mb and deletes its data directory, as a machine loss would.
func lose(t *testing.T, m *localcluster.Manager, mb localcluster.Member) {
	t.Helper()
	if err := m.Engine().Kill(localcluster.Node(mb, localnode.RoleStandby)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(mb.DataDir); err != nil {
		t.Fatal(err)
	}
}

func TestStandbyLossReseed(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	create(t, m, s)
	ctx := ctxT(t)
	w := startWriter(t, ctx, s.Members[0], 1)
	w.waitFor(t, 100)
	lose(t, m, s.Members[2])
	if st := observe(t, m, s)["n3"]; st.State != localcluster.StateMissing {
		t.Fatalf("n3 is %s, want missing", st.State)
	}
	actions := planAndReconcile(t, m, s)
	if len(actions) != 1 || actions[0].Kind != topology.StepReplace || actions[0].Node != "n3" || actions[0].Source != "n1" {
		t.Fatalf("plan %v, want replace n3 from n1", actions)
	}
	acked := w.finish(t)
	wantHealthy(t, m, s, "quorum")
	waitReplayed(t, ctx, s.Members[0], s.Members[2])
	checkAcked(t, ctx, s.Members[2], acked)

	// Scale down to two nodes: the manifest still lists n3, so Observe shows it and the plan removes it.
	small := s
	small.Members = s.Members[:2]
	st, err := m.Observe(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	actions, err = m.PlanSteps(ctx, small, st)
	if err != nil || len(actions) != 1 || actions[0].Kind != topology.StepRemove || actions[0].Node != "n3" {
		t.Fatalf("scale-down plan %v, %v; want remove n3", actions, err)
	}
	if _, err := m.Reconcile(ctx, small); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Members[2].DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("n3's data directory is still there after its removal: %v", err)
	}
	if out, err := m.Engine().Psql(ctx, localcluster.Node(s.Members[0], localnode.RolePrimary), "", "SHOW synchronous_standby_names"); err != nil || out != "ANY 1 (n2)" {
		t.Errorf("after scale-down synchronous_standby_names is %q, %v; want ANY 1 (n2)", out, err)
	}
	if len(observe(t, m, small)) != 2 {
		t.Errorf("after scale-down Observe still shows a former member")
	}
	// And back up to three: the new n3 (the manifest no longer lists it) is added, copied from the primary.
	if actions := planAndReconcile(t, m, s); len(actions) != 1 || actions[0].String() != "add n3 from n1" {
		t.Errorf("scale-up plan %v, want add n3 from n1", actions)
	}
	wantHealthy(t, m, s, "quorum")
}

func TestPrimaryLossZeroLoss(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	create(t, m, s)
	ctx := ctxT(t)
	w := startWriter(t, ctx, s.Members[0], 1)
	w.waitFor(t, 300)
	lose(t, m, s.Members[0]) // mid-stream: the writer is committing
	acked := w.finish(t)

	actions := planAndReconcile(t, m, s)
	var kinds []string
	for _, a := range actions {
		kinds = append(kinds, a.String())
	}
	if len(actions) != 2 || actions[0].Kind != topology.StepPromote || actions[1].Kind != topology.StepReplace || actions[1].Node != "n1" {
		t.Fatalf("plan %v, want promote (which points the other standby at the new primary), replace n1", kinds)
	}
	primary := wantHealthy(t, m, s, "quorum")
	if primary.Name != actions[0].Node {
		t.Fatalf("primary is %s, want the promoted %s", primary.Name, actions[0].Node)
	}
	checkAcked(t, ctx, primary, acked)
}

// TestPrimaryAndStandbyLostTogether: n3 stops, the writer goes on (n2 alone acknowledges its commits under
// ANY 1), then n1 and n2 are lost together and n3 is started again, behind. No survivor is proven to hold
// every acknowledged commit (here n3 provably lacks some), so the plan refuses, naming n3's position and the
// manual way out, and changes nothing; it promoted n3 and lost them before. After n3 is promoted by hand
// (the accepted loss), the next plan copies the lost nodes from it.
func TestPrimaryAndStandbyLostTogether(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	create(t, m, s)
	ctx := ctxT(t)
	w := startWriter(t, ctx, s.Members[0], 1)
	w.waitFor(t, 200)
	n3 := localcluster.Node(s.Members[2], localnode.RoleStandby)
	if err := m.Engine().Stop(ctx, n3, "fast"); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.count.Load()+200) // n2 alone acknowledges these
	lose(t, m, s.Members[0])
	lose(t, m, s.Members[1])
	acked := w.finish(t)
	if err := m.Engine().Start(ctx, n3); err != nil {
		t.Fatal(err)
	}
	st, err := m.Observe(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	pos := st[2].ReplayLSN // a restarted standby reports where it started receiving, and what it replayed
	if pos == "" {
		pos = st[2].FlushLSN
	}
	if st[2].Name != "n3" || pos == "" {
		t.Fatalf("n3 observed as %+v; want its WAL position", st[2])
	}
	actions, err := m.PlanSteps(ctx, s, st)
	accept := regexp.MustCompile(`set accept_data_loss_at_lsn = "([0-9A-F]+/[0-9A-F]+)"`).FindStringSubmatch(fmt.Sprint(err))
	if !errors.Is(err, topology.ErrQuorumLost) || accept == nil || !strings.Contains(err.Error(), pos) {
		t.Fatalf("primary and standby lost together: plan %v, %v; want a refusal naming n3's position %s and the attribute that accepts it", actions, err, pos)
	}
	t.Logf("refused: %v", err)
	// A value for another position (one left from an earlier loss) accepts nothing.
	s.AcceptLossAt = "0/1000000"
	if _, err := m.PlanSteps(ctx, s, st); !errors.Is(err, topology.ErrQuorumLost) || !strings.Contains(err.Error(), "n3 is not there") {
		t.Fatalf("the loss accepted at another position: %v; want the refusal", err)
	}
	if after, err := m.Observe(ctx, s); err != nil || after[2].State != localcluster.StateRunning || after[2].Role != topology.RoleStandby {
		t.Fatalf("n3 after the refusal: %+v, %v; want it untouched, a running standby", after, err)
	}

	// The accepted loss: accept_data_loss_at_lsn at n3's position; the apply promotes n3 and copies n1 and
	// n2 from it.
	s.AcceptLossAt = accept[1]
	actions = planAndReconcile(t, m, s)
	if len(actions) == 0 || actions[0].Kind != topology.StepPromote || actions[0].Node != "n3" || !strings.Contains(actions[0].Reason, "accept_data_loss_at_lsn") {
		t.Fatalf("the accepted loss: plan %v; want n3 promoted, saying why", actions)
	}
	s.AcceptLossAt = ""
	primary := wantHealthy(t, m, s, "quorum")
	rows, err := connect(t, ctx, primary).Query(ctx, "SELECT n FROM acked")
	if err != nil {
		t.Fatal(err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(have) >= len(acked) {
		t.Fatalf("n3 holds %d rows of %d acknowledged: the test meant it to lack those n2 alone acknowledged", len(have), len(acked))
	}
	t.Logf("n3 held %d of the %d acknowledged commits: promoting it automatically would have lost %d", len(have), len(acked), len(acked)-len(have))
}

// TestPrimaryLossWithStoppedStandby loses the primary while n3 is stopped
// and n2 runs: Observe reads n3's position from its WAL on disk, so the plan
// can show n3 is behind n2, promote n2 and start n3 following it, with every
// acknowledged commit kept.
func TestPrimaryLossWithStoppedStandby(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	create(t, m, s)
	ctx := ctxT(t)
	w := startWriter(t, ctx, s.Members[0], 1)
	w.waitFor(t, 200)
	if err := m.Engine().Stop(ctx, localcluster.Node(s.Members[2], localnode.RoleStandby), "fast"); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, w.count.Load()+200) // n2 alone acknowledges these
	lose(t, m, s.Members[0])         // mid-stream: the writer is committing
	acked := w.finish(t)

	st := observe(t, m, s)
	n2, n3 := st["n2"], st["n3"]
	if n3.State != localcluster.StateStopped || n3.Role != topology.RoleStandby || n3.FlushLSN == "" || n3.Timeline == 0 || n3.Error != "" {
		t.Fatalf("stopped n3 observed as %+v; want a standby with its WAL position and timeline", n3)
	}
	p2, err2 := topology.ParseLSN(n2.FlushLSN)
	p3, err3 := topology.ParseLSN(n3.FlushLSN)
	if err2 != nil || err3 != nil || p3 >= p2 {
		t.Fatalf("n2 at %s (%v), stopped n3 at %s (%v); want n3 behind: n2 acknowledged commits after n3 stopped", n2.FlushLSN, err2, n3.FlushLSN, err3)
	}
	t.Logf("n2 flushed %s; stopped n3 holds WAL to %s (replayed at least %s)", n2.FlushLSN, n3.FlushLSN, n3.ReplayLSN)

	actions := planAndReconcile(t, m, s)
	var kinds []string
	for _, a := range actions {
		kinds = append(kinds, a.String())
	}
	if want := []string{"promote n2", "start n3 as a standby of n2", "replace n1 from n2"}; !slices.Equal(kinds, want) {
		t.Fatalf("plan %v, want %v", kinds, want)
	}
	primary := wantHealthy(t, m, s, "quorum")
	if primary.Name != "n2" {
		t.Fatalf("primary is %s, want the promoted n2", primary.Name)
	}
	checkAcked(t, ctx, primary, acked)
	waitReplayed(t, ctx, primary, s.Members[2])
	checkAcked(t, ctx, s.Members[2], acked)
}

func TestApplySettings(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	s.Parameters = map[string]string{"work_mem": "4MB", "shared_buffers": "32MB"}
	create(t, m, s)
	ctx := ctxT(t)
	primary := s.Members[0]

	var mu sync.Mutex
	var seen []string // "restarted: name=state/sync ..." after each restart
	localcluster.SetAfterRestart(m, func(ctx context.Context, name string) {
		out, err := m.Engine().Psql(ctx, localcluster.Node(primary, localnode.RolePrimary), "",
			"SELECT string_agg(application_name || '=' || state || '/' || sync_state, ' ' ORDER BY application_name) FROM pg_stat_replication")
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s: %s %v", name, out, err))
	})
	show := func(name string) string {
		t.Helper()
		var v string
		if err := connect(t, ctx, primary).QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	s.Parameters = map[string]string{"work_mem": "8MB", "shared_buffers": "32MB"}
	restarted, err := m.ApplySettings(ctx, s)
	if err != nil || len(restarted) != 0 {
		t.Fatalf("work_mem: restarted %v, %v; want nothing restarted", restarted, err)
	}
	if got := show("work_mem"); got != "8MB" {
		t.Errorf("work_mem is %s after the reload, want 8MB", got)
	}

	s.Parameters = map[string]string{"work_mem": "8MB", "shared_buffers": "48MB"}
	restarted, err = m.ApplySettings(ctx, s)
	if err != nil {
		t.Fatalf("shared_buffers: %v", err)
	}
	if want := []string{"n2", "n3", "n1"}; !slices.Equal(restarted, want) {
		t.Fatalf("shared_buffers restarted %v, want %v (standbys first, the primary last)", restarted, want)
	}
	t.Logf("sync states after each restart:\n%s", strings.Join(seen, "\n"))
	if len(seen) != 3 {
		t.Fatalf("%d restart records, want 3", len(seen))
	}
	for i, name := range []string{"n2", "n3"} {
		if !strings.Contains(seen[i], name+"=streaming/quorum") {
			t.Errorf("after restarting %s the primary saw %q, want %s streaming in quorum", name, seen[i], name)
		}
	}
	if !strings.Contains(seen[2], "n2=streaming/quorum n3=streaming/quorum") {
		t.Errorf("after restarting the primary: %q, want both standbys streaming in quorum", seen[2])
	}
	for _, mb := range s.Members {
		out, err := m.Engine().Psql(ctx, localcluster.Node(mb, localnode.RoleStandby), "", "SHOW shared_buffers")
		if err != nil || out != "48MB" {
			t.Errorf("%s: shared_buffers %q, %v; want 48MB", mb.Name, out, err)
		}
	}

	s.Synchronous.Number = 2
	restarted, err = m.ApplySettings(ctx, s)
	if err != nil || len(restarted) != 0 {
		t.Fatalf("synchronous: restarted %v, %v; want nothing restarted", restarted, err)
	}
	if got := show("synchronous_standby_names"); got != "ANY 2 (n2, n3)" {
		t.Errorf("synchronous_standby_names is %q, want ANY 2 (n2, n3)", got)
	}
	if restarted, err := m.ApplySettings(ctx, s); err != nil || len(restarted) != 0 {
		t.Errorf("applying the same settings again: restarted %v, %v", restarted, err)
	}
}

// withArchive gives s a pgBackRest archive in a posix repository of its own (stanza "demo", a full backup
// at create) and returns the repository's path.
func withArchive(t *testing.T, m *localcluster.Manager, s *localcluster.Spec) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "pgnvme-lc-repo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	// The repository belongs to the server user, made the way the product makes its directories.
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(parent, "repo")
	if err := m.Engine().MkdirAllOwned(repo, 0o750); err != nil {
		t.Fatal(err)
	}
	s.Archive = &bootstrap.Archive{
		PgBackRestOptions: map[string]string{"repo1-type": "posix", "repo1-path": repo, "repo1-retention-full": "1"},
		Stanza:            "demo",
		BackupOnCreate:    true,
	}
	return repo
}

func TestArchiveSeedsStandbys(t *testing.T) {
	t.Parallel()
	m, s, root := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	repo := withArchive(t, m, &s)
	create(t, m, s)
	wantHealthy(t, m, s, "quorum")
	restores := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(root, name+".pgbackrest", "log", "demo-restore.log"))
		return strings.Count(string(b), "restore command begin")
	}
	for _, name := range []string{"n2", "n3"} {
		if n := restores(name); n != 1 {
			t.Errorf("%s: %d pgbackrest restores logged, want 1 (seeded from the archive)", name, n)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Members[1].DataDir, "backup_label.old")); err == nil {
		t.Logf("n2 has backup_label.old")
	}

	ctx := ctxT(t)
	w := startWriter(t, ctx, s.Members[0], 1)
	w.waitFor(t, 100)
	lose(t, m, s.Members[2])
	actions := planAndReconcile(t, m, s)
	if len(actions) != 1 || actions[0].Kind != topology.StepReplace {
		t.Fatalf("plan %v, want one replace", actions)
	}
	wantHealthy(t, m, s, "quorum")
	if n := restores("n3"); n != 2 {
		t.Errorf("n3: %d pgbackrest restores logged, want 2 (created and reseeded from the archive)", n)
	}
	w.waitFor(t, w.count.Load()+50)
	acked := w.finish(t)
	waitReplayed(t, ctx, s.Members[0], s.Members[2])
	checkAcked(t, ctx, s.Members[2], acked)

	// Primary loss: the old primary comes back from the archive on the new timeline.
	w = startWriter(t, ctx, s.Members[0], acked[len(acked)-1]+1_000_000)
	w.waitFor(t, 100)
	lose(t, m, s.Members[0])
	acked = append(acked, w.finish(t)...)
	actions = planAndReconcile(t, m, s)
	if len(actions) != 2 || actions[1].Kind != topology.StepReplace || actions[1].Node != "n1" {
		t.Fatalf("plan %v, want promote, replace n1", actions)
	}
	primary := wantHealthy(t, m, s, "quorum")
	checkAcked(t, ctx, primary, acked)
	if n := restores("n1"); n != 1 {
		t.Errorf("n1: %d pgbackrest restores logged, want 1 (reseeded from the archive)", n)
	}

	// Every member lost: the history is in the archive only, and the plan restores the first member from
	// it (TestEveryMemberLostIsRestored applies that); planning leaves the archive as it was.
	archived := listTree(t, repo)
	for _, mb := range s.Members {
		lose(t, m, mb)
	}
	st, err := m.Observe(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if actions, err := m.PlanSteps(ctx, s, st); err != nil || len(actions) != 3 || actions[0].Kind != topology.StepRestore || actions[0].Nodes[0] != "n1" {
		t.Fatalf("every member lost with an archive: plan %v, %v; want n1 restored from the archive, then n2 and n3 replaced from it", actions, err)
	}
	if after := listTree(t, repo); !slices.Equal(after, archived) {
		t.Errorf("the archive changed: %d entries before, %d after", len(archived), len(after))
	}

	// A new cluster pointed at that archive (same repository, same stanza) is refused by the plan and by
	// the apply, which create nothing; the old history is intact, byte for byte.
	root2, err := os.MkdirTemp("", "pgnvme-lc-new-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root2) })
	if err := os.Chmod(root2, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := cluster.FromInput(cluster.Input{Name: s.Archive.Stanza, NodeCount: new(1),
		Archive: &cluster.ArchiveInput{PgBackRestOptions: s.Archive.PgBackRestOptions},
		Blocks:  []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root2, "data"), PortBase: acctest.FreePortBase(t, 1)}}})
	p := localcluster.NewPlatform()
	_, perr := p.Plan(ctx, fresh, cluster.Prior{})
	_, cerr := p.Create(ctx, fresh)
	for what, err := range map[string]error{"plan": perr, "apply": cerr} {
		var fe *cluster.FieldError
		if !errors.As(err, &fe) || fe.Summary != "Archive Holds Another Cluster's History" || !strings.Contains(fe.Detail, "pgBackRest stanza demo in "+repo) {
			t.Errorf("%s of a new cluster on the old archive: %v; want it refused at archive", what, err)
		}
	}
	if entries, err := os.ReadDir(root2); err != nil || len(entries) != 0 {
		t.Errorf("the refused cluster made %v (%v)", entries, err)
	}
	if after := listTree(t, repo); !slices.Equal(after, archived) {
		t.Errorf("the archive changed: %d entries before, %d after", len(archived), len(after))
	}
}

// TestFailoverLeavesNoHoleInTheArchive: a primary whose archive is down holds WAL the archive lacks, which
// its standbys received. Lost with its disk, its promoted successor hands that WAL to its own archiver
// first, and the archive then holds every segment of the old timeline up to the promotion, with no hole.
func TestFailoverLeavesNoHoleInTheArchive(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	repo := withArchive(t, m, &s)
	create(t, m, s)
	wantHealthy(t, m, s, "quorum")
	ctx := ctxT(t)
	old := s.Members[0]
	c := connect(t, ctx, old)
	// The archive stops taking the primary's WAL, as with its endpoint down.
	for _, q := range []string{"ALTER SYSTEM SET archive_command = '/bin/false'", "SELECT pg_reload_conf()"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Commits under a writer, and complete segments the primary cannot archive.
	w := startWriter(t, ctx, old, 1)
	var last string
	for i := range 4 {
		w.waitFor(t, int64(200*(i+1)))
		if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal() - 1)").Scan(&last); err != nil {
			t.Fatal(err)
		}
	}
	acked := w.finish(t)
	// The moment just before the failover that a point-in-time restore will aim at: after every
	// acknowledged commit.
	var target string
	if err := c.QueryRow(ctx, `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`).Scan(&target); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal() - 1)").Scan(&last); err != nil {
		t.Fatal(err)
	}
	for _, sb := range s.Members[1:] {
		waitReplayed(t, ctx, old, sb)
	}
	var archivedUpTo string
	var failed int64
	if err := c.QueryRow(ctx, "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&archivedUpTo, &failed); err != nil {
		t.Fatal(err)
	}
	if failed == 0 || archivedUpTo >= last {
		t.Fatalf("the primary archived up to %q (%d failures); want it behind %s", archivedUpTo, failed, last)
	}
	t.Logf("the primary archived up to %s and failed %d times; the last complete segment is %s", archivedUpTo, failed, last)
	// A standby's walreceiver marks a segment done only once it starts writing the next one; whether it
	// did before the primary is lost is a race (a WAL record after the switch, such as the background
	// writer's, decides it). The test takes the case the race can lose, which CI met: the last complete
	// segment without a status file on every standby. The promotion must hand it over all the same.
	for _, sb := range s.Members[1:] {
		done := filepath.Join(sb.DataDir, "pg_wal", "archive_status", last+".done")
		if err := os.Remove(done); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}

	lose(t, m, old)
	actions := planAndReconcile(t, m, s)
	if len(actions) == 0 || actions[0].Kind != topology.StepPromote {
		t.Fatalf("plan %v, want a promotion first", actions)
	}
	primary := wantHealthy(t, m, s, "quorum")
	checkAcked(t, ctx, primary, acked)
	// Every segment of timeline 1, from the first archived to the last complete one, is in the archive.
	acctest.WaitFor(t, 60*time.Second, "the archive to hold every segment of timeline 1", func() (bool, string) {
		hole := archiveHole(t, repo, last)
		return hole == "", hole
	})
	// The steps before took part of ctx's budget (stepTimeout), more of it on a loaded machine: the steps
	// after the failover get their own.
	ctx = ctxT(t)
	// The verification every refresh runs (archive_status.first_missing_wal) agrees across the timeline
	// switch: no segment missing from the backup's first to the newest.
	st, err := m.Observe(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.ArchiveHealth(ctx, s, st)
	if err != nil || h == nil || h.Hole != "" || h.LastArchived < last {
		t.Fatalf("after the failover: %+v, %v; want no hole and the newest segment at or past %s", h, err, last)
	}
	t.Logf("after the failover the archive holds %d segments up to %s, with no hole", h.Segments, h.LastArchived)
	// A point-in-time restore from the archive alone to the moment before the failover holds every
	// acknowledged commit. A commit on the new timeline, archived, lies after the target: recovery crosses
	// the timeline switch and stops before it.
	pc := connect(t, ctx, primary)
	for _, q := range []string{"INSERT INTO acked VALUES (-1)", "SELECT pg_switch_wal()"} {
		if _, err := pc.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var after string
	if err := pc.QueryRow(ctx, "SELECT pg_walfile_name(pg_current_wal_lsn() - 1)").Scan(&after); err != nil {
		t.Fatal(err)
	}
	waitArchiveHolds(t, ctx, m, s, after) // the new timeline's commit
	// The backup scheduler verifies the archive with pgBackRest once the new primary archived what the
	// switch left and a complete segment of its own (the one just switched), and records the verdict in
	// the archive, where the refresh reads it.
	vctx := ctxT(t) // the wait below may take all of stepTimeout
	acctest.WaitFor(t, 90*time.Second, "the archive's verification after the switch to timeline 2", func() (bool, string) {
		st, err := m.Observe(vctx, s)
		if err != nil {
			return false, err.Error()
		}
		if h, err = m.ArchiveHealth(vctx, s, st); err != nil || h == nil {
			return false, fmt.Sprint(err)
		}
		return h.Verification != nil && h.Verification.Timeline >= 2, fmt.Sprintf("verification %+v", h.Verification)
	})
	if v := h.Verification; !v.OK {
		t.Fatalf("the archive's verification after the failover failed: %+v", v)
	}
	for _, w := range h.Warnings {
		t.Errorf("after the verification: %s: %s", w.Summary, w.Detail)
	}
	t.Logf("pgbackrest verify after the failover (timeline %d, %s): %s", h.Verification.Timeline, h.Verification.VerifiedAt.Format(time.RFC3339), h.Verification.Detail)

	pb := acctest.NewPgBackRest(t, map[string]string{"repo1-type": "posix", "repo1-path": repo}, nil)
	restored := acctest.PrepareRestore(t)
	pb.Restore(t, target, restored.Node.DataDir)
	acctest.StartRestored(t, restored)
	defer restored.Stop(t)
	want := fmt.Sprintf("%d|%d|0", len(acked), acked[len(acked)-1])
	if got := restored.Psql(t, "postgres", "SELECT count(*) FILTER (WHERE n > 0), max(n), count(*) FILTER (WHERE n < 0) FROM acked"); got != want {
		t.Fatalf("restored to %s (before the failover): count|max|rows after the target = %s, want %s\n%s", target, got, want, restored.LogTail(30))
	}
	t.Logf("a point-in-time restore to %s, just before the failover, holds all %d acknowledged commits and nothing after", target, len(acked))
}

// archiveHole is acctest.WALHole over the files of the pgBackRest repository at repo.
func archiveHole(t *testing.T, repo, last string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(filepath.Join(repo, "archive"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, d.Name())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return acctest.WALHole(names, last)
}

// listTree lists every file under root with its size and SHA-256 (a link with its target), sorted. A file
// that goes while the walk runs is left out: one being written beside it (a cluster archiving into the same
// repository); a file that was listed before and is gone still shows as a difference.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone while the walk ran: a file being written (pgBackRest's .tmp, renamed when complete)
		}
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			target, err := os.Readlink(p)
			out = append(out, fmt.Sprintf("%s -> %s", p, target))
			return err
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %x", p, info.Size(), sha256.Sum256(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// preferredStandbysStopped makes a cluster with data durability "preferred" and a table w on its primary,
// checks that one durability watcher runs, and stops both standbys: where the durability tests start.
func preferredStandbysStopped(t *testing.T) (*localcluster.Manager, localcluster.Spec, string, *pgx.Conn) {
	t.Helper()
	m, s, root := newCluster(t, anyOne(bootstrap.DurabilityPreferred))
	create(t, m, s)
	ctx := ctxT(t)
	if ok, err := m.WatcherRunning(s); err != nil || !ok || len(watcherPIDs(t, root)) != 1 {
		t.Fatalf("preferred: WatcherRunning %v, %v, watcher processes %v; want one", ok, err, watcherPIDs(t, root))
	}
	conn := connect(t, ctx, s.Members[0])
	if _, err := conn.Exec(ctx, "CREATE TABLE w (n int)"); err != nil {
		t.Fatal(err)
	}
	for _, mb := range s.Members[1:] {
		if err := m.Engine().Stop(ctx, localcluster.Node(mb, localnode.RoleStandby), "fast"); err != nil {
			t.Fatal(err)
		}
	}
	return m, s, root, conn
}

func TestEnforceDurability(t *testing.T) {
	t.Parallel()
	m, s, root, conn := preferredStandbysStopped(t)
	ctx := ctxT(t)
	primary := s.Members[0]

	for _, name := range []string{"n2", "n3"} {
		// Stopped: role from standby.signal, timeline from pg_controldata, WAL position from its pg_wal.
		if st := observe(t, m, s)[name]; st.State != localcluster.StateStopped || st.Role != topology.RoleStandby || st.Timeline != 1 || st.FlushLSN == "" || st.Error != "" {
			t.Errorf("stopped %s observed as %+v", name, st)
		}
	}

	value, degraded, err := m.EnforceDurability(ctx, s)
	if err != nil || value != "" || !degraded {
		t.Fatalf("preferred: %q, degraded %v, %v; want \"\" (asynchronous), degraded", value, degraded, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = conn.Exec(cctx, "INSERT INTO w VALUES (1)")
	cancel()
	if err != nil {
		t.Fatalf("preferred, no standby: the commit did not succeed within 5 s: %v", err)
	}

	s.Synchronous.DataDurability = bootstrap.DurabilityRequired
	value, degraded, err = m.EnforceDurability(ctx, s)
	if err != nil || value != "ANY 1 (n2, n3)" || !degraded {
		t.Fatalf("required: %q, degraded %v, %v; want ANY 1 (n2, n3), degraded", value, degraded, err)
	}
	if ok, err := m.WatcherRunning(s); err != nil || ok || len(watcherPIDs(t, root)) != 0 {
		t.Fatalf("required: WatcherRunning %v, %v, watcher processes %v; want none", ok, err, watcherPIDs(t, root))
	}
	if _, err := os.Stat(filepath.Join(root, "pgnvme-durability.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("required: the watcher's PID file is still there (%v)", err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() {
		_, err := connect(t, ctx, primary).Exec(wctx, "INSERT INTO w VALUES (2)")
		result <- err
	}()
	select {
	case err := <-result:
		t.Fatalf("required, no standby: the commit returned (%v) instead of waiting", err)
	case <-time.After(1500 * time.Millisecond):
	}
	var waiting int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").Scan(&waiting); err != nil || waiting != 1 {
		t.Errorf("backends waiting in SyncRep: %d, %v; want 1", waiting, err)
	}
	wcancel()
	select {
	case err := <-result:
		t.Logf("the waiting commit ended on cancel: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting commit did not end 10 s after its context was cancelled")
	}
}

// watcherPIDs lists the processes that run the durability watcher script of
// the cluster under root, without the script's own subshells.
func watcherPIDs(t *testing.T, root string) []int {
	t.Helper()
	script := filepath.Join(root, "pgnvme-durability.sh")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), script) {
			pids = append(pids, pid)
		}
	}
	return slices.DeleteFunc(pids, func(pid int) bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true // gone
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		ppid, _ := strconv.Atoi(fields[1])
		return slices.Contains(pids, ppid) // a subshell of the script
	})
}

// showSync is the primary's synchronous_standby_names as a new session sees it.
func showSync(t *testing.T, m *localcluster.Manager, mb localcluster.Member) string {
	t.Helper()
	v, err := m.Engine().Psql(ctxT(t), localcluster.Node(mb, localnode.RolePrimary), "", "SHOW synchronous_standby_names")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDurabilityWatcher: with data durability "preferred" the watcher keeps
// the primary writable between applies when both standbys stop, and puts the
// quorum back when they return; Destroy leaves no watcher.
func TestDurabilityWatcher(t *testing.T) {
	t.Parallel()
	m, s, root, conn := preferredStandbysStopped(t)
	stopped := time.Now()
	ctx := ctxT(t)
	primary := s.Members[0]
	logTail := func() string {
		b, _ := os.ReadFile(filepath.Join(root, "pgnvme-durability.log"))
		return string(b)
	}
	cctx, cancel := context.WithDeadline(ctx, stopped.Add(5*time.Second))
	_, err := conn.Exec(cctx, "INSERT INTO w VALUES (1)")
	cancel()
	if err != nil {
		t.Fatalf("both standbys stopped: the commit did not succeed within 5 s: %v\nwatcher log:\n%s", err, logTail())
	}
	if v := showSync(t, m, primary); v != "" {
		t.Fatalf("both standbys stopped: synchronous_standby_names = %q, want \"\"", v)
	}
	t.Logf("committed %s after both standbys stopped", time.Since(stopped).Round(time.Millisecond))

	for _, mb := range s.Members[1:] {
		if err := m.Engine().Start(ctx, localcluster.Node(mb, localnode.RoleStandby)); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	for {
		st := observe(t, m, s)
		v := showSync(t, m, primary)
		if v == "ANY 1 (n2, n3)" && st["n2"].SyncState == "quorum" && st["n3"].SyncState == "quorum" {
			break
		}
		if time.Since(started) > 10*time.Second {
			t.Fatalf("10 s after the standbys started: synchronous_standby_names = %q, n2 %q, n3 %q; want ANY 1 (n2, n3), both quorum\nwatcher log:\n%s",
				v, st["n2"].SyncState, st["n3"].SyncState, logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("quorum back %s after the standbys started", time.Since(started).Round(time.Millisecond))
	if ok, err := m.WatcherRunning(s); err != nil || !ok {
		t.Fatalf("WatcherRunning: %v, %v; want true", ok, err)
	}
	t.Logf("watcher log:\n%s", logTail())

	if err := m.Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	if pids := watcherPIDs(t, root); len(pids) != 0 {
		t.Fatalf("after Destroy the watcher still runs: PIDs %v", pids)
	}
	for _, f := range []string{"pgnvme-durability.sh", "pgnvme-durability.pid", "pgnvme-durability.log"} {
		if _, err := os.Stat(filepath.Join(root, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Destroy %s is still there (%v)", f, err)
		}
	}
}

func TestPreflightPortInUse(t *testing.T) {
	t.Parallel()
	m, s, root := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Members[1].Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = m.Preflight(ctxT(t), s)
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(s.Members[1].Port)) {
		t.Fatalf("Preflight: %v; want an error naming port %d", err, s.Members[1].Port)
	}
	t.Logf("Preflight: %v", err)
	created, err := m.Create(ctxT(t), s)
	if err == nil || len(created) != 0 {
		t.Fatalf("Create: created %v, %v; want an error and nothing created", created, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Errorf("%s holds %d entries after a failed preflight, want none", root, len(entries))
	}
}

// TestWatcherScriptBounded: the watcher exits by itself when no member
// answers for GIVEUP seconds, and when its PID file stops naming it.
func TestWatcherScriptBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "pgnvme-durability.sh")
	if err := os.WriteFile(script, localcluster.WatcherScript, 0o755); err != nil {
		t.Fatal(err)
	}
	port := acctest.FreePorts(t, 1)[0] // nothing listens there
	start := func(name, giveup string) (*exec.Cmd, string, *strings.Builder) {
		pidfile := filepath.Join(dir, name+".pid")
		var out strings.Builder
		cmd := exec.Command("/bin/sh", script, pidfile, "/usr/lib/postgresql/15/bin/psql", "127.0.0.1", "postgres", giveup, "4",
			"n1", strconv.Itoa(port), "SELECT 1", "''")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return cmd, pidfile, &out
	}
	wait := func(cmd *exec.Cmd, within time.Duration) error {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(within):
			_ = cmd.Process.Kill()
			return errors.Join(fmt.Errorf("still running after %s", within), <-done)
		}
	}
	giveUp, _, giveUpOut := start("giveup", "2")
	owned, pidfile, ownedOut := start("owned", "60")
	time.Sleep(1500 * time.Millisecond)
	if err := os.Remove(pidfile); err != nil {
		t.Fatal(err)
	}
	if err := wait(owned, 3*time.Second); err != nil || !strings.Contains(ownedOut.String(), "no longer names me") {
		t.Errorf("PID file removed: %v; output:\n%s", err, ownedOut)
	}
	if err := wait(giveUp, 5*time.Second); err != nil || !strings.Contains(giveUpOut.String(), "no member answered for 2s") {
		t.Errorf("no member answering: %v; output:\n%s", err, giveUpOut)
	}
}
