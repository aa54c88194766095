// Package awsclient is the adapter to AWS: it builds aws-sdk-go-v2 clients lazily from the provider's
// settings (region, profile, endpoint overrides, path-style S3), and wraps the calls the provider makes.
// Nothing here runs until a surface really needs AWS, so surfaces that do not talk to AWS need no
// credentials.
package awsclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/acmpca"
	acmpcaschemas "github.com/aws/aws-sdk-go-v2/service/acmpca/schemas"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Endpoints overrides service endpoints, like the hashicorp/aws provider's `endpoints` block. An empty value
// keeps the SDK's own resolution (which also honours AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL).
type Endpoints struct {
	EC2   string
	S3    string
	IAM   string
	STS   string
	SSM   string
	ELBV2 string
	// ACMPCA is ACM Private CA's (tls.acm_pca_arn).
	ACMPCA string
}

// Config is what the provider configuration says about AWS.
type Config struct {
	Region                    string
	Profile                   string
	Endpoints                 Endpoints
	S3UsePathStyle            bool
	SkipCredentialsValidation bool
	DefaultTags               map[string]string
}

// ErrNoRegion means no region was configured anywhere.
var ErrNoRegion = errors.New("no AWS region configured")

// Clients hands out AWS clients built on first use and caches what the provider reads once per process.
// It is safe for concurrent use: Terraform reads data sources in parallel.
type Clients struct {
	cfg Config

	mu        sync.Mutex
	base      *aws.Config
	validated map[string]bool
	ec2       map[string]*ec2.Client
	s3        map[string]*s3.Client
	ssm       map[string]*ssm.Client
	elbv2     map[string]*elasticloadbalancingv2.Client
	acmpca    map[string]*acmpca.Client
	iam       *iam.Client

	catalogMu sync.Mutex
	catalogs  map[string]*catalogEntry

	// clock is the time every wait, retry and time-bound decision of what these clients reach reads.
	clock wait.Clock
}

type catalogEntry struct {
	once   sync.Once
	types  []catalog.InstanceType
	region catalog.Region
	err    error
}

// New returns Clients for cfg. It makes no network call and reads no credentials.
func New(cfg Config) *Clients {
	return &Clients{
		cfg:       cfg,
		validated: map[string]bool{},
		ec2:       map[string]*ec2.Client{},
		s3:        map[string]*s3.Client{},
		ssm:       map[string]*ssm.Client{},
		elbv2:     map[string]*elasticloadbalancingv2.Client{},
		acmpca:    map[string]*acmpca.Client{},
		catalogs:  map[string]*catalogEntry{},
		clock:     wait.Real,
	}
}

// Clock is the time the clients' waits, retries and time-bound decisions read (wait.Real, wired once here).
func (c *Clients) Clock() wait.Clock { return c.clock }

// Config returns the settings the clients were made from.
func (c *Clients) Config() Config { return c.cfg }

// ResolveRegion picks the region for a request: the explicit one, else the provider's, else AWS_REGION, else
// AWS_DEFAULT_REGION. It returns ErrNoRegion when none is set.
func (c *Clients) ResolveRegion(explicit string) (string, error) {
	for _, r := range []string{explicit, c.cfg.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r, nil
		}
	}
	return "", ErrNoRegion
}

func (c *Clients) baseConfig(ctx context.Context) (aws.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base != nil {
		return *c.base, nil
	}
	var opts []func(*config.LoadOptions) error
	if c.cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.cfg.Profile))
	}
	if c.cfg.Region != "" {
		opts = append(opts, config.WithRegion(c.cfg.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	logCalls(&cfg)
	c.base = &cfg
	return cfg, nil
}

// validate calls sts:GetCallerIdentity once per region unless skip_credentials_validation is set, so a
// missing or wrong credential fails with a clear message before the first real call.
func (c *Clients) validate(ctx context.Context, cfg aws.Config) error {
	if c.cfg.SkipCredentialsValidation {
		return nil
	}
	c.mu.Lock()
	done := c.validated[cfg.Region]
	c.mu.Unlock()
	if done {
		return nil
	}
	client := sts.NewFromConfig(cfg, func(o *sts.Options) {
		if c.cfg.Endpoints.STS != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.STS)
		}
	})
	if _, err := client.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err != nil {
		return fmt.Errorf("validating AWS credentials with sts:GetCallerIdentity (set skip_credentials_validation = true to skip this check): %w", err)
	}
	c.mu.Lock()
	c.validated[cfg.Region] = true
	c.mu.Unlock()
	return nil
}

// EC2 returns an EC2 client for region, built on first use.
func (c *Clients) EC2(ctx context.Context, region string) (*ec2.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.ec2[region]; ok {
		return client, nil
	}
	client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if c.cfg.Endpoints.EC2 != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.EC2)
		}
	})
	c.ec2[region] = client
	return client, nil
}

// regionConfig returns the base configuration for region, with credentials validated.
func (c *Clients) regionConfig(ctx context.Context, region string) (aws.Config, error) {
	base, err := c.baseConfig(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	cfg := base.Copy()
	cfg.Region = region
	if err := c.validate(ctx, cfg); err != nil {
		return aws.Config{}, err
	}
	return cfg, nil
}

// S3 returns an S3 client for region, built on first use, honouring the s3 endpoint override and
// s3_use_path_style.
func (c *Clients) S3(ctx context.Context, region string) (*s3.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.s3[region]; ok {
		return client, nil
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.cfg.Endpoints.S3 != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.S3)
		}
		o.UsePathStyle = c.cfg.S3UsePathStyle
	})
	c.s3[region] = client
	return client, nil
}

// SSM returns an SSM client for region, built on first use.
func (c *Clients) SSM(ctx context.Context, region string) (*ssm.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.ssm[region]; ok {
		return client, nil
	}
	client := ssm.NewFromConfig(cfg, func(o *ssm.Options) {
		if c.cfg.Endpoints.SSM != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.SSM)
		}
	})
	c.ssm[region] = client
	return client, nil
}

// ACMPCAProtocol is the protocol the provider speaks to ACM Private CA: AWS JSON 1.1, which it has always
// served. The SDK prefers RPC v2 CBOR since acmpca v1.57, which AWS serves too but emulators (moto) and
// some proxies do not.
func ACMPCAProtocol() smithyhttp.ClientProtocol { return awsjson.New11(acmpcaschemas.ACMPrivateCA) }

// ACMPCA returns an ACM Private CA client for region, built on first use.
func (c *Clients) ACMPCA(ctx context.Context, region string) (*acmpca.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.acmpca[region]; ok {
		return client, nil
	}
	client := acmpca.NewFromConfig(cfg, func(o *acmpca.Options) {
		o.Protocol = ACMPCAProtocol()
		if c.cfg.Endpoints.ACMPCA != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.ACMPCA)
		}
	})
	c.acmpca[region] = client
	return client, nil
}

// ELBV2 returns an Elastic Load Balancing v2 client for region, built on first use.
func (c *Clients) ELBV2(ctx context.Context, region string) (*elasticloadbalancingv2.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.elbv2[region]; ok {
		return client, nil
	}
	client := elasticloadbalancingv2.NewFromConfig(cfg, func(o *elasticloadbalancingv2.Options) {
		if c.cfg.Endpoints.ELBV2 != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.ELBV2)
		}
	})
	c.elbv2[region] = client
	return client, nil
}

// IAM returns the IAM client (a global service; signed for region), built on first use.
func (c *Clients) IAM(ctx context.Context, region string) (*iam.Client, error) {
	cfg, err := c.regionConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.iam == nil {
		c.iam = iam.NewFromConfig(cfg, func(o *iam.Options) {
			if c.cfg.Endpoints.IAM != "" {
				o.BaseEndpoint = aws.String(c.cfg.Endpoints.IAM)
			}
		})
	}
	return c.iam, nil
}

// Catalog reads the live instance catalog of region from EC2 once per process; later calls for the same
// region are served from memory, including calls made while the first is still running.
func (c *Clients) Catalog(ctx context.Context, region string) ([]catalog.InstanceType, catalog.Region, error) {
	c.catalogMu.Lock()
	entry, ok := c.catalogs[region]
	if !ok {
		entry = &catalogEntry{}
		c.catalogs[region] = entry
	}
	c.catalogMu.Unlock()

	entry.once.Do(func() {
		client, err := c.EC2(ctx, region)
		if err != nil {
			entry.err = err
			return
		}
		entry.types, entry.region, entry.err = FetchCatalog(ctx, client, region)
	})
	if entry.err != nil {
		// A failed read is not cached: the next data source tries again.
		c.catalogMu.Lock()
		if c.catalogs[region] == entry {
			delete(c.catalogs, region)
		}
		c.catalogMu.Unlock()
	}
	return entry.types, entry.region, entry.err
}
