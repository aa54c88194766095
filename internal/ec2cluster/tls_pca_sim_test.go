package ec2cluster_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acmpca"
	pcatypes "github.com/aws/aws-sdk-go-v2/service/acmpca/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TLS from an ACM Private CA, under IAM enforcement with the operator's policy: a CA that does not exist, or
// whose short-lived mode cannot give the validity, is refused at plan; the nodes serve certificates the CA
// issued (for as long as validity_period_hours says), replicate by them, and the provider keeps no key of an
// authority in SSM; a shorter validity renews every node's certificates through the CA; the CA cannot
// change on the running cluster.
func TestAccEC2Cluster_tlsPrivateCA(t *testing.T) {
	t.Parallel()
	e := newSimEnv(t)
	ctx := context.Background()
	pcaIn := func(region string) *acmpca.Client {
		return acmpca.NewFromConfig(e.awsConfig(), func(o *acmpca.Options) {
			o.BaseEndpoint, o.Protocol, o.Region = aws.String(nodesim.AWSEndpoint), awsclient.ACMPCAProtocol(), region
		})
	}
	// The CA that issues is in another region than the cluster (the provider calls it where its ARN says).
	pca := pcaIn("us-west-2")
	general := e.privateCA(ctx, pca, "pgnvme sim private CA", pcatypes.CertificateAuthorityUsageModeGeneralPurpose)
	shortLived := e.privateCA(ctx, pcaIn(e.region), "pgnvme sim short-lived CA", pcatypes.CertificateAuthorityUsageModeShortLivedCertificate)
	if !strings.Contains(general, ":us-west-2:") || e.region == "us-west-2" {
		t.Fatalf("the private CA %s is not in another region than the cluster's %s", general, e.region)
	}
	e.enforceIAM(ctx)
	withCA := func(arn string, validity int) string {
		return fmt.Sprintf("\n  tls {\n    acm_pca_arn           = %q\n    validity_period_hours = %d\n    early_renewal_hours   = 1\n  }", arn, validity)
	}

	missing := strings.Join(append(strings.Split(general, "/")[:1], "00000000-0000-0000-0000-000000000000"), "/")
	e.tls = withCA(missing, 6)
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "ACM Private CA Not Found") || !strings.Contains(out, "acm_pca_arn") {
		t.Errorf("a plan naming a CA that does not exist: %v\n%s", err, out)
	}
	e.tls = withCA(shortLived, 24*30)
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "short-lived certificate mode") {
		t.Errorf("a plan asking a short-lived CA for 30-day certificates: %v\n%s", err, out)
	}

	e.tls = withCA(general, 6)
	e.config("sim", "m6id.large", false)
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	st := e.state()
	t.Logf("created with certificates from ACM Private CA in %.0f s", secs)
	caPEM, err := pca.GetCertificateAuthorityCertificate(ctx, &acmpca.GetCertificateAuthorityCertificateInput{CertificateAuthorityArn: aws.String(general)})
	if err != nil {
		t.Fatal(err)
	}
	if st.TLS == nil || !strings.Contains(st.TLS.CACertificate, strings.TrimSpace(aws.ToString(caPEM.Certificate))) {
		t.Fatalf("tls.ca_certificate is not the private CA's certificate: %+v", st.TLS)
	}
	e.roots = x509.NewCertPool()
	e.roots.AppendCertsFromPEM([]byte(st.TLS.CACertificate))
	for _, n := range st.Nodes {
		served, err := e.servedREST(ctx, n.Host)
		if err != nil {
			t.Errorf("%s's REST API, verified against the private CA: %v", n.Name, err)
			continue
		}
		if served.Issuer.CommonName != "pgnvme sim private CA" {
			t.Errorf("%s serves a certificate issued by %s", n.Name, served.Issuer)
		}
		if left := time.Until(served.NotAfter); left > 6*time.Hour+time.Minute || left < 5*time.Hour {
			t.Errorf("%s's certificate ends %s: want 6 hours from the create", n.Name, served.NotAfter)
		}
	}
	password := e.secret(st.AWS.SSMPath + "/superuser-password")
	conn, err := e.connect(ctx, st.ConnectionURI, password)
	if err != nil {
		t.Fatalf("connecting with verify-full against the private CA: %v\n%s", err, e.logs())
	}
	// Both standbys replicate over TLS, by the replication certificate the CA issued.
	var replicating int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)
		WHERE s.ssl AND s.client_dn LIKE '%CN=`+awsspec.ReplicationSubject().CommonName+`%' AND s.issuer_dn LIKE '%pgnvme sim private CA%'`).Scan(&replicating)
	_ = conn.Close(ctx)
	if err != nil || replicating != 2 {
		t.Errorf("standbys replicating by the private CA's client certificates: %d (%v), want 2", replicating, err)
	}
	if _, err := e.secretErr(awsspec.TLSCAParameter("sim")); err == nil {
		t.Errorf("the provider made an authority of its own beside the private CA")
	}
	e.checkInstances(st, []string{"PRIVATE KEY"})
	for _, f := range []string{"terraform.tfstate", "terraform.log"} {
		if b, err := os.ReadFile(filepath.Join(e.dir, f)); err != nil || strings.Contains(string(b), "PRIVATE KEY") {
			t.Errorf("%s: %v, or it holds a private key", f, err)
		}
	}

	// A shorter validity: every node's certificate outlives it, and the CA issues new ones.
	e.tls = withCA(general, 3)
	e.config("sim", "m6id.large", false)
	var renewals []string
	for _, n := range st.Nodes {
		renewals = append(renewals, "renew "+n.Name+"'s certificates")
	}
	plan, _, secs := e.planIsApply("renewal from the private CA", renewals, false)
	for _, n := range st.Nodes {
		if !strings.Contains(plan, "renew "+n.Name+"'s certificates: its certificate: it ends at") {
			t.Errorf("the plan does not say why it renews %s's certificates:\n%s", n.Name, plan)
		}
	}
	after := e.state()
	t.Logf("renewed every node's certificates from the private CA in %.0f s", secs)
	for _, n := range after.Nodes {
		served, err := e.servedREST(ctx, n.Host)
		switch {
		case err != nil:
			t.Errorf("%s's REST API after the renewal: %v", n.Name, err)
		case served.NotAfter.UTC().Format(time.RFC3339) != after.TLS.NotAfter[n.Name] || time.Until(served.NotAfter) > 3*time.Hour+time.Minute:
			t.Errorf("%s serves a certificate ending %s; the state says %s: want a 3-hour one", n.Name, served.NotAfter, after.TLS.NotAfter[n.Name])
		}
	}
	e.emptyPlan("after the renewal from the private CA")

	e.tls = withCA(shortLived, 3)
	e.config("sim", "m6id.large", false)
	if out, err := e.terraform("plan", "-no-color", "-input=false"); err == nil || !strings.Contains(out, "Certificate Authority Cannot Change On AWS") || !strings.Contains(out, "acm_pca_arn") {
		t.Errorf("a plan that changes the private CA of a running cluster: %v\n%s", err, out)
	}
	e.tls = withCA(general, 3)
	e.config("sim", "m6id.large", false)
	e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
	if out, err := pca.DescribeCertificateAuthority(ctx, &acmpca.DescribeCertificateAuthorityInput{CertificateAuthorityArn: aws.String(general)}); err != nil ||
		out.CertificateAuthority.Status != pcatypes.CertificateAuthorityStatusActive {
		t.Errorf("the private CA after destroy: %v; want it left as it was", err)
	}
}

// privateCA makes an active root ACM Private CA named commonName in moto (as the simulator's admin), with
// a self-signed certificate valid 10 years, and returns its ARN.
func (e *simEnv) privateCA(ctx context.Context, c *acmpca.Client, commonName string, mode pcatypes.CertificateAuthorityUsageMode) string {
	e.t.Helper()
	made, err := c.CreateCertificateAuthority(ctx, &acmpca.CreateCertificateAuthorityInput{
		CertificateAuthorityType: pcatypes.CertificateAuthorityTypeRoot,
		UsageMode:                mode,
		CertificateAuthorityConfiguration: &pcatypes.CertificateAuthorityConfiguration{
			KeyAlgorithm: pcatypes.KeyAlgorithmRsa2048, SigningAlgorithm: pcatypes.SigningAlgorithmSha256withrsa,
			Subject: &pcatypes.ASN1Subject{CommonName: aws.String(commonName)},
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	arn := made.CertificateAuthorityArn
	csr, err := c.GetCertificateAuthorityCsr(ctx, &acmpca.GetCertificateAuthorityCsrInput{CertificateAuthorityArn: arn})
	if err != nil {
		e.t.Fatal(err)
	}
	issued, err := c.IssueCertificate(ctx, &acmpca.IssueCertificateInput{
		CertificateAuthorityArn: arn, Csr: []byte(aws.ToString(csr.Csr)), SigningAlgorithm: pcatypes.SigningAlgorithmSha256withrsa,
		TemplateArn: aws.String("arn:aws:acm-pca:::template/RootCACertificate/V1"),
		Validity:    &pcatypes.Validity{Type: pcatypes.ValidityPeriodTypeYears, Value: aws.Int64(10)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	cert, err := c.GetCertificate(ctx, &acmpca.GetCertificateInput{CertificateAuthorityArn: arn, CertificateArn: issued.CertificateArn})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := pki.ParseCert([]byte(aws.ToString(cert.Certificate))); err != nil {
		e.t.Fatal(err)
	}
	if _, err := c.ImportCertificateAuthorityCertificate(ctx, &acmpca.ImportCertificateAuthorityCertificateInput{
		CertificateAuthorityArn: arn, Certificate: []byte(aws.ToString(cert.Certificate)),
	}); err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(arn)
}
