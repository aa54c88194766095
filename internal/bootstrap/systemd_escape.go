package bootstrap

import (
	"fmt"
	"strings"
)

// SystemdEscapePath is p as `systemd-escape --path` writes it (systemd's unit_name_path_escape): empty, "."
// and repeated separators dropped, "/" (or nothing) is "-", each remaining "/" becomes "-", and every byte but
// ASCII letters, digits, ":", "_" and a "." that does not start the name is written \xNN. p must not hold a
// ".." component, which systemd refuses to escape.
func SystemdEscapePath(p string) string {
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	s := strings.Join(parts, "/")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == ':', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

// SystemdMountUnit is the name of the mount unit of the mount point p, as `systemd-escape --path
// --suffix=mount` writes it.
func SystemdMountUnit(p string) string { return SystemdEscapePath(p) + ".mount" }
