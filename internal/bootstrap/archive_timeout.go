package bootstrap

import (
	"strconv"
	"strings"
	"time"
)

// ArchiveTimeout is archive_timeout as the nodes run it with an archive: the user's value when it parses
// (PostgreSQL's time units, seconds without one; 0 disables it), else DefaultArchiveTimeout.
func ArchiveTimeout(params map[string]string) time.Duration {
	if d, ok := pgSeconds(params["archive_timeout"]); ok {
		return d
	}
	d, _ := pgSeconds(DefaultArchiveTimeout)
	return d
}

// pgSeconds reads a PostgreSQL time setting whose base unit is seconds ("60", "60s", "1min", "500ms", "2h", "1d").
func pgSeconds(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := v, ""
	if i >= 0 {
		num, unit = v[:i], strings.TrimSpace(v[i:])
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	scale := map[string]time.Duration{"": time.Second, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := scale[unit]
	if !ok {
		return 0, false
	}
	return time.Duration(n * float64(u)), true
}
