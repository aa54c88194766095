package localspec_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// DecideTLS: the local platform's TLS decision, from the certificates as found, with no file read.
func TestDecideTLS(t *testing.T) {
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("pgnvme t", now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := pki.ParseCert(ca.CertPEM)
	p := pki.DefaultPolicy()
	server := func(name string) pki.Want {
		return pki.Want{Name: name + "'s server certificate", Usage: pki.Server, Subject: pki.Subject{CommonName: name}}
	}
	issue := func(w pki.Want, at time.Time) []byte {
		pair, err := pki.Issue(ca, w.Subject, w.Usage, at, p.Validity)
		if err != nil {
			t.Fatal(err)
		}
		return pair.CertPEM
	}
	fresh, old := now.Add(-time.Hour), now.Add(-85*24*time.Hour) // the renewal margin is 7 days of 90
	certs := []localspec.TLSCert{
		{Want: server("n1"), Key: "n1", Member: true, KeyFile: "/t/n1.key", Have: issue(server("n1"), old), KeyMatches: true},
		{Want: server("n2"), Key: "n2", Member: true, KeyFile: "/t/n2.key", Have: issue(server("n2"), fresh), KeyMatches: false},
		{Want: server("n3"), Key: "n3", Member: true, KeyFile: "/t/n3.key", Have: issue(server("n3"), old), KeyMatches: true},
		{Want: server("n4"), Key: "n4", Member: true, KeyFile: "/t/n4.key"},
		{Want: pki.Want{Name: "the client certificate of postgres", Usage: pki.Client, Subject: pki.Subject{CommonName: "postgres"}}, Key: "client",
			Have: issue(pki.Want{Usage: pki.Client, Subject: pki.Subject{CommonName: "postgres"}}, old), KeyMatches: true},
	}
	withData := func(name string) bool { return name != "n3" }
	f := localspec.TLSFacts{CA: caCert, Certs: certs, Policy: p, Now: now, On: true, WithData: withData}

	d := localspec.DecideTLS(f)
	var got []string
	for _, r := range d.Renew {
		got = append(got, r.Key+map[bool]string{true: " step", false: ""}[r.Step]+map[bool]string{true: " new", false: ""}[r.New])
	}
	// n1 ends within the margin and has its data: a step. n2's key is not its certificate's: a step. n3 has
	// no data: before the steps. n4 has none: issued. The client certificate is no member's: before.
	if want := []string{"n1 step", "n2 step", "n3", "n4 new", "client"}; !slices.Equal(got, want) {
		t.Errorf("renewals %q; want %q", got, want)
	}
	if d.Renew[1].Reason != "its key /t/n2.key is missing or not the certificate's" || !strings.Contains(d.Renew[0].Reason, "within the renewal margin") {
		t.Errorf("reasons %q, %q", d.Renew[0].Reason, d.Renew[1].Reason)
	}
	if due := d.Due(); len(due) != 2 || !strings.HasPrefix(due["n1"], "its server certificate: ") {
		t.Errorf("Due = %q; want n1 and n2", due)
	}
	if prep := d.Prepared(); len(prep.Renew) != 3 || slices.ContainsFunc(prep.Renew, func(r localspec.TLSRenewal) bool { return r.Step }) {
		t.Errorf("Prepared keeps %d renewals; want the 3 that are not steps", len(prep.Renew))
	}

	// A member whose TLS is turned on or off is not renewed as a step, and the primary turns first.
	f.Toggle, f.Primary = []string{"n1", "n2"}, "n2"
	d = localspec.DecideTLS(f)
	if !slices.Equal(d.Toggle, []string{"n2", "n1"}) || slices.ContainsFunc(d.Renew, func(r localspec.TLSRenewal) bool { return r.Step }) {
		t.Errorf("toggling n1, n2 (primary n2): order %q, steps %v", d.Toggle, d.Due())
	}

	// No authority: a new one, every certificate issued from it, nothing a step.
	f.CA, f.Toggle = nil, nil
	if d = localspec.DecideTLS(f); !d.NewCA || len(d.Renew) != len(certs) || len(d.Due()) != 0 {
		t.Errorf("without an authority: new %v, %d renewals, due %q", d.NewCA, len(d.Renew), d.Due())
	}
	if lines := d.Lines(); len(lines) != 1 || !strings.HasPrefix(lines[0], "make the cluster's certificate authority") {
		t.Errorf("lines %q", lines)
	}

	// TLS turned off: only the toggle.
	f.On, f.Toggle = false, []string{"n1"}
	if d = localspec.DecideTLS(f); len(d.Renew) != 0 || d.NewCA || !strings.Contains(strings.Join(d.Lines(), "\n"), "turn TLS off: n1 rewritten") {
		t.Errorf("TLS off: %+v %q", d, d.Lines())
	}
}
