package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

const postBootstrapPath = "/usr/local/lib/pgnvme/post-bootstrap.sh"

// TestRenderEC2_postBootstrap checks when Patroni's post_bootstrap is
// rendered and what it runs: pgBackRest always creates its stanza and takes
// the first full backup with BackupOnCreate; WAL-G needs a script only for
// the backup.
func TestRenderEC2_postBootstrap(t *testing.T) {
	for _, tc := range []struct {
		archiver    string
		onCreate    bool
		want, wantN []string // in the script, not in it; nil want: no script
	}{
		{pgbackrest, true, []string{"stanza-create", "--type=full backup", "exit 0"}, nil},
		{pgbackrest, false, []string{"stanza-create", "exit 0"}, []string{"--type=full backup"}},
		{walg, true, []string{`backup-push "$DATA_DIR"`, "exit 0"}, []string{"stanza-create"}},
		{walg, false, nil, nil},
	} {
		c := ec2Cluster(tc.archiver, 16)
		c.Archive.BackupOnCreate = tc.onCreate
		u, err := bootstrap.RenderEC2(c, ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64))
		if err != nil {
			t.Fatal(err)
		}
		f, ok := u.File(postBootstrapPath)
		inYAML := strings.Contains(u.PatroniYAML, "  post_bootstrap: \""+postBootstrapPath+"\"\n")
		if tc.want == nil {
			if ok || inYAML {
				t.Errorf("%s, BackupOnCreate %v: post_bootstrap rendered (file %v, in Patroni's YAML %v), want none", tc.archiver, tc.onCreate, ok, inYAML)
			}
			continue
		}
		if !ok || !inYAML || f.Mode != 0o755 {
			t.Fatalf("%s, BackupOnCreate %v: file %v (mode %v), in Patroni's YAML %v; want both, executable", tc.archiver, tc.onCreate, ok, f.Mode, inYAML)
		}
		for _, w := range tc.want {
			if !strings.Contains(f.Content, w) {
				t.Errorf("%s, BackupOnCreate %v: the script lacks %q:\n%s", tc.archiver, tc.onCreate, w, f.Content)
			}
		}
		for _, w := range tc.wantN {
			if strings.Contains(f.Content, w) {
				t.Errorf("%s, BackupOnCreate %v: the script has %q:\n%s", tc.archiver, tc.onCreate, w, f.Content)
			}
		}
	}
}

// TestEC2PostBootstrapScript runs the pgBackRest post-bootstrap script with
// a stand-in pgbackrest: stanza-create, then the backup; a failure of
// either is logged and the script still exits 0 (Patroni would otherwise
// cancel the cluster's initialisation).
func TestEC2PostBootstrapScript(t *testing.T) {
	c := ec2Cluster(pgbackrest, 16)
	c.Archive.BackupOnCreate = true
	script := renderedFile(t, c, ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64), postBootstrapPath)
	for _, tc := range []struct {
		fail string // the pgbackrest command that fails
		want string // the commands run
		log  string
	}{
		{"", "stanza-create\nbackup\n", ""},
		{"stanza-create", "stanza-create\n", "stanza-create failed"},
		{"backup", "stanza-create\nbackup\n", "the first backup failed"},
	} {
		dir := t.TempDir()
		stub := filepath.Join(dir, "pgbackrest")
		body := "#!/bin/bash\necho \"${*: -1}\" >>\"$LOG\"\n[ \"${*: -1}\" != \"$FAIL\" ]\n"
		if err := os.WriteFile(stub, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(script, "/usr/bin/pgbackrest", stub)
		cmd := exec.Command("/bin/bash", "-c", s, "post-bootstrap.sh", "dbname=postgres user=postgres")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log"), "FAIL=" + tc.fail}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("pgbackrest %q failing: %v, want exit 0\n%s", tc.fail, err, out)
		}
		ran, _ := os.ReadFile(filepath.Join(dir, "log"))
		if string(ran) != tc.want || !strings.Contains(string(out), tc.log) {
			t.Errorf("pgbackrest %q failing: ran %q, want %q; output %q, want %q in it", tc.fail, ran, tc.want, out, tc.log)
		}
	}
}

// TestEC2SecretsScript_endpoint runs the secrets script with a stand-in
// aws: SSMEndpoint becomes --endpoint-url, and none is passed by default.
func TestEC2SecretsScript_endpoint(t *testing.T) {
	c := ec2Cluster(walg, 16)
	stub := `echo "$*" >>"$LOG"
printf 'SecureString\tpw\n'
`
	for _, endpoint := range []string{"", "https://ssm.test:4443"} {
		h := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		h.SSMEndpoint = endpoint
		script := renderedFile(t, c, h, "/usr/local/lib/pgnvme/secrets.sh")
		dir := scriptDir(t, "secrets.sh", script, map[string]string{"aws": stub})
		cmd := exec.Command("/bin/bash", filepath.Join(dir, "secrets.sh"), filepath.Join(dir, "patroni.env"))
		cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "LOG=" + filepath.Join(dir, "aws.log")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("endpoint %q: %v\n%s", endpoint, err, out)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "aws.log"))
		for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			has := strings.Contains(l, "--endpoint-url")
			if endpoint == "" && has || endpoint != "" && !strings.Contains(l, "--endpoint-url "+endpoint+" ") {
				t.Errorf("endpoint %q: aws %s", endpoint, l)
			}
		}
	}
	h := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	h.SSMEndpoint = "ssm.test"
	if _, err := bootstrap.RenderEC2(c, h); err == nil || !strings.Contains(err.Error(), `SSM endpoint "ssm.test"`) {
		t.Errorf("SSMEndpoint without a scheme: %v, want an error naming it", err)
	}
}

// TestEC2InstallScript_check runs the install script with
// PGNVME_INSTALL=check on a PATH that lacks the programs: it names them
// and fails before it changes anything; an unknown mode fails too.
func TestEC2InstallScript_check(t *testing.T) {
	c := ec2Cluster(pgbackrest, 16)
	script := renderedFile(t, c, ec2Host(c, "pg-a", 2, bootstrap.ArchX86_64), "/usr/local/lib/pgnvme/install.sh")
	dir := scriptDir(t, "install.sh", script, map[string]string{"dpkg": "echo amd64\n", "apt-get": "echo apt-get >>\"$LOG\"\n"})
	for mode, want := range map[string]string{
		"check": "PGNVME_INSTALL=check, and this image lacks patroni etcdctl aws curl mkfs.xfs",
		"bogus": "PGNVME_INSTALL=bogus: use install (the default) or check",
	} {
		cmd := exec.Command("/bin/bash", filepath.Join(dir, "install.sh"))
		cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin"), "PGNVME_INSTALL=" + mode, "LOG=" + filepath.Join(dir, "log")}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("PGNVME_INSTALL=%s: %v, output %q, want a failure with %q", mode, err, out, want)
		}
		if mode == "check" && !strings.Contains(string(out), "mdadm") {
			t.Errorf("two disks and no mdadm: %q does not name mdadm", out)
		}
		if _, err := os.Stat(filepath.Join(dir, "log")); err == nil {
			t.Errorf("PGNVME_INSTALL=%s ran apt-get", mode)
		}
	}
}
