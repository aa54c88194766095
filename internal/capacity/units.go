package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PostgreSQL's memory units, in bytes.
const (
	// BlockBytes is PostgreSQL's page size: the unit of shared_buffers, wal_buffers and
	// effective_cache_size written without a unit.
	BlockBytes = 8 << 10
	// KiloBytes is the unit of work_mem, maintenance_work_mem and friends written without a unit.
	KiloBytes = 1 << 10
	// MegaBytes is the unit of max_wal_size, min_wal_size and wal_keep_size written without a unit.
	MegaBytes = 1 << 20
)

// memoryUnits are the units PostgreSQL accepts after a memory value (case-sensitive, as it reads them).
var memoryUnits = map[string]int64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}

// ParseMemory reads a memory setting as PostgreSQL does ("128MB", "1GB", "512 kB", "0.5GB", "16384") and
// returns its size in bytes. A value without a unit counts in unit bytes: BlockBytes for shared_buffers,
// KiloBytes for work_mem, MegaBytes for max_wal_size. A fractional value is rounded to a whole number of
// the next smaller unit, as PostgreSQL 12 and later do; the result is exact enough for comparing sizes.
func ParseMemory(value string, unit int64) (int64, error) {
	s := strings.TrimSpace(value)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	if end == 0 {
		return 0, fmt.Errorf("%q is not a memory size: write a number with a unit, such as 128MB or 1GB", value)
	}
	n, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a memory size: %w", value, err)
	}
	suffix := strings.TrimSpace(s[end:])
	mult := unit
	if suffix != "" {
		u, ok := memoryUnits[suffix]
		if !ok {
			return 0, fmt.Errorf("%q has unit %q; PostgreSQL accepts B, kB, MB, GB and TB (case-sensitive)", value, suffix)
		}
		mult = u
	}
	b := n * float64(mult)
	if b > math.MaxInt64/2 || math.IsNaN(b) {
		return 0, fmt.Errorf("%q is too large", value)
	}
	return int64(math.Round(b)), nil
}
