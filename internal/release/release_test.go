package release_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/release"
)

// The generated configuration is the repository's .goreleaser.yml with one platform, the caller's dist and
// the tag's version; everything else (flags, ldflags, archives, checksum, signs) is kept as written.
func TestConfig_repository(t *testing.T) {
	root, err := tfwork.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, ".goreleaser.yml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := release.Config(src, "/tmp/x/dist", "linux", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	var orig, got map[string]any
	if err := yaml.Unmarshal(src, &orig); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got["dist"] != "/tmp/x/dist" {
		t.Errorf("dist = %v", got["dist"])
	}
	if s, _ := got["snapshot"].(map[string]any); s["version_template"] != "{{ .Version }}" {
		t.Errorf("snapshot = %v", got["snapshot"])
	}
	b := got["builds"].([]any)[0].(map[string]any)
	ob := orig["builds"].([]any)[0].(map[string]any)
	if !equal(b["goos"], []any{"linux"}) || !equal(b["goarch"], []any{"arm64"}) {
		t.Errorf("goos %v, goarch %v; want [linux] [arm64]", b["goos"], b["goarch"])
	}
	for k, v := range ob {
		if k != "goos" && k != "goarch" && !equal(b[k], v) {
			t.Errorf("builds[0].%s = %v, .goreleaser.yml has %v", k, b[k], v)
		}
	}
	for k, v := range orig {
		if k != "builds" && !equal(got[k], v) {
			t.Errorf("%s = %v, .goreleaser.yml has %v", k, got[k], v)
		}
	}
}

func equal(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

func TestConfig_refusesAPlatformTheReleaseDoesNotBuild(t *testing.T) {
	const src = `builds:
  - goos: [linux, darwin]
    goarch: [amd64, '386']
    ignore:
      - goos: darwin
        goarch: '386'
`
	for _, tc := range []struct {
		goos, goarch string
		ok           bool
	}{
		{"linux", "amd64", true},
		{"darwin", "386", false},
		{"windows", "amd64", false},
		{"linux", "riscv64", false},
	} {
		_, err := release.Config([]byte(src), "/d", tc.goos, tc.goarch)
		if (err == nil) != tc.ok {
			t.Errorf("%s_%s: err = %v, want ok = %v", tc.goos, tc.goarch, err, tc.ok)
		}
	}
	if _, err := release.Config([]byte("project_name: x\n"), "/d", "linux", "amd64"); err == nil {
		t.Error("a configuration without builds was accepted")
	}
}

func TestReadSums(t *testing.T) {
	dir := t.TempDir()
	const a = "d49d796971d0c7357b32055cca0fb365b9c77920d7f06fb0a7cc74db77f2eab7"
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"ok", a + "  terraform-provider-pgnvme_0.1.0_linux_amd64.zip\n", true},
		{"one space", a + " x.zip\n", false},
		{"short", a[:10] + "  x.zip\n", false},
		{"empty", "", false},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		sums, err := release.ReadSums(p)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.ok && sums["terraform-provider-pgnvme_0.1.0_linux_amd64.zip"] != a {
			t.Errorf("%s: %v", tc.name, sums)
		}
	}
}

func TestFilesystemMirrorConfig(t *testing.T) {
	c := release.FilesystemMirrorConfig("/m")
	for _, want := range []string{`path    = "/m"`, `include = ["registry.terraform.io/pgnvme/pgnvme"]`, `exclude = ["registry.terraform.io/pgnvme/pgnvme"]`} {
		if !strings.Contains(c, want) {
			t.Errorf("missing %s in\n%s", want, c)
		}
	}
}
