package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// Policy is how long a cluster's leaf certificates are valid and how long before their end an apply
// renews them.
type Policy struct {
	Validity    time.Duration
	RenewBefore time.Duration
}

// Defaults: 90 days, renewed 7 days before they end (CloudNativePG's choice).
const (
	DefaultValidityHours    = 90 * 24
	DefaultRenewBeforeHours = 7 * 24
)

// DefaultPolicy is 90-day certificates renewed 7 days before they end.
func DefaultPolicy() Policy {
	return Policy{Validity: DefaultValidityHours * time.Hour, RenewBefore: DefaultRenewBeforeHours * time.Hour}
}

// MinValidity is the shortest validity a policy may give: a certificate must outlive the apply that
// makes it by far.
const MinValidity = time.Hour

// Policy's fields, as Problem names the one at fault.
const (
	FieldValidity    = "validity"
	FieldRenewBefore = "renew_before"
)

// Problem is what is wrong with p and the field at fault (FieldValidity, FieldRenewBefore); "" when nothing.
func (p Policy) Problem() (field, problem string) {
	switch {
	case p.Validity < MinValidity:
		return FieldValidity, fmt.Sprintf("a certificate must be valid for at least %d hour", int(MinValidity.Hours()))
	case p.Validity > CAValidity:
		return FieldValidity, fmt.Sprintf("a certificate cannot be valid for longer than the cluster's certificate authority (%d hours)", int(CAValidity.Hours()))
	case p.RenewBefore < 0:
		return FieldRenewBefore, "the renewal margin cannot be negative"
	case p.RenewBefore >= p.Validity:
		return FieldRenewBefore, fmt.Sprintf("the renewal margin (%s) must be shorter than the validity (%s): every certificate would be due for renewal as soon as it is made",
			hours(p.RenewBefore), hours(p.Validity))
	}
	return "", ""
}

func hours(d time.Duration) string {
	return fmt.Sprintf("%d hours", int(d.Hours()))
}

// Want is a leaf certificate a cluster needs: Name says whose it is in the plan ("node-1's server
// certificate").
type Want struct {
	Name    string
	Subject Subject
	Usage   Usage
}

// Renewal is a certificate an apply (re)issues, and why: one line of the plan.
type Renewal struct {
	Name   string
	Reason string
}

// slack is how far past now+Validity a certificate may end before it counts as longer-lived than the
// policy allows (the backdate and the time between issuing and checking).
const slack = time.Hour

// Check decides whether want must be (re)issued, given have (the PEM of the certificate in place; nil
// when there is none) and the cluster's authority ca: when there is none, it cannot be read, another
// authority issued it, its usage or names are not want's, it has ended or ends within the renewal margin,
// or it is valid for longer than the policy now allows.
func Check(ca *x509.Certificate, want Want, have []byte, now time.Time, p Policy) (Renewal, bool) {
	due := func(format string, args ...any) (Renewal, bool) {
		return Renewal{Name: want.Name, Reason: fmt.Sprintf(format, args...)}, true
	}
	if len(have) == 0 {
		return due("there is none yet")
	}
	c, err := ParseCert(have)
	if err != nil {
		return due("the certificate in place cannot be read (%v)", err)
	}
	if err := c.CheckSignatureFrom(ca); err != nil {
		return due("the certificate in place was not issued by the cluster's certificate authority")
	}
	wantUsages := map[Usage][]x509.ExtKeyUsage{
		Server: {x509.ExtKeyUsageServerAuth}, Client: {x509.ExtKeyUsageClientAuth},
		Member: {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}[want.Usage]
	for _, u := range wantUsages {
		if !slices.Contains(c.ExtKeyUsage, u) {
			return due("the certificate in place is not a %s certificate", want.Usage)
		}
	}
	if c.Subject.CommonName != want.Subject.CommonName {
		return due("the certificate in place names %q, not %q", c.Subject.CommonName, want.Subject.CommonName)
	}
	if want.Usage != Client {
		if got, w := names(c.DNSNames, c.IPAddresses), names(want.Subject.DNSNames, want.Subject.IPs); got != w {
			return due("the certificate in place serves %s, not %s", got, w)
		}
	}
	switch end := c.NotAfter.UTC().Format(time.RFC3339); {
	case !now.Before(c.NotAfter):
		return due("it ended at %s", end)
	case !now.Add(p.RenewBefore).Before(c.NotAfter):
		return due("it ends at %s, within the renewal margin of %s", end, hours(p.RenewBefore))
	case c.NotAfter.After(now.Add(p.Validity+slack)) && c.NotAfter.Before(ca.NotAfter):
		return due("it ends at %s, later than the validity of %s from now allows", end, hours(p.Validity))
	}
	return Renewal{}, false
}

// names is a certificate's DNS names and addresses, sorted, as one string.
func names(dns []string, ips []net.IP) string {
	var out []string
	out = append(out, dns...)
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}
