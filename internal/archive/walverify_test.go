package archive_test

import (
	"slices"
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

// TimelineOf reads a segment's timeline, and 0 for what is not a segment's name.
func TestTimelineOf(t *testing.T) {
	for name, want := range map[string]uint32{
		"000000010000000000000005": 1, "0000000A000000000000000B": 10, "00000002.history": 0, "": 0, "00000001000000000000005": 0,
	} {
		if got := archive.TimelineOf(name); got != want {
			t.Errorf("TimelineOf(%q) = %d, want %d", name, got, want)
		}
	}
}
