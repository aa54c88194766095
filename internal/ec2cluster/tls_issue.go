package ec2cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Issuing the cluster's certificates on EC2 (tls.go holds the authority and the decision's view): what must
// exist before any launch, a running node's renewal (the engine's renew step), each bundle issued here or
// by ACM Private CA, and the wait until a node serves its new certificate.

// servedWait bounds the wait for a running node to serve its renewed certificate: it reads its bundle
// every 20 seconds (bootstrap's pgnvme-tls.timer), then reloads.
const servedWait = 3 * time.Minute

// ensureTLS makes what the certificates need before anything is launched: the authority when there is none
// (kept in SSM first: an interrupted apply finds it), and the bundles of nodes that do not run yet or that
// a new authority issues (a node reads its own at boot). A running node's renewal is the engine's step
// (renew), executed by renewTLS.
func (se *session) ensureTLS(ctx context.Context, o observation) error {
	if se.s.TLS == nil {
		return nil
	}
	now := se.p.clock.Now()
	if se.caCert == nil && !se.s.TLS.ProviderCA() {
		return fmt.Errorf("your certificate authority was not read; this is a bug in the provider")
	}
	if se.caCert == nil {
		ca, err := pki.NewCA("pgnvme "+se.s.Name, now)
		if err != nil {
			return err
		}
		tflog.Info(ctx, "making the cluster's certificate authority", map[string]any{"parameter": awsspec.TLSCAParameter(se.s.Name)})
		if err := se.cloud.PutSecret(ctx, awsspec.TLSCAParameter(se.s.Name), awsspec.CAValue(ca), se.tags("")); err != nil {
			return fmt.Errorf("storing the cluster's certificate authority: %w", err)
		}
		// The one stored wins (PutSecret keeps an existing value).
		if err := se.loadCA(ctx); err != nil {
			return err
		}
		if se.caCert == nil {
			return fmt.Errorf("the cluster's certificate authority %s is not readable after it was stored", awsspec.TLSCAParameter(se.s.Name))
		}
	}
	v, err := se.viewTLS(ctx, o)
	if err != nil {
		return err
	}
	for _, line := range v.before.Lines(awsspec.TLSCAParameter(se.s.Name)) {
		tflog.Info(ctx, "TLS step", map[string]any{"tls_step": line})
	}
	for _, is := range v.before.Issue {
		tflog.Info(ctx, "issuing the node's certificates", map[string]any{"node": is.Node, "reason": is.Reason, "new_key": is.NewKey})
		if _, err := se.issueBundle(ctx, v.node(is.Node), is.NewKey, now); err != nil {
			return err
		}
	}
	return nil
}

// renewTLS executes the engine's renew step for node: its certificates issued again as v (the decision the
// step was decided on, from o) says, and stored, then the wait until the running node serves the new one
// (PostgreSQL and Patroni's REST API), so at most one node is between certificates at a time.
func (se *session) renewTLS(ctx context.Context, v tlsView, o observation, node string) error {
	i := slices.IndexFunc(v.d.Issue, func(is awsspec.TLSIssue) bool { return is.Node == node })
	if i < 0 {
		tflog.Info(ctx, "the node's certificates are not due any more", map[string]any{"node": node})
		return nil
	}
	is := v.d.Issue[i]
	tflog.Info(ctx, "renewing the node's certificates", map[string]any{"node": node, "reason": is.Reason, "new_key": is.NewKey})
	cert, err := se.issueBundle(ctx, v.node(node), is.NewKey, se.p.clock.Now())
	if err != nil {
		return err
	}
	return se.waitServed(ctx, node, se.apiHost(o.enis[node]), cert)
}

// node is the TLS node called name (the zero node when v has none).
func (v tlsView) node(name string) awsspec.TLSNode {
	for _, n := range v.nodes {
		if n.Name == name {
			return n
		}
	}
	return awsspec.TLSNode{}
}

// issueBundle issues n's member and replication certificates from the session's authority (with n's key
// unless newKey) and stores its bundle; it returns the member certificate.
func (se *session) issueBundle(ctx context.Context, n awsspec.TLSNode, newKey bool, now time.Time) (*x509.Certificate, error) {
	validity := se.s.TLS.Policy.Validity
	var key []byte
	if old, err := bootstrap.ParseTLSBundle(n.Bundle); err == nil && !newKey {
		key = old.Key
	}
	member, err := se.issue(ctx, key, n.Subject, pki.Member, now, validity)
	if err != nil {
		return nil, fmt.Errorf("issuing node %s's certificate: %w", n.Name, err)
	}
	repl, err := se.issue(ctx, member.KeyPEM, awsspec.ReplicationSubject(), pki.Client, now, validity)
	if err != nil {
		return nil, fmt.Errorf("issuing node %s's replication certificate: %w", n.Name, err)
	}
	bundle, err := bootstrap.TLSBundle(bootstrap.TLSFiles{Key: member.KeyPEM, Member: member.CertPEM, Replication: repl.CertPEM, CA: se.caPEM})
	if err != nil {
		return nil, err
	}
	if err := se.cloud.StoreSecret(ctx, awsspec.TLSBundleParameter(se.s.Name, n.Name), bundle, se.tags(n.Name)); err != nil {
		return nil, fmt.Errorf("storing node %s's certificates: %w", n.Name, err)
	}
	return pki.ParseCert(member.CertPEM)
}

// issue makes a certificate for s (with keyPEM; a new key when nil), valid for validity from now (never
// past the authority's end): signed here with the authority's key, or by ACM Private CA from a request.
func (se *session) issue(ctx context.Context, keyPEM []byte, s pki.Subject, usage pki.Usage, now time.Time, validity time.Duration) (pki.Pair, error) {
	if se.pca == nil {
		if keyPEM == nil {
			return pki.Issue(*se.ca, s, usage, now, validity)
		}
		return pki.Reissue(*se.ca, keyPEM, s, usage, now, validity)
	}
	var err error
	if keyPEM == nil {
		if keyPEM, err = pki.NewKey(); err != nil {
			return pki.Pair{}, err
		}
	}
	csr, err := pki.Request(keyPEM, s, usage)
	if err != nil {
		return pki.Pair{}, err
	}
	end := now.Add(validity)
	if end.After(se.caCert.NotAfter) {
		end = se.caCert.NotAfter
	}
	cert, err := se.pcas.Issue(ctx, se.pca.ARN, csr, se.pca.SigningAlgorithm, end)
	if err != nil {
		return pki.Pair{}, err
	}
	return pki.Pair{CertPEM: cert, KeyPEM: keyPEM}, nil
}

// waitServed waits until node (at host) serves want on PostgreSQL's port and on Patroni's REST API.
func (se *session) waitServed(ctx context.Context, node, host string, want *x509.Certificate) error {
	var last string
	err := wait.Until(ctx, "node "+node+" to serve its renewed certificate", servedWait, se.p.poll, se.p.clock, func(ctx context.Context) (bool, error) {
		pc, err := pgclient.ServedCertificate(ctx, host, bootstrap.DefaultEC2Port, se.roots)
		if err != nil {
			last = err.Error()
			return false, wait.NotYet(err)
		}
		rc, err := se.patroni.ServedCertificate(ctx, host)
		if err != nil {
			last = err.Error()
			return false, wait.NotYet(err)
		}
		last = fmt.Sprintf("PostgreSQL serves serial %s, the REST API %s, want %s", pc.SerialNumber, rc.SerialNumber, want.SerialNumber)
		return pc.Equal(want) && rc.Equal(want), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	tflog.Info(ctx, "the node serves its renewed certificate", map[string]any{"node": node, "not_after": want.NotAfter.UTC().Format(time.RFC3339)})
	return nil
}
