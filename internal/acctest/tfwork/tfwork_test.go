package tfwork_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
)

func TestChangelogVersion(t *testing.T) {
	for _, tc := range []struct {
		name, changelog, want string
	}{
		{"unreleased", "# Changelog\n\n## 0.3.0 (Unreleased)\n\n## 0.2.1 (May 1, 2025)\n", "0.3.0"},
		{"released", "## 1.10.2 (June 2, 2025)\n", "1.10.2"},
		{"none", "# Changelog\n\n## Unreleased\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "CHANGELOG.md"), []byte(tc.changelog), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tfwork.ChangelogVersion(root)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ChangelogVersion = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ChangelogVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	for _, f := range []string{"main.tf", "tests/a.tftest.hcl", ".terraform/modules/m.json", ".terraform.lock.hcl",
		"terraform.tfstate", "terraform.tfstate.backup", "examples/x/main.tf", "examples/x/.terraform/p"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := tfwork.CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if b, err := os.ReadFile(p); err != nil || string(b) != rel {
			t.Errorf("%s: %q, %v", rel, b, err)
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"examples/x/main.tf", "main.tf", "tests/a.tftest.hcl"}; !slices.Equal(got, want) {
		t.Errorf("copied %v, want %v", got, want)
	}
}
