package pki_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func mustCA(t *testing.T) (pki.Pair, *x509.Certificate) {
	t.Helper()
	ca, err := pki.NewCA("pgnvme test CA", now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.ParseCert(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsCA || c.NotAfter.Sub(now) != pki.CAValidity {
		t.Fatalf("CA: IsCA %v, valid until %s", c.IsCA, c.NotAfter)
	}
	return ca, c
}

var serverSubject = pki.Subject{CommonName: "node-1", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}

func issue(t *testing.T, ca pki.Pair, s pki.Subject, u pki.Usage, at time.Time, validity time.Duration) pki.Pair {
	t.Helper()
	p, err := pki.Issue(ca, s, u, at, validity)
	if err != nil {
		t.Fatal(err)
	}
	if !pki.KeyMatches(p.CertPEM, p.KeyPEM) {
		t.Fatal("the issued key does not match its certificate")
	}
	return p
}

// TestHandshake: a server certificate and a client certificate the CA issued complete a mutual TLS 1.3
// handshake in which each side verifies the other against the CA (the server its address, the client its
// common name); a client trusting another CA refuses the server.
func TestHandshake(t *testing.T) {
	realNow := time.Now()
	ca, err := pki.NewCA("pgnvme test CA", realNow)
	if err != nil {
		t.Fatal(err)
	}
	server := issue(t, ca, serverSubject, pki.Server, realNow, time.Hour)
	client := issue(t, ca, pki.Subject{CommonName: "postgres"}, pki.Client, realNow, time.Hour)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	sc, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{sc}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tc := conn.(*tls.Conn)
			if err := tc.Handshake(); err != nil {
				peer <- "error: " + err.Error()
			} else {
				peer <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			conn.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cc}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("a client trusting the CA: %v", err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("TLS version %x; want 1.3", v)
	}
	conn.Close()
	if got := <-peer; got != "postgres" {
		t.Errorf("the server saw the client %q; want the common name postgres", got)
	}

	other, _ := pki.NewCA("another CA", realNow)
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(other.CertPEM)
	if c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: otherPool, Certificates: []tls.Certificate{cc}, ServerName: "127.0.0.1"}); err == nil {
		c.Close()
		t.Error("a client trusting another CA accepted the server")
	}
	if c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cc}, ServerName: "db.example.com"}); err == nil {
		c.Close()
		t.Error("a client verifying a name the certificate does not serve accepted the server")
	}
}

func TestCheck(t *testing.T) {
	ca, caCert := mustCA(t)
	other, _ := pki.NewCA("another CA", now)
	p := pki.Policy{Validity: 90 * 24 * time.Hour, RenewBefore: 7 * 24 * time.Hour}
	want := pki.Want{Name: "node-1's server certificate", Subject: serverSubject, Usage: pki.Server}
	fresh := issue(t, ca, serverSubject, pki.Server, now, p.Validity)
	cases := []struct {
		name string
		have []byte
		at   time.Time
		p    pki.Policy
		want pki.Want
		due  string // "" when not due
	}{
		{"fresh", fresh.CertPEM, now, p, want, ""},
		{"a day before the margin", fresh.CertPEM, now.Add(82 * 24 * time.Hour), p, want, ""},
		{"within the margin", fresh.CertPEM, now.Add(84 * 24 * time.Hour), p, want, "it ends at 2027-03-05T12:00:00Z, within the renewal margin of 168 hours"},
		{"ended", fresh.CertPEM, now.Add(91 * 24 * time.Hour), p, want, "it ended at 2027-03-05T12:00:00Z"},
		{"missing", nil, now, p, want, "there is none yet"},
		{"unreadable", []byte("junk"), now, p, want, "cannot be read"},
		{"another CA", issue(t, other, serverSubject, pki.Server, now, p.Validity).CertPEM, now, p, want, "not issued by the cluster's certificate authority"},
		{"a client certificate", issue(t, ca, serverSubject, pki.Client, now, p.Validity).CertPEM, now, p, want, "is not a server certificate"},
		{"names changed", fresh.CertPEM, now, p, pki.Want{Name: want.Name, Subject: pki.Subject{CommonName: "node-1", IPs: []net.IP{net.ParseIP("127.0.0.2")}}, Usage: pki.Server},
			"serves [127.0.0.1 localhost], not [127.0.0.2]"},
		{"common name changed", fresh.CertPEM, now, p, pki.Want{Name: want.Name, Subject: pki.Subject{CommonName: "node-9", DNSNames: serverSubject.DNSNames, IPs: serverSubject.IPs}, Usage: pki.Server},
			`names "node-1", not "node-9"`},
		{"member fresh", issue(t, ca, serverSubject, pki.Member, now, p.Validity).CertPEM, now, p, pki.Want{Name: "node-1's certificate", Subject: serverSubject, Usage: pki.Member}, ""},
		{"a server certificate for a member", fresh.CertPEM, now, p, pki.Want{Name: "node-1's certificate", Subject: serverSubject, Usage: pki.Member}, "is not a member certificate"},
		{"member names changed", issue(t, ca, serverSubject, pki.Member, now, p.Validity).CertPEM, now, p, pki.Want{Name: want.Name, Subject: pki.Subject{CommonName: "node-1", IPs: []net.IP{net.ParseIP("127.0.0.2")}}, Usage: pki.Member},
			"serves [127.0.0.1 localhost], not [127.0.0.2]"},
		{"validity shortened", fresh.CertPEM, now, pki.Policy{Validity: 24 * time.Hour, RenewBefore: time.Hour}, want, "later than the validity of 24 hours from now allows"},
	}
	for _, c := range cases {
		r, due := pki.Check(caCert, c.want, c.have, c.at, c.p)
		switch {
		case c.due == "" && due:
			t.Errorf("%s: due (%s); want not due", c.name, r.Reason)
		case c.due != "" && !due:
			t.Errorf("%s: not due; want due because %q", c.name, c.due)
		case c.due != "" && !strings.Contains(r.Reason, c.due):
			t.Errorf("%s: reason %q; want it to say %q", c.name, r.Reason, c.due)
		}
	}
}

func TestPolicyProblem(t *testing.T) {
	for _, c := range []struct {
		p    pki.Policy
		want string
	}{
		{pki.DefaultPolicy(), ""},
		{pki.Policy{Validity: 30 * time.Minute}, "at least 1 hour"},
		{pki.Policy{Validity: 24 * time.Hour, RenewBefore: 24 * time.Hour}, "must be shorter than the validity"},
		{pki.Policy{Validity: 24 * time.Hour, RenewBefore: -time.Hour}, "cannot be negative"},
		{pki.Policy{Validity: 2 * pki.CAValidity, RenewBefore: time.Hour}, "longer than the cluster's certificate authority"},
	} {
		if _, got := c.p.Problem(); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: problem %q; want %q", c.p, got, c.want)
		}
	}
}

func TestIssueCappedByCA(t *testing.T) {
	ca, caCert := mustCA(t)
	p := issue(t, ca, serverSubject, pki.Server, now.Add(pki.CAValidity-time.Hour), 24*time.Hour)
	c, _ := pki.ParseCert(p.CertPEM)
	if !c.NotAfter.Equal(caCert.NotAfter) {
		t.Errorf("a certificate issued an hour before the CA ends ends at %s; want the CA's end %s", c.NotAfter, caCert.NotAfter)
	}
	if pki.KeyMatches(p.CertPEM, ca.KeyPEM) {
		t.Error("KeyMatches accepted the CA's key for a leaf")
	}
}

// TestRequest: a request made with NewKey's key carries the subject, and a server's names, and is signed
// by that key; a client's request names no addresses.
func TestRequest(t *testing.T) {
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []pki.Usage{pki.Member, pki.Client} {
		csrPEM, err := pki.Request(key, serverSubject, u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(csrPEM)
		if b == nil || b.Type != "CERTIFICATE REQUEST" {
			t.Fatalf("%s: not a PEM request: %q", u, csrPEM)
		}
		csr, err := x509.ParseCertificateRequest(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if err := csr.CheckSignature(); err != nil {
			t.Errorf("%s: the request's signature: %v", u, err)
		}
		if csr.Subject.CommonName != "node-1" {
			t.Errorf("%s: subject %s", u, csr.Subject)
		}
		wantIPs := 1
		if u == pki.Client {
			wantIPs = 0
		}
		if len(csr.IPAddresses) != wantIPs || len(csr.DNSNames) != wantIPs {
			t.Errorf("%s: names %v %v", u, csr.DNSNames, csr.IPAddresses)
		}
		// The request's key is the one given: a certificate for it matches the key.
		ca, caCert := mustCA(t)
		caKey, _ := pem.Decode(ca.KeyPEM)
		k, _ := x509.ParsePKCS8PrivateKey(caKey.Bytes)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: now, NotAfter: now.Add(time.Hour)},
			caCert, csr.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		if !pki.KeyMatches(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key) {
			t.Errorf("%s: the request's public key is not the given key's", u)
		}
	}
	if _, err := pki.Request(key, serverSubject, "nonsense"); err == nil {
		t.Error("a request of an unknown usage was made")
	}
	two := append(mustPEM(t), mustPEM(t)...)
	if cs, err := pki.Certs(two); err != nil || len(cs) != 2 {
		t.Errorf("Certs of two: %d, %v", len(cs), err)
	}
}

func mustPEM(t *testing.T) []byte {
	ca, _ := mustCA(t)
	return ca.CertPEM
}
