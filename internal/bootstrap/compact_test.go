package bootstrap

import "testing"

func TestCompactShell(t *testing.T) {
	in := "#!/bin/bash\n# what it does\nset -eu\n  # an indented comment\n# shellcheck source=/dev/null\n. /etc/x\n" +
		"cat <<EOF\n# kept: the unit's own comment\n[Unit]\nEOF\ncat <<-'END'\n\t# kept too\n\tEND\n# gone\nread -r a <<<\"$b\" # a here-string is no here-document\n# gone as well\necho done\n"
	want := "#!/bin/bash\n# pgnvme: ec2/x.sh in terraform-provider-pgnvme, where its comments are.\nset -eu\n# shellcheck source=/dev/null\n. /etc/x\n" +
		"cat <<EOF\n# kept: the unit's own comment\n[Unit]\nEOF\ncat <<-'END'\n\t# kept too\n\tEND\nread -r a <<<\"$b\" # a here-string is no here-document\necho done\n"
	if got := compactShell(in, "ec2/x.sh"); got != want {
		t.Fatalf("compactShell:\n%s\nwant:\n%s", got, want)
	}
}
