package nodesim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// makeTLS makes the cluster's CA, the simulator's client certificate and every node's bundle (its member
// certificate for its address, its replication certificate for the replication user), and stores each
// bundle where the node reads it. The tests play the provider's part here.
func (c *Cluster) makeTLS(ctx context.Context, validity time.Duration) error {
	if validity == 0 {
		validity = 24 * time.Hour
	}
	now := time.Now()
	ca, err := pki.NewCA("pgnvme "+c.Spec.Name+" (node simulator)", now)
	if err != nil {
		return err
	}
	client, err := pki.Issue(ca, pki.Subject{CommonName: "nodesim"}, pki.Client, now, validity)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		return err
	}
	c.TLS = &ClusterTLS{CA: ca, Client: client, Validity: validity, Files: map[string]bootstrap.TLSFiles{}, clientCert: cert}
	for _, name := range c.Spec.Nodes {
		if err := c.IssueNodeTLS(ctx, name, validity, true); err != nil {
			return err
		}
	}
	t := c.Sim.newHTTPClient().Transport.(*http.Transport)
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.TLS.Pool(), Certificates: []tls.Certificate{cert}}
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: t}
	return nil
}

// IssueNodeTLS issues node name's certificates, valid for validity from now, and stores its bundle in SSM,
// where the node's secrets.sh reads it (at boot, and every 20 seconds after). newKey makes a new key; else the
// certificates are reissued for the key in place, as a renewal does.
func (c *Cluster) IssueNodeTLS(ctx context.Context, name string, validity time.Duration, newKey bool) error {
	h := c.Hosts[name].WithDefaults(c.Spec)
	now := time.Now()
	subject := pki.Subject{CommonName: name, IPs: []net.IP{net.ParseIP(h.PrivateIP)}}
	var member pki.Pair
	var err error
	if old, ok := c.TLS.Files[name]; ok && !newKey {
		member, err = pki.Reissue(c.TLS.CA, old.Key, subject, pki.Member, now, validity)
	} else {
		member, err = pki.Issue(c.TLS.CA, subject, pki.Member, now, validity)
	}
	if err != nil {
		return err
	}
	repl, err := pki.Reissue(c.TLS.CA, member.KeyPEM, pki.Subject{CommonName: h.Patroni.ReplicationUser}, pki.Client, now, validity)
	if err != nil {
		return err
	}
	f := bootstrap.TLSFiles{Key: member.KeyPEM, Member: member.CertPEM, Replication: repl.CertPEM, CA: c.TLS.CA.CertPEM}
	bundle, err := bootstrap.TLSBundle(f)
	if err != nil {
		return err
	}
	if err := c.Sim.PutSecureString(ctx, c.Region, h.SSM.TLS, bundle); err != nil {
		return fmt.Errorf("storing node %s's TLS bundle: %w", name, err)
	}
	c.TLS.Files[name] = f
	return nil
}

// Pool is a certificate pool with the cluster's CA only.
func (t *ClusterTLS) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(t.CA.CertPEM)
	return p
}

// ServedCertificate is the certificate node n presents on port (a TLS handshake that verifies it against
// the cluster's CA and n's address). PostgreSQL's port speaks TLS after an SSLRequest: pass postgres.
func (c *Cluster) ServedCertificate(ctx context.Context, n *Node, port int, postgres bool) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := c.Sim.DialContext(ctx, "tcp", net.JoinHostPort(n.IP.String(), fmt.Sprint(port)))
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.TLS.Pool(), ServerName: n.IP.String(), Certificates: []tls.Certificate{c.TLS.clientCert}}
	if postgres {
		return pgclient.ServedCertificateOn(ctx, raw, cfg)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return conn.ConnectionState().PeerCertificates[0], nil
}
