package awsclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

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

func applyLifecycle(ctx context.Context, api S3API, clock wait.Clock, bucket string, g archive.Guards) error {
	if len(g.Lifecycle) == 0 {
		_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.DeleteBucketLifecycleOutput, error) {
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
		_, err := retryWhenCode(ctx, clock, bucketPropagationTimeout, func(ctx context.Context) (*s3.PutBucketLifecycleConfigurationOutput, error) {
			return api.PutBucketLifecycleConfiguration(ctx, in)
		}, errCodeNoSuchBucket, errCodeOperationAborted)
		if err != nil {
			return fmt.Errorf("putting the lifecycle configuration (%d rules) of S3 bucket %q: %w", len(rules), bucket, err)
		}
	}
	// S3 serves a new lifecycle configuration only after a while; wait, so the read after apply sees it.
	return waitLifecyclePropagated(ctx, api, bucket, g.Lifecycle, lifecyclePropagationTimeout, clock)
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

func readLifecycle(ctx context.Context, api BucketRulesAPI, bucket string) ([]archive.LifecycleRule, error) {
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
			out.ExpiresOnDate = true
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
