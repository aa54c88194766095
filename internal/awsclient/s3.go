package awsclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// S3API is the part of *s3.Client the archive bucket adapter uses. Tests fake it.
type S3API interface {
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	GetBucketLocation(ctx context.Context, in *s3.GetBucketLocationInput, optFns ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error)
	CreateBucket(ctx context.Context, in *s3.CreateBucketInput, optFns ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
	DeleteBucket(ctx context.Context, in *s3.DeleteBucketInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketOutput, error)

	PutObjectLockConfiguration(ctx context.Context, in *s3.PutObjectLockConfigurationInput, optFns ...func(*s3.Options)) (*s3.PutObjectLockConfigurationOutput, error)
	GetObjectLockConfiguration(ctx context.Context, in *s3.GetObjectLockConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error)

	PutBucketTagging(ctx context.Context, in *s3.PutBucketTaggingInput, optFns ...func(*s3.Options)) (*s3.PutBucketTaggingOutput, error)
	GetBucketTagging(ctx context.Context, in *s3.GetBucketTaggingInput, optFns ...func(*s3.Options)) (*s3.GetBucketTaggingOutput, error)
	DeleteBucketTagging(ctx context.Context, in *s3.DeleteBucketTaggingInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketTaggingOutput, error)

	PutPublicAccessBlock(ctx context.Context, in *s3.PutPublicAccessBlockInput, optFns ...func(*s3.Options)) (*s3.PutPublicAccessBlockOutput, error)
	GetPublicAccessBlock(ctx context.Context, in *s3.GetPublicAccessBlockInput, optFns ...func(*s3.Options)) (*s3.GetPublicAccessBlockOutput, error)
	PutBucketOwnershipControls(ctx context.Context, in *s3.PutBucketOwnershipControlsInput, optFns ...func(*s3.Options)) (*s3.PutBucketOwnershipControlsOutput, error)
	GetBucketOwnershipControls(ctx context.Context, in *s3.GetBucketOwnershipControlsInput, optFns ...func(*s3.Options)) (*s3.GetBucketOwnershipControlsOutput, error)
	DeleteBucketOwnershipControls(ctx context.Context, in *s3.DeleteBucketOwnershipControlsInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketOwnershipControlsOutput, error)
	PutBucketVersioning(ctx context.Context, in *s3.PutBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error)
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
	PutBucketEncryption(ctx context.Context, in *s3.PutBucketEncryptionInput, optFns ...func(*s3.Options)) (*s3.PutBucketEncryptionOutput, error)
	GetBucketEncryption(ctx context.Context, in *s3.GetBucketEncryptionInput, optFns ...func(*s3.Options)) (*s3.GetBucketEncryptionOutput, error)
	DeleteBucketEncryption(ctx context.Context, in *s3.DeleteBucketEncryptionInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketEncryptionOutput, error)
	PutBucketLifecycleConfiguration(ctx context.Context, in *s3.PutBucketLifecycleConfigurationInput, optFns ...func(*s3.Options)) (*s3.PutBucketLifecycleConfigurationOutput, error)
	GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error)
	DeleteBucketLifecycle(ctx context.Context, in *s3.DeleteBucketLifecycleInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketLifecycleOutput, error)
	PutBucketPolicy(ctx context.Context, in *s3.PutBucketPolicyInput, optFns ...func(*s3.Options)) (*s3.PutBucketPolicyOutput, error)
	GetBucketPolicy(ctx context.Context, in *s3.GetBucketPolicyInput, optFns ...func(*s3.Options)) (*s3.GetBucketPolicyOutput, error)
	DeleteBucketPolicy(ctx context.Context, in *s3.DeleteBucketPolicyInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketPolicyOutput, error)
	PutBucketReplication(ctx context.Context, in *s3.PutBucketReplicationInput, optFns ...func(*s3.Options)) (*s3.PutBucketReplicationOutput, error)
	GetBucketReplication(ctx context.Context, in *s3.GetBucketReplicationInput, optFns ...func(*s3.Options)) (*s3.GetBucketReplicationOutput, error)
	DeleteBucketReplication(ctx context.Context, in *s3.DeleteBucketReplicationInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketReplicationOutput, error)

	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// ErrBucketNotFound means the bucket does not exist (or no longer exists). Finders and readers wrap it, so
// test with errors.Is.
var ErrBucketNotFound = errors.New("bucket not found")

// ErrBucketNotEmpty means S3 refused to delete a bucket because it still holds object versions or delete
// markers. DeleteBucket wraps it, so test with errors.Is.
var ErrBucketNotEmpty = errors.New("bucket not empty")

// S3 error codes the adapter reacts to by name. The SDK models only a few of them as types.
const (
	errCodeBucketAlreadyExists                = "BucketAlreadyExists"
	errCodeBucketAlreadyOwnedByYou            = "BucketAlreadyOwnedByYou"
	errCodeBucketNotEmpty                     = "BucketNotEmpty"
	errCodeInvalidRequest                     = "InvalidRequest"
	errCodeMalformedPolicy                    = "MalformedPolicy"
	errCodeNoSuchBucket                       = "NoSuchBucket"
	errCodeNoSuchBucketPolicy                 = "NoSuchBucketPolicy"
	errCodeNoSuchLifecycleConfiguration       = "NoSuchLifecycleConfiguration"
	errCodeNoSuchPublicAccessBlock            = "NoSuchPublicAccessBlockConfiguration"
	errCodeNoSuchTagSet                       = "NoSuchTagSet"
	errCodeNotFound                           = "NotFound"
	errCodeObjectLockConfigurationNotFound    = "ObjectLockConfigurationNotFoundError"
	errCodeOperationAborted                   = "OperationAborted"
	errCodeOwnershipControlsNotFound          = "OwnershipControlsNotFoundError"
	errCodeReplicationConfigurationNotFound   = "ReplicationConfigurationNotFoundError"
	errCodeServerSideEncryptionConfigNotFound = "ServerSideEncryptionConfigurationNotFoundError"
	errCodeAccessDenied                       = "AccessDenied"
)

// Named timeouts of the eventual-consistency retries and the waiters' defaults.
const (
	// bucketPropagationTimeout bounds retries of calls that may see a just-created bucket as missing
	// (NoSuchBucket), as the hashicorp/aws provider does.
	bucketPropagationTimeout = 2 * time.Minute
	// policyRaceTimeout bounds retries of PutBucketPolicy while S3 still applies the public access block or
	// another configuration change to the same bucket (OperationAborted, MalformedPolicy).
	policyRaceTimeout = time.Minute
	// lifecyclePropagationTimeout bounds the wait until S3 serves a lifecycle configuration just written:
	// AWS documents that a lifecycle change may take a while to propagate.
	lifecyclePropagationTimeout = 3 * time.Minute
	// emptyBucketErrorLimit caps how many per-object failures EmptyBucket spells out.
	emptyBucketErrorLimit = 10
	// deleteObjectsBatch is the most keys one DeleteObjects call accepts.
	deleteObjectsBatch = 1000
)

const regionUSEast1 = "us-east-1"

// errorCode returns the AWS error code of err ("" when err is not an API error).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// errCodeEquals reports whether err is an AWS API error with one of codes.
func errCodeEquals(err error, codes ...string) bool {
	if err == nil {
		return false
	}
	return slices.Contains(codes, errorCode(err))
}

// errMessageContains reports whether err is an AWS API error with code and a message containing part.
func errMessageContains(err error, code, part string) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.ErrorCode() == code && strings.Contains(ae.ErrorMessage(), part)
}

// httpStatus returns the HTTP status code of the response that produced err (0 when unknown).
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// bucketGone wraps err as ErrBucketNotFound when S3 says the bucket does not exist, and returns nil otherwise.
func bucketGone(err error, bucket string) error {
	if errCodeEquals(err, errCodeNoSuchBucket) {
		return fmt.Errorf("S3 bucket %q: %w (%w)", bucket, ErrBucketNotFound, err)
	}
	return nil
}

// retryWhen calls fn until it succeeds or fails with an error retryable does not accept, for at most timeout
// (then the last error comes back as it came, so callers still classify it), as the AWS provider's
// tfresource.RetryWhen. Delays grow from wait.DefaultMinInterval to wait.DefaultMaxInterval.
func retryWhen[T any](ctx context.Context, timeout time.Duration, retryable func(error) bool, fn func(context.Context) (T, error)) (T, error) {
	return wait.Retry(ctx, "the AWS call to succeed (retrying eventual-consistency errors)", timeout, wait.Real, retryable, fn)
}

// retryWhenCode is retryWhen for a list of named AWS error codes (tfresource.RetryWhenAWSErrCodeEquals).
func retryWhenCode[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error), codes ...string) (T, error) {
	what := fmt.Sprintf("the AWS call to succeed (retrying %s)", strings.Join(codes, ", "))
	return wait.Retry(ctx, what, timeout, wait.Real, func(err error) bool { return errCodeEquals(err, codes...) }, fn)
}

// normalizeLocation turns a GetBucketLocation answer into a region name.
func normalizeLocation(location string) string {
	switch location {
	case "":
		return regionUSEast1
	case "EU":
		return "eu-west-1"
	default:
		return location
	}
}

// FindBucket returns the region of bucket. A missing bucket is ErrBucketNotFound (wrapped). The region comes
// from HeadBucket's x-amz-bucket-region header, also when S3 answers with a redirect because the client is
// signed for another region, else from GetBucketLocation.
func FindBucket(ctx context.Context, api S3API, bucket string) (string, error) {
	out, err := api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err != nil {
		var nf *s3types.NotFound
		if errors.As(err, &nf) || errCodeEquals(err, errCodeNotFound, errCodeNoSuchBucket) || httpStatus(err) == http.StatusNotFound {
			return "", fmt.Errorf("S3 bucket %q: %w", bucket, ErrBucketNotFound)
		}
		// A client signed for the wrong region gets a 301 whose header still names the bucket's region.
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.Response != nil && re.HTTPStatusCode() == http.StatusMovedPermanently {
			if region := re.Response.Header.Get("X-Amz-Bucket-Region"); region != "" {
				return region, nil
			}
		}
		return "", fmt.Errorf("reading S3 bucket %q (HeadBucket): %w", bucket, err)
	}
	if region := aws.ToString(out.BucketRegion); region != "" {
		return region, nil
	}
	loc, err := api.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(bucket)})
	if err != nil {
		if gone := bucketGone(err, bucket); gone != nil {
			return "", gone
		}
		return "", fmt.Errorf("reading the region of S3 bucket %q (GetBucketLocation): %w", bucket, err)
	}
	return normalizeLocation(string(loc.LocationConstraint)), nil
}

// States of a bucket, as statusBucket reports them to the waiters.
const (
	bucketStateExists  = "exists"
	bucketStateMissing = "missing"
)

// statusBucket reads whether bucket exists, for wait.For: bucketStateExists with its region, or
// bucketStateMissing.
func statusBucket(api S3API, bucket string) func(context.Context) (string, string, error) {
	return func(ctx context.Context) (string, string, error) {
		region, err := FindBucket(ctx, api, bucket)
		if errors.Is(err, ErrBucketNotFound) {
			return "", bucketStateMissing, nil
		}
		if err != nil {
			return "", "", err
		}
		return region, bucketStateExists, nil
	}
}

// CreateBucket creates bucket in region (with a LocationConstraint unless region is us-east-1, and with
// Object Lock enabled when lock is not nil), sets the default Object Lock retention when lock is not nil, and
// tags it. A bucket this account already owns in the same region counts as created, so an interrupted apply
// re-runs safely; a name taken by another account, or owned by this account in another region, is an error.
func CreateBucket(ctx context.Context, api S3API, bucket, region string, lock *archive.ObjectLock, tags map[string]string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if region != regionUSEast1 {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{
			LocationConstraint: s3types.BucketLocationConstraint(region),
		}
	}
	if lock != nil {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.CreateBucketOutput, error) {
		return api.CreateBucket(ctx, in)
	}, errCodeOperationAborted) // S3: "A conflicting conditional operation is currently in progress" after a recent delete of the same name.
	switch {
	case err == nil:
	case errCodeEquals(err, errCodeBucketAlreadyOwnedByYou):
		// Ours already, e.g. from an apply that was interrupted after CreateBucket: check it is where we want it.
		got, ferr := FindBucket(ctx, api, bucket)
		if ferr != nil {
			return fmt.Errorf("creating S3 bucket %q: it already exists in this account, but reading it failed: %w", bucket, ferr)
		}
		if got != region {
			return fmt.Errorf("creating S3 bucket %q in %s: this account already owns a bucket of that name in %s; delete it or choose another name", bucket, region, got)
		}
	case errCodeEquals(err, errCodeBucketAlreadyExists):
		return fmt.Errorf("creating S3 bucket %q: the name is already taken by another AWS account (bucket names are global across all accounts); choose another name or use bucket_prefix: %w", bucket, err)
	default:
		return fmt.Errorf("creating S3 bucket %q in %s: %w", bucket, region, err)
	}

	if lock != nil {
		if err := putObjectLockConfiguration(ctx, api, bucket, lock); err != nil {
			return err
		}
	}
	if len(tags) > 0 {
		if err := PutTags(ctx, api, bucket, tags); err != nil {
			return err
		}
	}
	return nil
}

func putObjectLockConfiguration(ctx context.Context, api S3API, bucket string, lock *archive.ObjectLock) error {
	in := &s3.PutObjectLockConfigurationInput{
		Bucket: aws.String(bucket),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{
			ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{
				Mode: s3types.ObjectLockRetentionMode(lock.Mode),
				Days: aws.Int32(int32(lock.Days)),
			}},
		},
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutObjectLockConfigurationOutput, error) {
		return api.PutObjectLockConfiguration(ctx, in)
	}, errCodeNoSuchBucket)
	if err != nil {
		return fmt.Errorf("setting the default Object Lock retention (%s, %d days) of S3 bucket %q: %w", lock.Mode, lock.Days, bucket, err)
	}
	return nil
}

// WaitBucketExists waits until HeadBucket finds bucket, for at most timeout.
func WaitBucketExists(ctx context.Context, api S3API, bucket string, timeout time.Duration) error {
	return waitBucketCreated(ctx, api, bucket, timeout, wait.Real)
}

// WaitBucketDeleted waits until HeadBucket no longer finds bucket, for at most timeout.
func WaitBucketDeleted(ctx context.Context, api S3API, bucket string, timeout time.Duration) error {
	return waitBucketDeleted(ctx, api, bucket, timeout, wait.Real)
}

func waitBucketCreated(ctx context.Context, api S3API, bucket string, timeout time.Duration, clock wait.Clock) error {
	_, err := wait.For(ctx, wait.Spec[string]{
		What:    fmt.Sprintf("S3 bucket %q to exist", bucket),
		Refresh: statusBucket(api, bucket),
		Pending: []string{bucketStateMissing},
		Target:  []string{bucketStateExists},
		Timeout: timeout,
		Clock:   clock,
	})
	return err
}

func waitBucketDeleted(ctx context.Context, api S3API, bucket string, timeout time.Duration, clock wait.Clock) error {
	_, err := wait.For(ctx, wait.Spec[string]{
		What:    fmt.Sprintf("S3 bucket %q to be deleted", bucket),
		Refresh: statusBucket(api, bucket),
		Pending: []string{bucketStateExists},
		Target:  []string{bucketStateMissing},
		Timeout: timeout,
		Clock:   clock,
	})
	return err
}

// ApplyGuards makes the live bucket match g. The public access block and ownership controls go first (so the
// bucket is never open while the rest is applied), then versioning (replication needs it), then default
// encryption, lifecycle, policy and replication. Zero values remove a configuration where S3 allows it:
// no ownership, no encryption, no lifecycle rules, no policy, no replication. Versioning "" leaves versioning
// as it is: S3 cannot return a bucket to "never versioned".
func ApplyGuards(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	steps := []func(context.Context, S3API, string, archive.Guards) error{
		applyPublicAccessBlock,
		applyOwnership,
		applyVersioning,
		applyEncryption,
		applyLifecycle,
		applyPolicy,
		applyReplication,
	}
	for _, step := range steps {
		if err := step(ctx, api, bucket, g); err != nil {
			return err
		}
	}
	return nil
}

func applyPublicAccessBlock(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	p := g.PublicAccessBlock
	in := &s3.PutPublicAccessBlockInput{
		Bucket: aws.String(bucket),
		PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
			BlockPublicAcls:       aws.Bool(p.BlockPublicAcls),
			IgnorePublicAcls:      aws.Bool(p.IgnorePublicAcls),
			BlockPublicPolicy:     aws.Bool(p.BlockPublicPolicy),
			RestrictPublicBuckets: aws.Bool(p.RestrictPublicBuckets),
		},
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutPublicAccessBlockOutput, error) {
		return api.PutPublicAccessBlock(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the public access block of S3 bucket %q: %w", bucket, err)
	}
	return nil
}

func applyOwnership(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	if g.ObjectOwnership == "" {
		_, err := api.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeOwnershipControlsNotFound) {
			return fmt.Errorf("deleting the ownership controls of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	in := &s3.PutBucketOwnershipControlsInput{
		Bucket: aws.String(bucket),
		OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{
			{ObjectOwnership: s3types.ObjectOwnership(g.ObjectOwnership)},
		}},
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketOwnershipControlsOutput, error) {
		return api.PutBucketOwnershipControls(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the ownership controls (%s) of S3 bucket %q: %w", g.ObjectOwnership, bucket, err)
	}
	return nil
}

func applyVersioning(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	if g.Versioning == "" {
		return nil
	}
	in := &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatus(g.Versioning)},
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketVersioningOutput, error) {
		return api.PutBucketVersioning(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("setting versioning of S3 bucket %q to %s: %w", bucket, g.Versioning, err)
	}
	return nil
}

func applyEncryption(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	e := g.Encryption
	if e.Algorithm == "" {
		// On AWS this returns the bucket to its default (SSE-S3): every bucket is encrypted since 2023.
		_, err := api.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeServerSideEncryptionConfigNotFound) {
			return fmt.Errorf("deleting the default encryption of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	def := &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryption(e.Algorithm)}
	if e.KMSKeyARN != "" {
		def.KMSMasterKeyID = aws.String(e.KMSKeyARN)
	}
	in := &s3.PutBucketEncryptionInput{
		Bucket: aws.String(bucket),
		ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
			ApplyServerSideEncryptionByDefault: def,
			BucketKeyEnabled:                   aws.Bool(e.BucketKey),
		}}},
	}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketEncryptionOutput, error) {
		return api.PutBucketEncryption(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("putting the default encryption (%s) of S3 bucket %q: %w", e.Algorithm, bucket, err)
	}
	return nil
}

// lifecycleRuleToS3 turns a model rule into the SDK's. Other cannot be written: it describes what S3 had.
func lifecycleRuleToS3(r archive.LifecycleRule) s3types.LifecycleRule {
	status := s3types.ExpirationStatusDisabled
	if r.Enabled {
		status = s3types.ExpirationStatusEnabled
	}
	out := s3types.LifecycleRule{
		Status: status,
		Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)},
	}
	if r.ID != "" {
		out.ID = aws.String(r.ID)
	}
	if r.ExpirationDays > 0 {
		out.Expiration = &s3types.LifecycleExpiration{Days: aws.Int32(int32(r.ExpirationDays))}
	}
	if r.NoncurrentExpirationDays > 0 {
		out.NoncurrentVersionExpiration = &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(int32(r.NoncurrentExpirationDays))}
	}
	if r.AbortIncompleteUploadDays > 0 {
		out.AbortIncompleteMultipartUpload = &s3types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(int32(r.AbortIncompleteUploadDays))}
	}
	return out
}

// lifecycleMatches reports whether the rules read from S3 are the rules written. A rule written without an ID
// gets one from S3, so an empty wanted ID matches any.
func lifecycleMatches(want, got []archive.LifecycleRule) bool {
	return slices.EqualFunc(want, got, func(w, g archive.LifecycleRule) bool {
		if w.ID == "" {
			g.ID = ""
		}
		return w == g
	})
}

func applyLifecycle(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	if len(g.Lifecycle) == 0 {
		_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketLifecycleOutput, error) {
			return api.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(bucket)})
		}, errCodeNoSuchBucket, errCodeOperationAborted)
		if err != nil && !errCodeEquals(err, errCodeNoSuchLifecycleConfiguration) {
			return fmt.Errorf("deleting the lifecycle configuration of S3 bucket %q: %w", bucket, err)
		}
	} else {
		rules := make([]s3types.LifecycleRule, 0, len(g.Lifecycle))
		for _, r := range g.Lifecycle {
			rules = append(rules, lifecycleRuleToS3(r))
		}
		in := &s3.PutBucketLifecycleConfigurationInput{
			Bucket:                 aws.String(bucket),
			LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: rules},
		}
		_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketLifecycleConfigurationOutput, error) {
			return api.PutBucketLifecycleConfiguration(ctx, in)
		}, errCodeNoSuchBucket, errCodeOperationAborted)
		if err != nil {
			return fmt.Errorf("putting the lifecycle configuration (%d rules) of S3 bucket %q: %w", len(rules), bucket, err)
		}
	}
	// S3 serves a new lifecycle configuration only after a while; wait, so the read after apply sees it.
	return waitLifecyclePropagated(ctx, api, bucket, g.Lifecycle, lifecyclePropagationTimeout, wait.Real)
}

// States of a lifecycle configuration just written, as statusLifecycle reports them.
const (
	lifecycleStateCurrent = "current"
	lifecycleStateStale   = "stale"
)

// statusLifecycle reads the bucket's lifecycle rules, for wait.For: lifecycleStateCurrent when they are want,
// else lifecycleStateStale.
func statusLifecycle(api S3API, bucket string, want []archive.LifecycleRule) func(context.Context) ([]archive.LifecycleRule, string, error) {
	return func(ctx context.Context) ([]archive.LifecycleRule, string, error) {
		got, err := readLifecycle(ctx, api, bucket)
		if err != nil {
			return nil, "", err
		}
		if lifecycleMatches(want, got) {
			return got, lifecycleStateCurrent, nil
		}
		return got, lifecycleStateStale, nil
	}
}

func waitLifecyclePropagated(ctx context.Context, api S3API, bucket string, want []archive.LifecycleRule, timeout time.Duration, clock wait.Clock) error {
	got, err := wait.For(ctx, wait.Spec[[]archive.LifecycleRule]{
		What:    fmt.Sprintf("the lifecycle configuration of S3 bucket %q to propagate", bucket),
		Refresh: statusLifecycle(api, bucket, want),
		Pending: []string{lifecycleStateStale},
		Target:  []string{lifecycleStateCurrent},
		Timeout: timeout,
		Clock:   clock,
	})
	var te *wait.TimeoutError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: S3 still serves %d rules (%+v), not the %d written", err, len(got), got, len(want))
	}
	return err
}

func applyPolicy(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	if g.PolicyJSON == "" {
		_, err := api.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeNoSuchBucketPolicy) {
			return fmt.Errorf("deleting the policy of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	in := &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(g.PolicyJSON)}
	// Right after the bucket and its public access block, S3 may still answer OperationAborted (a conflicting
	// change is in progress), NoSuchBucket, or MalformedPolicy while a principal propagates: retry those.
	_, err := retryWhenCode(ctx, policyRaceTimeout, func(ctx context.Context) (*s3.PutBucketPolicyOutput, error) {
		return api.PutBucketPolicy(ctx, in)
	}, errCodeOperationAborted, errCodeNoSuchBucket, errCodeMalformedPolicy)
	if err != nil {
		return fmt.Errorf("putting the policy of S3 bucket %q: %w", bucket, err)
	}
	return nil
}

func applyReplication(ctx context.Context, api S3API, bucket string, g archive.Guards) error {
	r := g.Replication
	if r == nil {
		_, err := api.DeleteBucketReplication(ctx, &s3.DeleteBucketReplicationInput{Bucket: aws.String(bucket)})
		if err != nil && !errCodeEquals(err, errCodeReplicationConfigurationNotFound) {
			return fmt.Errorf("deleting the replication configuration of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	status := s3types.ReplicationRuleStatusDisabled
	if r.Enabled {
		status = s3types.ReplicationRuleStatusEnabled
	}
	markers := s3types.DeleteMarkerReplicationStatusDisabled
	if r.DeleteMarkers {
		markers = s3types.DeleteMarkerReplicationStatusEnabled
	}
	dest := &s3types.Destination{Bucket: aws.String(r.DestinationBucketARN)}
	if r.StorageClass != "" {
		dest.StorageClass = s3types.StorageClass(r.StorageClass)
	}
	rule := s3types.ReplicationRule{
		ID:                      aws.String(r.RuleID),
		Priority:                aws.Int32(1),
		Status:                  status,
		Filter:                  &s3types.ReplicationRuleFilter{Prefix: aws.String("")},
		DeleteMarkerReplication: &s3types.DeleteMarkerReplication{Status: markers},
		Destination:             dest,
	}
	if r.ReplicaKMSKeyARN != "" {
		dest.EncryptionConfiguration = &s3types.EncryptionConfiguration{ReplicaKmsKeyID: aws.String(r.ReplicaKMSKeyARN)}
		rule.SourceSelectionCriteria = &s3types.SourceSelectionCriteria{
			SseKmsEncryptedObjects: &s3types.SseKmsEncryptedObjects{Status: s3types.SseKmsEncryptedObjectsStatusEnabled},
		}
	}
	in := &s3.PutBucketReplicationInput{
		Bucket: aws.String(bucket),
		ReplicationConfiguration: &s3types.ReplicationConfiguration{
			Role:  aws.String(r.RoleARN),
			Rules: []s3types.ReplicationRule{rule},
		},
	}
	// Versioning just enabled on the source or the replica may not be visible yet.
	_, err := retryWhen(ctx, bucketPropagationTimeout, func(err error) bool {
		return errCodeEquals(err, errCodeNoSuchBucket, errCodeOperationAborted) ||
			errMessageContains(err, errCodeInvalidRequest, "Versioning must be 'Enabled'")
	}, func(ctx context.Context) (*s3.PutBucketReplicationOutput, error) {
		return api.PutBucketReplication(ctx, in)
	})
	if err != nil {
		return fmt.Errorf("putting the replication configuration of S3 bucket %q (to %s): %w", bucket, r.DestinationBucketARN, err)
	}
	return nil
}

// ReadGuards reads the guarded configuration of bucket. Configurations S3 reports as absent read as zero
// values. A missing bucket is ErrBucketNotFound (wrapped).
func ReadGuards(ctx context.Context, api S3API, bucket string) (archive.Guards, error) {
	var g archive.Guards
	b := aws.String(bucket)

	ver, err := api.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
	if err != nil {
		return g, readErr(err, bucket, "versioning")
	}
	g.Versioning = string(ver.Status)

	pab, err := api.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeNoSuchPublicAccessBlock):
	case err != nil:
		return g, readErr(err, bucket, "public access block")
	case pab.PublicAccessBlockConfiguration != nil:
		c := pab.PublicAccessBlockConfiguration
		g.PublicAccessBlock = archive.PublicAccessBlock{
			BlockPublicAcls:       aws.ToBool(c.BlockPublicAcls),
			IgnorePublicAcls:      aws.ToBool(c.IgnorePublicAcls),
			BlockPublicPolicy:     aws.ToBool(c.BlockPublicPolicy),
			RestrictPublicBuckets: aws.ToBool(c.RestrictPublicBuckets),
		}
	}

	own, err := api.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeOwnershipControlsNotFound):
	case err != nil:
		return g, readErr(err, bucket, "ownership controls")
	case own.OwnershipControls != nil && len(own.OwnershipControls.Rules) > 0:
		g.ObjectOwnership = string(own.OwnershipControls.Rules[0].ObjectOwnership)
	}

	enc, err := api.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeServerSideEncryptionConfigNotFound):
	case err != nil:
		return g, readErr(err, bucket, "default encryption")
	case enc.ServerSideEncryptionConfiguration != nil && len(enc.ServerSideEncryptionConfiguration.Rules) > 0:
		rule := enc.ServerSideEncryptionConfiguration.Rules[0]
		if d := rule.ApplyServerSideEncryptionByDefault; d != nil {
			g.Encryption.Algorithm = string(d.SSEAlgorithm)
			g.Encryption.KMSKeyARN = aws.ToString(d.KMSMasterKeyID)
		}
		g.Encryption.BucketKey = aws.ToBool(rule.BucketKeyEnabled)
	}

	if g.Lifecycle, err = readLifecycle(ctx, api, bucket); err != nil {
		return g, err
	}

	pol, err := api.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeNoSuchBucketPolicy):
	case err != nil:
		return g, readErr(err, bucket, "policy")
	default:
		g.PolicyJSON = aws.ToString(pol.Policy)
	}

	rep, err := api.GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: b})
	switch {
	case errCodeEquals(err, errCodeReplicationConfigurationNotFound):
	case err != nil:
		return g, readErr(err, bucket, "replication configuration")
	default:
		g.Replication = replicationFromS3(rep.ReplicationConfiguration)
	}
	return g, nil
}

// readErr wraps an error of reading one configuration of bucket, as ErrBucketNotFound when it is gone.
func readErr(err error, bucket, what string) error {
	if gone := bucketGone(err, bucket); gone != nil {
		return gone
	}
	return fmt.Errorf("reading the %s of S3 bucket %q: %w", what, bucket, err)
}

func readLifecycle(ctx context.Context, api S3API, bucket string) ([]archive.LifecycleRule, error) {
	out, err := api.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if errCodeEquals(err, errCodeNoSuchLifecycleConfiguration) {
		return nil, nil
	}
	if err != nil {
		return nil, readErr(err, bucket, "lifecycle configuration")
	}
	if len(out.Rules) == 0 {
		return nil, nil
	}
	rules := make([]archive.LifecycleRule, 0, len(out.Rules))
	for _, r := range out.Rules {
		rules = append(rules, lifecycleRuleFromS3(r))
	}
	return rules, nil
}

// lifecycleRuleFromS3 reduces an SDK rule to the model; whatever the model cannot describe is named in Other.
func lifecycleRuleFromS3(r s3types.LifecycleRule) archive.LifecycleRule {
	out := archive.LifecycleRule{
		ID:      aws.ToString(r.ID),
		Enabled: r.Status == s3types.ExpirationStatusEnabled,
		Prefix:  aws.ToString(r.Prefix), //nolint:staticcheck // the deprecated top-level prefix still occurs on old rules
	}
	var other []string
	if f := r.Filter; f != nil {
		if f.Prefix != nil {
			out.Prefix = aws.ToString(f.Prefix)
		}
		if f.Tag != nil {
			other = append(other, "tag filter")
		}
		if f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil {
			other = append(other, "object size filter")
		}
		if a := f.And; a != nil {
			if a.Prefix != nil {
				out.Prefix = aws.ToString(a.Prefix)
			}
			if len(a.Tags) > 0 {
				other = append(other, "tag filter")
			}
			if a.ObjectSizeGreaterThan != nil || a.ObjectSizeLessThan != nil {
				other = append(other, "object size filter")
			}
		}
	}
	if e := r.Expiration; e != nil {
		out.ExpirationDays = int(aws.ToInt32(e.Days))
		if e.Date != nil {
			other = append(other, "expiration of current objects on a date")
		}
		if aws.ToBool(e.ExpiredObjectDeleteMarker) {
			other = append(other, "expired object delete marker removal")
		}
	}
	if n := r.NoncurrentVersionExpiration; n != nil {
		out.NoncurrentExpirationDays = int(aws.ToInt32(n.NoncurrentDays))
		if aws.ToInt32(n.NewerNoncurrentVersions) > 0 {
			other = append(other, "newer noncurrent versions kept")
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil {
		out.AbortIncompleteUploadDays = int(aws.ToInt32(a.DaysAfterInitiation))
	}
	if len(r.Transitions) > 0 {
		other = append(other, "transitions of current objects")
	}
	if len(r.NoncurrentVersionTransitions) > 0 {
		other = append(other, "transitions of noncurrent versions")
	}
	out.Other = strings.Join(slices.Compact(other), ", ")
	return out
}

// replicationFromS3 reduces the first rule of a replication configuration to the model. The archive writes
// exactly one rule; extra rules are not described.
func replicationFromS3(c *s3types.ReplicationConfiguration) *archive.Replication {
	if c == nil || len(c.Rules) == 0 {
		return nil
	}
	rule := c.Rules[0]
	r := &archive.Replication{
		RoleARN: aws.ToString(c.Role),
		RuleID:  aws.ToString(rule.ID),
		Enabled: rule.Status == s3types.ReplicationRuleStatusEnabled,
	}
	if d := rule.Destination; d != nil {
		r.DestinationBucketARN = aws.ToString(d.Bucket)
		r.StorageClass = string(d.StorageClass)
		if d.EncryptionConfiguration != nil {
			r.ReplicaKMSKeyARN = aws.ToString(d.EncryptionConfiguration.ReplicaKmsKeyID)
		}
	}
	if m := rule.DeleteMarkerReplication; m != nil {
		r.DeleteMarkers = m.Status == s3types.DeleteMarkerReplicationStatusEnabled
	}
	return r
}

// ReadObjectLock returns the bucket's default Object Lock retention, or nil when Object Lock is not enabled.
// A bucket with Object Lock enabled but no default retention reads as a zero ObjectLock. A default retention
// given in years is converted at 365 days a year.
func ReadObjectLock(ctx context.Context, api S3API, bucket string) (*archive.ObjectLock, error) {
	out, err := api.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(bucket)})
	if errCodeEquals(err, errCodeObjectLockConfigurationNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, readErr(err, bucket, "Object Lock configuration")
	}
	c := out.ObjectLockConfiguration
	if c == nil || c.ObjectLockEnabled != s3types.ObjectLockEnabledEnabled {
		return nil, nil
	}
	lock := &archive.ObjectLock{}
	if c.Rule != nil && c.Rule.DefaultRetention != nil {
		d := c.Rule.DefaultRetention
		lock.Mode = string(d.Mode)
		lock.Days = int(aws.ToInt32(d.Days)) + 365*int(aws.ToInt32(d.Years))
	}
	return lock, nil
}

// ReadTags returns the bucket's tags (empty, not nil, when it has none).
func ReadTags(ctx context.Context, api S3API, bucket string) (map[string]string, error) {
	out, err := api.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	tags := map[string]string{}
	if errCodeEquals(err, errCodeNoSuchTagSet) {
		return tags, nil
	}
	if err != nil {
		return nil, readErr(err, bucket, "tags")
	}
	for _, t := range out.TagSet {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags, nil
}

// PutTags replaces the bucket's tags with tags; no tags deletes the tag set.
func PutTags(ctx context.Context, api S3API, bucket string, tags map[string]string) error {
	if len(tags) == 0 {
		_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketTaggingOutput, error) {
			return api.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String(bucket)})
		}, errCodeNoSuchBucket, errCodeOperationAborted)
		if err != nil {
			return fmt.Errorf("deleting the tags of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	set := make([]s3types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		set = append(set, s3types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	in := &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: set}}
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketTaggingOutput, error) {
		return api.PutBucketTagging(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("tagging S3 bucket %q: %w", bucket, err)
	}
	return nil
}

// BucketIsEmpty reports whether bucket holds no object version and no delete marker.
func BucketIsEmpty(ctx context.Context, api S3API, bucket string) (bool, error) {
	out, err := api.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, readErr(err, bucket, "object versions")
	}
	return len(out.Versions) == 0 && len(out.DeleteMarkers) == 0, nil
}

// ObjectLockedError says that deleting an object version failed because Object Lock protects it: a
// retention period (Mode GOVERNANCE or COMPLIANCE) or a legal hold.
type ObjectLockedError struct {
	Bucket, Key, VersionID string
	// Mode is the object's retention mode, "GOVERNANCE" or "COMPLIANCE"; "" for a legal hold or when it could
	// not be read.
	Mode string
	// Reason says what protects the object, e.g. "COMPLIANCE retention until 2030-01-02T00:00:00Z",
	// "legal hold", or both joined by "and"; it repeats S3's message when the object could not be read.
	Reason string
}

// Error says which object is protected and what it takes to delete it.
func (e *ObjectLockedError) Error() string {
	var advice []string
	switch e.Mode {
	case archive.LockCompliance:
		advice = append(advice, "COMPLIANCE retention cannot be shortened or bypassed by anyone, so the object, and the bucket, can be deleted only after the retention expires")
	case archive.LockGovernance:
		advice = append(advice, "GOVERNANCE retention must be bypassed (delete with bypass governance retention, which needs s3:BypassGovernanceRetention) or expire first")
	}
	if strings.Contains(e.Reason, "legal hold") {
		advice = append(advice, "the legal hold must be removed first (s3:PutObjectLegalHold)")
	}
	if len(advice) == 0 {
		advice = append(advice, "COMPLIANCE retention must expire; GOVERNANCE retention can be bypassed with s3:BypassGovernanceRetention; a legal hold must be removed")
	}
	return fmt.Sprintf("object %q version %q in S3 bucket %q is protected by Object Lock (%s): %s", e.Key, e.VersionID, e.Bucket, e.Reason, strings.Join(advice, "; "))
}

// EmptyBucket deletes every object version and delete marker of bucket and returns how many it deleted.
// With bypassGovernance it bypasses GOVERNANCE retention (the caller needs s3:BypassGovernanceRetention).
// Objects S3 refuses to delete are reported together (at most a few spelled out); a refusal caused by Object
// Lock is an *ObjectLockedError (find it with errors.As).
func EmptyBucket(ctx context.Context, api S3API, bucket string, bypassGovernance bool) (int, error) {
	deleted := 0
	var failures []error
	failed := 0
	pages := s3.NewListObjectVersionsPaginator(api, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return deleted, readErr(err, bucket, "object versions")
		}
		ids := make([]s3types.ObjectIdentifier, 0, len(page.Versions)+len(page.DeleteMarkers))
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for batch := range slices.Chunk(ids, deleteObjectsBatch) {
			n, refused, details, err := deleteObjectBatch(ctx, api, bucket, batch, bypassGovernance, emptyBucketErrorLimit-len(failures))
			deleted += n
			if err != nil {
				return deleted, err
			}
			failed += refused
			failures = append(failures, details...)
		}
	}
	if failed > 0 {
		more := ""
		if failed > len(failures) {
			more = fmt.Sprintf(" (the first %d shown)", len(failures))
		}
		return deleted, fmt.Errorf("emptying S3 bucket %q: deleted %d object versions, %d could not be deleted%s: %w", bucket, deleted, failed, more, errors.Join(failures...))
	}
	return deleted, nil
}

// deleteObjectBatch deletes up to 1000 object versions. It returns how many S3 deleted, how many it refused,
// an error for each of the first `detail` refusals (looking up each costs a HeadObject), and an error when the
// whole call failed.
func deleteObjectBatch(ctx context.Context, api S3API, bucket string, batch []s3types.ObjectIdentifier, bypass bool, detail int) (int, int, []error, error) {
	in := &s3.DeleteObjectsInput{
		Bucket: aws.String(bucket),
		Delete: &s3types.Delete{Objects: batch, Quiet: aws.Bool(false)},
	}
	if bypass {
		in.BypassGovernanceRetention = aws.Bool(true)
	}
	out, err := api.DeleteObjects(ctx, in)
	if err != nil {
		if gone := bucketGone(err, bucket); gone != nil {
			return 0, 0, nil, gone
		}
		return 0, 0, nil, fmt.Errorf("deleting %d object versions from S3 bucket %q: %w", len(batch), bucket, err)
	}
	// S3 names the version in each error; moto names only the key. Match those to the versions sent.
	unclaimed := map[string][]string{}
	for _, id := range batch {
		unclaimed[aws.ToString(id.Key)] = append(unclaimed[aws.ToString(id.Key)], aws.ToString(id.VersionId))
	}
	var errs []error
	for _, e := range out.Errors {
		if len(errs) >= detail {
			break
		}
		key, version := aws.ToString(e.Key), aws.ToString(e.VersionId)
		if version == "" && len(unclaimed[key]) > 0 {
			version = claimLockedVersion(ctx, api, bucket, key, unclaimed, bypass)
		} else if vs := unclaimed[key]; len(vs) > 0 {
			unclaimed[key] = slices.DeleteFunc(vs, func(v string) bool { return v == version })
		}
		errs = append(errs, objectDeleteError(ctx, api, bucket, key, version, e, bypass))
	}
	return len(out.Deleted), len(out.Errors), errs, nil
}

// claimLockedVersion picks, among the versions of key sent in the batch and not yet matched to an error, the
// one Object Lock protects (else the first), and removes it from unclaimed.
func claimLockedVersion(ctx context.Context, api S3API, bucket, key string, unclaimed map[string][]string, bypass bool) string {
	vs := unclaimed[key]
	pick := 0
	if len(vs) > 1 {
		for i, v := range vs {
			if _, _, locked, err := objectLock(ctx, api, bucket, key, v, bypass); err == nil && locked {
				pick = i
				break
			}
		}
	}
	version := vs[pick]
	unclaimed[key] = slices.Delete(vs, pick, pick+1)
	return version
}

// objectLock reads what protects one object version (HeadObject: its retention mode and end, and its legal
// hold; S3 shows them to callers with s3:GetObjectRetention and s3:GetObjectLegalHold).
func objectLock(ctx context.Context, api S3API, bucket, key, version string, bypass bool) (mode, reason string, locked bool, err error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := api.HeadObject(ctx, in)
	if err != nil {
		return "", "", false, err
	}
	var reasons []string
	hold := out.ObjectLockLegalHoldStatus == s3types.ObjectLockLegalHoldStatusOn
	retained := out.ObjectLockMode != "" && out.ObjectLockRetainUntilDate != nil && out.ObjectLockRetainUntilDate.After(time.Now())
	// With the bypass asked for, GOVERNANCE retention is the cause only when nothing else is (then the caller
	// lacks s3:BypassGovernanceRetention).
	if retained && (!bypass || out.ObjectLockMode != s3types.ObjectLockModeGovernance || !hold) {
		mode = string(out.ObjectLockMode)
		reasons = append(reasons, fmt.Sprintf("%s retention until %s", mode, out.ObjectLockRetainUntilDate.UTC().Format(time.RFC3339)))
	}
	if hold {
		reasons = append(reasons, "legal hold")
	}
	return mode, strings.Join(reasons, " and "), len(reasons) > 0, nil
}

// objectDeleteError turns one DeleteObjects error into an error: *ObjectLockedError when Object Lock is the
// cause (known from the object's retention or legal hold, or from S3's message when those cannot be read).
func objectDeleteError(ctx context.Context, api S3API, bucket, key, version string, e s3types.Error, bypass bool) error {
	code, msg := aws.ToString(e.Code), aws.ToString(e.Message)
	if code == errCodeAccessDenied {
		mode, reason, locked, err := objectLock(ctx, api, bucket, key, version, bypass)
		if err == nil && locked {
			return &ObjectLockedError{Bucket: bucket, Key: key, VersionID: version, Mode: mode, Reason: reason}
		}
		if strings.Contains(strings.ToLower(msg), "object lock") {
			return &ObjectLockedError{Bucket: bucket, Key: key, VersionID: version, Reason: msg}
		}
	}
	return fmt.Errorf("deleting object %q version %q from S3 bucket %q: %s: %s", key, version, bucket, code, msg)
}

// DeleteBucket deletes an empty bucket. A bucket that is already gone counts as deleted; a bucket that still
// holds object versions or delete markers is ErrBucketNotEmpty (wrapped).
func DeleteBucket(ctx context.Context, api S3API, bucket string) error {
	_, err := retryWhenCode(ctx, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketOutput, error) {
		return api.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	}, errCodeOperationAborted)
	switch {
	case err == nil, errCodeEquals(err, errCodeNoSuchBucket):
		return nil
	case errCodeEquals(err, errCodeBucketNotEmpty):
		return fmt.Errorf("deleting S3 bucket %q: %w: it still holds object versions or delete markers (a versioned bucket keeps every old version); empty it first, e.g. with force_destroy: %w", bucket, ErrBucketNotEmpty, err)
	default:
		return fmt.Errorf("deleting S3 bucket %q: %w", bucket, err)
	}
}
