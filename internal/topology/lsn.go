package topology

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformedLSN is wrapped by the errors of ParseLSN and CompareLSN.
var ErrMalformedLSN = errors.New("malformed LSN")

// maxLSNComponent is the most hexadecimal digits PostgreSQL's pg_lsn input
// accepts on either side of the '/' (MAXPG_LSNCOMPONENT).
const maxLSNComponent = 8

// ParseLSN reads a WAL location in PostgreSQL's pg_lsn text form, "X/Y", as
// functions such as pg_current_wal_flush_lsn() print it, and returns its
// 64-bit value X<<32 | Y. It accepts exactly what PostgreSQL's pg_lsn input
// accepts: 1 to 8 hexadecimal digits (either letter case, leading zeros
// allowed), '/', 1 to 8 hexadecimal digits, and nothing else (no spaces, no
// sign, no 0x), so "0/3000060" is 0x3000060 and "16/B374D848" is
// 0x16B374D848. Anything else is an error wrapping ErrMalformedLSN.
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if ok {
		h, okh := parseLSNComponent(hi)
		l, okl := parseLSNComponent(lo)
		if okh && okl {
			return uint64(h)<<32 | uint64(l), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want two hexadecimal numbers of 1 to 8 digits separated by '/', such as 0/3000060", ErrMalformedLSN, s)
}

// parseLSNComponent reads one side of an LSN.
func parseLSNComponent(s string) (uint32, bool) {
	if len(s) < 1 || len(s) > maxLSNComponent {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, false
	}
	return uint32(v), true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// FormatLSN writes v as PostgreSQL prints a pg_lsn: upper-case hexadecimal
// without leading zeros on either side, such as "16/B374D848".
func FormatLSN(v uint64) string {
	return fmt.Sprintf("%X/%X", v>>32, uint32(v))
}

// CompareLSN compares two LSNs in text form by position in the WAL: -1 when
// a is before b, 0 when they are the same location (however written), +1
// when a is after b. A malformed LSN is an error wrapping ErrMalformedLSN.
func CompareLSN(a, b string) (int, error) {
	x, err := ParseLSN(a)
	if err != nil {
		return 0, err
	}
	y, err := ParseLSN(b)
	if err != nil {
		return 0, err
	}
	return cmp.Compare(x, y), nil
}
