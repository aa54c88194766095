package archive

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// WALVerifyArgs are the arguments of `wal-g wal-verify` that check a WAL-G archive whose newest segment is
// last: the integrity check (every segment from the oldest backup's start on is in the archive) and the
// timeline check (no newer timeline than last's), in JSON. WAL-G checks the segments before the "current"
// one, which it asks a running server for unless --timeline and --lsn give it; a drill has no server of the
// archive, so the current segment is the one after last (the position one byte into it), and last itself is
// checked too.
func WALVerifyArgs(last string) ([]string, error) {
	i, ok := segmentIndex(last)
	if !ok {
		return nil, fmt.Errorf("%q is not a WAL segment's name", last)
	}
	return []string{"wal-verify", "integrity", "timeline", "--json", "--timeline", fmt.Sprint(timelineOf(last)),
		"--lsn", topology.FormatLSN((i+1)*SegmentBytes + 1)}, nil
}

// timelineOf is the timeline of segment name (valid: segmentIndex accepted it).
func timelineOf(name string) uint64 {
	tl, _ := strconv.ParseUint(name[:8], 16, 32)
	return tl
}

// WALVerifyReport is what `wal-g wal-verify integrity timeline --json` reported.
type WALVerifyReport struct {
	// OK is true when both checks passed (status OK).
	OK bool
	// Detail says what was checked, or each check that did not pass and why: the segment ranges missing
	// (with WAL-G's status of them) and the timelines that disagree.
	Detail string
}

// ParseWALVerify reads the JSON `wal-g wal-verify integrity timeline --json` writes: per check a status (OK,
// WARNING, FAILURE) and details (integrity: segment ranges by timeline with FOUND, MISSING_DELAYED,
// MISSING_UPLOADING or MISSING_LOST; timeline: the current and the highest timeline in storage). A check
// that is missing from the output, or any status but OK, fails the report: a drill reads an archive whose
// writer is not running here, so a segment WAL-G calls delayed or uploading is missing all the same.
func ParseWALVerify(data []byte) (WALVerifyReport, error) {
	var out struct {
		Integrity *struct {
			Status  string `json:"status"`
			Details []struct {
				Timeline uint32 `json:"timeline_id"`
				Start    string `json:"start_segment"`
				End      string `json:"end_segment"`
				Count    int    `json:"segments_count"`
				Status   string `json:"status"`
			} `json:"details"`
		} `json:"integrity"`
		Timeline *struct {
			Status  string `json:"status"`
			Details struct {
				Current uint32 `json:"current_timeline_id"`
				Highest uint32 `json:"highest_storage_timeline_id"`
			} `json:"details"`
		} `json:"timeline"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return WALVerifyReport{}, fmt.Errorf("reading wal-g wal-verify's output: %w", err)
	}
	var problems []string
	found, segments := 0, 0
	if in := out.Integrity; in == nil {
		problems = append(problems, "wal-g wal-verify reported no integrity check")
	} else {
		for _, d := range in.Details {
			if d.Status == "FOUND" {
				found++
				segments += d.Count
				continue
			}
			what := d.Start
			if d.End != d.Start {
				what = fmt.Sprintf("%s to %s (%d segments)", d.Start, d.End, d.Count)
			}
			problems = append(problems, fmt.Sprintf("wal-g wal-verify: WAL segment %s is missing (%s)", what, d.Status))
		}
		if in.Status != "OK" && len(problems) == 0 {
			problems = append(problems, "wal-g wal-verify: the integrity check's status is "+in.Status)
		}
	}
	switch tl := out.Timeline; {
	case tl == nil:
		problems = append(problems, "wal-g wal-verify reported no timeline check")
	case tl.Status != "OK":
		problems = append(problems, fmt.Sprintf("wal-g wal-verify: the timeline check's status is %s (the archive's highest timeline %d, the newest segment's %d)",
			tl.Status, tl.Details.Highest, tl.Details.Current))
	}
	if len(problems) > 0 {
		return WALVerifyReport{Detail: strings.Join(slices.Compact(problems), "\n")}, nil
	}
	return WALVerifyReport{OK: true, Detail: fmt.Sprintf("wal-g wal-verify: %d segments on %d timeline ranges found, timeline OK", segments, found)}, nil
}
