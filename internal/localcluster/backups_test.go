package localcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

// TestScheduledBackups: a short schedule (every 15 s) with a full backup every 2nd and retention of 2 full
// backups. The scheduler takes incremental and full backups, all on the primary; once the third full one
// is taken, retention removes the oldest full backup, its incremental one and the WAL only they needed;
// archive health then reports the recoverable window from the oldest backup kept; a point-in-time
// restore to a moment just after that backup (the oldest point inside the window) holds every row
// committed up to it. Destroy stops the scheduler and removes its files.
func TestScheduledBackups(t *testing.T) {
	t.Parallel()
	m, s, root := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	repo := withArchive(t, m, &s)
	s.Archive.Backup = &backup.Policy{Schedule: "*:*:0/15", FullEvery: 2, RecoveryWindowDays: 0, MinFullBackups: 2}
	create(t, m, s)
	logPath := filepath.Join(root, "pgnvme-backups.log")
	t.Cleanup(func() {
		if b, _ := os.ReadFile(logPath); t.Failed() {
			t.Logf("scheduler log:\n%s", b)
		}
	})
	// The waits below take up to three and a half minutes between them.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+stepTimeout)
	defer cancel()
	if ok, err := m.BackupSchedulerRunning(s); !ok || err != nil {
		t.Fatalf("BackupSchedulerRunning after create: %v, %v", ok, err)
	}
	pb := acctest.NewPgBackRest(t, map[string]string{"repo1-type": "posix", "repo1-path": repo}, nil)
	initial := pb.Info(t)
	first := initial.Backups
	if len(initial.Archives) == 0 {
		t.Fatalf("after create the archive holds no WAL: %+v", initial)
	}
	if len(first) != 1 || first[0].Type != "full" {
		t.Fatalf("after create: backups %+v, want the one full backup create takes", first)
	}

	// Rows committed all along, each with the moment it committed.
	c := connect(t, ctx, s.Members[0])
	if _, err := c.Exec(ctx, "CREATE TABLE marks (n int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())"); err != nil {
		t.Fatal(err)
	}
	n := 0
	var info archive.PgBackRestInfo
	var looked time.Time
	acctest.WaitFor(t, 3*time.Minute, "retention to remove the backup create took", func() (bool, string) {
		n++
		if _, err := c.Exec(ctx, "INSERT INTO marks (n) VALUES ($1)", n); err != nil {
			return false, err.Error()
		}
		if time.Since(looked) < 2*time.Second {
			return false, "waiting"
		}
		looked = time.Now()
		info = pb.Info(t)
		var labels []string
		for _, b := range info.Backups {
			labels = append(labels, b.Label)
		}
		return len(info.Backups) > 0 && info.Backups[0].Label != first[0].Label, strings.Join(labels, " ")
	})
	// Nothing changes the archive from here on (the scheduler stops as an apply stops it), once the
	// expire under way is done: the WAL only the removed backups needed goes just after them.
	acctest.WaitFor(t, 30*time.Second, "expire to remove the WAL of the removed backups", func() (bool, string) {
		info = pb.Info(t)
		return len(info.Archives) > 0 && info.Archives[0].Min != initial.Archives[0].Min, fmt.Sprintf("%+v", info.Archives)
	})
	if err := localcluster.StopBackupScheduler(ctx, m, s); err != nil {
		t.Fatal(err)
	}
	info = pb.Info(t)
	logText, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scheduler log:\n%s", logText)

	// Full and incremental backups, the chain as full_every says, two full ones kept.
	var fulls, incrs int
	for i, b := range info.Backups {
		switch b.Type {
		case "full":
			fulls++
		case "incr":
			incrs++
			if i == 0 || info.Backups[i-1].Type != "full" {
				t.Errorf("backup %s is incremental but does not follow a full one (full_every 2): %+v", b.Label, info.Backups)
			}
		default:
			t.Errorf("backup %s is %s", b.Label, b.Type)
		}
	}
	if fulls != 2 || incrs < 1 || info.Backups[0].Type != "full" {
		t.Fatalf("backups after retention: %+v; want 2 full ones (retention) and their incremental ones", info.Backups)
	}
	// Every backup was taken on the primary: the scheduler names the member it backs up.
	taken := regexp.MustCompile(`\] (\S+): (full|incr) `).FindAllStringSubmatch(string(logText), -1)
	if len(taken) < 4 {
		t.Fatalf("the scheduler's log names %d backups, want at least 4 (incr, full, incr, full)", len(taken))
	}
	for _, m := range taken {
		if m[1] != s.Members[0].Name {
			t.Errorf("a backup was taken on %s, not on the primary %s", m[1], s.Members[0].Name)
		}
	}
	// The WAL only the removed backups needed went with them: the archive starts at the oldest kept
	// backup's first segment.
	oldest := info.Backups[0]
	if len(info.Archives) == 0 || info.Archives[0].Min != oldest.WALStart {
		t.Fatalf("the archive holds WAL from %+v; want it to start at %s, the oldest kept backup's first segment", info.Archives, oldest.WALStart)
	}
	if !strings.Contains(string(logText), "retention: keep 2 full backups") {
		t.Errorf("the log does not show retention keeping 2 full backups")
	}
	// Archive health reports what a restore can reach: from the oldest kept backup on.
	st, err := m.Observe(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.ArchiveHealth(ctx, s, st)
	if err != nil || h == nil {
		t.Fatalf("ArchiveHealth: %v, %v", h, err)
	}
	if h.RecoverableFrom.Before(time.Unix(oldest.Stop, 0)) || !h.RecoverableFrom.After(time.Unix(first[0].Stop, 0)) || len(h.Backups) != len(info.Backups) || len(h.Warnings) != 0 {
		t.Fatalf("archive health: recoverable from %s, %d backups, warnings %v; want from the oldest kept backup (stopped %s), %d backups, no warning",
			h.RecoverableFrom, len(h.Backups), h.Warnings, time.Unix(oldest.Stop, 0).UTC(), len(info.Backups))
	}

	// A restore to the oldest point inside the window, from the oldest backup kept: the moment the first
	// row after that backup was inserted. One connection inserts the rows in turn, so every row before it
	// committed before that moment, and it committed after.
	var target string
	var k int
	if err := c.QueryRow(ctx, `SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00', n FROM marks
		WHERE at >= to_timestamp($1) ORDER BY n LIMIT 1`, oldest.Stop+1).Scan(&target, &k); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d|%d", k-1, k-1)
	if _, err := c.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
		t.Fatal(err)
	}
	acctest.WaitFor(t, 60*time.Second, "the WAL past the target to be archived", func() (bool, string) {
		st, err := m.Observe(ctx, s)
		if err != nil {
			return false, err.Error()
		}
		h, err := m.ArchiveHealth(ctx, s, st)
		if err != nil || h == nil {
			return false, fmt.Sprint(err)
		}
		return h.RecoverableTo.After(time.Unix(oldest.Stop+3, 0)) && h.Unarchived == 0, fmt.Sprintf("recoverable to %s, %d unarchived", h.RecoverableTo, h.Unarchived)
	})
	restored := acctest.PrepareRestore(t)
	pb.RestoreArgs(t, restored.Node.DataDir, "--set="+oldest.Label, "--type=time", "--target="+target, "--target-action=promote")
	acctest.StartRestored(t, restored)
	defer restored.Stop(t)
	if got := restored.Psql(t, "postgres", "SELECT count(*) || '|' || coalesce(max(n), 0) FROM marks"); got != want {
		t.Fatalf("restored from %s to %s: count|max = %s, want %s\n%s", oldest.Label, target, got, want, restored.LogTail(30))
	}
	t.Logf("restored from the oldest kept backup %s to %s: rows 1..%d, as committed by then", oldest.Label, target, k-1)

	if err := m.Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pgnvme-backups.sh", "pgnvme-backups.pid", "pgnvme-backups.log", "pgnvme-backup-decide.py"} {
		if _, err := os.Stat(filepath.Join(root, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Destroy %s is still there (%v)", f, err)
		}
	}
}
