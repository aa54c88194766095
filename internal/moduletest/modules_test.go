// Package moduletest runs the Terraform modules' own tests and checks every example, against the provider
// built from this checkout and installed the way a user without registry access would: `terraform init
// -plugin-dir DIR`, with the build laid out as
// DIR/registry.terraform.io/pgnvme/pgnvme/<version>/<os>_<arch>/terraform-provider-pgnvme_v<version>.
// The version is the newest one in CHANGELOG.md (the release being prepared).
//
// TestModules runs `terraform test` in every module under modules/ (plan-level runs and real local
// PostgreSQL clusters); TestExamples runs `terraform validate` in every example directory; TestModulesDist
// writes the registry trees `make modules-dist` writes and validates each on its own.
package moduletest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// root is the repository's top directory.
var root string

var (
	setupOnce sync.Once
	setupErr  error
	// provider is the build every terraform command here installs (-plugin-dir and its CLI configuration).
	provider tfwork.Provider
	scratch  string
)

func TestMain(m *testing.M) {
	var err error
	if root, err = tfwork.Root(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if scratch != "" {
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

// setup builds the provider once into a plugin directory at CHANGELOG.md's version, with a CLI
// configuration of its own (tfwork.BuildPluginDir).
func setup(t *testing.T) {
	t.Helper()
	setupOnce.Do(func() {
		if scratch, setupErr = os.MkdirTemp("", "pgnvme-modules-"); setupErr != nil {
			return
		}
		provider, setupErr = tfwork.BuildPluginDir(root, scratch)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// terraformPath is the CLI the acceptance tests use (TF_ACC_TERRAFORM_PATH, else terraform on PATH).
func terraformPath(t *testing.T) string {
	t.Helper()
	p, err := tfwork.TerraformPath()
	if err != nil {
		t.Fatalf("these tests run the Terraform CLI: %v", err)
	}
	return p
}

// terraform runs the CLI in dir and returns its combined output; a failure fails the test with it.
func terraform(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := tryTerraform(t, dir, args...)
	if err != nil {
		t.Fatalf("terraform %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func tryTerraform(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, terraformPath(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), provider.Env()...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// initOffline installs the provider from the plugin directory only.
func initOffline(t *testing.T, dir string, extra ...string) {
	t.Helper()
	args := append([]string{"init", "-input=false", "-no-color"}, provider.InitArgs()...)
	terraform(t, dir, append(args, extra...)...)
}

// moduleNames are the modules under modules/ (directories with a versions.tf).
func moduleNames(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, "modules", "*", "versions.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) == 0 {
		t.Fatal("no module under modules/")
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = filepath.Base(filepath.Dir(m))
	}
	return names
}

// copyTree copies src into dst without what Terraform writes (tfwork.CopyTree).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := tfwork.CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
}

// serverDataDir is a fresh directory the postgres user can traverse (pgfixture.ServerDir), removed after
// the test; the clusters go under <dir>/c.
func serverDataDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(pgfixture.ServerDir(t, "tfmod-"), "c")
}

// removeLeftCluster destroys a local cluster a failed run left under dataDir and reports whether there
// was one.
func removeLeftCluster(t *testing.T, dataDir string) bool {
	t.Helper()
	if _, err := os.Stat(localcluster.ManifestPath(dataDir)); err != nil {
		return false
	}
	p := localcluster.NewPlatform()
	s, prior, err := p.Import(context.Background(), localcluster.ImportPrefix+dataDir)
	if err == nil {
		err = p.Delete(context.Background(), s, cluster.Prior{Members: prior})
	}
	if err != nil {
		t.Errorf("removing the cluster left under %s: %v", dataDir, err)
	}
	return true
}

var summary = regexp.MustCompile(`(?m)^(?:Success|Failure)! ([0-9]+) passed, ([0-9]+) failed(?:, ([0-9]+) skipped)?\.`)

// requireDefaultMajor fails unless the default major's binaries are on this machine: the modules' clusters
// run it (their postgres_major defaults to it).
func requireDefaultMajor(t *testing.T) {
	t.Helper()
	if _, err := localnode.BinDirForMajor(context.Background(), capacity.DefaultPostgresMajor); err != nil {
		t.Fatalf("the module tests run the default major on this machine (scripts/test-deps.sh builds it): %v", err)
	}
}

// TestModules runs every module's `terraform test` files: plan-level runs (validation, logic) and
// apply-level runs against real local PostgreSQL clusters, created under a fresh directory on free ports
// and destroyed by terraform test itself. What depends on this machine is passed on the command line:
// -var data_dir and -var port_base; postgres_major is left to the modules' default, the default major.
func TestModules(t *testing.T) {
	setup(t)
	requireDefaultMajor(t)
	for _, name := range moduleNames(t) {
		if simModules[name] {
			continue // TestAWSClusterModule
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			copyTree(t, filepath.Join(root, "modules"), work)
			dir := filepath.Join(work, name)
			dataDir := serverDataDir(t)
			t.Cleanup(func() { removeLeftCluster(t, dataDir) })
			base := acctest.FreePortBase(t, 9)

			initOffline(t, dir)
			start := time.Now()
			out, err := tryTerraform(t, dir, "test", "-no-color",
				"-var", "data_dir="+dataDir, "-var", "port_base="+strconv.Itoa(base))
			took := time.Since(start)
			if err != nil {
				t.Fatalf("terraform test in modules/%s failed after %s:\n%s", name, took.Round(time.Millisecond), out)
			}
			m := summary.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("terraform test in modules/%s printed no summary:\n%s", name, out)
			}
			if m[2] != "0" || (m[3] != "" && m[3] != "0") {
				t.Fatalf("terraform test in modules/%s: %s passed, %s failed, %s skipped:\n%s", name, m[1], m[2], m[3], out)
			}
			if removeLeftCluster(t, dataDir) {
				t.Errorf("terraform test in modules/%s left a cluster under %s", name, dataDir)
			}
			t.Logf("modules/%s: %s terraform test runs passed in %s\n%s", name, m[1], took.Round(time.Millisecond), out)
		})
	}
}

// callsModules reports whether the configuration in dir calls a module of this repository by path.
func callsModules(t *testing.T, dir string) bool {
	t.Helper()
	return anyFile(t, dir, moduleCall.Match)
}

// moduleCall is a module source that is a relative path into this repository's modules/.
var moduleCall = regexp.MustCompile(`"(\.\./)+modules/`)

// exampleDirs are the directories holding an example configuration: under examples/ (documentation
// snippets and complete examples) and modules/*/examples/, relative to the repository root.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	seen := map[string]bool{}
	for _, pattern := range []string{"examples/*/*.tf", "examples/*/*/*.tf", "modules/*/examples/*/*.tf"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(root, filepath.Dir(m))
			if err != nil {
				t.Fatal(err)
			}
			if !seen[rel] {
				seen[rel] = true
				dirs = append(dirs, rel)
			}
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no example directories found")
	}
	return dirs
}

// providerRequirement is added to documentation snippets that do not say where pgnvme comes from
// (examples/resources/..., examples/data-sources/...): without it Terraform would look for hashicorp/pgnvme.
const providerRequirement = `terraform {
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}
`

// writeOnly matches a write-only argument (password_wo = ...), which Terraform before 1.11 rejects.
var writeOnly = regexp.MustCompile(`(?m)^\s*[a-z0-9_]+_wo\s*=`)

// writeOnlySupported says whether the Terraform CLI these tests run knows write-only attributes (1.11 and
// later), and which version it is.
func writeOnlySupported(t *testing.T) (bool, string) {
	t.Helper()
	out, err := exec.Command(terraformPath(t), "version", "-json").Output()
	if err != nil {
		t.Fatalf("terraform version: %v", err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("terraform version -json: %v\n%s", err, out)
	}
	var major, minor int
	if _, err := fmt.Sscanf(v.Version, "%d.%d", &major, &minor); err != nil {
		t.Fatalf("terraform version %q: %v", v.Version, err)
	}
	return major > 1 || (major == 1 && minor >= 11), v.Version
}

// TestExamples runs `terraform validate` in every example directory against this checkout's provider. An
// example with a write-only argument needs Terraform 1.11: with an older CLI it is skipped, saying so (the
// CI matrix runs the other examples on 1.8 to 1.10, and all of them on 1.11).
func TestExamples(t *testing.T) {
	setup(t)
	wo, tfVersion := writeOnlySupported(t)
	for _, rel := range exampleDirs(t) {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			if !wo && usesWriteOnly(t, filepath.Join(root, rel)) {
				t.Skipf("%s sets a write-only argument, which needs Terraform 1.11 or later; this is Terraform %s", rel, tfVersion)
			}
			work := t.TempDir()
			var dir string
			if strings.HasPrefix(rel, "modules"+string(filepath.Separator)) || callsModules(t, filepath.Join(root, rel)) {
				// The example calls a module by a relative path: copy the modules with it, where it is.
				copyTree(t, filepath.Join(root, "modules"), filepath.Join(work, "modules"))
				dir = filepath.Join(work, rel)
				copyTree(t, filepath.Join(root, rel), dir)
			} else {
				dir = filepath.Join(work, "example")
				copyTree(t, filepath.Join(root, rel), dir)
				if !declaresRequiredProviders(t, dir) {
					if err := os.WriteFile(filepath.Join(dir, "zz_required_providers.tf"), []byte(providerRequirement), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			initOffline(t, dir, "-backend=false")
			out := terraform(t, dir, "validate", "-no-color")
			if !strings.Contains(out, "The configuration is valid.") {
				t.Fatalf("terraform validate in %s:\n%s", rel, out)
			}
		})
	}
}

func declaresRequiredProviders(t *testing.T, dir string) bool {
	t.Helper()
	return anyFile(t, dir, func(b []byte) bool { return strings.Contains(string(b), "required_providers") })
}

func usesWriteOnly(t *testing.T, dir string) bool {
	t.Helper()
	return anyFile(t, dir, writeOnly.Match)
}

// anyFile says whether match holds for one of the .tf files in dir.
func anyFile(t *testing.T, dir string, match func([]byte) bool) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if match(b) {
			return true
		}
	}
	return false
}

// TestModulesDist writes the registry trees as `make modules-dist` does (tools/moduledocs dist) and checks
// that each stands on its own: formatted, valid at its root with nothing from outside it, the provider
// requirement at the released version, the examples calling the module by its registry address.
func TestModulesDist(t *testing.T) {
	setup(t)
	out := t.TempDir()
	args := []string{"run", "./moduledocs", "dist", "-version", provider.Version, "-out", out}
	names := moduleNames(t)
	for _, name := range names {
		args = append(args, filepath.Join(root, "modules", name))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(root, "tools")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./moduledocs dist (in tools/): %v\n%s", err, b)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(out, "terraform-pgnvme-"+name)
			terraform(t, dir, "fmt", "-check", "-recursive", "-no-color")
			initOffline(t, dir, "-backend=false")
			if v := terraform(t, dir, "validate", "-no-color"); !strings.Contains(v, "The configuration is valid.") {
				t.Fatalf("terraform validate in the registry tree of %s:\n%s", name, v)
			}
			if simModules[name] {
				// On its own, the registry tree runs the tests that need no endpoint: the validations and the
				// archive check against overridden clusters (the apply-level ones need the simulator:
				// TestAWSClusterModule runs them on the module).
				v := terraform(t, dir, "test", "-no-color", "-filter=tests/validation.tftest.hcl", "-filter=tests/checks.tftest.hcl")
				if m := summary.FindStringSubmatch(v); m == nil || m[1] == "0" || m[2] != "0" ||
					!strings.Contains(v, "tests/validation.tftest.hcl... pass") || !strings.Contains(v, "tests/checks.tftest.hcl... pass") {
					t.Fatalf("terraform test in the registry tree of %s:\n%s", name, v)
				}
			}
			versions, err := os.ReadFile(filepath.Join(dir, "versions.tf"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("version = %q", ">= "+provider.Version); !strings.Contains(string(versions), want) {
				t.Errorf("versions.tf of the registry tree should require %s:\n%s", want, versions)
			}
			examples, err := filepath.Glob(filepath.Join(dir, "examples", "*", "*.tf"))
			if err != nil || len(examples) == 0 {
				t.Fatalf("the registry tree of %s has no examples (%v)", name, err)
			}
			for _, f := range examples {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("source  = %q", "pgnvme/"+name+"/pgnvme"); !strings.Contains(string(b), want) {
					t.Errorf("%s should call the module as %s:\n%s", f, want, b)
				}
				if strings.Contains(string(b), `"../`) {
					t.Errorf("%s still has a relative source:\n%s", f, b)
				}
			}
		})
	}
}
