package nodesim

import (
	"slices"
	"testing"
	"time"
)

func TestParseUnit(t *testing.T) {
	f, err := parseUnit("x.service", `# comment
[Unit]
Description=x
Requires=a.service b.service
Requires=c.service
After=a.service \
  b.service
Wants=w.target
Wants=
Wants=v.target
; another comment

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/echo "two words" 'single $X' plain
ExecStartPost=-/usr/bin/systemctl start --no-block y.service
TimeoutStartSec=15min
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		got  []string
		want []string
	}{
		{"Requires", f.list("Unit", "Requires"), []string{"a.service", "b.service", "c.service"}},
		{"After", f.list("Unit", "After"), []string{"a.service", "b.service"}},
		{"Wants (reset by an empty assignment)", f.list("Unit", "Wants"), []string{"v.target"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
	}
	if !f.boolean("Service", "RemainAfterExit", false) || f.get("Service", "Type", "simple") != "oneshot" {
		t.Errorf("Type %q RemainAfterExit %v", f.get("Service", "Type", ""), f.boolean("Service", "RemainAfterExit", false))
	}
	if d, err := f.duration("Service", "TimeoutStartSec", 0); err != nil || d != 15*time.Minute {
		t.Errorf("TimeoutStartSec = %s, %v", d, err)
	}
	cmds, err := f.commands("ExecStart")
	if err != nil || len(cmds) != 1 || !slices.Equal(cmds[0].words, []string{"/bin/echo", "two words", "single $X", "plain"}) {
		t.Errorf("ExecStart = %+v, %v", cmds, err)
	}
	posts, err := f.commands("ExecStartPost")
	if err != nil || len(posts) != 1 || !posts[0].ignoreFailure || posts[0].words[0] != "/usr/bin/systemctl" {
		t.Errorf("ExecStartPost = %+v, %v", posts, err)
	}
	if _, err := parseUnit("bad.service", "Key=outside a section\n"); err == nil {
		t.Error("an assignment outside a section parsed")
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"MAINPID": "42", "OPTS": "-a -b", "DIR": "/x"}
	got := expand([]string{"/bin/kill", "-s", "HUP", "$MAINPID", "$OPTS", "${DIR}/y", "100%%", "$UNSET"}, env)
	want := []string{"/bin/kill", "-s", "HUP", "42", "-a", "-b", "/x/y", "100%"}
	if !slices.Equal(got, want) {
		t.Errorf("expand = %q, want %q", got, want)
	}
}

func TestParseEnvFile(t *testing.T) {
	// As secrets.sh writes it: double quotes, with \ " $ ` escaped.
	env, order, err := parseEnvFile(`# Written by pgnvme-secrets.service
PATRONI_SUPERUSER_USERNAME="postgres"
PATRONI_SUPERUSER_PASSWORD="a\"b\\c\$d\` + "`" + `e f"
ETCD_NAME=pg-1
SINGLE='x "y"'
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PATRONI_SUPERUSER_USERNAME": "postgres",
		"PATRONI_SUPERUSER_PASSWORD": "a\"b\\c$d`e f",
		"ETCD_NAME":                  "pg-1",
		"SINGLE":                     `x "y"`,
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if len(order) != len(want) || order[0] != "PATRONI_SUPERUSER_USERNAME" {
		t.Errorf("order %q", order)
	}
	if _, _, err := parseEnvFile("not an assignment\n"); err == nil {
		t.Error("a line without = parsed")
	}
}

func TestParseTimespan(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"5s", 5 * time.Second, false},
		{"30", 30 * time.Second, false},
		{"15min", 15 * time.Minute, false},
		{"1min 30s", 90 * time.Second, false},
		{"100ms", 100 * time.Millisecond, false},
		{"infinity", 0, false},
		{"5 fortnights", 0, true},
		{"", 0, true},
	} {
		got, err := parseTimespan(c.in)
		if (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("parseTimespan(%q) = %s, %v; want %s (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}
