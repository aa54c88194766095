// Package mountinfo reads /proc/self/mountinfo: what is mounted where, for the loop-device disks and the
// latency layer of the local platform.
package mountinfo

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo: where, the file system type and the source.
type Mount struct {
	Point, FSType, Source string
}

// At are the mounts at dir, oldest first (the last is the one seen there).
func At(dir string) ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || Unescape(fields[4]) != dir {
			continue
		}
		i := slices.Index(fields, "-")
		if i < 0 || i+2 >= len(fields) {
			continue
		}
		out = append(out, Mount{Point: dir, FSType: fields[i+1], Source: Unescape(fields[i+2])})
	}
	return out, s.Err()
}

// Unescape undoes mountinfo's octal escapes (\040 for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
