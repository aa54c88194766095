package acctest

import (
	"fmt"
	"path"
	"strconv"
)

// WALHole is "" when names (file or object names in an archive, any path before them ignored: pgBackRest's
// <segment>-<sha1>.gz, WAL-G's <segment>.lz4, a plain copy) hold every WAL segment of last's timeline from
// the first of that timeline they hold up to last, else a sentence naming the first missing segment. It
// assumes 16 MiB segments (256 to a log file). .partial segments and history files do not count.
func WALHole(names []string, last string) string {
	tl, end, ok := parseSegment(last)
	if !ok {
		return fmt.Sprintf("%q is not a WAL segment name", last)
	}
	have := map[uint64]bool{}
	first := ^uint64(0)
	for _, name := range names {
		base := path.Base(name)
		if len(base) < 24 || (len(base) > 24 && base[24] == '.' && len(base) >= 32 && base[24:32] == ".partial") {
			continue
		}
		if t, n, ok := parseSegment(base[:24]); ok && t == tl {
			have[n] = true
			first = min(first, n)
		}
	}
	if len(have) == 0 {
		return fmt.Sprintf("no segment of timeline %s is archived", tl)
	}
	for n := first; n <= end; n++ {
		if !have[n] {
			return fmt.Sprintf("segment %s%08X%08X is missing (the archive holds %d segments of timeline %s, from %s%08X%08X)",
				tl, n>>8, n&0xFF, len(have), tl, tl, first>>8, first&0xFF)
		}
	}
	return ""
}

// parseSegment splits a WAL segment name into its timeline (8 hex digits) and its position in the timeline
// (log * 256 + segment).
func parseSegment(name string) (timeline string, n uint64, ok bool) {
	if len(name) != 24 {
		return "", 0, false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'A' || c > 'F') {
			return "", 0, false
		}
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	return name[:8], log*256 + seg, err1 == nil && err2 == nil
}
