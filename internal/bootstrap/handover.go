package bootstrap

import (
	"regexp"
	"strings"
)

// segmentName is a complete WAL segment's file name: timeline, log and segment, 8 hex digits each.
var segmentName = regexp.MustCompile(`^[0-9A-F]{24}$`)

// SegmentsToHandOver are the WAL segments a standby about to be promoted hands to its own archiver, from
// the file names in its pg_wal/archive_status: every complete segment marked done. A standby marks done
// every segment it received (archive_mode = on), whether or not the primary it streamed from archived it;
// after a promotion it archives only what it writes itself, so a segment the lost primary streamed but had
// not archived would be a hole in the archive for good (its disk is gone). Marked ready again, each is
// pushed by the promoted node's archiver, and the checkpointer keeps it until then. Segments the old
// primary did archive are pushed twice, which both archivers accept when the content is the same
// (pgBackRest's checksum check, WAL-G with WALG_PREVENT_WAL_OVERWRITE). Timeline history files and
// .partial segments are left alone: PostgreSQL archives both itself at the promotion.
//
// The EC2 platform runs the same rule as Patroni's pre_promote script (ec2/pre-promote.sh), the local
// platform before its promotion step.
func SegmentsToHandOver(statusFiles []string) []string {
	var out []string
	for _, f := range statusFiles {
		if seg, ok := strings.CutSuffix(f, ".done"); ok && segmentName.MatchString(seg) {
			out = append(out, seg)
		}
	}
	return out
}
