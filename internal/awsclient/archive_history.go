package awsclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// ArchiveReaderAPI is what reading an archive's contents needs of S3.
type ArchiveReaderAPI interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	BucketRulesAPI
}

// BucketRulesAPI reads what of an archive bucket bears on retention: its Object Lock configuration and
// its lifecycle rules.
type BucketRulesAPI interface {
	GetObjectLockConfiguration(ctx context.Context, in *s3.GetObjectLockConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error)
	GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error)
}

// ReadBucketRules reads bucket's Object Lock default retention (nil without Object Lock) and lifecycle rules.
func ReadBucketRules(ctx context.Context, api BucketRulesAPI, bucket string) (archive.BucketRules, error) {
	lock, err := ReadObjectLock(ctx, api, bucket)
	if err != nil {
		return archive.BucketRules{}, err
	}
	rules, err := readLifecycle(ctx, api, bucket)
	if err != nil {
		return archive.BucketRules{}, err
	}
	return archive.BucketRules{Lock: lock, Lifecycle: rules}, nil
}

var _ ArchiveReaderAPI = (*s3.Client)(nil)

// sentinelsRead bounds how many WAL-G backup sentinels ReadArchiveHistory opens for their system identifier:
// the oldest and newest few say whose history a prefix holds.
const sentinelsRead = 6

// infoMaxBytes bounds the size of an info file or sentinel read.
const infoMaxBytes = 4 << 20

// ReadArchiveHistory reads what loc (an S3 location) holds of clusters' past: whether any object lies
// under its keys, and the system identifiers its pgBackRest info files (archive.info, backup.info, or
// their .copy) or WAL-G backup sentinels record. A bucket that does not exist holds nothing.
func ReadArchiveHistory(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) (archive.History, error) {
	h := archive.History{Location: loc}
	for _, prefix := range loc.Keys {
		var first string
		var sentinels []string
		p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(loc.Bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if errCodeEquals(err, errCodeNoSuchBucket) {
				return archive.History{Location: loc}, nil
			}
			if err != nil {
				return h, fmt.Errorf("listing s3://%s/%s: %w", loc.Bucket, prefix, err)
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				if first == "" {
					first = key
				}
				if strings.HasSuffix(key, "_backup_stop_sentinel.json") {
					sentinels = append(sentinels, key)
				}
			}
			if loc.Tool == archive.ToolPgBackRest && first != "" {
				break // pgBackRest's identity is in its info files
			}
		}
		if first == "" {
			continue
		}
		h.Found = append(h.Found, "s3://"+loc.Bucket+"/"+first)
		if loc.Tool == archive.ToolPgBackRest {
			if err := readInfoIDs(ctx, api, loc.Bucket, prefix, &h); err != nil {
				return h, err
			}
			continue
		}
		if len(sentinels) > sentinelsRead {
			sentinels = append(sentinels[:sentinelsRead/2], sentinels[len(sentinels)-sentinelsRead/2:]...)
		}
		for _, key := range sentinels {
			data, err := getSmallObject(ctx, api, loc.Bucket, key)
			if err != nil {
				return h, err
			}
			id, err := archive.WALGSentinelSystemID(data)
			if err != nil {
				return h, fmt.Errorf("s3://%s/%s: %w", loc.Bucket, key, err)
			}
			h.AddSystemIDs(id)
		}
	}
	return h, nil
}

// readInfoIDs adds the system identifiers of pgBackRest's info file under prefix (archive.info under
// archive/<stanza>/, backup.info under backup/<stanza>/; the .copy when the file is missing). An info file
// pgnvme cannot read (an encrypted repository) is shown as found, without an identity.
func readInfoIDs(ctx context.Context, api ArchiveReaderAPI, bucket, prefix string, h *archive.History) error {
	name := "archive.info"
	if strings.Contains("/"+prefix, "/backup/") {
		name = "backup.info"
	}
	for _, key := range []string{prefix + name, prefix + name + ".copy"} {
		data, err := getSmallObject(ctx, api, bucket, key)
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			continue
		}
		if err != nil {
			return err
		}
		ids, err := archive.PgBackRestInfoSystemIDs(data)
		if err != nil {
			h.Found = append(h.Found, fmt.Sprintf("s3://%s/%s (unreadable: %v)", bucket, key, err))
			return nil
		}
		h.AddSystemIDs(ids...)
		return nil
	}
	return nil
}

func getSmallObject(ctx context.Context, api ArchiveReaderAPI, bucket, key string) ([]byte, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, err
		}
		return nil, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, infoMaxBytes))
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	return data, nil
}

// ListArchiveWAL lists every object of loc's WAL (pgBackRest's archive/<stanza>/, WAL-G's wal_005/) with
// when it was written; archive.Assess picks the segments out. A missing bucket lists nothing.
func ListArchiveWAL(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) ([]archive.Object, error) {
	if len(loc.Keys) == 0 {
		return nil, nil
	}
	var out []archive.Object
	err := listAll(ctx, api, loc.Bucket, loc.Keys[0], "", func(o types.Object, _ string) {
		out = append(out, archive.Object{Key: aws.ToString(o.Key), Modified: aws.ToTime(o.LastModified)})
	})
	return out, err
}

// ReadArchiveBackups lists the base backups under loc, oldest first: pgBackRest's backup.info (or its
// .copy); WAL-G's backup sentinels (<name>_backup_stop_sentinel.json; a name with _D_ is a delta backup),
// each finished when its sentinel was written, with the newest's size read from its sentinel.
func ReadArchiveBackups(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) ([]archive.Backup, error) {
	if len(loc.Keys) < 2 {
		return nil, nil
	}
	prefix := loc.Keys[1]
	if loc.Tool == archive.ToolPgBackRest {
		for _, key := range []string{prefix + "backup.info", prefix + "backup.info.copy"} {
			data, err := getSmallObject(ctx, api, loc.Bucket, key)
			var nsk *types.NoSuchKey
			if errors.As(err, &nsk) || errCodeEquals(err, errCodeNoSuchBucket) {
				continue
			}
			if err != nil {
				return nil, err
			}
			backups, err := archive.PgBackRestBackups(data)
			if err != nil {
				return nil, fmt.Errorf("s3://%s/%s: %w", loc.Bucket, key, err)
			}
			return backups, nil
		}
		return nil, nil
	}
	var out []archive.Backup
	err := listAll(ctx, api, loc.Bucket, prefix, "/", func(o types.Object, _ string) {
		name, ok := strings.CutSuffix(path.Base(aws.ToString(o.Key)), "_backup_stop_sentinel.json")
		if !ok {
			return
		}
		kind := "full"
		if strings.Contains(name, "_D_") {
			kind = "delta"
		}
		out = append(out, archive.Backup{Label: name, Type: kind, Stop: aws.ToTime(o.LastModified).Unix()})
	})
	if err != nil || len(out) == 0 {
		return nil, err
	}
	slices.SortFunc(out, func(a, b archive.Backup) int {
		return cmp.Or(cmp.Compare(a.Stop, b.Stop), strings.Compare(a.Label, b.Label))
	})
	// The newest backup's sentinel only, on every refresh; ReadWALGBackupPositions reads the others.
	if err := readSentinels(ctx, api, loc, out[len(out)-1:]); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadWALGBackupPositions fills the sizes and start and end positions of every WAL-G backup in backups
// (as ReadArchiveBackups listed them in loc) from its sentinel: a restore's LSN target chooses among them,
// which a refresh, reading the newest one's only, does not need. Nothing for a pgBackRest archive, whose
// backup.info holds them all.
func ReadWALGBackupPositions(ctx context.Context, api ArchiveReaderAPI, loc archive.Location, backups []archive.Backup) error {
	if loc.Tool == archive.ToolPgBackRest || len(loc.Keys) < 2 {
		return nil
	}
	return readSentinels(ctx, api, loc, backups)
}

// readSentinels reads each WAL-G backup's sentinel in loc into it (archive.ReadWALGSentinel).
func readSentinels(ctx context.Context, api ArchiveReaderAPI, loc archive.Location, backups []archive.Backup) error {
	for i := range backups {
		key := loc.Keys[1] + backups[i].Label + "_backup_stop_sentinel.json"
		data, err := getSmallObject(ctx, api, loc.Bucket, key)
		if err != nil {
			return err
		}
		if err := archive.ReadWALGSentinel(data, &backups[i]); err != nil {
			return fmt.Errorf("s3://%s/%s: %w", loc.Bucket, key, err)
		}
	}
	return nil
}

// ReadArchiveRestored reads the record a cluster restored from another archive writes into its own archive
// loc (archive.Location.RestoredKey); nil when there is none (or no bucket).
func ReadArchiveRestored(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) ([]byte, error) {
	return readRecord(ctx, api, loc.Bucket, loc.RestoredKey())
}

// RestoreAttempt is one object under a cluster's restore attempts (archive.Location.RestoreAttemptsKey):
// its key and what it says.
type RestoreAttempt struct {
	Key, Text string
}

// ListRestoreAttempts lists the keys of the restore attempts noted in loc, in key order; none without a
// bucket.
func ListRestoreAttempts(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) ([]string, error) {
	prefix := loc.RestoreAttemptsKey()
	if prefix == "" {
		return nil, nil
	}
	var keys []string
	if err := listAll(ctx, api, loc.Bucket, prefix, "", func(o types.Object, _ string) {
		keys = append(keys, aws.ToString(o.Key))
	}); err != nil {
		return nil, err
	}
	slices.Sort(keys)
	return keys, nil
}

// ReadRestoreAttempts reads the restore attempts noted in loc whose keys are not in known, in key order;
// none without a bucket.
func ReadRestoreAttempts(ctx context.Context, api ArchiveReaderAPI, loc archive.Location, known map[string]bool) ([]RestoreAttempt, error) {
	keys, err := ListRestoreAttempts(ctx, api, loc)
	if err != nil {
		return nil, err
	}
	var out []RestoreAttempt
	for _, k := range keys {
		if known[k] {
			continue
		}
		data, err := readRecord(ctx, api, loc.Bucket, k)
		if err != nil {
			return nil, err
		}
		out = append(out, RestoreAttempt{Key: k, Text: string(data)})
	}
	return out, nil
}

// ReadArchiveVerification reads the verification record the primary writes into loc after a timeline
// switch (archive.Location.VerificationKey); nil when there is none (or no bucket).
func ReadArchiveVerification(ctx context.Context, api ArchiveReaderAPI, loc archive.Location) (*archive.Verification, error) {
	key := loc.VerificationKey()
	data, err := readRecord(ctx, api, loc.Bucket, key)
	if data == nil || err != nil {
		return nil, err
	}
	v, err := archive.ParseVerification(data)
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", loc.Bucket, key, err)
	}
	return v, nil
}

// readRecord reads one of pgnvme's records beside an archive, at key of bucket; nil when there is none
// (no key, no such object or bucket).
func readRecord(ctx context.Context, api ArchiveReaderAPI, bucket, key string) ([]byte, error) {
	if key == "" {
		return nil, nil
	}
	data, err := getSmallObject(ctx, api, bucket, key)
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) || errCodeEquals(err, errCodeNoSuchBucket) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", bucket, key, err)
	}
	return data, nil
}

// listAll lists every object under prefix (one level with delimiter "/"), page by page; a missing bucket
// lists nothing.
func listAll(ctx context.Context, api ArchiveReaderAPI, bucket, prefix, delimiter string, each func(types.Object, string)) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	if delimiter != "" {
		in.Delimiter = aws.String(delimiter)
	}
	p := s3.NewListObjectsV2Paginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if errCodeEquals(err, errCodeNoSuchBucket) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			each(o, prefix)
		}
	}
	return nil
}
