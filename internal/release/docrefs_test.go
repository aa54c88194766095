package release_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	goversion "github.com/hashicorp/go-version"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
)

// The documentation may pin this repository's code only to what exists. It is read where a reader copies
// from: README.md, docs/, templates/, modules/*/README.md and examples/. Two kinds of pins are checked:
//
//   - a git source of this repository or of a module's registry mirror (github.com/pgnvme/terraform-provider-pgnvme,
//     github.com/pgnvme/terraform-pgnvme-<name>) with `?ref=X`: X must be a tag of this repository or a commit of
//     it (hex, at least 7 digits);
//   - a `version = "X"` in the block of a registry source of this provider (`source = "pgnvme/pgnvme"`) or of a
//     module (`source = "pgnvme/<name>/pgnvme"`): an exact version must be a tag vX; a constraint (`>=`, `~>`,
//     ...) must be met by a tag's version or, for the provider only, by the version this checkout builds
//     (CHANGELOG.md's newest heading: what `make install`, the plugin directory and the release archives
//     install). Modules are released only by tags.
//
// A placeholder the reader replaces is written in angle brackets, `?ref=<commit>` or `version = "<version>"`,
// and always passes.

// docPaths are the files and directories read, relative to the repository's root (globs allowed).
var docPaths = []string{"README.md", "docs", "templates", "modules/*/README.md", "examples"}

// repoState is what a pin may name.
type repoState struct {
	tags map[string]bool
	// isCommit reports whether a hex string names a commit of the repository.
	isCommit func(string) bool
	// buildVersion is the provider version the checkout builds.
	buildVersion string
}

type docRef struct {
	file  string
	line  int
	kind  string // "ref" or "version"
	value string
	of    string // what is pinned: the git source, or the registry source
}

func (r docRef) String() string {
	return fmt.Sprintf("%s:%d: %s %q of %s", r.file, r.line, r.kind, r.value, r.of)
}

var (
	gitRef = regexp.MustCompile("(github\\.com[/:]pgnvme/(?:terraform-provider-pgnvme|terraform-pgnvme-[a-z0-9-]+)[^\\s\"'`]*?)[?&]ref=([^\\s\"'`&#)]+)")
	// A registry source of the provider (pgnvme/pgnvme) or of a module (pgnvme/<name>/pgnvme).
	registrySource = regexp.MustCompile(`\bsource\s*=\s*"((?:registry\.terraform\.io/)?pgnvme/(?:[a-z0-9-]+/)?pgnvme)"`)
	versionAttr    = regexp.MustCompile(`\bversion\s*=\s*"([^"]*)"`)
	placeholder    = regexp.MustCompile(`^<[^<>]+>$`)
	hexCommit      = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	fence          = regexp.MustCompile("(?m)^\\s*(```|~~~)")
)

// scanDocs finds every pin under root's docPaths.
func scanDocs(root string) ([]docRef, error) {
	var refs []docRef
	for _, p := range docPaths {
		matches, err := filepath.Glob(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: nothing to read", p)
		}
		for _, m := range matches {
			err := filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					if d.Name() == ".terraform" {
						return filepath.SkipDir
					}
					return nil
				}
				b, err := os.ReadFile(path)
				if err != nil || bytes.IndexByte(b, 0) >= 0 {
					return err
				}
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				refs = append(refs, scanText(filepath.ToSlash(rel), string(b))...)
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return refs, nil
}

// scanText finds the pins in one file's text.
func scanText(file, text string) []docRef {
	var refs []docRef
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	for _, m := range gitRef.FindAllStringSubmatchIndex(text, -1) {
		refs = append(refs, docRef{file: file, line: lineOf(m[4]), kind: "ref", value: text[m[4]:m[5]], of: text[m[2]:m[3]]})
	}
	markdown := strings.HasSuffix(file, ".md") || strings.HasSuffix(file, ".tmpl")
	for _, m := range registrySource.FindAllStringSubmatchIndex(text, -1) {
		lo, hi := 0, len(text)
		if markdown {
			lo, hi = codeBlock(text, m[0])
		}
		start, end := enclosingBlock(text, m[0], lo, hi)
		block := text[start:end]
		for _, v := range versionAttr.FindAllStringSubmatchIndex(block, -1) {
			if depth(block[:v[0]]) != 0 {
				continue // a version inside a nested block belongs to something else
			}
			r := docRef{file: file, line: lineOf(start + v[2]), kind: "version", value: block[v[2]:v[3]], of: text[m[2]:m[3]]}
			if !slices.Contains(refs, r) { // two sources in one block find its versions twice
				refs = append(refs, r)
			}
		}
	}
	return refs
}

// codeBlock is the fenced code block of a Markdown text that holds off, or off's line outside one.
func codeBlock(text string, off int) (int, int) {
	fences := fence.FindAllStringIndex(text, -1)
	for i := 0; i+1 < len(fences); i += 2 {
		if fences[i][0] <= off && off < fences[i+1][0] {
			return fences[i][1], fences[i+1][0]
		}
	}
	lo := strings.LastIndexByte(text[:off], '\n') + 1
	hi := strings.IndexByte(text[off:], '\n')
	if hi < 0 {
		return lo, len(text)
	}
	return lo, off + hi
}

// enclosingBlock is the span of the innermost { ... } around off within [lo, hi), or [lo, hi).
func enclosingBlock(text string, off, lo, hi int) (int, int) {
	start, end := lo, hi
	for i, d := off-1, 0; i >= lo; i-- {
		if text[i] == '}' {
			d++
		} else if text[i] == '{' {
			if d == 0 {
				start = i + 1
				break
			}
			d--
		}
	}
	for i, d := off, 0; i < hi; i++ {
		if text[i] == '{' {
			d++
		} else if text[i] == '}' {
			if d == 0 {
				end = i
				break
			}
			d--
		}
	}
	return start, end
}

func depth(s string) int { return strings.Count(s, "{") - strings.Count(s, "}") }

// check says why a pin names something that does not exist, or "" when it exists.
func (s repoState) check(r docRef) string {
	if placeholder.MatchString(r.value) {
		return ""
	}
	if r.kind == "ref" {
		if s.tags[r.value] || (hexCommit.MatchString(r.value) && s.isCommit(r.value)) {
			return ""
		}
		return "is neither a tag nor a commit of this repository (write ?ref=<commit> for the reader to fill in)"
	}
	c, err := goversion.NewConstraint(r.value)
	if err != nil {
		return fmt.Sprintf("is not a version constraint: %v", err)
	}
	provider := strings.TrimPrefix(r.of, "registry.terraform.io/") == "pgnvme/pgnvme"
	exact := regexp.MustCompile(`^\s*=?\s*v?[0-9]`).MatchString(r.value)
	var have []string
	for tag := range s.tags {
		if v, err := goversion.NewVersion(strings.TrimPrefix(tag, "v")); err == nil && strings.HasPrefix(tag, "v") && c.Check(v) {
			return ""
		} else if err == nil {
			have = append(have, tag)
		}
	}
	if !exact && provider && s.buildVersion != "" {
		if v, err := goversion.NewVersion(s.buildVersion); err == nil && c.Check(v) {
			return ""
		}
	}
	switch {
	case exact:
		return fmt.Sprintf("names a release that is not tagged (tags: %v); write version = \"<version>\" or leave the version out", have)
	case provider:
		return fmt.Sprintf("is met by no tag (%v) and not by the version this checkout builds (%s)", have, s.buildVersion)
	default:
		return fmt.Sprintf("is met by no tag (%v): modules are released only by tags", have)
	}
}

// gitState is the repository's tags and commits (git) and CHANGELOG.md's version.
func gitState(t *testing.T, root string) repoState {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "tag", "--list").Output()
	if err != nil {
		t.Fatalf("git tag --list: %v (the check reads this repository's tags and commits with git)", err)
	}
	tags := map[string]bool{}
	for _, tag := range strings.Fields(string(out)) {
		tags[tag] = true
	}
	version, err := tfwork.ChangelogVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	return repoState{tags: tags, buildVersion: version, isCommit: func(h string) bool {
		return exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", h+"^{commit}").Run() == nil
	}}
}

// TestDocReferences fails on a pin in the documentation of a tag, commit or release this repository does not
// have (the rules above).
func TestDocReferences(t *testing.T) {
	root, err := tfwork.Root()
	if err != nil {
		t.Fatal(err)
	}
	state := gitState(t, root)
	refs, err := scanDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range refs {
		kinds[r.kind]++
		if why := state.check(r); why != "" {
			t.Errorf("%s %s", r, why)
		}
	}
	// The README, the guides and the modules' READMEs show git sources, and the provider's example a version:
	// none found means the patterns no longer read the docs.
	if kinds["ref"] == 0 || kinds["version"] == 0 {
		t.Errorf("found %d ?ref= and %d version pins: the patterns no longer read the docs", kinds["ref"], kinds["version"])
	}
	t.Logf("%d ?ref= and %d version pins checked against %d tags and CHANGELOG.md's %s", kinds["ref"], kinds["version"], len(state.tags), state.buildVersion)
}

// The check against a fixture whose every bad pin must be reported, and no good one.
func TestDocReferences_fixture(t *testing.T) {
	root := filepath.Join("testdata", "docrefs")
	refs, err := scanDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	const commit = "abc1234def5678"
	state := repoState{
		tags:         map[string]bool{"v1.2.0": true},
		isCommit:     func(h string) bool { return len(h) <= len(commit) && commit[:len(h)] == h },
		buildVersion: "1.3.0",
	}
	var got []string
	for _, r := range refs {
		if state.check(r) != "" {
			got = append(got, fmt.Sprintf("%s:%d %s", r.file, r.line, r.value))
		}
	}
	want := []string{
		"README.md:6 v0.1.0",                // git ref: no such tag
		"README.md:7 main",                  // a branch is not a tag or a commit
		"README.md:15 0.1.0",                // module registry pin, not tagged
		"docs/guide.md:8 deadbee",           // hex, but not a commit
		"examples/provider/main.tf:5 2.0.0", // provider pin, not tagged
		"examples/provider/main.tf:12 ~> 2.0",
		"modules/m/README.md:4 >= 1.3.0", // a module constraint only tags can meet
		"templates/guide.md.tmpl:3 v9.9.9",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reported\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(refs) < len(want)+6 {
		t.Errorf("found %d pins in the fixture, want the %d bad ones and the good ones:\n%v", len(refs), len(want), refs)
	}
}
