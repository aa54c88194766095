package ec2cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TLS on EC2, end to end on the node simulator (real etcd, Patroni and PostgreSQL on each node): the
// provider makes the cluster's authority and each node's certificates before the launch; every client and
// replication connection is TLS, plain TCP and a client trusting another authority are refused, Patroni's
// REST API answers https only and etcd only a client with a certificate; no private key is in the state,
// the user-data or the provider's log; then a shorter validity makes every certificate due, the plan says
// so, and the apply renews them node by node under a writer with no commit lost, no failover and no restart;
// destroy removes the authority.
func TestAccEC2Cluster_tls(t *testing.T) {
	t.Parallel()
	e := newSimEnv(t)
	ctx := context.Background()
	e.enforceIAM(ctx)
	e.tls = "\n  tls {\n    validity_period_hours = 5\n    early_renewal_hours   = 1\n  }"
	e.config("sim", "m6id.large", false)
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	st := e.state()
	t.Logf("created with TLS in %.0f s", secs)
	if st.TLS == nil || !strings.Contains(st.TLS.CACertificate, "BEGIN CERTIFICATE") || len(st.TLS.NotAfter) != 3 {
		t.Fatalf("tls after the create: %+v", st.TLS)
	}
	for _, uri := range []string{st.ConnectionURI, st.ReadOnlyConnectionURI} {
		if !strings.Contains(uri, "sslmode=verify-full") {
			t.Errorf("%s has no sslmode=verify-full", uri)
		}
	}
	e.roots = x509.NewCertPool()
	if !e.roots.AppendCertsFromPEM([]byte(st.TLS.CACertificate)) {
		t.Fatal("tls.ca_certificate is no PEM certificate")
	}
	password := e.secret(st.AWS.SSMPath + "/superuser-password")

	// Every connection is TLS: the test's own (verify-full against the output's authority) and each
	// standby's replication (by its client certificate).
	conn, err := e.connect(ctx, st.ConnectionURI, password)
	if err != nil {
		t.Fatalf("connecting with verify-full and tls.ca_certificate: %v\n%s", err, e.logs())
	}
	rows, err := conn.Query(ctx, `SELECT coalesce(r.application_name, 'client'), s.ssl, coalesce(s.version, ''), coalesce(s.cipher, ''), coalesce(s.client_dn, '')
		FROM pg_stat_ssl s LEFT JOIN pg_stat_replication r USING (pid) WHERE s.pid = pg_backend_pid() OR r.pid IS NOT NULL ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for rows.Next() {
		var who, version, cipher, dn string
		var ssl bool
		if err := rows.Scan(&who, &ssl, &version, &cipher, &dn); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fmt.Sprintf("%s ssl=%v %s %s %s", who, ssl, version, cipher, dn))
		if !ssl || version == "" || cipher == "" {
			t.Errorf("%s's connection is not TLS: ssl %v, version %q, cipher %q", who, ssl, version, cipher)
		}
		if who != "client" && !strings.Contains(dn, "CN="+bootstrap.DefaultReplicationUser) {
			t.Errorf("%s replicates without the replication certificate (client DN %q)", who, dn)
		}
	}
	if rows.Err() != nil || len(seen) != 3 {
		t.Errorf("pg_stat_ssl: %v (%v); want the test's connection and two walsenders", seen, rows.Err())
	}
	t.Logf("pg_stat_ssl: %s", strings.Join(seen, "; "))
	// The provider's own role: made by the create, a member of pg_monitor, no superuser.
	var super, monitor bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper, pg_has_role(oid, 'pg_monitor', 'MEMBER') FROM pg_roles WHERE rolname = $1", bootstrap.ProviderUser).Scan(&super, &monitor); err != nil || super || !monitor {
		t.Errorf("the provider's role %s: superuser %v, pg_monitor %v, %v; want a member of pg_monitor only", bootstrap.ProviderUser, super, monitor, err)
	}
	_ = conn.Close(ctx)
	// The provider logs in as it by a client certificate: every session a refresh opens (its debug log).
	e.env = append(e.env, "TF_LOG_PROVIDER=DEBUG")
	e.mustTerraform("plan", "-refresh-only", "-no-color", "-input=false")
	e.env = e.env[:len(e.env)-1]
	sessions := 0
	if b, err := os.ReadFile(filepath.Join(e.dir, "terraform.log")); err != nil {
		t.Fatal(err)
	} else {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, pgclient.SessionLogMessage) {
				continue
			}
			sessions++
			if !strings.Contains(line, bootstrap.ProviderUser+"@") || !strings.Contains(line, "client_certificate=true") || strings.Contains(line, "error") {
				t.Errorf("a session of the provider not by its certificate: %s", line)
			}
		}
	}
	if sessions == 0 {
		t.Error("the refresh's debug log shows no PostgreSQL session")
	}
	// A cluster without the role (as one restored from the archive of a cluster without TLS would be): the
	// provider logs in as the superuser, the plan says the apply makes the role, and it does.
	sql := func(q string) string {
		t.Helper()
		c, err := e.connect(ctx, st.ConnectionURI, password)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var out string
		if err := c.QueryRow(ctx, q).Scan(&out); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	if c, err := e.connect(ctx, st.ConnectionURI, password); err != nil {
		t.Fatal(err)
	} else {
		if _, err := c.Exec(ctx, "DROP ROLE "+bootstrap.ProviderUser); err != nil {
			t.Fatal(err)
		}
		_ = c.Close(ctx)
	}
	if plan, _ := e.mustTerraform("plan", "-no-color", "-input=false"); !strings.Contains(strings.Join(strings.Fields(plan), " "), awsspec.ProviderRoleLine) {
		t.Errorf("the plan of a cluster without the provider's role does not say %q:\n%s", awsspec.ProviderRoleLine, plan)
	}
	e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	if got := sql("SELECT count(*)::text FROM pg_roles WHERE rolname = '" + bootstrap.ProviderUser + "'"); got != "1" {
		t.Errorf("after the apply the provider's role exists %s times; want once", got)
	}
	e.emptyPlan("after the provider's role was made again")
	// Nobody else logs in as it: without a certificate (a password will not do) the node refuses.
	asProvider := "postgresql://" + bootstrap.ProviderUser + "@" + net.JoinHostPort(st.Nodes[0].Host, "5432") + "/postgres?sslmode=verify-full"
	if _, err := e.connectAs(ctx, asProvider, password, e.roots); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("logging in as %s with a password and no certificate: %v; want it refused for want of a certificate", bootstrap.ProviderUser, err)
	}

	node := st.Nodes[0].Host
	plain := "postgresql://postgres@" + net.JoinHostPort(node, "5432") + "/postgres?sslmode=disable"
	if _, err := e.connectAs(ctx, plain, password, nil); err == nil || !strings.Contains(err.Error(), "no encryption") {
		t.Errorf("a connection without TLS to %s: %v; want it refused by pg_hba (no encryption)", node, err)
	}
	other, _ := pki.NewCA("another authority", time.Now())
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(other.CertPEM)
	full := "postgresql://postgres@" + net.JoinHostPort(node, "5432") + "/postgres?sslmode=verify-full"
	if _, err := e.connectAs(ctx, full, password, otherPool); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("verify-full against another authority: %v; want the certificate refused", err)
	}

	// Patroni's REST API: https with the cluster's authority, never http.
	if err := e.getJSON(ctx, "http://"+net.JoinHostPort(node, "8008")+"/patroni", &map[string]any{}); err == nil {
		t.Errorf("Patroni's REST API at %s answered plain http", node)
	}
	var self map[string]any
	if err := e.getJSONTLS(ctx, "https://"+net.JoinHostPort(node, "8008")+"/patroni", nil, &self); err != nil || self["state"] != "running" {
		t.Errorf("Patroni's REST API over https: %v %v", err, self)
	}
	// etcd: TLS, and no answer without a client certificate.
	etcd := "https://" + net.JoinHostPort(node, fmt.Sprint(bootstrap.DefaultEtcdClientPort)) + "/health"
	if err := e.getJSONTLS(ctx, etcd, nil, &map[string]any{}); err == nil {
		t.Errorf("etcd at %s answered a client without a certificate", node)
	}

	// No private key anywhere but SSM.
	e.checkInstances(st, []string{"PRIVATE KEY"})
	for _, f := range []string{"terraform.tfstate", "terraform.log"} {
		b, err := os.ReadFile(filepath.Join(e.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "PRIVATE KEY") {
			t.Errorf("%s holds a private key", f)
		}
	}
	nodesCanRead := st.AWS.SSMPath + "/"
	if p := awsspec.TLSCAParameter("sim"); strings.HasPrefix(p, nodesCanRead) {
		t.Errorf("the authority's key %s is under the nodes' path %s", p, nodesCanRead)
	}
	if v, err := e.secretErr(awsspec.TLSCAParameter("sim")); err != nil || !strings.Contains(v, "PRIVATE KEY") {
		t.Errorf("the authority in SSM: %v", err)
	}
	// And a node, acting as its instance role under IAM enforcement, reads its own bundle and is refused the
	// authority's key, as the AWS CLI on an instance would be.
	n1 := e.bridge.Node(st.AWS.InstanceIDs["node-1"])
	ssmGet := func(name string) (string, error) {
		argv := append(append([]string{"env"}, n1.InstanceEnv()...), "aws", "ssm", "get-parameter", "--region", e.region, "--with-decryption", "--name", name, "--query", "Parameter.Name", "--output", "text")
		return n1.Exec(ctx, "root", argv...)
	}
	if out, err := ssmGet(awsspec.TLSBundleParameter("sim", "node-1")); err != nil {
		t.Errorf("node-1 reading its own bundle as its role: %v", err)
	} else {
		t.Logf("node-1 reads %s as its role", strings.TrimSpace(out))
	}
	if out, err := ssmGet(awsspec.TLSCAParameter("sim")); err == nil || !strings.Contains(out, "AccessDenied") {
		t.Errorf("node-1 reading the authority's key as its role: %v %s; want AccessDenied", err, out)
	} else {
		t.Logf("node-1 is refused the authority's key: %s", strings.Join(strings.Fields(out), " "))
	}

	// Renewal: 5-hour certificates outlive a 2-hour validity, so every node's is due. The plan says so; the
	// apply renews them under a writer.
	e.waitSettled(st)
	before := e.startTimes(st)
	leader := e.waitLeader(st, "")
	w := e.startWriter(st.ConnectionURI, password)
	w.await(20)
	e.tls = "\n  tls {\n    validity_period_hours = 2\n    early_renewal_hours   = 1\n  }"
	e.config("sim", "m6id.large", false)
	// Each running node's renewal is a step of the engine: the plan lists them, in the nodes' order, and the
	// apply executes exactly those.
	var renewals []string
	for _, n := range st.Nodes {
		renewals = append(renewals, "renew "+n.Name+"'s certificates")
	}
	plan, _, renewSecs := e.planIsApply("renewal", renewals, false)
	for _, n := range st.Nodes {
		if !strings.Contains(plan, "renew "+n.Name+"'s certificates: its certificate: it ends at") || !strings.Contains(plan, "(same key)") {
			t.Errorf("the plan does not say why it renews %s's certificates:\n%s", n.Name, plan)
		}
	}
	acked := w.finish()
	after := e.state()
	t.Logf("renewed every node's certificates in %.0f s under a writer (%d commits acknowledged, none lost)", renewSecs, acked)
	if got := e.waitLeader(after, ""); got != leader {
		t.Errorf("the leader changed from %s to %s: a renewal must not fail over", leader, got)
	}
	for name, started := range e.startTimes(after) {
		if started != before[name] {
			t.Errorf("%s's PostgreSQL restarted (%s -> %s): a renewal reloads", name, before[name], started)
		}
	}
	for _, n := range after.Nodes {
		was, _ := time.Parse(time.RFC3339, st.TLS.NotAfter[n.Name])
		now, err := time.Parse(time.RFC3339, after.TLS.NotAfter[n.Name])
		if err != nil || !now.Before(was) || now.After(time.Now().Add(2*time.Hour+time.Minute)) {
			t.Errorf("%s's certificate ends %s (was %s): want a 2-hour one", n.Name, after.TLS.NotAfter[n.Name], st.TLS.NotAfter[n.Name])
		}
		served, err := e.servedREST(ctx, n.Host)
		if err != nil {
			t.Errorf("%s's REST API: %v", n.Name, err)
		} else if end := served.NotAfter.UTC().Format(time.RFC3339); end != after.TLS.NotAfter[n.Name] {
			t.Errorf("%s's REST API serves a certificate ending %s right after the apply; the state says %s", n.Name, end, after.TLS.NotAfter[n.Name])
		}
	}
	e.emptyPlan("after the renewal")

	// The load balancer checks the nodes' health over https (their REST API serves nothing else).
	elb := elasticloadbalancingv2.NewFromConfig(e.awsConfig(), func(o *elasticloadbalancingv2.Options) { o.BaseEndpoint = aws.String(nodesim.AWSEndpoint) })
	tgs, err := elb.DescribeTargetGroups(ctx, &elasticloadbalancingv2.DescribeTargetGroupsInput{Names: []string{"pgnvme-sim-rw", "pgnvme-sim-ro"}})
	if err != nil || len(tgs.TargetGroups) != 2 {
		t.Fatalf("the target groups: %v", err)
	}
	for _, tg := range tgs.TargetGroups {
		if tg.HealthCheckProtocol != elbv2types.ProtocolEnumHttps {
			t.Errorf("target group %s checks health over %s, want HTTPS", aws.ToString(tg.TargetGroupName), tg.HealthCheckProtocol)
		}
	}

	// Removing the block from a running cluster is refused at plan, naming the attribute.
	e.tls = ""
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "TLS Cannot Be Turned Off On AWS") {
		t.Errorf("a plan without the tls block on a cluster with TLS: %v\n%s", err, out)
	}
	e.tls = "\n  tls {\n    validity_period_hours = 2\n    early_renewal_hours   = 1\n  }"
	e.config("sim", "m6id.large", false)

	e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
	for _, p := range []string{awsspec.TLSCAParameter("sim"), awsspec.TLSBundleParameter("sim", "node-1")} {
		var nf *types.ParameterNotFound
		if _, err := e.secretErr(p); !errors.As(err, &nf) {
			t.Errorf("%s after destroy: %v; want it deleted", p, err)
		}
	}
}

// connectAs connects with uri as it is, verifying against roots (nil: as the URI says, without a pool).
func (e *simEnv) connectAs(ctx context.Context, uri, password string, roots *x509.CertPool) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.Password, cfg.DialFunc, cfg.ConnectTimeout = password, e.sim.DialContext, 5*time.Second
	if cfg.TLSConfig != nil {
		cfg.TLSConfig.RootCAs = roots
	}
	cfg.Fallbacks = nil
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		_ = c.Close(ctx)
	}
	return c, err
}

// tlsClient is an https client through the simulator that trusts the cluster's authority.
func (e *simEnv) tlsClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     e.sim.DialContext,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: e.roots},
	}}
}

// getJSONTLS is getJSON over https against the cluster's authority (cert: a client certificate, or none).
func (e *simEnv) getJSONTLS(ctx context.Context, url string, cert *tls.Certificate, v any) error {
	c := e.tlsClient()
	if cert != nil {
		c.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// servedREST is the certificate host's Patroni REST API serves, verified against the cluster's authority.
func (e *simEnv) servedREST(ctx context.Context, host string) (*x509.Certificate, error) {
	raw, err := e.sim.DialContext(ctx, "tcp", net.JoinHostPort(host, "8008"))
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	c := tls.Client(raw, &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: e.roots, ServerName: host})
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

// startTimes are each node's PostgreSQL start time, from its own REST API over https.
func (e *simEnv) startTimes(st clusterState) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, n := range st.Nodes {
		var self struct {
			Start string `json:"postmaster_start_time"`
		}
		if err := e.getJSONTLS(context.Background(), "https://"+net.JoinHostPort(n.Host, "8008")+"/patroni", nil, &self); err != nil {
			e.t.Fatalf("node %s's REST API: %v", n.Name, err)
		}
		out[n.Name] = self.Start
	}
	return out
}

// TLS from an authority of the user's own: its key in an SSM SecureString outside the cluster's path. A key
// that is not the certificate's is refused at plan; the nodes serve certificates of that authority; its
// reference cannot change on the running cluster; destroy leaves the user's key.
func TestAccEC2Cluster_tlsOwnCA(t *testing.T) {
	t.Parallel()
	e := newSimEnv(t)
	ctx := context.Background()
	ca, err := pki.NewCA("my own authority", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pki.NewCA("another authority", time.Now())
	e.putSecret("/pki/sim-ca/key", string(ca.KeyPEM))
	e.putSecret("/pki/sim-ca/other-key", string(other.KeyPEM))
	e.putSecret("/pki/sim-ca/key-copy", string(ca.KeyPEM))
	own := func(keyParam string) string {
		return fmt.Sprintf("\n  tls {\n    ca_cert_pem          = <<-EOT\n%s    EOT\n    ca_key_ssm_parameter = %q\n  }", ca.CertPEM, keyParam)
	}

	e.tls = own("/pki/sim-ca/other-key")
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "Certificate Authority Key Mismatch") {
		t.Errorf("a plan with another authority's key: %v\n%s", err, out)
	}

	e.tls = own("/pki/sim-ca/key")
	e.config("sim", "m6id.large", false)
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	st := e.state()
	t.Logf("created with the user's authority in %.0f s", secs)
	if st.TLS == nil || strings.TrimSpace(st.TLS.CACertificate) != strings.TrimSpace(string(ca.CertPEM)) {
		t.Fatalf("tls.ca_certificate is not the user's authority: %+v", st.TLS)
	}
	e.roots = x509.NewCertPool()
	e.roots.AppendCertsFromPEM(ca.CertPEM)
	for _, n := range st.Nodes {
		served, err := e.servedREST(ctx, n.Host)
		if err != nil {
			t.Errorf("%s's REST API, verified against the user's authority: %v", n.Name, err)
			continue
		}
		if served.Issuer.CommonName != "my own authority" {
			t.Errorf("%s serves a certificate issued by %s", n.Name, served.Issuer)
		}
	}
	password := e.secret(st.AWS.SSMPath + "/superuser-password")
	if conn, err := e.connect(ctx, st.ConnectionURI, password); err != nil {
		t.Errorf("connecting with verify-full against the user's authority: %v", err)
	} else {
		_ = conn.Close(ctx)
	}
	if _, err := e.secretErr(awsspec.TLSCAParameter("sim")); err == nil {
		t.Errorf("the provider made an authority of its own beside the user's")
	}

	e.tls = own("/pki/sim-ca/key-copy")
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "Certificate Authority Cannot Change On AWS") {
		t.Errorf("a plan that changes the authority's key of a running cluster: %v\n%s", err, out)
	}
	e.tls = own("/pki/sim-ca/key")
	e.config("sim", "m6id.large", false)
	e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
	if _, err := e.secretErr("/pki/sim-ca/key"); err != nil {
		t.Errorf("destroy removed the user's key: %v", err)
	}
	var nf *types.ParameterNotFound
	if _, err := e.secretErr(awsspec.TLSBundleParameter("sim", "node-2")); !errors.As(err, &nf) {
		t.Errorf("node-2's bundle after destroy: %v; want it deleted", err)
	}
}

// putSecret stores a SecureString in moto through the simulator's endpoint.
func (e *simEnv) putSecret(name, value string) {
	e.t.Helper()
	c := ssm.NewFromConfig(e.awsConfig(), func(o *ssm.Options) { o.BaseEndpoint = aws.String(nodesim.AWSEndpoint) })
	if _, err := c.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: types.ParameterTypeSecureString}); err != nil {
		e.t.Fatal(err)
	}
}
