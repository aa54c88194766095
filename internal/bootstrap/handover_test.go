package bootstrap_test

import (
	"slices"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

func TestSegmentsToHandOver(t *testing.T) {
	for _, tc := range []struct {
		files, wal []string
		first      string
		want       []string
	}{
		{nil, nil, "", nil},
		{[]string{"000000010000000000000003.done"}, nil, "", []string{"000000010000000000000003"}},
		// Already ready, history files, partial segments, lower-case and short names are left alone.
		{[]string{
			"000000010000000000000003.ready", "00000002.history.done", "000000010000000000000004.partial.done",
			"00000001000000000000000a.done", "0000000100000000000003.done", "000000010000000000000005",
			"000000020000000A000000FF.done",
		}, nil, "", []string{"000000020000000A000000FF"}},
		// A complete segment without status (the walreceiver had not started the next) goes too, once
		// the first incomplete segment is known; the one being written and recycled ones do not, nor
		// those with a status already.
		{
			[]string{"000000010000000000000003.done", "000000010000000000000004.ready"},
			[]string{
				"000000010000000000000002", "000000010000000000000003", "000000010000000000000004", "000000010000000000000005",
				"000000010000000000000006", "000000010000000000000007", "000000010000000000000005.partial", "00000001000000000000000b",
			},
			"0000000000000006",
			[]string{"000000010000000000000003", "000000010000000000000002", "000000010000000000000005"},
		},
		// Across a log boundary, and an unknown position hands over only the marked ones.
		{nil, []string{"0000000100000004000000FF", "000000010000000500000000"}, "0000000500000000", []string{"0000000100000004000000FF"}},
		{[]string{"000000010000000000000003.done"}, []string{"000000010000000000000002"}, "", []string{"000000010000000000000003"}},
	} {
		if got := bootstrap.SegmentsToHandOver(tc.files, tc.wal, tc.first); !slices.Equal(got, tc.want) {
			t.Errorf("SegmentsToHandOver(%v, %v, %q) = %v, want %v", tc.files, tc.wal, tc.first, got, tc.want)
		}
	}
}
