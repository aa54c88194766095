package bootstrap_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// Archivers of the EC2 fixtures.
const (
	walg       = "walg"
	pgbackrest = "pgbackrest"
)

// ec2IPs are the fixtures' private IPs by node name.
var ec2IPs = map[string]string{
	"pg-a": "10.0.1.10", "pg-b": "10.0.2.10", "pg-c": "10.0.3.10", "pg-d": "10.0.1.11", "pg-e": "10.0.2.11",
}

// ec2Cluster is a three-node cluster as the EC2 platform runs it: ANY 1,
// data durability required, tuned parameters, one archiver.
func ec2Cluster(archiver string, major int) bootstrap.Cluster {
	c := bootstrap.Cluster{
		Name:          "demo",
		PostgresMajor: major,
		Nodes:         []string{"pg-a", "pg-b", "pg-c"},
		Synchronous: bootstrap.Synchronous{
			Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn,
		},
		Parameters: map[string]string{"shared_buffers": "16GB", "max_connections": "400", "random_page_cost": "1.1"},
	}
	bucket := archive.Spec{Bucket: "pg-archive", Prefix: "clusters/demo", Region: "eu-west-1"}
	switch archiver {
	case walg:
		c.Archive = &bootstrap.Archive{WALGEnv: bucket.WALGEnv(), BackupOnCreate: true}
	case pgbackrest:
		c.Archive = &bootstrap.Archive{PgBackRestOptions: bucket.PgBackRestOptions(), BackupOnCreate: true}
	}
	return c
}

// ec2Host is node name of c as the EC2 platform places it: its peers in
// c's order, one zone per node.
func ec2Host(c bootstrap.Cluster, name string, disks int, arch string) bootstrap.EC2Node {
	var peers []bootstrap.Peer
	for _, o := range c.Nodes {
		if o != name {
			peers = append(peers, bootstrap.Peer{Name: o, IP: ec2IPs[o]})
		}
	}
	zone := map[string]string{"pg-a": "eu-west-1a", "pg-b": "eu-west-1b", "pg-c": "eu-west-1c", "pg-d": "eu-west-1a", "pg-e": "eu-west-1b"}[name]
	return bootstrap.EC2Node{
		Name: name, Zone: zone, PrivateIP: ec2IPs[name], Peers: peers,
		InstanceType: "m6id.4xlarge", DiskCount: disks, Architecture: arch, Region: "eu-west-1",
		AllowedCIDRs: []string{"10.0.0.0/16"},
	}
}

func TestRenderEC2_golden(t *testing.T) {
	five := ec2Cluster(walg, 18)
	five.Nodes = []string{"pg-a", "pg-b", "pg-c", "pg-d", "pg-e"}
	five.Synchronous.Number = 2
	five.Synchronous.DataDurability = bootstrap.DurabilityPreferred
	mirror := ec2Host(five, "pg-e", 2, bootstrap.ArchX86_64)
	mirror.WALG = bootstrap.WALGRelease{Version: "v3.0.9", URL: "https://mirror.example.internal/wal-g/v3.0.9/wal-g-pg-22.04-amd64",
		SHA256: strings.Repeat("ab", 32)}
	mirror.Patroni.TTL = 20
	mirror.Patroni.LoopWait = 5
	mirror.Patroni.RetryTimeout = 5

	single := ec2Cluster(pgbackrest, 15)
	single.Nodes = []string{"solo"}
	single.Synchronous.Number = 0

	for _, tc := range []struct {
		name    string
		cluster bootstrap.Cluster
		node    bootstrap.EC2Node
	}{
		// The first node: an etcd member, WAL-G, a RAID0 of four disks.
		{"ec2_walg_x86_64_4disks", ec2Cluster(walg, 16), ec2Host(ec2Cluster(walg, 16), "pg-a", 4, bootstrap.ArchX86_64)},
		// pgBackRest on one disk, arm64 (etcd 3.4 needs ETCD_UNSUPPORTED_ARCH).
		{"ec2_pgbackrest_arm64_1disk", ec2Cluster(pgbackrest, 17), ec2Host(ec2Cluster(pgbackrest, 17), "pg-b", 1, bootstrap.ArchARM64)},
		// The fifth node of five: no etcd member, preferred durability, a private WAL-G mirror.
		{"ec2_walg_5nodes_not_etcd", five, mirror},
		// One node: asynchronous, a one-member etcd.
		{"ec2_pgbackrest_single", single, bootstrap.EC2Node{Name: "solo", Zone: "eu-west-1a", PrivateIP: "10.0.1.10",
			DiskCount: 1, Architecture: bootstrap.ArchX86_64, Region: "eu-west-1", AllowedCIDRs: []string{"10.0.0.0/16"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := bootstrap.RenderEC2(tc.cluster, tc.node)
			if err != nil {
				t.Fatal(err)
			}
			header := fmt.Sprintf("# golden file of TestRenderEC2_golden/%s: go test ./internal/bootstrap/ -run TestRenderEC2_golden -update\n", tc.name)
			golden(t, filepath.Join("testdata", tc.name+".golden"), header+u.CloudConfig)
		})
	}
}

// TestRenderEC2_preventsWALOverwrite: every node's WAL-G runs with WALG_PREVENT_WAL_OVERWRITE=true, given or
// not, so that a push never replaces a segment archived with other content.
func TestRenderEC2_preventsWALOverwrite(t *testing.T) {
	for _, given := range []string{"", "true"} {
		c := ec2Cluster(walg, 16)
		delete(c.Archive.WALGEnv, bootstrap.WALGPreventWALOverwrite) // the bucket's walg_env has it: a user's may not
		if given != "" {
			c.Archive.WALGEnv[bootstrap.WALGPreventWALOverwrite] = given
		}
		u, err := bootstrap.RenderEC2(c, ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64))
		if err != nil {
			t.Fatal(err)
		}
		var env string
		for _, f := range u.Files {
			if f.Path == "/etc/wal-g/walg.env" {
				env = f.Content
			}
		}
		if !slices.Contains(strings.Split(env, "\n"), "WALG_PREVENT_WAL_OVERWRITE=true") {
			t.Errorf("given %q: the WAL-G environment lacks WALG_PREVENT_WAL_OVERWRITE=true:\n%s", given, env)
		}
	}
}

// TestRenderEC2_noSecrets: user-data names the SSM parameters and never
// holds a password; Patroni reads them from the environment file the
// secrets script writes.
func TestRenderEC2_noSecrets(t *testing.T) {
	c := ec2Cluster(walg, 16)
	n := ec2Host(c, "pg-a", 4, bootstrap.ArchX86_64)
	n.SSM.Path = "/prod/demo"
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/prod/demo/superuser-password", "/prod/demo/replication-password", "/prod/demo/restapi-password"} {
		if !strings.Contains(u.CloudConfig, p) {
			t.Errorf("user-data does not name the SSM parameter %s", p)
		}
	}
	if regexp.MustCompile(`(?i)password:`).MatchString(u.PatroniYAML) {
		t.Errorf("Patroni's YAML has a password key:\n%s", u.PatroniYAML)
	}
	unit, _ := u.File("/etc/systemd/system/pgnvme-patroni.service")
	if !strings.Contains(unit.Content, "EnvironmentFile=/run/pgnvme/patroni.env") {
		t.Errorf("the Patroni unit does not read the secrets file:\n%s", unit.Content)
	}
}

// TestRenderEC2_patroniOwnsReplication: under Patroni, nothing renders
// synchronous_standby_names, primary_conninfo or standby.signal; quorum
// mode, strictness and the cluster's parameters go to bootstrap.dcs (the
// dynamic configuration), the ones tied to the user-data's files stay local.
func TestRenderEC2_patroniOwnsReplication(t *testing.T) {
	for _, tc := range []struct {
		durability bootstrap.Durability
		number     int
		want       []string
	}{
		{bootstrap.DurabilityRequired, 1, []string{`synchronous_mode: "quorum"`, "synchronous_node_count: 1", "synchronous_mode_strict: true"}},
		{bootstrap.DurabilityPreferred, 2, []string{`synchronous_mode: "quorum"`, "synchronous_node_count: 2", "synchronous_mode_strict: false"}},
		{bootstrap.DurabilityPreferred, 0, []string{"synchronous_mode: false"}},
	} {
		c := ec2Cluster(walg, 17)
		c.Synchronous.DataDurability, c.Synchronous.Number = tc.durability, tc.number
		u, err := bootstrap.RenderEC2(c, ec2Host(c, "pg-b", 1, bootstrap.ArchX86_64))
		if err != nil {
			t.Fatal(err)
		}
		y := u.PatroniYAML
		for _, w := range append(tc.want, "failsafe_mode: true", "use_pg_rewind: true", "use_slots: true", `scope: "demo"`,
			`- "wal_g"`, `- "basebackup"`, "no_leader: true", `restore_command: "/usr/local/lib/pgnvme/walg-restore.sh %f %p"`) {
			if !strings.Contains(y, w) {
				t.Errorf("%s/%d: Patroni's YAML lacks %q:\n%s", tc.durability, tc.number, w, y)
			}
		}
		for _, k := range []string{"synchronous_standby_names", "primary_conninfo", "primary_slot_name"} {
			if strings.Contains(u.CloudConfig, k) {
				t.Errorf("user-data renders %s, which Patroni owns", k)
			}
		}
		// Only the restore wrapper reads standby.signal; nothing writes it.
		for _, f := range u.Files {
			if strings.Contains(f.Content, "standby.signal") && f.Path != "/usr/local/lib/pgnvme/walg-restore.sh" {
				t.Errorf("%s mentions standby.signal, which Patroni owns", f.Path)
			}
		}
		dcs := y[strings.Index(y, "  dcs:"):strings.Index(y, "  initdb:")]
		i := strings.Index(y, "\npostgresql:")
		if i < 0 {
			t.Fatalf("no postgresql section in the Patroni YAML:\n%s", y)
		}
		local := y[i:]
		for _, k := range []string{"max_connections", "wal_level", "max_wal_senders", "hot_standby", "wal_log_hints", "shared_buffers", "synchronous_commit", "archive_timeout"} {
			if !strings.Contains(dcs, "      "+k+":") || strings.Contains(local, "    "+k+":") {
				t.Errorf("%s is not in bootstrap.dcs.postgresql.parameters alone", k)
			}
			if _, ok := u.DynamicConfig["postgresql"].(map[string]any)["parameters"].(map[string]any)[k]; !ok {
				t.Errorf("%s is not in DynamicConfig's postgresql.parameters: %v", k, u.DynamicConfig)
			}
		}
		for _, k := range []string{"unix_socket_directories", "archive_command", "archive_mode"} {
			if strings.Contains(dcs, k+":") || !strings.Contains(local, "    "+k+":") {
				t.Errorf("%s is not in postgresql.parameters alone", k)
			}
		}
	}
}

// TestRenderEC2_etcdMembers: the first three nodes run etcd for three or
// more nodes, one member for fewer; every node's Patroni lists the members.
func TestRenderEC2_etcdMembers(t *testing.T) {
	c := ec2Cluster(walg, 16)
	c.Nodes = []string{"pg-a", "pg-b", "pg-c", "pg-d", "pg-e"}
	for _, name := range c.Nodes {
		u, err := bootstrap.RenderEC2(c, ec2Host(c, name, 2, bootstrap.ArchX86_64))
		if err != nil {
			t.Fatal(err)
		}
		member := slices.Contains([]string{"pg-a", "pg-b", "pg-c"}, name)
		_, hasScript := u.File("/usr/local/lib/pgnvme/etcd.sh")
		if u.EtcdMember != member || hasScript != member || strings.Contains(u.CloudConfig, "etcd-server") != member {
			t.Errorf("%s: etcd member %v, etcd.sh %v, etcd-server installed %v; want %v", name, u.EtcdMember, hasScript,
				strings.Contains(u.CloudConfig, "etcd-server"), member)
		}
		if !strings.Contains(u.PatroniYAML, "hosts:\n  - \"10.0.1.10:2379\"\n  - \"10.0.2.10:2379\"\n  - \"10.0.3.10:2379\"\n") {
			t.Errorf("%s: Patroni's etcd3 hosts are not the three members:\n%s", name, u.PatroniYAML)
		}
	}
	two := ec2Cluster(walg, 16)
	two.Nodes = []string{"pg-a", "pg-b"}
	u, err := bootstrap.RenderEC2(two, ec2Host(two, "pg-b", 1, bootstrap.ArchX86_64))
	if err != nil {
		t.Fatal(err)
	}
	if u.EtcdMember || !strings.Contains(u.PatroniYAML, "etcd3:\n  hosts:\n  - \"10.0.1.10:2379\"\nbootstrap:") {
		t.Errorf("two nodes: want one etcd member on pg-a:\n%s", u.PatroniYAML)
	}
}

// TestRenderEC2_mountUnitName: the mount unit the disk script writes is
// named as systemd names the mount point's unit.
func TestRenderEC2_mountUnitName(t *testing.T) {
	escape, err := exec.LookPath("systemd-escape")
	if err != nil {
		t.Fatalf("systemd-escape is needed to check mount unit names: apt-get install -y systemd (%v)", err)
	}
	c := ec2Cluster(walg, 16)
	for _, mp := range []string{"/var/lib/pgnvme", "/data", "/srv/pg-nvme/x.y", "/pgnvme_data/.hidden-ish"} {
		n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
		n.MountPoint = mp
		u, err := bootstrap.RenderEC2(c, n)
		if strings.Contains(mp, "/.") {
			if err == nil {
				t.Errorf("mount point %s with a hidden component accepted", mp)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(escape, "--path", "--suffix=mount", mp).Output()
		if err != nil {
			t.Fatal(err)
		}
		disks, _ := u.File("/usr/local/lib/pgnvme/disks.sh")
		if want := "MOUNT_UNIT=" + shellWord(strings.TrimSpace(string(out))) + "\n"; !strings.Contains(disks.Content, want) {
			t.Errorf("mount point %s: the disk script lacks %q", mp, want)
		}
	}
}

// shellWord quotes s as the renderer does for a value with a backslash.
func shellWord(s string) string {
	if strings.ContainsAny(s, `\`) {
		return "'" + s + "'"
	}
	return s
}

// TestRenderEC2_gzipFits: every rendering of the matrix fits EC2's
// user-data limit once gzipped, and the gzip is deterministic.
func TestRenderEC2_gzipFits(t *testing.T) {
	largest, which := 0, ""
	defer func() {
		t.Logf("the largest gzipped user-data: %d of %d bytes (%s)", largest, bootstrap.MaxUserDataBytes, which)
	}()
	for _, combo := range ec2Matrix() {
		u, err := bootstrap.RenderEC2(combo.cluster, combo.node)
		if err != nil {
			t.Fatalf("%s: %v", combo.name, err)
		}
		g := u.Gzip()
		if len(g) > largest {
			largest, which = len(g), combo.name
		}
		if len(g) > bootstrap.MaxUserDataBytes || string(g) != string(u.Gzip()) {
			t.Errorf("%s: gzipped user-data is %d bytes (limit %d) or not deterministic", combo.name, len(g), bootstrap.MaxUserDataBytes)
		}
	}
}

// ec2Combo is one rendering of the test matrix.
type ec2Combo struct {
	name    string
	cluster bootstrap.Cluster
	node    bootstrap.EC2Node
}

// ec2Matrix is 1 and 4 disks x WAL-G and pgBackRest x PostgreSQL 15..18 x
// arm64 and x86_64, on the first node (an etcd member).
func ec2Matrix() []ec2Combo {
	var out []ec2Combo
	for _, disks := range []int{1, 4} {
		for _, archiver := range []string{walg, pgbackrest} {
			for major := 15; major <= 18; major++ {
				for _, arch := range []string{bootstrap.ArchARM64, bootstrap.ArchX86_64} {
					c := ec2Cluster(archiver, major)
					n := ec2Host(c, "pg-a", disks, arch)
					// TLS with 4 disks: each archiver, major and architecture with and without it.
					n.TLS = disks == 4
					out = append(out, ec2Combo{
						name:    fmt.Sprintf("%ddisks_%s_pg%d_%s_tls%t", disks, archiver, major, arch, n.TLS),
						cluster: c,
						node:    n,
					})
				}
			}
		}
	}
	return out
}

// TestRenderEC2_invalid: every problem is reported with what to change.
func TestRenderEC2_invalid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster func(*bootstrap.Cluster)
		node    func(*bootstrap.EC2Node)
		want    string
	}{
		{"unknown major", func(c *bootstrap.Cluster) { c.PostgresMajor = 12 }, nil, "PostgreSQL major version 12 is not supported"},
		{"no disk", nil, func(n *bootstrap.EC2Node) { n.DiskCount = 0 }, "Instance type m6id.4xlarge has no instance-store NVMe disk"},
		{"no disk, no type", nil, func(n *bootstrap.EC2Node) { n.DiskCount, n.InstanceType = 0, "" }, "give the instance type's disk count"},
		{"too many disks", nil, func(n *bootstrap.EC2Node) { n.DiskCount = 25 }, "no instance type has more than 24"},
		{"architecture", nil, func(n *bootstrap.EC2Node) { n.Architecture = "amd64" }, `use "x86_64" or "arm64"`},
		{"missing peer", nil, func(n *bootstrap.EC2Node) { n.Peers = n.Peers[:1] }, "list every other node of the cluster once, in priority order: [pg-b, pg-c]"},
		{"peers out of order", nil, func(n *bootstrap.EC2Node) { n.Peers[0], n.Peers[1] = n.Peers[1], n.Peers[0] }, "in priority order"},
		{"self as peer", nil, func(n *bootstrap.EC2Node) { n.Peers = append(n.Peers, bootstrap.Peer{Name: "pg-a", IP: "10.0.9.9"}) }, "list every other node"},
		{"duplicate IP", nil, func(n *bootstrap.EC2Node) { n.Peers[0].IP = n.PrivateIP }, "have the same private IP"},
		{"IPv6", nil, func(n *bootstrap.EC2Node) { n.PrivateIP = "fd00::1" }, "give its ENI's private IPv4 address"},
		{"loopback IP", nil, func(n *bootstrap.EC2Node) { n.PrivateIP = "127.0.0.1" }, "which other machines cannot reach"},
		{"peer outside the networks", nil, func(n *bootstrap.EC2Node) { n.Peers[1].IP = "192.168.1.5" }, "Peer pg-c (192.168.1.5) is outside the allowed networks"},
		{"no networks", nil, func(n *bootstrap.EC2Node) { n.AllowedCIDRs = nil }, "allows no network"},
		{"loopback network", nil, func(n *bootstrap.EC2Node) { n.AllowedCIDRs = append(n.AllowedCIDRs, "127.0.0.0/8") }, "allows the loopback network"},
		{"zone", nil, func(n *bootstrap.EC2Node) { n.Zone = "" }, "give its zone"},
		{"region", nil, func(n *bootstrap.EC2Node) { n.Region = "Ireland" }, "give the AWS region"},
		{"FIRST", func(c *bootstrap.Cluster) { c.Synchronous.Method = quorum.MethodFirst }, nil, `use synchronous method "any"`},
		{"node name", func(c *bootstrap.Cluster) { c.Nodes[2] = "PG_C" }, func(n *bootstrap.EC2Node) { n.Peers[1].Name = "PG_C" }, `The node name "PG_C" cannot name an etcd and Patroni member`},
		{"no archive", func(c *bootstrap.Cluster) { c.Archive = nil }, nil, "needs an archive"},
		{"WAL-G secret", func(c *bootstrap.Cluster) { c.Archive.WALGEnv["AWS_SECRET_ACCESS_KEY"] = "abc" }, nil, "AWS_SECRET_ACCESS_KEY holds a secret"},
		{"WAL-G libsodium key", func(c *bootstrap.Cluster) { c.Archive.WALGEnv["WALG_LIBSODIUM_KEY"] = "abc" }, nil, "WALG_LIBSODIUM_KEY holds a secret"},
		{"WAL-G access key", func(c *bootstrap.Cluster) { c.Archive.WALGEnv["WALG_S3_PREFIX"] = "s3://b/AKIAABCDEFGHIJKLMNOP" }, nil, "holds an AWS access key ID"},
		{"WAL-G platform variable", func(c *bootstrap.Cluster) { c.Archive.WALGEnv["WALG_PREFETCH_DIR"] = "/tmp" }, nil, "WALG_PREFETCH_DIR is set by the EC2 platform"},
		{"WAL-G overwrite allowed", func(c *bootstrap.Cluster) { c.Archive.WALGEnv["WALG_PREVENT_WAL_OVERWRITE"] = "false" }, nil, `WALG_PREVENT_WAL_OVERWRITE is "false"; pgnvme always sets it true`},
		{"pgBackRest secret", func(c *bootstrap.Cluster) {
			c.Archive = &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-s3-key-secret": "x"}}
		}, nil, "repo1-s3-key-secret holds a secret"},
		{"pgBackRest cipher", func(c *bootstrap.Cluster) {
			c.Archive = &bootstrap.Archive{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-cipher-pass": "x"}}
		}, nil, "repo1-cipher-pass holds a secret"},
		{"password as a parameter name", nil, func(n *bootstrap.EC2Node) { n.SSM.SuperuserPassword = "hunter2!" }, "it looks like a value"},
		{"parameter outside the path", nil, func(n *bootstrap.EC2Node) { n.SSM.RESTAPIPassword = "/other/restapi" }, "outside the cluster's path /pgnvme/demo"},
		{"same parameter twice", nil, func(n *bootstrap.EC2Node) { n.SSM.RESTAPIPassword = "/pgnvme/demo/superuser-password" }, "give each password its own parameter"},
		{"takeover as a value", nil, func(n *bootstrap.EC2Node) { n.SSM.Takeover = "pg-b 0/11016C80" }, "give a name under /pgnvme/demo/"},
		{"takeover outside the path", nil, func(n *bootstrap.EC2Node) { n.SSM.Takeover = "/other/takeover" }, "The takeover instruction parameter /other/takeover is outside the cluster's path"},
		{"takeover in a password's parameter", nil, func(n *bootstrap.EC2Node) { n.SSM.Takeover = "/pgnvme/demo/restapi-password" }, "give the takeover instruction its own parameter"},
		{"reserved SSM path", nil, func(n *bootstrap.EC2Node) { n.SSM.Path = "/aws/demo" }, "which SSM reserves"},
		{"Patroni timings", nil, func(n *bootstrap.EC2Node) { n.Patroni.TTL, n.Patroni.LoopWait, n.Patroni.RetryTimeout = 25, 10, 10 }, "loop_wait + 2 x retry_timeout <= ttl"},
		{"Patroni ttl", nil, func(n *bootstrap.EC2Node) { n.Patroni.TTL = 10 }, "use 20 or more"},
		{"same users", nil, func(n *bootstrap.EC2Node) { n.Patroni.ReplicationUser = "postgres" }, "give the replication user its own role"},
		{"port clash", nil, func(n *bootstrap.EC2Node) { n.Patroni.RESTAPIPort = 5432 }, "for both PostgreSQL and Patroni's REST API"},
		{"data directory level", nil, func(n *bootstrap.EC2Node) { n.DataDir = "/var/lib/pgnvme/pg/data" }, "exactly one level below the mount point"},
		{"data directory elsewhere", nil, func(n *bootstrap.EC2Node) { n.DataDir = "/var/lib/postgresql/data" }, "exactly one level below the mount point"},
		{"mount point", nil, func(n *bootstrap.EC2Node) { n.MountPoint = "/var" }, "hiding what the system keeps there"},
		{"path with a space", nil, func(n *bootstrap.EC2Node) { n.MountPoint = "/pg data" }, "use an absolute path of letters"},
		{"etcd on the instance store", nil, func(n *bootstrap.EC2Node) { n.Etcd.DataDir = "/var/lib/pgnvme/etcd" }, "keep it on the root volume"},
		{"even etcd", nil, func(n *bootstrap.EC2Node) { n.Etcd.Members = 2 }, "use 1, 3 or 5"},
		{"etcd members beyond nodes", nil, func(n *bootstrap.EC2Node) { n.Etcd.Members = 5 }, "at most one member per node"},
		{"WAL-G mirror without SHA-256", nil, func(n *bootstrap.EC2Node) { n.WALG.URL = "https://mirror.internal/wal-g" }, "has no SHA-256"},
		{"WAL-G version without SHA-256", nil, func(n *bootstrap.EC2Node) { n.WALG.Version = "v3.0.9" }, "give the binary's SHA-256"},
		{"WAL-G SHA-256", nil, func(n *bootstrap.EC2Node) { n.WALG.SHA256 = "ABC" }, "not 64 lower-case hex digits"},
		{"WAL-G URL", nil, func(n *bootstrap.EC2Node) { n.WALG.URL, n.WALG.SHA256 = "ftp://x/y'z", strings.Repeat("0", 64) }, "download URL"},
		{"glob", nil, func(n *bootstrap.EC2Node) { n.InstanceStoreGlob = "/dev/disk/by-id/*; rm -rf /" }, "instance-store pattern"},
		{"not a node", nil, func(n *bootstrap.EC2Node) { n.Name = "pg-z" }, `The node "pg-z" is not one of the cluster's nodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ec2Cluster(walg, 16)
			if tc.cluster != nil {
				tc.cluster(&c)
			}
			n := ec2Host(ec2Cluster(walg, 16), "pg-a", 4, bootstrap.ArchX86_64)
			if tc.node != nil {
				tc.node(&n)
			}
			_, err := bootstrap.RenderEC2(c, n)
			if err == nil {
				t.Fatalf("RenderEC2 accepted it; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nlacks %q", err, tc.want)
			}
			if lines := strings.Count(err.Error(), "\n") + 1; lines != 1 && tc.name != "self as peer" && tc.name != "node name" {
				t.Errorf("%d problems reported for one mistake:\n%s", lines, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasSuffix(line, ".") {
					t.Errorf("error line %q is not a full sentence", line)
				}
			}
		})
	}
}

// TestEC2Node_WithDefaults: zero values take their documented defaults,
// and the WAL-G pin exists only for the default release.
func TestEC2Node_WithDefaults(t *testing.T) {
	c := ec2Cluster(walg, 16)
	n := bootstrap.EC2Node{Architecture: bootstrap.ArchARM64}.WithDefaults(c)
	for _, tc := range []struct{ got, want any }{
		{n.Port, 5432}, {n.MountPoint, "/var/lib/pgnvme"}, {n.DataDir, "/var/lib/pgnvme/data"},
		{n.InstanceStoreGlob, "/dev/disk/by-id/*NVMe_Instance_Storage_*"}, {n.DiskWaitSeconds, 60},
		{n.Etcd.Members, 3}, {n.Etcd.ClientPort, 2379}, {n.Etcd.PeerPort, 2380}, {n.Etcd.DataDir, "/var/lib/etcd/pgnvme"},
		{n.Patroni.TTL, 30}, {n.Patroni.LoopWait, 10}, {n.Patroni.RetryTimeout, 10}, {n.Patroni.MaximumLagOnFailover, int64(1 << 20)},
		{n.Patroni.RESTAPIPort, 8008}, {n.Patroni.RESTAPIUser, "patroni"}, {n.Patroni.Superuser, "postgres"}, {n.Patroni.ReplicationUser, "replicator"},
		{n.SSM.Path, "/pgnvme/demo"}, {n.SSM.SuperuserPassword, "/pgnvme/demo/superuser-password"},
		{n.SSM.ReplicationPassword, "/pgnvme/demo/replication-password"}, {n.SSM.RESTAPIPassword, "/pgnvme/demo/restapi-password"},
		{n.SSM.Takeover, "/pgnvme/demo/takeover"},
		{n.WALG.Version, "v3.0.8"}, {n.WALG.URL, "https://github.com/wal-g/wal-g/releases/download/v3.0.8/wal-g-pg-22.04-aarch64"},
		{n.WALG.SHA256, "794d1a81f0c27825a1603bd39c0f2cf5dd8bed7cc36b598ca05d8d963c3d5fcf"},
	} {
		if tc.got != tc.want {
			t.Errorf("default %v, want %v", tc.got, tc.want)
		}
	}
	x := bootstrap.EC2Node{Architecture: bootstrap.ArchX86_64}.WithDefaults(c)
	if x.WALG.SHA256 != "f30544c5ce93cf83b87578e3c4a2e9c0e0ffc3d160ef89ecddaf75f397d98deb" || !strings.HasSuffix(x.WALG.URL, "/wal-g-pg-22.04-amd64") {
		t.Errorf("x86_64 WAL-G pin: %+v", x.WALG)
	}
	if m := (bootstrap.EC2Node{WALG: bootstrap.WALGRelease{URL: "https://mirror/wal-g"}, Architecture: bootstrap.ArchX86_64}).WithDefaults(c); m.WALG.SHA256 != "" {
		t.Errorf("a mirror URL got the pinned SHA-256 %s; it must be given", m.WALG.SHA256)
	}
	small := c
	small.Nodes = []string{"pg-a", "pg-b"}
	if got := (bootstrap.EC2Node{}).WithDefaults(small).Etcd.Members; got != 1 {
		t.Errorf("two nodes: %d etcd members, want 1", got)
	}
}
