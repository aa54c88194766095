package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// TestEveryMemberLostIsRestored: a cluster that archives with pgBackRest loses every member (processes
// killed, data directories deleted) under a writer that records each acknowledged commit and the WAL
// position after it. The plan says the apply restores the cluster from the archive to its end and names
// the last segment archived; the apply does that (the provider's Platform, as Terraform calls it). Every
// commit acknowledged within the archived WAL is there, nothing that was never committed is, and the
// commits after it (the RPO) are counted. The restored cluster forms (a primary and two quorum standbys),
// archives on the next timeline, and a second loss is restored the same way from the same archive.
func TestEveryMemberLostIsRestored(t *testing.T) {
	t.Parallel()
	root, m, repo := scratchRepo(t, "pgnvme-restore-")
	base := acctest.FreePortBase(t, 3)
	s := cluster.FromInput(cluster.Input{Name: "tf-acc-restore", NodeCount: new(3),
		Parameters: map[string]string{"archive_timeout": "2s"},
		Archive:    &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "posix", "repo1-path": repo}},
		Blocks:     []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root, "data"), PortBase: base}}})
	p := localcluster.NewPlatform()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := p.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		if err := p.Delete(ctx, s, cluster.Prior{Members: st.Members}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ls, err := localcluster.SpecOf(s, st.Members)
	if err != nil {
		t.Fatal(err)
	}

	written := map[int]bool{} // every number any writer sent
	for round := 1; round <= 2; round++ {
		primary := wantFormed(t, p, s, st.Members)
		w := startLSNWriter(t, ctx, primary.Port, round*1_000_000)
		w.waitFor(t, 300)
		// Complete segments reach the archive (archive_timeout switches them too) while the writer runs.
		waitArchived(t, ctx, m, ls, primary.Port)
		w.waitFor(t, w.count()+200)
		for _, mb := range st.Members {
			lose(t, m, localcluster.Member{Name: mb.Name, Port: mb.Port, DataDir: mb.DataDir})
		}
		acked := w.finish(t)
		for n := range w.attempted() {
			written[n] = true
		}
		lost, err := m.Observe(ctx, ls)
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.ArchiveHealth(ctx, ls, lost)
		if err != nil || h == nil || h.LastArchived == "" {
			t.Fatalf("round %d: the archive after the loss: %+v, %v", round, h, err)
		}

		plan, err := p.Plan(ctx, s, cluster.Prior{Members: st.Members})
		if err != nil {
			t.Fatalf("round %d: plan: %v", round, err)
		}
		t.Logf("round %d: the plan:\n%s", round, plan.Actions)
		for _, want := range []string{"1. restore the cluster from its archive onto node-1", "to the end of the archive, last segment " + h.LastArchived,
			"commits after that are lost", "2. replace node-2 from node-1", "3. replace node-3 from node-1"} {
			if !strings.Contains(plan.Actions, want) {
				t.Errorf("round %d: the plan does not say %q", round, want)
			}
		}
		start := time.Now()
		if st, err = p.Update(ctx, s, cluster.Prior{Members: st.Members}); err != nil {
			t.Fatalf("round %d: apply: %v", round, err)
		}
		t.Logf("round %d: the apply restored the cluster in %s", round, time.Since(start).Round(time.Millisecond))
		primary = wantFormed(t, p, s, st.Members)
		if primary.Name != "node-1" {
			t.Errorf("round %d: %s leads after the restore, want node-1", round, primary.Name)
		}
		checkRestored(t, ctx, primary.Port, acked, written, h.LastArchived)

		// The restored primary archives on the next timeline, to the same archive.
		var tl int
		c := connect(t, ctx, localcluster.Member{Name: primary.Name, Port: primary.Port})
		if err := c.QueryRow(ctx, "SELECT timeline_id FROM pg_control_checkpoint()").Scan(&tl); err != nil {
			t.Fatal(err)
		}
		if tl <= round {
			t.Errorf("round %d: the restored primary is on timeline %d, want a timeline after %d", round, tl, round)
		}
		var seg string
		if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal() - 1)").Scan(&seg); err != nil {
			t.Fatal(err)
		}
		if h := waitArchiveHolds(t, ctx, m, ls, seg); h.Hole != "" {
			t.Errorf("round %d: after the restore the archive misses %s", round, h.Hole)
		}
		t.Logf("round %d: the restored primary (timeline %d) archives to the same archive: %s is there", round, tl, seg)
	}
}

// scratchRepo is a temporary directory the server's user can reach (removed after the test), a Manager,
// and a pgBackRest repository directory in it owned by that user.
func scratchRepo(t *testing.T, prefix string) (root string, m *localcluster.Manager, repo string) {
	t.Helper()
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if m, err = localcluster.NewManager(""); err != nil {
		t.Fatal(err)
	}
	repo = filepath.Join(root, "repo")
	if err := m.Engine().MkdirAllOwned(repo, 0o750); err != nil {
		t.Fatal(err)
	}
	return root, m, repo
}

// wantFormed reads the cluster through the platform: node-1..3 running, one primary, the two others
// streaming in its quorum. It returns the primary.
func wantFormed(t *testing.T, p *localcluster.Platform, s cluster.Spec, prior []cluster.Member) cluster.Member {
	t.Helper()
	var st cluster.Status
	var primary cluster.Member
	acctest.WaitFor(t, time.Minute, "a primary and two quorum standbys", func() (bool, string) {
		var err error
		if st, err = p.Read(ctxT(t), s, cluster.Prior{Members: prior}); err != nil {
			return false, err.Error()
		}
		primaries, running := 0, 0
		for _, mb := range st.Members {
			if mb.State == cluster.StateRunning {
				running++
			}
			if mb.Role == cluster.RolePrimary {
				primary = mb
				primaries++
			}
		}
		return primaries == 1 && running == 3 && strings.HasPrefix(st.SynchronousStandbyNames, "ANY 1 ") && !st.Degraded,
			fmt.Sprintf("%+v, synchronous_standby_names %q, degraded %v", st.Members, st.SynchronousStandbyNames, st.Degraded)
	})
	c := connect(t, ctxT(t), localcluster.Member{Name: primary.Name, Port: primary.Port})
	var quorum int
	if err := c.QueryRow(ctxT(t), "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'quorum'").Scan(&quorum); err != nil || quorum != 2 {
		t.Fatalf("%d standbys in %s's quorum (%v), want 2", quorum, primary.Name, err)
	}
	return primary
}

// waitArchived switches the WAL segment on the primary at port and waits until the archive holds it.
func waitArchived(t *testing.T, ctx context.Context, m *localcluster.Manager, ls localcluster.Spec, port int) {
	t.Helper()
	var seg string
	if err := connect(t, ctx, localcluster.Member{Name: "primary", Port: port}).QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal() - 1)").Scan(&seg); err != nil {
		t.Fatal(err)
	}
	waitArchiveHolds(t, ctx, m, ls, seg)
}

// waitArchiveHolds waits until the archive's newest segment (ArchiveHealth, as a refresh reads it) is seg
// or later, and returns that reading.
func waitArchiveHolds(t *testing.T, ctx context.Context, m *localcluster.Manager, ls localcluster.Spec, seg string) *archive.Health {
	t.Helper()
	var h *archive.Health
	acctest.WaitFor(t, time.Minute, "segment "+seg+" in the archive", func() (bool, string) {
		st, err := m.Observe(ctx, ls)
		if err != nil {
			return false, err.Error()
		}
		if h, err = m.ArchiveHealth(ctx, ls, st); err != nil || h == nil {
			return false, fmt.Sprint(err)
		}
		return h.LastArchived >= seg, "newest " + h.LastArchived
	})
	return h
}

// checkRestored checks the restored primary's table acked against the writer's record: every commit
// acknowledged with its WAL position inside the archive's last segment (lastWAL) or before is there;
// nothing that was not attempted is there. It reports the commits lost (the RPO), in commits and seconds.
func checkRestored(t *testing.T, ctx context.Context, port int, acked []ack, attempted map[int]bool, lastWAL string) {
	t.Helper()
	end := segmentEnd(t, lastWAL)
	rows, err := connect(t, ctx, localcluster.Member{Name: "restored", Port: port}).Query(ctx, "SELECT n FROM acked")
	if err != nil {
		t.Fatal(err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	present := map[int]bool{}
	for _, n := range have {
		if !attempted[n] {
			t.Errorf("row %d is in the restored cluster but was never written", n)
		}
		present[n] = true
	}
	var inArchive, missing, after, lost int
	var lastKept, lastAcked time.Time
	for _, a := range acked {
		lastAcked = a.at
		if a.lsn <= end {
			inArchive++
			if !present[a.n] {
				missing++
			}
		} else {
			after++
		}
		if present[a.n] {
			lastKept = a.at
		} else {
			lost++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of the %d commits acknowledged within the archived WAL (up to %s, end of %s) are missing", missing, inArchive, topology.FormatLSN(end), lastWAL)
	}
	if inArchive < 100 {
		t.Fatalf("only %d acknowledged commits lie within the archived WAL: the test proves too little", inArchive)
	}
	t.Logf("restored: all %d commits acknowledged within the archived WAL (to %s, end of %s) are there; of the %d acknowledged after it, %d are lost "+
		"(RPO: %d commits, %.1f s of writes); %d rows in all, none never written",
		inArchive, topology.FormatLSN(end), lastWAL, after, lost, lost, lastAcked.Sub(lastKept).Seconds(), len(have))
}

// segmentEnd is the WAL position where segment name (16 MiB segments) ends.
func segmentEnd(t *testing.T, name string) uint64 {
	t.Helper()
	if len(name) != 24 {
		t.Fatalf("%q is not a WAL segment name", name)
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("%q is not a WAL segment name", name)
	}
	return log<<32 + (seg+1)<<24
}

// ack is one acknowledged commit: its number, the WAL position after it, and when it was acknowledged.
type ack struct {
	n   int
	lsn uint64
	at  time.Time
}

// lsnWriter commits numbered rows into table acked, one per transaction, and records each acknowledged
// commit with pg_current_wal_lsn() read after it (at or past the commit record's end).
type lsnWriter struct {
	mu    sync.Mutex
	acked []ack
	tried map[int]bool
	stop  chan struct{}
	done  chan error
}

func startLSNWriter(t *testing.T, ctx context.Context, port, from int) *lsnWriter {
	t.Helper()
	if _, err := connect(t, ctx, localcluster.Member{Name: "primary", Port: port}).Exec(ctx, "CREATE TABLE IF NOT EXISTS acked (n int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	w := &lsnWriter{tried: map[int]bool{}, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port))
		if err != nil {
			w.done <- err
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		for n := from; ; n++ {
			select {
			case <-w.stop:
				w.done <- nil
				return
			default:
			}
			w.mu.Lock()
			w.tried[n] = true
			w.mu.Unlock()
			if _, err := conn.Exec(ctx, "INSERT INTO acked VALUES ($1)", n); err != nil {
				w.done <- nil // the server is gone: n was not acknowledged
				return
			}
			var pos string
			if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&pos); err != nil {
				// Acknowledged, but its position is unknown: past every position read so far.
				pos = "FFFFFFFF/FFFFFFFF"
			}
			lsn, err := topology.ParseLSN(pos)
			if err != nil {
				w.done <- err
				return
			}
			w.mu.Lock()
			w.acked = append(w.acked, ack{n: n, lsn: lsn, at: time.Now()})
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *lsnWriter) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(len(w.acked))
}

func (w *lsnWriter) waitFor(t *testing.T, n int64) {
	t.Helper()
	acctest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d acknowledged commits", n), func() (bool, string) {
		return w.count() >= n, fmt.Sprintf("%d", w.count())
	})
}

// finish stops the writer (it stops by itself when its server is gone) and returns its acknowledged commits.
func (w *lsnWriter) finish(t *testing.T) []ack {
	t.Helper()
	close(w.stop)
	if err := <-w.done; err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ack(nil), w.acked...)
}

// attempted are the numbers the writer sent, acknowledged or not.
func (w *lsnWriter) attempted() map[int]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]bool, len(w.tried))
	for n := range w.tried {
		out[n] = true
	}
	return out
}
