package moduletest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's claims a script can check: every module under modules/ has its row, every `make <target>`
// it names is a target of GNUmakefile, and every relative link resolves to a file or directory of the
// repository.
func TestREADMEClaims(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	modules, err := os.ReadDir(filepath.Join(root, "modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modules {
		if m.IsDir() && !strings.Contains(readme, "](modules/"+m.Name()+")") {
			t.Errorf("README.md does not list module %s (a row linking modules/%s)", m.Name(), m.Name())
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "GNUmakefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for _, m := range regexp.MustCompile("`make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(readme, -1) {
		targets++
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).Match(makefile) {
			t.Errorf("README.md names `make %s`, which GNUmakefile does not have", m[1])
		}
	}
	links := 0
	for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(readme, -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		links++
		if _, err := os.Stat(filepath.Join(root, target)); err != nil {
			t.Errorf("README.md links %s, which is not in the repository", m[1])
		}
	}
	if targets < 2 || links < 10 {
		t.Errorf("found %d make targets and %d relative links: the patterns no longer read the README", targets, links)
	}
	t.Logf("%d modules listed, %d make targets and %d relative links checked", len(modules), targets, links)
}
