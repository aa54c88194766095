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
func EmptyBucket(ctx context.Context, api S3API, clock wait.Clock, bucket string, bypassGovernance bool) (int, error) {
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
			n, refused, details, err := deleteObjectBatch(ctx, api, clock.Now(), bucket, batch, bypassGovernance, emptyBucketErrorLimit-len(failures))
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
func deleteObjectBatch(ctx context.Context, api S3API, now time.Time, bucket string, batch []s3types.ObjectIdentifier, bypass bool, detail int) (int, int, []error, error) {
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
			version = claimLockedVersion(ctx, api, now, bucket, key, unclaimed, bypass)
		} else if vs := unclaimed[key]; len(vs) > 0 {
			unclaimed[key] = slices.DeleteFunc(vs, func(v string) bool { return v == version })
		}
		errs = append(errs, objectDeleteError(ctx, api, now, bucket, key, version, e, bypass))
	}
	return len(out.Deleted), len(out.Errors), errs, nil
}

// claimLockedVersion picks, among the versions of key sent in the batch and not yet matched to an error, the
// one Object Lock protects (else the first), and removes it from unclaimed.
func claimLockedVersion(ctx context.Context, api S3API, now time.Time, bucket, key string, unclaimed map[string][]string, bypass bool) string {
	vs := unclaimed[key]
	pick := 0
	if len(vs) > 1 {
		for i, v := range vs {
			if _, _, locked, err := objectLock(ctx, api, now, bucket, key, v, bypass); err == nil && locked {
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
func objectLock(ctx context.Context, api S3API, now time.Time, bucket, key, version string, bypass bool) (mode, reason string, locked bool, err error) {
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
	retained := out.ObjectLockMode != "" && out.ObjectLockRetainUntilDate != nil && out.ObjectLockRetainUntilDate.After(now)
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
func objectDeleteError(ctx context.Context, api S3API, now time.Time, bucket, key, version string, e s3types.Error, bypass bool) error {
	code, msg := aws.ToString(e.Code), aws.ToString(e.Message)
	if code == errCodeAccessDenied {
		mode, reason, locked, err := objectLock(ctx, api, now, bucket, key, version, bypass)
		if err == nil && locked {
			return &ObjectLockedError{Bucket: bucket, Key: key, VersionID: version, Mode: mode, Reason: reason}
		}
		if strings.Contains(strings.ToLower(msg), "object lock") {
			return &ObjectLockedError{Bucket: bucket, Key: key, VersionID: version, Reason: msg}
		}
	}
	return fmt.Errorf("deleting object %q version %q from S3 bucket %q: %s: %s", key, version, bucket, code, msg)
}
