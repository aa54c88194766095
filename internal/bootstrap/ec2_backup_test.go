package bootstrap_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// TestEC2BackupScript runs the rendered backup.sh of both archivers with stand-ins for curl (Patroni's
// REST API), pgbackrest and wal-g, and the real backup-decide.py and systemd-analyze: a standby does
// nothing; on the primary the policy comes from Patroni's configuration, the kind of backup follows
// full_every, and retention keeps what decide.py counts, with each tool's own command line (pgBackRest
// `--type=... backup` then `expire` by count; WAL-G `backup-push [--full]` with the delta chain bounded, then
// `delete retain FULL`); a backup that is not due yet is not taken.
func TestEC2BackupScript(t *testing.T) {
	now := time.Now().UTC()
	policy := backup.Policy{Schedule: "hourly", FullEvery: 2, RecoveryWindowDays: 0, MinFullBackups: 3}
	config, _ := json.Marshal(map[string]any{"ttl": 30, "postgresql": map[string]any{"use_slots": true, backup.DynamicConfigKey: policy.DynamicConfig()}})
	type made struct {
		ago  time.Duration
		full bool
	}
	pgbackrestInfo := func(bs []made) string {
		var list []map[string]any
		for i, b := range bs {
			typ := map[bool]string{true: "full", false: "incr"}[b.full]
			start := now.Add(-b.ago).Unix()
			list = append(list, map[string]any{"label": fmt.Sprintf("L%d", i), "type": typ, "timestamp": map[string]any{"start": start, "stop": start + 60}})
		}
		out, _ := json.Marshal([]map[string]any{{"name": "demo", "backup": list}})
		return string(out)
	}
	walgList := func(bs []made) string {
		var list []map[string]any
		for i, b := range bs {
			name := fmt.Sprintf("base_00000001000000000000000%d", i+2)
			if !b.full {
				name += "_D_000000010000000000000002"
			}
			list = append(list, map[string]any{"backup_name": name, "start_time": now.Add(-b.ago).Format(time.RFC3339Nano)})
		}
		out, _ := json.Marshal(list)
		return string(out)
	}
	pgGet, walgCat := "pgbackrest repo-get pgnvme/demo/verification.json", "wal-g st cat pgnvme/verification.json"
	at := now.Format(time.RFC3339)
	// verified is a verification record of timeline 2 (backup-decide.py's verdict).
	verified := `{"tool": "x", "timeline": 2, "verified_at": "` + now.Format(time.RFC3339) + `", "ok": true, "detail": ""}`
	for _, tc := range []struct {
		name, archiver, primary string
		backups                 []made
		want                    []string
		timeline                int    // the primary's (1 without it)
		record                  string // the archive's verification record
		status                  string // a file in the primary's pg_wal/archive_status
		walVerify               string // what wal-verify prints (walgOK when "")
	}{
		{"standby", pgbackrest, "503", []made{{2 * time.Hour, true}}, nil, 1, "", "", ""},
		{"pgbackrest incr", pgbackrest, "200", []made{{2 * time.Hour, true}}, []string{pgGet,
			"pgbackrest --output=json info", "pgbackrest stanza-create",
			"pgbackrest --type=incr --repo1-retention-full=9999999 backup",
			"pgbackrest --output=json info", "pgbackrest --repo1-retention-full-type=count --repo1-retention-full=3 expire"}, 1, "", "", ""},
		{"pgbackrest full", pgbackrest, "200", []made{{3 * time.Hour, true}, {2 * time.Hour, false}}, []string{pgGet,
			"pgbackrest --output=json info", "pgbackrest stanza-create",
			"pgbackrest --type=full --repo1-retention-full=9999999 backup",
			"pgbackrest --output=json info", "pgbackrest --repo1-retention-full-type=count --repo1-retention-full=3 expire"}, 1, "", "", ""},
		{"pgbackrest not due", pgbackrest, "200", []made{{0, true}}, []string{pgGet, "pgbackrest --output=json info"}, 1, "", "", ""},
		{"walg delta", walg, "200", []made{{2 * time.Hour, true}}, []string{walgCat,
			"wal-g backup-list --detail --json", "wal-g backup-push /var/lib/pgnvme/data steps=1",
			"wal-g backup-list --detail --json", "wal-g delete retain FULL 3 --confirm"}, 1, "", "", ""},
		{"walg full", walg, "200", []made{{3 * time.Hour, true}, {2 * time.Hour, false}}, []string{walgCat,
			"wal-g backup-list --detail --json", "wal-g backup-push --full /var/lib/pgnvme/data steps=1",
			"wal-g backup-list --detail --json", "wal-g delete retain FULL 3 --confirm"}, 1, "", "", ""},
		{"walg not due", walg, "200", []made{{0, true}}, []string{walgCat, "wal-g backup-list --detail --json"}, 1, "", "", ""},
		{"pgbackrest verify", pgbackrest, "200", []made{{0, true}}, []string{pgGet, "pgbackrest verify",
			`pgbackrest repo-put pgnvme/demo/verification.json {"tool": "pgbackrest", "timeline": 2, "verified_at": "` + at + `", "ok": true, "detail": "pgbackrest verify: 1 WAL ranges checked, no error"}`,
			"pgbackrest --output=json info"}, 2, "", "000000020000000000000004.ready", ""},
		{"pgbackrest verified", pgbackrest, "200", []made{{0, true}}, []string{pgGet,
			"pgbackrest --output=json info"}, 2, verified, "", ""},
		{"pgbackrest verify waits", pgbackrest, "200", []made{{0, true}}, []string{pgGet,
			"pgbackrest --output=json info"}, 2, "", "000000010000000000000002.ready", ""},
		{"walg verify", walg, "200", []made{{0, true}}, []string{walgCat, "wal-g wal-verify integrity timeline --json",
			`wal-g st put --no-encrypt --no-compress -f --read-stdin pgnvme/verification.json {"tool": "walg", "timeline": 2, "verified_at": "` + at + `", "ok": true, "detail": "wal-g wal-verify: 0 segments on 0 timeline ranges found, timeline OK"}`,
			"wal-g backup-list --detail --json"}, 2, "", "", ""},
		// WAL-G's WARNING (the newest segments not uploaded yet) passes, naming them; its FAILURE (a hole) fails.
		{"walg verify warns", walg, "200", []made{{0, true}}, []string{walgCat, "wal-g wal-verify integrity timeline --json",
			`wal-g st put --no-encrypt --no-compress -f --read-stdin pgnvme/verification.json {"tool": "walg", "timeline": 2, "verified_at": "` + at + `", "ok": true, "detail": ` +
				`"wal-g wal-verify: 7 segments on 1 timeline ranges found, timeline OK; WARNING, not a hole: WAL segment 000000020000000000000009 is missing (MISSING_DELAYED) (the newest WAL, still on its way to the archive)"}`,
			"wal-g backup-list --detail --json"}, 2, "", "", walgDelayed},
		{"walg verify fails", walg, "200", []made{{0, true}}, []string{walgCat, "wal-g wal-verify integrity timeline --json",
			`wal-g st put --no-encrypt --no-compress -f --read-stdin pgnvme/verification.json {"tool": "walg", "timeline": 2, "verified_at": "` + at + `", "ok": false, "detail": ` +
				`"wal-g wal-verify: WAL segment 000000020000000000000005 is missing (MISSING_LOST)"}`,
			"wal-g backup-list --detail --json"}, 2, "", "", walgLost},
		{"walg verified", walg, "200", []made{{0, true}}, []string{walgCat,
			"wal-g backup-list --detail --json"}, 2, verified, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ec2Cluster(tc.archiver, 16)
			n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
			script := renderedFile(t, c, n, "/usr/local/lib/pgnvme/backup.sh")
			listing := pgbackrestInfo(tc.backups)
			if tc.archiver == walg {
				listing = walgList(tc.backups)
			}
			dir := scriptDir(t, "backup.sh", script, map[string]string{
				"curl": `case "$*" in *'/primary'*) printf '%s' "$PRIMARY_CODE" ;; *'/config'*) cat "$CONFIG" ;; *) exit 7 ;; esac` + "\n",
				"psql": `case "$*" in *' -h /var/run/postgresql -p 5432 -d postgres -c '*pg_stat_archiver*) echo "$TIMELINE $ARCHIVED" ;; *) exit 2 ;; esac` + "\n",
				// pgBackRest refuses an option given twice ("option 'x' cannot be set multiple times").
				"pgbackrest": `declare -A seen; args=(); for a in "$@"; do o=${a%%=*}; if [[ $o == --* ]]; then
  [ -n "${seen[$o]:-}" ] && { echo "ERROR: [031]: option '${o#--}' cannot be set multiple times" >&2; exit 31; }; seen[$o]=1; fi
  case $a in --config=*|--stanza=*|--log-level-console=*) ;; *) args+=("$a") ;; esac; done
case "$*" in *repo-put*) echo "pgbackrest ${args[*]} $(cat)" >>"$LOG" ;; *) echo "pgbackrest ${args[*]}" >>"$LOG" ;; esac
case "$*" in *' info') cat "$LISTING" ;; *repo-get*) [ -s "$RECORD" ] || exit 55; cat "$RECORD" ;;
*' verify') echo "P00 DETAIL: archiveId: 15-1, wal start: 000000010000000000000002, wal stop: 000000020000000000000003"
  echo "P00   INFO: verify command end: completed successfully (416ms)" ;; esac` + "\n",
				"wal-g": `if [ "$1" = st ] && [ "$2" = put ]; then echo "wal-g $* $(cat)" >>"$LOG"; else
echo "wal-g $*$([ "$1" = backup-push ] && echo " steps=$WALG_DELTA_MAX_STEPS")" >>"$LOG"; fi
case "$1 ${2:-}" in "backup-list"*) cat "$LISTING" ;; "st cat") [ -s "$RECORD" ] || exit 1; cat "$RECORD" ;;
"wal-verify"*) cat "$WAL_VERIFY" ;; esac; exit 0` + "\n",
			})
			decide := filepath.Join(dir, "backup-decide.py")
			envPath := filepath.Join(dir, "walg.env")
			if tc.walVerify == "" {
				tc.walVerify = walgOK
			}
			for p, content := range map[string]string{decide: backup.CompactDecideScript(), envPath: "WALG_S3_PREFIX=s3://b/p\n", filepath.Join(dir, "wal-verify.json"): tc.walVerify,
				filepath.Join(dir, "config.json"): string(config), filepath.Join(dir, "listing.json"): listing, filepath.Join(dir, "record.json"): tc.record} {
				if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s := strings.NewReplacer("/usr/local/lib/pgnvme/backup-decide.py", decide,
				"ENV_FILE=/etc/wal-g/walg.env\n", "ENV_FILE="+envPath+"\n",
				"WALG=/usr/local/bin/wal-g\n", "WALG="+filepath.Join(dir, "bin", "wal-g")+"\n",
				"(/usr/bin/pgbackrest ", "("+filepath.Join(dir, "bin", "pgbackrest")+" ",
				"DATA_DIR=/var/lib/pgnvme/data\n", "DATA_DIR="+filepath.Join(dir, "data")+"\n").Replace(script)
			status := filepath.Join(dir, "data", "pg_wal", "archive_status")
			if err := os.MkdirAll(status, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.status != "" {
				if err := os.WriteFile(filepath.Join(status, tc.status), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "backup.sh"), []byte(s), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/bash", filepath.Join(dir, "backup.sh"))
			cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log"), "PRIMARY_CODE=" + tc.primary,
				"CONFIG=" + filepath.Join(dir, "config.json"), "LISTING=" + filepath.Join(dir, "listing.json"), "RECORD=" + filepath.Join(dir, "record.json"), "WAL_VERIFY=" + filepath.Join(dir, "wal-verify.json"),
				"TIMELINE=" + strconv.Itoa(tc.timeline), fmt.Sprintf("ARCHIVED=%08X0000000000000009", tc.timeline), "PGNVME_NOW=" + strconv.FormatInt(now.Unix(), 10)}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("backup.sh: %v\n%s", err, out)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			got := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(log), filepath.Join(dir, "data"), "/var/lib/pgnvme/data")), "\n")
			if len(log) == 0 {
				got = nil
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("commands:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), out)
			}
		})
	}
}

// What the wal-g stand-in's wal-verify prints: both checks OK; the newest segment not uploaded yet
// (WARNING); a segment lost before the newest (FAILURE).
const (
	walgOK      = `{"integrity":{"status":"OK","details":[]},"timeline":{"status":"OK","details":{}}}`
	walgDelayed = `{"integrity":{"status":"WARNING","details":[{"timeline_id":2,"start_segment":"000000020000000000000002","end_segment":"000000020000000000000008","segments_count":7,"status":"FOUND"},` +
		`{"timeline_id":2,"start_segment":"000000020000000000000009","end_segment":"000000020000000000000009","segments_count":1,"status":"MISSING_DELAYED"}]},` +
		`"timeline":{"status":"OK","details":{"current_timeline_id":2,"highest_storage_timeline_id":2}}}`
	walgLost = `{"integrity":{"status":"FAILURE","details":[{"timeline_id":2,"start_segment":"000000020000000000000002","end_segment":"000000020000000000000004","segments_count":3,"status":"FOUND"},` +
		`{"timeline_id":2,"start_segment":"000000020000000000000005","end_segment":"000000020000000000000005","segments_count":1,"status":"MISSING_LOST"},` +
		`{"timeline_id":2,"start_segment":"000000020000000000000006","end_segment":"000000020000000000000009","segments_count":4,"status":"FOUND"}]},` +
		`"timeline":{"status":"OK","details":{"current_timeline_id":2,"highest_storage_timeline_id":2}}}`
)
