package bootstrap

import (
	"regexp"
	"strings"
)

// segmentName is a complete WAL segment's file name: timeline, log and segment, 8 hex digits each.
var segmentName = regexp.MustCompile(`^[0-9A-F]{24}$`)

// HandOverQuery, run on a standby, is the log and segment part of a WAL segment's name (16 hex digits,
// without the timeline) for the segment that holds the standby's received position (or its replayed one,
// whichever is further): the first segment it does not hold complete. Every segment before it was received
// (and flushed) to its end. It is empty on a primary and on a standby that has neither received nor replayed
// anything since it started.
const HandOverQuery = `SELECT coalesce((SELECT upper(lpad(to_hex(div(seg, per)::bigint), 8, '0') || lpad(to_hex(mod(seg, per)::bigint), 8, '0')) ` +
	`FROM (SELECT div(pg_wal_lsn_diff(greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), '0/0'), s) AS seg, div(4294967296, s) AS per ` +
	`FROM (SELECT setting::numeric AS s FROM pg_settings WHERE name = 'wal_segment_size') z) q), '')`

// SegmentsToHandOver are the WAL segments a standby about to be promoted hands to its own archiver, from
// the file names in its pg_wal/archive_status (statusFiles) and in its pg_wal (walFiles), and
// firstIncomplete, what HandOverQuery returned on it:
//
//   - every complete segment marked done. A standby marks done every segment it received (archive_mode =
//     on), whether or not the primary it streamed from archived it;
//   - every segment in pg_wal before firstIncomplete that has no status file at all. The walreceiver marks
//     a segment done only when it starts writing the next one, so when the primary is lost right after a
//     segment ended (a WAL switch with nothing written after it), the last complete segment has no status.
//     The promotion leaves it alone (its end is the new timeline's start: there is no partial segment) and
//     the new primary would archive it only when a checkpoint came to remove it, long after.
//
// After a promotion a node archives only what it writes itself, so a segment the lost primary streamed but
// had not archived would be a hole in the archive (its disk is gone). Marked ready, each is pushed by the
// promoted node's archiver, and the checkpointer keeps it until then. Segments the old primary did archive
// are pushed twice, which both archivers accept when the content is the same (pgBackRest's checksum check,
// WAL-G with WALG_PREVENT_WAL_OVERWRITE). Segments already marked ready, timeline history files and
// .partial segments are left alone (PostgreSQL archives the last two itself at the promotion), and so are
// the segments after firstIncomplete (recycled ones, waiting to be written).
//
// The EC2 platform runs the same rule as Patroni's pre_promote script (ec2/pre-promote.sh), the local
// platform before its promotion step.
func SegmentsToHandOver(statusFiles, walFiles []string, firstIncomplete string) []string {
	var out []string
	status := map[string]bool{}
	for _, f := range statusFiles {
		if seg, ok := strings.CutSuffix(f, ".done"); ok && segmentName.MatchString(seg) {
			out = append(out, seg)
			status[seg] = true
		}
		if seg, ok := strings.CutSuffix(f, ".ready"); ok {
			status[seg] = true
		}
	}
	if len(firstIncomplete) != 16 {
		return out
	}
	for _, f := range walFiles {
		if segmentName.MatchString(f) && !status[f] && f[8:] < firstIncomplete {
			out = append(out, f)
		}
	}
	return out
}
