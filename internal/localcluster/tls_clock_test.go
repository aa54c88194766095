package localcluster_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestTLSRenewalAtClock: the local platform decides certificate renewal at its clock's now, not the wall
// clock's. Certificates made at a chosen instant (years away from today) are left alone up to a second
// before their renewal window and renewed, each with its reason, from the window's first second; the
// renewed ones are valid from that instant. Nothing sleeps: the clock is set, not waited for.
func TestTLSRenewalAtClock(t *testing.T) {
	t.Parallel()
	made := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := wait.NewStepClock(made)
	m, err := localcluster.NewManagerWithOptions(localcluster.Options{Clock: clock})
	if err != nil {
		t.Fatalf("the local cluster needs PostgreSQL: %v", err)
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := pki.DefaultPolicy() // 90 days, renewed 7 days before the end
	s := localcluster.Spec{Name: "tf-acc-tls-clock", TLS: &policy}
	for i, name := range []string{"n1", "n2"} {
		s.Members = append(s.Members, localcluster.Member{Name: name, Zone: "z", Port: 5432 + i, DataDir: filepath.Join(root, name)})
	}
	tlsDir := localcluster.TLSDir(root)
	certs := map[string]string{ // tls.not_after key -> certificate file
		"n1": filepath.Join(tlsDir, "n1.crt"), "n2": filepath.Join(tlsDir, "n2.crt"), "client": filepath.Join(tlsDir, "client.crt"),
	}

	lines, err := localcluster.PrepareTLS(m, s)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "make the cluster's certificate authority") {
		t.Fatalf("first apply: %q, %v; want the authority made and every certificate issued", lines, err)
	}
	end := made.Add(policy.Validity)
	for key, file := range certs {
		if c := readCert(t, file); !c.NotAfter.Equal(end) {
			t.Fatalf("%s: issued to end at %s; want %s (made at the clock's now plus 90 days)", key, c.NotAfter, end)
		}
	}
	window := end.Add(-policy.RenewBefore)

	// A second before the window: the plan renews nothing and keeps every end; the apply writes nothing.
	clock.Set(window.Add(-time.Second))
	plan, err := localcluster.PlanTLS(m, s)
	if err != nil || plan.Actions != "" {
		t.Fatalf("plan a second before the renewal window: %q, %v; want no TLS step", plan.Actions, err)
	}
	for key := range certs {
		if got := plan.TLS.NotAfter[key]; got != end.Format(time.RFC3339) {
			t.Errorf("plan a second before the window: %s ends %q; want %s kept", key, got, end.Format(time.RFC3339))
		}
	}
	if lines, err := localcluster.PrepareTLS(m, s); err != nil || len(lines) != 0 {
		t.Fatalf("apply a second before the renewal window: %q, %v; want nothing done", lines, err)
	}
	for key, file := range certs {
		if c := readCert(t, file); !c.NotAfter.Equal(end) {
			t.Errorf("%s was rewritten before its renewal window (now ends %s)", key, c.NotAfter)
		}
	}

	// At the window's first second: every certificate is due, with its end as the reason, and the apply
	// reissues each from that instant.
	clock.Set(window)
	plan, err = localcluster.PlanTLS(m, s)
	if err != nil {
		t.Fatal(err)
	}
	reason := "it ends at " + end.Format(time.RFC3339) + ", within the renewal margin of 168 hours"
	want := []string{
		"renew n1's server certificate: " + reason + "; then reload n1 (no restart)",
		"renew n2's server certificate: " + reason + "; then reload n2 (no restart)",
		"renew the client certificate of " + superuserOf(t, plan.Actions) + ": " + reason,
	}
	if plan.Actions != strings.Join(want, "\n") {
		t.Fatalf("plan at the renewal window:\n%s\nwant:\n%s", plan.Actions, strings.Join(want, "\n"))
	}
	for key := range certs {
		if got := plan.TLS.NotAfter[key]; got != "" {
			t.Errorf("plan at the window: %s ends %q; want unknown until the apply renews it", key, got)
		}
	}
	if lines, err := localcluster.PrepareTLS(m, s); err != nil || strings.Join(lines, "\n") != plan.Actions {
		t.Fatalf("apply at the renewal window: %q, %v; want the plan's lines", lines, err)
	}
	renewed := window.Add(policy.Validity)
	for key, file := range certs {
		if c := readCert(t, file); !c.NotAfter.Equal(renewed) {
			t.Errorf("%s renewed to end at %s; want %s (the clock's now plus 90 days)", key, c.NotAfter, renewed)
		}
	}
	if plan, err := localcluster.PlanTLS(m, s); err != nil || plan.Actions != "" {
		t.Fatalf("plan after the renewal: %q, %v; want nothing due", plan.Actions, err)
	}
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s holds no PEM block", file)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// superuserOf is the user named in the plan's client certificate line.
func superuserOf(t *testing.T, actions string) string {
	t.Helper()
	_, rest, ok := strings.Cut(actions, "renew the client certificate of ")
	if !ok {
		t.Fatalf("the plan renews no client certificate:\n%s", actions)
	}
	user, _, _ := strings.Cut(rest, ":")
	return user
}
