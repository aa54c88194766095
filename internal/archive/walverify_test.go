package archive_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// WALVerifyArgs: the current segment WAL-G is given is the one after the archive's newest, on its timeline,
// so that WAL-G checks every segment up to the newest (it checks those before the current one).
func TestWALVerifyArgs(t *testing.T) {
	for _, tc := range []struct{ last, timeline, lsn string }{
		{"000000010000000000000005", "1", "0/6000001"},
		{"0000000300000002000000FF", "3", "3/1"},
		{"0000000A000000000000000B", "10", "0/C000001"},
	} {
		got, err := archive.WALVerifyArgs(tc.last)
		want := []string{"wal-verify", "integrity", "timeline", "--json", "--timeline", tc.timeline, "--lsn", tc.lsn}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("WALVerifyArgs(%s) = %v, %v; want %v", tc.last, got, err, want)
		}
	}
	if _, err := archive.WALVerifyArgs("00000001000000000000005"); err == nil {
		t.Error("a name one digit short was taken for a segment")
	}
}

// ParseWALVerify reads wal-verify's JSON as WAL-G writes it (docs/PostgreSQL.md's example's shape): passed
// only when both checks are OK; each missing range is named, whatever WAL-G calls it.
func TestParseWALVerify(t *testing.T) {
	ok := `{"integrity":{"status":"OK","details":[
	  {"timeline_id":1,"start_segment":"000000010000000000000002","end_segment":"000000010000000000000009","segments_count":8,"status":"FOUND"},
	  {"timeline_id":2,"start_segment":"00000002000000000000000A","end_segment":"00000002000000000000000C","segments_count":3,"status":"FOUND"}]},
	 "timeline":{"status":"OK","details":{"current_timeline_id":2,"highest_storage_timeline_id":2}}}`
	r, err := archive.ParseWALVerify([]byte(ok))
	if err != nil || !r.OK || r.Detail != "wal-g wal-verify: 11 segments on 2 timeline ranges found, timeline OK" {
		t.Errorf("OK report: %+v, %v", r, err)
	}
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"a lost segment", `{"integrity":{"status":"FAILURE","details":[
		  {"timeline_id":1,"start_segment":"000000010000000000000002","end_segment":"000000010000000000000005","segments_count":4,"status":"FOUND"},
		  {"timeline_id":1,"start_segment":"000000010000000000000006","end_segment":"000000010000000000000006","segments_count":1,"status":"MISSING_LOST"},
		  {"timeline_id":1,"start_segment":"000000010000000000000007","end_segment":"000000010000000000000009","segments_count":3,"status":"FOUND"}]},
		  "timeline":{"status":"OK","details":{"current_timeline_id":1,"highest_storage_timeline_id":1}}}`,
			[]string{"WAL segment 000000010000000000000006 is missing (MISSING_LOST)"}},
		{"segments WAL-G calls uploading", `{"integrity":{"status":"WARNING","details":[
		  {"timeline_id":1,"start_segment":"000000010000000000000002","end_segment":"000000010000000000000004","segments_count":3,"status":"MISSING_UPLOADING"}]},
		  "timeline":{"status":"OK","details":{"current_timeline_id":1,"highest_storage_timeline_id":1}}}`,
			[]string{"000000010000000000000002 to 000000010000000000000004 (3 segments) is missing (MISSING_UPLOADING)"}},
		{"a newer timeline in storage", `{"integrity":{"status":"OK","details":[]},
		  "timeline":{"status":"FAILURE","details":{"current_timeline_id":1,"highest_storage_timeline_id":3}}}`,
			[]string{"timeline check's status is FAILURE (the archive's highest timeline 3, the newest segment's 1)"}},
		{"no timeline check", `{"integrity":{"status":"OK","details":[]}}`, []string{"no timeline check"}},
		{"a failure without details", `{"integrity":{"status":"FAILURE","details":[]},"timeline":{"status":"OK","details":{}}}`,
			[]string{"the integrity check's status is FAILURE"}},
	} {
		r, err := archive.ParseWALVerify([]byte(tc.json))
		if err != nil || r.OK {
			t.Errorf("%s: %+v, %v; want a failed report", tc.name, r, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.Detail, w) {
				t.Errorf("%s: detail %q lacks %q", tc.name, r.Detail, w)
			}
		}
	}
	if _, err := archive.ParseWALVerify([]byte("[wal-verify] integrity check status: OK")); err == nil {
		t.Error("the plain-text output was read as JSON")
	}
}
