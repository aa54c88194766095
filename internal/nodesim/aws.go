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

// MotoIAMFixes is Python that makes moto (5.2, with Werkzeug 3) enforce IAM as AWS does in three respects,
// for runs with IAM enforced:
//
//   - the signature check: moto rebuilds the canonical request from Werkzeug's URL, in which a query
//     value's %2F reads "/" (and other reserved characters likewise), so every correctly signed request
//     with such a value, an S3 listing with prefix=a/b/ among them, is refused as SignatureDoesNotMatch.
//     AWS forms the canonical query string with every name and value URI-encoded (RFC 3986 unreserved
//     characters kept); the fix encodes moto's query that way before moto signs it. The signature is still
//     compared;
//   - SSM's resources: moto checks an SSM action against the resource "*" only, so a policy that allows
//     parameters under a path (the nodes' instance policy) allows nothing. AWS authorizes GetParameter,
//     PutParameter and the like on the parameter's ARN, GetParameters and DeleteParameters on each
//     name's, GetParametersByPath on the path's; the fix checks the caller's policies for each of those;
//   - EC2's part in instance roles: the IAM user IAMUser (the node simulator's own, or a test's standing
//     in for EC2) may assume a role whose trust policy lets the service principal ec2.amazonaws.com assume
//     it, as EC2 does for an instance's profile. moto itself fails with a server error on a trust policy
//     whose principal is a service; for any other caller such a principal now refuses.
//
// It imports sys, for the code after it.
const MotoIAMFixes = `import json
import sys
from urllib.parse import quote, unquote
from moto.core.authorization import ActionAuthenticatorMixin
from moto.iam.access_control import IAMRequestBase
from moto.ssm.responses import SimpleSystemManagerResponse

if not all(hasattr(c, m) for c, m in ((IAMRequestBase, "_create_aws_request"), (IAMRequestBase, "_check_role_trust_relationship"),
        (ActionAuthenticatorMixin, "_authenticate_and_authorize_normal_action"))):
    sys.exit("pgnvme: this moto has no IAMRequestBase._create_aws_request, IAMRequestBase._check_role_trust_relationship or ActionAuthenticatorMixin._authenticate_and_authorize_normal_action: update MotoIAMFixes (internal/nodesim)")

_moto_create_aws_request = IAMRequestBase._create_aws_request

def _canonical_query(query):
    pairs = []
    for part in query.split("&"):
        if part:
            k, _, v = part.partition("=")
            pairs.append(quote(unquote(k), safe="-_.~") + "=" + quote(unquote(v), safe="-_.~"))
    return "&".join(pairs)

def _create_aws_request(self):
    path, sep, query = self._path.partition("?")
    if sep:
        self._path = path + "?" + _canonical_query(query)
    return _moto_create_aws_request(self)

IAMRequestBase._create_aws_request = _create_aws_request

_moto_authorize = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action

def _ssm_parameter_arn(self, name):
    if name.startswith("arn:"):
        return name
    return "arn:aws:ssm:%s:%s:parameter%s%s" % (self.region, self.current_account, "" if name.startswith("/") else "/", name.split(":")[0])

def _ssm_authorize(self, resource="*"):
    names = []
    for key in ("Name", "Path"):
        v = self._get_param(key)
        if isinstance(v, str) and v:
            names.append(v)
    v = self._get_param("Names")
    if isinstance(v, list):
        names += [n for n in v if isinstance(n, str)]
    if not names:
        return _moto_authorize(self, resource)
    for n in names:
        _moto_authorize(self, _ssm_parameter_arn(self, n))

SimpleSystemManagerResponse._authenticate_and_authorize_normal_action = _ssm_authorize

_trust = IAMRequestBase._check_role_trust_relationship

def _lets_ec2_assume(doc):
    doc = json.loads(doc) if isinstance(doc, str) else doc
    statements = doc.get("Statement", [])
    for st in statements if isinstance(statements, list) else [statements]:
        principal = st.get("Principal") or {}
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        actions = st.get("Action", [])
        if st.get("Effect") == "Allow" and "ec2.amazonaws.com" in ([services] if isinstance(services, str) else services) \
                and "sts:AssumeRole" in ([actions] if isinstance(actions, str) else actions):
            return True
    return False

def check_role_trust_relationship(self, role_arn):
    if self._access_key.arn.endswith(":user/nodesim"):
        return _lets_ec2_assume(self.backend.get_role_by_arn(role_arn).assume_role_policy_document)
    try:
        return _trust(self, role_arn)
    except TypeError:  # a service principal: not this caller
        return False

IAMRequestBase._check_role_trust_relationship = check_role_trust_relationship
`

// motoServer runs moto's server (python -m moto.server) with changes that make moto treat network
// interfaces and ACM Private CA as AWS does. The EC2 platform's one-ENI-per-node design relies on the first
// two, the TLS tests' renewal from a private CA on the last two:
//
//   - an interface created without an address gets its subnet's next free one (after the three AWS keeps
//     at the start, never one in use), and a deleted one gives its address back. moto itself picks a
//     random address of the subnet, which may be the network's, the broadcast, a reserved one (such as the
//     service address, .1 of the first subnet) or another interface's; an instance launched into a subnet
//     already gets the subnet's next free address;
//   - a terminated instance lets go of the interfaces it does not delete: they become available for a
//     replacement, where moto leaves them in use by the terminated instance for ever;
//   - ACM Private CA issues a certificate valid as IssueCertificate's Validity says (ABSOLUTE, END_DATE,
//     DAYS, MONTHS or YEARS) and from an hour before it is issued, as AWS does; moto makes every
//     certificate valid for 365 days from now, so certificates made to end soon could not be shown;
//   - a CA is made in the usage mode CreateCertificateAuthority asks for (GENERAL_PURPOSE when it asks for
//     none, as AWS does); moto reports every CA as SHORT_LIVED_CERTIFICATE.
//
// It also carries MotoIAMFixes, for runs with IAM enforced. A moto whose internals moved fails to start
// with a message saying so.
const motoServer = MotoIAMFixes + `import datetime
import threading
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from moto.acmpca.models import CertificateAuthority
from moto.acmpca.responses import ACMPCAResponse
from moto.core.utils import utcnow

if not all(hasattr(c, m) for c, m in ((CertificateAuthority, "generate_cert"), (CertificateAuthority, "issuer"), (CertificateAuthority, "key"),
        (ACMPCAResponse, "issue_certificate"), (ACMPCAResponse, "create_certificate_authority"))):
    sys.exit("nodesim: this moto's ACM PCA has no CertificateAuthority.generate_cert or ACMPCAResponse.issue_certificate: update internal/nodesim's motoServer")

_pca_request = threading.local()

def _validity_end(v):
    kind, n = v.get("Type"), int(v.get("Value"))
    if kind == "ABSOLUTE":
        return datetime.datetime.fromtimestamp(n, datetime.timezone.utc).replace(tzinfo=None)
    if kind == "END_DATE":
        return datetime.datetime.strptime(str(n), "%Y%m%d%H%M%S")
    days = {"DAYS": 1, "MONTHS": 30, "YEARS": 365}.get(kind)
    if days is None:
        raise ValueError("unknown validity type %r" % kind)
    return utcnow() + datetime.timedelta(days=days * n)

def generate_cert(self, subject, public_key, extensions):
    end = getattr(_pca_request, "end", None) or utcnow() + datetime.timedelta(days=365)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(utcnow() - datetime.timedelta(hours=1)).not_valid_after(end))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical)
    return builder.sign(self.key, hashes.SHA512()).public_bytes(serialization.Encoding.PEM)

_pca_issue, _pca_create = ACMPCAResponse.issue_certificate, ACMPCAResponse.create_certificate_authority

def issue_certificate(self):
    v = json.loads(self.body).get("Validity")
    _pca_request.end = _validity_end(v) if v else None
    try:
        return _pca_issue(self)
    finally:
        _pca_request.end = None

def create_certificate_authority(self):
    out = _pca_create(self)
    arn = json.loads(out)["CertificateAuthorityArn"]
    self.acmpca_backend.describe_certificate_authority(arn).usage_mode = json.loads(self.body).get("UsageMode") or "GENERAL_PURPOSE"
    return out

CertificateAuthority.generate_cert = generate_cert
ACMPCAResponse.issue_certificate = issue_certificate
ACMPCAResponse.create_certificate_authority = create_certificate_authority

from moto.ec2.models.elastic_network_interfaces import NetworkInterfaceBackend
from moto.ec2.models.instances import Instance
from moto.ec2.models.subnets import Subnet
from moto.server import main

if not all(hasattr(c, m) for c, m in ((NetworkInterfaceBackend, "create_network_interface"),
        (NetworkInterfaceBackend, "delete_network_interface"), (Subnet, "get_available_subnet_ip"),
        (Subnet, "del_subnet_ip"), (Instance, "terminate"))):
    sys.exit("nodesim: this moto's EC2 has no NetworkInterfaceBackend.create_network_interface, Subnet.get_available_subnet_ip or Instance.terminate: update internal/nodesim's motoServer")

_create, _delete, _terminate = NetworkInterfaceBackend.create_network_interface, NetworkInterfaceBackend.delete_network_interface, Instance.terminate

def create_network_interface(self, subnet, private_ip_address, private_ip_addresses=None, *args, **kwargs):
    s = self.get_subnet(subnet) if isinstance(subnet, str) else subnet
    if not private_ip_address and not private_ip_addresses and s is not None and s.cidr.version == 4:
        private_ip_address = s.get_available_subnet_ip(instance=None)
    return _create(self, subnet, private_ip_address, private_ip_addresses, *args, **kwargs)

def delete_network_interface(self, eni_id):
    eni = self.enis.get(eni_id)
    _delete(self, eni_id)
    if eni is not None and eni.subnet is not None and eni.private_ip_address:
        eni.subnet.del_subnet_ip(eni.private_ip_address)

def terminate(self):
    state = _terminate(self)
    # The instance keeps its record of the interface (DescribeInstances shows it); the interface is free.
    for eni in self.nics.values():
        if eni.instance is self:
            eni.instance, eni.attachment_id, eni.attach_time, eni.status = None, None, None, "available"
    return state

NetworkInterfaceBackend.create_network_interface = create_network_interface
NetworkInterfaceBackend.delete_network_interface = delete_network_interface
Instance.terminate = terminate
main(sys.argv[1:])
`

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
