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
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
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

// tlsWant is a certificate s needs and where it lives.
type tlsWant struct {
	pki.Want
	// Key is the name in tls.not_after: the member's, or clientCertName.
	Key        string
	Cert, Priv string
}

// tlsWants are the certificates s needs: each member's server certificate (its common name the member's,
// serving 127.0.0.1 and localhost) and the superuser's client certificate (its common name the user that
// pg_hba's cert line maps it to).
func tlsWants(s Spec, superuser string) []tlsWant {
	var out []tlsWant
	for _, mb := range s.Members {
		f := mb.TLS
		if f == nil {
			continue
		}
		out = append(out, tlsWant{Key: mb.Name, Cert: f.CertFile, Priv: f.KeyFile, Want: pki.Want{
			Name: mb.Name + "'s server certificate", Usage: pki.Server,
			Subject: pki.Subject{CommonName: mb.Name, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP(Host)}},
		}})
	}
	if len(out) > 0 {
		f := s.Members[0].TLS
		out = append(out, tlsWant{Key: clientCertName, Cert: f.ClientCertFile, Priv: f.ClientKeyFile, Want: pki.Want{
			Name: "the client certificate of " + superuser, Usage: pki.Client, Subject: pki.Subject{CommonName: superuser},
		}})
	}
	return out
}

// tlsPlan is what an apply does with a cluster's TLS: the authority made, the certificates (re)issued,
// and the members whose TLS is turned on or off (the primary first).
type tlsPlan struct {
	NewCA  bool
	Renew  []tlsRenewal
	Toggle []string
	On     bool
}

type tlsRenewal struct {
	tlsWant
	Reason string
	// New is true when there is no certificate yet (a member added): issued, nothing to reload.
	New bool
	// Step is true when the renewal is the engine's step (topology.StepRenew, Member.CertDue): a member's
	// server certificate renewed under the same authority while the member has its data and keeps its TLS
	// on. The rest the apply makes before the engine's steps.
	Step bool
}

func (p tlsPlan) empty() bool { return !p.NewCA && len(p.Renew) == 0 && len(p.Toggle) == 0 }

// prepared is p without the renewals that are the engine's steps: what the apply does before them.
func (p tlsPlan) prepared() tlsPlan {
	out := p
	out.Renew = slices.DeleteFunc(slices.Clone(p.Renew), func(r tlsRenewal) bool { return r.Step })
	return out
}

// due says why each member whose renewal is the engine's step is renewed (topology.Member.CertDue).
func (p tlsPlan) due() map[string]string {
	out := map[string]string{}
	for _, r := range p.Renew {
		if r.Step {
			out[r.Key] = "its server certificate: " + r.Reason
		}
	}
	return out
}

// lines are the plan's lines for p, in the order the apply takes them.
func (p tlsPlan) lines() []string {
	var out []string
	if p.NewCA {
		out = append(out, "make the cluster's certificate authority (ECDSA P-256, valid 10 years) and issue every certificate from it")
	}
	for _, r := range p.Renew {
		if p.NewCA {
			break
		}
		if r.New {
			out = append(out, "issue "+r.Name)
			continue
		}
		line := "renew " + r.Name + ": " + r.Reason
		if r.Usage == pki.Server && !slices.Contains(p.Toggle, r.Key) {
			line += "; then reload " + r.Key + " (no restart)"
		}
		out = append(out, line)
	}
	if len(p.Toggle) > 0 {
		what := "turn TLS on"
		if !p.On {
			what = "turn TLS off"
		}
		line := fmt.Sprintf("%s: %s first, then %s: each rewritten (ssl, pg_hba.conf, primary_conninfo) and reloaded, no restart", what, p.Toggle[0], strings.Join(p.Toggle[1:], ", "))
		if len(p.Toggle) == 1 {
			line = fmt.Sprintf("%s: %s rewritten (ssl, pg_hba.conf, primary_conninfo) and reloaded, no restart", what, p.Toggle[0])
		}
		if !p.On {
			line += "; the cluster's certificates are removed"
		}
		out = append(out, line)
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

// planTLS decides what the apply does with s's TLS at now, st the members as observed (none for a
// create): differ are the members whose TLS is to be turned on or off (observeTLS), ordered with the
// primary first. A renewal is the engine's step (tlsRenewal.Step) only for a member st has data for.
func (m *Manager) planTLS(s Spec, differ []string, st []Status, now time.Time) (tlsPlan, error) {
	var p tlsPlan
	primary := primaryOf(st)
	withData := func(name string) bool {
		return slices.ContainsFunc(st, func(x Status) bool { return x.Name == name && x.State != StateMissing })
	}
	if len(differ) > 0 {
		p.On = s.TLS != nil
		p.Toggle = slices.Clone(differ)
		slices.SortStableFunc(p.Toggle, func(a, b string) int {
			switch {
			case a == primary:
				return -1
			case b == primary:
				return 1
			}
			return 0
		})
	}
	if s.TLS == nil {
		return p, nil
	}
	root, err := DataDirRoot(s)
	if err != nil {
		return p, err
	}
	_, caCert, err := readCA(TLSDir(root))
	if err != nil {
		p.NewCA = true
	}
	for _, w := range tlsWants(s.withDesiredTLS(root), m.engine.Superuser()) {
		if p.NewCA {
			p.Renew = append(p.Renew, tlsRenewal{tlsWant: w, Reason: "the certificate authority is new"})
			continue
		}
		have, err := os.ReadFile(w.Cert)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return p, fmt.Errorf("reading %s: %w", w.Cert, err)
		}
		r, due := pki.Check(caCert, w.Want, have, now, *s.TLS)
		if !due && len(have) > 0 {
			if key, err := os.ReadFile(w.Priv); err != nil || !pki.KeyMatches(have, key) {
				r, due = pki.Renewal{Name: w.Name, Reason: "its key " + w.Priv + " is missing or not the certificate's"}, true
			}
		}
		if due {
			step := len(have) > 0 && w.Usage == pki.Server && withData(w.Key) && !slices.Contains(p.Toggle, w.Key)
			p.Renew = append(p.Renew, tlsRenewal{tlsWant: w, Reason: r.Reason, New: len(have) == 0, Step: step})
		}
	}
	return p, nil
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
func (m *Manager) writeTLSFiles(s Spec, p tlsPlan, now time.Time) error {
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
		key, kerr := os.ReadFile(r.Priv)
		var pair pki.Pair
		if !p.NewCA && kerr == nil {
			pair, err = pki.Reissue(ca, key, r.Subject, r.Usage, now, s.TLS.Validity)
		}
		if p.NewCA || kerr != nil || err != nil {
			if pair, err = pki.Issue(ca, r.Subject, r.Usage, now, s.TLS.Validity); err != nil {
				return fmt.Errorf("issuing %s: %w", r.Name, err)
			}
			if err := m.engine.WriteFileOwned(r.Priv, pair.KeyPEM, 0o600); err != nil {
				return fmt.Errorf("writing %s: %w", r.Name, err)
			}
		}
		if err := m.engine.WriteFileOwned(r.Cert, pair.CertPEM, 0o600); err != nil {
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
func (m *Manager) applyTLS(ctx context.Context, s *Spec, p tlsPlan, st []Status) error {
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
		b, err := os.ReadFile(w.Cert)
		if err != nil {
			return nil, err
		}
		c, err := pki.ParseCert(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Cert, err)
		}
		out.NotAfter[w.Key] = c.NotAfter.UTC().Format(time.RFC3339)
	}
	return out, nil
}

// plannedTLS is tlsStatus after p: what p makes or renews, and what cannot be read now, unknown ("").
func plannedTLS(s Spec, superuser string, p tlsPlan) *cluster.TLSStatus {
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
