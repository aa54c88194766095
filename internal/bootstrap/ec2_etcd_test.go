package bootstrap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// netns is a network namespace held by a sleeping process, with the nodes'
// private IPs on its loopback interface.
type netns struct {
	holder *exec.Cmd
}

func newNetns(t *testing.T, ips ...string) *netns {
	t.Helper()
	holder := exec.Command("unshare", "--net", "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare --net: %v", err)
	}
	ns := &netns{holder: holder}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	// unshare has to make the namespace before sleep runs in it.
	deadline := time.Now().Add(5 * time.Second)
	self, _ := os.Readlink("/proc/self/ns/net")
	for {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid))
		if link != "" && link != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare made no network namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	setup := [][]string{{"ip", "link", "set", "lo", "up"}}
	for _, ip := range ips {
		setup = append(setup, []string{"ip", "addr", "add", ip + "/32", "dev", "lo"})
	}
	for _, args := range setup {
		if out, err := ns.command(args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return ns
}

// command runs args in the namespace.
func (ns *netns) command(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/proc/" + strconv.Itoa(ns.holder.Process.Pid) + "/ns/net"}, args...)...)
}

// TestEC2EtcdScript_realEtcd runs the rendered etcd start scripts of a
// three-node cluster with Debian's etcd 3.4, each member on its node's
// private IP in a network namespace: a first start where one member comes
// late and joins the start under way; then a node replaced (its data
// directory gone), which removes its old member, adds itself and joins, so
// the cluster has three members again, never four, and keeps its data.
// Then a double loss: two members and their data gone, the survivor serves
// nothing (nor does takeover.sh's health check pass) until takeover.sh's
// force file makes its restart a new one-member cluster with the data
// (etcd --force-new-cluster), the file removed; a lost node then joins it
// with an empty data directory, two members holding the data.
func TestEC2EtcdScript_realEtcd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root; run the tests as root to check the etcd script against etcd")
	}
	needTool(t, "etcd", "etcd-server")
	etcdctl := needTool(t, "etcdctl", "etcd-client")
	needTool(t, "unshare", "util-linux")
	needTool(t, "nsenter", "util-linux")
	needTool(t, "ip", "iproute2")

	c := ec2Cluster(walg, 16)
	ns := newNetns(t, ec2IPs["pg-a"], ec2IPs["pg-b"], ec2IPs["pg-c"])
	dir := t.TempDir()
	type member struct {
		script string
		env    []string
		data   string
		cmd    *exec.Cmd
		log    *os.File
	}
	members := map[string]*member{}
	for _, name := range c.Nodes {
		n := ec2Host(c, name, 1, bootstrap.ArchX86_64)
		n.Etcd.JoinWaitSeconds = 3
		data := filepath.Join(dir, name)
		script := strings.Replace(renderedFile(t, c, n, "/usr/local/lib/pgnvme/etcd.sh"),
			"DATA_DIR=/var/lib/etcd/pgnvme\n", "DATA_DIR="+data+"\n", 1)
		p := filepath.Join(dir, name+".sh")
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		env := envFile(t, renderedFile(t, c, n, "/etc/pgnvme/etcd.env"))
		for i, e := range env {
			if strings.HasPrefix(e, "ETCD_DATA_DIR=") {
				env[i] = "ETCD_DATA_DIR=" + data
			}
		}
		members[name] = &member{script: p, env: append(env, "PATH=/usr/bin:/bin"), data: data}
	}
	start := func(name string) {
		t.Helper()
		m := members[name]
		log, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		m.cmd = ns.command("/bin/bash", m.script)
		m.cmd.Env, m.cmd.Stdout, m.cmd.Stderr, m.log = m.env, log, log, log
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(name string) {
		m := members[name]
		if m.cmd == nil {
			return
		}
		// nsenter execs bash, which execs etcd: one process to end.
		_ = m.cmd.Process.Signal(syscall.SIGKILL)
		_ = m.cmd.Wait()
		_ = m.log.Close()
		m.cmd = nil
	}
	t.Cleanup(func() {
		for _, name := range c.Nodes {
			stop(name)
		}
	})
	logs := func() string {
		var b strings.Builder
		for _, name := range c.Nodes {
			l, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			fmt.Fprintf(&b, "---- %s\n%s\n", name, tail(string(l), 15))
		}
		return b.String()
	}
	endpoints := "--endpoints=http://10.0.1.10:2379,http://10.0.2.10:2379,http://10.0.3.10:2379"
	ctl := func(args ...string) (string, error) {
		out, err := ns.command(append([]string{etcdctl, endpoints, "--dial-timeout=2s", "--command-timeout=5s"}, args...)...).CombinedOutput()
		return string(out), err
	}
	// startedMembers waits until etcd lists its three members, want of
	// them run, and returns name -> ID of those.
	startedMembers := func(step string, want int, until func(map[string]string) bool) map[string]string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := ctl("member", "list")
			ids := map[string]string{}
			lines := 0
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Split(l, ", ")
				if len(f) >= 5 {
					lines++
					if f[4] != "" { // it has run: its client URLs are published
						ids[f[2]] = f[0]
					}
				}
			}
			if lines > 3 {
				t.Fatalf("%s: etcd has %d members:\n%s", step, lines, out)
			}
			if err == nil && len(ids) == want && lines == 3 && (until == nil || until(ids)) {
				if h, err := ctl("endpoint", "health"); err == nil || want < 3 {
					return ids
				} else if time.Now().After(deadline) {
					t.Fatalf("%s: unhealthy: %v\n%s\n%s", step, err, h, logs())
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: want %d started members: %v\n%s\n%s", step, want, err, out, logs())
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	// The first start: pg-a and pg-c first, pg-b once they have a quorum.
	start("pg-a")
	start("pg-c")
	startedMembers("first start of two", 2, nil)
	start("pg-b")
	first := startedMembers("first start", 3, nil)
	if out, err := ctl("put", "/service/demo/probe", "kept"); err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	if l, _ := os.ReadFile(filepath.Join(dir, "pg-b.log")); !strings.Contains(string(l), "this member is still to join the cluster's first start") {
		t.Errorf("pg-b did not join the first start under way:\n%s", logs())
	}

	// pg-b is replaced: a new instance, its root volume (and etcd data) gone.
	stop("pg-b")
	if err := os.RemoveAll(members["pg-b"].data); err != nil {
		t.Fatal(err)
	}
	start("pg-b")
	second := startedMembers("after replacing pg-b", 3, func(ids map[string]string) bool { return ids["pg-b"] != first["pg-b"] })
	if second["pg-a"] != first["pg-a"] || second["pg-c"] != first["pg-c"] {
		t.Errorf("members before %v, after %v: want pg-b alone with a new ID", first, second)
	}
	if l, _ := os.ReadFile(filepath.Join(dir, "pg-b.log")); !strings.Contains(string(l), "its data is gone") {
		t.Errorf("pg-b did not replace its old member:\n%s", logs())
	}
	out, err := ns.command(etcdctl, "--endpoints=http://10.0.2.10:2379", "get", "--print-value-only", "/service/demo/probe").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "kept" {
		t.Errorf("the replaced member reads %q, %v; want the cluster's data", out, err)
	}

	// A restart with its data: it starts from it, asking nobody.
	stop("pg-b")
	start("pg-b")
	time.Sleep(2 * time.Second) // long enough to join under another ID, were it to
	if third := startedMembers("after restarting pg-b", 3, nil); third["pg-b"] != second["pg-b"] {
		t.Errorf("a restart changed pg-b's ID from %s to %s", second["pg-b"], third["pg-b"])
	}

	// A double loss: pg-a and pg-b with their root volumes; pg-c survives.
	if out, err := ctl("put", "/service/demo/leader", "pg-a"); err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	for _, name := range []string{"pg-a", "pg-b"} {
		stop(name)
		if err := os.RemoveAll(members[name].data); err != nil {
			t.Fatal(err)
		}
	}
	// at runs etcdctl against the given members only, with takeover.sh's timeouts.
	at := func(endpoints string, args ...string) (string, error) {
		out, err := ns.command(append([]string{etcdctl, "--endpoints=" + endpoints, "--dial-timeout=2s", "--command-timeout=3s"}, args...)...).CombinedOutput()
		return string(out), err
	}
	const survivor, lost = "http://10.0.3.10:2379", "http://10.0.1.10:2379"
	if out, err := at(survivor, "get", "--print-value-only", "/service/demo/leader"); err == nil {
		t.Fatalf("the survivor alone serves a linearizable read: %q", out)
	}
	if out, err := at(survivor, "endpoint", "health"); err == nil {
		t.Fatalf("the survivor alone is healthy, so takeover.sh would never take over: %q", out)
	}
	// waitFor polls check until it holds, for up to 60 seconds, and returns how long that took.
	waitFor := func(step string, check func() (bool, string)) time.Duration {
		t.Helper()
		began := time.Now()
		for {
			ok, detail := check()
			if ok {
				return time.Since(began)
			}
			if time.Since(began) > 60*time.Second {
				t.Fatalf("%s: %s\n%s", step, detail, logs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// memberList is the members the given endpoints list, name -> client URLs, and etcdctl's output.
	memberList := func(endpoints string) (map[string]string, string) {
		out, err := at(endpoints, "member", "list")
		if err != nil {
			return nil, out
		}
		list := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Split(l, ", "); len(f) >= 5 {
				list[f[2]] = f[4]
			}
		}
		return list, out
	}

	// What takeover.sh does on pg-c: the force file in its data directory, then a restart of its etcd.
	force := filepath.Join(members["pg-c"].data, "pgnvme-force-new-cluster")
	if err := os.WriteFile(force, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stop("pg-c")
	start("pg-c")
	took := waitFor("the survivor after its forced restart", func() (bool, string) {
		out, err := at(survivor, "get", "--print-value-only", "/service/demo/leader")
		return err == nil && strings.TrimSpace(out) == "pg-a", fmt.Sprintf("reads %q, %v", out, err)
	})
	if _, err := at(survivor, "endpoint", "health"); err != nil {
		t.Errorf("the survivor serves reads but its health check fails: %v", err)
	}
	t.Logf("the survivor served linearizable reads %v after its forced restart", took.Round(10*time.Millisecond))
	if list, out := memberList(survivor); len(list) != 1 || list["pg-c"] != survivor {
		t.Errorf("after the takeover etcd lists\n%s\nwant pg-c alone", out)
	}
	if _, err := os.Stat(force); !os.IsNotExist(err) {
		t.Errorf("the force file is still there after the forced start (%v): the next restart would force again", err)
	}
	if l, _ := os.ReadFile(filepath.Join(dir, "pg-c.log")); !strings.Contains(string(l), "a takeover: this member's data becomes a new one-member cluster") {
		t.Errorf("pg-c did not say it took over:\n%s", logs())
	}

	// pg-a replaced: an empty data directory; it adds itself to the new cluster and joins.
	start("pg-a")
	waitFor("pg-a joining the new cluster", func() (bool, string) {
		list, out := memberList(survivor)
		if len(list) > 2 {
			t.Fatalf("etcd has %d members after one replacement:\n%s", len(list), out)
		}
		got, err := at(lost, "get", "--print-value-only", "/service/demo/leader")
		return len(list) == 2 && list["pg-a"] == lost && list["pg-c"] == survivor && err == nil && strings.TrimSpace(got) == "pg-a",
			fmt.Sprintf("members\n%s\npg-a reads %q, %v", out, got, err)
	})
	if l, _ := os.ReadFile(filepath.Join(dir, "pg-a.log")); !strings.Contains(string(l), "the cluster has no member at http://10.0.1.10:2380; adding this one") {
		t.Errorf("pg-a did not add itself to the new cluster:\n%s", logs())
	}
}
