package acctest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// ProviderBinary builds this checkout's provider once per test process and returns the binary's path, for
// tests that run the Terraform CLI themselves (killing it part-way, for one): tfwork.BuildDevOverrides.
func ProviderBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		var root, dir string
		if root, buildErr = tfwork.Root(); buildErr != nil {
			return
		}
		if dir, buildErr = os.MkdirTemp("", "pgnvme-provider-"); buildErr != nil {
			return
		}
		buildDir = dir
		var p tfwork.Provider
		p, buildErr = tfwork.BuildDevOverrides(root, dir)
		buildBin = p.Bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// RemoveProviderBinary removes what ProviderBinary built (about 100 MB), for a package's TestMain to call
// once its tests have run; nothing when nothing was built.
func RemoveProviderBinary() error {
	if buildDir == "" {
		return nil
	}
	return os.RemoveAll(buildDir)
}

// TerraformCLIConfig writes a CLI configuration that installs bin for pgnvme/pgnvme through dev_overrides
// (no registry; tfwork.DevOverridesConfig), and returns its path for TF_CLI_CONFIG_FILE.
func TerraformCLIConfig(t testing.TB, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "terraformrc")
	if err := os.WriteFile(path, []byte(tfwork.DevOverridesConfig(bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
