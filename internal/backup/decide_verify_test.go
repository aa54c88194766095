package backup

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDecideVerifyDue(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rec := func(tl int, ok bool, ago time.Duration) string {
		out, _ := json.Marshal(map[string]any{"tool": "pgbackrest", "timeline": tl, "ok": ok, "verified_at": now.Add(-ago).Format(time.RFC3339)})
		return string(out)
	}
	const tl2 = "000000020000000000000008"
	for _, tc := range []struct {
		name     string
		timeline string
		archived string   // pg_stat_archiver.last_archived_wal
		status   []string // archive_status files
		record   string
		want     string
	}{
		{"timeline 1", "1", "000000010000000000000009", nil, "", "none"},
		{"never verified", "2", tl2, []string{"00000002.history.done", "000000020000000000000009.ready"}, "", "verify"},
		{"an older timeline verified", "3", "000000030000000000000009", nil, rec(2, true, time.Hour), "verify"},
		{"verified", "2", tl2, nil, rec(2, true, 48*time.Hour), "none"},
		{"failed lately", "2", tl2, nil, rec(2, false, 10*time.Minute), "none"},
		{"failed an hour ago", "2", tl2, nil, rec(2, false, 61*time.Minute), "verify"},
		{"a handed-over segment waits", "2", tl2, []string{"000000010000000000000007.ready", "000000010000000000000006.done"}, "", "wait"},
		{"the old timeline's partial waits", "2", tl2, []string{"000000010000000000000008.partial.ready"}, "", "wait"},
		{"the history file waits", "2", tl2, []string{"00000002.history.ready"}, "", "wait"},
		{"no segment of the new timeline archived", "2", "00000002.history", nil, "", "wait"},
		{"only the old timeline archived", "2", "000000010000000000000008", nil, "", "wait"},
		{"nothing archived", "2", "", nil, "", "wait"},
		{"an unreadable record", "2", tl2, nil, "{not json", "verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.status {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := decide(t, now, tc.record, "verify-due", tc.timeline, tc.archived, dir)
			if action, _, _ := strings.Cut(got, " "); action != tc.want {
				t.Fatalf("verify-due = %q, want %s", got, tc.want)
			}
		})
	}
}

// TestDecideVerdict: the verdict is the tool's own findings, read in this one place for the nodes of both
// platforms and for the provider's restore drill. pgBackRest fails on an error it reports (in its log or
// its --output=text result) and passes a hole it does not report (the provider's archive.Assess judges
// holes); WAL-G fails on a FAILURE status or a missing check and passes a WARNING, naming what it saw.
func TestDecideVerdict(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		tool, output string
		ok           bool
		detail       string
	}{
		{"pgbackrest", "verify_ok.txt", true, "pgbackrest verify: 2 WAL ranges checked, no error"},
		{"pgbackrest", "verify_checksum.txt", false, "checksum invalid: 1"},
		{"pgbackrest", "verify_hole.txt", true, "pgbackrest verify: 3 WAL ranges checked, no error"},
		{"pgbackrest", "verify_error.txt", false, "ERROR: [039]: HTTP request failed with 403 (Forbidden)"},
		{"pgbackrest", "verify_text_ok.txt", true, "pgbackrest verify: 4 WAL segments and 1 backups valid"},
		{"pgbackrest", "verify_text_hole.txt", true, "pgbackrest verify: 3 WAL segments and 1 backups valid"},
		{"pgbackrest", "verify_text_error.txt", false, "pgbackrest verify: archiveId: 15-1, total WAL checked: 4, total valid WAL: 3; " +
			"missing: 0, checksum invalid: 0, size invalid: 0, other: 1"},
		{"pgbackrest", "walg_ok.json", false, "pgbackrest verify reported no result"},
		{"walg", "walg_ok.json", true, "wal-g wal-verify: 8 segments on 2 timeline ranges found, timeline OK"},
		{"walg", "walg_lost.json", false, "wal-g wal-verify: WAL segment 000000010000000000000005 to 000000010000000000000006 (2 segments) is missing (MISSING_LOST)"},
		{"walg", "walg_failure_no_details.json", false, "wal-g wal-verify: the integrity check's status is FAILURE"},
		{"walg", "walg_delayed.json", true, "wal-g wal-verify: 7 segments on 1 timeline ranges found, timeline OK; " +
			"WARNING, not a hole: WAL segment 000000020000000000000009 is missing (MISSING_DELAYED) (the newest WAL, still on its way to the archive)"},
		{"walg", "walg_uploading.json", true, "WARNING, not a hole: WAL segment 000000010000000000000006 to 000000010000000000000008 (3 segments) is missing (MISSING_UPLOADING)"},
		{"walg", "walg_timeline.json", false, "wal-g wal-verify: the timeline check's status is FAILURE (the archive's highest timeline 3, the checked one 2)"},
		{"walg", "walg_timeline_unknown.json", true, "WARNING, not a hole: the timeline check's status is WARNING (the archive's highest timeline 0, the checked one 2)"},
		{"walg", "walg_no_timeline.json", false, "wal-g wal-verify: reported no timeline check"},
		{"walg", "verify_ok.txt", false, "could not be read"},
	} {
		t.Run(tc.tool+" "+tc.output, func(t *testing.T) {
			out := decide(t, now, "", "verdict", tc.tool, "2", filepath.Join("testdata", tc.output))
			var rec struct {
				Tool       string `json:"tool"`
				Timeline   int    `json:"timeline"`
				VerifiedAt string `json:"verified_at"`
				OK         bool   `json:"ok"`
				Detail     string `json:"detail"`
			}
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatalf("verdict printed %q: %v", out, err)
			}
			if rec.Tool != tc.tool || rec.Timeline != 2 || rec.VerifiedAt != "2026-12-02T12:00:00Z" || rec.OK != tc.ok || !strings.Contains(rec.Detail, tc.detail) {
				t.Fatalf("verdict = %+v, want ok %v with %q", rec, tc.ok, tc.detail)
			}
		})
	}
}

// TestCompactDecideScript: the script as the nodes' user-data carries it, without its comments and
// docstrings, prints what the full one prints.
func TestCompactDecideScript(t *testing.T) {
	compact := filepath.Join(t.TempDir(), "compact.py")
	if err := os.WriteFile(compact, []byte(CompactDecideScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(CompactDecideScript(), "\n#") || strings.Count(CompactDecideScript(), `"""`) != 2 {
		t.Errorf("the compact script keeps comments or docstrings")
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, args := range [][]string{
		{"verdict", "walg", "2", filepath.Join("testdata", "walg_delayed.json")},
		{"verdict", "pgbackrest", "2", filepath.Join("testdata", "verify_text_error.txt")},
		{"keep", "pgbackrest", "7", "2"},
	} {
		full := decide(t, now, pgBackRestInfo([]made{{base, true}}), args...)
		cmd := exec.Command("/usr/bin/python3", append([]string{compact}, args...)...)
		cmd.Env = append(os.Environ(), "PGNVME_NOW="+strconv.FormatInt(now.Unix(), 10))
		cmd.Stdin = strings.NewReader(pgBackRestInfo([]made{{base, true}}))
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != full {
			t.Errorf("compact %v = %q, %v; the full script printed %q", args, got, err, full)
		}
	}
}
