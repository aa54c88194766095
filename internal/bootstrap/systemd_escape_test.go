package bootstrap_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// SystemdEscapePath and SystemdMountUnit write what this machine's systemd-escape writes.
func TestSystemdEscapePath(t *testing.T) {
	escape, err := exec.LookPath("systemd-escape")
	if err != nil {
		t.Fatalf("systemd-escape is needed to check the escaping: apt-get install -y systemd (%v)", err)
	}
	for _, p := range []string{
		"/", "//", "/var/lib/pgnvme", "/var/lib/pgnvme/", "//var//lib/./pgnvme", "/data",
		"/data/pg-nvme", "/srv/pg-nvme/x.y", "/srv/.hidden/x.y", "/.a/.b", "/a.", "/_x/-y/:z",
		`/back\slash`, "/mnt/with space", "/tab\there", "/100%", "/a~b@c+d=e,f", "/ümlaut/日本",
	} {
		for _, c := range []struct {
			args []string
			got  string
		}{
			{[]string{"--path"}, bootstrap.SystemdEscapePath(p)},
			{[]string{"--path", "--suffix=mount"}, bootstrap.SystemdMountUnit(p)},
		} {
			out, err := exec.Command(escape, append(c.args, "--", p)...).Output()
			if err != nil {
				t.Fatalf("systemd-escape %s %q: %v", strings.Join(c.args, " "), p, err)
			}
			if want := strings.TrimSuffix(string(out), "\n"); c.got != want {
				t.Errorf("%q with %s: got %q, systemd-escape writes %q", p, strings.Join(c.args, " "), c.got, want)
			}
		}
	}
}
