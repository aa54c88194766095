package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// TestRenderEC2Restore: the launch of a lost cluster bootstraps it from the archive with the bootstrap
// method pgnvme_restore (the node's own restore_command, the latest timeline) and is otherwise the node's
// usual user-data: its Identity is RenderEC2's, so the restored nodes are current (no roll after a restore),
// it fits EC2's limit, and the usual rendering has neither the method nor the script.
func TestRenderEC2Restore(t *testing.T) {
	largest, which := 0, ""
	defer func() {
		t.Logf("the largest gzipped restore user-data: %d of %d bytes (%s)", largest, bootstrap.MaxUserDataBytes, which)
	}()
	for _, combo := range ec2Matrix() {
		plain, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		u, err := bootstrap.RenderEC2Restore(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		if u.Identity != plain.Identity {
			t.Errorf("%s: the restore's identity differs from the node's usual one: the restored nodes would be rolled", combo.name)
		}
		n := len(u.Gzip())
		if n > bootstrap.MaxUserDataBytes {
			t.Errorf("%s: gzipped restore user-data is %d bytes (limit %d)", combo.name, n, bootstrap.MaxUserDataBytes)
		}
		if n > largest {
			largest, which = n, combo.name
		}
		restoreCommand := `restore_command: "/usr/bin/pgbackrest --config=/etc/pgbackrest/pgbackrest.conf --stanza=demo archive-get %f \"%p\""`
		if strings.Contains(combo.name, "walg") {
			restoreCommand = `restore_command: "/usr/local/lib/pgnvme/walg-restore.sh %f %p"`
		}
		want := "  method: \"pgnvme_restore\"\n  pgnvme_restore:\n    command: \"/usr/local/lib/pgnvme/restore.sh\"\n    no_params: true\n" +
			"    recovery_conf:\n      " + restoreCommand + "\n      recovery_target_timeline: \"latest\"\n"
		if !strings.Contains(u.PatroniYAML, want) {
			t.Errorf("%s: Patroni's bootstrap section is not the restore's; want\n%s\nin\n%s", combo.name, want, u.PatroniYAML)
		}
		if _, ok := u.File("/usr/local/lib/pgnvme/restore.sh"); !ok {
			t.Errorf("%s: restore.sh is not written", combo.name)
		}
		if _, ok := plain.File("/usr/local/lib/pgnvme/restore.sh"); ok || strings.Contains(plain.PatroniYAML, "pgnvme_restore") {
			t.Errorf("%s: the usual user-data has the restore's bootstrap method", combo.name)
		}
	}
	c := ec2Cluster(pgbackrest, 16)
	c.Archive = nil
	if _, err := bootstrap.RenderEC2Restore(c, ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)); err == nil {
		t.Error("a cluster without an archive rendered a restore")
	}
}

// TestEC2RestoreScript runs the rendered bootstrap script of both archivers with a stand-in for the
// archiver: into an empty data directory it fetches the newest backup (pgBackRest: restore --type=none, so
// Patroni writes the recovery settings; WAL-G: backup-fetch LATEST) and leaves the directory 0700; an
// archiver's failure fails the bootstrap; a data directory that is not empty is refused without running it.
func TestEC2RestoreScript(t *testing.T) {
	for _, archiver := range []string{pgbackrest, walg} {
		c := ec2Cluster(archiver, 16)
		n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		u, err := bootstrap.RenderEC2Restore(c, n)
		if err != nil {
			t.Fatal(err)
		}
		f, ok := u.File("/usr/local/lib/pgnvme/restore.sh")
		if !ok {
			t.Fatal("restore.sh is not rendered")
		}
		wantRun := "pgbackrest --config=/etc/pgbackrest/pgbackrest.conf --stanza=demo --log-level-console=info --type=none restore"
		if archiver == walg {
			wantRun = "wal-g backup-fetch DATA LATEST prefix=s3://b/p"
		}
		for _, tc := range []struct {
			name     string
			status   int
			leftover bool
			failed   bool // Patroni's copy of an earlier failed attempt is there
			want     int
			ran      bool
		}{
			{"restored", 0, false, false, 0, true},
			{"restored after a failed attempt", 0, false, true, 0, true},
			{"the archiver fails", 3, false, false, 3, true},
			{"a data directory not empty", 0, true, true, 1, false},
		} {
			// The stand-ins keep what the script notes in the cluster's own archive in $NOTES (by base name,
			// the prefix it was put under first), and log anything else.
			dir := scriptDir(t, "restore.sh", "", map[string]string{
				"pgbackrest": `if [ "${*: -2:1}" = repo-put ]; then k=${*: -1}; echo "$k $*" >"$NOTES/${k##*/}.args"; cat >"$NOTES/${k##*/}"; exit 0; fi` + "\n" +
					`echo "pgbackrest $*" >>"$LOG"; exit $STATUS` + "\n",
				"wal-g": `if [ "$1" = st ]; then k=${*: -1}; echo "$k prefix=$WALG_S3_PREFIX" >"$NOTES/${k##*/}.args"; cat >"$NOTES/${k##*/}"; exit 0; fi` + "\n" +
					`echo "wal-g $1 ${2/$DATA/DATA} $3 prefix=$WALG_S3_PREFIX" >>"$LOG"; exit $STATUS` + "\n",
			})
			notes := filepath.Join(dir, "notes")
			if err := os.MkdirAll(notes, 0o755); err != nil {
				t.Fatal(err)
			}
			data, envPath := filepath.Join(dir, "data"), filepath.Join(dir, "walg.env")
			if tc.leftover {
				if err := os.MkdirAll(data, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("16\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.failed {
				if err := os.MkdirAll(filepath.Join(data+".failed", "base"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(envPath, []byte("WALG_S3_PREFIX=s3://b/p\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := strings.NewReplacer("ENV_FILE=/etc/wal-g/walg.env\n", "ENV_FILE="+envPath+"\n", "OWN_ENV=/etc/wal-g/walg.env\n", "OWN_ENV="+envPath+"\n",
				"OWN=(/usr/bin/pgbackrest ", "OWN=("+filepath.Join(dir, "bin", "pgbackrest")+" ",
				"WALG=/usr/local/bin/wal-g\n", "WALG="+filepath.Join(dir, "bin", "wal-g")+"\n",
				"PGBACKREST=(/usr/bin/pgbackrest ", "PGBACKREST=("+filepath.Join(dir, "bin", "pgbackrest")+" ",
				"DATA_DIR=/var/lib/pgnvme/data\n", "DATA_DIR="+data+"\n").Replace(f.Content)
			if err := os.WriteFile(filepath.Join(dir, "restore.sh"), []byte(s), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(dir, "restore.sh"))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log"), "STATUS=" + strconv.Itoa(tc.status), "DATA=" + data, "NOTES=" + notes}
			out, _ := cmd.CombinedOutput()
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("%s, %s: exit %d, want %d\n%s", archiver, tc.name, got, tc.want, out)
			}
			// Every attempt is noted in the cluster's own archive (its attempts' path, the node's name and the
			// time); the archiver's failure beside it, with its errors.
			wantNotes := map[string]string{"": "started"}
			if tc.status != 0 {
				wantNotes[".failed"] = "exited 3: "
			}
			entries, _ := os.ReadDir(notes)
			var names []string
			for _, e := range entries {
				if !strings.HasSuffix(e.Name(), ".args") {
					names = append(names, e.Name())
				}
			}
			if len(names) != len(wantNotes) {
				t.Errorf("%s, %s: notes %v, want %d", archiver, tc.name, names, len(wantNotes))
			}
			attemptsPath := "pgnvme/demo/restore-attempts/"
			if archiver == walg {
				attemptsPath = "pgnvme/restore-attempts/"
			}
			for _, name := range names {
				base, suffix, _ := strings.Cut(name, ".")
				if suffix != "" {
					suffix = "." + suffix
				}
				text, _ := os.ReadFile(filepath.Join(notes, name))
				args, _ := os.ReadFile(filepath.Join(notes, name+".args"))
				if !regexp.MustCompile(`^pg-a-[0-9]{19}$`).MatchString(base) || !strings.Contains(string(text), wantNotes[suffix]) ||
					!strings.HasPrefix(string(args), attemptsPath+name+" ") {
					t.Errorf("%s, %s: note %s says %q, put as %q; want %q under %s", archiver, tc.name, name, text, args, wantNotes[suffix], attemptsPath)
				}
			}
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			if got := strings.TrimSpace(string(log)); (got == wantRun) != tc.ran || (!tc.ran && got != "") {
				t.Errorf("%s, %s: the archiver ran as %q; want %q (run: %v)", archiver, tc.name, got, wantRun, tc.ran)
			}
			if _, err := os.Stat(data + ".failed"); tc.failed && tc.ran == (err == nil) {
				t.Errorf("%s, %s: the earlier failed attempt's copy is there: %v; want it removed before the restore, and only then", archiver, tc.name, err == nil)
			}
			if st, err := os.Stat(data); tc.want == 0 && (err != nil || st.Mode().Perm() != 0o700) {
				t.Errorf("%s, %s: the data directory is %v (%v), want mode 0700", archiver, tc.name, st, err)
			}
		}
	}
}

// TestRenderEC2Form: every launch that forms a new cluster (the create's, the restore of every member lost,
// a clone) starts etcd after asking the other members for FormingEtcdJoinWaitSeconds, not the usual minute
// (every node of a forming is launched at once, and none has an etcd to answer), with the identity of the
// usual user-data; the usual user-data, which replacements get, keeps the minute for the running members.
func TestRenderEC2Form(t *testing.T) {
	wait := func(name string, u bootstrap.UserData) string {
		t.Helper()
		f, ok := u.File("/usr/local/lib/pgnvme/etcd.sh")
		if !ok {
			t.Fatalf("%s: etcd.sh is not written", name)
		}
		for _, l := range strings.Split(f.Content, "\n") {
			if v, ok := strings.CutPrefix(l, "JOIN_WAIT_SECONDS="); ok {
				return v
			}
		}
		t.Fatalf("%s: etcd.sh sets no JOIN_WAIT_SECONDS", name)
		return ""
	}
	c := ec2Cluster(pgbackrest, 16)
	n := ec2Host(c, c.Nodes[0], 1, bootstrap.ArchX86_64)
	plain, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	form, err := bootstrap.RenderEC2Form(c, n)
	if err != nil {
		t.Fatal(err)
	}
	restore, err := bootstrap.RenderEC2Restore(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if got := wait("usual", plain); got != strconv.Itoa(bootstrap.DefaultEtcdJoinWaitSeconds) {
		t.Errorf("the usual user-data waits %s s for the other members, want %d", got, bootstrap.DefaultEtcdJoinWaitSeconds)
	}
	for name, u := range map[string]bootstrap.UserData{"form": form, "restore": restore} {
		if got := wait(name, u); got != strconv.Itoa(bootstrap.FormingEtcdJoinWaitSeconds) {
			t.Errorf("%s: etcd waits %s s for the other members, want %d", name, got, bootstrap.FormingEtcdJoinWaitSeconds)
		}
		if u.Identity != plain.Identity {
			t.Errorf("%s: its identity differs from the usual one: the formed nodes would be rolled", name)
		}
	}
	if form.PatroniYAML != plain.PatroniYAML {
		t.Error("the create's forming changes Patroni's configuration; only etcd's wait differs")
	}
}
