package nodesim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/patroni"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestCluster_tls boots three nodes whose user-data turns TLS on (bootstrap.EC2Node.TLS), with the bundles
// the provider would store in SSM, and checks what the issue asks of the nodes: both standbys stream over
// TLS authenticated by their replication certificate (pg_stat_ssl: version, cipher, the certificate's
// name), a connection without TLS is refused by every node, a client that trusts another CA refuses the
// nodes under verify-full, Patroni's REST API answers https and not http, etcd refuses a client without a
// certificate. Then a renewal: a standby's certificates reissued into its bundle reach PostgreSQL, the REST
// API and etcd on that node (secrets.sh --tls-refresh every 20 s, Patroni reloaded, etcd reading its files per connection)
// with no restart of PostgreSQL, and the standby keeps streaming.
func TestCluster_tls(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	c, st := startCluster(t, s, nodesim.ClusterOptions{Name: "simtls", TLS: true})
	lm, _ := st.Leader()
	leader := c.Node(lm.Name)
	h := c.Hosts[leader.Name].WithDefaults(c.Spec)

	// Replication: both standbys over TLS, as the replication user's certificate.
	got := query(t, c, leader, "SELECT string_agg(r.application_name || ' ' || s.ssl || ' ' || s.version || ' ' || s.cipher || ' ' || coalesce(s.client_dn, '-'), ', ' ORDER BY r.application_name) "+
		"FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)")
	rows := strings.Split(got, ", ")
	if len(rows) != 2 {
		t.Fatalf("pg_stat_replication on %s joined with pg_stat_ssl: %q, want both standbys", leader.Name, got)
	}
	for _, r := range rows {
		if f := strings.Fields(r); len(f) != 5 || f[1] != "true" || !strings.HasPrefix(f[2], "TLSv1.") || !strings.HasSuffix(f[4], "CN="+h.Patroni.ReplicationUser) {
			t.Fatalf("a walsender on %s: %q; want TLS with the replication certificate (CN=%s)", leader.Name, r, h.Patroni.ReplicationUser)
		}
	}
	t.Logf("walsenders on %s: %s", leader.Name, got)
	// This test's own connection (verify-full against the cluster's CA).
	t.Logf("the superuser's connection: %s", query(t, c, leader, "SELECT ssl || ' ' || version || ' ' || cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()"))

	for _, n := range c.Nodes {
		// Without TLS: refused by pg_hba.
		cfg, err := c.ConnConfig(n)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLSConfig = nil
		if err := tryConnect(cfg); err == nil || !strings.Contains(err.Error(), "no encryption") {
			t.Fatalf("%s: a connection without TLS: %v; want it refused (pg_hba: no encryption)", n.Name, err)
		}
		// Trusting another CA: the client refuses the node's certificate.
		other, err := pki.NewCA("another CA", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ = c.ConnConfig(n)
		cfg.TLSConfig = cfg.TLSConfig.Clone()
		cfg.TLSConfig.RootCAs = poolOf(other.CertPEM)
		if err := tryConnect(cfg); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("%s: a client trusting another CA: %v; want the certificate refused", n.Name, err)
		}
		// Patroni's REST API: https only.
		api := net.JoinHostPort(n.IP.String(), strconv.Itoa(h.Patroni.RESTAPIPort))
		if _, err := c.Patroni(ctx, n); err != nil {
			t.Fatalf("%s: GET https://%s/patroni: %v", n.Name, api, err)
		}
		plainHTTP := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: s.DialContext}}
		if resp, err := plainHTTP.Get("http://" + api + "/patroni"); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: GET http://%s/patroni answered %s; want no plain http", n.Name, api, resp.Status)
		}
		// etcd: TLS, and a client certificate of the cluster's CA.
		etcd := net.JoinHostPort(n.IP.String(), strconv.Itoa(h.Etcd.ClientPort))
		noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: s.DialContext,
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.TLS.Pool()}}}
		if resp, err := noCert.Get("https://" + etcd + "/health"); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: etcd answered a client without a certificate: %s", n.Name, resp.Status)
		} else {
			t.Logf("%s: etcd refuses a client without a certificate: %v", n.Name, err)
		}
		if members, err := c.EtcdMembers(ctx, n); err != nil || len(members) != 3 {
			t.Fatalf("%s: etcd with the client certificate: %v %v", n.Name, members, err)
		}
	}

	// Renewal of a standby's certificates: only the bundle changes; the node takes it within the refresh.
	var standby *nodesim.Node
	for _, n := range c.Nodes {
		if n != leader {
			standby = n
			break
		}
	}
	started := query(t, c, standby, "SELECT pg_postmaster_start_time()::text")
	before, err := c.ServedCertificate(ctx, standby, h.Port, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // certificates carry whole seconds: the new one ends later
	renewedAt := time.Now()
	if err := c.IssueNodeTLS(ctx, standby.Name, 48*time.Hour, false); err != nil {
		t.Fatal(err)
	}
	want := c.TLS.Files[standby.Name]
	wantCert, err := pki.ParseCert(want.Member)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []struct {
		what     string
		port     int
		postgres bool
	}{{"PostgreSQL", h.Port, true}, {"Patroni's REST API", h.Patroni.RESTAPIPort, false}, {"etcd", h.Etcd.ClientPort, false}} {
		err := wait.Until(ctx, standby.Name+"'s "+ep.what+" to serve the renewed certificate", 90*time.Second, time.Second, nil, func(ctx context.Context) (bool, error) {
			cert, err := c.ServedCertificate(ctx, standby, ep.port, ep.postgres)
			if err != nil {
				return false, wait.NotYet(err)
			}
			if !cert.NotAfter.Equal(wantCert.NotAfter) {
				return false, wait.NotYet(fmt.Errorf("it serves the certificate ending %s", cert.NotAfter))
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, standby.Logs(30))
		}
		t.Logf("%s: %s serves the renewed certificate (ends %s, was %s) %.1f s after the bundle changed", standby.Name, ep.what, wantCert.NotAfter.Format(time.RFC3339), before.NotAfter.Format(time.RFC3339), time.Since(renewedAt).Seconds())
	}
	if now := query(t, c, standby, "SELECT pg_postmaster_start_time()::text"); now != started {
		t.Fatalf("%s's PostgreSQL restarted for the renewal: started %s, now %s", standby.Name, started, now)
	}
	waitStatus(t, c, "the quorum after the renewal", time.Minute, patroni.QuorumOf(len(c.Nodes)))
	if got := query(t, c, leader, "SELECT count(*)::text FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl AND r.application_name = '"+standby.Name+"'"); got != "1" {
		t.Fatalf("%s no longer streams over TLS after its renewal (%s)", standby.Name, got)
	}
}

// tryConnect connects once with cfg and closes the connection.
func tryConnect(cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return errors.Join(errors.New("connected"), conn.Close(ctx))
}

func poolOf(pemBytes []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pemBytes)
	return p
}
