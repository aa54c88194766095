package awsspec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

var tlsNow = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// bundleFor issues a node's bundle as the platform does: a member certificate for subject and a replication
// certificate with the same key, from ca, valid for validity from issued.
func bundleFor(t *testing.T, ca pki.Pair, subject pki.Subject, issued time.Time, validity time.Duration) string {
	t.Helper()
	member, err := pki.Issue(ca, subject, pki.Member, issued, validity)
	if err != nil {
		t.Fatal(err)
	}
	repl, err := pki.Reissue(ca, member.KeyPEM, awsspec.ReplicationSubject(), pki.Client, issued, validity)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bootstrap.TLSBundle(bootstrap.TLSFiles{Key: member.KeyPEM, Member: member.CertPEM, Replication: repl.CertPEM, CA: ca.CertPEM})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DecideTLS: one decision per node, for the plan's lines and the apply alike.
func TestDecideTLS(t *testing.T) {
	ca, err := pki.NewCA("pgnvme t", tlsNow.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := pki.ParseCert(ca.CertPEM)
	other, _ := pki.NewCA("another", tlsNow)
	p := pki.DefaultPolicy()
	addr := func(ip string) pki.Subject {
		return awsspec.TLSSubject("node-1", awsspec.TLSAddresses{PrivateIP: ip, LoadBalancer: "pgnvme-t-1.elb.us-east-1.amazonaws.com"})
	}
	fresh := bundleFor(t, ca, addr("10.0.1.10"), tlsNow.Add(-time.Hour), p.Validity)
	foreignKey := bundleFor(t, ca, addr("10.0.1.10"), tlsNow.Add(-time.Hour), p.Validity)
	f, _ := bootstrap.ParseTLSBundle(fresh)
	g, _ := bootstrap.ParseTLSBundle(foreignKey)
	mismatched, _ := bootstrap.TLSBundle(bootstrap.TLSFiles{Key: g.Key, Member: f.Member, Replication: f.Replication, CA: f.CA})

	cases := []struct {
		name, bundle string
		subject      pki.Subject
		due          string // "" when nothing is due
		newKey, new  bool
	}{
		{"fresh", fresh, addr("10.0.1.10"), "", false, false},
		{"none yet", "", addr("10.0.1.10"), "there is none yet", true, true},
		{"ends within the margin", bundleFor(t, ca, addr("10.0.1.10"), tlsNow.Add(-85*24*time.Hour), p.Validity), addr("10.0.1.10"),
			"its certificate: it ends at 2026-12-10T12:00:00Z, within the renewal margin of 168 hours", false, false},
		{"ended", bundleFor(t, ca, addr("10.0.1.10"), tlsNow.Add(-91*24*time.Hour), p.Validity), addr("10.0.1.10"), "its certificate: it ended at", false, false},
		{"another address", fresh, addr("10.0.1.11"), "its certificate: the certificate in place serves", false, false},
		{"another authority", bundleFor(t, other, addr("10.0.1.10"), tlsNow, p.Validity), addr("10.0.1.10"), "another certificate authority than the cluster's", false, false},
		{"a key of another certificate", mismatched, addr("10.0.1.10"), "its key does not match its certificate", true, false},
		{"unreadable", "not a bundle", addr("10.0.1.10"), "its bundle cannot be read", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := awsspec.DecideTLS(caCert, []awsspec.TLSNode{{Name: "node-1", Subject: c.subject, Bundle: c.bundle}}, p, tlsNow)
			if d.NewCA {
				t.Fatalf("a cluster with an authority gets a new one: %+v", d)
			}
			if c.due == "" {
				if !d.Empty() {
					t.Fatalf("nothing is due, yet %+v", d)
				}
				return
			}
			if len(d.Issue) != 1 || !strings.Contains(d.Issue[0].Reason, c.due) || d.Issue[0].NewKey != c.newKey || d.Issue[0].New != c.new {
				t.Fatalf("got %+v, want one issue with %q (new key %v, new %v)", d.Issue, c.due, c.newKey, c.new)
			}
			lines := d.Lines(awsspec.TLSCAParameter("t"))
			want := "renew node-1's certificates"
			if c.new {
				want = "issue node-1's certificates"
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Errorf("plan lines %q, want one starting %q", lines, want)
			}
		})
	}

	d := awsspec.DecideTLS(nil, []awsspec.TLSNode{{Name: "node-1"}, {Name: "node-2", Bundle: fresh}}, p, tlsNow)
	if !d.NewCA || len(d.Issue) != 2 || !d.Issue[0].New || d.Issue[1].New || !d.Issue[1].NewKey {
		t.Fatalf("without an authority every node is issued with a new key: %+v", d)
	}
	if lines := d.Lines("/pgnvme-ca/t"); len(lines) != 1 || !strings.Contains(lines[0], "/pgnvme-ca/t") || !strings.Contains(lines[0], "node-1, node-2") {
		t.Errorf("plan lines for a new authority: %q", lines)
	}
	if ends := awsspec.TLSEnds([]awsspec.TLSNode{{Name: "node-1", Bundle: fresh}, {Name: "node-2", Bundle: "x"}}); len(ends) != 1 || ends["node-1"] != "2027-03-05T11:00:00Z" {
		t.Errorf("TLSEnds: %v", ends)
	}
}

// The authority's parameter holds its certificate and key and nothing else; the names keep the key outside
// the path the nodes' role reads.
func TestCAParameter(t *testing.T) {
	ca, err := pki.NewCA("pgnvme t", tlsNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := awsspec.CAPair(awsspec.CAValue(ca))
	if err != nil || string(got.CertPEM) != string(ca.CertPEM) || string(got.KeyPEM) != string(ca.KeyPEM) {
		t.Fatalf("CAPair(CAValue(ca)) = %v, %v", got, err)
	}
	if _, err := awsspec.CAPair(string(ca.CertPEM)); err == nil {
		t.Error("an authority without its key was accepted")
	}
	other, _ := pki.NewCA("another", tlsNow)
	if _, err := awsspec.CAPair(string(ca.CertPEM) + string(other.KeyPEM)); err == nil {
		t.Error("an authority with another's key was accepted")
	}
	path := awsspec.SSMPath("t")
	if p := awsspec.TLSCAParameter("t"); strings.HasPrefix(p, path+"/") || p == path {
		t.Errorf("the authority %s is under the nodes' path %s", p, path)
	}
	if p := awsspec.TLSBundleParameter("t", "node-2"); p != path+"/tls/node-2" {
		t.Errorf("node-2's bundle is %s, want under %s", p, path)
	}
}

// PrivateCAProblem: an ACM Private CA issues only when active, within its usage mode's validity, and when
// its certificate outlives the certificates it would issue.
func TestPrivateCAProblem(t *testing.T) {
	ca, err := pki.NewCA("acm pca", tlsNow.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := pki.ParseCert(ca.CertPEM)
	ok := awsspec.PrivateCA{ARN: "arn:pca", Status: "ACTIVE", Type: "ROOT", UsageMode: "GENERAL_PURPOSE", Cert: cert}
	week := pki.Policy{Validity: 7 * 24 * time.Hour, RenewBefore: 24 * time.Hour}
	for _, c := range []struct {
		name   string
		change func(*awsspec.PrivateCA)
		p      pki.Policy
		want   string
	}{
		{"active general-purpose", func(*awsspec.PrivateCA) {}, pki.DefaultPolicy(), ""},
		{"short-lived mode, a week", func(c *awsspec.PrivateCA) { c.UsageMode = "SHORT_LIVED_CERTIFICATE" }, week, ""},
		{"short-lived mode, 90 days", func(c *awsspec.PrivateCA) { c.UsageMode = "SHORT_LIVED_CERTIFICATE" }, pki.DefaultPolicy(), "validity_period_hours to 168 or less"},
		{"disabled", func(c *awsspec.PrivateCA) { c.Status = "DISABLED" }, week, "is DISABLED, not ACTIVE"},
		{"pending its certificate", func(c *awsspec.PrivateCA) { c.Status = "PENDING_CERTIFICATE"; c.Cert = nil }, week, "is PENDING_CERTIFICATE"},
		{"ends before a certificate would", func(*awsspec.PrivateCA) {}, pki.Policy{Validity: 11 * 365 * 24 * time.Hour}, "renew the authority, or shorten"},
	} {
		pca := ok
		c.change(&pca)
		got := awsspec.PrivateCAProblem(pca, c.p, tlsNow)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Split: a running node's renewal is the engine's step; a node still to launch, a node's first bundle and
// everything a new authority issues come before any launch.
func TestTLSDecisionSplit(t *testing.T) {
	running := func(node string) bool { return node != "node-3" }
	d := awsspec.TLSDecision{Issue: []awsspec.TLSIssue{
		{Node: "node-1", Reason: "its certificate: it ends at X"},
		{Node: "node-2", Reason: "its key does not match its certificate", NewKey: true},
		{Node: "node-3", Reason: "its certificate: it ends at X"},
		{Node: "node-4", Reason: "there is none yet", New: true, NewKey: true},
	}}
	before, due := d.Split(running)
	var pre []string
	for _, is := range before.Issue {
		pre = append(pre, is.Node)
	}
	if strings.Join(pre, ",") != "node-3,node-4" || before.NewCA {
		t.Errorf("before any launch: %v (new authority %v); want node-3 (not running), node-4 (new)", pre, before.NewCA)
	}
	want := map[string]string{
		"node-1": "its certificate: it ends at X (same key); it reads them within 20 seconds",
		"node-2": "its key does not match its certificate (a new key)",
	}
	if len(due) != len(want) || due["node-1"] != want["node-1"] || due["node-2"] != want["node-2"] {
		t.Errorf("renewals: %q; want %q", due, want)
	}
	d.NewCA = true
	if before, due := d.Split(running); len(before.Issue) != 4 || !before.NewCA || due != nil {
		t.Errorf("with a new authority: %d before, due %q; want all four before any launch", len(before.Issue), due)
	}
}
