package acctest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

const (
	pitrRegion = "us-east-1"
	pitrBucket = "pgnvme-pitr-proof"
	// pitrRepoPath is repo1-path: the cluster's prefix in the bucket, then pgbackrest.
	pitrRepoPath = "/cluster-a/pgbackrest"
)

// TestPITRArchiveRestoreThroughTLSMoto is the real-archiver proof for the archive bucket: a PostgreSQL
// primary archives into an S3 bucket on moto with pgBackRest (through stunnel's TLS, as pgBackRest needs),
// takes a full backup, commits rows before and after a target time, and a point-in-time restore into a new
// data directory must hold exactly the rows before the target. The bucket is made here with raw SDK calls
// over the same TLS endpoint, trusted through AWS_CA_BUNDLE, the way the provider will be pointed at it.
func TestPITRArchiveRestoreThroughTLSMoto(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	tm := acctest.StartTLSMoto(t)
	isolateAWSEnv(t)

	// Without the CA bundle the SDK must refuse the self-signed endpoint: the requests below really use TLS.
	untrusted := newS3(t, ctx, tm.HTTPSURL, config.WithRetryMaxAttempts(1))
	_, err := untrusted.ListBuckets(ctx, &s3.ListBucketsInput{})
	var verifyErr *tls.CertificateVerificationError
	if !errors.As(err, &verifyErr) {
		t.Fatalf("ListBuckets on %s without AWS_CA_BUNDLE: want a certificate verification error, got %v", tm.HTTPSURL, err)
	}

	// With AWS_CA_BUNDLE set, config.LoadDefaultConfig trusts the certificate: this is how the provider
	// (endpoints { s3 = HTTPSURL }, s3_use_path_style = true) reaches the TLS endpoint.
	tm.SetCABundleEnv(t)
	cfg := loadAWSConfig(t, ctx)
	kmsClient := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String(tm.HTTPSURL) })
	key, err := kmsClient.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("pgnvme PITR proof")})
	if err != nil {
		t.Fatalf("kms CreateKey over TLS: %v", err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	s3c := newS3(t, ctx, tm.HTTPSURL)
	createArchiveBucket(t, ctx, s3c, keyARN)

	// The bundle does not get in the way of plain-http endpoints (moto's own URL).
	plain := newS3(t, ctx, tm.HTTPURL)
	v, err := plain.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(pitrBucket)})
	if err != nil || v.Status != s3types.BucketVersioningStatusEnabled {
		t.Fatalf("GetBucketVersioning over plain http with AWS_CA_BUNDLE set: status %q, %v", v.Status, err)
	}
	setup := time.Since(start)

	// The repo options the resource outputs as pgbackrest_options (the endpoint keys point at the TLS
	// terminator), plus the KMS key pgBackRest names on every PUT.
	repo := map[string]string{
		"repo1-type":          "s3",
		"repo1-s3-bucket":     pitrBucket,
		"repo1-s3-region":     pitrRegion,
		"repo1-path":          pitrRepoPath,
		"repo1-s3-kms-key-id": keyARN,
		"repo1-bundle":        "y",
	}
	for k, v := range tm.PgBackRestRepoOptions() {
		repo[k] = v
	}
	pb := acctest.NewPgBackRest(t, repo, tm)
	res := acctest.RunPITR(t, pb)
	acctest.CheckObjectsEncrypted(t, ctx, s3c, pitrBucket, pitrRepoPath, keyARN)
	t.Logf("timings: moto+stunnel+bucket %s, %s, total %s", setup.Round(time.Millisecond), res, time.Since(start).Round(time.Millisecond))
}

// isolateAWSEnv gives the SDK moto's dummy credentials and region and keeps it away from the machine's
// AWS configuration, profiles, endpoint variables and instance metadata.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_REGION":                  pitrRegion,
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	// Unset rather than empty; t.Setenv first records the value to restore after the test.
	for _, k := range []string{"AWS_CA_BUNDLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_KMS",
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

func loadAWSConfig(t *testing.T, ctx context.Context, opts ...func(*config.LoadOptions) error) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(ctx, append([]func(*config.LoadOptions) error{config.WithRegion(pitrRegion)}, opts...)...)
	if err != nil {
		t.Fatalf("config.LoadDefaultConfig: %v", err)
	}
	return cfg
}

// newS3 is a path-style S3 client for endpoint built by config.LoadDefaultConfig, as the provider builds it.
func newS3(t *testing.T, ctx context.Context, endpoint string, opts ...func(*config.LoadOptions) error) *s3.Client {
	t.Helper()
	cfg := loadAWSConfig(t, ctx, opts...)
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// createArchiveBucket makes the bucket the way the resource does, minus what moto cannot take: versioning
// and SSE-KMS default encryption with a bucket key. There is deliberately NO bucket policy: moto enforces
// bucket policies on object operations but ignores their Conditions, so the resource's deny-non-TLS
// statement (aws:SecureTransport = false) would deny every object request on moto, even these over TLS.
func createArchiveBucket(t *testing.T, ctx context.Context, c *s3.Client, keyARN string) {
	t.Helper()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(pitrBucket)}); err != nil {
		t.Fatalf("CreateBucket over TLS: %v", err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(pitrBucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled},
	}); err != nil {
		t.Fatalf("PutBucketVersioning: %v", err)
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{
		Bucket: aws.String(pitrBucket),
		ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
			ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{
				SSEAlgorithm:   s3types.ServerSideEncryptionAwsKms,
				KMSMasterKeyID: aws.String(keyARN),
			},
			BucketKeyEnabled: aws.Bool(true),
		}}},
	}); err != nil {
		t.Fatalf("PutBucketEncryption: %v", err)
	}
}
