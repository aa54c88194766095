package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// TestArchiveHealth: the archive of a local cluster as refresh reads it. Healthy after create (the backup
// taken at create, nothing waiting); with the archive down and segments switched out, the next reads
// report them waiting and, once none arrived for twice archive_timeout plus the margin, archiving failing,
// with a warning that names the age; with the archive back, it clears.
func TestArchiveHealth(t *testing.T) {
	t.Parallel()
	m, s, _ := newCluster(t, anyOne(bootstrap.DurabilityRequired))
	repo := withArchive(t, m, &s)
	s.Parameters = map[string]string{"archive_timeout": "5s"}
	create(t, m, s)
	ctx := ctxT(t)
	read := func() *archive.Health {
		t.Helper()
		// Each read its own budget: the waits below take up to two minutes between them.
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		st, err := m.Observe(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.ArchiveHealth(ctx, s, st)
		if err != nil || h == nil {
			t.Fatalf("ArchiveHealth: %v, %v", h, err)
		}
		return h
	}
	h := read()
	if !h.Known || !h.ArchivingOK || h.Unarchived != 0 || len(h.Backups) != 1 || h.Backups[0].Type != "full" || h.LastArchived == "" ||
		h.RecoverableFrom.IsZero() || len(h.Warnings) != 0 || h.Failures != (archive.Failures{}) {
		t.Fatalf("after create: %+v", h)
	}
	t.Logf("after create: newest archived %s at %s, backup %s (%d bytes), recoverable %s .. %s",
		h.LastArchived, h.LastArchivedAt.Format(time.RFC3339), h.Backups[0].Label, h.Backups[0].Size, h.RecoverableFrom.Format(time.RFC3339), h.RecoverableTo.Format(time.RFC3339))

	c := connect(t, ctx, s.Members[0])
	exec := func(q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("ALTER SYSTEM SET archive_command = '/bin/false'")
	exec("SELECT pg_reload_conf()")
	for range 3 {
		exec("CREATE TABLE IF NOT EXISTS t (x int); INSERT INTO t VALUES (1)")
		exec("SELECT pg_switch_wal()")
	}
	stall := archive.ArchiveStall(5 * time.Second)
	start := time.Now()
	acctest.WaitFor(t, stall+30*time.Second, "the archive to be reported failing", func() (bool, string) {
		h = read()
		return h.Known && !h.ArchivingOK, fmt.Sprintf("%d unarchived", h.Unarchived)
	})
	if h.Unarchived < 3 || len(h.Warnings) != 1 || h.Warnings[0].Summary != archive.WarnBehind || !strings.Contains(h.Warnings[0].Detail, "ago") {
		t.Errorf("archive down: %d unarchived, warnings %q", h.Unarchived, h.Warnings)
	}
	t.Logf("archive down: reported failing after %.0f s (stall threshold %s): %s", time.Since(start).Seconds(), stall, h.Warnings[0].Detail)
	// The primary's archiver counts its failures: the first unarchived segment, moments ago.
	if h.Failures.Count < 1 || h.Failures.LastWAL <= h.LastArchived || time.Since(h.Failures.LastAt) > time.Minute {
		t.Errorf("archive down: failures %+v; want at least one, on a segment after %s, recent", h.Failures, h.LastArchived)
	}
	failed := h.Failures

	exec("ALTER SYSTEM RESET archive_command")
	exec("SELECT pg_reload_conf()")
	acctest.WaitFor(t, 60*time.Second, "the archive to catch up", func() (bool, string) {
		h = read()
		return h.Known && h.ArchivingOK && h.Unarchived == 0 && len(h.Warnings) == 0, fmt.Sprint(h.Warnings)
	})
	t.Logf("archive back: newest archived %s, nothing waiting; %d archiving failures counted, the newest on %s", h.LastArchived, h.Failures.Count, h.Failures.LastWAL)
	if h.Failures.Count < failed.Count || h.Failures.LastWAL < failed.LastWAL {
		t.Errorf("archive back: failures %+v; want the count kept (%+v)", h.Failures, failed)
	}
	if h.Hole != "" || h.Segments < 4 {
		t.Fatalf("a continuous archive: hole %q, %d segments", h.Hole, h.Segments)
	}

	// A segment the archive held is lost (deleted from the repository): the next read finds the hole.
	lost := ""
	objs, err := os.ReadDir(filepath.Join(repo, "archive", s.Archive.Stanza))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range objs {
		dirs, _ := filepath.Glob(filepath.Join(repo, "archive", s.Archive.Stanza, id.Name(), "*", "000000010000000000000004-*"))
		for _, f := range dirs {
			lost = f
		}
	}
	if lost == "" {
		t.Fatal("segment 000000010000000000000004 is not in the repository")
	}
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	h = read()
	if h.Hole != "000000010000000000000004" || len(h.Warnings) != 1 || h.Warnings[0].Summary != archive.WarnHole {
		t.Fatalf("segment 4 deleted: hole %q, warnings %v", h.Hole, h.Warnings)
	}
	t.Logf("a segment deleted from the repository: %s", h.Warnings[0].Detail)
}
