package patroni

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ToolsDir is where scripts/test-deps.sh puts Patroni 4: Debian 13's patroni package extracted, with the
// wrappers bin/patroni and bin/patronictl that run it with Debian 12's python3. It lies outside the
// repository so that the postgres user can read it wherever the checkout is, and every checkout shares it.
const ToolsDir = "/opt/pgnvme-tools/patroni4"

// installHint is the command that installs every part the fixture needs.
const installHint = "run `sudo bash scripts/test-deps.sh` (as root: `bash scripts/test-deps.sh`) from the repository root"

// Executable is the Patroni 4 program the fixture runs (ToolsDir's wrapper). A missing or older Patroni fails
// the test with the command that installs it.
func Executable(t testing.TB) string {
	t.Helper()
	p, err := executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func executable() (string, error) { return executableIn(ToolsDir) }

// executableIn is the Patroni 4 wrapper in tools, a directory laid out as ToolsDir.
func executableIn(tools string) (string, error) {
	p := filepath.Join(tools, "bin", "patroni")
	if !isExecutable(p) {
		return "", fmt.Errorf("patroni 4 is not installed (no %s): %s; it extracts Debian 13's patroni package into %s", p, installHint, tools)
	}
	versionFile := filepath.Join(tools, "usr", "lib", "python3", "dist-packages", "patroni", "version.py")
	b, err := os.ReadFile(versionFile)
	if err != nil {
		return "", fmt.Errorf("patroni in %s has no version file (%w): remove %s and %s", tools, err, tools, installHint)
	}
	if !strings.Contains(string(b), "__version__ = '4.") {
		return "", fmt.Errorf("%s is not Patroni 4 (%s): remove %s and %s", tools, strings.TrimSpace(string(b)), tools, installHint)
	}
	return p, nil
}

// etcdExecutable is Debian's etcd 3.4 (package etcd-server).
func etcdExecutable() (string, error) {
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd is not installed (%w): %s; it installs Debian 12's etcd-server package (etcd 3.4)", err, installHint)
	}
	return p, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
