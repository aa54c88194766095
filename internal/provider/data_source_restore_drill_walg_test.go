package provider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// pgnvme_restore_drill of a WAL-G archive through Terraform, on moto with the WAL-G stand-in
// (acctest.WALGStandIn: WAL-G cannot be installed here) and a real PostgreSQL: the archive is read from S3
// as the EC2 platform reads a restore's source, the drill chooses the backup before the target, fetches
// it with `wal-g backup-fetch`, recovers with the nodes' restore_command script (wal-fetch) to the target
// and promotes; it reports exactly the rows committed before the target, the verification of `wal-g
// wal-verify` and leaves nothing in its work directory. With a WAL segment deleted from the middle of the
// archive, the verification fails naming it (the drill's own continuity check and wal-verify's). Without
// wal-g on PATH the drill says what to install.
func TestAccRestoreDrillDataSource_walg(t *testing.T) {
	moto := acctest.StartMoto(t)
	bin := acctest.WALGStandIn(t)
	a := acctest.StartWALGPrimary(t, moto, bin, "tf-acc-walg-drill", "orders")
	p := a.Primary
	p.Psql(t, "postgres", "CREATE TABLE drill_rows AS SELECT generate_series(1, 20) AS id")
	first := a.BackupPush(t)
	p.Psql(t, "postgres", "INSERT INTO drill_rows SELECT generate_series(21, 30)")
	time.Sleep(1100 * time.Millisecond) // the target is a later second than the first backup's sentinel
	second := a.BackupPush(t)
	p.Psql(t, "postgres", "INSERT INTO drill_rows SELECT generate_series(31, 40)")
	target := p.Psql(t, "postgres", `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
	p.Psql(t, "postgres", "INSERT INTO drill_rows SELECT generate_series(41, 50)")
	// The segments after the target arrive in a later second than it: S3 gives an object's arrival in whole
	// seconds, and the drill refuses a target after the newest arrival (a segment archived in the target's
	// own second reads as earlier than the target).
	time.Sleep(1100 * time.Millisecond)
	var last string
	for range 4 { // segments after the backups, each archived, so that one can go missing from the middle
		p.Psql(t, "postgres", "INSERT INTO drill_rows SELECT 0 WHERE false; SELECT txid_current()")
		last = p.SwitchWALAndWaitArchived(t, time.Minute)
	}
	t.Logf("backups %s and %s; target %s; newest segment %s", first, second, target, last)

	work := filepath.Join(p.Dir(), "drill")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env := ""
	for _, k := range []string{"WALG_S3_PREFIX", "AWS_ENDPOINT", "AWS_S3_FORCE_PATH_STYLE", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		env += fmt.Sprintf("      %s = %q\n", k, a.Env[k])
	}
	config := func(extra string) string {
		return fmt.Sprintf(`
data "pgnvme_restore_drill" "walg" {
  archive {
    walg_env = {
%s    }
  }
  work_dir = %q
%s
}
`, env, work, extra)
	}
	const ds = "data.pgnvme_restore_drill.walg"
	empty := func() {
		t.Helper()
		if left, err := os.ReadDir(work); err != nil || len(left) > 0 {
			t.Errorf("the drill left %v in its work directory (%v)", left, err)
		}
	}
	keys := a.Keys(t, "")
	before := strings.Join(keys, "\n")
	// One apply per drill (acctest.Workdir): terraform-plugin-testing's step would read the data source,
	// and so run the drill, three times.
	w := acctest.NewWorkdir(t)

	// To the end of the archive: the newest backup, every row, every segment verified.
	at := applyValues(t, w, config(`  check_sql = "SELECT count(*) = 50 FROM drill_rows"`), ds)
	at.wantString(t, "restored_backup", second)
	at.wantBool(t, "verification_ok", true)
	at.wantMatch(t, "verification_detail", `^wal-g wal-verify: \d+ segments .*timeline OK; WAL continuous up to `+last+`$`)
	at.wantBool(t, "check_ok", true)
	at.wantString(t, "archive_last_wal", last)
	if v := at.number("restored_bytes"); v < 1<<20 {
		t.Errorf("restored_bytes %v", v)
	}
	t.Logf("to the end: %v s, reached %s, %s", at.number("restore_seconds"), at.str("reached_lsn"), at.str("verification_detail"))
	empty()

	// To a time between the backups' end and the later rows: the newest backup before it, exactly the rows
	// committed before it.
	at = applyValues(t, w, config(fmt.Sprintf("  target { time = %q }\n  check_sql = \"SELECT count(*) = 40 AND max(id) = 40 FROM drill_rows\"", target)), ds)
	at.wantString(t, "restored_backup", second)
	at.wantBool(t, "check_ok", true)
	at.wantBool(t, "verification_ok", true)
	empty()

	// backup = the first: its rows plus the WAL after it, to the same target.
	at = applyValues(t, w, config(fmt.Sprintf("  backup = %q\n  target { time = %q }\n  check_sql = \"SELECT count(*) = 40 FROM drill_rows\"", first, target)), ds)
	at.wantString(t, "restored_backup", first)
	at.wantBool(t, "check_ok", true)
	if after := strings.Join(a.Keys(t, ""), "\n"); after != before {
		t.Errorf("the drills changed the archive:\nbefore\n%s\nafter\n%s", before, after)
	}
	empty()

	// A segment deleted from the middle of the archive.
	var wal []string
	for _, k := range a.Keys(t, "wal_005/") {
		if seg, ok := archive.SegmentOf(archive.ToolWALG, k); ok && seg > second[5:] {
			wal = append(wal, k)
		}
	}
	if len(wal) < 4 {
		t.Fatalf("the archive holds %v after the backup", wal)
	}
	victim := wal[len(wal)-2] // the newest but one: the WAL after it is still in the archive
	t.Logf("deleting %s from the archive", victim)
	a.Delete(t, victim)
	at = applyValues(t, w, config(""), ds)
	at.wantBool(t, "verification_ok", false)
	at.wantMatch(t, "verification_detail",
		`(?s)wal-g wal-verify: WAL segment [0-9A-F]{24} is missing \(MISSING_LOST\).*WAL segment [0-9A-F]{24} is missing: no restore can replay past it`)
	empty()

	applyError(t, w, config(`  target { time = "2099-01-01T00:00:00Z" }`), `Restore Target Not In The Archive`)
	t.Setenv("PATH", strings.TrimPrefix(os.Getenv("PATH"), bin+string(os.PathListSeparator)))
	applyError(t, w, config(""), `(?s)WAL-G is not installed.*install the\s+release the nodes run, v\d+\.\d+\.\d+`)
}
