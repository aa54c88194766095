package provider_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// The restore block through Terraform: a source cluster commits a row and archives it; a new cluster with
// a restore block from the source's stanza is planned and created from it, holds the row, and reports what
// the restore did in restored. A target the archive cannot reach is refused at plan; a changed restore
// block on the existing cluster is refused at plan (it acts at create only); removing the block changes
// nothing and keeps restored.
func TestAccCluster_restore(t *testing.T) {
	dir := clusterDir(t)
	repo := repoBeside(t, dir)
	srcDir := filepath.Join(filepath.Dir(dir), "src")
	srcBase, base := acctest.FreePortBase(t, 1), acctest.FreePortBase(t, 3)
	source := fmt.Sprintf(`
resource "pgnvme_cluster" "source" {
  name       = "tf-acc-src"
  node_count = 1
  parameters = { archive_timeout = "2s" }
  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = %q
    }
  }
  local {
    data_dir  = %q
    port_base = %d
  }
}
`, repo, srcDir, srcBase)
	clone := func(restore string) string {
		return source + clusterConfig(dir, base, fmt.Sprintf(`  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = %q
    }
  }
%s`, repo, restore))
	}
	restoreBlock := func(target string) string {
		return fmt.Sprintf(`  restore {
    archive {
      pgbackrest_options = {
        "repo1-type" = "posix"
        "repo1-path" = %q
      }
      stanza = "tf-acc-src"
    }
%s  }`, repo, target)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{
			{Config: source},
			{
				PreConfig: func() {
					psqlAt(t, srcBase, "CREATE TABLE restored_row AS SELECT 42 AS answer")
					seg := psqlAt(t, srcBase, "SELECT pg_walfile_name(pg_switch_wal() - 1)")
					waitFor(t, time.Minute, "segment "+seg+" archived", func() bool {
						return psqlAt(t, srcBase, "SELECT coalesce(last_archived_wal, '') >= '"+seg+"' FROM pg_stat_archiver") == "t"
					})
				},
				Config:      clone(restoreBlock("    target {\n      time = \"2099-01-01T00:00:00Z\"\n    }\n")),
				ExpectError: regexp.MustCompile(`(?s)Restore Target Not In The Archive.*after\s+the\s+newest\s+WAL\s+segment`),
			},
			{
				Config: clone(restoreBlock("")),
				Check: func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT answer FROM restored_row"); got != "42" {
						return fmt.Errorf("the restored cluster's row: %q, want 42", got)
					}
					return nil
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("restored"), knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"backup":      knownvalue.StringRegexp(regexp.MustCompile(`^\d{8}-\d{6}F$`)),
						"target":      knownvalue.StringExact("the end of the archive"),
						"timeline":    knownvalue.Int64Exact(2),
						"reached_lsn": knownvalue.StringRegexp(regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`)),
					})),
					statecheck.ExpectKnownValue("pgnvme_cluster.source", tfjsonpath.New("restored"), knownvalue.Null()),
				},
			},
			{
				Config:      clone(restoreBlock("    target {\n      immediate = true\n    }\n")),
				ExpectError: regexp.MustCompile(`Restore Applies At Create Only`),
			},
			{
				Config: clone(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("restored").AtMapKey("timeline"), knownvalue.Int64Exact(2)),
				},
			},
		},
	})
}
