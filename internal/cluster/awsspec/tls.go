package awsspec

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// A cluster's TLS on EC2: where its certificates are kept, what each node's certificates name, and the one
// decision of which nodes an apply issues certificates to, which the plan prints and the apply executes.
//
// The provider makes the cluster's certificate authority and keeps it (certificate and key) in one
// SecureString outside the cluster's SSM path, so that the nodes' role, which reads that path only, cannot
// read the key. Each node's bundle (bootstrap.TLSBundle: its key, its member certificate, its replication
// client certificate, the authority's certificate) is a SecureString under the path, where the node reads it
// at boot and every 20 seconds after; a renewal is a new bundle, which the node writes to its files and
// reloads (no restart).

// TLSCAParameter is the SecureString holding the certificate authority of the cluster called name (its
// certificate, then its key, PEM).
func TLSCAParameter(name string) string { return "/pgnvme-ca/" + name }

// TLSBundleParameter is where node's bundle is, as the node reads it (bootstrap's default).
func TLSBundleParameter(name, node string) string {
	return bootstrap.EC2Node{Name: node}.WithDefaults(bootstrap.Cluster{Name: name}).SSM.TLS
}

// TLSAddresses are where clients and members reach a node: its interface's private address, its Elastic
// IP (api_address = "public_ip"; "" otherwise) and the load balancer's DNS name ("" without one), so that a
// client verifies the node's certificate (verify-full) whichever it connects to.
type TLSAddresses struct {
	PrivateIP, PublicIP, LoadBalancer string
}

// TLSSubject is node's member certificate's subject: the node's name (as etcd and Patroni name it) and a,
// in a fixed order.
func TLSSubject(node string, a TLSAddresses) pki.Subject {
	s := pki.Subject{CommonName: node}
	for _, ip := range []string{a.PrivateIP, a.PublicIP} {
		if parsed := net.ParseIP(ip); parsed != nil {
			s.IPs = append(s.IPs, parsed)
		}
	}
	if a.LoadBalancer != "" {
		s.DNSNames = []string{a.LoadBalancer}
	}
	return s
}

// ReplicationSubject is the subject of every node's replication client certificate: the replication user,
// which pg_hba's cert line maps it to.
func ReplicationSubject() pki.Subject {
	return pki.Subject{CommonName: bootstrap.DefaultReplicationUser}
}

// ProviderSubject is what the provider's client certificate names: its role (bootstrap.ProviderUser).
func ProviderSubject() pki.Subject {
	return pki.Subject{CommonName: bootstrap.ProviderUser}
}

// ProviderCertValidity is how long the client certificate the provider issues itself for one session is
// valid: the certificate is never stored.
const ProviderCertValidity = time.Hour

// ProviderRoleLine is the plan's and the apply's words for making the provider's role on a cluster with
// TLS, after every other step (the apply logs in as the superuser for it, once).
const ProviderRoleLine = "then make the role " + bootstrap.ProviderUser + " (a member of pg_monitor) unless it exists: the provider logs in as it " +
	"with a client certificate it issues itself for each session, never a password"

// TLSNode is a node as the decision sees it: its name, what its certificates must name, and its bundle as
// stored ("" when there is none).
type TLSNode struct {
	Name    string
	Subject pki.Subject
	Bundle  string
}

// TLSIssue is one node's certificates an apply issues, and why.
type TLSIssue struct {
	Node, Reason string
	// New is true when the node has no bundle yet: nothing serves an older certificate, so nothing waits.
	New bool
	// NewKey is true when the node's key cannot be kept (there is none, or it does not match its
	// certificate); a renewal otherwise keeps the key, so that a node reading its files while they change
	// reads a key that matches either certificate.
	NewKey bool
}

// TLSDecision is what an apply does with a cluster's certificates, in node order.
type TLSDecision struct {
	// NewCA is true when the cluster has no certificate authority yet: it is made, and every node issued.
	NewCA bool
	Issue []TLSIssue
}

// Empty reports whether the apply has nothing to do with the certificates.
func (d TLSDecision) Empty() bool { return !d.NewCA && len(d.Issue) == 0 }

// DecideTLS decides which nodes' certificates an apply issues: every node's when there is no authority (ca
// nil); else each node without a bundle, with a bundle that cannot be read, of another authority, whose key
// does not match, whose certificates name other addresses or users, or which ends within p's renewal margin
// (pki.Check, for the member and the replication certificate alike).
func DecideTLS(ca *x509.Certificate, nodes []TLSNode, p pki.Policy, now time.Time) TLSDecision {
	var d TLSDecision
	if ca == nil {
		d.NewCA = true
		for _, n := range nodes {
			d.Issue = append(d.Issue, TLSIssue{Node: n.Name, Reason: "the cluster has no certificate authority yet", New: n.Bundle == "", NewKey: true})
		}
		return d
	}
	for _, n := range nodes {
		if reason, newKey, due := bundleDue(ca, n, p, now); due {
			d.Issue = append(d.Issue, TLSIssue{Node: n.Name, Reason: reason, New: n.Bundle == "", NewKey: newKey})
		}
	}
	return d
}

// Split parts d by when the apply takes each issue: a node that runs (running reports which) and has a
// bundle is renewed as a step of the engine (topology.StepRenew, its Member.CertDue Due's words), so the
// plan lists it where the apply does it; the rest (every issue when the authority is new, a bundle for a
// node still to launch) the apply makes before it launches anything, since a node reads its own at boot.
func (d TLSDecision) Split(running func(node string) bool) (before TLSDecision, due map[string]string) {
	before.NewCA = d.NewCA
	for _, is := range d.Issue {
		if d.NewCA || is.New || !running(is.Node) {
			before.Issue = append(before.Issue, is)
			continue
		}
		if due == nil {
			due = map[string]string{}
		}
		due[is.Node] = is.Due()
	}
	return before, due
}

// Due is why a running node's certificates are renewed, as the engine's step says it.
func (is TLSIssue) Due() string {
	if is.NewKey {
		return is.Reason + " (a new key)"
	}
	return is.Reason + " (same key); it reads them within 20 seconds"
}

// bundleDue decides one node's bundle: why it is (re)issued, and whether with a new key.
func bundleDue(ca *x509.Certificate, n TLSNode, p pki.Policy, now time.Time) (reason string, newKey, due bool) {
	if n.Bundle == "" {
		return "there is none yet", true, true
	}
	f, err := bootstrap.ParseTLSBundle(n.Bundle)
	if err != nil {
		return fmt.Sprintf("its bundle cannot be read (%v)", err), true, true
	}
	if c, err := pki.ParseCert(f.CA); err != nil || !c.Equal(ca) {
		return "its bundle carries another certificate authority than the cluster's", false, true
	}
	if !pki.KeyMatches(f.Member, f.Key) {
		return "its key does not match its certificate", true, true
	}
	if r, due := pki.Check(ca, pki.Want{Name: n.Name, Subject: n.Subject, Usage: pki.Member}, f.Member, now, p); due {
		return "its certificate: " + r.Reason, false, true
	}
	if r, due := pki.Check(ca, pki.Want{Name: n.Name, Subject: ReplicationSubject(), Usage: pki.Client}, f.Replication, now, p); due {
		return "its replication certificate: " + r.Reason, false, true
	}
	if !pki.KeyMatches(f.Replication, f.Key) {
		return "its replication certificate is not for its key", false, true
	}
	return "", false, false
}

// Lines are the plan's lines for d, in the order the apply takes them; caParameter is where the authority
// is kept.
func (d TLSDecision) Lines(caParameter string) []string {
	if d.NewCA {
		var nodes []string
		for _, is := range d.Issue {
			nodes = append(nodes, is.Node)
		}
		return []string{fmt.Sprintf("make the cluster's certificate authority (ECDSA P-256, valid 10 years; its key in the SecureString %s, which the nodes "+
			"cannot read) and issue the certificates of %s from it", caParameter, strings.Join(nodes, ", "))}
	}
	var out []string
	for _, is := range d.Issue {
		if is.New {
			out = append(out, "issue "+is.Node+"'s certificates")
			continue
		}
		key := "same key"
		if is.NewKey {
			key = "a new key"
		}
		out = append(out, fmt.Sprintf("renew %s's certificates (%s): %s; a running %s reads them within 20 seconds and reloads (no restart, no failover), "+
			"and the apply waits until it serves the new certificate", is.Node, key, is.Reason, is.Node))
	}
	return out
}

// TLSEnds are when each node's member certificate ends (RFC 3339), by node, from the bundles as stored; a
// node whose bundle cannot be read is left out.
func TLSEnds(nodes []TLSNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		f, err := bootstrap.ParseTLSBundle(n.Bundle)
		if err != nil {
			continue
		}
		if c, err := pki.ParseCert(f.Member); err == nil {
			out[n.Name] = c.NotAfter.UTC().Format(time.RFC3339)
		}
	}
	return out
}

// CAPair splits the authority's parameter value into its certificate and key (CAValue's order).
func CAPair(value string) (pki.Pair, error) {
	var p pki.Pair
	rest := []byte(value)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE" && p.CertPEM == nil:
			p.CertPEM = pem.EncodeToMemory(b)
		case strings.HasSuffix(b.Type, "PRIVATE KEY") && p.KeyPEM == nil:
			p.KeyPEM = pem.EncodeToMemory(b)
		}
	}
	if p.CertPEM == nil || p.KeyPEM == nil {
		return pki.Pair{}, fmt.Errorf("the certificate authority's parameter holds no certificate and key")
	}
	if !pki.KeyMatches(p.CertPEM, p.KeyPEM) {
		return pki.Pair{}, fmt.Errorf("the certificate authority's key does not match its certificate")
	}
	return p, nil
}

// CAValue is the authority's parameter value: its certificate, then its key.
func CAValue(p pki.Pair) string {
	return string(bytes.TrimSpace(p.CertPEM)) + "\n" + string(bytes.TrimSpace(p.KeyPEM)) + "\n"
}

// CAProblem is what is wrong with the authority ca for issuing p's certificates now: it has ended, or it
// ends before a certificate issued now would (every certificate would be cut short and due again at each
// apply); "" when nothing.
func CAProblem(ca *x509.Certificate, p pki.Policy, now time.Time) string {
	end := ca.NotAfter.UTC().Format(time.RFC3339)
	switch {
	case !now.Before(ca.NotAfter):
		return fmt.Sprintf("The certificate authority %s ended at %s: renew it (same key or a new one) before the cluster's certificates can be issued.", ca.Subject, end)
	case ca.NotAfter.Before(now.Add(p.Validity)):
		return fmt.Sprintf("The certificate authority %s ends at %s, before a certificate issued now for validity_period_hours (%d hours) would: "+
			"renew the authority, or shorten validity_period_hours.", ca.Subject, end, int(p.Validity.Hours()))
	}
	return ""
}

// PrivateCA is an ACM Private CA as described: its status, type, usage mode and its certificate.
type PrivateCA struct {
	ARN       string
	Status    string // ACTIVE, DISABLED, PENDING_CERTIFICATE, EXPIRED, ...
	Type      string // ROOT or SUBORDINATE
	UsageMode string // GENERAL_PURPOSE or SHORT_LIVED_CERTIFICATE
	Cert      *x509.Certificate
}

// PrivateCAShortLived is the longest validity ACM Private CA issues from a CA in short-lived certificate
// mode: seven days.
const PrivateCAShortLived = 7 * 24 * time.Hour

// PrivateCAProblem is what stops the ACM Private CA ca from issuing p's certificates now ("" when
// nothing): it is not active, its usage mode does not allow the validity, or its certificate ends too soon
// (CAProblem).
func PrivateCAProblem(ca PrivateCA, p pki.Policy, now time.Time) string {
	switch {
	case ca.Status != "ACTIVE":
		return fmt.Sprintf("The ACM Private CA %s is %s, not ACTIVE: it issues no certificate until it is (install its certificate, or enable "+
			"or restore it), or name another.", ca.ARN, ca.Status)
	case ca.UsageMode == "SHORT_LIVED_CERTIFICATE" && p.Validity > PrivateCAShortLived:
		return fmt.Sprintf("The ACM Private CA %s is in short-lived certificate mode, which issues certificates valid for at most 7 days: set "+
			"validity_period_hours to %d or less (and early_renewal_hours below it, applying at least that often), or use a general-purpose CA.",
			ca.ARN, int(PrivateCAShortLived.Hours()))
	case ca.Cert == nil:
		return fmt.Sprintf("The ACM Private CA %s has no certificate installed.", ca.ARN)
	}
	return CAProblem(ca.Cert, p, now)
}
