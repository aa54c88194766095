package bootstrap_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TestRenderEC2_tls: with TLS the node's pg_hba refuses every connection without TLS and authenticates
// replication by certificate, Patroni's REST API serves https and verifies nothing else's certificate,
// Patroni reaches etcd over https with the node's certificate, replication verifies the primary
// (verify-full), etcd's members and clients present certificates, and the scripts reach etcd and the REST
// API over TLS. Without TLS none of it appears.
func TestRenderEC2_tls(t *testing.T) {
	c := ec2Cluster(pgbackrest, 15)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	plain, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	n.TLS = true
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	file := func(u bootstrap.UserData, suffix string) string {
		for _, f := range u.Files {
			if strings.HasSuffix(f.Path, suffix) {
				return f.Content
			}
		}
		return ""
	}
	for _, want := range []string{
		"hostnossl all          all              0.0.0.0/0                reject",
		"hostnossl replication  all              0.0.0.0/0                reject",
		"hostssl replication  replicator       10.0.0.0/16              cert",
		"hostssl all          pgnvme           10.0.0.0/16              cert",
		"hostssl all          all              10.0.0.0/16              scram-sha-256",
		"certfile: /etc/pgnvme/tls/node.crt",
		"keyfile: /etc/pgnvme/tls/node.key",
		"protocol: https",
		"cacert: /etc/pgnvme/tls/ca.crt",
		"cert: /etc/pgnvme/tls/node.crt",
		"sslmode: verify-full",
		"sslcert: /etc/pgnvme/tls/replication.crt",
		"ssl: on",
		"ssl_cert_file: /etc/pgnvme/tls/node.crt",
		"ssl_min_protocol_version: TLSv1.2",
	} {
		if !strings.Contains(strings.ReplaceAll(u.PatroniYAML, `"`, ""), want) {
			t.Errorf("Patroni's configuration with TLS lacks %q", want)
		}
		if strings.Contains(strings.ReplaceAll(plain.PatroniYAML, `"`, ""), want) {
			t.Errorf("Patroni's configuration without TLS has %q", want)
		}
	}
	if strings.Contains(u.PatroniYAML, "verify_client") {
		t.Error("the REST API should not ask clients for certificates (the provider authenticates with the password, over TLS)")
	}
	env := file(u, "/etcd.env")
	for _, want := range []string{"ETCD_LISTEN_CLIENT_URLS=https://10.0.1.10:2379", "ETCD_INITIAL_ADVERTISE_PEER_URLS=https://10.0.1.10:2380",
		"ETCD_CLIENT_CERT_AUTH=true", "ETCD_PEER_CLIENT_CERT_AUTH=true", "ETCD_TRUSTED_CA_FILE=/etc/pgnvme/tls/ca.crt",
		"ETCD_CERT_FILE=/etc/pgnvme/tls/node.crt", "ETCD_INITIAL_CLUSTER=pg-a=https://"} {
		if !strings.Contains(env, want) {
			t.Errorf("etcd's settings with TLS lack %q:\n%s", want, env)
		}
	}
	if strings.Contains(file(plain, "/etcd.env"), "https://") || strings.Contains(file(plain, "/etcd.env"), "CERT") {
		t.Error("etcd's settings without TLS mention TLS")
	}
	for script, want := range map[string]string{
		"/etcd.sh":     "--cacert=/etc/pgnvme/tls/ca.crt --cert=/etc/pgnvme/tls/node.crt --key=/etc/pgnvme/tls/node.key",
		"/takeover.sh": "--cacert=/etc/pgnvme/tls/ca.crt",
		"/backup.sh":   "--cacert /etc/pgnvme/tls/ca.crt",
	} {
		if !strings.Contains(file(u, script), want) {
			t.Errorf("%s with TLS lacks %q", script, want)
		}
		if strings.Contains(file(plain, script), "--cacert") {
			t.Errorf("%s without TLS passes --cacert", script)
		}
	}
	if !strings.Contains(file(u, "/backup.sh"), "https://10.0.1.10:8008/primary") {
		t.Error("backup.sh should ask the REST API over https")
	}
	if !strings.Contains(file(u, "/secrets.sh"), "--tls-refresh") || strings.Contains(file(plain, "/secrets.sh"), "tls") ||
		file(u, "/pgnvme-tls.timer") == "" || file(plain, "/pgnvme-tls.timer") != "" {
		t.Error("the TLS part of secrets.sh and its timer belong to TLS nodes only")
	}
	if !strings.Contains(file(u, "/pgnvme-etcd.service"), "Requires=pgnvme-secrets.service") {
		t.Error("etcd starts after the TLS files are written")
	}
	if strings.Contains(u.CloudConfig, "PRIVATE KEY") {
		t.Error("the user-data holds a private key")
	}
}

// TestTLSBundle: a bundle reads back into its parts; what is not one is refused, saying why.
func TestTLSBundle(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("pgnvme test", now)
	if err != nil {
		t.Fatal(err)
	}
	member, err := pki.Issue(ca, pki.Subject{CommonName: "pg-a", IPs: []net.IP{net.ParseIP("10.0.1.10")}}, pki.Member, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	repl, err := pki.Reissue(ca, member.KeyPEM, pki.Subject{CommonName: "replicator"}, pki.Client, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := bootstrap.TLSFiles{Key: member.KeyPEM, Member: member.CertPEM, Replication: repl.CertPEM, CA: ca.CertPEM}
	b, err := bootstrap.TLSBundle(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 {
		t.Errorf("the bundle is %d bytes, more than a standard SSM parameter holds", len(b))
	}
	got, err := bootstrap.ParseTLSBundle(b)
	if err != nil || string(got.Key) != string(f.Key) || string(got.Member) != string(f.Member) || string(got.Replication) != string(f.Replication) || string(got.CA) != string(f.CA) {
		t.Fatalf("the bundle does not read back: %v", err)
	}
	for name, bad := range map[string]string{
		"no key":       string(f.Member) + string(f.Replication) + string(f.CA),
		"two certs":    string(f.Key) + string(f.Member) + string(f.CA),
		"junk":         b + "junk\n",
		"another type": b + "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n",
	} {
		if _, err := bootstrap.ParseTLSBundle(bad); err == nil {
			t.Errorf("%s: read as a bundle", name)
		}
	}
}

// TestTLSBundle_chain: a bundle whose authority has a chain (a subordinate ACM Private CA's) reads back with
// the chain in its CA part, and the rendered secrets.sh's split writes the authority and its chain to
// ca.crt, the key and the two leaves each to their own file.
func TestTLSBundle_chain(t *testing.T) {
	now := time.Now()
	ca, _ := pki.NewCA("issuing", now)
	root, _ := pki.NewCA("root", now)
	member, err := pki.Issue(ca, pki.Subject{CommonName: "pg-a", IPs: []net.IP{net.ParseIP("10.0.1.10")}}, pki.Member, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	repl, _ := pki.Reissue(ca, member.KeyPEM, pki.Subject{CommonName: "replicator"}, pki.Client, now, time.Hour)
	chain := append(append([]byte{}, ca.CertPEM...), root.CertPEM...)
	b, err := bootstrap.TLSBundle(bootstrap.TLSFiles{Key: member.KeyPEM, Member: member.CertPEM, Replication: repl.CertPEM, CA: chain})
	if err != nil {
		t.Fatal(err)
	}
	got, err := bootstrap.ParseTLSBundle(b)
	if err != nil || string(got.CA) != string(chain) || string(got.Member) != string(member.CertPEM) {
		t.Fatalf("the bundle with a chain does not read back: %v\n%s", err, got.CA)
	}

	c := ec2Cluster(pgbackrest, 15)
	n := ec2Host(c, "pg-a", 1, bootstrap.ArchX86_64)
	n.TLS = true
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		t.Fatal(err)
	}
	script := ""
	for _, f := range u.Files {
		if strings.HasSuffix(f.Path, "/secrets.sh") {
			script = f.Content
		}
	}
	m := regexp.MustCompile(`(?s)awk -v d="\$new" '(.*?)' \|\|`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("no bundle split in secrets.sh:\n%s", script)
	}
	dir := t.TempDir()
	cmd := exec.Command("awk", "-v", "d="+dir, m[1])
	cmd.Stdin = strings.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the split: %v\n%s", err, out)
	}
	for file, want := range map[string][]byte{"node.key": member.KeyPEM, "node.crt": member.CertPEM, "replication.crt": repl.CertPEM, "ca.crt": chain} {
		if have, err := os.ReadFile(filepath.Join(dir, file)); err != nil || strings.TrimSpace(string(have)) != strings.TrimSpace(string(want)) {
			t.Errorf("%s: %v\n%s\nwant\n%s", file, err, have, want)
		}
	}
}
