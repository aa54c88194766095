package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// TestRenderEC2_takeover: every etcd member, in its usual, restore and clone user-data, has takeover.sh and
// its service and timer, the timer enabled at install and firing every 15 seconds as the node simulator
// reads OnCalendar= (backup.ParseCalendar); a node without an etcd member has none of them.
func TestRenderEC2_takeover(t *testing.T) {
	const (
		script  = "/usr/local/lib/pgnvme/takeover.sh"
		service = "/etc/systemd/system/pgnvme-takeover.service"
		timer   = "/etc/systemd/system/pgnvme-takeover.timer"
	)
	member := ec2Matrix()[0]
	for _, combo := range []ec2Combo{member, nonMemberCombo()} {
		usual, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatal(err)
		}
		restore, err := bootstrap.RenderEC2Restore(combo.cluster, combo.node)
		if err != nil {
			t.Fatal(err)
		}
		clone, err := bootstrap.RenderEC2Clone(combo.cluster, combo.node, cloneSource(combo.cluster))
		if err != nil {
			t.Fatal(err)
		}
		for kind, u := range map[string]bootstrap.UserData{"usual": usual, "restore": restore, "clone": clone} {
			for _, p := range []string{script, service, timer} {
				if _, ok := u.File(p); ok != u.EtcdMember {
					t.Errorf("%s, %s user-data: %s written %v, etcd member %v", combo.name, kind, p, ok, u.EtcdMember)
				}
			}
			install, _ := u.File("/usr/local/lib/pgnvme/install.sh")
			if enabled := strings.Contains(install.Content, " pgnvme-takeover.timer)\n"); enabled != u.EtcdMember {
				t.Errorf("%s, %s user-data: pgnvme-takeover.timer enabled %v, etcd member %v", combo.name, kind, enabled, u.EtcdMember)
			}
		}
	}
	u, err := bootstrap.RenderEC2(member.cluster, member.node)
	if err != nil {
		t.Fatal(err)
	}
	unit, _ := u.File(timer)
	var calendar string
	for _, l := range strings.Split(unit.Content, "\n") {
		if v, ok := strings.CutPrefix(l, "OnCalendar="); ok {
			calendar = v
		}
	}
	if c, err := backup.ParseCalendar(calendar); err != nil || c.String() != "*-*-* *:*:00/15" {
		t.Errorf("OnCalendar=%s: %v, %v; want every 15 seconds", calendar, c, err)
	}
	svc, _ := u.File(service)
	if !strings.Contains(svc.Content, "\nType=oneshot\nExecStart="+script+"\n") || strings.Contains(svc.Content, "User=") {
		t.Errorf("the service does not run %s once, as root:\n%s", script, svc.Content)
	}
}

// TestEC2TakeoverScript runs the rendered takeover.sh of pg-a with stand-ins that record each call: etcdctl
// (healthy or not), aws (the instruction, ParameterNotFound or a refusal), runuser and psql (PostgreSQL's
// recovery state and WAL position), install and systemctl (a restart of etcd takes the force file as etcd.sh
// does, and makes etcd healthy or not). It acts only on an instruction naming pg-a at exactly its position,
// while etcd is unhealthy, once; everything else leaves etcd alone.
func TestEC2TakeoverScript(t *testing.T) {
	c := ec2Cluster(walg, 16)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	script := renderedFile(t, c, n, "/usr/local/lib/pgnvme/takeover.sh")
	const (
		health = "etcdctl --endpoints=http://10.0.1.10:2379 --dial-timeout=2s --command-timeout=3s endpoint health"
		read   = "aws ssm get-parameter --region eu-west-1 --name /pgnvme/demo/takeover --query Parameter.Value --output text"
		psql   = "runuser -u postgres -- psql -X -A -t -q -F   -h /var/run/postgresql -p 5432 -d postgres " +
			"-c SELECT pg_is_in_recovery(), coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())"
		stateDir  = "install -d -m 0700 $DIR/state"
		forceFile = "install -o etcd -g etcd -m 0600 /dev/null $DIR/etcd/pgnvme-force-new-cluster"
		restart   = "systemctl restart --no-block pgnvme-etcd.service (force file present)"
	)
	stubs := map[string]string{
		"etcdctl": `echo "etcdctl $*" >>"$LOG"; [ -e "$DIR/healthy" ]` + "\n",
		"aws": `echo "aws $*" >>"$LOG"
case $VALUE in
  absent) echo "An error occurred (ParameterNotFound) when calling the GetParameter operation: Parameter /pgnvme/demo/takeover not found." >&2; exit 254 ;;
  denied) echo "An error occurred (AccessDeniedException) when calling the GetParameter operation: not authorized to perform: ssm:GetParameter" >&2; exit 254 ;;
esac
printf '%s\n' "$VALUE"
`,
		"runuser": `echo "runuser $*" >>"$LOG"
[ "$1 $2 $3" = "-u postgres --" ] || exit 1
shift 3
exec "$@"
`,
		"psql": `[ -n "$POSITION" ] || { echo "psql: error: connection to server on socket failed" >&2; exit 2; }; echo "$POSITION"` + "\n",
		"install": `echo "install $*" >>"$LOG"
if [ "$1" = -d ]; then mkdir -p "${!#}"; else : >"${!#}"; fi
`,
		"systemctl": `f=$DIR/etcd/pgnvme-force-new-cluster
if [ -e "$f" ]; then echo "systemctl $* (force file present)" >>"$LOG"; rm -f "$f"; else echo "systemctl $*" >>"$LOG"; fi
[ -z "$HEALS" ] || : >"$DIR/healthy"
`,
	}
	type state struct {
		healthy, force, member bool
		started, done          string // the state files' content; "" for none
	}
	type result struct {
		code  int
		out   string
		calls []string
		after state
	}
	run := func(t *testing.T, before state, value, position string, heals bool) result {
		t.Helper()
		dir := scriptDir(t, "takeover.sh", script, stubs)
		s := strings.NewReplacer("ETCD_DATA_DIR=/var/lib/etcd/pgnvme\n", "ETCD_DATA_DIR="+filepath.Join(dir, "etcd")+"\n",
			"STATE_DIR=/var/lib/pgnvme-takeover\n", "STATE_DIR="+filepath.Join(dir, "state")+"\n",
			"HEALTH_WAIT_SECONDS=60\n", "HEALTH_WAIT_SECONDS=3\n").Replace(script)
		if strings.Count(s, dir) != 2 || !strings.Contains(s, "HEALTH_WAIT_SECONDS=3\n") {
			t.Fatalf("the script does not set ETCD_DATA_DIR, STATE_DIR and HEALTH_WAIT_SECONDS as expected:\n%s", script)
		}
		if err := os.WriteFile(filepath.Join(dir, "takeover.sh"), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		put := func(p string, on bool, content string) {
			if !on {
				return
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		put(filepath.Join(dir, "healthy"), before.healthy, "")
		put(filepath.Join(dir, "etcd", "pgnvme-force-new-cluster"), before.force, "")
		put(filepath.Join(dir, "etcd", "member", "snap", "db"), before.member, "")
		put(filepath.Join(dir, "state", "started"), before.started != "", before.started+"\n")
		put(filepath.Join(dir, "state", "done"), before.done != "", before.done+"\n")
		log := filepath.Join(dir, "calls.log")
		cmd := exec.Command("/bin/bash", filepath.Join(dir, "takeover.sh"))
		cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "LOG=" + log, "DIR=" + dir,
			"VALUE=" + value, "POSITION=" + position, "HEALS=" + map[bool]string{true: "1"}[heals]}
		out, _ := cmd.CombinedOutput()
		r := result{code: cmd.ProcessState.ExitCode(), out: string(out)}
		recorded, _ := os.ReadFile(log)
		for _, l := range strings.Split(strings.TrimSpace(string(recorded)), "\n") {
			if l != "" {
				r.calls = append(r.calls, strings.ReplaceAll(l, dir, "$DIR"))
			}
		}
		exists := func(p string) bool { _, err := os.Stat(filepath.Join(dir, p)); return err == nil }
		content := func(p string) string {
			b, _ := os.ReadFile(filepath.Join(dir, p))
			return strings.TrimSuffix(string(b), "\n")
		}
		r.after = state{healthy: exists("healthy"), force: exists("etcd/pgnvme-force-new-cluster"), member: exists("etcd/member"),
			started: content("state/started"), done: content("state/done")}
		return r
	}

	lost := state{member: true} // no majority, this member's data kept
	for _, tc := range []struct {
		name            string
		before          state
		value, position string
		heals           bool
		calls           []string
		code            int
		after           state
		log             string // in the script's output; "" for none at all
	}{
		{name: "healthy", before: state{healthy: true, member: true}, value: "pg-a 0/3000060", position: "t 0/3000060",
			calls: []string{health}, after: state{healthy: true, member: true}},
		{name: "healthy, a force file left from a takeover that did not restart etcd",
			before: state{healthy: true, member: true, force: true, started: "pg-a 0/3000060"}, value: "pg-a 0/3000060",
			calls: []string{health}, after: state{healthy: true, member: true}, log: "the takeover asked for"},
		{name: "healthy after a forced restart that took longer than the wait",
			before: state{healthy: true, member: true, started: "pg-a 0/3000060"}, value: "pg-a 0/3000060",
			calls: []string{health}, after: state{healthy: true, member: true, done: "pg-a 0/3000060"}, log: "took effect"},
		{name: "no instruction", before: lost, value: "absent", calls: []string{health, read}, after: lost},
		{name: "instruction unreadable", before: lost, value: "denied", calls: []string{health, read}, after: lost,
			log: "reading /pgnvme/demo/takeover failed (give the instance role ssm:GetParameter on it): An error occurred (AccessDeniedException)"},
		{name: "another node named", before: lost, value: "pg-b 0/3000060", calls: []string{health, read}, after: lost},
		{name: "no position", before: lost, value: "pg-a", calls: []string{health, read}, after: lost, log: `not "<node> <lsn>"`},
		{name: "two spaces", before: lost, value: "pg-a  0/3000060", calls: []string{health, read}, after: lost, log: `not "<node> <lsn>"`},
		{name: "lower-case LSN", before: lost, value: "pg-a 0/300006a", calls: []string{health, read}, after: lost, log: `not "<node> <lsn>"`},
		{name: "trailing word", before: lost, value: "pg-a 0/3000060 now", calls: []string{health, read}, after: lost, log: `not "<node> <lsn>"`},
		{name: "done already", before: state{member: true, done: "pg-a 0/3000060"}, value: "pg-a 0/3000060", position: "t 0/3000060",
			calls: []string{health, read}, after: state{member: true, done: "pg-a 0/3000060"}},
		{name: "PostgreSQL down", before: lost, value: "pg-a 0/3000060", calls: []string{health, read, psql}, after: lost,
			log: "PostgreSQL does not answer"},
		{name: "not in recovery", before: lost, value: "pg-a 0/3000060", position: "f 0/3000060",
			calls: []string{health, read, psql}, after: lost, log: "PostgreSQL is not in recovery"},
		{name: "behind", before: lost, value: "pg-a 0/3000060", position: "t 0/3000000",
			calls: []string{health, read, psql}, after: lost, log: "this node is at WAL position 0/3000000, not 0/3000060"},
		{name: "ahead", before: lost, value: "pg-a 0/3000060", position: "t 1/0",
			calls: []string{health, read, psql}, after: lost, log: "this node is at WAL position 1/0, not 0/3000060"},
		{name: "no etcd data", before: state{}, value: "pg-a 0/3000060", position: "t 0/3000060",
			calls: []string{health, read, psql}, after: state{}, log: "holds no etcd data to keep"},
		{name: "exact position", before: lost, value: "pg-a 0/3000060", position: "t 0/3000060", heals: true,
			calls: []string{health, read, psql, stateDir, forceFile, restart, health},
			after: state{healthy: true, member: true, done: "pg-a 0/3000060"}, log: `the takeover "pg-a 0/3000060" took effect`},
		// PostgreSQL 19 prints the lower half with 8 digits.
		{name: "exact position, zero-padded", before: lost, value: "pg-a 0/3000060", position: "t 0/03000060", heals: true,
			calls: []string{health, read, psql, stateDir, forceFile, restart, health},
			after: state{healthy: true, member: true, done: "pg-a 0/3000060"}, log: "took effect"},
		{name: "another instruction done before", before: state{member: true, done: "pg-a 0/2000000"}, value: "pg-a 0/3000060",
			position: "t 0/3000060", heals: true, calls: []string{health, read, psql, stateDir, forceFile, restart, health},
			after: state{healthy: true, member: true, done: "pg-a 0/3000060"}, log: "took effect"},
		{name: "etcd stays unhealthy", before: lost, value: "pg-a 0/3000060", position: "t 0/3000060",
			calls: []string{health, read, psql, stateDir, forceFile, restart, health}, code: 1,
			after: state{member: true, started: "pg-a 0/3000060"}, log: "etcd is not healthy 3s after the forced restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.before, tc.value, tc.position, tc.heals)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.out)
			}
			calls := r.calls
			if n := len(tc.calls); n > 0 && tc.calls[n-1] == health {
				// Polling etcd's health after the restart takes as many calls as the wait allows.
				for len(calls) > n && calls[len(calls)-1] == health {
					calls = calls[:len(calls)-1]
				}
			}
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("calls:\n  %s\nwant:\n  %s\n%s", strings.Join(r.calls, "\n  "), strings.Join(tc.calls, "\n  "), r.out)
			}
			if r.after != tc.after {
				t.Errorf("after the run %+v, want %+v\n%s", r.after, tc.after, r.out)
			}
			if tc.log == "" && r.out != "" || !strings.Contains(r.out, tc.log) {
				t.Errorf("the script said %q; want %q", r.out, tc.log)
			}
		})
	}
}
