// Package pgbench holds the pure parts of running pgbench: dataset size for a
// scale factor, and (later) argument lists and output parsing.
package pgbench

import "math"

// BytesPerScale is the on-disk size, in bytes, of one unit of pgbench scale
// after `pgbench -i`: pg_total_relation_size (heap with its free-space and
// visibility maps, plus indexes and TOAST) summed over pgbench_accounts,
// pgbench_branches, pgbench_tellers and pgbench_history. Each unit of scale
// is 100,000 accounts, 10 tellers and 1 branch; history starts empty.
//
// Measured on PostgreSQL 15.18 (Debian 15.18-0+deb12u1, x86_64, 8 KiB
// blocks, default fillfactor) with, for each scale S, a fresh database and
//
//	pgbench -i -q -s S -h 127.0.0.1 -p PORT -U postgres DB
//	SELECT sum(pg_total_relation_size(c)) FROM unnest(array['pgbench_accounts',
//	  'pgbench_branches','pgbench_tellers','pgbench_history']::regclass[]) AS c;
//
// giving
//
//	scale    1:         15,843,328 bytes  (15,843,328 per scale)
//	scale   10:        156,966,912 bytes  (15,696,691 per scale)
//	scale   50:        784,179,200 bytes  (15,683,584 per scale)
//	scale  100:      1,568,178,176 bytes  (15,681,782 per scale)
//	scale 1000:     15,680,290,816 bytes  (15,680,291 per scale)
//
// The constant is the scale-1000 figure: 14.95 MiB per scale, 14.60 GiB at
// scale 1000, of which the pgbench_accounts heap is 12.51 GiB (1,639 pages per
// scale) and its primary key 2.09 GiB. Small scales carry a few hundred KiB
// of fixed overhead, so they come out up to 1% above the constant.
const BytesPerScale = 15_680_291

// bytesPerGiB is 2^30.
const bytesPerGiB = 1 << 30

// SizeGiB returns the on-disk size, in GiB (2^30 bytes), of a pgbench
// dataset initialised at scale: scale * BytesPerScale / 2^30. A scale below
// 1 gives 0 or less; pgbench itself requires at least 1.
func SizeGiB(scale int) float64 {
	return float64(scale) * BytesPerScale / bytesPerGiB
}

// ScaleForGiB returns the smallest scale whose SizeGiB is at least gib, and
// never less than 1: ScaleForGiB(0) and ScaleForGiB(-3) are 1, ScaleForGiB(1)
// is 69. NaN gives 1; a size too large for an int gives math.MaxInt.
func ScaleForGiB(gib float64) int {
	if math.IsNaN(gib) || gib <= 0 {
		return 1
	}
	s := math.Ceil(gib * bytesPerGiB / BytesPerScale)
	if s >= math.MaxInt64/2 {
		return math.MaxInt
	}
	scale := max(int(s), 1)
	// Correct for rounding in the division so the result is exact.
	for SizeGiB(scale) < gib {
		scale++
	}
	for scale > 1 && SizeGiB(scale-1) >= gib {
		scale--
	}
	return scale
}
