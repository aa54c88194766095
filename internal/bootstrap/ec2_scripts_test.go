package bootstrap_test

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// renderedFile renders node name of c and returns the file at path p.
func renderedFile(t *testing.T, c bootstrap.Cluster, n bootstrap.EC2Node, p string) string {
	t.Helper()
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := u.File(p)
	if !ok {
		t.Fatalf("%s is not rendered", p)
	}
	return f.Content
}

// scriptDir writes script (as name) and stand-ins (name -> shell body)
// into a temporary directory and returns it.
func scriptDir(t *testing.T, name, script string, stubs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for stub, body := range stubs {
		if err := os.WriteFile(filepath.Join(dir, "bin", stub), []byte("#!/bin/bash\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// envFile reads a KEY=VALUE file as systemd's EnvironmentFile= does for
// unquoted values (comments and blank lines skipped).
func envFile(t *testing.T, content string) []string {
	t.Helper()
	var env []string
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "=") {
			t.Fatalf("environment line %q has no '='", l)
		}
		env = append(env, l)
	}
	return env
}

// TestEC2EtcdScript runs the rendered etcd start script of pg-a with
// stand-ins for etcdctl (answering member list from a file, recording
// member remove and member add) and etcd (printing how it was started),
// through every case of a member with an empty data directory.
func TestEC2EtcdScript(t *testing.T) {
	c := ec2Cluster(walg, 16)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	n.Etcd.JoinWaitSeconds = 1
	script := renderedFile(t, c, n, "/usr/local/lib/pgnvme/etcd.sh")
	env := envFile(t, renderedFile(t, c, n, "/etc/pgnvme/etcd.env"))

	const (
		self     = "http://10.0.1.10:2380"
		initial  = "pg-a=http://10.0.1.10:2380,pg-b=http://10.0.2.10:2380,pg-c=http://10.0.3.10:2380"
		startedB = "1111, started, pg-b, http://10.0.2.10:2380, http://10.0.2.10:2379, false"
		startedC = "2222, started, pg-c, http://10.0.3.10:2380, http://10.0.3.10:2379, false"
	)
	bootID := ""
	for _, l := range strings.Split(script, "\n") {
		if v, ok := strings.CutPrefix(l, "BOOTSTRAP_ID="); ok {
			bootID = v
		}
	}
	// etcd's member ID for a member of a new cluster: the first 8 bytes of
	// SHA-1(peer URLs + token), in hex (membership.computeMemberID; the same
	// computation gives 2c48cf6623a8449f for http://127.77.0.1:23800 and
	// token pgnvme-demo, the ID etcd 3.4.23 reported for that member).
	sum := sha1.Sum([]byte(self + "pgnvme-demo"))
	if want := strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 16); bootID != want {
		t.Fatalf("BOOTSTRAP_ID=%q in the script, want etcd's %q", bootID, want)
	}
	stubs := map[string]string{
		"etcdctl": `echo "etcdctl $*" >>"$LOG"
case "$*" in
  *"member list"*) [ -f "$LIST" ] || { echo "context deadline exceeded" >&2; exit 1; }; cat "$LIST" ;;
  *"member remove"*) echo "Member removed" ;;
  *"member add"*)
    printf 'Member 9999 added to cluster 7777\n\nETCD_NAME="pg-a"\nETCD_INITIAL_CLUSTER="pg-b=http://10.0.2.10:2380,pg-c=http://10.0.3.10:2380,pg-a=http://10.0.1.10:2380"\nETCD_INITIAL_ADVERTISE_PEER_URLS="http://10.0.1.10:2380"\nETCD_INITIAL_CLUSTER_STATE="existing"\n' ;;
esac
`,
		"etcd": `echo "etcd started: state=$ETCD_INITIAL_CLUSTER_STATE cluster=$ETCD_INITIAL_CLUSTER name=$ETCD_NAME"` + "\n",
	}

	for _, tc := range []struct {
		name     string
		memberOK bool // the data directory holds a member
		list     []string
		want     string
		calls    []string // etcdctl calls, in order, beyond member list
		fail     string
	}{
		{name: "data directory kept", memberOK: true, want: "state=new cluster=" + initial},
		{name: "first start, nobody answers", want: "state=new cluster=" + initial},
		// etcdctl 3.4 names the members of a first start, run or not: only
		// the client URLs tell.
		{name: "first start under way", list: []string{
			bootID + ", started, pg-a, " + self + ", , false", startedB, "3333, started, pg-c, http://10.0.3.10:2380, , false",
		}, want: "state=new cluster=" + initial},
		{name: "added, never started", list: []string{
			"abcd, unstarted, , " + self + ", , false", startedB, startedC,
		}, want: "state=existing cluster=pg-a=http://10.0.1.10:2380,pg-b=http://10.0.2.10:2380,pg-c=http://10.0.3.10:2380"},
		{name: "replaced node", list: []string{
			"abcd, started, pg-a, " + self + ", http://10.0.1.10:2379, false", startedB, startedC,
		}, want: "state=existing cluster=pg-b=http://10.0.2.10:2380,pg-c=http://10.0.3.10:2380,pg-a=http://10.0.1.10:2380",
			calls: []string{"member remove abcd", "member add pg-a --peer-urls=" + self}},
		{name: "removed already", list: []string{startedB, startedC},
			want:  "state=existing cluster=pg-b=http://10.0.2.10:2380,pg-c=http://10.0.3.10:2380,pg-a=http://10.0.1.10:2380",
			calls: []string{"member add pg-a --peer-urls=" + self}},
		{name: "never a fourth member", list: []string{
			startedB, startedC, "4444, started, pg-x, http://10.0.9.9:2380, http://10.0.9.9:2379, false",
		}, fail: "refusing to add one more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := scriptDir(t, "etcd.sh", script, stubs)
			data := filepath.Join(dir, "data")
			if tc.memberOK {
				if err := os.MkdirAll(filepath.Join(data, "member"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			list := filepath.Join(dir, "list")
			if tc.list != nil {
				if err := os.WriteFile(list, []byte(strings.Join(tc.list, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			log := filepath.Join(dir, "etcdctl.log")
			// The script's data directory is rendered; point it at the test's.
			s := strings.Replace(script, "DATA_DIR=/var/lib/etcd/pgnvme\n", "DATA_DIR="+data+"\n", 1)
			if err := os.WriteFile(filepath.Join(dir, "etcd.sh"), []byte(s), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/bash", filepath.Join(dir, "etcd.sh"))
			cmd.Env = append(slices.Clip(env), "PATH="+filepath.Join(dir, "bin")+":/usr/bin:/bin", "LIST="+list, "LOG="+log)
			out, err := cmd.CombinedOutput()
			if tc.fail != "" {
				if err == nil || !strings.Contains(string(out), tc.fail) {
					t.Fatalf("want a failure with %q: %v\n%s", tc.fail, err, out)
				}
				return
			}
			if err != nil || !strings.Contains(string(out), "etcd started: "+tc.want+" name=pg-a\n") {
				t.Fatalf("want etcd started with %s: %v\n%s", tc.want, err, out)
			}
			recorded, _ := os.ReadFile(log)
			var calls []string
			for _, l := range strings.Split(strings.TrimSpace(string(recorded)), "\n") {
				if l == "" || strings.Contains(l, "member list") {
					continue
				}
				_, call, _ := strings.Cut(l, "--command-timeout=5s ")
				calls = append(calls, call)
			}
			if strings.Join(calls, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("etcdctl calls %q, want %q", calls, tc.calls)
			}
			if tc.memberOK && len(recorded) > 0 {
				t.Errorf("etcdctl was asked although the data directory holds the member:\n%s", recorded)
			}
		})
	}
}

// TestEC2SecretsScript runs the rendered secrets script with a stand-in
// aws CLI: the passwords, with every character a systemd environment file
// treats specially, reach the file exactly; a String parameter (not
// SecureString) is refused; the file is private.
func TestEC2SecretsScript(t *testing.T) {
	c := ec2Cluster(walg, 16)
	script := renderedFile(t, c, ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64), "/usr/local/lib/pgnvme/secrets.sh")
	password := `p@ss "w" $HOME \n ` + "`id`" + ` 'q' %s # x	tab`
	stub := `echo "$*" >>"$LOG"
name=
while [ $# -gt 0 ]; do [ "$1" = --name ] && name=$2; shift; done
case $name in
  */superuser-password) printf '%s\t%s\n' "$TYPE" "$PASSWORD" ;;
  */replication-password) printf 'SecureString\trepl\n' ;;
  */restapi-password) printf 'SecureString\trest\n' ;;
  *) echo "ParameterNotFound" >&2; exit 254 ;;
esac
`
	run := func(typ string) (string, string, error) {
		dir := scriptDir(t, "secrets.sh", script, map[string]string{"aws": stub})
		out := filepath.Join(dir, "run", "patroni.env")
		cmd := exec.Command("/bin/bash", filepath.Join(dir, "secrets.sh"), out)
		cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "LOG=" + filepath.Join(dir, "aws.log"),
			"TYPE=" + typ, "PASSWORD=" + password}
		o, err := cmd.CombinedOutput()
		return out, string(o), err
	}

	out, log, err := run("SecureString")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if strings.Contains(log, "p@ss") {
		t.Errorf("the script printed a password:\n%s", log)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", out, fi, err)
	}
	// Read it back as systemd does: double quotes, with \" \\ \$ \` escapes.
	content, _ := os.ReadFile(out)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(content)), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		if !strings.HasPrefix(v, `"`) || !strings.HasSuffix(v, `"`) {
			t.Fatalf("%s is not double-quoted: %q", k, v)
		}
		var b strings.Builder
		inner := v[1 : len(v)-1]
		for i := 0; i < len(inner); i++ {
			if inner[i] == '\\' && i+1 < len(inner) && strings.IndexByte("\"\\`$", inner[i+1]) >= 0 {
				i++
			} else if inner[i] == '"' {
				t.Fatalf("%s has an unescaped double quote: %q", k, v)
			}
			b.WriteByte(inner[i])
		}
		got[k] = b.String()
	}
	for k, want := range map[string]string{
		"PATRONI_SUPERUSER_USERNAME": "postgres", "PATRONI_SUPERUSER_PASSWORD": password,
		"PATRONI_REPLICATION_USERNAME": "replicator", "PATRONI_REPLICATION_PASSWORD": "repl",
		"PATRONI_RESTAPI_USERNAME": "patroni", "PATRONI_RESTAPI_PASSWORD": "rest",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}

	if _, log, err := run("String"); err == nil || !strings.Contains(log, "is a String parameter; store the password as a SecureString") {
		t.Errorf("a String parameter was taken: %v\n%s", err, log)
	}
}

// TestEC2WALGRestoreScript runs the rendered restore_command wrapper with
// a stand-in wal-g: fetched is 0; wal-fetch's 74 (not in the archive) is
// 1; any other failure is 1 on a standby and 126 (recovery stops) in
// archive recovery without standby.signal; the environment file is read.
func TestEC2WALGRestoreScript(t *testing.T) {
	c := ec2Cluster(walg, 16)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	script := renderedFile(t, c, n, "/usr/local/lib/pgnvme/walg-restore.sh")
	for _, tc := range []struct {
		walgStatus int
		standby    bool
		want       int
		// source gives the environment file as the third argument (a restore from another archive).
		source bool
	}{
		{0, true, 0, false}, {0, false, 0, false},
		{74, true, 1, false}, {74, false, 1, false},
		{1, true, 1, false}, {1, false, 126, false},
		{2, false, 126, false},
		{0, false, 0, true}, {74, false, 1, true}, {1, false, 126, true},
	} {
		dir := scriptDir(t, "restore.sh", script, map[string]string{
			"wal-g": `echo "wal-g $* prefix=$WALG_S3_PREFIX" >>"$LOG"; exit $STATUS` + "\n",
		})
		data := filepath.Join(dir, "data")
		envPath := filepath.Join(dir, "walg.env")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if tc.standby {
			if err := os.WriteFile(filepath.Join(data, "standby.signal"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(envPath, []byte("WALG_S3_PREFIX=s3://b/p\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		sourceEnv := filepath.Join(dir, "source.env")
		if err := os.WriteFile(sourceEnv, []byte("WALG_S3_PREFIX=s3://other/q\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer("ENV_FILE=${3:-/etc/wal-g/walg.env}\n", "ENV_FILE=${3:-"+envPath+"}\n",
			"WALG=/usr/local/bin/wal-g\n", "WALG="+filepath.Join(dir, "bin", "wal-g")+"\n",
			"DATA_DIR=/var/lib/pgnvme/data\n", "DATA_DIR="+data+"\n").Replace(script)
		if err := os.WriteFile(filepath.Join(dir, "restore.sh"), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		args, prefix := " 000000010000000000000003 pg_wal/RECOVERYXLOG", "s3://b/p"
		if tc.source {
			args, prefix = args+" "+sourceEnv, "s3://other/q"
		}
		cmd := exec.Command("/bin/sh", "-c", filepath.Join(dir, "restore.sh")+args)
		cmd.Dir = data
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log"), "STATUS=" + strconv.Itoa(tc.walgStatus)}
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tc.want {
			t.Errorf("wal-fetch exit %d, standby %v, source %v: restore_command exit %d, want %d\n%s", tc.walgStatus, tc.standby, tc.source, got, tc.want, out)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		if string(log) != "wal-g wal-fetch 000000010000000000000003 pg_wal/RECOVERYXLOG prefix="+prefix+"\n" {
			t.Errorf("wal-g ran as %q", log)
		}
	}
}

// TestEC2PrePromoteScript runs the rendered pre_promote script of both archivers on a real pg_wal and
// pg_wal/archive_status, with a psql that answers HandOverQuery as a standby would: every complete segment
// marked done is marked ready, and so is every segment before the first incomplete one that has no status;
// nothing else changes, the rule is bootstrap.SegmentsToHandOver's (the local platform's), and it exits 0
// when PostgreSQL does not answer or there is nothing to rename.
func TestEC2PrePromoteScript(t *testing.T) {
	for _, archiver := range []string{walg, pgbackrest} {
		c := ec2Cluster(archiver, 16)
		n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		script := renderedFile(t, c, n, "/usr/local/lib/pgnvme/pre-promote.sh")
		u, err := bootstrap.RenderEC2(c, n)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(u.PatroniYAML, `pre_promote: "/usr/local/lib/pgnvme/pre-promote.sh"`) {
			t.Fatalf("%s: Patroni does not run the script before a promotion:\n%s", archiver, u.PatroniYAML)
		}
		if !strings.Contains(script, bootstrap.HandOverQuery[:40]) {
			t.Fatalf("%s: the script does not ask HandOverQuery:\n%s", archiver, script)
		}
		dir := t.TempDir()
		wal := filepath.Join(dir, "data", "pg_wal")
		status := filepath.Join(wal, "archive_status")
		bin := filepath.Join(dir, "bin")
		for _, d := range []string{status, bin} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		// psql answers what the test puts in $FIRST_INCOMPLETE, or fails as with the server down.
		psql := "#!/bin/bash\n[ -n \"$FIRST_INCOMPLETE\" ] || { echo 'psql: error: connection to server on socket failed' >&2; exit 2; }\necho \"$FIRST_INCOMPLETE\"\n"
		if err := os.WriteFile(filepath.Join(bin, "psql"), []byte(psql), 0o755); err != nil {
			t.Fatal(err)
		}
		files := []string{
			"000000010000000000000003.done", "000000010000000000000004.done", "000000010000000000000005.ready",
			"00000002.history.done", "000000010000000000000006.partial.done", "000000020000000000000006.done", "junk.done",
		}
		// Segments 3 to 6 with their status, 7 complete without one (the walreceiver had not started 8), 8
		// being written, 9 recycled, and names that are not complete segments.
		walFiles := []string{
			"000000010000000000000003", "000000010000000000000004", "000000010000000000000005",
			"000000010000000000000006.partial", "00000002.history", "000000020000000000000006",
			"000000020000000000000007", "000000020000000000000008", "000000020000000000000009",
			"00000002000000000000000a", "RECOVERYXLOG",
		}
		const firstIncomplete = "0000000000000008"
		s := strings.Replace(script, "WAL_DIR=/var/lib/pgnvme/data/pg_wal\n", "WAL_DIR="+wal+"\n", 1)
		if s == script {
			t.Fatalf("%s: the script does not set WAL_DIR as expected:\n%s", archiver, script)
		}
		if err := os.WriteFile(filepath.Join(dir, "pre-promote.sh"), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		run := func(first string) string {
			t.Helper()
			for _, f := range walFiles {
				if err := os.WriteFile(filepath.Join(wal, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(status); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(status, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(status, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(dir, "pre-promote.sh"))
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FIRST_INCOMPLETE=" + first}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: the script failed (a failure stops Patroni's promotion): %v\n%s", archiver, err, out)
			}
			return string(out)
		}
		check := func(first string, wantHanded int) {
			t.Helper()
			out := run(first)
			entries, err := os.ReadDir(status)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			handed := bootstrap.SegmentsToHandOver(files, walFiles, first)
			var want []string
			for _, f := range files {
				if seg, ok := strings.CutSuffix(f, ".done"); ok && slices.Contains(handed, seg) {
					f = seg + ".ready"
				}
				want = append(want, f)
			}
			for _, seg := range handed {
				if !slices.Contains(files, seg+".done") {
					want = append(want, seg+".ready")
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s, first incomplete %q: archive_status after the script: %v, want %v", archiver, first, got, want)
			}
			if len(handed) != wantHanded || !strings.Contains(out, fmt.Sprintf("handed %d WAL segments", wantHanded)) {
				t.Errorf("%s, first incomplete %q: handed %v; the script said %q", archiver, first, handed, out)
			}
		}
		check(firstIncomplete, 4)
		// PostgreSQL does not answer: the segments marked done still go.
		check("", 3)
		// Nothing to rename (no status directory) still exits 0.
		if err := os.RemoveAll(status); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(dir, "pre-promote.sh"))
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FIRST_INCOMPLETE=" + firstIncomplete}
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "handed 0 WAL segments") {
			t.Errorf("%s: without a status directory: %v %q", archiver, err, out)
		}
	}
}
