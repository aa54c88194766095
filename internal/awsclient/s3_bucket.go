package awsclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

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
func CreateBucket(ctx context.Context, api S3API, clock wait.Clock, bucket, region string, lock *archive.ObjectLock, tags map[string]string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if region != regionUSEast1 {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{
			LocationConstraint: s3types.BucketLocationConstraint(region),
		}
	}
	if lock != nil {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.CreateBucketOutput, error) {
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
		if err := putObjectLockConfiguration(ctx, api, clock, bucket, lock); err != nil {
			return err
		}
	}
	if len(tags) > 0 {
		if err := PutTags(ctx, api, clock, bucket, tags); err != nil {
			return err
		}
	}
	return nil
}

func putObjectLockConfiguration(ctx context.Context, api S3API, clock wait.Clock, bucket string, lock *archive.ObjectLock) error {
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
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutObjectLockConfigurationOutput, error) {
		return api.PutObjectLockConfiguration(ctx, in)
	}, errCodeNoSuchBucket)
	if err != nil {
		return fmt.Errorf("setting the default Object Lock retention (%s, %d days) of S3 bucket %q: %w", lock.Mode, lock.Days, bucket, err)
	}
	return nil
}

// WaitBucketExists waits until HeadBucket finds bucket, for at most timeout on clock.
func WaitBucketExists(ctx context.Context, api S3API, clock wait.Clock, bucket string, timeout time.Duration) error {
	return waitBucketCreated(ctx, api, bucket, timeout, clock)
}

// WaitBucketDeleted waits until HeadBucket no longer finds bucket, for at most timeout on clock.
func WaitBucketDeleted(ctx context.Context, api S3API, clock wait.Clock, bucket string, timeout time.Duration) error {
	return waitBucketDeleted(ctx, api, bucket, timeout, clock)
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

// ReadObjectLock returns the bucket's default Object Lock retention, or nil when Object Lock is not enabled.
// A bucket with Object Lock enabled but no default retention reads as a zero ObjectLock. A default retention
// given in years is converted at 365 days a year.
func ReadObjectLock(ctx context.Context, api BucketRulesAPI, bucket string) (*archive.ObjectLock, error) {
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
func PutTags(ctx context.Context, api S3API, clock wait.Clock, bucket string, tags map[string]string) error {
	if len(tags) == 0 {
		_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketTaggingOutput, error) {
			return api.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String(bucket)})
		}, errCodeNoSuchBucket, errCodeOperationAborted)
		if err != nil {
			return fmt.Errorf("deleting the tags of S3 bucket %q: %w", bucket, err)
		}
		return nil
	}
	in := &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: s3Tags(tags)}}
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketTaggingOutput, error) {
		return api.PutBucketTagging(ctx, in)
	}, errCodeNoSuchBucket, errCodeOperationAborted)
	if err != nil {
		return fmt.Errorf("tagging S3 bucket %q: %w", bucket, err)
	}
	return nil
}

// DeleteBucket deletes an empty bucket. A bucket that is already gone counts as deleted; a bucket that still
// holds object versions or delete markers is ErrBucketNotEmpty (wrapped).
func DeleteBucket(ctx context.Context, api S3API, clock wait.Clock, bucket string) error {
	_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketOutput, error) {
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
