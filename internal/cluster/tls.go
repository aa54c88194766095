package cluster

import (
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TLSInput is the tls block as given; nil values are unset.
type TLSInput struct {
	ValidityPeriodHours *int
	EarlyRenewalHours   *int
}

// TLS is a cluster's TLS: the certificates the platform issues from the cluster's own certificate authority
// and how long they live.
type TLS struct {
	Policy pki.Policy
}

// tlsOf is the tls block with its defaults (pki.DefaultPolicy), nil when the block is not given.
func tlsOf(in *TLSInput) *TLS {
	if in == nil {
		return nil
	}
	p := pki.DefaultPolicy()
	if in.ValidityPeriodHours != nil {
		p.Validity = time.Duration(*in.ValidityPeriodHours) * time.Hour
	}
	if in.EarlyRenewalHours != nil {
		p.RenewBefore = time.Duration(*in.EarlyRenewalHours) * time.Hour
	}
	return &TLS{Policy: p}
}

// TLSStatus is a cluster's TLS as read (or planned): the certificate authority's certificate (PEM; "" in
// a plan when the apply makes it) and when each certificate ends (RFC 3339, by the name the platform gives
// it; "" in a plan for one the apply renews).
type TLSStatus struct {
	CACertificate string
	// CAFile is where the authority's certificate is on the machine that runs Terraform (the local
	// platform), for the connection URIs' sslrootcert; "" when clients get it otherwise.
	CAFile   string
	NotAfter map[string]string
}

// validateTLS reports what is wrong with s's tls block.
func validateTLS(s Spec) []*FieldError {
	if s.TLS == nil {
		return nil
	}
	var out []*FieldError
	if field, problem := s.TLS.Policy.Problem(); problem != "" {
		path := []string{"tls", "early_renewal_hours"}
		if field == pki.FieldValidity {
			path = []string{"tls", "validity_period_hours"}
		}
		out = append(out, Errorf(path, "Invalid Certificate Lifetime", "%s. The defaults are validity_period_hours = %d (90 days) and "+
			"early_renewal_hours = %d (7 days).", capitalize(problem), pki.DefaultValidityHours, pki.DefaultRenewBeforeHours))
	}
	return out
}
