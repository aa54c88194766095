package acctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TLSMoto is a moto server reachable over TLS at https://localhost:PORT: moto itself serves plain http on a
// loopback port and stunnel terminates TLS in front of it with a self-signed certificate for `localhost`
// (and 127.0.0.1). pgBackRest needs this: it talks to S3 only over TLS, checks the certificate's DNS name,
// and fails against moto's own TLS server (`-c/-k`) with "unexpected EOF".
//
// Clients trust CAFile: the AWS SDK for Go through AWS_CA_BUNDLE (config.LoadDefaultConfig reads it, see
// SetCABundleEnv), pgBackRest through repo1-storage-ca-file (see PgBackRestRepoOptions).
type TLSMoto struct {
	// HTTPURL is moto's own plain-http URL, e.g. http://127.0.0.1:40123.
	HTTPURL string
	// HTTPSURL is the TLS endpoint, e.g. https://localhost:40124: use it as the S3 endpoint with path-style
	// addressing.
	HTTPSURL string
	// Port is the TLS endpoint's port on the loopback interface.
	Port int
	// CAFile is the PEM file of the self-signed server certificate, which clients trust as their only CA.
	// It is world-readable (pgBackRest reads it as user postgres).
	CAFile string
	// Moto is the plain-http moto server behind the TLS terminator.
	Moto *Moto

	stunnel *exec.Cmd
	done    chan struct{}
	output  *syncBuffer
}

// StartTLSMoto starts moto on plain http, generates a self-signed certificate for localhost and 127.0.0.1,
// starts stunnel (Debian's `stunnel4`, or `stunnel`) in the foreground in front of moto on a free loopback
// port, and waits until an HTTPS request to HTTPSURL that verifies the certificate succeeds. t.Cleanup stops
// stunnel and moto (by process group) and removes the certificate directory. A missing stunnel binary
// fails the test, naming the package to install.
func StartTLSMoto(t testing.TB) *TLSMoto {
	t.Helper()
	stunnel := stunnelBinary(t)
	m, err := LaunchMoto()
	if err != nil {
		t.Fatalf("starting moto: %v", err)
	}
	t.Cleanup(m.Stop)

	dir, err := os.MkdirTemp("", "tlsmoto-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// pgBackRest runs as postgres and must read the CA file: the directory is traversable by everyone, the
	// key file is readable by its owner only (stunnel runs as this process's user).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "localhost.crt"), filepath.Join(dir, "localhost.key")
	if err := writeSelfSignedCert(certFile, keyFile); err != nil {
		t.Fatalf("generating the localhost certificate: %v", err)
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatalf("the generated certificate %s does not parse", certFile)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		tm := &TLSMoto{
			HTTPURL:  m.URL,
			HTTPSURL: fmt.Sprintf("https://localhost:%d", port),
			Port:     port,
			CAFile:   certFile,
			Moto:     m,
			output:   &syncBuffer{},
			done:     make(chan struct{}),
		}
		conf := filepath.Join(dir, fmt.Sprintf("stunnel-%d.conf", port))
		if err := os.WriteFile(conf, []byte(stunnelConfig(port, m.Port, certFile, keyFile)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := tm.startStunnel(stunnel, conf); err != nil {
			t.Fatal(err)
		}
		if err := tm.waitReady(roots, 15*time.Second); err != nil {
			tm.stop()
			lastErr = fmt.Errorf("%w\nstunnel output:\n%s", err, tm.output.String())
			continue
		}
		t.Cleanup(tm.stop)
		return tm
	}
	t.Fatalf("starting stunnel in front of moto: %v", lastErr)
	return nil
}

// stunnelBinary finds Debian's stunnel4 (or a plain stunnel) or fails the test naming the package.
func stunnelBinary(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"stunnel4", "stunnel"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("stunnel is needed to serve moto over TLS for pgBackRest and was not found as stunnel4 or stunnel on PATH: install the stunnel4 package (apt-get install stunnel4)")
	return ""
}

// stunnelConfig is a foreground stunnel configuration without a PID file that accepts TLS on port on every
// loopback address `localhost` resolves to and forwards plain TCP to moto on 127.0.0.1:motoPort.
func stunnelConfig(port, motoPort int, certFile, keyFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "foreground = yes\npid =\nsyslog = no\ndebug = notice\n")
	for i, addr := range localhostAddrs() {
		// stunnel reads the port after the last colon and rejects brackets: `::1:PORT`, not `[::1]:PORT`.
		fmt.Fprintf(&b, "\n[moto%d]\naccept = %s:%d\nconnect = 127.0.0.1:%d\ncert = %s\nkey = %s\n",
			i, addr, port, motoPort, certFile, keyFile)
	}
	return b.String()
}

// localhostAddrs are the loopback addresses `localhost` resolves to, 127.0.0.1 first and always present:
// clients such as pgBackRest 2.45 connect to the first address the resolver returns, which is ::1 on
// machines whose /etc/hosts maps localhost to it.
func localhostAddrs() []string {
	addrs := []string{"127.0.0.1"}
	resolved, _ := net.LookupHost("localhost")
	for _, a := range resolved {
		ip := net.ParseIP(a)
		if ip != nil && ip.IsLoopback() && ip.To4() == nil {
			addrs = append(addrs, "::1")
			break
		}
	}
	return addrs
}

func (tm *TLSMoto) startStunnel(bin, conf string) error {
	cmd := exec.Command(bin, conf)
	cmd.Stdout, cmd.Stderr = tm.output, tm.output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	tm.stunnel = cmd
	go func() {
		_ = cmd.Wait()
		close(tm.done)
	}()
	return nil
}

// waitReady polls HTTPSURL with a client that trusts only the generated certificate until moto answers.
func (tm *TLSMoto) waitReady(roots *x509.CertPool, timeout time.Duration) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-tm.done:
			return fmt.Errorf("stunnel exited before serving %s", tm.HTTPSURL)
		default:
		}
		resp, err := client.Get(tm.HTTPSURL + "/moto-api/data.json")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("moto did not answer over TLS on %s within %s: %w", tm.HTTPSURL, timeout, lastErr)
}

// stop ends stunnel by process group (SIGTERM, then SIGKILL after 5 seconds) and waits for it.
func (tm *TLSMoto) stop() {
	if tm.stunnel == nil || tm.stunnel.Process == nil {
		return
	}
	pgid := tm.stunnel.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-tm.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-tm.done
	}
	tm.stunnel = nil
}

// StunnelOutput is what stunnel printed, for failure messages.
func (tm *TLSMoto) StunnelOutput() string { return tm.output.String() }

// SetCABundleEnv sets AWS_CA_BUNDLE to CAFile for the rest of the test (t.Setenv, so not in parallel
// tests): aws-sdk-go-v2's config.LoadDefaultConfig, and so the provider, then trusts the TLS endpoint.
// The bundle replaces the system roots for those clients; plain-http endpoints keep working.
func (tm *TLSMoto) SetCABundleEnv(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", tm.CAFile)
}

// PgBackRestRepoOptions are the repo1 options that point pgBackRest at this endpoint: host `localhost`
// (the certificate's DNS name), the TLS port, path-style URIs and the CA file.
func (tm *TLSMoto) PgBackRestRepoOptions() map[string]string {
	return map[string]string{
		"repo1-s3-endpoint":     "localhost",
		"repo1-storage-port":    strconv.Itoa(tm.Port),
		"repo1-s3-uri-style":    "path",
		"repo1-storage-ca-file": tm.CAFile,
	}
}

// writeSelfSignedCert writes a self-signed ECDSA P-256 server certificate for DNS name localhost and IP
// 127.0.0.1 (and ::1), valid for a day, to certFile (PEM, mode 0644) and its key to keyFile (PKCS#8 PEM,
// mode 0600). There is no separate CA: clients trust the certificate itself.
func writeSelfSignedCert(certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"pgnvme acceptance tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		// CertSign is there so that OpenSSL (pgBackRest, stunnel) accepts the certificate as self-signed
		// when it is its own trust anchor; without it OpenSSL treats the certificate as merely self-issued.
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return err
	}
	// WriteFile's mode is filtered by the umask; the certificate must be readable by postgres.
	return os.Chmod(certFile, 0o644)
}
