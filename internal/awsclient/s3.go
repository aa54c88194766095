package awsclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// bucketGone wraps err as ErrBucketNotFound when S3 says the bucket does not exist, and returns nil otherwise.
func bucketGone(err error, bucket string) error {
	if errCodeEquals(err, errCodeNoSuchBucket) {
		return fmt.Errorf("S3 bucket %q: %w (%w)", bucket, ErrBucketNotFound, err)
	}
	return nil
}

// readErr wraps an error of reading one configuration of bucket, as ErrBucketNotFound when it is gone.
func readErr(err error, bucket, what string) error {
	if gone := bucketGone(err, bucket); gone != nil {
		return gone
	}
	return fmt.Errorf("reading the %s of S3 bucket %q: %w", what, bucket, err)
}
