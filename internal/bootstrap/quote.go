package bootstrap

import (
	"maps"
	"slices"
	"strings"
)

// FormatConf renders params as postgresql.conf lines, "name = 'value'", one
// per parameter, sorted by name, each value quoted with QuoteConf.
func FormatConf(params map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		b.WriteString(k)
		b.WriteString(" = ")
		b.WriteString(QuoteConf(params[k]))
		b.WriteByte('\n')
	}
	return b.String()
}

// QuoteConf quotes v as a postgresql.conf string value: in single quotes,
// with each backslash and single quote doubled, so that the server reads v
// exactly (its configuration scanner reads two backslashes as one, and two
// single quotes as one). v must not contain a line break or NUL byte; Validate refuses those.
func QuoteConf(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// quoteConnValue writes v as a libpq connection string value: bare when it
// is not empty and has no white space, single quote or backslash; otherwise
// in single quotes with each single quote and backslash escaped by a
// backslash (libpq's rules, "Connection Strings").
func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	v = strings.ReplaceAll(v, `\`, `\\`)
	return "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
}

// shellSafe reports whether s can be written in a POSIX shell command
// without quotes.
func shellSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_./:@,+=-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// quoteShell writes s as one POSIX shell word: bare when shellSafe, else in
// single quotes, each embedded single quote closed, escaped and reopened
// (quote, backslash, quote, quote).
func quoteShell(s string) string {
	if shellSafe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandWord writes s as one shell word of an archive_command or
// restore_command: quoted for the shell, with each '%' doubled so that
// PostgreSQL, which replaces %p, %f, %r and %% in those commands, passes it
// through unchanged.
func commandWord(s string) string {
	return strings.ReplaceAll(quoteShell(s), "%", "%%")
}

// hbaKeywords are words with a special meaning in pg_hba.conf's database and
// user fields.
var hbaKeywords = []string{"all", "sameuser", "samerole", "samegroup", "replication"}

// quoteHBAName writes a role name (a plain identifier, see Node.ReplicationUser)
// for pg_hba.conf's user field: in double quotes when it is a keyword, so
// that it names the role and not the keyword.
func quoteHBAName(name string) string {
	if slices.Contains(hbaKeywords, strings.ToLower(name)) {
		return `"` + name + `"`
	}
	return name
}
