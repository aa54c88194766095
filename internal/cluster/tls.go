package cluster

import (
	"crypto/x509"
	"regexp"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TLSInput is the tls block as given; nil values are unset.
type TLSInput struct {
	ValidityPeriodHours *int
	EarlyRenewalHours   *int
	// CACertPEM and CAKeyParameter are a certificate authority of the user's: its certificate (PEM) and
	// where its key is (on aws an SSM SecureString's name); both or neither.
	CACertPEM, CAKeyParameter *string
	// ACMPCAArn is an ACM Private CA that issues the certificates instead (aws only).
	ACMPCAArn *string
}

// TLS is a cluster's TLS: the certificates the platform issues from the cluster's own certificate authority
// and how long they live.
type TLS struct {
	Policy pki.Policy
	// CACertPEM and CAKeyParameter are the user's own authority (its certificate, and the reference to its
	// key); both "" when the platform makes the cluster's.
	CACertPEM      string `json:",omitempty"`
	CAKeyParameter string `json:",omitempty"`
	// ACMPCAArn is the ACM Private CA that issues the certificates ("" when the provider's authority or the
	// user's key does).
	ACMPCAArn string `json:",omitempty"`
}

// OwnCA reports whether t uses the user's certificate authority by its certificate and key.
func (t *TLS) OwnCA() bool { return t != nil && (t.CACertPEM != "" || t.CAKeyParameter != "") }

// PrivateCA reports whether an ACM Private CA issues t's certificates.
func (t *TLS) PrivateCA() bool { return t != nil && t.ACMPCAArn != "" }

// ProviderCA reports whether t's authority is one the platform makes (neither the user's nor ACM's).
func (t *TLS) ProviderCA() bool { return t != nil && !t.OwnCA() && !t.PrivateCA() }

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
	t := &TLS{Policy: p}
	if in.CACertPEM != nil {
		t.CACertPEM = *in.CACertPEM
	}
	if in.CAKeyParameter != nil {
		t.CAKeyParameter = *in.CAKeyParameter
	}
	if in.ACMPCAArn != nil {
		t.ACMPCAArn = *in.ACMPCAArn
	}
	return t
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
	out = append(out, validateOwnCA(s)...)
	out = append(out, validatePrivateCA(s)...)
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

// validateOwnCA reports what is wrong with the user's certificate authority, if any: its certificate and its
// key's reference go together, the certificate is a certificate authority's, and the platform is aws (on
// local the provider's authority is made for the machine). Where the key may be kept is the platform's rule.
func validateOwnCA(s Spec) []*FieldError {
	t := s.TLS
	if !t.OwnCA() {
		return nil
	}
	certPath, keyPath := []string{"tls", "ca_cert_pem"}, []string{"tls", "ca_key_ssm_parameter"}
	switch {
	case s.Platform() != PlatformAWS:
		return []*FieldError{Errorf(certPath, "Own Certificate Authority On AWS Only",
			"A certificate authority of your own is for aws clusters, whose nodes read its certificates from SSM; on the local platform the provider "+
				"makes the cluster's authority on this machine. Remove ca_cert_pem and ca_key_ssm_parameter.")}
	case t.CACertPEM == "":
		return []*FieldError{Errorf(certPath, "Certificate Authority Without Its Certificate",
			"tls.ca_key_ssm_parameter names your authority's key, but tls.ca_cert_pem does not give its certificate: give both (the certificate as PEM, "+
				"for example file(\"ca.crt\") or tls_self_signed_cert's cert_pem), or neither for the provider's own authority.")}
	case t.CAKeyParameter == "":
		return []*FieldError{Errorf(keyPath, "Certificate Authority Without Its Key",
			"tls.ca_cert_pem gives your authority's certificate, but tls.ca_key_ssm_parameter does not say where its private key is: store the key "+
				"(PEM) in an SSM SecureString in the cluster's region and give its name here. The key is read by the provider only, never put in "+
				"Terraform's state. Or remove ca_cert_pem for the provider's own authority.")}
	}
	c, err := pki.ParseCert([]byte(t.CACertPEM))
	switch {
	case err != nil:
		return []*FieldError{Errorf(certPath, "Invalid Certificate Authority", "tls.ca_cert_pem is not a PEM certificate: %v.", err)}
	case !c.IsCA || c.KeyUsage&x509.KeyUsageCertSign == 0:
		return []*FieldError{Errorf(certPath, "Not A Certificate Authority",
			"tls.ca_cert_pem (%s) is not a certificate authority's certificate (basic constraints CA:TRUE and key usage keyCertSign): give the "+
				"authority that issues the cluster's certificates, not a leaf.", c.Subject)}
	}
	return nil
}

// acmPCAArn is an ACM Private CA's ARN: arn:<partition>:acm-pca:<region>:<account>:certificate-authority/<id>.
var acmPCAArn = regexp.MustCompile(`^arn:aws[a-z-]*:acm-pca:[a-z]{2}(-[a-z]+)+-\d:\d{12}:certificate-authority/[0-9a-f-]{36}$`)

// validatePrivateCA reports what is wrong with tls.acm_pca_arn: aws only, an ACM Private CA's ARN, and
// not beside the user's own authority (one authority issues a cluster's certificates).
func validatePrivateCA(s Spec) []*FieldError {
	t := s.TLS
	if !t.PrivateCA() {
		return nil
	}
	at := []string{"tls", "acm_pca_arn"}
	switch {
	case s.Platform() != PlatformAWS:
		return []*FieldError{Errorf(at, "ACM Private CA On AWS Only",
			"An ACM Private CA issues certificates for aws clusters; on the local platform the provider makes the cluster's authority on this "+
				"machine. Remove acm_pca_arn.")}
	case t.OwnCA():
		return []*FieldError{Errorf(at, "Two Certificate Authorities",
			"tls.acm_pca_arn and tls.ca_cert_pem/ca_key_ssm_parameter each name the authority that issues the cluster's certificates: give one. "+
				"With acm_pca_arn, ACM Private CA signs and its key never leaves it; with ca_cert_pem, the provider signs with your key from SSM.")}
	case !acmPCAArn.MatchString(t.ACMPCAArn):
		return []*FieldError{Errorf(at, "Invalid ACM Private CA ARN",
			"tls.acm_pca_arn %q is not an ACM Private CA's ARN: give one such as "+
				"arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/11111111-2222-3333-4444-555555555555 (aws acm-pca list-certificate-authorities).",
			t.ACMPCAArn)}
	}
	return nil
}

// PrivateCARegion is the region of an ACM Private CA's ARN (where it is called), "" when arn is none.
func PrivateCARegion(arn string) string {
	if !acmPCAArn.MatchString(arn) {
		return ""
	}
	return strings.Split(arn, ":")[3]
}
