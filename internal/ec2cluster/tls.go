package ec2cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// The platform's side of a cluster's TLS on EC2 (awsspec.DecideTLS is the decision): the certificate
// authority made and kept in SSM, each node's bundle issued before its launch and renewed while it runs,
// the provider's own connections verified against the authority.

// loadCA reads the cluster's certificate authority into the session (none yet: se.caCert stays nil) and
// points the session's Patroni client at https with it: the provider's own or the user's from SSM (with
// its key), or the ACM Private CA's certificate and chain.
func (se *session) loadCA(ctx context.Context) error {
	if se.s.TLS.PrivateCA() {
		return se.loadPrivateCA(ctx)
	}
	var ca pki.Pair
	if t := se.s.TLS; t.OwnCA() {
		key, err := se.cloud.Secret(ctx, t.CAKeyParameter)
		if errors.Is(err, ErrNotFound) {
			return cluster.Errorf([]string{"tls", "ca_key_ssm_parameter"}, "Certificate Authority Key Not Found",
				"The SSM parameter %s does not exist in %s: store your authority's private key (PEM) there as a SecureString, or fix the name.", t.CAKeyParameter, se.region)
		}
		if err != nil {
			return fmt.Errorf("reading your certificate authority's key from %s: %w", t.CAKeyParameter, err)
		}
		if ca, err = awsspec.CAPair(t.CACertPEM + "\n" + key); err != nil {
			return cluster.Errorf([]string{"tls", "ca_key_ssm_parameter"}, "Certificate Authority Key Mismatch",
				"The SSM parameter %s does not hold the private key of tls.ca_cert_pem (%v): give the key of that certificate.", t.CAKeyParameter, err)
		}
	} else {
		v, err := se.cloud.Secret(ctx, awsspec.TLSCAParameter(se.s.Name))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the cluster's certificate authority: %w", err)
		}
		if ca, err = awsspec.CAPair(v); err != nil {
			return fmt.Errorf("the cluster's certificate authority in %s: %w", awsspec.TLSCAParameter(se.s.Name), err)
		}
	}
	cert, err := pki.ParseCert(ca.CertPEM)
	if err != nil {
		return fmt.Errorf("the cluster's certificate authority: %w", err)
	}
	if problem := awsspec.CAProblem(cert, se.s.TLS.Policy, se.p.clock.Now()); problem != "" {
		return cluster.Errorf([]string{"tls", "ca_cert_pem"}, "Certificate Authority Ends Too Soon", "%s", problem)
	}
	se.ca = &ca
	return se.trust(cert, ca.CertPEM)
}

// loadPrivateCA describes tls.acm_pca_arn (in its own region) and reads its certificate and chain; an
// authority that does not exist, or cannot issue the cluster's certificates (awsspec.PrivateCAProblem), is
// an error at tls.acm_pca_arn.
func (se *session) loadPrivateCA(ctx context.Context) error {
	arn := se.s.TLS.ACMPCAArn
	at := []string{"tls", "acm_pca_arn"}
	region := cluster.PrivateCARegion(arn)
	pcas, err := se.p.privateCAs(ctx, region)
	if err != nil {
		return err
	}
	info, err := pcas.Describe(ctx, arn)
	if errors.Is(err, ErrNotFound) {
		return cluster.Errorf(at, "ACM Private CA Not Found",
			"No ACM Private CA %s exists in %s (for the provider's credentials): name one that does (aws acm-pca list-certificate-authorities --region %s).",
			arn, region, region)
	}
	if err != nil {
		return err
	}
	if problem := awsspec.PrivateCAProblem(info.PrivateCA, se.s.TLS.Policy, se.p.clock.Now()); problem != "" {
		return cluster.Errorf(at, "ACM Private CA Cannot Issue The Certificates", "%s", problem)
	}
	se.pca, se.pcas = &info, pcas
	return se.trust(info.Cert, info.ChainPEM)
}

// trust makes cert (the issuing authority's) and chainPEM (it and its chain) the session's authority.
func (se *session) trust(cert *x509.Certificate, chainPEM []byte) error {
	certs, err := pki.Certs(chainPEM)
	if err != nil {
		return fmt.Errorf("the cluster's certificate authority: %w", err)
	}
	se.caCert, se.caPEM = cert, chainPEM
	se.roots = x509.NewCertPool()
	for _, c := range certs {
		se.roots.AddCert(c)
	}
	se.patroni = se.p.patroniTLS(se.roots)
	return nil
}

// tlsNodes are the spec's nodes as the TLS decision sees them: what their certificates must name (their
// interfaces' addresses, the Elastic IP, the load balancer's name) and their bundles as stored.
func (se *session) tlsNodes(ctx context.Context, o observation) ([]awsspec.TLSNode, error) {
	lb := ""
	if se.a.LoadBalancer {
		l, err := se.cloud.LoadBalancer(ctx, se.s.Name)
		switch {
		case err == nil:
			lb = l.DNSName
		case !errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("reading the load balancer's name for the certificates: %w", err)
		}
	}
	var out []awsspec.TLSNode
	for _, n := range se.s.Nodes {
		e := o.enis[n.Name]
		a := awsspec.TLSAddresses{PrivateIP: e.PrivateIP, LoadBalancer: lb}
		if se.a.APIAddress == awsspec.APIAddressPublic {
			a.PublicIP = e.PublicIP
		}
		bundle, err := se.cloud.Secret(ctx, awsspec.TLSBundleParameter(se.s.Name, n.Name))
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("reading node %s's certificates: %w", n.Name, err)
		}
		out = append(out, awsspec.TLSNode{Name: n.Name, Subject: awsspec.TLSSubject(n.Name, a), Bundle: bundle})
	}
	return out, nil
}

// tlsView is the TLS decision on what SSM and the observation hold now (awsspec.DecideTLS), split by when
// the apply takes each issue (awsspec.TLSDecision.Split): before any launch, or as the engine's renew steps.
type tlsView struct {
	d, before awsspec.TLSDecision
	due       map[string]string
	nodes     []awsspec.TLSNode
}

// viewTLS decides the cluster's certificates now; the zero view without TLS.
func (se *session) viewTLS(ctx context.Context, o observation) (tlsView, error) {
	if se.s.TLS == nil {
		return tlsView{}, nil
	}
	nodes, err := se.tlsNodes(ctx, o)
	if err != nil {
		return tlsView{}, err
	}
	v := tlsView{d: awsspec.DecideTLS(se.caCert, nodes, se.s.TLS.Policy, se.p.clock.Now()), nodes: nodes}
	v.before, v.due = v.d.Split(func(node string) bool { _, live := o.instances[node]; return live })
	return v, nil
}

// tlsStatus is the cluster's TLS as stored: the authority's certificate and when each node's certificate
// ends; nil without TLS or before the authority is made.
func (se *session) tlsStatus(ctx context.Context, o observation) (*cluster.TLSStatus, error) {
	if se.s.TLS == nil || se.caCert == nil {
		return nil, nil
	}
	nodes, err := se.tlsNodes(ctx, o)
	if err != nil {
		return nil, err
	}
	return &cluster.TLSStatus{CACertificate: string(se.caPEM), NotAfter: awsspec.TLSEnds(nodes)}, nil
}

// checkTLSChange refuses to turn TLS on or off on a cluster that exists (its authority, or the lack of one,
// says how it runs): etcd members and replication cannot mix TLS and plain TCP, so a rolling replacement
// cannot change it.
func (se *session) checkTLSChange(ctx context.Context, prior cluster.Prior) error {
	if len(prior.Members) == 0 {
		return nil
	}
	found, err := se.tlsFound(ctx)
	if err != nil {
		return err
	}
	has := found != ""
	if was := prior.Spec; was != nil && was.TLS != nil && se.s.TLS != nil &&
		(was.TLS.CACertPEM != se.s.TLS.CACertPEM || was.TLS.CAKeyParameter != se.s.TLS.CAKeyParameter || was.TLS.ACMPCAArn != se.s.TLS.ACMPCAArn) {
		at := []string{"tls", "ca_cert_pem"}
		switch {
		case was.TLS.ACMPCAArn != se.s.TLS.ACMPCAArn:
			at = []string{"tls", "acm_pca_arn"}
		case was.TLS.CACertPEM == se.s.TLS.CACertPEM:
			at = []string{"tls", "ca_key_ssm_parameter"}
		}
		return cluster.Errorf(at, "Certificate Authority Cannot Change On AWS",
			"The cluster %s runs with certificates of another authority (or another reference to its key). Each node trusts one authority, "+
				"so changing it node by node would break replication and etcd between the nodes renewed and the others. Keep the authority the "+
				"cluster was created with; to move to another, create a new cluster with it from this one's archive (a restore block).", se.s.Name)
	}
	switch {
	case se.s.TLS != nil && !has:
		return cluster.Errorf([]string{"tls"}, "TLS Cannot Be Turned On In Place On AWS",
			"The cluster %s runs without TLS. On aws a node's TLS is set when it boots, and its etcd members and replication cannot mix TLS and plain "+
				"TCP while nodes are replaced one at a time, so the tls block cannot be added to a running cluster. Create a new cluster with the tls "+
				"block from this one's archive (a restore block naming its bucket and prefix), move the clients to it, then destroy this one; or "+
				"remove the block.", se.s.Name)
	case se.s.TLS == nil && has:
		return cluster.Errorf([]string{"tls"}, "TLS Cannot Be Turned Off On AWS",
			"The cluster %s runs with TLS (its certificates are in SSM: %s). Its etcd members and replication cannot mix TLS and plain TCP while "+
				"nodes are replaced one at a time, and a cluster whose traffic crosses availability zones should not drop it: keep the tls block. "+
				"To run without TLS, create a new cluster without it from this one's archive (a restore block), move the clients, then destroy this one.",
			se.s.Name, found)
	}
	return nil
}

// tlsFound is the first of the cluster's TLS parameters that exists ("" when none: it runs without TLS):
// the provider's authority, or a node's bundle (with the user's authority or ACM Private CA). One call asks
// for all of them.
func (se *session) tlsFound(ctx context.Context) (string, error) {
	if se.caCert != nil && se.s.TLS.ProviderCA() {
		return awsspec.TLSCAParameter(se.s.Name), nil // open read it already
	}
	names := []string{awsspec.TLSCAParameter(se.s.Name)}
	for _, n := range se.s.Nodes {
		names = append(names, awsspec.TLSBundleParameter(se.s.Name, n.Name))
	}
	found, err := se.cloud.ExistingParameters(ctx, names)
	if err != nil {
		return "", fmt.Errorf("reading whether the cluster's TLS parameters exist: %w", err)
	}
	if len(found) > 0 {
		return found[0], nil
	}
	return "", nil
}

// planTLS adds to plan what the apply does with the certificates before it launches anything (its lines
// first) and the certificates as they will be; the renewals of running nodes are the engine's steps (v.due
// in its input). v is viewTLS's, for a cluster that exists.
func (se *session) planTLS(ctx context.Context, plan *cluster.Plan, o observation, exists bool, v tlsView) error {
	if se.s.TLS == nil {
		return nil
	}
	plan.TLS = &cluster.TLSStatus{NotAfter: map[string]string{}}
	for _, n := range se.s.Nodes {
		plan.TLS.NotAfter[n.Name] = ""
	}
	if !exists {
		return nil // the create makes the provider's role (ensureProviderRole) as part of the cluster
	}
	if se.providerRolePlanned(ctx, o) {
		defer func() { plan.Actions = joinLines(plan.Actions, awsspec.ProviderRoleLine) }()
	}
	if lines := v.before.Lines(awsspec.TLSCAParameter(se.s.Name)); len(lines) > 0 {
		plan.Actions = joinLines(strings.Join(lines, "\n"), plan.Actions)
	}
	if v.d.NewCA {
		return nil
	}
	plan.TLS.CACertificate = string(se.caPEM)
	for node, end := range awsspec.TLSEnds(v.nodes) {
		plan.TLS.NotAfter[node] = end
	}
	for _, is := range v.d.Issue {
		plan.TLS.NotAfter[is.Node] = ""
	}
	return nil
}

// tlsParameters are the SSM parameters of the cluster's TLS, for destroy: the authority and every bundle of
// nodes (those of the spec and those observed).
func (se *session) tlsParameters(o observation) []string {
	names := []string{awsspec.TLSCAParameter(se.s.Name)}
	seen := map[string]bool{}
	add := func(node string) {
		if node != "" && !seen[node] {
			seen[node] = true
			names = append(names, awsspec.TLSBundleParameter(se.s.Name, node))
		}
	}
	for _, n := range se.s.Nodes {
		add(n.Name)
	}
	for node := range o.enis {
		add(node)
	}
	return names
}

// providerLogin opens c's session as the provider's role, with a client certificate the session's
// authority issues for it now (awsspec.ProviderCertValidity, in memory only). Only where the provider signs
// (se.ca): with ACM Private CA a certificate per session would be a paid issuance per plan, so the provider
// logs in as the superuser there (over TLS verified against the authority).
func (se *session) providerLogin(ctx context.Context, c pgclient.Config) (*pgclient.Conn, error) {
	pair, err := pki.Issue(*se.ca, awsspec.ProviderSubject(), pki.Client, se.p.clock.Now(), awsspec.ProviderCertValidity)
	if err != nil {
		return nil, fmt.Errorf("issuing the provider's client certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the provider's client certificate: %w", err)
	}
	c.User, c.Password, c.ClientCert = bootstrap.ProviderUser, "", &cert
	return pgclient.Connect(ctx, c)
}

// providerRolePlanned reports whether the plan of an existing cluster with TLS says the apply makes the
// provider's role: whether a login as it by its certificate is refused now (one session to the leader).
// Without a leader nothing can be told, and nothing is planned.
func (se *session) providerRolePlanned(ctx context.Context, o observation) bool {
	if se.ca == nil {
		return false
	}
	if _, ok := o.patroni.Leader(); !o.patroniOK || !ok {
		return false
	}
	conn, err := se.leaderConn(ctx, o)
	if err == nil {
		conn.Close(ctx)
	}
	return se.providerRoleMissing
}

// ensureProviderRole makes the provider's role on a cluster with TLS, when a login as it by its
// certificate is refused, as the superuser (awsspec.ProviderRoleLine), and waits until that login
// succeeds (a pg_hba change made by the same apply may still be reloading).
func (se *session) ensureProviderRole(ctx context.Context) error {
	if se.ca == nil {
		return nil
	}
	return wait.Until(ctx, "the provider's role to log in by its certificate", servedWait, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		o, err := se.observe(ctx)
		if err != nil {
			return false, err
		}
		se.providerRoleMissing = false
		conn, err := se.leaderConn(ctx, o)
		if err != nil {
			return false, wait.NotYet(err)
		}
		defer conn.Close(ctx)
		if !se.providerRoleMissing {
			return true, nil
		}
		tflog.Info(ctx, "apply step", map[string]any{"apply_step": awsspec.ProviderRoleLine})
		if err := conn.EnsureMonitorRole(ctx, bootstrap.ProviderUser); err != nil {
			return false, err
		}
		return false, wait.NotYet(errors.New("the role was made; logging in by the certificate again"))
	})
}

// joinLines is a and b as lines, either possibly empty.
func joinLines(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}
