package acctest_test

import (
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

func TestWALHole(t *testing.T) {
	for _, tc := range []struct {
		names []string
		last  string
		want  string // "" = no hole, else a substring
	}{
		{[]string{"a/000000010000000000000002-1f.gz", "000000010000000000000003.lz4", "000000010000000000000004"}, "000000010000000000000004", ""},
		// Across a log file boundary.
		{[]string{"0000000100000000000000FF-aa.gz", "000000010000000100000000-bb.gz"}, "000000010000000100000000", ""},
		{[]string{"000000010000000000000002-1f.gz", "000000010000000000000004-2e.gz"}, "000000010000000000000004", "segment 000000010000000000000003 is missing"},
		// The last segment itself, not yet archived.
		{[]string{"000000010000000000000002-1f.gz"}, "000000010000000000000003", "segment 000000010000000000000003 is missing"},
		// Another timeline's segments, .partial segments and history files do not count.
		{[]string{"000000020000000000000003-1f.gz", "000000010000000000000002.partial-3c.gz", "00000002.history"}, "000000010000000000000003", "no segment of timeline 00000001"},
		{nil, "0000000100000000000003", "not a WAL segment name"},
	} {
		got := acctest.WALHole(tc.names, tc.last)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("WALHole(%v, %s) = %q, want %q", tc.names, tc.last, got, tc.want)
		}
	}
}
