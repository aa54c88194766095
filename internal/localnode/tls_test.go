package localnode_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// writeTLS issues a CA, a server certificate for 127.0.0.1 and a client certificate for the superuser
// into dir (owned by the run user, keys 0600) and returns them as a node's TLS.
func writeTLS(t *testing.T, e *localnode.Engine, dir, node string) *localnode.TLS {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("pgnvme localnode test", now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := pki.Issue(ca, pki.Subject{CommonName: node, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}, pki.Server, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := pki.Issue(ca, pki.Subject{CommonName: e.Superuser()}, pki.Client, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.MkdirAllOwned(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tls := &localnode.TLS{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"),
		ClientCertFile: filepath.Join(dir, "client.crt"), ClientKeyFile: filepath.Join(dir, "client.key")}
	for path, data := range map[string][]byte{tls.CAFile: ca.CertPEM, tls.CertFile: server.CertPEM, tls.KeyFile: server.KeyPEM,
		tls.ClientCertFile: client.CertPEM, tls.ClientKeyFile: client.KeyPEM} {
		if err := e.WriteFileOwned(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tls
}

// TestLocalTLS: a primary and a standby with TLS. The standby's copy (pg_basebackup) and its streaming
// connection authenticate by client certificate over TLS (pg_stat_ssl on the primary shows the version,
// cipher and the certificate's common name for the walsender), the engine's own psql connects over TLS, a
// connection without TLS is refused, and a client trusting another CA is refused under verify-full.
func TestLocalTLS(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	base := baseDir(t)
	ports := acctest.FreePorts(t, 2)
	tls := writeTLS(t, e, filepath.Join(base, "tls"), "node")
	primary := localnode.Node{Name: "primary", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: ports[0], DataDir: filepath.Join(base, "primary"), TLS: tls}
	standby := localnode.Node{Name: "standby", Role: localnode.RoleStandby, Host: "127.0.0.1", Port: ports[1], DataDir: filepath.Join(base, "standby"), TLS: tls}
	t.Cleanup(func() {
		for _, n := range []localnode.Node{primary, standby} {
			if err := e.Destroy(context.Background(), n); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	if err := e.InitPrimary(ctx, primary, map[string]string{"shared_buffers": "32MB"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateStandby(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, standby); err != nil {
		t.Fatal(err)
	}
	waitStreaming(t, e, primary, "standby")

	row := psql(t, e, primary, "SELECT s.ssl, s.version, s.cipher, coalesce(s.client_dn, '') FROM pg_stat_ssl s JOIN pg_stat_replication r USING (pid) WHERE r.application_name = 'standby'")
	t.Logf("the standby's streaming connection (pg_stat_ssl): %s", row)
	f := strings.Split(row, "|")
	if len(f) != 4 || f[0] != "t" || !strings.HasPrefix(f[1], "TLSv1.") || f[2] == "" || f[3] != "/O=pgnvme/CN="+e.Superuser() {
		t.Errorf("the standby's streaming connection: pg_stat_ssl %q; want TLS with the client certificate of %s", row, e.Superuser())
	}
	if got := psql(t, e, primary, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"); got != "t" {
		t.Errorf("the engine's psql connection: ssl = %s; want t", got)
	}
	if got := psql(t, e, standby, "SELECT current_setting('ssl') || ' ' || current_setting('ssl_min_protocol_version')"); got != "on TLSv1.2" {
		t.Errorf("the standby's settings: %s; want ssl on, TLSv1.2 at least", got)
	}

	client := func(env ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir(), "psql"), "-X", "-A", "-t", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", e.Superuser(), "-d", "postgres", "-c", "SELECT 1")
		cmd.Env = append([]string{"PGCONNECT_TIMEOUT=5", "LC_ALL=C"}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := client("PGSSLMODE=disable"); err == nil || !strings.Contains(out, "no encryption") {
		t.Errorf("a connection without TLS: err %v, %s; want it rejected (pg_hba: no encryption)", err, out)
	}
	other := writeTLS(t, e, filepath.Join(base, "other"), "node")
	if out, err := client("PGSSLMODE=verify-full", "PGSSLROOTCERT="+other.CAFile); err == nil || !strings.Contains(out, "certificate verify failed") {
		t.Errorf("a client trusting another CA: err %v, %s; want the server's certificate refused", err, out)
	}
	if out, err := client("PGSSLMODE=verify-full", "PGSSLROOTCERT="+tls.CAFile); err != nil || strings.TrimSpace(out) != "1" {
		t.Errorf("a client trusting the cluster's CA: %v, %s; want it connected", err, out)
	}
	// Replication without a client certificate is refused by pg_hba's cert line.
	cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir(), "psql"), "-X", "-A", "-t", "-c", "IDENTIFY_SYSTEM",
		"host=127.0.0.1 port="+strconv.Itoa(primary.Port)+" user="+e.Superuser()+" replication=true sslmode=verify-full sslrootcert="+tls.CAFile+" sslcert=/nonexistent sslkey=/nonexistent")
	cmd.Env = []string{"PGCONNECT_TIMEOUT=5", "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "certificate") {
		t.Errorf("a replication connection without a client certificate: err %v, %s; want it refused", err, out)
	}
}
