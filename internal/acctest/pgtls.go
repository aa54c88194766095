package acctest

import (
	"io/fs"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// TLSPostgres is a PostgreSQL server that takes TLS 1.3 connections only and authenticates TCP clients by
// certificate (pg_hba: hostssl ... cert; hostnossl ... reject), with the files a client needs: CAFile (the
// authority of the server's certificate, whose names are 127.0.0.1 and localhost), ClientCert and ClientKey
// (a certificate for the superuser from that authority), and OtherCAFile (an authority that signed
// nothing here, for the wrong-CA case). The files are owned by the server's user, mode 0600 for keys. The
// certificates are the product's (internal/pki), valid for a day.
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
	write := func(name string, data []byte, mode fs.FileMode) {
		if err := engine.WriteFileOwned(filepath.Join(dir, name), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	must := func(p pki.Pair, err error) pki.Pair {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := must(pki.NewCA("pgnvme test CA", now))
	other := must(pki.NewCA("another CA", now))
	server := must(pki.Issue(ca, pki.Subject{CommonName: "localhost", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, pki.Server, now, 24*time.Hour))
	client := must(pki.Issue(ca, pki.Subject{CommonName: engine.Superuser()}, pki.Client, now, 24*time.Hour))
	write("ca.crt", ca.CertPEM, 0o644)
	write("other-ca.crt", other.CertPEM, 0o644)
	write("server.crt", server.CertPEM, 0o644)
	write("server.key", server.KeyPEM, 0o600)
	write("client.crt", client.CertPEM, 0o644)
	write("client.key", client.KeyPEM, 0o600)

	s := pgfixture.Init(t, pgfixture.Options{Name: "tls", Params: map[string]string{"ssl_min_protocol_version": "TLSv1.3", "fsync": "off"},
		TLS: &localnode.TLS{CAFile: tp.CAFile, CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"),
			ClientCertFile: tp.ClientCert, ClientKeyFile: tp.ClientKey}})
	// Stricter than the product's local pg_hba.conf: every TCP client by certificate.
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
