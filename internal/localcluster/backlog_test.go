package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// TestArchiveBacklog is the full-disk decision, measured: a node whose data (and pg_wal) lives on its own
// 1 GiB device (local.limits.disk_gib) writes WAL as fast as one connection can (its data does not grow)
// while its archive is down (the repository unwritable).
//
//   - Every segment kept (no max_backlog_gib): pg_wal grows until the device is full and PostgreSQL stops
//     (a PANIC on the failed WAL write). The test logs the WAL rate and the seconds until then.
//   - Bounded (max_backlog_gib = 0.25): the node writes on for longer than that, pg_wal stays near the
//     bound, and once the archive is back the archive health reports the hole the dropped segments left.
func TestArchiveBacklog(t *testing.T) {
	const diskGiB = 1
	var full time.Duration
	t.Run("keep every segment", func(t *testing.T) {
		m, s, repo := backlogNode(t, "tf-acc-keep", diskGiB, 0)
		ctx := ctxT(t)
		down(t, repo)
		w := startFiller(t, ctx, s.Members[0])
		start := time.Now()
		acctest.WaitFor(t, 3*time.Minute, "the node to stop with its disk full", func() (bool, string) {
			_, running, err := m.Engine().Running(localcluster.Node(s.Members[0], "primary"))
			return err == nil && !running, fmt.Sprintf("%d MiB of WAL written", w.written()>>20)
		})
		full = time.Since(start)
		written := w.stop()
		rate := float64(written) / full.Seconds() / (1 << 20)
		log, _ := os.ReadFile(localcluster.Node(s.Members[0], "primary").LogFile())
		if !strings.Contains(string(log), "No space left on device") {
			t.Errorf("the node stopped, but its log does not say the disk is full:\n%s", tail(string(log), 20))
		}
		t.Logf("every segment kept, archive down: a %d GiB disk was full after %.1f s at %.1f MiB/s of WAL (%d MiB written); PostgreSQL stopped (%s)",
			diskGiB, full.Seconds(), rate, written>>20, lastLine(string(log), "PANIC"))
	})
	if full == 0 {
		t.Fatal("the kept-WAL case measured nothing")
	}

	t.Run("bounded", func(t *testing.T) {
		m, s, repo := backlogNode(t, "tf-acc-bound", diskGiB, 0.25)
		ctx := ctxT(t)
		down(t, repo)
		w := startFiller(t, ctx, s.Members[0])
		node := localcluster.Node(s.Members[0], "primary")
		run := max(full*3/2, 30*time.Second)
		deadline := time.Now().Add(run)
		var most int64
		for time.Now().Before(deadline) {
			if _, running, err := m.Engine().Running(node); err != nil || !running {
				t.Fatalf("the bounded node stopped after %s (%v)", time.Until(deadline), err)
			}
			most = max(most, dirMiB(t, filepath.Join(s.Members[0].DataDir, "pg_wal")))
			time.Sleep(time.Second) //nolint:forbidigo // sampling pg_wal's size while the writer runs
		}
		written := w.stop()
		log, _ := os.ReadFile(node.LogFile())
		dropped := strings.Count(string(log), "is dropped, not archived")
		// pg_wal runs past the bound by what is written while the archiver drops one segment at a time and
		// checkpoints recycle them: allow four max_wal_size, far below the disk.
		if dropped == 0 || most > 256+4*64 {
			t.Errorf("bounded at 256 MiB: %d segments dropped, pg_wal at most %d MiB", dropped, most)
		}
		t.Logf("bounded at 256 MiB, archive down: the node wrote %d MiB of WAL in %.0f s (longer than the %.1f s the unbounded disk lasted) and kept running; "+
			"pg_wal at most %d MiB; %d segments dropped", written>>20, run.Seconds(), full.Seconds(), most, dropped)

		// The archive back: what was dropped is a hole, and the refresh says where it starts.
		up(t, repo)
		c := connect(t, ctx, s.Members[0])
		acctest.WaitFor(t, time.Minute, "the archive health to report the hole", func() (bool, string) {
			if _, err := c.Exec(ctx, "INSERT INTO fill SELECT 1, 'x'; SELECT pg_switch_wal()"); err != nil {
				return false, err.Error()
			}
			st, err := m.Observe(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			h, err := m.ArchiveHealth(ctx, s, st)
			if err != nil || h == nil {
				return false, fmt.Sprint(err)
			}
			return h.Hole != "", fmt.Sprintf("newest %s, %d waiting", h.LastArchived, h.Unarchived)
		})
		st, _ := m.Observe(ctx, s)
		h, _ := m.ArchiveHealth(ctx, s, st)
		t.Logf("archive back: %s", h.Warnings[0].Detail)
	})
}

// backlogNode creates a one-node cluster whose data lives on its own disk of diskGiB, archiving to a
// repository outside it, with WAL settings small enough for the disk (max_wal_size 64MB), bounded at
// boundGiB (0: every segment kept). It is destroyed at the end of the test.
func backlogNode(t *testing.T, name string, diskGiB int64, boundGiB float64) (*localcluster.Manager, localcluster.Spec, string) {
	t.Helper()
	m, err := localcluster.NewManager("")
	if err != nil {
		t.Fatalf("the local cluster needs PostgreSQL: %v", err)
	}
	root, err := os.MkdirTemp("", "pgnvme-backlog-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	s := localcluster.Spec{
		Name:        name,
		Members:     []localcluster.Member{{Name: "n1", Port: acctest.FreePorts(t, 1)[0], DataDir: filepath.Join(root, "n1", localspec.DeviceDataDir)}},
		Synchronous: bootstrap.Synchronous{Method: quorum.MethodAny, Number: 0, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOff},
		Parameters: map[string]string{"shared_buffers": "32MB", "max_wal_size": "64MB", "min_wal_size": "32MB", "wal_keep_size": "0",
			"archive_timeout": "5s", "checkpoint_timeout": "30s"},
		Limits: &localspec.Limits{DiskGiB: diskGiB},
	}
	repo := withArchive(t, m, &s)
	s.Archive.MaxBacklogMiB = int(boundGiB * 1024)
	t.Cleanup(func() {
		up(t, repo)
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		if err := m.Destroy(ctx, s); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	if created, err := m.Create(ctxT(t), s); err != nil {
		t.Fatalf("Create (created %v): %v", created, err)
	}
	return m, s, repo
}

// down makes the repository unwritable for the server's user, as with the archive unreachable; up undoes it.
func down(t *testing.T, repo string) {
	t.Helper()
	if err := os.Chmod(repo, 0); err != nil {
		t.Fatal(err)
	}
}

func up(t *testing.T, repo string) {
	t.Helper()
	if err := os.Chmod(repo, 0o750); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// filler writes rows of 512 bytes in statements of 20,000, each followed by a TRUNCATE (the WAL grows, the
// data does not), as fast as one connection can, until stopped or until the server fails, and counts the
// WAL it wrote (pg_current_wal_lsn before and after).
type filler struct {
	done  chan int64
	quit  chan struct{}
	bytes func() int64
}

func startFiller(t *testing.T, ctx context.Context, mb localcluster.Member) *filler {
	t.Helper()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", mb.Port))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS fill (n int, pad text)"); err != nil {
		t.Fatal(err)
	}
	lsn := func() uint64 {
		var s string
		if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&s); err != nil {
			return 0
		}
		v, _ := topology.ParseLSN(s)
		return v
	}
	start := lsn()
	var last atomic.Uint64
	last.Store(start)
	f := &filler{done: make(chan int64, 1), quit: make(chan struct{})}
	f.bytes = func() int64 { return int64(last.Load() - start) }
	go func() {
		defer func() { _ = conn.Close(context.Background()) }()
		for {
			select {
			case <-f.quit:
				f.done <- f.bytes()
				return
			default:
			}
			if _, err := conn.Exec(ctx, "INSERT INTO fill SELECT g, repeat(md5(g::text), 16) FROM generate_series(1, 20000) g; TRUNCATE fill"); err != nil {
				f.done <- f.bytes()
				return
			}
			if v := lsn(); v > 0 {
				last.Store(v)
			}
		}
	}()
	return f
}

func (f *filler) written() int64 { return f.bytes() }

func (f *filler) stop() int64 {
	close(f.quit)
	return <-f.done
}

// dirMiB is the size of the files directly in dir, in MiB.
func dirMiB(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n >> 20
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func lastLine(s, with string) string {
	out := ""
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, with) {
			out = l
		}
	}
	return strconv.Quote(out)
}
