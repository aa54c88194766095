package nodesim

// The Python the simulator (and acctest) run moto with: moto as AWS behaves where the tests rely on it.

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
