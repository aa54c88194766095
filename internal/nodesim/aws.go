package nodesim

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Credentials the simulated instance role hands out: moto takes any.
const (
	awsAccessKeyID     = "nodesim"
	awsSecretAccessKey = "nodesim-secret"
	// motoPort is moto's plain-http port on the service namespace's loopback; stunnel serves it on 443.
	motoPort = 5000
)

// awsService is moto and stunnel in the service namespace.
type awsService struct {
	moto, stunnel *proc
	motoLog       string
	stunnelLog    string
}

// startAWS starts moto on the service namespace's loopback and stunnel on ServiceIP:443 in front of it,
// with a self-signed certificate for AWSHost, and waits until an HTTPS request that checks the
// certificate gets an answer.
func (s *Sim) startAWS(ctx context.Context) error {
	python, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("python3 (with moto) is needed for the simulated AWS endpoint: pip install 'moto[server]': %w", err)
	}
	stunnel := ""
	for _, name := range []string{"stunnel4", "stunnel"} {
		if p, err := exec.LookPath(name); err == nil {
			stunnel = p
			break
		}
	}
	if stunnel == "" {
		return errors.New("stunnel is needed for the simulated AWS endpoint (pgBackRest speaks S3 over TLS only): apt-get install stunnel4")
	}
	dir := filepath.Join(s.Dir, "svc")
	certFile, keyFile := filepath.Join(dir, "aws.crt"), filepath.Join(dir, "aws.key")
	certPEM, err := writeCert(certFile, keyFile, s.ServiceIP.AsSlice(), endpointNames())
	if err != nil {
		return fmt.Errorf("making the endpoint's certificate: %w", err)
	}
	s.CAFile = certFile
	s.client.Transport.(*http.Transport).TLSClientConfig.RootCAs.AppendCertsFromPEM(certPEM)

	a := &awsService{motoLog: filepath.Join(dir, "moto.log"), stunnelLog: filepath.Join(dir, "stunnel.log")}
	s.aws = a
	// Path-style only: the endpoint's host name is no bucket.
	env := append(os.Environ(), "MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION=true", "S3_IGNORE_SUBDOMAIN_BUCKETNAME=true")
	out, err := logFile(a.motoLog)
	if err != nil {
		return err
	}
	defer out.Close()
	a.moto, err = startProc(procSpec{
		argv:   []string{"nsenter", "--net=" + netnsPath(s.svcNS), "--", python, "-c", motoServer, "-H", "127.0.0.1", "-p", fmt.Sprint(motoPort)},
		env:    env,
		cgroup: s.svcCg,
		out:    out,
	})
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "stunnel.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("foreground = yes\npid =\nsyslog = no\ndebug = notice\n\n[aws]\naccept = %s:443\nconnect = 127.0.0.1:%d\ncert = %s\nkey = %s\n",
		s.ServiceIP, motoPort, certFile, keyFile)), 0o600); err != nil {
		return err
	}
	sout, err := logFile(a.stunnelLog)
	if err != nil {
		return err
	}
	defer sout.Close()
	a.stunnel, err = startProc(procSpec{
		argv:   []string{"nsenter", "--net=" + netnsPath(s.svcNS), "--", stunnel, conf},
		env:    os.Environ(),
		cgroup: s.svcCg,
		out:    sout,
	})
	if err != nil {
		return err
	}
	err = wait.Until(ctx, "moto to answer at "+AWSEndpoint, stepTimeout, 200*time.Millisecond, wait.Real, func(ctx context.Context) (bool, error) {
		if a.moto.exited() {
			return false, fmt.Errorf("moto exited (%s): %s", a.moto.status(), tail(a.motoLog, 10))
		}
		if a.stunnel.exited() {
			return false, fmt.Errorf("stunnel exited (%s): %s", a.stunnel.status(), tail(a.stunnelLog, 10))
		}
		status, _, err := s.awsRequest(ctx, http.MethodGet, "", "", "/moto-api/data.json", nil, nil)
		if err != nil {
			return false, wait.NotYet(err)
		}
		if status != http.StatusOK {
			return false, wait.NotYet(fmt.Errorf("HTTP %d", status))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w\nmoto: %s\nstunnel: %s", err, tail(a.motoLog, 10), tail(a.stunnelLog, 10))
	}
	return nil
}

// writeCert writes a self-signed ECDSA certificate for names (the first is its subject) and ip (PEM,
// world-readable) and its key (owner only), and returns the certificate's PEM.
func writeCert(certFile, keyFile string, ip net.IP, names []string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0], Organization: []string{"pgnvme node simulator"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		// CertSign: OpenSSL (pgBackRest) accepts the certificate as its own trust anchor only with it.
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names,
		IPAddresses:           []net.IP{ip},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	return certPEM, os.Chmod(certFile, 0o644)
}

// ssmRegions are the regions whose SSM endpoint (ssm.REGION.amazonaws.com, what the AWS CLI calls without
// --endpoint-url) the endpoint's certificate names, so that a node's /etc/hosts can send it to the
// simulated endpoint (see Sim.AddRegion): AWS's commercial regions. The certificate is made once, when the
// simulator starts; a region missing here cannot be added later.
var ssmRegions = []string{
	"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
	"ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
	"ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
	"eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
	"mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
}

// defaultRegions are the regions whose SSM endpoint every node resolves to the simulated endpoint.
var defaultRegions = []string{"eu-west-1", "us-east-1"}

// ssmHost is the default SSM endpoint's host name in region.
func ssmHost(region string) string { return "ssm." + region + ".amazonaws.com" }

// endpointNames are the names the endpoint's certificate holds: AWSHost, then the SSM endpoints of
// ssmRegions.
func endpointNames() []string {
	names := []string{AWSHost}
	for _, r := range ssmRegions {
		names = append(names, ssmHost(r))
	}
	return names
}

// AddRegion makes the nodes booted from now on resolve region's default SSM endpoint
// (ssm.REGION.amazonaws.com) to the simulated AWS endpoint in their /etc/hosts, so that user-data rendered
// without EC2Node.SSMEndpoint reads its passwords from moto. eu-west-1 and us-east-1 are there from the
// start; CreateVPC and StartEC2Bridge add theirs. The name resolves so in the nodes' namespaces only:
// nothing changes this machine's /etc/hosts or DNS.
func (s *Sim) AddRegion(region string) error {
	if !slices.Contains(ssmRegions, region) {
		return fmt.Errorf("region %q: the simulated AWS endpoint serves SSM in %s", region, strings.Join(ssmRegions, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.regions, region) {
		s.regions = append(s.regions, region)
	}
	return nil
}

// ssmHosts are the default SSM endpoints the nodes resolve to the simulated endpoint.
func (s *Sim) ssmHosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hosts []string
	for _, r := range s.regions {
		hosts = append(hosts, ssmHost(r))
	}
	return hosts
}

// InstanceEnv is what the simulated instance role and VPC give every process of a node (the unit
// runner's environment, as systemd's manager environment) when IAM is not enforced, and what a process
// run as the simulator (the bench's hand restore) gets: the simulator's credentials, the CA bundle of the
// AWS CLI (the node's system store, as Debian's own awscli uses; the secrets script reaches the endpoint
// through EC2Node.SSMEndpoint, or without it through the region's default SSM endpoint, which the node's
// /etc/hosts sends to the simulated endpoint: see AddRegion), and for pgBackRest shared keys in place of
// the instance metadata service. Under EnforceIAM a node gets its instance role's instead.
func (s *Sim) InstanceEnv() []string {
	return instanceEnv(s.credentials())
}

// awsRequest sends one request to moto through the TLS endpoint, signed (SigV4, as service in region) with
// the simulator's credentials; service "" sends it unsigned (moto's own API).
func (s *Sim) awsRequest(ctx context.Context, method, service, region, path string, header map[string]string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, AWSEndpoint+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if service != "" {
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		if err := v4.NewSigner().SignHTTP(ctx, s.credentials(), req, hash, service, region, time.Now()); err != nil {
			return 0, nil, fmt.Errorf("signing the request: %w", err)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, b, err
}

// CreateBucket creates an S3 bucket in region at the AWS endpoint.
func (s *Sim) CreateBucket(ctx context.Context, region, bucket string) error {
	var body []byte
	if region != "us-east-1" { // S3 refuses a location constraint naming its default region
		body = fmt.Appendf(nil, `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>`, region)
	}
	status, out, err := s.awsRequest(ctx, http.MethodPut, "s3", region, "/"+bucket, nil, body)
	if err != nil {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("creating bucket %s: HTTP %d: %s", bucket, status, out)
	}
	return nil
}

// ListObjects lists the keys in bucket under prefix (up to 1000).
func (s *Sim) ListObjects(ctx context.Context, region, bucket, prefix string) ([]string, error) {
	status, out, err := s.awsRequest(ctx, http.MethodGet, "s3", region, "/"+bucket+"?list-type=2&prefix="+url.QueryEscape(prefix), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("listing bucket %s: %w", bucket, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("listing bucket %s: HTTP %d: %s", bucket, status, out)
	}
	var keys []string
	for _, part := range strings.Split(string(out), "<Key>")[1:] {
		if k, _, ok := strings.Cut(part, "</Key>"); ok {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// PutSecureString stores an SSM SecureString parameter in region at the AWS endpoint (overwriting).
func (s *Sim) PutSecureString(ctx context.Context, region, name, value string) error {
	body, _ := json.Marshal(map[string]any{"Name": name, "Value": value, "Type": "SecureString", "Overwrite": true})
	status, out, err := s.awsRequest(ctx, http.MethodPost, "ssm", region, "/", map[string]string{
		"X-Amz-Target": "AmazonSSM.PutParameter",
		"Content-Type": "application/x-amz-json-1.1",
	}, body)
	if err != nil {
		return fmt.Errorf("putting SSM parameter %s: %w", name, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("putting SSM parameter %s: HTTP %d: %s", name, status, out)
	}
	return nil
}
