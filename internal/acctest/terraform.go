package acctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// ProviderBinary builds this checkout's provider once per test process and returns the binary's path, for
// tests that run the Terraform CLI themselves (killing it part-way, for one).
func ProviderBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "pgnvme-provider-")
		if buildErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "terraform-provider-pgnvme"), ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build of the provider: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "terraform-provider-pgnvme")
}

// TerraformCLIConfig writes a CLI configuration that installs bin for pgnvme/pgnvme through dev_overrides
// (no registry), and returns its path for TF_CLI_CONFIG_FILE.
func TerraformCLIConfig(t testing.TB, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "terraformrc")
	conf := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"pgnvme/pgnvme\" = %q\n  }\n  direct {}\n}\n", filepath.Dir(bin))
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
