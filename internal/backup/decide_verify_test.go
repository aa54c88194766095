package backup

import (
	"encoding/json"
	"os"
	"path/filepath"
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

func TestDecideVerdict(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	// The oldest backup's WAL starts at segment 2 (or 5).
	info := func(start string) string {
		return `[{"name":"demo","backup":[{"label":"F","type":"full","timestamp":{"start":1,"stop":2},"archive":{"start":"` + start +
			`","stop":"` + start + `"}}]}]`
	}
	for _, tc := range []struct {
		tool, output, listing string
		ok                    bool
		detail                string
	}{
		{"pgbackrest", "verify_ok.txt", info("000000010000000000000002"), true, "2 WAL ranges checked, ending at 000000020000000000000009"},
		{"pgbackrest", "verify_checksum.txt", info("000000010000000000000002"), false, "checksum invalid: 1"},
		{"pgbackrest", "verify_hole.txt", info("000000010000000000000002"), false, "WAL missing after the oldest backup's first segment: 000000010000000000000003..000000010000000000000004"},
		{"pgbackrest", "verify_hole.txt", info("000000010000000000000005"), true, "3 WAL ranges checked"},
		{"pgbackrest", "verify_hole.txt", "[]", false, "000000010000000000000003..000000010000000000000004"},
		{"pgbackrest", "verify_error.txt", info("000000010000000000000002"), false, "ERROR: [039]: HTTP request failed with 403 (Forbidden)"},
		{"walg", "walg_ok.json", "", true, "integrity OK; timeline OK"},
		{"walg", "walg_lost.json", "", false, "integrity FAILURE (000000010000000000000005..000000010000000000000006 MISSING_LOST)"},
		{"walg", "walg_delayed.json", "", true, "integrity WARNING (000000020000000000000009..000000020000000000000009 MISSING_DELAYED)"},
		{"walg", "walg_timeline.json", "", false, "timeline FAILURE (current timeline 2, highest in the archive 3)"},
		{"walg", "verify_ok.txt", "", false, "could not be read"},
	} {
		t.Run(tc.tool+" "+tc.output, func(t *testing.T) {
			out := decide(t, now, tc.listing, "verdict", tc.tool, "2", filepath.Join("testdata", tc.output))
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
