package localspec

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// A local cluster's TLS decision: which certificates an apply makes or renews, which of the renewals are
// the engine's steps, and in which order the members' TLS is turned on or off. The local platform reads
// the files (localcluster/tls.go) and executes; the plan prints what this decides, and the apply does it.

// TLSCert is one certificate a local cluster needs, where it lives, and as the platform found it.
type TLSCert struct {
	// Want is what the certificate must be (its name in the plan, subject and usage).
	pki.Want
	// Key is its name in tls.not_after: a member's name, or the superuser's client certificate's.
	Key string
	// Member is true for a member's server certificate (Key is the member's name).
	Member bool
	// CertFile and KeyFile are where the certificate and its key are.
	CertFile, KeyFile string
	// Have is the certificate as found (nil: there is none); KeyMatches whether its key is there and is the
	// certificate's.
	Have       []byte
	KeyMatches bool
}

// TLSFacts are what the decision rests on.
type TLSFacts struct {
	// CA is the cluster's authority, nil when it is missing or cannot be read (a new one is made).
	CA *x509.Certificate
	// Certs are the certificates the cluster needs, in the members' order, the client certificate last.
	Certs  []TLSCert
	Policy pki.Policy
	Now    time.Time
	// Toggle are the members whose TLS is turned on or off (their configuration differs from the block's),
	// On whether the block asks for TLS; Primary is the running primary ("" when not exactly one runs).
	Toggle  []string
	On      bool
	Primary string
	// WithData reports whether a member has its data (the engine sees it as a live machine).
	WithData func(member string) bool
}

// TLSRenewal is one certificate an apply makes or renews.
type TLSRenewal struct {
	TLSCert
	Reason string
	// New is true when there is no certificate yet: issued, nothing to reload.
	New bool
	// Step is true when the renewal is the engine's step (topology.StepRenew): a member's server
	// certificate renewed under the same authority while the member has its data and keeps its TLS as it
	// is. The rest the apply makes before the engine's steps.
	Step bool
}

// TLSDecision is what an apply does with a local cluster's TLS.
type TLSDecision struct {
	NewCA bool
	Renew []TLSRenewal
	// Toggle are the members whose TLS is turned on (On) or off, the primary first (a standby that turned
	// TLS on before its primary could not connect).
	Toggle []string
	On     bool
}

// Empty reports whether the apply has nothing to do with the certificates.
func (d TLSDecision) Empty() bool { return !d.NewCA && len(d.Renew) == 0 && len(d.Toggle) == 0 }

// DecideTLS decides f: every certificate when there is no authority; else each that is missing, does
// not match the authority, its names or the policy (pki.Check), ends within the renewal margin, or whose
// key is missing or not the certificate's.
func DecideTLS(f TLSFacts) TLSDecision {
	d := TLSDecision{On: f.On}
	if len(f.Toggle) > 0 {
		d.Toggle = slices.Clone(f.Toggle)
		slices.SortStableFunc(d.Toggle, func(a, b string) int {
			switch {
			case a == f.Primary:
				return -1
			case b == f.Primary:
				return 1
			}
			return 0
		})
	}
	if !f.On {
		return d // without TLS there is nothing to issue; turning it off removes the certificates
	}
	d.NewCA = f.CA == nil
	for _, c := range f.Certs {
		if d.NewCA {
			d.Renew = append(d.Renew, TLSRenewal{TLSCert: c, Reason: "the certificate authority is new"})
			continue
		}
		r, due := pki.Check(f.CA, c.Want, c.Have, f.Now, f.Policy)
		if !due && len(c.Have) > 0 && !c.KeyMatches {
			r, due = pki.Renewal{Name: c.Name, Reason: "its key " + c.KeyFile + " is missing or not the certificate's"}, true
		}
		if !due {
			continue
		}
		step := len(c.Have) > 0 && c.Member && f.WithData != nil && f.WithData(c.Key) && !slices.Contains(d.Toggle, c.Key)
		d.Renew = append(d.Renew, TLSRenewal{TLSCert: c, Reason: r.Reason, New: len(c.Have) == 0, Step: step})
	}
	return d
}

// Prepared is d without the renewals that are the engine's steps: what the apply does before them.
func (d TLSDecision) Prepared() TLSDecision {
	out := d
	out.Renew = slices.DeleteFunc(slices.Clone(d.Renew), func(r TLSRenewal) bool { return r.Step })
	return out
}

// Due says why each member whose renewal is the engine's step is renewed (topology.Member.CertDue).
func (d TLSDecision) Due() map[string]string {
	out := map[string]string{}
	for _, r := range d.Renew {
		if r.Step {
			out[r.Key] = "its server certificate: " + r.Reason
		}
	}
	return out
}

// Lines are the plan's lines for d, in the order the apply takes them.
func (d TLSDecision) Lines() []string {
	var out []string
	if d.NewCA {
		out = append(out, "make the cluster's certificate authority (ECDSA P-256, valid 10 years) and issue every certificate from it")
	}
	for _, r := range d.Renew {
		if d.NewCA {
			break
		}
		if r.New {
			out = append(out, "issue "+r.Name)
			continue
		}
		line := "renew " + r.Name + ": " + r.Reason
		if r.Usage == pki.Server && !slices.Contains(d.Toggle, r.Key) {
			line += "; then reload " + r.Key + " (no restart)"
		}
		out = append(out, line)
	}
	if len(d.Toggle) > 0 {
		what := "turn TLS on"
		if !d.On {
			what = "turn TLS off"
		}
		line := fmt.Sprintf("%s: %s first, then %s: each rewritten (ssl, pg_hba.conf, primary_conninfo) and reloaded, no restart", what, d.Toggle[0], strings.Join(d.Toggle[1:], ", "))
		if len(d.Toggle) == 1 {
			line = fmt.Sprintf("%s: %s rewritten (ssl, pg_hba.conf, primary_conninfo) and reloaded, no restart", what, d.Toggle[0])
		}
		if !d.On {
			line += "; the cluster's certificates are removed"
		}
		out = append(out, line)
	}
	return out
}
