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
		last = psqlAt(t, base, "SELECT pg_walfile_name(pg_switch_wal())")
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
  archive = {
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

	applyError(t, w, config(`  target = { time = "2099-01-01T00:00:00Z" }`), `Restore Target Not In The Archive`)
	applyError(t, w, `
data "pgnvme_restore_drill" "nostanza" {
  archive = {
    pgbackrest_options = { "repo1-type" = "posix", "repo1-path" = "/var/lib/pgbackrest" }
  }
}
`, `(?s)Missing Stanza.*set archive.stanza`)
}
