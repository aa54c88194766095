package archive

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// rfc3339 is s as a time.
func rfc3339(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// threeBackups is an archive with three backups (by time and by LSN) whose newest segment ends at 1/5000000.
func threeBackups(t *testing.T) Health {
	at := func(s string) time.Time { return rfc3339(t, s) }
	return Health{
		Backups: []Backup{
			{Label: "full-1", Stop: at("2026-12-01T00:10:00Z").Unix(), LSNStop: "0/2000100"},
			{Label: "incr-2", Stop: at("2026-12-01T12:10:00Z").Unix(), LSNStop: "0/5000100"},
			{Label: "full-3", Stop: at("2026-12-02T00:10:00Z").Unix(), LSNStop: "1/2000100"},
		},
		LastArchived:    "000000020000000100000004",
		RecoverableFrom: at("2026-12-01T00:10:00Z"),
		RecoverableTo:   at("2026-12-02T09:00:00Z"),
	}
}

func TestRestoreBackup(t *testing.T) {
	at := func(s string) time.Time { return rfc3339(t, s) }
	h := threeBackups(t)
	for _, tc := range []struct {
		target, want, err string
	}{
		{"", "full-3", ""},
		{"2026-12-01T00:10:00Z", "full-1", ""},
		{"2026-12-01T12:09:59Z", "full-1", ""},
		{"2026-12-01T12:10:00Z", "incr-2", ""},
		{"2026-12-02T08:59:00Z", "full-3", ""},
		{"2026-12-01T00:09:59Z", "", "before the oldest base backup finished: the archive can be restored to any moment from 2026-12-01T00:10:00Z"},
		{"2026-12-02T09:00:01Z", "", "after the newest WAL segment reached the archive"},
	} {
		var target time.Time
		if tc.target != "" {
			target = at(tc.target)
		}
		b, err := RestoreBackup(h, Target{Time: target}, "")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("target %q: %v, %v; want an error containing %q", tc.target, b, err, tc.err)
		case tc.err == "" && (err != nil || b.Label != tc.want):
			t.Errorf("target %q: %v, %v; want %s", tc.target, b.Label, err, tc.want)
		}
	}
	if _, err := RestoreBackup(Health{}, Target{}, ""); err == nil || !strings.Contains(err.Error(), "no base backup") {
		t.Errorf("an archive without a backup: %v", err)
	}
}

func TestRestoreBackup_lsnAndNamed(t *testing.T) {
	at := func(s string) time.Time { return rfc3339(t, s) }
	h := threeBackups(t)
	for _, tc := range []struct {
		name   string
		target Target
		label  string
		want   string
		err    string
	}{
		{"lsn at a backup's end", Target{LSN: "0/5000100"}, "", "incr-2", ""},
		{"lsn between backups", Target{LSN: "0/FFFFFFFF"}, "latest", "incr-2", ""},
		{"lsn at the archive's end", Target{LSN: "1/5000000"}, "", "full-3", ""},
		{"lsn past the archive", Target{LSN: "1/5000001"}, "", "", "after the end of the newest WAL segment in the archive (000000020000000100000004, ending at 1/5000000)"},
		{"lsn before every backup", Target{LSN: "0/2000000"}, "", "", "before the oldest base backup ends (full-1 at LSN 0/2000100)"},
		{"malformed lsn", Target{LSN: "0x12"}, "", "", "malformed LSN"},
		{"named backup before an lsn", Target{LSN: "0/FFFFFFFF"}, "full-1", "full-1", ""},
		{"named backup after an lsn", Target{LSN: "0/3000000"}, "incr-2", "", "backup incr-2 ends at LSN 0/5000100, after the target 0/3000000"},
		{"named backup after a time", Target{Time: at("2026-12-01T12:00:00Z")}, "full-3", "", "backup full-3 finished at 2026-12-02T00:10:00Z, after the target"},
		{"named backup before a time", Target{Time: at("2026-12-01T12:00:00Z")}, "full-1", "full-1", ""},
		{"unknown backup", Target{}, "full-9", "", `the archive holds no backup "full-9"; it holds full-1, incr-2, full-3`},
		{"restore point from the newest", Target{Name: "before-migration"}, "", "full-3", ""},
		{"restore point from a named backup", Target{Name: "before-migration"}, "incr-2", "incr-2", ""},
		{"immediate", Target{Immediate: true}, "full-1", "full-1", ""},
	} {
		b, err := RestoreBackup(h, tc.target, tc.label)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, %v; want an error containing %q", tc.name, b.Label, err, tc.err)
		case tc.err == "" && (err != nil || b.Label != tc.want):
			t.Errorf("%s: %v, %v; want %s", tc.name, b.Label, err, tc.want)
		}
	}
	h.Hole = "000000020000000100000002"
	if _, err := RestoreBackup(h, Target{Time: at("2026-12-03T00:00:00Z")}, ""); err == nil || !strings.Contains(err.Error(), "no further than segment 000000020000000100000002") {
		t.Errorf("the window of an archive with a hole: %v", err)
	}
}

// TestReadWALGSentinel: a WAL-G sentinel (the fields WAL-G's BackupSentinelDto writes) gives the backup its
// start and end positions, written as numbers, and its sizes, so that LSN targets choose among WAL-G
// backups as among pgBackRest's; its time stays the sentinel's upload time.
func TestReadWALGSentinel(t *testing.T) {
	data := []byte(`{"LSN":83886120,"FinishLSN":100663568,"PgVersion":170002,"Spec":null,"Files":{},"TarFileSets":{},` +
		`"UncompressedSize":1073741824,"CompressedSize":268435456,"SystemIdentifier":7443355541716320000}`)
	b := Backup{Label: "base_000000010000000000000005", Stop: 1764670980}
	if err := ReadWALGSentinel(data, &b); err != nil {
		t.Fatal(err)
	}
	want := Backup{Label: "base_000000010000000000000005", LSNStart: "0/5000028", LSNStop: "0/6000110", Stop: 1764670980, Size: 1 << 30, RepoSize: 1 << 28, Major: 17}
	if b != want {
		t.Errorf("got %+v\nwant %+v", b, want)
	}
	h := Health{Backups: []Backup{b}, LastArchived: "000000010000000000000009"}
	if got, err := RestoreBackup(h, Target{LSN: "0/7000000"}, ""); err != nil || got.Label != b.Label {
		t.Errorf("an LSN target after the WAL-G backup's end: %+v, %v; want the backup", got, err)
	}
	if _, err := RestoreBackup(h, Target{LSN: "0/5800000"}, ""); err == nil {
		t.Error("an LSN target inside the WAL-G backup (before its end) chose it")
	}
	old := Backup{Stop: 42}
	if err := ReadWALGSentinel([]byte(`{"UncompressedSize":5}`), &old); err != nil || old.Stop != 42 || old.LSNStop != "" || old.Size != 5 {
		t.Errorf("a sentinel without positions: %+v, %v", old, err)
	}
	if err := ReadWALGSentinel([]byte(`not json`), &old); err == nil {
		t.Error("a sentinel that is not JSON was read")
	}
}

// RecoverySettings: PostgreSQL's settings of each kind of target, none for the end of the archive.
func TestTargetRecoverySettings(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 30, 0, 250_000_000, time.UTC)
	for _, tc := range []struct {
		t    Target
		want map[string]string
	}{
		{Target{}, nil},
		{Target{Time: at}, map[string]string{"recovery_target_time": "2026-12-02 10:30:00.25+00"}},
		{Target{LSN: "0/5000000"}, map[string]string{"recovery_target_lsn": "0/5000000"}},
		{Target{Name: "before-migration"}, map[string]string{"recovery_target_name": "before-migration"}},
		{Target{Immediate: true}, map[string]string{"recovery_target": "immediate"}},
	} {
		if got := tc.t.RecoverySettings(); !maps.Equal(got, tc.want) {
			t.Errorf("RecoverySettings(%v) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
