package provider_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// tfWork is a Terraform working directory that runs this provider's binary.
type tfWork struct {
	t         *testing.T
	dir, conf string
}

func newTFWork(t *testing.T) *tfWork {
	t.Helper()
	return &tfWork{t: t, dir: t.TempDir(), conf: acctest.TerraformCLIConfig(t, acctest.ProviderBinary(t))}
}

func (w *tfWork) config(body string) {
	w.t.Helper()
	config := "terraform {\n  required_providers {\n    pgnvme = { source = \"pgnvme/pgnvme\" }\n  }\n}\n" + body
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(config), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *tfWork) run(args ...string) (string, error) {
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		bin = "terraform"
	}
	full := []string{args[0], "-no-color"} // flags before the arguments (import's address and ID)
	if args[0] != "show" {
		full = append(full, "-input=false")
	}
	cmd := exec.Command(bin, append(full, args[1:]...)...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+w.conf, "TF_LOG_PROVIDER=DEBUG", "TF_LOG_PATH="+filepath.Join(w.dir, "terraform.log"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *tfWork) must(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	if err != nil {
		w.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// attrs are the cluster's attributes in the state.
func (w *tfWork) attrs() map[string]any {
	w.t.Helper()
	var st struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Values map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(w.must("show", "-json")), &st); err != nil {
		w.t.Fatal(err)
	}
	if len(st.Values.RootModule.Resources) != 1 {
		w.t.Fatalf("the state holds %d resources; want the cluster", len(st.Values.RootModule.Resources))
	}
	return st.Values.RootModule.Resources[0].Values
}

// tlsPsql runs sql on the node at port over TLS with the cluster's files (the provider's own way).
func tlsPsql(dir string, port int, sql string) (string, error) {
	return tlsPsqlCtx(context.Background(), dir, port, sql)
}

func tlsPsqlCtx(ctx context.Context, dir string, port int, sql string) (string, error) {
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		return "", err
	}
	tls := &localnode.TLS{CAFile: filepath.Join(localcluster.TLSDir(dir), "ca.crt"), CertFile: "/unused", KeyFile: "/unused",
		ClientCertFile: filepath.Join(localcluster.TLSDir(dir), "client.crt"), ClientKeyFile: filepath.Join(localcluster.TLSDir(dir), "client.key")}
	return e.Psql(ctx, localnode.Node{Name: "probe", Host: "127.0.0.1", Port: port, TLS: tls}, "postgres", sql)
}

// psqlEnv runs SELECT 1 with psql on port with only env (libpq's variables) set, and returns its output.
func psqlEnv(port int, env ...string) (string, error) {
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(e.BinDir(), "psql"), "-X", "-A", "-t", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", e.Superuser(), "-d", "postgres", "-c", "SELECT 1")
	cmd.Env = append([]string{"PGCONNECT_TIMEOUT=5", "LC_ALL=C"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAccCluster_tls: a local cluster with a tls block, through the Terraform CLI.
//   - Created with TLS: every standby streams over TLS authenticated by the client certificate
//     (pg_stat_ssl on the primary), a connection without TLS is refused by every node, a client
//     trusting another CA is refused, and connection_uri as it is (verify-full, the CA's file) connects.
//     No private key is in the state, and tls.not_after names each certificate.
//   - Renewal: a policy under which every certificate is due (early_renewal_hours beyond their end) is
//     planned as a renewal of each, then reloads; applied under a writer, no commit is lost, no node
//     restarts, the primary stays, and the next plan is empty.
//   - Bad input: a renewal margin as long as the validity is refused at plan.
//   - A standby lost with its data is copied again over TLS and streams by certificate.
//   - TLS turned off in place, then on again: plain connections work, then are refused again.
//   - data_durability "preferred": the durability watcher works over TLS (a commit returns with both
//     standbys stopped).
//   - An import of the cluster in another working directory plans nothing.
func TestAccCluster_tls(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Fatal("TestAccCluster_tls runs Terraform: set TF_ACC=1 (make test does)")
	}
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	w := newTFWork(t)
	t.Cleanup(func() {
		if out, err := w.run("destroy", "-auto-approve"); err != nil {
			t.Errorf("destroy: %v\n%s", err, out)
		}
		if exists, err := localcluster.NewPlatform().Exists(localSpec(dir, base), nil); err != nil || exists {
			t.Errorf("after destroy the cluster still exists here (%v)", err)
		}
		if _, err := os.Stat(localcluster.TLSDir(dir)); err == nil {
			t.Errorf("after destroy %s is still there", localcluster.TLSDir(dir))
		}
	})
	w.config(clusterConfig(dir, base, "  tls {}"))
	w.must("apply", "-auto-approve")
	a := w.attrs()
	tlsAttrs, _ := a["tls"].(map[string]any)
	caPEM, _ := tlsAttrs["ca_certificate"].(string)
	notAfter, _ := tlsAttrs["not_after"].(map[string]any)
	if got := fmt.Sprint(tlsAttrs["ca_file"]); got != filepath.Join(localcluster.TLSDir(dir), "ca.crt") {
		t.Errorf("tls.ca_file = %s; want the authority's file in %s", got, localcluster.TLSDir(dir))
	}
	if !strings.HasPrefix(caPEM, "-----BEGIN CERTIFICATE-----") || len(notAfter) != 4 {
		t.Fatalf("tls after create: %v; want the CA's certificate and the end of 4 certificates (3 nodes and client)", tlsAttrs)
	}
	for name, end := range notAfter {
		at, err := time.Parse(time.RFC3339, fmt.Sprint(end))
		if left := time.Until(at); err != nil || left < 89*24*time.Hour || left > 90*24*time.Hour {
			t.Errorf("tls.not_after[%s] = %v: want 90 days from now", name, end)
		}
	}
	raw, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "PRIVATE KEY") {
		t.Error("the state holds a private key")
	}
	if log, _ := os.ReadFile(filepath.Join(w.dir, "terraform.log")); strings.Contains(string(log), "PRIVATE KEY") {
		t.Error("Terraform's debug log holds a private key")
	}
	uri := fmt.Sprint(a["connection_uri"])
	wantURI := fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/postgres?sslmode=verify-full&sslrootcert=%s", base, strings.ReplaceAll(filepath.Join(localcluster.TLSDir(dir), "ca.crt"), "/", "%2F"))
	if uri != wantURI {
		t.Errorf("connection_uri = %s; want %s", uri, wantURI)
	}
	e, err := localnode.New(localnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(e.BinDir(), "psql"), "-X", "-A", "-t", uri, "-c", "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "t" {
		t.Errorf("psql with connection_uri as it is: %v, %s; want a TLS session", err, out)
	}
	rows, err := tlsPsql(dir, base, "SELECT r.application_name, s.version, s.cipher, s.client_dn FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl ORDER BY 1")
	t.Logf("replication connections on the primary (pg_stat_ssl):\n%s", rows)
	if err != nil || len(strings.Split(rows, "\n")) != 2 || strings.Count(rows, "CN="+e.Superuser()) != 2 {
		t.Errorf("the primary's replication connections: %v\n%s\nwant both standbys over TLS with the client certificate", err, rows)
	}
	for i := range 3 {
		if out, err := psqlEnv(base+i, "PGSSLMODE=disable"); err == nil || !strings.Contains(out, "no encryption") {
			t.Errorf("node on port %d: a connection without TLS: %v %s; want it refused", base+i, err, out)
		}
	}
	other, err := pki.NewCA("another", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(t.TempDir(), "other.crt")
	if err := os.WriteFile(otherCA, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := psqlEnv(base, "PGSSLMODE=verify-full", "PGSSLROOTCERT="+otherCA); err == nil || !strings.Contains(out, "certificate verify failed") {
		t.Errorf("a client trusting another CA: %v %s; want it refused", err, out)
	}
	if out := w.must("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("the plan after the create is not empty:\n%s", out)
	}

	// A renewal margin as long as the validity is refused at plan.
	w.config(clusterConfig(dir, base, "  tls {\n    validity_period_hours = 100\n    early_renewal_hours   = 100\n  }"))
	if out, err := w.run("plan"); err == nil || !strings.Contains(out, "Invalid Certificate Lifetime") || !regexp.MustCompile(`tls\.early_renewal_hours|early_renewal_hours\s+=\s+100`).MatchString(out) {
		t.Errorf("a renewal margin as long as the validity: want a plan error, got %v:\n%s", err, out)
	}

	// Every certificate due: renewed under a writer, reloads only.
	w.config(clusterConfig(dir, base, "  tls {\n    validity_period_hours = 4000\n    early_renewal_hours   = 3000\n  }"))
	plan := strings.Join(strings.Fields(w.must("plan")), " ")
	for _, want := range []string{"renew node-1's certificates: its server certificate: it ends at", "within the renewal margin of 3000 hours; it reloads them (no restart, no failover)",
		"renew node-3's certificates", "renew the client certificate of " + e.Superuser()} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan of a renewal does not say %q:\n%s", want, plan)
		}
	}
	starts, _ := tlsPsql(dir, base, "SELECT pg_postmaster_start_time()")
	writer := startWriterVia(t, func(sql string) (string, error) { return tlsPsql(dir, base, sql) })
	writer.await(t, 5)
	began := time.Now()
	w.must("apply", "-auto-approve")
	took := time.Since(began)
	// Commits after the renewal, on the new certificates.
	writer.await(t, writer.count()+5)
	acked := writer.finish()
	lost := 0
	for _, n := range acked {
		if got, err := tlsPsql(dir, base, fmt.Sprintf("SELECT count(*) FROM acked WHERE n = %d", n)); err != nil || got != "1" {
			lost++
		}
	}
	t.Logf("renewal of 4 certificates under a writer: apply %.1f s; %d commits acknowledged, %d lost", took.Seconds(), len(acked), lost)
	if lost > 0 || len(acked) < 10 || writer.err != nil {
		t.Errorf("the renewal lost %d of %d acknowledged commits, and a commit failed: %v (want 0 of at least 10, none failed)", lost, len(acked), writer.err)
	}
	if after, _ := tlsPsql(dir, base, "SELECT pg_postmaster_start_time()"); after != starts {
		t.Errorf("the primary restarted during the renewal (%s -> %s)", starts, after)
	}
	a = w.attrs()
	if p, _ := a["primary"].(map[string]any); fmt.Sprint(p["port"]) != strconv.Itoa(base) {
		t.Errorf("the primary moved during the renewal: %v", a["primary"])
	}
	renewed, _ := a["tls"].(map[string]any)["not_after"].(map[string]any)
	for name, end := range renewed {
		at, _ := time.Parse(time.RFC3339, fmt.Sprint(end))
		if left := time.Until(at); left < 3999*time.Hour {
			t.Errorf("after the renewal tls.not_after[%s] = %v: want 4000 hours from now", name, end)
		}
	}
	// The nodes serve the new certificates (a reload, no restart): a new TLS session with each sees its new end.
	for i, name := range []string{"node-1", "node-2", "node-3"} {
		end, err := servedNotAfter(base+i, filepath.Join(localcluster.TLSDir(dir), "ca.crt"))
		if err != nil || end.UTC().Format(time.RFC3339) != fmt.Sprint(renewed[name]) {
			t.Errorf("%s serves a certificate ending %s (%v); want the renewed one, ending %v", name, end, err, renewed[name])
		}
	}
	if out := w.must("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("the plan after the renewal is not empty:\n%s", out)
	}

	// A standby lost with its data: the repair copies a new one over TLS, which streams by certificate.
	loseNode(t, filepath.Join(dir, "node-3"), base+2)
	w.must("apply", "-auto-approve")
	if got, err := tlsPsql(dir, base, "SELECT r.application_name FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl AND r.state = 'streaming' ORDER BY 1"); err != nil || got != "node-2\nnode-3" {
		t.Errorf("after the repair of node-3, the standbys streaming over TLS: %q (%v); want node-2 and node-3", got, err)
	}

	// TLS off in place, then on again.
	w.config(clusterConfig(dir, base, ""))
	plan = strings.Join(strings.Fields(w.must("plan")), " ")
	if !strings.Contains(plan, "turn TLS off: node-1 first, then node-2, node-3") {
		t.Errorf("the plan of TLS removed does not say it turns TLS off, the primary first:\n%s", plan)
	}
	w.must("apply", "-auto-approve")
	if got := psqlAt(t, base, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"); got != "2" {
		t.Errorf("with TLS off, %s standbys stream; want 2", got)
	}
	if _, err := os.Stat(localcluster.TLSDir(dir)); err == nil {
		t.Errorf("with TLS off %s is still there", localcluster.TLSDir(dir))
	}
	if a := w.attrs(); strings.Contains(fmt.Sprint(a["connection_uri"]), "sslmode") || a["tls"] != nil {
		t.Errorf("with TLS off: connection_uri %v, tls %v; want a plain URI and no tls", a["connection_uri"], a["tls"])
	}
	w.config(clusterConfig(dir, base, "  tls {}"))
	w.must("apply", "-auto-approve")
	for i := range 3 {
		if out, err := psqlEnv(base+i, "PGSSLMODE=disable"); err == nil || !strings.Contains(out, "no encryption") {
			t.Errorf("TLS on again: node on port %d accepts a connection without TLS: %v %s", base+i, err, out)
		}
	}
	if got, err := tlsPsql(dir, base, "SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE s.ssl AND r.state = 'streaming'"); err != nil || got != "2" {
		t.Errorf("TLS on again: %s standbys stream over TLS (%v); want 2", got, err)
	}
	if out := w.must("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("the plan after TLS on again is not empty:\n%s", out)
	}

	// data_durability "preferred": the durability watcher's psql connects over TLS too. With both standbys
	// stopped it lowers the synchronous number, so a commit returns; the next apply starts them again.
	preferred := strings.Replace(clusterConfig(dir, base, "  tls {}"), `data_durability = "required"`, `data_durability = "preferred"`, 1)
	w.config(preferred)
	w.must("apply", "-auto-approve")
	if local, _ := w.attrs()["local"].(map[string]any); local["durability_watcher_running"] != true {
		t.Errorf("with TLS and preferred, local.durability_watcher_running = %v; want true", local["durability_watcher_running"])
	}
	if _, err := tlsPsql(dir, base, "CREATE TABLE IF NOT EXISTS durability (n serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	stopStandbys(t, dir, base)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = tlsPsqlCtx(ctx, dir, base, "INSERT INTO durability DEFAULT VALUES")
	cancel()
	if err != nil {
		t.Errorf("with TLS, preferred and both standbys stopped, a commit did not return within 10 s (%v): the watcher did not lower the number", err)
		_, _ = tlsPsql(dir, base, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
	}
	w.must("apply", "-auto-approve")
	if got, err := tlsPsql(dir, base, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"); err != nil || got != "2" {
		t.Errorf("after the apply that starts the standbys again: %s streaming (%v); want 2", got, err)
	}

	// Imported into another working directory with the same configuration: the tls block and its outputs
	// come back, and the plan is empty.
	imp := newTFWork(t)
	imp.config(preferred)
	imp.must("import", "pgnvme_cluster.demo", "local:"+dir)
	if out := imp.must("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("the plan after an import of the TLS cluster is not empty:\n%s", out)
	}
	if got, want := fmt.Sprint(imp.attrs()["tls"]), fmt.Sprint(w.attrs()["tls"]); got != want {
		t.Errorf("the imported tls block is %s; want %s", got, want)
	}
}

// servedNotAfter opens a TLS session with the PostgreSQL server at port (its SSLRequest, then a handshake
// verified against caFile) and returns when the certificate it serves ends.
func servedNotAfter(port int, caFile string) (time.Time, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return time.Time{}, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte{0, 0, 0, 8, 4, 210, 22, 47}); err != nil { // SSLRequest: length 8, code 80877103
		return time.Time{}, err
	}
	answer := make([]byte, 1)
	if _, err := conn.Read(answer); err != nil {
		return time.Time{}, fmt.Errorf("reading the answer to SSLRequest: %w", err)
	}
	if answer[0] != 'S' {
		return time.Time{}, fmt.Errorf("the server answered %q to SSLRequest; want S", answer)
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		return time.Time{}, err
	}
	return tc.ConnectionState().PeerCertificates[0].NotAfter, nil
}
