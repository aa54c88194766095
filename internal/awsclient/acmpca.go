package awsclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acmpca"
	pcatypes "github.com/aws/aws-sdk-go-v2/service/acmpca/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// ACM Private CA error codes the adapter reacts to by name.
const errCodePCANotFound = "ResourceNotFoundException"

// issueWait bounds the wait for ACM Private CA to issue a certificate it accepted (usually a second or two).
const issueWait = 2 * time.Minute

// PrivateCAs is what the EC2 platform does with ACM Private CA (tls.acm_pca_arn) in one region: describe an
// authority and have it issue a certificate from a request.
type PrivateCAs struct {
	client *acmpca.Client
}

// NewPrivateCAs is ACM Private CA in region, on the provider's AWS clients.
func NewPrivateCAs(ctx context.Context, clients *Clients, region string) (*PrivateCAs, error) {
	c, err := clients.ACMPCA(ctx, region)
	if err != nil {
		return nil, fmt.Errorf("ACM Private CA client for %s: %w", region, err)
	}
	return &PrivateCAs{client: c}, nil
}

// PrivateCAInfo is an authority as described, its certificate and chain (PEM, the issuing authority's
// first: nil while it has none installed) and the algorithm it signs with.
type PrivateCAInfo struct {
	awsspec.PrivateCA
	ChainPEM         []byte
	SigningAlgorithm string
}

// Describe reads the authority arn: its status, type, usage mode, signing algorithm and, when it has one,
// its certificate with its chain (ErrNotFound when it does not exist).
func (p *PrivateCAs) Describe(ctx context.Context, arn string) (PrivateCAInfo, error) {
	out, err := p.client.DescribeCertificateAuthority(ctx, &acmpca.DescribeCertificateAuthorityInput{CertificateAuthorityArn: aws.String(arn)})
	if err != nil {
		return PrivateCAInfo{}, notFound(err, "ACM Private CA "+arn, "describing", errCodePCANotFound)
	}
	ca := out.CertificateAuthority
	if ca == nil {
		return PrivateCAInfo{}, fmt.Errorf("describing ACM Private CA %s: empty answer", arn)
	}
	info := PrivateCAInfo{PrivateCA: awsspec.PrivateCA{ARN: arn, Status: string(ca.Status), Type: string(ca.Type), UsageMode: string(ca.UsageMode)}}
	if cfg := ca.CertificateAuthorityConfiguration; cfg != nil {
		info.SigningAlgorithm = string(cfg.SigningAlgorithm)
	}
	if ca.Status != pcatypes.CertificateAuthorityStatusActive {
		return info, nil // no certificate to issue with (PENDING_CERTIFICATE has none at all)
	}
	cert, err := p.client.GetCertificateAuthorityCertificate(ctx, &acmpca.GetCertificateAuthorityCertificateInput{CertificateAuthorityArn: aws.String(arn)})
	if err != nil {
		return PrivateCAInfo{}, fmt.Errorf("reading ACM Private CA %s's certificate: %w", arn, err)
	}
	info.ChainPEM = []byte(strings.TrimSpace(aws.ToString(cert.Certificate)) + "\n")
	if chain := strings.TrimSpace(aws.ToString(cert.CertificateChain)); chain != "" {
		info.ChainPEM = append(info.ChainPEM, chain+"\n"...)
	}
	if info.Cert, err = pki.ParseCert(info.ChainPEM); err != nil {
		return PrivateCAInfo{}, fmt.Errorf("ACM Private CA %s's certificate: %w", arn, err)
	}
	return info, nil
}

// Issue has the authority arn issue a certificate for the request csrPEM (its subject and names passed
// through, by the end-entity template: server and client authentication), signed with signingAlgorithm
// and valid until notAfter, and waits until it is issued; it returns the certificate (PEM). The request's
// hash is the idempotency token, so a retried call does not issue twice.
func (p *PrivateCAs) Issue(ctx context.Context, arn string, csrPEM []byte, signingAlgorithm string, notAfter time.Time) ([]byte, error) {
	sum := sha256.Sum256(csrPEM)
	out, err := p.client.IssueCertificate(ctx, &acmpca.IssueCertificateInput{
		CertificateAuthorityArn: aws.String(arn),
		Csr:                     csrPEM,
		SigningAlgorithm:        pcatypes.SigningAlgorithm(signingAlgorithm),
		Validity:                &pcatypes.Validity{Type: pcatypes.ValidityPeriodTypeAbsolute, Value: aws.Int64(notAfter.Unix())},
		IdempotencyToken:        aws.String(hex.EncodeToString(sum[:16])),
	})
	if err != nil {
		return nil, fmt.Errorf("issuing a certificate from ACM Private CA %s: %w", arn, err)
	}
	in := &acmpca.GetCertificateInput{CertificateAuthorityArn: aws.String(arn), CertificateArn: out.CertificateArn}
	got, err := acmpca.NewCertificateIssuedWaiter(p.client, func(o *acmpca.CertificateIssuedWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 5*time.Second
	}).WaitForOutput(ctx, in, issueWait)
	if err != nil {
		return nil, fmt.Errorf("waiting for ACM Private CA %s to issue %s: %w", arn, aws.ToString(out.CertificateArn), err)
	}
	return []byte(strings.TrimSpace(aws.ToString(got.Certificate)) + "\n"), nil
}
