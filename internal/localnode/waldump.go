package localnode

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// EndOfWAL is where the valid WAL in stopped node n's pg_wal on timeline
// ends: the end of its last complete record ("0/3000148"), where the next
// record would start. It is meant for a stopped node (a running one keeps
// writing).
//
// It reads with pg_waldump (as the run user), starting at the newest
// segment file of timeline that holds a valid record and reading on until
// the WAL stops being valid (pg_waldump then reports "error in WAL record",
// or that the next file is missing). Newer segment files without a valid
// record are recycled or preallocated ones and are passed over. The result
// is the end of the last record pg_waldump validated (header, CRC, link to
// the previous record), computed from its LSN and length, never a position
// from the error message: a torn or partly received record at the end is not
// counted, so the result never overstates what the node holds; and since
// every complete record is counted, it does not understate it either (WAL
// is written in order, so nothing valid follows the first invalid record).
//
// When no segment file of timeline holds a valid record (pg_wal emptied or
// all recycled), the node holds no WAL past what its control file records:
// the result is then the later of pg_controldata's "Minimum recovery ending
// location" and "Latest checkpoint location" (positions the node has
// replayed or written). A failure to run pg_waldump is an error, not a
// fallback.
func (e *Engine) EndOfWAL(ctx context.Context, n Node, timeline int) (string, error) {
	if err := n.Validate(); err != nil {
		return "", err
	}
	if timeline <= 0 {
		return "", fmt.Errorf("reading the end of the WAL of %s: timeline %d: give a timeline ID (1 or more)", n.Name, timeline)
	}
	cd, err := e.ControlData(ctx, n)
	if err != nil {
		return "", err
	}
	if cd.WALSegmentSize <= 0 || cd.WALBlockSize <= 0 {
		return "", fmt.Errorf("reading the end of the WAL of %s: pg_controldata gave no WAL segment or block size", n.Name)
	}
	walDir := filepath.Join(n.dataDir(), "pg_wal")
	segs, err := walSegments(walDir, timeline)
	if err != nil {
		return "", fmt.Errorf("reading the end of the WAL of %s: %w", n.Name, err)
	}
	for i := len(segs) - 1; i >= 0; i-- {
		start := segs[i].log<<32 + segs[i].seg*uint64(cd.WALSegmentSize)
		rec, found, err := e.lastWALRecord(ctx, walDir, timeline, start)
		if err != nil {
			return "", fmt.Errorf("reading the end of the WAL of %s: %w", n.Name, err)
		}
		if found {
			return formatLSN(rec.end(uint64(cd.WALSegmentSize), uint64(cd.WALBlockSize))), nil
		}
	}
	// No valid record on the timeline: what the control file vouches for.
	end := uint64(0)
	for _, s := range []string{cd.MinRecoveryLSN, cd.CheckpointLSN} {
		v, err := parseLSN(s)
		if err != nil {
			return "", fmt.Errorf("reading the end of the WAL of %s: pg_controldata: %w", n.Name, err)
		}
		end = max(end, v)
	}
	return formatLSN(end), nil
}

// walSegment is a WAL segment file's name without its timeline: the 4 GiB
// "log" and the segment within it.
type walSegment struct{ log, seg uint64 }

// walSegments lists dir's WAL segment files on timeline, oldest first
// (partial, backup and history files excluded).
func walSegments(dir string, timeline int) ([]walSegment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	tli := fmt.Sprintf("%08X", timeline)
	var segs []walSegment
	for _, ent := range entries {
		name := ent.Name()
		if len(name) != 24 || !ent.Type().IsRegular() || name[:8] != tli {
			continue
		}
		hi, err1 := strconv.ParseUint(name[8:16], 16, 32)
		lo, err2 := strconv.ParseUint(name[16:24], 16, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		segs = append(segs, walSegment{hi, lo})
	}
	slices.SortFunc(segs, func(a, b walSegment) int {
		if c := cmp.Compare(a.log, b.log); c != 0 {
			return c
		}
		return cmp.Compare(a.seg, b.seg)
	})
	return segs, nil
}

// walRecord is one record line of pg_waldump.
type walRecord struct {
	lsn    uint64
	totLen uint64
	// switchSeg is an XLOG SWITCH record: the rest of its segment is unused.
	switchSeg bool
}

// end is where the record ends, where the next one would start: its length
// laid over the pages from its LSN (each continuation page starting with a
// page header, long at a segment start), MAXALIGNed as xlogreader does; after
// a SWITCH record, the start of the next segment.
func (r walRecord) end(segSize, blockSize uint64) uint64 {
	const (
		maxAlign       = 8
		shortPageHdr   = 24 // MAXALIGN(sizeof(XLogPageHeaderData))
		longPageHeader = 40 // MAXALIGN(sizeof(XLogLongPageHeaderData))
	)
	pos, left := r.lsn, r.totLen
	for left > 0 {
		n := min(left, (pos/blockSize+1)*blockSize-pos)
		pos, left = pos+n, left-n
		if left > 0 {
			if pos%segSize == 0 {
				pos += longPageHeader
			} else {
				pos += shortPageHdr
			}
		}
	}
	pos = (pos + maxAlign - 1) &^ (maxAlign - 1)
	if r.switchSeg && pos%segSize != 0 {
		pos = (pos/segSize + 1) * segSize
	}
	return pos
}

// recordPattern reads a pg_waldump record line: "rmgr: Heap len (rec/tot):
// 54/ 54, tx: 735, lsn: 0/03000060, prev 0/03000028, desc: INSERT ...".
var recordPattern = regexp.MustCompile(`^rmgr: (\S+)\s+len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*\d+, lsn: ([0-9A-Fa-f]+/[0-9A-Fa-f]+), prev [0-9A-Fa-f]+/[0-9A-Fa-f]+, desc: (\S*)`)

// lastWALRecord runs pg_waldump on walDir from start on timeline to the end
// of the valid WAL and returns the last record it printed; found is false
// when it printed none. pg_waldump always ends with an error when it reads
// to the end of the WAL, so its exit status is not a failure; not being able
// to start it is.
func (e *Engine) lastWALRecord(ctx context.Context, walDir string, timeline int, start uint64) (walRecord, bool, error) {
	cmd := e.serverCmd(ctx, walDir, "pg_waldump", "-p", walDir, "-t", strconv.Itoa(timeline), "-s", formatLSN(start))
	last := &lastLine{prefix: []byte("rmgr: ")}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = last, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return walRecord{}, false, ctx.Err()
	}
	var exitErr interface{ ExitCode() int }
	if err != nil && !errors.As(err, &exitErr) {
		return walRecord{}, false, fmt.Errorf("running pg_waldump: %w", err)
	}
	line := last.line()
	if line == "" {
		return walRecord{}, false, nil
	}
	m := recordPattern.FindStringSubmatch(line)
	if m == nil {
		return walRecord{}, false, fmt.Errorf("pg_waldump printed a record line it cannot read: %q", line)
	}
	tot, err := strconv.ParseUint(m[2], 10, 32)
	if err != nil {
		return walRecord{}, false, fmt.Errorf("pg_waldump record length in %q: %w", line, err)
	}
	lsn, err := parseLSN(m[3])
	if err != nil {
		return walRecord{}, false, fmt.Errorf("pg_waldump record LSN in %q: %w", line, err)
	}
	return walRecord{lsn: lsn, totLen: tot, switchSeg: m[1] == "XLOG" && m[4] == "SWITCH"}, true, nil
}

// lastLine is an io.Writer that keeps only the last complete line starting
// with prefix, so a long dump is not held in memory.
type lastLine struct {
	prefix  []byte
	partial []byte
	last    []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		if bytes.HasPrefix(l.partial[:i], l.prefix) {
			l.last = append(l.last[:0], l.partial[:i]...)
		}
		l.partial = l.partial[i+1:]
	}
	// Compact so the buffer does not grow with the output.
	l.partial = append([]byte(nil), l.partial...)
	return len(p), nil
}

// line is the last complete line with the prefix, "" when there was none.
func (l *lastLine) line() string { return strings.TrimSpace(string(l.last)) }

// parseLSN reads "X/Y" (hexadecimal halves).
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("LSN %q: want X/Y", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	return h<<32 | l, nil
}

func formatLSN(v uint64) string { return fmt.Sprintf("%X/%X", v>>32, uint32(v)) }
