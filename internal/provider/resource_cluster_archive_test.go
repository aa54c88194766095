package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

// archive_status through the Terraform CLI: after create the archive is healthy with the backup taken at
// create; with the archive down (archive_command fails) and segments switched out, a later plan warns
// "Archive Behind" with the age and a check block on archive_status.archiving_ok fails; with the archive
// back, both clear.
func TestAccCluster_archiveHealth(t *testing.T) {
	dir := clusterDir(t)
	repo := repoBeside(t, dir)
	base := acctest.FreePortBase(t, 3)
	work := t.TempDir()
	config := "terraform {\n  required_providers {\n    pgnvme = { source = \"pgnvme/pgnvme\" }\n  }\n}\n" + clusterConfig(dir, base, fmt.Sprintf(`  parameters = { archive_timeout = "5s" }
  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = %q
    }
  }`, repo)) + `
check "archive" {
  assert {
    condition     = pgnvme_cluster.demo.archive_status.archiving_ok
    error_message = "WAL is not reaching the archive."
  }
}

output "archive_status" {
  value = pgnvme_cluster.demo.archive_status
}
`
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = localcluster.NewPlatform().Delete(context.Background(), localSpec(dir, base), cluster.Prior{})
	})
	cliConfig := acctest.TerraformCLIConfig(t, acctest.ProviderBinary(t))
	tf := func(args ...string) (string, error) {
		bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
		if bin == "" {
			bin = "terraform"
		}
		if args[0] != "output" {
			args = append(args, "-input=false")
		}
		cmd := exec.Command(bin, append(args, "-no-color")...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := tf("apply", "-auto-approve"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	out, err := tf("output", "-json", "archive_status")
	var st struct {
		LastArchivedWAL string `json:"last_archived_wal"`
		ArchivingOK     *bool  `json:"archiving_ok"`
		Unarchived      *int   `json:"unarchived_segments"`
		BackupCount     int    `json:"backup_count"`
		LastBackupType  string `json:"last_backup_type"`
		RecoverableFrom string `json:"recoverable_from"`
		FailedCount     *int   `json:"failed_count"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("output archive_status: %v\n%s", err, out)
	}
	if st.ArchivingOK == nil || !*st.ArchivingOK || st.Unarchived == nil || *st.Unarchived != 0 || st.BackupCount != 1 || st.LastBackupType != "full" ||
		st.LastArchivedWAL == "" || st.RecoverableFrom == "" || st.FailedCount == nil || *st.FailedCount != 0 {
		t.Fatalf("archive_status after create: %s", out)
	}

	// The archive goes down; segments switch out that it cannot take.
	psqlAt(t, base, "ALTER SYSTEM SET archive_command = '/bin/false'")
	psqlAt(t, base, "SELECT pg_reload_conf()")
	for range 3 {
		psqlAt(t, base, "CREATE TABLE IF NOT EXISTS health (x int); INSERT INTO health VALUES (1)")
		psqlAt(t, base, "SELECT pg_switch_wal()")
	}
	var plan string
	waitFor(t, 90*time.Second, "a plan to warn that the archive is behind", func() bool {
		plan, _ = tf("plan")
		return strings.Contains(plan, "Archive Behind")
	})
	for _, want := range []string{"complete WAL segments of the primary", "arrived", "ago", "Check block assertion failed", "WAL is not reaching the archive."} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan with the archive down should say %q:\n%s", want, plan)
		}
	}
	t.Logf("archive down, the plan warns:\n%s", plan)

	// The archive is back: the next plans clear.
	psqlAt(t, base, "ALTER SYSTEM RESET archive_command")
	psqlAt(t, base, "SELECT pg_reload_conf()")
	waitFor(t, 60*time.Second, "a plan without the warning, the failed check or any action", func() bool {
		plan, _ = tf("plan")
		noActions := strings.Contains(plan, "No changes") || strings.Contains(plan, "without changing any real infrastructure")
		return noActions && !strings.Contains(plan, "Archive Behind") && !strings.Contains(plan, "assertion failed")
	})
	if out, err := tf("destroy", "-auto-approve"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
}
