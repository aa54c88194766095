package patroni

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing or older Patroni is a failure that names the command installing it.
func TestExecutableIn(t *testing.T) {
	const cmd = "bash scripts/test-deps.sh"
	dir := t.TempDir()
	if _, err := executableIn(dir); err == nil || !strings.Contains(err.Error(), cmd) {
		t.Fatalf("empty tools directory: error %v, want one naming %q", err, cmd)
	}

	bin := filepath.Join(dir, "bin", "patroni")
	version := filepath.Join(dir, "usr", "lib", "python3", "dist-packages", "patroni", "version.py")
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(version)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(version, []byte("__version__ = '3.0.2'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := executableIn(dir); err == nil || !strings.Contains(err.Error(), cmd) || !strings.Contains(err.Error(), "3.0.2") {
		t.Fatalf("Patroni 3.0.2: error %v, want one naming the version and %q", err, cmd)
	}

	if err := os.WriteFile(version, []byte("__version__ = '4.0.7'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := executableIn(dir); err != nil || got != bin {
		t.Fatalf("Patroni 4.0.7: %q, %v; want %q", got, err, bin)
	}

	// The installed one, which every other test of this package runs.
	if _, err := executable(); err != nil {
		t.Fatal(err)
	}
}
