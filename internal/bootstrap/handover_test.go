package bootstrap_test

import (
	"slices"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

func TestSegmentsToHandOver(t *testing.T) {
	for _, tc := range []struct {
		files, want []string
	}{
		{nil, nil},
		{[]string{"000000010000000000000003.done"}, []string{"000000010000000000000003"}},
		// Already ready, history files, partial segments, lower-case and short names are left alone.
		{[]string{
			"000000010000000000000003.ready", "00000002.history.done", "000000010000000000000004.partial.done",
			"00000001000000000000000a.done", "0000000100000000000003.done", "000000010000000000000005",
			"000000020000000A000000FF.done",
		}, []string{"000000020000000A000000FF"}},
	} {
		if got := bootstrap.SegmentsToHandOver(tc.files); !slices.Equal(got, tc.want) {
			t.Errorf("SegmentsToHandOver(%v) = %v, want %v", tc.files, got, tc.want)
		}
	}
}
