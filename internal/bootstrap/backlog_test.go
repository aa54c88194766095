package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// The backlog guard, run by sh as PostgreSQL runs archive_command (in the data directory, %p and %f
// replaced) with a stub archiver: below the bound it runs the archiver; above it, it drops the segment
// (exits 0 without running the archiver) and says so on standard error. Both archivers get the same guard.
func TestRender_backlogGuard(t *testing.T) {
	dataDir := t.TempDir()
	wal := filepath.Join(dataDir, "pg_wal")
	if err := os.Mkdir(wal, 0o755); err != nil {
		t.Fatal(err)
	}
	stub := filepath.Join(t.TempDir(), "archiver")
	calls := filepath.Join(t.TempDir(), "calls")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const seg = "000000010000000000000003"
	for _, tool := range []string{"pgbackrest", "wal-g"} {
		c := cluster3()
		c.Parameters = map[string]string{"max_wal_size": "1MB", "wal_keep_size": "0"}
		c.Archive = &bootstrap.Archive{MaxBacklogMiB: 4, BackupOnCreate: true}
		if tool == "pgbackrest" {
			c.Archive.PgBackRestOptions = map[string]string{"repo1-path": "/r"}
		} else {
			c.Archive.WALGEnv = map[string]string{"WALG_S3_PREFIX": "s3://b/p"}
		}
		n := localNode("pg-a", bootstrap.RolePrimary, 15432)
		n.ArchiverPath, n.PgBackRestConfigPath, n.WALGEnvPath = stub, "/dev/null", "/dev/null"
		r, err := bootstrap.Render(c, n)
		if err != nil {
			t.Fatal(err)
		}
		cmd := strings.NewReplacer("%p", "pg_wal/"+seg, "%f", seg).Replace(r.Parameters["archive_command"])
		run := func() string {
			t.Helper()
			_ = os.Remove(calls)
			sh := exec.Command("sh", "-c", cmd)
			sh.Dir = dataDir
			out, err := sh.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: archive_command failed: %v\n%s\n%s", tool, err, cmd, out)
			}
			return string(out)
		}
		if err := os.WriteFile(filepath.Join(wal, seg), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := run(); out != "" {
			t.Errorf("%s below the bound: %q", tool, out)
		}
		if b, err := os.ReadFile(calls); err != nil || !strings.Contains(string(b), seg) {
			t.Errorf("%s below the bound: the archiver was not run with the segment (%q, %v)", tool, b, err)
		}
		if err := os.WriteFile(filepath.Join(wal, "more"), make([]byte, 6<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		out := run()
		if !strings.Contains(out, "pgnvme: pg_wal holds ") || !strings.Contains(out, seg+" is dropped, not archived") {
			t.Errorf("%s above the bound: %q", tool, out)
		}
		if _, err := os.Stat(calls); err == nil {
			t.Errorf("%s above the bound: the archiver ran", tool)
		}
		_ = os.Remove(filepath.Join(wal, "more"))
	}
}

func TestMinBacklogMiB(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   int
	}{
		{map[string]string{}, 2 * (1024 + 256)},
		{map[string]string{"max_wal_size": "4GB", "wal_keep_size": "1GB"}, 2 * (4096 + 1024)},
		{map[string]string{"max_wal_size": "64", "wal_keep_size": "0"}, 128},
	} {
		if got := bootstrap.MinBacklogMiB(tc.params); got != tc.want {
			t.Errorf("MinBacklogMiB(%v) = %d, want %d", tc.params, got, tc.want)
		}
	}
	c := cluster3()
	c.Archive = &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/r"}, MaxBacklogMiB: 1000}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "below 2560 MiB") {
		t.Errorf("a bound below twice max_wal_size plus wal_keep_size: %v", err)
	}
	for _, p := range c.Problems() {
		if strings.Contains(p.Err.Error(), "backlog") && strings.Join(p.Path, ".") != "archive.max_backlog_gib" {
			t.Errorf("reported at %v", p.Path)
		}
	}
}

// On EC2 the guarded archive_command reaches Patroni intact: the user-data's Patroni YAML, read by the
// YAML library Patroni reads it with (Debian's python3-yaml, /usr/bin/python3), holds exactly the command
// Render makes, in postgresql.parameters.
func TestRenderEC2_backlogGuard(t *testing.T) {
	for _, archiver := range []string{"pgbackrest", "wal-g"} {
		c := ec2Cluster(walg, 16)
		if archiver == "pgbackrest" {
			c.Archive.WALGEnv, c.Archive.PgBackRestOptions = nil, map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "b", "repo1-path": "/p"}
		}
		c.Archive.MaxBacklogMiB = 8192
		u, err := bootstrap.RenderEC2(c, ec2Host(c, "pg-a", 2, bootstrap.ArchX86_64))
		if err != nil {
			t.Fatal(err)
		}
		py := exec.Command("/usr/bin/python3", "-c", "import sys, yaml; print(yaml.safe_load(sys.stdin)['postgresql']['parameters']['archive_command'], end='')")
		py.Stdin = strings.NewReader(u.PatroniYAML)
		out, err := py.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: reading Patroni's YAML with python3-yaml (scripts/test-deps.sh installs it): %v\n%s", archiver, err, out)
		}
		if got := string(out); !strings.HasPrefix(got, `w=$(du -sm pg_wal | cut -f1); [ "$w" -le 8192 ] ||`) || !strings.Contains(got, "%f is dropped, not archived") ||
			!strings.Contains(got, archiver+" ") {
			t.Errorf("%s: archive_command in Patroni's YAML: %q", archiver, got)
		}
	}
}
