package bootstrap

import (
	"regexp"
	"strings"
)

// heredocStart finds a here-document's delimiter on a shell line (<<EOF, <<-EOF, <<'EOF', <<"EOF"),
// not a here-string (<<<).
var heredocStart = regexp.MustCompile(`(?:^|[^<])<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// compactShell is a rendered shell script as a node's user-data carries it: its full-line comments
// dropped (EC2 takes at most MaxUserDataBytes of user-data, gzip included, and the scripts' prose is most
// of it), except the first line (the interpreter), shellcheck directives and here-documents' lines, with
// a second line naming the source, where the comments are.
func compactShell(script, source string) string {
	lines := strings.Split(script, "\n")
	out := make([]string, 0, len(lines))
	heredoc := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case heredoc != "":
			if trimmed == heredoc {
				heredoc = ""
			}
		case i == 0:
			out = append(out, l, "# pgnvme: "+source+" in terraform-provider-pgnvme, where its comments are.")
			continue
		case strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "# shellcheck "):
			continue
		default:
			if m := heredocStart.FindStringSubmatch(l); m != nil {
				heredoc = m[1]
			}
			l = strings.TrimLeft(l, " \t")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// compactUnit is a rendered systemd unit as a node's user-data carries it: its comment lines dropped, for
// the room compactShell makes, and one first line naming the source, where the comments are.
func compactUnit(unit, source string) string {
	out := []string{"# pgnvme: " + source + " in terraform-provider-pgnvme, where its comments are."}
	for _, l := range strings.Split(unit, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
