// Package tfwork prepares Terraform working directories against this checkout's provider, for the tests,
// the benchmarks and the demos alike: the provider's build and the CLI configuration that installs it
// without a registry (dev_overrides, or a -plugin-dir at the version CHANGELOG.md names), the environment
// every terraform command runs with, and copies of configuration trees without what Terraform wrote there.
//
// It imports the standard library only and takes no *testing.T, so commands (cmd/ec2demo, bench) use it
// as the tests do (acctest.ProviderBinary and acctest.TerraformCLIConfig wrap it for tests). The tools
// module (tools/go.mod) cannot import it without requiring the main module; its registry-tree writer keeps
// its own copy of CopyTree's rules (tools/moduledocs/dist.go, copyModule).
package tfwork

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// BinaryName is the provider binary's name under dev_overrides.
const BinaryName = "terraform-provider-pgnvme"

// Root is this checkout's top directory (where go.mod is): found from this source file's path, else the
// working directory when it holds go.mod (a binary built with -trimpath).
func Root() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		if root := filepath.Join(filepath.Dir(file), "..", "..", ".."); fileExists(filepath.Join(root, "go.mod")) {
			return filepath.Abs(root)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if fileExists(filepath.Join(wd, "go.mod")) {
		return wd, nil
	}
	return "", errors.New("the repository's root was not found: run from it (where go.mod is)")
}

var changelogHeading = regexp.MustCompile(`(?m)^## ([0-9]+\.[0-9]+\.[0-9]+)\b`)

// ChangelogVersion is the newest version heading in root's CHANGELOG.md ("## 0.1.0 (Unreleased)" gives
// 0.1.0): the release being prepared, the version the modules require.
func ChangelogVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return "", err
	}
	m := changelogHeading.FindSubmatch(b)
	if m == nil {
		return "", errors.New("CHANGELOG.md has no \"## X.Y.Z\" heading to take the provider's version from")
	}
	return string(m[1]), nil
}

// Provider is a build of the provider and the CLI configuration that installs it.
type Provider struct {
	// Bin is the provider binary.
	Bin string
	// Version is the version the binary reports and, with a plugin directory, is installed as; "" for a
	// dev_overrides build.
	Version string
	// PluginDir is the directory for `terraform init -plugin-dir`; "" for a dev_overrides build.
	PluginDir string
	// CLIConfig is the CLI configuration file, for TF_CLI_CONFIG_FILE.
	CLIConfig string
}

// BuildDevOverrides builds root's provider as dir/terraform-provider-pgnvme and writes dir/terraformrc,
// which installs it for pgnvme/pgnvme through dev_overrides: plan and apply use it without init (terraform
// init does not apply dev_overrides; use BuildPluginDir where a configuration calls modules).
func BuildDevOverrides(root, dir string) (Provider, error) {
	p := Provider{Bin: filepath.Join(dir, BinaryName), CLIConfig: filepath.Join(dir, "terraformrc")}
	if err := build(root, p.Bin, ""); err != nil {
		return Provider{}, err
	}
	return p, os.WriteFile(p.CLIConfig, []byte(DevOverridesConfig(p.Bin)), 0o600)
}

// BuildPluginDir builds root's provider at the version of its CHANGELOG.md into a plugin directory under
// dir, laid out as `terraform init -plugin-dir` finds it
// (plugins/registry.terraform.io/pgnvme/pgnvme/<version>/<os>_<arch>/terraform-provider-pgnvme_v<version>),
// the way a user without registry access installs it, and writes dir/terraformrc, a CLI configuration of
// its own (the machine's TF_CLI_CONFIG_FILE may name a file that does not exist).
func BuildPluginDir(root, dir string) (Provider, error) {
	version, err := ChangelogVersion(root)
	if err != nil {
		return Provider{}, err
	}
	plugins := filepath.Join(dir, "plugins")
	p := Provider{
		Bin: filepath.Join(plugins, "registry.terraform.io", "pgnvme", "pgnvme", version, runtime.GOOS+"_"+runtime.GOARCH,
			BinaryName+"_v"+version),
		Version:   version,
		PluginDir: plugins,
		CLIConfig: filepath.Join(dir, "terraformrc"),
	}
	if err := build(root, p.Bin, version); err != nil {
		return Provider{}, err
	}
	return p, os.WriteFile(p.CLIConfig, []byte("disable_checkpoint = true\n"), 0o600)
}

// build runs go build of root's provider into bin, with main.version set when version is not "".
func build(root, bin, version string) error {
	args := []string{"build"}
	if version != "" {
		args = append(args, "-ldflags", "-X main.version="+version)
	}
	cmd := exec.Command("go", append(args, "-o", bin, ".")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the provider: %w\n%s", err, out)
	}
	return nil
}

// DevOverridesConfig is a CLI configuration that installs the provider binary bin for pgnvme/pgnvme
// through dev_overrides (no registry) and everything else as usual.
func DevOverridesConfig(bin string) string {
	return fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"pgnvme/pgnvme\" = %q\n  }\n  direct {}\n}\n", filepath.Dir(bin))
}

// Env is the environment every terraform command runs with on top of the caller's: the provider's build.
func (p Provider) Env() []string { return CLIEnv(p.CLIConfig) }

// InitArgs are the arguments of `terraform init` that install the build: -plugin-dir, or none under
// dev_overrides.
func (p Provider) InitArgs() []string {
	if p.PluginDir == "" {
		return nil
	}
	return []string{"-plugin-dir", p.PluginDir}
}

// CLIEnv is the environment that runs terraform with the CLI configuration file cliConfig, as in
// automation (no prompts' prose, no checkpoint calls).
func CLIEnv(cliConfig string) []string {
	return []string{"TF_CLI_CONFIG_FILE=" + cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"}
}

// CopyTree copies the directory src into dst (made as needed), leaving out what Terraform writes into a
// configuration (.terraform, .terraform.lock.hcl, terraform.tfstate*). Files are written 0644.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && name == ".terraform" {
			return filepath.SkipDir
		}
		if name == ".terraform.lock.hcl" || strings.HasPrefix(name, "terraform.tfstate") {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TerraformPath is the Terraform CLI the tests run: TF_ACC_TERRAFORM_PATH, else terraform on PATH.
func TerraformPath() (string, error) {
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("put terraform on PATH or set TF_ACC_TERRAFORM_PATH: %w", err)
	}
	return p, nil
}
