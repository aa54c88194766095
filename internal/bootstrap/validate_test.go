package bootstrap_test

import (
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// checkSentences fails when a line of err is not a sentence: every problem
// starts with a capital letter or a parameter name and ends with a full stop.
func checkSentences(t *testing.T, err error) {
	t.Helper()
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasSuffix(line, ".") || !strings.Contains(line, ";") {
			t.Errorf("error %q is not a sentence that says what to change (want \"...; do this.\")", line)
		}
	}
}

func TestClusterValidate(t *testing.T) {
	if err := cluster3().Validate(); err != nil {
		t.Fatalf("the base cluster is invalid: %v", err)
	}
	withArchive := func(a bootstrap.Archive) func(*bootstrap.Cluster) {
		return func(c *bootstrap.Cluster) { c.Archive = &a }
	}
	for _, tc := range []struct {
		name string
		edit func(*bootstrap.Cluster)
		want []string // substrings of the error, in any order
	}{
		{"empty name", func(c *bootstrap.Cluster) { c.Name = "" }, []string{`The cluster name ""`}},
		{"name with a space", func(c *bootstrap.Cluster) { c.Name = "my cluster" }, []string{`The cluster name "my cluster" is not valid`}},
		{"major too old", func(c *bootstrap.Cluster) { c.PostgresMajor = 12 }, []string{"PostgreSQL major version 12 is not supported; use 13 to 18."}},
		{"no nodes", func(c *bootstrap.Cluster) { c.Nodes = nil; c.Synchronous.Number = 0 }, []string{"The cluster has 0 nodes; give it 1 to 9."}},
		{"ten nodes", func(c *bootstrap.Cluster) {
			c.Nodes = []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
		}, []string{"The cluster has 10 nodes; give it 1 to 9."}},
		{"duplicate name", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "pg-b", "pg-a"} }, []string{`The node name "pg-a" is listed twice`}},
		{"names differing in case", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "PG-A", "pg-c"} },
			[]string{`The node names "pg-a" and "PG-A" differ only in letter case`}},
		{"empty node name", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "", "pg-c"} }, []string{"A node name is empty"}},
		{"wildcard", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "*", "pg-c"} }, []string{`The node name "*" means every standby`}},
		{"name too long", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", strings.Repeat("x", 64), "pg-c"} }, []string{"is 64 bytes long; use at most 63"}},
		{"non-ASCII name", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "pg-é", "pg-c"} }, []string{"outside printable ASCII"}},
		{"control character", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", "pg\tb", "pg-c"} }, []string{"outside printable ASCII"}},
		{"leading space", func(c *bootstrap.Cluster) { c.Nodes = []string{"pg-a", " pg-b", "pg-c"} }, []string{"starts or ends with a space"}},
		{"bad method", func(c *bootstrap.Cluster) { c.Synchronous.Method = "ANY" }, []string{`The synchronous method "ANY" is not supported; use "any"`}},
		{"bad durability", func(c *bootstrap.Cluster) { c.Synchronous.DataDurability = "strict" }, []string{`The data durability "strict" is not supported`}},
		{"bad commit", func(c *bootstrap.Cluster) { c.Synchronous.Commit = "true" }, []string{`synchronous_commit "true" is not supported; use one of on, remote_apply`}},
		{"negative number", func(c *bootstrap.Cluster) { c.Synchronous.Number = -1 }, []string{"The number of synchronous standbys is -1"}},
		{"number equals node count, required", func(c *bootstrap.Cluster) { c.Synchronous.Number = 3 },
			[]string{`The number of synchronous standbys (3) is more than the cluster's 2 standbys, so with data durability "required" no commit could complete; lower the number to at most 2`}},
		{"reserved parameter", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"port": "5433"} },
			[]string{`The parameter "port" is set by the platform (the node's port); remove it from the parameters.`}},
		{"reserved parameter in upper case", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"Synchronous_Standby_Names": "*"} },
			[]string{`The parameter "Synchronous_Standby_Names" is set by the synchronous block`}},
		{"archive_command", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"archive_command": "/bin/true"} },
			[]string{`The parameter "archive_command" is set by the archive block`}},
		{"recovery target", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"recovery_target_time": "2024-01-01"} },
			[]string{`it would stop the standbys`}},
		{"bad parameter name", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"work mem": "4MB"} },
			[]string{`The parameter name "work mem" is not a PostgreSQL parameter name`}},
		{"newline in value", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"work_mem": "4MB\nport = 1"} },
			[]string{`The value of parameter "work_mem" contains a line break`}},
		{"same parameter twice", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"work_mem": "4MB", "WORK_MEM": "8MB"} },
			[]string{`The parameters "WORK_MEM" and "work_mem" are the same parameter`}},
		{"wal_level minimal", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"wal_level": "minimal"} },
			[]string{`wal_level "minimal" cannot feed standbys or an archive; use "replica" or "logical"`}},
		{"max_wal_senders too low", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"max_wal_senders": "3"} },
			[]string{`max_wal_senders "3" is too low for 2 standbys; use at least 4`}},
		{"max_wal_senders not a number", func(c *bootstrap.Cluster) { c.Parameters = map[string]string{"max_wal_senders": "ten"} },
			[]string{`max_wal_senders "ten" is too low`}},
		{"archive with neither", withArchive(bootstrap.Archive{}),
			[]string{"The archive has neither pgBackRest options nor a WAL-G environment; give exactly one of them."}},
		{"archive with both", withArchive(bootstrap.Archive{
			PgBackRestOptions: map[string]string{"repo1-type": "posix"}, WALGEnv: map[string]string{"WALG_FILE_PREFIX": "/b"},
		}), []string{"The archive has both pgBackRest options and a WAL-G environment; give exactly one of them."}},
		{"pgBackRest node option", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"pg1-path": "/data"}}),
			[]string{`The pgBackRest option "pg1-path" belongs to one node`}},
		{"pgBackRest log-path", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"log-path": "/log"}}),
			[]string{`The pgBackRest option "log-path" is set from the node's PgBackRestLogDir`}},
		{"pgBackRest option name", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"Repo1_Path": "/r"}}),
			[]string{`The pgBackRest option name "Repo1_Path" is not valid`}},
		{"pgBackRest value with newline", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/r\n[x]"}}),
			[]string{`The value of pgBackRest option "repo1-path" contains a line break`}},
		{"pgBackRest value with trailing space", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-path": "/r "}}),
			[]string{`starts or ends with white space`}},
		{"bad stanza", withArchive(bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-type": "posix"}, Stanza: "a/b"}),
			[]string{`The pgBackRest stanza "a/b" is not valid`}},
		{"WAL-G lower-case name", withArchive(bootstrap.Archive{WALGEnv: map[string]string{"walg_s3_prefix": "s3://b"}}),
			[]string{`The WAL-G variable name "walg_s3_prefix" is not valid`, "The WAL-G environment names no storage"}},
		{"WAL-G value needing quotes", withArchive(bootstrap.Archive{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b", "X": "a b"}}),
			[]string{"The value of WAL-G variable X has characters that would need quoting"}},
		{"WAL-G without storage", withArchive(bootstrap.Archive{WALGEnv: map[string]string{"AWS_REGION": "eu-west-1"}}),
			[]string{"The WAL-G environment names no storage; set WALG_S3_PREFIX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster3()
			tc.edit(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted the cluster")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			checkSentences(t, err)
			if _, rerr := bootstrap.Render(c, ec2Node("pg-a", bootstrap.RolePrimary)); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("Render error = %v, want Validate's", rerr)
			}
		})
	}
}

func TestClusterValidate_accepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*bootstrap.Cluster)
	}{
		{"preferred with more synchronous standbys than standbys", func(c *bootstrap.Cluster) {
			c.Synchronous.DataDurability = bootstrap.DurabilityPreferred
			c.Synchronous.Number = 5
		}},
		{"asynchronous", func(c *bootstrap.Cluster) { c.Synchronous.Number = 0 }},
		{"one node", func(c *bootstrap.Cluster) { c.Nodes = []string{"solo"}; c.Synchronous.Number = 0 }},
		{"nine nodes, FIRST 8", func(c *bootstrap.Cluster) {
			c.Nodes = []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
			c.Synchronous.Method = quorum.MethodFirst
			c.Synchronous.Number = 8
		}},
		{"keyword and odd names", func(c *bootstrap.Cluster) { c.Nodes = []string{"any", "FIRST", `a "b" 'c' \d`} }},
		{"extension parameter, logical", func(c *bootstrap.Cluster) {
			c.Parameters = map[string]string{"pg_stat_statements.max": "10000", "wal_level": "logical", "max_wal_senders": "4"}
		}},
		{"no parameters", func(c *bootstrap.Cluster) { c.Parameters = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster3()
			tc.edit(&c)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRender_nodeErrors(t *testing.T) {
	pgbr := cluster3()
	pgbr.Archive = &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-type": "posix"}}
	walg := cluster3()
	walg.Archive = &bootstrap.Archive{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b"}}
	for _, tc := range []struct {
		name    string
		cluster bootstrap.Cluster
		edit    func(*bootstrap.Node)
		want    []string
	}{
		{"unknown node", cluster3(), func(n *bootstrap.Node) { n.Name = "pg-z" },
			[]string{`The node "pg-z" is not one of the cluster's nodes (pg-a, pg-b, pg-c); render one of them.`}},
		{"node name in another case", cluster3(), func(n *bootstrap.Node) { n.Name = "PG-A" },
			[]string{`The node "PG-A" is not one of the cluster's nodes`}},
		{"bad role", cluster3(), func(n *bootstrap.Node) { n.Role = "leader" }, []string{`Node pg-a has role "leader"; use "primary" or "standby".`}},
		{"bad port", cluster3(), func(n *bootstrap.Node) { n.Port = 0 }, []string{"Node pg-a has port 0; use 1 to 65535."}},
		{"relative data directory", cluster3(), func(n *bootstrap.Node) { n.DataDir = "data" },
			[]string{`Node pg-a has data directory "data"; use an absolute path below /.`}},
		{"no data directory", cluster3(), func(n *bootstrap.Node) { n.DataDir = "" },
			[]string{"Node pg-a has no data directory; set it to an absolute path."}},
		{"root socket directory", cluster3(), func(n *bootstrap.Node) { n.SocketDir = "/" },
			[]string{`Node pg-a has socket directory "/"; use an absolute path below /.`}},
		{"pgBackRest without config path", pgbr, func(n *bootstrap.Node) { n.PgBackRestConfigPath = "" },
			[]string{"Node pg-a has no pgBackRest configuration path"}},
		{"WAL-G without env path", walg, func(n *bootstrap.Node) { n.WALGEnvPath = "" },
			[]string{"Node pg-a has no WAL-G environment file path"}},
		{"relative archiver", walg, func(n *bootstrap.Node) { n.ArchiverPath = "bin/wal-g" },
			[]string{`Node pg-a has archiver path "bin/wal-g"; use an absolute path`}},
		{"no replication user", cluster3(), func(n *bootstrap.Node) { n.ReplicationUser = "" },
			[]string{"Node pg-a has no replication user; set the role standbys connect as."}},
		{"quoted replication user", cluster3(), func(n *bootstrap.Node) { n.ReplicationUser = "repl user" },
			[]string{`Node pg-a has replication user "repl user"; use a plain identifier`}},
		{"no networks", cluster3(), func(n *bootstrap.Node) { n.AllowedCIDRs = nil },
			[]string{"Node pg-a allows no network; list the CIDRs"}},
		{"bare address", cluster3(), func(n *bootstrap.Node) { n.AllowedCIDRs = []string{"10.0.0.5"} },
			[]string{`Node pg-a allows "10.0.0.5", which is not a CIDR; write an address with its prefix length`}},
		{"standby without primary", cluster3(), func(n *bootstrap.Node) {
			n.Role = bootstrap.RoleStandby
			n.PrimaryHost, n.PrimaryPort = "", 0
		}, []string{"Standby pg-a has no primary host", "Standby pg-a has primary port 0"}},
		{"primary host with a newline", cluster3(), func(n *bootstrap.Node) {
			n.Role = bootstrap.RoleStandby
			n.PrimaryHost, n.PrimaryPort = "a\nb", 5432
		}, []string{"with a control character"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := ec2Node("pg-a", bootstrap.RolePrimary)
			tc.edit(&n)
			_, err := bootstrap.Render(tc.cluster, n)
			if err == nil {
				t.Fatal("Render accepted the node")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			checkSentences(t, err)
		})
	}
}

func TestReservedParameters(t *testing.T) {
	r := bootstrap.ReservedParameters()
	for _, k := range []string{"port", "listen_addresses", "primary_conninfo", "synchronous_standby_names", "archive_command", "hot_standby"} {
		if r[k] == "" {
			t.Errorf("%s is not reserved", k)
		}
	}
	r["port"] = "changed"
	if bootstrap.ReservedParameters()["port"] == "changed" {
		t.Error("ReservedParameters returns the package's own map")
	}
}
