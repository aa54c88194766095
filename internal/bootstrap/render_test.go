package bootstrap_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with what the renderer returns now")

// tuned is a small set of tuned parameters, as pgnvme_tuning returns them.
var tuned = map[string]string{
	"shared_buffers":       "1GB",
	"effective_cache_size": "3GB",
	"work_mem":             "8MB",
	"random_page_cost":     "1.1",
}

// s3Archive is the bucket the golden files archive to.
var s3Archive = archive.Spec{Bucket: "pg-archive", Prefix: "clusters/demo", Region: "eu-west-1"}

// cluster3 is a three-node cluster, ANY 1, data durability required.
func cluster3() bootstrap.Cluster {
	return bootstrap.Cluster{
		Name:          "demo",
		PostgresMajor: 15,
		Nodes:         []string{"pg-a", "pg-b", "pg-c"},
		Synchronous: bootstrap.Synchronous{
			Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn,
		},
		Parameters: tuned,
	}
}

// ec2Node is a node as the EC2 platform places it.
func ec2Node(name string, role bootstrap.Role) bootstrap.Node {
	n := bootstrap.Node{
		Name:                 name,
		Role:                 role,
		Port:                 5432,
		DataDir:              "/var/lib/postgresql/15/main",
		SocketDir:            "/var/run/postgresql",
		PgBackRestConfigPath: "/etc/pgbackrest/pgbackrest.conf",
		PgBackRestLogDir:     "/var/log/pgbackrest",
		PgBackRestSpoolDir:   "/var/spool/pgbackrest",
		WALGEnvPath:          "/etc/wal-g/walg.env",
		ReplicationUser:      "replicator",
		AllowedCIDRs:         []string{"10.0.0.0/16"},
	}
	if role == bootstrap.RoleStandby {
		n.PrimaryHost, n.PrimaryPort = "10.0.1.10", 5432
	}
	return n
}

// localNode is a node as the local platform places it.
func localNode(name string, role bootstrap.Role, port int) bootstrap.Node {
	n := bootstrap.Node{
		Name:            name,
		Role:            role,
		Port:            port,
		DataDir:         "/tmp/pgnvme/demo/" + name,
		SocketDir:       "/tmp/pgnvme/demo/" + name,
		ReplicationUser: "postgres",
		AllowedCIDRs:    []string{"127.0.0.1/32"},
	}
	if role == bootstrap.RoleStandby {
		n.PrimaryHost, n.PrimaryPort = "127.0.0.1", 15432
	}
	return n
}

// effective asks for synchronous_standby_names with some standbys healthy.
type effective struct {
	primary string
	healthy []string
}

func TestRender_golden(t *testing.T) {
	withPgBackRest := cluster3()
	opts := s3Archive.PgBackRestOptions()
	opts["repo1-s3-key-type"] = "auto"
	withPgBackRest.Archive = &bootstrap.Archive{PgBackRestOptions: opts, BackupOnCreate: true}

	withWALG := cluster3()
	withWALG.Archive = &bootstrap.Archive{WALGEnv: s3Archive.WALGEnv(), BackupOnCreate: true}

	first2 := cluster3()
	first2.Synchronous.Method = quorum.MethodFirst
	first2.Synchronous.Number = 2

	preferred := cluster3()
	preferred.Synchronous.Number = 2
	preferred.Synchronous.DataDurability = bootstrap.DurabilityPreferred

	// Names that need quoting in synchronous_standby_names (upper case, a
	// keyword, a space, quotes, a backslash) and in primary_conninfo, and
	// paths that need quoting in archive_command.
	quoting := cluster3()
	quoting.Name = "Odd.Names"
	quoting.Nodes = []string{"Pg-Primary", "any", `it's "q" \x`}
	quoting.Archive = &bootstrap.Archive{
		PgBackRestOptions: map[string]string{"repo1-type": "posix", "repo1-path": "/var/lib/pgbackrest repo"},
		Stanza:            "odd-stanza",
	}
	quotingNode := func(name string, role bootstrap.Role) bootstrap.Node {
		n := localNode(name, role, 15433)
		n.DataDir = "/srv/pg data/100% it's"
		n.SocketDir = ""
		n.PgBackRestConfigPath = "/etc/pg backrest/it's 100%.conf"
		n.ArchiverPath = "/opt/pgBackRest 2.45/bin/pgbackrest"
		n.ReplicationUser = "replication" // a pg_hba keyword
		n.PrimaryHost = "db host"
		n.AllowedCIDRs = []string{"0.0.0.0/0", "::1/128", "127.0.0.0/8", "fd00::/8"}
		return n
	}

	for _, tc := range []struct {
		name      string
		cluster   bootstrap.Cluster
		nodes     []bootstrap.Node
		effective []effective
	}{
		{"pgbackrest", withPgBackRest,
			[]bootstrap.Node{ec2Node("pg-a", bootstrap.RolePrimary), ec2Node("pg-b", bootstrap.RoleStandby)}, nil},
		{"walg", withWALG,
			[]bootstrap.Node{ec2Node("pg-a", bootstrap.RolePrimary), ec2Node("pg-c", bootstrap.RoleStandby)}, nil},
		{"no_archive_local", cluster3(),
			[]bootstrap.Node{localNode("pg-a", bootstrap.RolePrimary, 15432), localNode("pg-b", bootstrap.RoleStandby, 15433)},
			[]effective{{"pg-a", nil}}},
		{"first_2_of_3", first2,
			[]bootstrap.Node{ec2Node("pg-a", bootstrap.RolePrimary), ec2Node("pg-b", bootstrap.RoleStandby), ec2Node("pg-c", bootstrap.RoleStandby)},
			[]effective{{"pg-a", []string{"pg-b"}}}},
		{"preferred", preferred,
			[]bootstrap.Node{ec2Node("pg-a", bootstrap.RolePrimary)},
			[]effective{{"pg-a", []string{"pg-b", "pg-c"}}, {"pg-a", []string{"pg-c"}}, {"pg-a", nil}, {"pg-b", []string{"pg-a"}}}},
		{"quoting", quoting,
			[]bootstrap.Node{quotingNode("Pg-Primary", bootstrap.RolePrimary), quotingNode(`it's "q" \x`, bootstrap.RoleStandby)},
			[]effective{{"pg-primary", []string{"ANY"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			fmt.Fprintf(&b, "# golden file of TestRender_golden/%s: go test ./internal/bootstrap/ -run TestRender_golden -update\n", tc.name)
			for _, w := range tc.cluster.Warnings() {
				fmt.Fprintf(&b, "# warning: %s\n", w)
			}
			for _, n := range tc.nodes {
				r, err := bootstrap.Render(tc.cluster, n)
				if err != nil {
					t.Fatalf("Render(%s): %v", n.Name, err)
				}
				fmt.Fprintf(&b, "\n======== node %s (%s)\n", n.Name, n.Role)
				b.WriteString(dump(r))
			}
			for _, e := range tc.effective {
				got, err := bootstrap.EffectiveSynchronousStandbyNames(tc.cluster, e.primary, e.healthy)
				if err != nil {
					t.Fatalf("EffectiveSynchronousStandbyNames(%s, %q): %v", e.primary, e.healthy, err)
				}
				fmt.Fprintf(&b, "\n======== effective synchronous_standby_names, primary %s, healthy standbys %q\nsynchronous_standby_names = %s\n", e.primary, e.healthy, bootstrap.QuoteConf(got))
			}
			golden(t, filepath.Join("testdata", tc.name+".golden"), b.String())
		})
	}
}

// dump is r as the golden files show it.
func dump(r bootstrap.Rendered) string {
	var b strings.Builder
	section := func(name, body string) {
		fmt.Fprintf(&b, "-------- %s\n", name)
		if body == "" {
			b.WriteString("(none)\n")
			return
		}
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
	}
	section("parameters", bootstrap.FormatConf(r.Parameters))
	section("pg_hba.conf", r.HBAFile())
	section("primary_conninfo", r.PrimaryConnInfo)
	section("standby.signal", map[bool]string{true: "yes", false: "no"}[r.StandbySignal])
	section("pgbackrest.conf", r.PgBackRestConf)
	section("walg.env", r.WALGEnvFile)
	return b.String()
}

// golden compares got with the file at path, or rewrites the file with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("rendered configuration differs from %s (run with -update to accept it):\n%s", path, diff(string(want), got))
	}
}

// diff lists the lines that differ between want and got, by line number.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// TestRender_sameParametersOnEveryNode: the nodes differ only in
// synchronous_standby_names, so a promoted standby is right at once.
func TestRender_sameParametersOnEveryNode(t *testing.T) {
	c := cluster3()
	c.Archive = &bootstrap.Archive{WALGEnv: s3Archive.WALGEnv()}
	p, err := bootstrap.Render(c, ec2Node("pg-a", bootstrap.RolePrimary))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pg-b", "pg-c"} {
		s, err := bootstrap.Render(c, ec2Node(name, bootstrap.RoleStandby))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range p.Parameters {
			if k != "synchronous_standby_names" && s.Parameters[k] != v {
				t.Errorf("%s: %s = %q on the standby, %q on the primary", name, k, s.Parameters[k], v)
			}
		}
		if len(s.Parameters) != len(p.Parameters) {
			t.Errorf("%s has %d parameters, the primary %d", name, len(s.Parameters), len(p.Parameters))
		}
		want := map[string]string{"pg-b": `ANY 1 ("pg-a", "pg-c")`, "pg-c": `ANY 1 ("pg-a", "pg-b")`}[name]
		if got := s.Parameters["synchronous_standby_names"]; got != want {
			t.Errorf("%s: synchronous_standby_names = %q, want %q", name, got, want)
		}
		if !slices.Equal(s.HBA[1:], p.HBA[1:]) {
			t.Errorf("%s: pg_hba differs from the primary's beyond its title:\n%s\n%s", name, s.HBAFile(), p.HBAFile())
		}
	}
}

// TestRender_neverIdentity: the node's identity and what localnode sets
// itself never appear in the parameters.
func TestRender_neverIdentity(t *testing.T) {
	c := cluster3()
	c.Archive = &bootstrap.Archive{PgBackRestOptions: s3Archive.PgBackRestOptions()}
	local := localNode("pg-b", bootstrap.RoleStandby, 15433)
	local.PgBackRestConfigPath = "/tmp/pgnvme/demo/pgbackrest.conf"
	for _, n := range []bootstrap.Node{ec2Node("pg-a", bootstrap.RolePrimary), local} {
		r, err := bootstrap.Render(c, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"listen_addresses", "port", "unix_socket_directories", "data_directory", "config_file",
			"hba_file", "ident_file", "external_pid_file", "logging_collector", "primary_conninfo",
			"include", "include_if_exists", "include_dir"} {
			if v, ok := r.Parameters[k]; ok {
				t.Errorf("%s: %s = %q rendered; it belongs to the platform", n.Name, k, v)
			}
		}
	}
}

// TestRender_parametersOverrideDefaults: the cluster's parameters win over
// the replication defaults, in any letter case, and are rendered in lower case.
func TestRender_parametersOverrideDefaults(t *testing.T) {
	c := cluster3()
	c.Parameters = map[string]string{"WAL_Keep_Size": "1GB", "wal_level": "logical", "max_wal_senders": "20", "Archive_Timeout": "5min"}
	c.Archive = &bootstrap.Archive{WALGEnv: map[string]string{"WALG_FILE_PREFIX": "/backups"}}
	r, err := bootstrap.Render(c, ec2Node("pg-a", bootstrap.RolePrimary))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"wal_keep_size": "1GB", "wal_level": "logical", "max_wal_senders": "20",
		"archive_timeout": "5min", "hot_standby": "on", "wal_log_hints": "on", "max_replication_slots": "10"} {
		if got := r.Parameters[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := r.Parameters["WAL_Keep_Size"]; ok {
		t.Error("a parameter kept its upper-case name")
	}
}

// TestRender_singleNode: one node replicates to nobody and needs no network.
func TestRender_singleNode(t *testing.T) {
	c := cluster3()
	c.Nodes = []string{"solo"}
	c.Synchronous.Number = 0
	n := bootstrap.Node{Name: "solo", Role: bootstrap.RolePrimary, Port: 5432, DataDir: "/data"}
	r, err := bootstrap.Render(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Parameters["synchronous_standby_names"]; got != "" {
		t.Errorf("synchronous_standby_names = %q, want empty", got)
	}
	for _, l := range r.HBA {
		if strings.HasPrefix(l, "host") {
			t.Errorf("pg_hba has a network line without AllowedCIDRs: %q", l)
		}
	}
}

func TestFormatConf(t *testing.T) {
	got := bootstrap.FormatConf(map[string]string{"b": `it's a \ back`, "a": "", "c": "%p"})
	want := "a = ''\nb = 'it''s a \\\\ back'\nc = '%p'\n"
	if got != want {
		t.Errorf("FormatConf = %q, want %q", got, want)
	}
}
