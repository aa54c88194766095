package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// cloneSource is a restore of a cluster with c's archiver from another cluster's archive ("prod") in
// another region, to a time.
func cloneSource(c bootstrap.Cluster) bootstrap.Source {
	from := archive.Spec{Bucket: "dr-archive", Prefix: "clusters/prod", Region: "us-west-2"}
	a := bootstrap.Archive{PgBackRestOptions: from.PgBackRestOptions(), Stanza: "prod"}
	backup := "20261202-052928F"
	if len(c.Archive.WALGEnv) > 0 {
		a = bootstrap.Archive{WALGEnv: from.WALGEnv()}
		backup = "base_000000010000000000000004"
	}
	return bootstrap.Source{Archive: a, Backup: backup,
		Recovery:   map[string]string{"recovery_target_time": "2026-12-02 10:30:00+00"},
		Record:     `{"from":"s3://dr-archive/clusters/prod","backup":"` + backup + `","backup_lsn_start":"0/4000028"}`,
		RecordPath: "pgnvme/demo/restored.json"}
}

// TestRenderEC2Clone: the create of a cluster from another archive bootstraps with the method
// pgnvme_restore reading that archive (its settings in a file of their own, beside the node's, readable by
// postgres), to the target, where PostgreSQL promotes; its identity is the node's usual one; the
// post-bootstrap script records what the restore reached; a source the nodes cannot use is refused.
func TestRenderEC2Clone(t *testing.T) {
	for _, archiver := range []string{pgbackrest, walg} {
		c := ec2Cluster(archiver, 16)
		c.Archive.BackupOnCreate = false
		n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		plain, err := bootstrap.RenderEC2(c, n)
		if err != nil {
			t.Fatal(err)
		}
		src := cloneSource(c)
		u, err := bootstrap.RenderEC2Clone(c, n, src)
		if err != nil {
			t.Fatalf("%s: %v", archiver, err)
		}
		if u.Identity != plain.Identity {
			t.Errorf("%s: the clone's identity differs from the node's usual one: the new cluster's nodes would be rolled", archiver)
		}
		restoreCommand := `"/usr/bin/pgbackrest --config=/etc/pgbackrest/pgnvme-source.conf --stanza=prod archive-get %f \"%p\""`
		settings, want := "/etc/pgbackrest/pgnvme-source.conf", "repo1-s3-bucket=dr-archive"
		if archiver == walg {
			restoreCommand = `"/usr/local/lib/pgnvme/walg-restore.sh %f %p /etc/wal-g/source.env"`
			settings, want = "/etc/wal-g/source.env", "WALG_S3_PREFIX=s3://dr-archive/clusters/prod\n"
		}
		bootstrapYAML := "    recovery_conf:\n      restore_command: " + restoreCommand + "\n" +
			"      recovery_target_time: \"2026-12-02 10:30:00+00\"\n      recovery_target_action: \"promote\"\n      recovery_target_timeline: \"latest\"\n"
		if !strings.Contains(u.PatroniYAML, bootstrapYAML) || !strings.Contains(u.PatroniYAML, "  post_bootstrap: \""+postBootstrapPath+"\"\n") {
			t.Errorf("%s: Patroni's bootstrap is not the clone's; want\n%s\nand post_bootstrap in\n%s", archiver, bootstrapYAML, u.PatroniYAML)
		}
		f, ok := u.File(settings)
		if !ok || !strings.Contains(f.Content, want) || f.Mode != 0o640 {
			t.Errorf("%s: the source's settings %s: %v, mode %v, want %q in it:\n%s", archiver, settings, ok, f.Mode, want, f.Content)
		}
		if install, _ := u.File("/usr/local/lib/pgnvme/install.sh"); !strings.Contains(install.Content, settings) {
			t.Errorf("%s: install.sh does not let postgres read %s", archiver, settings)
		}
		if p, ok := u.File("/etc/pgnvme/restore.json"); !ok || strings.TrimSpace(p.Content) != src.Record {
			t.Errorf("%s: the planned record is %q, want %q", archiver, p.Content, src.Record)
		}
		if pb, _ := u.File(postBootstrapPath); !strings.Contains(pb.Content, "pg_last_wal_replay_lsn()") || !strings.Contains(pb.Content, "pgnvme/demo/restored.json") {
			t.Errorf("%s: post-bootstrap.sh does not record what the restore reached:\n%s", archiver, pb.Content)
		}
		if _, ok := plain.File(settings); ok {
			t.Errorf("%s: the usual user-data has the source's settings", archiver)
		}
		if n := len(u.Gzip()); n > bootstrap.MaxUserDataBytes {
			t.Errorf("%s: gzipped clone user-data is %d bytes (limit %d)", archiver, n, bootstrap.MaxUserDataBytes)
		}
		// To the end of the source archive: no target, no action.
		end := src
		end.Recovery = nil
		if u, err := bootstrap.RenderEC2Clone(c, n, end); err != nil || strings.Contains(u.PatroniYAML, "recovery_target_action") {
			t.Errorf("%s: a restore to the end of the archive: %v, or it sets recovery_target_action", archiver, err)
		}
	}

	c := ec2Cluster(pgbackrest, 16)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	for name, mutate := range map[string]func(*bootstrap.Source){
		"another archiver":  func(s *bootstrap.Source) { *s = cloneSource(ec2Cluster(walg, 16)) },
		"a backup name":     func(s *bootstrap.Source) { s.Backup = "x; rm -rf /" },
		"no backup":         func(s *bootstrap.Source) { s.Backup = "" },
		"a setting":         func(s *bootstrap.Source) { s.Recovery = map[string]string{"restore_command": "true"} },
		"a record":          func(s *bootstrap.Source) { s.Record = "not json" },
		"a record path":     func(s *bootstrap.Source) { s.RecordPath = "../x" },
		"a source settings": func(s *bootstrap.Source) { s.Archive.PgBackRestOptions = map[string]string{"pg1-path": "/x"} },
	} {
		src := cloneSource(c)
		mutate(&src)
		if _, err := bootstrap.RenderEC2Clone(c, n, src); err == nil {
			t.Errorf("a source with %s wrong rendered", name)
		}
	}
}

// TestEC2CloneScripts runs the clone's restore.sh and post-bootstrap.sh of both archivers with stand-ins for
// the archiver and psql: restore.sh fetches the chosen backup from the source (never LATEST, never the
// cluster's own archive) and notes when it started; post-bootstrap.sh adds what psql reads to the planned
// record and puts it at the record's path in the cluster's own archive, and still exits 0 (with no record)
// when psql fails. The pgBackRest path runs for real in the EC2 simulator's test.
func TestEC2CloneScripts(t *testing.T) {
	for _, archiver := range []string{pgbackrest, walg} {
		c := ec2Cluster(archiver, 16)
		c.Archive.BackupOnCreate = false
		n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		src := cloneSource(c)
		u, err := bootstrap.RenderEC2Clone(c, n, src)
		if err != nil {
			t.Fatal(err)
		}
		restore, _ := u.File("/usr/local/lib/pgnvme/restore.sh")
		post, _ := u.File(postBootstrapPath)
		for _, psqlFails := range []bool{false, true} {
			dir := scriptDir(t, "restore.sh", "", map[string]string{
				// As pgBackRest does, an option given twice is refused.
				"pgbackrest": `seen=" "; for a in "$@"; do case $a in --*=*) n=${a%%=*}; [[ $seen != *" $n "* ]] || { echo "option $n twice" >&2; exit 31; }; seen="$seen$n ";; esac; done` + "\n" +
					`echo "pgbackrest $*" >>"$LOG"; case "$*" in *repo-put*) echo "put $(cat)" >>"$LOG" ;; esac` + "\n",
				"wal-g": `args="$*"; echo "wal-g ${args//$DATA/DATA} prefix=$WALG_S3_PREFIX" >>"$LOG"; [ "$1" != st ] || echo "put $(cat)" >>"$LOG"` + "\n",
				"psql":  `[ -z "$PSQL_FAILS" ] || exit 2; echo "{\"planned\": $(printf '%s' "$*" | grep -o 'planned={[^}]*}' | cut -c9-), \"reached_lsn\": \"0/5000100\"}"` + "\n",
			})
			data := filepath.Join(dir, "data")
			plan := filepath.Join(dir, "restore.json")
			if err := os.WriteFile(plan, []byte(src.Record+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"/etc/wal-g/source.env": "WALG_S3_PREFIX=s3://dr-archive/clusters/prod\n", "/etc/wal-g/walg.env": "WALG_S3_PREFIX=s3://pg-archive/clusters/demo\n"}
			r := []string{"WALG=/usr/local/bin/wal-g\n", "WALG=" + filepath.Join(dir, "bin", "wal-g") + "\n",
				"PGBACKREST=(/usr/bin/pgbackrest ", "PGBACKREST=(" + filepath.Join(dir, "bin", "pgbackrest") + " ",
				"DATA_DIR=/var/lib/pgnvme/data\n", "DATA_DIR=" + data + "\n",
				"/etc/pgnvme/restore.json", plan}
			for p, content := range env {
				local := filepath.Join(dir, filepath.Base(p))
				if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				r = append(r, "ENV_FILE="+p+"\n", "ENV_FILE="+local+"\n")
			}
			for name, script := range map[string]string{"restore.sh": restore.Content, "post-bootstrap.sh": post.Content} {
				s := strings.NewReplacer(r...).Replace(script)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			runEnv := []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log"), "DATA=" + data}
			if psqlFails {
				runEnv = append(runEnv, "PSQL_FAILS=1")
			}
			for _, name := range []string{"restore.sh", "post-bootstrap.sh"} {
				cmd := exec.Command(filepath.Join(dir, name), "dbname=postgres")
				cmd.Env = runEnv
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s", archiver, name, err, out)
				}
			}
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			wantFetch := "pgbackrest --config=/etc/pgbackrest/pgnvme-source.conf --stanza=prod --log-level-console=info --set=20261202-052928F --type=none restore"
			wantPut := []string{"pgbackrest --config=/etc/pgbackrest/pgbackrest.conf --stanza=demo --log-level-console=info stanza-create",
				"pgbackrest --config=/etc/pgbackrest/pgbackrest.conf --stanza=demo --log-level-console=info repo-put pgnvme/demo/restored.json"}
			if archiver == walg {
				wantFetch = "wal-g backup-fetch DATA base_000000010000000000000004 prefix=s3://dr-archive/clusters/prod"
				wantPut = []string{"wal-g st put --no-encrypt --no-compress -f --read-stdin pgnvme/demo/restored.json prefix=s3://pg-archive/clusters/demo"}
			}
			want := append([]string{wantFetch}, wantPut...)
			if psqlFails {
				want = want[:len(want)-1] // no record to put
			} else {
				want = append(want, `put {"planned": {"from":"s3://dr-archive/clusters/prod","backup":"`+src.Backup+`","backup_lsn_start":"0/4000028"}, "reached_lsn": "0/5000100"}`)
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, psql fails %v: ran\n%s\nwant\n%s", archiver, psqlFails, strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			if _, err := os.Stat(filepath.Join(data, "pgnvme-restore-started")); (err == nil) != psqlFails {
				t.Errorf("%s, psql fails %v: the start mark is left %v; want it removed once recorded", archiver, psqlFails, err == nil)
			}
		}
	}
}
