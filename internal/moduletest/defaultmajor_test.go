package moduletest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// postgresMajorSetting finds what a .tf file gives postgres_major as a number: an argument
// (`postgres_major = 18`) or a variable's default (`variable "postgres_major" { ... default = 18`).
var (
	postgresMajorArgument = regexp.MustCompile(`(?m)^\s*postgres_major\s*=\s*([0-9]+)\b`)
	postgresMajorVariable = regexp.MustCompile(`(?s)variable\s+"postgres_major"\s*\{[^}]*?\bdefault\s*=\s*([0-9]+)`)
)

// The provider, the modules and the examples share one default major: every number an example or a module
// gives postgres_major (an argument, or a variable's default) is capacity.DefaultPostgresMajor. The tests,
// make demo and make bench run that major, so an example that named another would show what is not tested.
func TestDefaultMajorEverywhere(t *testing.T) {
	want := strconv.Itoa(capacity.DefaultPostgresMajor)
	seen := 0
	for _, top := range []string{"examples", "modules"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".terraform" {
				return filepath.SkipDir
			}
			if d.IsDir() || filepath.Ext(p) != ".tf" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			for _, re := range []*regexp.Regexp{postgresMajorArgument, postgresMajorVariable} {
				for _, m := range re.FindAllStringSubmatch(string(b), -1) {
					seen++
					if m[1] != want {
						t.Errorf("%s gives postgres_major %s; the default major is %s (capacity.DefaultPostgresMajor): use it, or leave postgres_major unset", rel, m[1], want)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 5 {
		t.Fatalf("found %d postgres_major settings in examples/ and modules/; the patterns no longer match the files", seen)
	}
	t.Logf("%d postgres_major settings in examples/ and modules/, each %s", seen, want)
}
