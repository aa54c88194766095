package localnode

import "testing"

func TestWALRecordEnd(t *testing.T) {
	const seg, blk = 16 << 20, 8192
	for _, tc := range []struct {
		name string
		rec  walRecord
		want uint64
	}{
		{"within a page, aligned up", walRecord{lsn: 0x3000028, totLen: 54}, 0x3000060},
		{"ends on the page boundary", walRecord{lsn: 0x3001FF0, totLen: 16}, 0x3002000},
		{"crosses one page: short header", walRecord{lsn: 0x3001FF0, totLen: 17}, 0x3002000 + 24 + 8},
		{"spans three pages", walRecord{lsn: 0x3000028, totLen: 20000}, 0x3004000 + 24 + (20000 - (blk - 0x28) - (blk - 24))},
		{"crosses into the next segment: long header", walRecord{lsn: 0x3FFFFF0, totLen: 32}, 0x4000000 + 40 + 16},
		{"switch skips to the next segment", walRecord{lsn: 0x3000028, totLen: 24, switchSeg: true}, 0x4000000},
		{"switch at a segment's end", walRecord{lsn: 0x3FFFFE8, totLen: 24, switchSeg: true}, 0x4000000},
	} {
		if got := tc.rec.end(seg, blk); got != tc.want {
			t.Errorf("%s: end = %s, want %s", tc.name, formatLSN(got), formatLSN(tc.want))
		}
	}
}
