package localcluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// A local cluster's TLS lives in one directory under its data directory root (TLSDir): the certificate
// authority (ca.crt, world-readable so that clients can verify with it; ca.key, the provider user's, 0600),
// each member's server certificate (NAME.crt, NAME.key) and the superuser's client certificate
// (client.crt, client.key), those the server user's, 0600. Nothing of it is in Terraform's state but the
// CA's certificate and the certificates' ends.

// tlsDirName is the TLS directory's name under the data directory root.
const tlsDirName = ".pgnvme-tls"

// clientCertName is the superuser's client certificate's name in the plan and in tls.not_after.
const clientCertName = "client"

// TLSDir is the directory holding the TLS files of the cluster whose data directory root is root.
func TLSDir(root string) string { return filepath.Join(filepath.Clean(root), tlsDirName) }

func caKeyFile(dir string) string { return filepath.Join(dir, "ca.key") }

func caCertFile(dir string) string { return filepath.Join(dir, "ca.crt") }

// tlsFiles are member name's TLS files in dir.
func tlsFiles(dir, name string) *localnode.TLS {
	return &localnode.TLS{
		CAFile: caCertFile(dir), CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"),
		ClientCertFile: filepath.Join(dir, clientCertName+".crt"), ClientKeyFile: filepath.Join(dir, clientCertName+".key"),
	}
}

// setTLSFiles gives every member of s its TLS files when s has TLS (none otherwise).
func (s *Spec) setTLSFiles() error {
	if s.TLS == nil {
		for i := range s.Members {
			s.Members[i].TLS = nil
		}
		return nil
	}
	root, err := DataDirRoot(*s)
	if err != nil {
		return err
	}
	for i := range s.Members {
		s.Members[i].TLS = tlsFiles(TLSDir(root), s.Members[i].Name)
	}
	return nil
}

// tlsWants are the certificates s needs, where they live (none found yet: localspec.TLSCert's Have): each
// member's server certificate (its common name the member's, serving 127.0.0.1 and localhost) and the
// superuser's client certificate (its common name the user that pg_hba's cert line maps it to).
func tlsWants(s Spec, superuser string) []localspec.TLSCert {
	var out []localspec.TLSCert
	for _, mb := range s.Members {
		f := mb.TLS
		if f == nil {
			continue
		}
		out = append(out, localspec.TLSCert{Key: mb.Name, Member: true, CertFile: f.CertFile, KeyFile: f.KeyFile, Want: pki.Want{
			Name: mb.Name + "'s server certificate", Usage: pki.Server,
			Subject: pki.Subject{CommonName: mb.Name, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP(Host)}},
		}})
	}
	if len(out) > 0 {
		f := s.Members[0].TLS
		out = append(out, localspec.TLSCert{Key: clientCertName, CertFile: f.ClientCertFile, KeyFile: f.ClientKeyFile, Want: pki.Want{
			Name: "the client certificate of " + superuser, Usage: pki.Client, Subject: pki.Subject{CommonName: superuser},
		}})
	}
	return out
}

// observeTLS sets each member of s that has a data directory to the TLS its configuration has now (which
// is what its clients must use), and returns the members whose TLS differs from what s asks for.
func (m *Manager) observeTLS(s *Spec) ([]string, error) {
	root, err := DataDirRoot(*s)
	if err != nil {
		return nil, err
	}
	var differ []string
	for i, mb := range s.Members {
		if !hasData(mb) {
			continue
		}
		on, err := m.engine.TLSOn(Node(mb, localnode.RoleStandby))
		if err != nil {
			return nil, err
		}
		if on != (s.TLS != nil) {
			differ = append(differ, mb.Name)
			s.Members[i].TLS = nil
			if on {
				s.Members[i].TLS = tlsFiles(TLSDir(root), mb.Name)
			}
		}
	}
	return differ, nil
}

// planTLS reads what s's TLS decision rests on (the authority, each certificate and whether its key is
// the certificate's) and decides at now (localspec.DecideTLS), st the members as observed (none for a
// create): differ are the members whose TLS is to be turned on or off (observeTLS). A renewal is the
// engine's step only for a member st has data for.
func (m *Manager) planTLS(s Spec, differ []string, st []Status, now time.Time) (localspec.TLSDecision, error) {
	f := localspec.TLSFacts{Toggle: differ, On: s.TLS != nil, Primary: primaryOf(st), Now: now,
		WithData: func(name string) bool {
			return slices.ContainsFunc(st, func(x Status) bool { return x.Name == name && x.State != StateMissing })
		}}
	if s.TLS == nil {
		return localspec.DecideTLS(f), nil
	}
	f.Policy = *s.TLS
	root, err := DataDirRoot(s)
	if err != nil {
		return localspec.TLSDecision{}, err
	}
	if _, ca, err := readCA(TLSDir(root)); err == nil {
		f.CA = ca
	}
	for _, c := range tlsWants(s.withDesiredTLS(root), m.engine.Superuser()) {
		have, err := os.ReadFile(c.CertFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return localspec.TLSDecision{}, fmt.Errorf("reading %s: %w", c.CertFile, err)
		}
		c.Have = have
		if key, err := os.ReadFile(c.KeyFile); err == nil && len(have) > 0 {
			c.KeyMatches = pki.KeyMatches(have, key)
		}
		f.Certs = append(f.Certs, c)
	}
	return localspec.DecideTLS(f), nil
}

// withDesiredTLS is s with every member's TLS files as s asks for them (whatever observeTLS found).
func (s Spec) withDesiredTLS(root string) Spec {
	out := s
	out.Members = slices.Clone(s.Members)
	for i := range out.Members {
		out.Members[i].TLS = nil
		if s.TLS != nil {
			out.Members[i].TLS = tlsFiles(TLSDir(root), out.Members[i].Name)
		}
	}
	return out
}

// readCA reads the authority in dir; an error when its certificate or key is missing, unreadable, or
// the key is not the certificate's.
func readCA(dir string) (pki.Pair, *x509.Certificate, error) {
	var ca pki.Pair
	var err error
	if ca.CertPEM, err = os.ReadFile(caCertFile(dir)); err != nil {
		return ca, nil, err
	}
	if ca.KeyPEM, err = os.ReadFile(caKeyFile(dir)); err != nil {
		return ca, nil, err
	}
	c, err := pki.ParseCert(ca.CertPEM)
	if err != nil {
		return ca, nil, err
	}
	if !pki.KeyMatches(ca.CertPEM, ca.KeyPEM) {
		return ca, nil, fmt.Errorf("%s is not the key of %s", caKeyFile(dir), caCertFile(dir))
	}
	return ca, c, nil
}

// writeTLSFiles makes the authority when p says so and (re)issues the certificates p renews, each key
// written before its certificate (each file replaced at once). The directory is the provider user's and
// others may traverse it; the CA's key is the provider user's, the rest the server user's.
func (m *Manager) writeTLSFiles(s Spec, p localspec.TLSDecision, now time.Time) error {
	if s.TLS == nil || (!p.NewCA && len(p.Renew) == 0) {
		return nil
	}
	root, err := DataDirRoot(s)
	if err != nil {
		return err
	}
	dir := TLSDir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	ca, _, err := readCA(dir)
	if p.NewCA {
		if ca, err = pki.NewCA("pgnvme cluster "+s.Name, now); err != nil {
			return err
		}
		if err := writeAtomic(caKeyFile(dir), ca.KeyPEM, 0o600); err != nil {
			return err
		}
		if err := writeAtomic(caCertFile(dir), ca.CertPEM, 0o644); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("reading the cluster's certificate authority: %w", err)
	}
	for _, r := range p.Renew {
		// A renewal keeps the key in place: only the certificate file is replaced (at once), so a client that
		// reads both meanwhile never gets a certificate and a key that do not match. A new authority, or a key
		// that is missing or unreadable, gets a new key, written before its certificate.
		key, kerr := os.ReadFile(r.KeyFile)
		var pair pki.Pair
		if !p.NewCA && kerr == nil {
			pair, err = pki.Reissue(ca, key, r.Subject, r.Usage, now, s.TLS.Validity)
		}
		if p.NewCA || kerr != nil || err != nil {
			if pair, err = pki.Issue(ca, r.Subject, r.Usage, now, s.TLS.Validity); err != nil {
				return fmt.Errorf("issuing %s: %w", r.Name, err)
			}
			if err := m.engine.WriteFileOwned(r.KeyFile, pair.KeyPEM, 0o600); err != nil {
				return fmt.Errorf("writing %s: %w", r.Name, err)
			}
		}
		if err := m.engine.WriteFileOwned(r.CertFile, pair.CertPEM, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", r.Name, err)
		}
	}
	return nil
}

// writeAtomic replaces path with data (mode perm), owned by the provider's user.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// applyTLS turns TLS on or off on the members p toggles, in p's order (the primary first: a standby that
// turned TLS on before its primary could not connect), each rewritten for s's TLS (pgnvme.conf, pg_hba.conf
// and, for a standby, primary_conninfo) and reloaded; then reloads every running member whose server
// certificate p renewed (PostgreSQL reads its certificate files again on reload; sessions keep theirs).
// With TLS off, the cluster's TLS directory is removed at the end. s's members are updated as they change.
func (m *Manager) applyTLS(ctx context.Context, s *Spec, p localspec.TLSDecision, st []Status) error {
	root, err := DataDirRoot(*s)
	if err != nil {
		return err
	}
	desired := s.withDesiredTLS(root)
	running := map[string]Status{}
	var primary Member
	for _, x := range st {
		if x.State == StateRunning {
			running[x.Name] = x
			if x.Role == string(localnode.RolePrimary) {
				primary = x.Member
			}
		}
	}
	for _, name := range p.Toggle {
		i := slices.IndexFunc(s.Members, func(mb Member) bool { return mb.Name == name })
		if i < 0 {
			continue
		}
		s.Members[i].TLS = desired.Members[i].TLS
		mb := s.Members[i]
		x, ok := running[name]
		role := localnode.RoleStandby
		if ok && x.Role == string(localnode.RolePrimary) {
			role = localnode.RolePrimary
			primary = mb
		}
		tflog.Info(ctx, "cluster "+s.Name+": TLS of "+name, map[string]any{"on": p.On})
		n := Node(mb, role)
		params, err := m.engine.Parameters(n)
		if err != nil {
			return err
		}
		if err := m.engine.SetParameters(n, params); err != nil {
			return err
		}
		if role == localnode.RoleStandby && primary.Name != "" {
			if err := m.engine.Repoint(ctx, n, Node(primary, localnode.RolePrimary)); err != nil {
				return err
			}
		}
		if ok {
			if err := m.engine.Reload(ctx, n); err != nil {
				return err
			}
		}
	}
	for _, r := range p.Renew {
		if _, ok := running[r.Key]; !ok || r.Usage != pki.Server || slices.Contains(p.Toggle, r.Key) {
			continue
		}
		mb, _ := s.member(r.Key)
		tflog.Info(ctx, "cluster "+s.Name+": reloading "+r.Key+" for its new certificate", nil)
		if err := m.engine.Reload(ctx, Node(mb, localnode.RoleStandby)); err != nil {
			return err
		}
	}
	if s.TLS == nil && len(p.Toggle) > 0 {
		if err := os.RemoveAll(TLSDir(root)); err != nil {
			return err
		}
	}
	return nil
}

// tlsStatus reads s's authority and the end of each certificate; nil without TLS.
func tlsStatus(s Spec, superuser string) (*cluster.TLSStatus, error) {
	if s.TLS == nil {
		return nil, nil
	}
	root, err := DataDirRoot(s)
	if err != nil {
		return nil, err
	}
	dir := TLSDir(root)
	ca, err := os.ReadFile(caCertFile(dir))
	if err != nil {
		return nil, err
	}
	out := &cluster.TLSStatus{CACertificate: string(ca), CAFile: caCertFile(dir), NotAfter: map[string]string{}}
	for _, w := range tlsWants(s.withDesiredTLS(root), superuser) {
		b, err := os.ReadFile(w.CertFile)
		if err != nil {
			return nil, err
		}
		c, err := pki.ParseCert(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.CertFile, err)
		}
		out.NotAfter[w.Key] = c.NotAfter.UTC().Format(time.RFC3339)
	}
	return out, nil
}

// plannedTLS is tlsStatus after p: what p makes or renews, and what cannot be read now, unknown ("").
func plannedTLS(s Spec, superuser string, p localspec.TLSDecision) *cluster.TLSStatus {
	if s.TLS == nil {
		return nil
	}
	root, _ := DataDirRoot(s)
	out := &cluster.TLSStatus{CAFile: caCertFile(TLSDir(root)), NotAfter: map[string]string{}}
	if now, err := tlsStatus(s, superuser); err == nil && !p.NewCA {
		out = now
	}
	for _, w := range tlsWants(s.withDesiredTLS(root), superuser) {
		if _, ok := out.NotAfter[w.Key]; !ok {
			out.NotAfter[w.Key] = ""
		}
	}
	for _, r := range p.Renew {
		out.NotAfter[r.Key] = ""
	}
	return out
}
