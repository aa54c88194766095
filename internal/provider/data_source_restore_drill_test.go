package provider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

// pgnvme_restore_drill through Terraform: a cluster's archive (rows committed and archived, the cluster
// then deleted) is restored into a scratch node; the drill reports the backup, the position and time
// reached, a passing verification and check query, and leaves nothing in its work directory. With a WAL
// segment deleted from the middle of the archive, the drill's verification fails and names that segment.
// Bad inputs are refused: a target the archive cannot reach, a pgBackRest archive without its stanza.
func TestAccRestoreDrillDataSource(t *testing.T) {
	dir := clusterDir(t)
	repo := repoBeside(t, dir)
	work := filepath.Join(filepath.Dir(dir), "drill")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	base := acctest.FreePortBase(t, 1)
	s := cluster.FromInput(cluster.Input{Name: "tf-acc-drilled", NodeCount: new(1), Parameters: map[string]string{"archive_timeout": "2s"},
		Archive: &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "posix", "repo1-path": repo}},
		Blocks:  []cluster.BlockInput{&localspec.Block{DataDir: dir, PortBase: base}}})
	p := localcluster.NewPlatform()
	ctx := context.Background()
	st, err := p.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	psqlAt(t, base, "CREATE TABLE drill_rows AS SELECT generate_series(1, 20) AS id")
	psqlAt(t, base, "CREATE TABLE drill_pad (n int)")
	// Segments after the backup, each archived, so that one can go missing from the middle.
	var last string
	for range 5 {
		psqlAt(t, base, "INSERT INTO drill_pad VALUES (1)") // WAL to switch out
		last = psqlAt(t, base, "SELECT pg_walfile_name(pg_switch_wal() - 1)")
	}
	waitFor(t, time.Minute, "segment "+last+" archived", func() bool {
		return psqlAt(t, base, "SELECT coalesce(last_archived_wal, '') >= '"+last+"' FROM pg_stat_archiver") == "t"
	})
	if err := p.Delete(ctx, s, cluster.Prior{Members: st.Members}); err != nil {
		t.Fatal(err)
	}

	config := func(extra string) string {
		return fmt.Sprintf(`
data "pgnvme_restore_drill" "nightly" {
  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = %q
    }
    stanza = "tf-acc-drilled"
  }
  check_sql = "SELECT count(*) = 20 FROM drill_rows"
  work_dir  = %q
%s
}
`, repo, work, extra)
	}
	const ds = "data.pgnvme_restore_drill.nightly"
	empty := func() {
		t.Helper()
		if left, err := os.ReadDir(work); err != nil || len(left) > 0 {
			t.Errorf("the drill left %v in its work directory (%v)", left, err)
		}
	}
	// One apply per drill (acctest.Workdir): terraform-plugin-testing's step would read the data source,
	// and so run the drill, three times.
	w := acctest.NewWorkdir(t)
	at := applyValues(t, w, config(""), ds)
	at.wantMatch(t, "restored_backup", `^\d{8}-\d{6}F$`)
	at.wantBool(t, "verification_ok", true)
	at.wantBool(t, "check_ok", true)
	at.wantString(t, "archive_last_wal", last)
	at.wantMatch(t, "reached_lsn", `^[0-9A-F]+/[0-9A-F]+$`)
	if v := at.number("restore_seconds"); v <= 0 {
		t.Errorf("restore_seconds %v", v)
	}
	t.Logf("the drill restored in %.2f s; verification: %s", at.number("restore_seconds"), at.str("verification_detail"))
	empty()

	segs, err := filepath.Glob(filepath.Join(repo, "archive", "tf-acc-drilled", "*", "*", "0000000*"))
	if err != nil {
		t.Fatal(err)
	}
	var wal []string
	for _, f := range segs {
		if !strings.Contains(f, ".backup") && !strings.Contains(f, ".history") {
			wal = append(wal, f)
		}
	}
	sort.Strings(wal)
	if len(wal) < 5 {
		t.Fatalf("the archive holds %v", wal)
	}
	victim := wal[len(wal)-2] // the newest but one: the WAL after it is still in the archive
	t.Logf("deleting %s from the archive", filepath.Base(victim))
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	at = applyValues(t, w, config(""), ds)
	at.wantBool(t, "verification_ok", false)
	at.wantMatch(t, "verification_detail", `WAL segment [0-9A-F]{24} is missing`)
	empty()

	applyError(t, w, config(`  target { time = "2099-01-01T00:00:00Z" }`), `Restore Target Not In The Archive`)
	applyError(t, w, `
data "pgnvme_restore_drill" "nostanza" {
  archive {
    pgbackrest_options = { "repo1-type" = "posix", "repo1-path" = "/var/lib/pgbackrest" }
  }
}
`, `(?s)Missing Stanza.*set archive.stanza`)
}

// A misspelt or unknown argument in the drill's archive or target is an error at validate that names it.
// They are pgnvme_cluster's restore.archive and restore.target, as blocks: Terraform drops an unknown key of
// a nested attribute's object before the provider sees it (hashicorp/terraform#33570), so
// `target = { tme = "..." }` drilled to the end of the archive. The archive is still required.
func TestRestoreDrillDataSource_unknownArgumentInBlock(t *testing.T) {
	drill := func(body string) string {
		return "data \"pgnvme_restore_drill\" \"x\" {\n" + body + "\n}\n"
	}
	const archive = "  archive {\n    pgbackrest_options = { \"repo1-type\" = \"posix\", \"repo1-path\" = \"/var/lib/pgbackrest\" }\n    stanza             = \"orders\"\n  }\n"
	notExpected := func(name string) string {
		return `(?s)Unsupported argument.*An argument named "` + name + `" is not expected here`
	}
	runBadInputs(t, []badInput{
		{"archive", drill("  archive {\n    pgbackrest_option = { \"repo1-type\" = \"posix\" }\n  }"), notExpected("pgbackrest_option")},
		{"target", drill(archive + "  target {\n    tme = \"2026-12-02T10:30:00Z\"\n  }"), notExpected("tme")},
		{"target as an attribute", drill(archive + "  target = { time = \"2026-12-02T10:30:00Z\" }"),
			`(?s)Unsupported argument.*An argument named "target" is not expected here.*block of type "target"`},
		{"no archive", drill("  backup = \"latest\""), `(?s)Missing Required Block.*The block "archive" is required`},
		// The restore block's rules, from the same model: at plan, before any restore.
		{"two targets", drill(archive + "  target {\n    time = \"2026-12-02T10:30:00Z\"\n    lsn  = \"0/3000060\"\n  }"), `(?s)Conflicting Restore Targets.*time and lsn`},
		{"no stanza", drill("  archive {\n    pgbackrest_options = { \"repo1-type\" = \"posix\" }\n  }"), `(?s)Missing Stanza.*set archive.stanza`},
		{"the restore block's two targets", "resource \"pgnvme_cluster\" \"c\" {\n  name = \"tf-acc-typo\"\n  local {\n    data_dir = \"/nonexistent/tf-acc-typo\"\n  }\n  archive {\n    pgbackrest_options = { \"repo1-type\" = \"posix\", \"repo1-path\" = \"/nonexistent/repo\" }\n  }\n  restore {\n" +
			strings.ReplaceAll(archive, "\n  ", "\n    ") + "    target {\n      time = \"2026-12-02T10:30:00Z\"\n      lsn  = \"0/3000060\"\n    }\n  }\n}\n", `(?s)Conflicting Restore Targets.*time and lsn`},
	})
}
