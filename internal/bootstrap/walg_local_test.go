package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// WALGRestoreScript, the node's restore_command script for the drill's scratch server, run as written
// (its own paths, no rewriting) with a stand-in wal-g: the archive's environment reaches wal-fetch, and the
// exit statuses are the node's: fetched 0, not in the archive (74) 1, any other failure 126 in a
// point-in-time recovery. shellcheck finds nothing in it.
func TestWALGRestoreScript(t *testing.T) {
	shellcheck := needTool(t, "shellcheck", "shellcheck")
	dir := scriptDir(t, "unused", "", map[string]string{
		"wal-g": `echo "wal-g $* prefix=$WALG_S3_PREFIX" >>"$LOG"; exit $STATUS` + "\n",
	})
	data, env, script := filepath.Join(dir, "data"), filepath.Join(dir, "walg.env"), filepath.Join(dir, "walg-restore.sh")
	s, err := bootstrap.WALGRestoreScript("orders", "drill", script, filepath.Join(dir, "bin", "wal-g"), data, env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "restore_command = '"+script+" %f %p'") {
		t.Errorf("the script's header does not name its own path:\n%s", s)
	}
	if err := os.WriteFile(script, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env, []byte("WALG_S3_PREFIX=s3://b/p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(shellcheck, "--shell=bash", "--severity=style", script).CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
	for _, tc := range []struct{ walg, want int }{{0, 0}, {74, 1}, {1, 126}} {
		log := filepath.Join(dir, "log")
		_ = os.Remove(log)
		cmd := exec.Command(script, "000000010000000000000003", "pg_wal/RECOVERYXLOG")
		cmd.Dir = data
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LOG=" + log, "STATUS=" + strconv.Itoa(tc.walg)}
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tc.want {
			t.Errorf("wal-fetch exit %d: restore_command exit %d, want %d\n%s", tc.walg, got, tc.want, out)
		}
		if ran, _ := os.ReadFile(log); string(ran) != "wal-g wal-fetch 000000010000000000000003 pg_wal/RECOVERYXLOG prefix=s3://b/p\n" {
			t.Errorf("wal-g ran as %q", ran)
		}
	}
}
