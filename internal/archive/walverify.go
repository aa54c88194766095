package archive

import (
	"fmt"
	"strconv"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// WALVerifyArgs are the arguments of `wal-g wal-verify` that check a WAL-G archive whose newest segment is
// last: the integrity check (every segment from the oldest backup's start on is in the archive) and the
// timeline check (no newer timeline than last's), in JSON. WAL-G checks the segments before the "current"
// one, which it asks a running server for unless --timeline and --lsn give it; a drill has no server of the
// archive, so the current segment is the one after last (the position one byte into it), and last itself is
// checked too. What the output means is judged in one place, for the drill as for the nodes: the "verdict"
// of backup.DecideScript (see Verification).
func WALVerifyArgs(last string) ([]string, error) {
	i, ok := segmentIndex(last)
	if !ok {
		return nil, fmt.Errorf("%q is not a WAL segment's name", last)
	}
	return []string{"wal-verify", "integrity", "timeline", "--json", "--timeline", fmt.Sprint(TimelineOf(last)),
		"--lsn", topology.FormatLSN((i+1)*SegmentBytes + 1)}, nil
}

// TimelineOf is the timeline of WAL segment name, 0 when name is not a segment's.
func TimelineOf(name string) uint32 {
	if _, ok := segmentIndex(name); !ok {
		return 0
	}
	tl, _ := strconv.ParseUint(name[:8], 16, 32)
	return uint32(tl)
}
