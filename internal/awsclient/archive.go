package awsclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Timeouts of the archive bucket waiters.
const (
	BucketCreateTimeout = 2 * time.Minute
	BucketDeleteTimeout = 2 * time.Minute
)

// ArchiveClients hands out the clients the archive bucket needs and the clock its waits and retries read
// (*Clients implements it).
type ArchiveClients interface {
	S3(ctx context.Context, region string) (*s3.Client, error)
	IAM(ctx context.Context, region string) (*iam.Client, error)
	Clock() wait.Clock
}

// BucketNotEmptyError: a bucket holds objects and force was not given.
type BucketNotEmptyError struct{ Bucket string }

func (e *BucketNotEmptyError) Error() string {
	return fmt.Sprintf("bucket %s still holds objects (for a WAL archive: base backups and WAL, the only copy of the "+
		"data once instance-store nodes are gone)", e.Bucket)
}

// CreateArchiveBucket creates the archive bucket of s with tags (and Object Lock when s has it) and waits
// until S3 shows it. created reports whether the bucket exists, also when err is not nil (it was created but
// did not show within BucketCreateTimeout).
func CreateArchiveBucket(ctx context.Context, c ArchiveClients, s archive.Spec, tags map[string]string) (created bool, err error) {
	api, err := c.S3(ctx, s.Region)
	if err != nil {
		return false, err
	}
	if err := CreateBucket(ctx, api, c.Clock(), s.Bucket, s.Region, s.ObjectLock, tags); err != nil {
		return false, err
	}
	return true, WaitBucketExists(ctx, api, c.Clock(), s.Bucket, BucketCreateTimeout)
}

// ApplyArchive makes the live archive match s: the replica bucket, its guards and the replication role
// first (so replication has somewhere to go), then the archive's guards, replication rule and tags. Every
// step is idempotent: after an interrupted apply, running it again finishes the job. It returns the
// replication role ARN ("" without a replica).
func ApplyArchive(ctx context.Context, c ArchiveClients, s archive.Spec, tags map[string]string) (string, error) {
	api, err := c.S3(ctx, s.Region)
	if err != nil {
		return "", err
	}
	clock := c.Clock()
	want := s.Desired()
	roleARN := ""
	if s.Replica != nil {
		rapi, err := c.S3(ctx, s.Replica.Region)
		if err != nil {
			return "", err
		}
		tflog.Info(ctx, "preparing replica bucket", map[string]any{"bucket": s.Replica.Bucket, "region": s.Replica.Region})
		if _, err := FindBucket(ctx, rapi, s.Replica.Bucket); errors.Is(err, ErrBucketNotFound) {
			if err := CreateBucket(ctx, rapi, clock, s.Replica.Bucket, s.Replica.Region, s.ObjectLock, tags); err != nil {
				return "", fmt.Errorf("creating replica bucket: %w", err)
			}
			if err := WaitBucketExists(ctx, rapi, clock, s.Replica.Bucket, BucketCreateTimeout); err != nil {
				return "", fmt.Errorf("creating replica bucket: %w", err)
			}
		} else if err != nil {
			return "", fmt.Errorf("reading replica bucket: %w", err)
		}
		if err := ApplyGuards(ctx, rapi, clock, s.Replica.Bucket, s.DesiredReplica()); err != nil {
			return "", fmt.Errorf("configuring replica bucket %s: %w", s.Replica.Bucket, err)
		}
		if err := PutTags(ctx, rapi, clock, s.Replica.Bucket, tags); err != nil {
			return "", fmt.Errorf("tagging replica bucket %s: %w", s.Replica.Bucket, err)
		}
		iamAPI, err := c.IAM(ctx, s.Region)
		if err != nil {
			return "", err
		}
		roleARN, err = EnsureRole(ctx, iamAPI, clock, archive.ReplicationRoleName(s.Bucket),
			s.ReplicationTrustPolicyJSON(), "replication", s.ReplicationRolePolicyJSON(), PublicTags(tags))
		if err != nil {
			return "", fmt.Errorf("replication role: %w", err)
		}
		want.Replication = s.DesiredReplication(roleARN)
	}
	tflog.Info(ctx, "applying archive bucket guards", map[string]any{"bucket": s.Bucket})
	if err := ApplyGuards(ctx, api, clock, s.Bucket, want); err != nil {
		return roleARN, fmt.Errorf("configuring bucket %s: %w", s.Bucket, err)
	}
	if err := PutTags(ctx, api, clock, s.Bucket, tags); err != nil {
		return roleARN, fmt.Errorf("tagging bucket %s: %w", s.Bucket, err)
	}
	return roleARN, nil
}

// InternalTagPrefix marks tags the provider keeps for itself; they never reach the role's tags.
const InternalTagPrefix = "pgnvme:"

// The internal tags on the archive bucket, so an import recovers settings S3 does not store.
const (
	tagPrefix      = InternalTagPrefix + "prefix"
	tagCompression = InternalTagPrefix + "compression"
)

// ArchiveTags are the tags written to the archive bucket: tags plus the internal ones that record the
// cluster prefix and the WAL-G compression.
func ArchiveTags(tags map[string]string, prefix, compression string) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	out[tagPrefix] = prefix
	out[tagCompression] = compression
	return out
}

// LiveTags is what the archive bucket's tags say.
type LiveTags struct {
	Public      map[string]string // every tag but the internal ones
	Prefix      *string           // the recorded prefix; nil when the bucket has no such tag
	Compression string            // the recorded compression; "" when none
}

// LiveArchive is what a refresh reads about the archive bucket besides its guards.
type LiveArchive struct {
	Region   string // the region S3 reports, or the one asked for when the endpoint does not say
	Tags     LiveTags
	Imported *Imported // only when ReadArchive was asked to rebuild the spec (import)
}

// ReadArchive finds bucket (ErrBucketNotFound, wrapped, when it is gone), reads its tags and, with rebuild,
// the spec an import starts from (ReadImported).
func ReadArchive(ctx context.Context, c ArchiveClients, bucket, region string, rebuild bool) (LiveArchive, error) {
	api, err := c.S3(ctx, region)
	if err != nil {
		return LiveArchive{}, err
	}
	actual, err := FindBucket(ctx, api, bucket)
	if err != nil {
		return LiveArchive{}, err
	}
	out := LiveArchive{Region: region}
	if actual != "" && actual != region {
		out.Region = actual
		if api, err = c.S3(ctx, actual); err != nil {
			return LiveArchive{}, err
		}
	}
	if rebuild {
		imp, err := ReadImported(ctx, c, bucket, out.Region)
		if err != nil {
			return LiveArchive{}, err
		}
		out.Imported = &imp
	}
	tags, err := ReadTags(ctx, api, bucket)
	if err != nil {
		return LiveArchive{}, fmt.Errorf("reading tags of %s: %w", bucket, err)
	}
	out.Tags = LiveTags{Public: PublicTags(tags), Compression: tags[tagCompression]}
	if v, ok := tags[tagPrefix]; ok {
		out.Tags.Prefix = &v
	}
	return out, nil
}

// MergeTags is tags_all: the provider's default tags with the resource's own on top.
func MergeTags(defaults, own map[string]string) map[string]string {
	out := maps.Clone(defaults)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, own)
	return out
}

// OwnTags is the resource's part of the live tags: every tag except a provider default that still has the
// default's value and that the configuration (configured) does not set itself.
func OwnTags(live, defaults, configured map[string]string) map[string]string {
	own := map[string]string{}
	for k, v := range live {
		if dv, isDefault := defaults[k]; isDefault && dv == v {
			if _, mine := configured[k]; !mine {
				continue
			}
		}
		own[k] = v
	}
	return own
}

// PublicTags drops the provider's internal tags (InternalTagPrefix).
func PublicTags(tags map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		if !strings.HasPrefix(k, InternalTagPrefix) {
			out[k] = v
		}
	}
	return out
}

// ReadArchiveGuards reads the archive's guarded settings (and the replica's) and compares them with s:
// one entry per guard, "ok" or what is live instead.
func ReadArchiveGuards(ctx context.Context, c ArchiveClients, s archive.Spec, roleARN string) (map[string]string, error) {
	api, err := c.S3(ctx, s.Region)
	if err != nil {
		return nil, err
	}
	got, err := ReadGuards(ctx, api, s.Bucket)
	if err != nil {
		return nil, fmt.Errorf("reading bucket %s: %w", s.Bucket, err)
	}
	want := s.Desired()
	if s.Replica != nil {
		want.Replication = s.DesiredReplication(roleARN)
	}
	drift := archive.Drift(want, got)
	if s.Replica == nil {
		return drift, nil
	}
	drift[archive.GuardReplica] = archive.DriftOK
	rapi, err := c.S3(ctx, s.Replica.Region)
	if err != nil {
		return nil, err
	}
	rgot, err := ReadGuards(ctx, rapi, s.Replica.Bucket)
	switch {
	case errors.Is(err, ErrBucketNotFound):
		drift[archive.GuardReplica] = "replica bucket " + s.Replica.Bucket + " is missing"
	case err != nil:
		return nil, fmt.Errorf("reading replica bucket %s: %w", s.Replica.Bucket, err)
	default:
		var bad []string
		for k, v := range archive.Drift(s.DesiredReplica(), rgot) {
			if v != archive.DriftOK {
				bad = append(bad, k+": "+v)
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			drift[archive.GuardReplica] = "replica bucket: " + strings.Join(bad, "; ")
		}
	}
	return drift, nil
}

// Imported is what S3 tells about an existing bucket, for terraform import.
type Imported struct {
	Spec    archive.Spec // Prefix and Compression come from the provider's tags when present
	Tags    map[string]string
	RoleARN string
}

// ReadImported rebuilds a spec from a live bucket: encryption key, lifecycle days, whether the TLS-only
// policy is attached, Object Lock, the replica (from the replication rule) and the tags.
func ReadImported(ctx context.Context, c ArchiveClients, bucket, region string) (Imported, error) {
	api, err := c.S3(ctx, region)
	if err != nil {
		return Imported{}, err
	}
	g, err := ReadGuards(ctx, api, bucket)
	if err != nil {
		return Imported{}, fmt.Errorf("reading bucket %s: %w", bucket, err)
	}
	s := archive.Spec{
		Bucket:                             bucket,
		Region:                             region,
		Compression:                        archive.DefaultCompression,
		NoncurrentVersionExpirationDays:    archive.DefaultNoncurrentVersionExpirationDays,
		AbortIncompleteMultipartUploadDays: archive.DefaultAbortIncompleteMultipartUploadDays,
	}
	if g.Encryption.Algorithm == archive.SSEKMS {
		s.KMSKeyARN = g.Encryption.KMSKeyARN
	}
	for _, rule := range g.Lifecycle {
		if rule.NoncurrentExpirationDays > 0 {
			s.NoncurrentVersionExpirationDays = rule.NoncurrentExpirationDays
		}
		if rule.AbortIncompleteUploadDays > 0 {
			s.AbortIncompleteMultipartUploadDays = rule.AbortIncompleteUploadDays
		}
	}
	probe := archive.Spec{Bucket: bucket, Region: region, DenyInsecureTransport: true}
	s.DenyInsecureTransport = g.PolicyJSON != "" && archive.PolicyEqual(g.PolicyJSON, probe.BucketPolicyJSON())
	if s.ObjectLock, err = ReadObjectLock(ctx, api, bucket); err != nil {
		return Imported{}, fmt.Errorf("reading Object Lock of %s: %w", bucket, err)
	}
	out := Imported{}
	if rep := g.Replication; rep != nil {
		dest := rep.DestinationBucketARN[strings.LastIndex(rep.DestinationBucketARN, ":")+1:]
		destRegion := region
		if r, err := FindBucket(ctx, api, dest); err == nil && r != "" {
			destRegion = r
		}
		s.Replica = &archive.Replica{Region: destRegion, Bucket: dest, KMSKeyARN: rep.ReplicaKMSKeyARN,
			StorageClass: rep.StorageClass, KeepDeleted: !rep.DeleteMarkers}
		if s.Replica.StorageClass == "" {
			s.Replica.StorageClass = "STANDARD"
		}
		out.RoleARN = rep.RoleARN
	}
	if out.Tags, err = ReadTags(ctx, api, bucket); err != nil {
		return Imported{}, fmt.Errorf("reading tags of %s: %w", bucket, err)
	}
	out.Spec = s
	return out, nil
}

// DeleteArchive deletes the archive bucket, then its replica and replication role. Without force, a
// non-empty archive is refused with *BucketNotEmptyError before anything changes. With force, every object
// version and delete marker goes first (GOVERNANCE retention is bypassed; COMPLIANCE retention stops it
// with *ObjectLockedError).
func DeleteArchive(ctx context.Context, c ArchiveClients, s archive.Spec, force bool) error {
	api, err := c.S3(ctx, s.Region)
	if err != nil {
		return err
	}
	if err := deleteOneBucket(ctx, api, c.Clock(), s.Bucket, force); err != nil {
		return err
	}
	if s.Replica != nil {
		return RetireReplica(ctx, c, s, force, false)
	}
	return nil
}

// RetireReplica removes the replica of old: the replication rule on the archive (when dropRule: the
// archive stays), the replica bucket under the same force rule as the archive, and the replication role.
func RetireReplica(ctx context.Context, c ArchiveClients, old archive.Spec, force, dropRule bool) error {
	rapi, err := c.S3(ctx, old.Replica.Region)
	if err != nil {
		return err
	}
	// Refuse before changing anything when the replica cannot be deleted.
	if !force {
		empty, err := BucketIsEmpty(ctx, rapi, old.Replica.Bucket)
		if err != nil && !errors.Is(err, ErrBucketNotFound) {
			return err
		}
		if err == nil && !empty {
			return &BucketNotEmptyError{Bucket: old.Replica.Bucket}
		}
	}
	if dropRule {
		api, err := c.S3(ctx, old.Region)
		if err != nil {
			return err
		}
		want := old.Desired()
		want.Replication = nil
		if err := ApplyGuards(ctx, api, c.Clock(), old.Bucket, want); err != nil {
			return fmt.Errorf("removing the replication rule from %s: %w", old.Bucket, err)
		}
	}
	if err := deleteOneBucket(ctx, rapi, c.Clock(), old.Replica.Bucket, force); err != nil {
		return err
	}
	iamAPI, err := c.IAM(ctx, old.Region)
	if err != nil {
		return err
	}
	if err := DeleteRole(ctx, iamAPI, c.Clock(), archive.ReplicationRoleName(old.Bucket)); err != nil {
		return fmt.Errorf("deleting the replication role: %w", err)
	}
	return nil
}

func deleteOneBucket(ctx context.Context, api S3API, clock wait.Clock, bucket string, force bool) error {
	empty, err := BucketIsEmpty(ctx, api, bucket)
	if errors.Is(err, ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading bucket %s: %w", bucket, err)
	}
	if !empty {
		if !force {
			return &BucketNotEmptyError{Bucket: bucket}
		}
		tflog.Info(ctx, "emptying bucket (force_destroy)", map[string]any{"bucket": bucket})
		n, err := EmptyBucket(ctx, api, clock, bucket, true)
		if err != nil {
			return fmt.Errorf("emptying bucket %s (deleted %d object versions first): %w", bucket, n, err)
		}
		tflog.Info(ctx, "bucket emptied", map[string]any{"bucket": bucket, "versions_deleted": n})
	}
	if err := DeleteBucket(ctx, api, clock, bucket); err != nil {
		return err
	}
	return WaitBucketDeleted(ctx, api, clock, bucket, BucketDeleteTimeout)
}
