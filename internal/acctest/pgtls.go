package acctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
)

// TLSPostgres is a PostgreSQL server that takes TLS 1.3 connections only and authenticates TCP clients by
// certificate (pg_hba: hostssl ... cert; hostnossl ... reject), with the files a client needs: CAFile (the
// authority of the server's certificate, whose names are 127.0.0.1 and localhost), ClientCert and ClientKey
// (a certificate for the superuser from that authority), and OtherCAFile (an authority that signed
// nothing here, for the wrong-CA case). The files are owned by the server's user, mode 0600 for keys.
type TLSPostgres struct {
	Server                                          *pgfixture.Server
	CAFile, ClientCert, ClientKey, OtherCAFile, Dir string
}

// StartTLSPostgres makes the authorities and certificates and starts the server.
func StartTLSPostgres(t testing.TB) *TLSPostgres {
	t.Helper()
	engine, _ := pgfixture.Engine(t)
	dir := pgfixture.ServerDir(t, "pgnvme-tls-")
	tp := &TLSPostgres{Dir: dir, CAFile: filepath.Join(dir, "ca.crt"), ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey: filepath.Join(dir, "client.key"), OtherCAFile: filepath.Join(dir, "other-ca.crt")}
	write := func(name string, data []byte, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := engine.WriteFileOwned(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, caKey := newCA(t, "pgnvme test CA")
	other, _ := newCA(t, "another CA")
	write("ca.crt", certPEM(ca), 0o644)
	write("other-ca.crt", certPEM(other), 0o644)
	serverCert, serverKey := issue(t, ca, caKey, "localhost", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	write("server.crt", serverCert, 0o644)
	serverKeyFile := write("server.key", serverKey, 0o600)
	clientCert, clientKey := issue(t, ca, caKey, engine.Superuser(), x509.ExtKeyUsageClientAuth, nil, nil)
	write("client.crt", clientCert, 0o644)
	write("client.key", clientKey, 0o600)

	s := pgfixture.Init(t, pgfixture.Options{Name: "tls", Params: map[string]string{
		"ssl": "on", "ssl_cert_file": filepath.Join(dir, "server.crt"), "ssl_key_file": serverKeyFile, "ssl_ca_file": tp.CAFile,
		"ssl_min_protocol_version": "TLSv1.3", "fsync": "off",
	}})
	hba := "# TLS only over TCP, clients by certificate\n" +
		"local     all          all                 trust\n" +
		"local     replication  all                 trust\n" +
		"hostssl   all          all   127.0.0.1/32  cert\n" +
		"hostssl   replication  all   127.0.0.1/32  cert\n" +
		"hostnossl all          all   127.0.0.1/32  reject\n" +
		"hostnossl replication  all   127.0.0.1/32  reject\n"
	if err := engine.WriteFileOwned(filepath.Join(s.Node.DataDir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Start(t)
	tp.Server = s
	return tp
}

// newCA is a self-signed ECDSA P-256 authority valid for a day.
func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// issue is a certificate for cn from ca (PEM) and its key (PKCS#8 PEM).
func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: dns, IPAddresses: ips}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
