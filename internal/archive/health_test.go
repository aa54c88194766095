package archive_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestSegmentName(t *testing.T) {
	for _, tc := range []struct {
		tl   uint32
		lsn  uint64
		want string
	}{
		{1, 0x0100_0028, "000000010000000000000001"},
		{1, 0x0_FF00_0000, "0000000100000000000000FF"},
		{3, 0x1_0000_0000, "000000030000000100000000"},
	} {
		if got := archive.SegmentName(tc.tl, tc.lsn); got != tc.want {
			t.Errorf("SegmentName(%d, %X) = %s, want %s", tc.tl, tc.lsn, got, tc.want)
		}
	}
}

// upTo is a pgBackRest archive holding every segment of last's timeline from ...01 to last, the newest
// arrived at at.
func upTo(last string, at time.Time) []archive.Object {
	var out []archive.Object
	for i := 1; ; i++ {
		seg := fmt.Sprintf("%s%016X", last[:8], i)
		seg = seg[:8] + fmt.Sprintf("%08X%08X", i/256, i%256)
		out = append(out, archive.Object{Key: "archive/demo/15-1/" + seg[:16] + "/" + seg + "-0123abcd.gz", Modified: at.Add(-time.Duration(10) * time.Second)})
		if seg == last {
			out[len(out)-1].Modified = at
			return out
		}
	}
}

func TestAssess(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	backup := func(label string, ago time.Duration) archive.Backup {
		return archive.Backup{Label: label, Type: "full", Stop: now.Add(-ago).Unix()}
	}
	for _, tc := range []struct {
		name       string
		r          archive.Reading
		unarchived int
		known, ok  bool
		warn       string // a word every warning holds; "" for none
	}{
		{"up to date", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000004", now.Add(-10*time.Minute)),
			Current: "000000010000000000000005", ArchiveTimeout: time.Minute}, 0, true, true, ""},
		{"behind under load, archiving", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000004", now.Add(-5*time.Second)),
			Current: "000000010000000000000009", ArchiveTimeout: time.Minute}, 4, true, true, ""},
		{"behind and stalled", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000004", now.Add(-3*time.Minute)),
			Current: "000000010000000000000007", ArchiveTimeout: time.Minute}, 2, true, false, "2 complete WAL segments"},
		{"across a log boundary", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("0000000100000000000000FE", now.Add(-time.Hour)),
			Current: "000000010000000100000001", ArchiveTimeout: time.Minute}, 2, true, false, "arrived 1h0m0s ago"},
		{"after a promotion", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000007", now.Add(-time.Hour)),
			Current: "000000020000000000000008", ArchiveTimeout: time.Minute}, 0, true, true, ""},
		{"nothing archived yet", archive.Reading{Current: "000000010000000000000004", ArchiveTimeout: time.Minute}, 3, true, false, "no segment has reached"},
		{"no primary", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000004", now.Add(-time.Hour)), ArchiveTimeout: time.Minute}, 0, false, false, ""},
		{"backups on schedule", archive.Reading{Backups: []archive.Backup{backup("a", 30*time.Hour), backup("b", 6*time.Hour)}, BackupEvery: 24 * time.Hour}, 0, false, false, ""},
		{"backup overdue", archive.Reading{Backups: []archive.Backup{backup("a", 26*time.Hour)}, BackupEvery: 24 * time.Hour}, 0, false, false, "finished 26h0m0s ago"},
		{"no backup with a schedule", archive.Reading{BackupEvery: 24 * time.Hour}, 0, false, false, "no base backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := archive.Assess(tc.r, now)
			if h.Unarchived != tc.unarchived || h.Known != tc.known || (tc.known && h.ArchivingOK != tc.ok) {
				t.Fatalf("Assess = unarchived %d known %v ok %v; want %d %v %v", h.Unarchived, h.Known, h.ArchivingOK, tc.unarchived, tc.known, tc.ok)
			}
			if (tc.warn == "") != (len(h.Warnings) == 0) || (tc.warn != "" && !strings.Contains(fmt.Sprint(h.Warnings), tc.warn)) {
				t.Errorf("warnings %q; want one with %q", h.Warnings, tc.warn)
			}
		})
	}
	h := archive.Assess(archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000003", now.Add(-time.Minute)), Backups: []archive.Backup{backup("a", 30*time.Hour), backup("b", 6*time.Hour)}}, now)
	if !h.RecoverableFrom.Equal(now.Add(-30*time.Hour)) || !h.RecoverableTo.Equal(now.Add(-time.Minute)) {
		t.Errorf("recoverable %s .. %s", h.RecoverableFrom, h.RecoverableTo)
	}
	if b, ok := h.LastBackup(); !ok || b.Label != "b" {
		t.Errorf("last backup %+v", b)
	}
}

func TestPgBackRestBackups(t *testing.T) {
	backups, err := archive.PgBackRestBackups(read(t, "backup.info"))
	if err != nil {
		t.Fatal(err)
	}
	want := []archive.Backup{{Label: "20261202-052928F", Type: "full", Start: 1796189368, Stop: 1796189370, Size: 22992538, RepoSize: 3043457,
		WALStart: "000000010000000000000002", WALStop: "000000010000000000000002", LSNStart: "0/2000028", LSNStop: "0/2000100", Major: 15}}
	if len(backups) != 1 || backups[0] != want[0] {
		t.Fatalf("backups %+v, want %+v", backups, want)
	}
	// The same as pgbackrest info reports for the same stanza.
	info, err := archive.ParsePgBackRestInfo(read(t, "pgbackrest-info.json"))
	if err != nil || info.Backups[0] != backups[0] {
		t.Errorf("backup.info %+v; pgbackrest info %+v (%v)", backups[0], info.Backups, err)
	}
}

func TestAssess_hole(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	obj := func(keys ...string) []archive.Object {
		var out []archive.Object
		for _, k := range keys {
			out = append(out, archive.Object{Key: k, Modified: now})
		}
		return out
	}
	backupAt := func(start string) []archive.Backup {
		return []archive.Backup{{Label: "b", Type: "full", WALStart: start, Stop: now.Unix()}}
	}
	for _, tc := range []struct {
		name string
		r    archive.Reading
		hole string
	}{
		{"continuous", archive.Reading{Tool: archive.ToolPgBackRest, WAL: upTo("000000010000000000000009", now), Backups: backupAt("000000010000000000000002")}, ""},
		{"a segment lost", archive.Reading{Tool: archive.ToolPgBackRest, WAL: obj("a/000000010000000000000002-aa.gz", "a/000000010000000000000003-aa.gz",
			"a/000000010000000000000005-aa.gz"), Backups: backupAt("000000010000000000000002")}, "000000010000000000000004"},
		{"before the oldest backup is not needed", archive.Reading{Tool: archive.ToolPgBackRest, WAL: obj("a/000000010000000000000001-aa.gz",
			"a/000000010000000000000004-aa.gz", "a/000000010000000000000005-aa.gz"), Backups: backupAt("000000010000000000000004")}, ""},
		{"the backup's first segment lost", archive.Reading{Tool: archive.ToolPgBackRest, WAL: obj("a/000000010000000000000005-aa.gz"),
			Backups: backupAt("000000010000000000000004")}, "000000010000000000000004"},
		{"across a promotion", archive.Reading{Tool: archive.ToolWALG, WAL: obj("wal_005/000000010000000000000004.lz4", "wal_005/000000010000000000000005.lz4",
			"wal_005/000000010000000000000006.partial.lz4", "wal_005/00000002.history.lz4", "wal_005/000000020000000000000006.lz4",
			"wal_005/000000020000000000000007.lz4"), Backups: backupAt("000000010000000000000004")}, ""},
		{"a hole on the old timeline after a promotion", archive.Reading{Tool: archive.ToolWALG, WAL: obj("wal_005/000000010000000000000004.lz4",
			"wal_005/000000020000000000000006.lz4"), Backups: backupAt("000000010000000000000004")}, "000000020000000000000005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := archive.Assess(tc.r, now)
			if h.Hole != tc.hole || (tc.hole == "") != (len(h.Warnings) == 0) {
				t.Fatalf("hole %q, warnings %q; want %q", h.Hole, h.Warnings, tc.hole)
			}
			if tc.hole != "" && (h.Warnings[0].Summary != archive.WarnHole || !strings.Contains(h.Warnings[0].Detail, tc.hole)) {
				t.Errorf("warning %q", h.Warnings[0])
			}
		})
	}
}

func TestSegmentOf(t *testing.T) {
	for _, tc := range []struct {
		tool, key, want string
	}{
		{archive.ToolPgBackRest, "r/archive/demo/15-1/0000000100000000/000000010000000000000002-d3ec8600fd466024372bfe9183a1d76606f566d7.gz", "000000010000000000000002"},
		{archive.ToolPgBackRest, "000000010000000000000002-d3ec8600fd466024372bfe9183a1d76606f566d7", "000000010000000000000002"},
		{archive.ToolPgBackRest, "r/000000010000000000000002.00000028.backup", ""},
		{archive.ToolPgBackRest, "r/000000010000000000000003.partial-d3ec8600fd466024372bfe9183a1d76606f566d7.gz", ""},
		{archive.ToolPgBackRest, "r/15-1/00000002.history", ""},
		{archive.ToolWALG, "p/wal_005/000000010000000000000003.lz4", "000000010000000000000003"},
		{archive.ToolWALG, "p/wal_005/000000010000000000000003", "000000010000000000000003"},
		{archive.ToolWALG, "p/wal_005/000000010000000000000003.partial.lz4", ""},
		{archive.ToolWALG, "p/wal_005/000000010000000000000002.00000028.backup.lz4", ""},
		{archive.ToolWALG, "p/wal_005/00000002.history.lz4", ""},
	} {
		if got, ok := archive.SegmentOf(tc.tool, tc.key); got != tc.want || ok != (tc.want != "") {
			t.Errorf("SegmentOf(%s, %s) = %q, %v; want %q", tc.tool, tc.key, got, ok, tc.want)
		}
	}
}

func TestParsePgBackRestListing(t *testing.T) {
	objs, err := archive.ParsePgBackRestListing("archive/fix", read(t, "repo-ls.json"))
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, o := range objs {
		if seg, ok := archive.SegmentOf(archive.ToolPgBackRest, o.Key); ok {
			segs = append(segs, seg+" "+o.Modified.Format(time.RFC3339))
		}
	}
	want := []string{"000000010000000000000001 2026-12-02T05:29:28Z", "000000010000000000000002 2026-12-02T05:29:30Z"}
	if strings.Join(segs, ",") != strings.Join(want, ",") {
		t.Fatalf("segments %q, want %q (from %d files)", segs, want, len(objs))
	}
	h := archive.Assess(archive.Reading{Tool: archive.ToolPgBackRest, WAL: objs}, time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	if h.LastArchived != "000000010000000000000002" || h.Segments != 2 || h.Hole != "" {
		t.Errorf("assessed %+v", h)
	}
}

func TestWALBytes(t *testing.T) {
	for _, tc := range []struct {
		first, last string
		want        int64
	}{
		{"000000010000000000000002", "000000010000000000000002", archive.SegmentBytes},
		{"0000000100000000000000FF", "000000020000000100000001", 3 * archive.SegmentBytes}, // across a log and a timeline
		{"000000010000000000000005", "000000010000000000000002", 0},
		{"", "000000010000000000000002", 0},
		{"000000010000000000000002", "not a segment", 0},
	} {
		if got := archive.WALBytes(tc.first, tc.last); got != tc.want {
			t.Errorf("WALBytes(%q, %q) = %d, want %d", tc.first, tc.last, got, tc.want)
		}
	}
}
