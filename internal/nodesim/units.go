package nodesim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// unitFile is a parsed systemd unit file: its sections' assignments in order. An empty assignment resets
// a list, as systemd does.
type unitFile struct {
	name     string
	sections map[string]map[string][]string
}

// parseUnit parses a unit file's text (systemd.syntax(7): sections, key=value, comments with # or ;,
// backslash line continuation).
func parseUnit(name, text string) (*unitFile, error) {
	f := &unitFile{name: name, sections: map[string]map[string][]string{}}
	section := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if f.sections[section] == nil {
				f.sections[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s line %d: %q is not key=value in a section", name, i+1, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if v == "" {
				f.sections[section][k] = nil
				continue
			}
			f.sections[section][k] = append(f.sections[section][k], v)
		}
	}
	return f, nil
}

// values are the assignments of key in section, in order.
func (f *unitFile) values(section, key string) []string { return f.sections[section][key] }

// get is the last assignment of key in section, or def.
func (f *unitFile) get(section, key, def string) string {
	v := f.sections[section][key]
	if len(v) == 0 {
		return def
	}
	return v[len(v)-1]
}

// list is every assignment of key in section split into words (Requires=, After=, WantedBy=, ...).
func (f *unitFile) list(section, key string) []string {
	var out []string
	for _, v := range f.values(section, key) {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// boolean is a systemd boolean setting.
func (f *unitFile) boolean(section, key string, def bool) bool {
	switch strings.ToLower(f.get(section, key, "")) {
	case "1", "yes", "y", "true", "t", "on":
		return true
	case "0", "no", "n", "false", "f", "off":
		return false
	}
	return def
}

// duration is a systemd time span setting ("5s", "15min", "1min 30s", "30", "infinity"); infinity is 0.
func (f *unitFile) duration(section, key string, def time.Duration) (time.Duration, error) {
	v := f.get(section, key, "")
	if v == "" {
		return def, nil
	}
	d, err := parseTimespan(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %s=%s: %w", f.name, key, v, err)
	}
	return d, nil
}

// parseTimespan parses a systemd time span (systemd.time(7)); a bare number is seconds, infinity is 0.
func parseTimespan(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return 0, nil
	}
	units := []struct {
		names []string
		d     time.Duration
	}{
		{[]string{"usec", "us", "µs"}, time.Microsecond},
		{[]string{"msec", "ms"}, time.Millisecond},
		{[]string{"seconds", "second", "sec", "s"}, time.Second},
		{[]string{"minutes", "minute", "min", "m"}, time.Minute},
		{[]string{"hours", "hour", "hr", "h"}, time.Hour},
		{[]string{"days", "day", "d"}, 24 * time.Hour},
	}
	var total time.Duration
	rest := strings.ReplaceAll(s, " ", "")
	if rest == "" {
		return 0, fmt.Errorf("empty time span")
	}
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("time span %q: number expected at %q", s, rest)
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("time span %q: %w", s, err)
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		word := rest[:j]
		rest = rest[j:]
		unit := time.Duration(0)
		if word == "" {
			unit = time.Second
		}
		for _, u := range units {
			for _, name := range u.names {
				if word == name {
					unit = u.d
				}
			}
		}
		if unit == 0 {
			return 0, fmt.Errorf("time span %q: unknown unit %q", s, word)
		}
		total += time.Duration(n * float64(unit))
	}
	return total, nil
}

// execCmd is one Exec*= line.
type execCmd struct {
	// line is the assignment as written.
	line string
	// ignoreFailure is the "-" prefix: a failure does not fail the unit.
	ignoreFailure bool
	// words are the command line split as systemd splits it, variables not yet expanded.
	words []string
}

// commands are the Exec lines of key in [Service].
func (f *unitFile) commands(key string) ([]execCmd, error) {
	var out []execCmd
	for _, v := range f.values("Service", key) {
		c := execCmd{line: v}
		rest := v
	prefixes:
		for rest != "" {
			switch rest[0] {
			case '-':
				c.ignoreFailure = true
			case '@', '+', '!', ':':
				return nil, fmt.Errorf("%s: %s=%s: the prefix %q is not supported by the node simulator", f.name, key, v, rest[0])
			default:
				break prefixes
			}
			rest = rest[1:]
		}
		words, err := splitCommand(rest)
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%s: %w", f.name, key, v, err)
		}
		if len(words) == 0 || !strings.HasPrefix(words[0], "/") {
			return nil, fmt.Errorf("%s: %s=%s: the command must be an absolute path", f.name, key, v)
		}
		c.words = words
		out = append(out, c)
	}
	return out, nil
}

// splitCommand splits a command line into words as systemd.service(5) does: white space separates, double
// and single quotes group, backslash escapes. Variables stay as written (expand does them).
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '"' || c == '\'':
			inWord = true
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c == '"' && j+1 < len(s) {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			i = j
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// expand replaces $NAME (a whole word: split into words) and ${NAME} (inside a word) with env's values,
// and %% with %, as systemd does for Exec lines.
func expand(words []string, env map[string]string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") && isVarName(w[1:]) {
			out = append(out, strings.Fields(env[w[1:]])...)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(w); i++ {
			switch {
			case strings.HasPrefix(w[i:], "${"):
				end := strings.IndexByte(w[i:], '}')
				if end < 0 {
					b.WriteString(w[i:])
					i = len(w)
					continue
				}
				b.WriteString(env[w[i+2:i+end]])
				i += end
			case strings.HasPrefix(w[i:], "%%"):
				b.WriteByte('%')
				i++
			default:
				b.WriteByte(w[i])
			}
		}
		out = append(out, b.String())
	}
	return out
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// parseEnvFile parses a systemd EnvironmentFile: KEY=VALUE lines, comments with # or ;, values in double
// quotes (backslash escapes) or single quotes (none), unquoted values trimmed.
func parseEnvFile(text string) (map[string]string, []string, error) {
	env := map[string]string{}
	var order []string
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(strings.TrimPrefix(k, "export "))
		if !ok || !isVarName(k) {
			return nil, nil, fmt.Errorf("line %d is not KEY=VALUE", n+1)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			var b strings.Builder
			inner := v[1 : len(v)-1]
			for i := 0; i < len(inner); i++ {
				if inner[i] == '\\' && i+1 < len(inner) {
					i++
				}
				b.WriteByte(inner[i])
			}
			v = b.String()
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		}
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	return env, order, nil
}
