package awsclient_test

// Tests of the archive bucket adapter against a real moto server, plus focused fakes for what moto does not
// do. What moto (5.2) does and does not do, as observed here:
//   - Bucket policies are enforced on object operations only (PutObject is denied; ListObjectVersions and the
//     bucket configuration calls are not), and Conditions are ignored: the TLS-only Deny statement denies
//     every object request, TLS or not. Tests that write objects use buckets without a policy.
//   - HeadBucket answers x-amz-bucket-region for a client of any region (AWS redirects with a 301 carrying the
//     same header; that path, and the GetBucketLocation fallback, are covered by a fake).
//   - A new bucket has no default encryption (AWS applies SSE-S3 to every bucket since 2023).
//   - The public access block and ownership controls are stored and read back as put (not enforced here).
//   - The replication configuration is stored, but read back with DeleteMarkerReplication Disabled and without
//     SourceSelectionCriteria whatever was put; nothing replicates.
//   - Object Lock is enforced: DeleteObjects refuses a version under retention or legal hold with
//     AccessDenied, and honours BypassGovernanceRetention for GOVERNANCE only; the per-object error names the
//     key but not the version (AWS names both). GetObjectRetention is not implemented (HTTP 500); HeadObject
//     reports the lock mode, retain-until date and legal hold, so the adapter reads those.
//   - Paging of ListObjectVersions and batches of 1000 are covered by a fake, not by 1000+ objects on moto.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// startArchiveMoto starts moto on a free loopback port for the test (stopped by process group at the end)
// and returns its endpoint. A missing python3 or moto fails the test.
func startArchiveMoto(t *testing.T) string {
	t.Helper()
	return acctest.StartMoto(t).URL
}

func motoConfig(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
}

// motoS3 returns an S3 client for region against moto, path-style, as the provider builds it with endpoint
// overrides. accountID, when set, makes moto act as that account (its x-moto-account-id header).
func motoS3(url, region, accountID string) *s3.Client {
	return s3.NewFromConfig(motoConfig(region), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(url)
		o.UsePathStyle = true
		if accountID != "" {
			o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("x-moto-account-id", accountID))
		}
	})
}

func motoIAM(url string) *iam.Client {
	return iam.NewFromConfig(motoConfig("us-east-1"), func(o *iam.Options) { o.BaseEndpoint = aws.String(url) })
}

func motoKMSKey(t *testing.T, url, region string) string {
	t.Helper()
	client := kms.NewFromConfig(motoConfig(region), func(o *kms.Options) { o.BaseEndpoint = aws.String(url) })
	out, err := client.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("tf-acc archive key")})
	if err != nil {
		t.Fatalf("creating a KMS key in %s on moto: %v", region, err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

// tlsDenyPolicy is the archive's deny-non-TLS statement. On moto it denies every object request (Conditions
// are ignored), so it is only put on buckets no test writes objects to.
func tlsDenyPolicy(bucket string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Sid":"DenyInsecureTransport","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::%[1]s","arn:aws:s3:::%[1]s/*"],"Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`, bucket)
}

func mustCreate(t *testing.T, api awsclient.S3API, bucket, region string, lock *archive.ObjectLock) {
	t.Helper()
	if err := awsclient.CreateBucket(context.Background(), api, wait.Real, bucket, region, lock, nil); err != nil {
		t.Fatalf("CreateBucket(%s, %s): %v", bucket, region, err)
	}
}

func TestCreateBucket_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	tags := map[string]string{"env": "tf-acc", "team": "db"}

	for _, region := range []string{"us-east-1", "eu-west-1"} {
		t.Run(region, func(t *testing.T) {
			api := motoS3(url, region, "")
			bucket := "tf-acc-create-" + region
			if err := awsclient.CreateBucket(ctx, api, wait.Real, bucket, region, nil, tags); err != nil {
				t.Fatalf("CreateBucket: %v", err)
			}
			if err := awsclient.WaitBucketExists(ctx, api, wait.Real, bucket, 10*time.Second); err != nil {
				t.Fatalf("WaitBucketExists: %v", err)
			}
			got, err := awsclient.FindBucket(ctx, api, bucket)
			if err != nil || got != region {
				t.Fatalf("FindBucket = %q, %v; want %q", got, err, region)
			}
			// An interrupted apply runs CreateBucket again: us-east-1 answers 200, other regions
			// BucketAlreadyOwnedByYou. Both are success.
			if err := awsclient.CreateBucket(ctx, api, wait.Real, bucket, region, nil, tags); err != nil {
				t.Fatalf("CreateBucket again (already owned): %v", err)
			}
			gotTags, err := awsclient.ReadTags(ctx, api, bucket)
			if err != nil || !reflect.DeepEqual(gotTags, tags) {
				t.Fatalf("ReadTags = %v, %v; want %v", gotTags, err, tags)
			}
		})
	}

	t.Run("found from a client of another region", func(t *testing.T) {
		// moto answers HeadBucket from any region with x-amz-bucket-region (AWS redirects with the same header).
		got, err := awsclient.FindBucket(ctx, motoS3(url, "us-east-1", ""), "tf-acc-create-eu-west-1")
		if err != nil || got != "eu-west-1" {
			t.Fatalf("FindBucket = %q, %v; want eu-west-1", got, err)
		}
	})

	t.Run("not found", func(t *testing.T) {
		api := motoS3(url, "eu-west-1", "")
		_, err := awsclient.FindBucket(ctx, api, "tf-acc-missing")
		if !errors.Is(err, awsclient.ErrBucketNotFound) {
			t.Fatalf("FindBucket(missing) = %v; want ErrBucketNotFound", err)
		}
		err = awsclient.WaitBucketExists(ctx, api, wait.Real, "tf-acc-missing", 500*time.Millisecond)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitBucketExists(missing) = %v; want a deadline error", err)
		}
	})

	t.Run("owned by this account in another region", func(t *testing.T) {
		err := awsclient.CreateBucket(ctx, motoS3(url, "eu-west-1", ""), wait.Real, "tf-acc-create-us-east-1", "eu-west-1", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "already owns a bucket of that name in us-east-1") {
			t.Fatalf("CreateBucket over our us-east-1 bucket from eu-west-1 = %v; want the region clash", err)
		}
	})

	t.Run("taken by another account", func(t *testing.T) {
		other := motoS3(url, "eu-west-1", "111111111111")
		mustCreate(t, other, "tf-acc-taken", "eu-west-1", nil)
		err := awsclient.CreateBucket(ctx, motoS3(url, "eu-west-1", ""), wait.Real, "tf-acc-taken", "eu-west-1", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "already taken by another AWS account") {
			t.Fatalf("CreateBucket(taken) = %v; want the name-taken error", err)
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "BucketAlreadyExists" {
			t.Fatalf("CreateBucket(taken) does not wrap BucketAlreadyExists: %v", err)
		}
	})
}

// fullGuards is what the archive applies to a bucket with SSE-KMS and a replica.
func fullGuards(bucket, keyARN string, rep *archive.Replication) archive.Guards {
	return archive.Guards{
		Versioning:        "Enabled",
		PublicAccessBlock: archive.PublicAccessBlock{BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true},
		ObjectOwnership:   "BucketOwnerEnforced",
		Encryption:        archive.Encryption{Algorithm: archive.SSEKMS, KMSKeyARN: keyARN, BucketKey: true},
		Lifecycle: []archive.LifecycleRule{
			{ID: "noncurrent-versions", Enabled: true, NoncurrentExpirationDays: 7},
			{ID: "abort-incomplete-multipart-uploads", Enabled: true, AbortIncompleteUploadDays: 1},
		},
		PolicyJSON:  tlsDenyPolicy(bucket),
		Replication: rep,
	}
}

// checkGuards compares guards, the policies as JSON values.
func checkGuards(t *testing.T, got, want archive.Guards) {
	t.Helper()
	if (got.PolicyJSON == "") != (want.PolicyJSON == "") || (got.PolicyJSON != "" && !jsonEqual(t, got.PolicyJSON, want.PolicyJSON)) {
		t.Errorf("PolicyJSON = %s\nwant %s", got.PolicyJSON, want.PolicyJSON)
	}
	got.PolicyJSON, want.PolicyJSON = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("guards differ\n got %+v\nwant %+v", describe(got), describe(want))
	}
}

func describe(g archive.Guards) string {
	s := fmt.Sprintf("%+v", g)
	if g.Replication != nil {
		s += fmt.Sprintf(" replication=%+v", *g.Replication)
	}
	return s
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("policy is not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("policy is not JSON: %v\n%s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

func readGuards(t *testing.T, api awsclient.S3API, bucket string) archive.Guards {
	t.Helper()
	g, err := awsclient.ReadGuards(context.Background(), api, bucket)
	if err != nil {
		t.Fatalf("ReadGuards(%s): %v", bucket, err)
	}
	return g
}

func TestGuards_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	const (
		bucket  = "tf-acc-archive"
		replica = "tf-acc-archive-replica"
	)
	api := motoS3(url, "eu-west-1", "")
	rapi := motoS3(url, "us-west-2", "")
	key := motoKMSKey(t, url, "eu-west-1")
	replicaKey := motoKMSKey(t, url, "us-west-2")

	// The replica first: replication needs somewhere versioned to go.
	mustCreate(t, rapi, replica, "us-west-2", nil)
	replicaGuards := fullGuards(replica, replicaKey, nil)
	if err := awsclient.ApplyGuards(ctx, rapi, wait.Real, replica, replicaGuards); err != nil {
		t.Fatalf("ApplyGuards(replica): %v", err)
	}
	checkGuards(t, readGuards(t, rapi, replica), replicaGuards)

	roleARN, err := awsclient.EnsureRole(ctx, motoIAM(url), wait.Real, "tf-acc-archive-replication",
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"sts:AssumeRole"}]}`,
		"replication",
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ReplicateObject","s3:ReplicateDelete"],"Resource":"arn:aws:s3:::tf-acc-archive-replica/*"}]}`,
		nil)
	if err != nil {
		t.Fatalf("EnsureRole: %v", err)
	}

	mustCreate(t, api, bucket, "eu-west-1", nil)
	// A fresh bucket has no configuration: every absent one reads as its zero value.
	checkGuards(t, readGuards(t, api, bucket), archive.Guards{})

	want := fullGuards(bucket, key, &archive.Replication{
		RoleARN:              roleARN,
		RuleID:               "replica",
		Enabled:              true,
		DestinationBucketARN: "arn:aws:s3:::" + replica,
		StorageClass:         "STANDARD_IA",
		ReplicaKMSKeyARN:     replicaKey,
		DeleteMarkers:        true,
	})
	if err := awsclient.ApplyGuards(ctx, api, wait.Real, bucket, want); err != nil {
		t.Fatalf("ApplyGuards: %v", err)
	}
	// moto stores the replication rule's ID, status, priority and destination (with its storage class and
	// replica key), but answers DeleteMarkerReplication Disabled and drops SourceSelectionCriteria whatever was
	// put. Against moto the read-back differs there; the "replication as written" case below checks both.
	onMoto := want
	motoRep := *want.Replication
	motoRep.DeleteMarkers = false
	onMoto.Replication = &motoRep
	checkGuards(t, readGuards(t, api, bucket), onMoto)
	// Applying the same guards again changes nothing.
	if err := awsclient.ApplyGuards(ctx, api, wait.Real, bucket, want); err != nil {
		t.Fatalf("ApplyGuards again: %v", err)
	}
	checkGuards(t, readGuards(t, api, bucket), onMoto)

	t.Run("replication as written", func(t *testing.T) {
		keeper := &replicationKeeper{Client: api}
		if err := awsclient.ApplyGuards(ctx, keeper, wait.Real, bucket, want); err != nil {
			t.Fatalf("ApplyGuards: %v", err)
		}
		wantRule := s3types.ReplicationRule{
			ID:                      aws.String("replica"),
			Priority:                aws.Int32(1),
			Status:                  s3types.ReplicationRuleStatusEnabled,
			Filter:                  &s3types.ReplicationRuleFilter{Prefix: aws.String("")},
			DeleteMarkerReplication: &s3types.DeleteMarkerReplication{Status: s3types.DeleteMarkerReplicationStatusEnabled},
			Destination: &s3types.Destination{
				Bucket:                  aws.String("arn:aws:s3:::" + replica),
				StorageClass:            s3types.StorageClassStandardIa,
				EncryptionConfiguration: &s3types.EncryptionConfiguration{ReplicaKmsKeyID: aws.String(replicaKey)},
			},
			SourceSelectionCriteria: &s3types.SourceSelectionCriteria{
				SseKmsEncryptedObjects: &s3types.SseKmsEncryptedObjects{Status: s3types.SseKmsEncryptedObjectsStatusEnabled},
			},
		}
		if keeper.put == nil || aws.ToString(keeper.put.Role) != roleARN || len(keeper.put.Rules) != 1 || !reflect.DeepEqual(keeper.put.Rules[0], wantRule) {
			t.Fatalf("PutBucketReplication got %+v; want role %s and one rule %+v", keeper.put, roleARN, wantRule)
		}
		checkGuards(t, readGuards(t, keeper, bucket), want)
	})

	// Drift: each case changes one setting behind the adapter's back with a raw SDK call, reads it back,
	// and then ApplyGuards repairs it.
	drifts := []struct {
		name   string
		change func(t *testing.T) error
		expect func(g *archive.Guards)
	}{
		{
			name: "versioning suspended",
			change: func(*testing.T) error {
				_, err := api.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
					VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}})
				return err
			},
			expect: func(g *archive.Guards) { g.Versioning = "Suspended" },
		},
		{
			name: "policy deleted",
			change: func(*testing.T) error {
				_, err := api.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
				return err
			},
			expect: func(g *archive.Guards) { g.PolicyJSON = "" },
		},
		{
			name: "encryption changed to AES256",
			change: func(*testing.T) error {
				_, err := api.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String(bucket),
					ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
						ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryptionAes256},
					}}}})
				return err
			},
			expect: func(g *archive.Guards) { g.Encryption = archive.Encryption{Algorithm: archive.SSEAES256} },
		},
		{
			name: "public access block partly off",
			change: func(*testing.T) error {
				_, err := api.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(bucket),
					PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
						BlockPublicAcls: aws.Bool(true), IgnorePublicAcls: aws.Bool(true),
						BlockPublicPolicy: aws.Bool(false), RestrictPublicBuckets: aws.Bool(false),
					}})
				return err
			},
			expect: func(g *archive.Guards) {
				g.PublicAccessBlock.BlockPublicPolicy = false
				g.PublicAccessBlock.RestrictPublicBuckets = false
			},
		},
		{
			name: "ownership back to ObjectWriter",
			change: func(*testing.T) error {
				_, err := api.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: aws.String(bucket),
					OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{{ObjectOwnership: s3types.ObjectOwnershipObjectWriter}}}})
				return err
			},
			expect: func(g *archive.Guards) { g.ObjectOwnership = "ObjectWriter" },
		},
		{
			name: "lifecycle rules that expire current objects added",
			change: func(*testing.T) error {
				_, err := api.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
					LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{
						{ID: aws.String("noncurrent-versions"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
							NoncurrentVersionExpiration: &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(7)}},
						{ID: aws.String("abort-incomplete-multipart-uploads"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
							AbortIncompleteMultipartUpload: &s3types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(1)}},
						{ID: aws.String("expire-wal"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("wal_005/")},
							Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(30)}},
						{ID: aws.String("cold"), Status: s3types.ExpirationStatusDisabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("basebackups_005/")},
							Transitions: []s3types.Transition{{Days: aws.Int32(90), StorageClass: s3types.TransitionStorageClassGlacier}},
							Expiration:  &s3types.LifecycleExpiration{Days: aws.Int32(365)}},
					}}})
				return err
			},
			expect: func(g *archive.Guards) {
				g.Lifecycle = append(g.Lifecycle,
					archive.LifecycleRule{ID: "expire-wal", Enabled: true, Prefix: "wal_005/", ExpirationDays: 30},
					archive.LifecycleRule{ID: "cold", Prefix: "basebackups_005/", ExpirationDays: 365, Other: "transitions of current objects"})
			},
		},
		{
			name: "replication removed",
			change: func(*testing.T) error {
				_, err := api.DeleteBucketReplication(ctx, &s3.DeleteBucketReplicationInput{Bucket: aws.String(bucket)})
				return err
			},
			expect: func(g *archive.Guards) { g.Replication = nil },
		},
	}
	for _, d := range drifts {
		t.Run(d.name, func(t *testing.T) {
			if err := d.change(t); err != nil {
				t.Fatalf("changing the bucket behind the adapter's back: %v", err)
			}
			drifted := onMoto
			drifted.Lifecycle = append([]archive.LifecycleRule(nil), want.Lifecycle...)
			d.expect(&drifted)
			checkGuards(t, readGuards(t, api, bucket), drifted)

			if err := awsclient.ApplyGuards(ctx, api, wait.Real, bucket, want); err != nil {
				t.Fatalf("ApplyGuards (repair): %v", err)
			}
			checkGuards(t, readGuards(t, api, bucket), onMoto)
		})
	}

	t.Run("zero guards remove what can be removed", func(t *testing.T) {
		// Versioning "" leaves versioning alone; the public access block is written all false.
		if err := awsclient.ApplyGuards(ctx, api, wait.Real, bucket, archive.Guards{}); err != nil {
			t.Fatalf("ApplyGuards(zero): %v", err)
		}
		checkGuards(t, readGuards(t, api, bucket), archive.Guards{Versioning: "Enabled"})
	})

	t.Run("missing bucket", func(t *testing.T) {
		_, err := awsclient.ReadGuards(ctx, api, "tf-acc-missing")
		if !errors.Is(err, awsclient.ErrBucketNotFound) {
			t.Fatalf("ReadGuards(missing) = %v; want ErrBucketNotFound", err)
		}
	})
}

// replicationKeeper is moto with a faithful replication configuration: it keeps what PutBucketReplication
// was given and answers GetBucketReplication with it, where moto rewrites DeleteMarkerReplication and drops
// SourceSelectionCriteria.
type replicationKeeper struct {
	*s3.Client
	put *s3types.ReplicationConfiguration
}

func (k *replicationKeeper) PutBucketReplication(ctx context.Context, in *s3.PutBucketReplicationInput, optFns ...func(*s3.Options)) (*s3.PutBucketReplicationOutput, error) {
	out, err := k.Client.PutBucketReplication(ctx, in, optFns...)
	if err == nil {
		k.put = in.ReplicationConfiguration
	}
	return out, err
}

func (k *replicationKeeper) GetBucketReplication(ctx context.Context, in *s3.GetBucketReplicationInput, optFns ...func(*s3.Options)) (*s3.GetBucketReplicationOutput, error) {
	if _, err := k.Client.GetBucketReplication(ctx, in, optFns...); err != nil {
		return nil, err
	}
	return &s3.GetBucketReplicationOutput{ReplicationConfiguration: k.put}, nil
}

func TestTags_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	api := motoS3(url, "eu-west-1", "")
	const bucket = "tf-acc-tags"
	mustCreate(t, api, bucket, "eu-west-1", nil)

	got, err := awsclient.ReadTags(ctx, api, bucket)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReadTags(untagged) = %#v, %v; want an empty map", got, err)
	}
	for _, tags := range []map[string]string{
		{"Name": "archive", "env": "tf-acc"},
		{"env": "prod", "cost-center": "db"},
		{},
	} {
		if err := awsclient.PutTags(ctx, api, wait.Real, bucket, tags); err != nil {
			t.Fatalf("PutTags(%v): %v", tags, err)
		}
		got, err := awsclient.ReadTags(ctx, api, bucket)
		if err != nil || !reflect.DeepEqual(got, tags) {
			t.Fatalf("ReadTags after PutTags(%v) = %v, %v", tags, got, err)
		}
	}
	if _, err := awsclient.ReadTags(ctx, api, "tf-acc-missing"); !errors.Is(err, awsclient.ErrBucketNotFound) {
		t.Fatalf("ReadTags(missing) = %v; want ErrBucketNotFound", err)
	}
}

func putObject(t *testing.T, api *s3.Client, bucket, key, body string) string {
	t.Helper()
	// An explicit checksum: over plain http the SDK sends none by default, and S3 (and moto) refuse an upload
	// into an Object Lock bucket without Content-MD5 or a checksum.
	out, err := api.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatalf("PutObject(%s/%s): %v", bucket, key, err)
	}
	return aws.ToString(out.VersionId)
}

func isEmpty(t *testing.T, api awsclient.S3API, bucket string) bool {
	t.Helper()
	empty, err := awsclient.BucketIsEmpty(context.Background(), api, bucket)
	if err != nil {
		t.Fatalf("BucketIsEmpty(%s): %v", bucket, err)
	}
	return empty
}

func TestEmptyAndDeleteBucket_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	api := motoS3(url, "eu-west-1", "")
	const bucket = "tf-acc-empty"
	mustCreate(t, api, bucket, "eu-west-1", nil)
	// No bucket policy here: moto would deny every object request with the TLS-only statement.
	g := fullGuards(bucket, "", nil)
	g.Encryption = archive.Encryption{Algorithm: archive.SSEAES256}
	g.PolicyJSON = ""
	if err := awsclient.ApplyGuards(ctx, api, wait.Real, bucket, g); err != nil {
		t.Fatalf("ApplyGuards: %v", err)
	}
	if !isEmpty(t, api, bucket) {
		t.Fatal("BucketIsEmpty(new bucket) = false")
	}

	// Two versions of one object and a delete marker on top.
	putObject(t, api, bucket, "wal_005/000000010000000000000001", "one")
	putObject(t, api, bucket, "wal_005/000000010000000000000001", "two")
	if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("wal_005/000000010000000000000001")}); err != nil {
		t.Fatalf("DeleteObject (delete marker): %v", err)
	}
	if isEmpty(t, api, bucket) {
		t.Fatal("BucketIsEmpty = true with two versions and a delete marker")
	}

	err := awsclient.DeleteBucket(ctx, api, wait.Real, bucket)
	if !errors.Is(err, awsclient.ErrBucketNotEmpty) || !strings.Contains(err.Error(), "object versions or delete markers") {
		t.Fatalf("DeleteBucket(non-empty) = %v; want ErrBucketNotEmpty with an explanation", err)
	}

	n, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, false)
	if err != nil || n != 3 {
		t.Fatalf("EmptyBucket = %d, %v; want 3 (two versions and a delete marker)", n, err)
	}
	if !isEmpty(t, api, bucket) {
		t.Fatal("BucketIsEmpty = false after EmptyBucket")
	}
	if n, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, false); err != nil || n != 0 {
		t.Fatalf("EmptyBucket(empty) = %d, %v; want 0", n, err)
	}

	if err := awsclient.DeleteBucket(ctx, api, wait.Real, bucket); err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	if err := awsclient.WaitBucketDeleted(ctx, api, wait.Real, bucket, 10*time.Second); err != nil {
		t.Fatalf("WaitBucketDeleted: %v", err)
	}
	if _, err := awsclient.FindBucket(ctx, api, bucket); !errors.Is(err, awsclient.ErrBucketNotFound) {
		t.Fatalf("FindBucket(deleted) = %v; want ErrBucketNotFound", err)
	}
	if err := awsclient.DeleteBucket(ctx, api, wait.Real, bucket); err != nil {
		t.Fatalf("DeleteBucket(already gone) = %v; want success", err)
	}
	if _, err := awsclient.BucketIsEmpty(ctx, api, bucket); !errors.Is(err, awsclient.ErrBucketNotFound) {
		t.Fatalf("BucketIsEmpty(deleted) = %v; want ErrBucketNotFound", err)
	}
}

func TestObjectLock_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	api := motoS3(url, "eu-west-1", "")

	t.Run("not enabled", func(t *testing.T) {
		mustCreate(t, api, "tf-acc-nolock", "eu-west-1", nil)
		lock, err := awsclient.ReadObjectLock(ctx, api, "tf-acc-nolock")
		if err != nil || lock != nil {
			t.Fatalf("ReadObjectLock(no lock) = %+v, %v; want nil", lock, err)
		}
	})

	t.Run("COMPLIANCE", func(t *testing.T) {
		const bucket = "tf-acc-compliance"
		want := &archive.ObjectLock{Mode: archive.LockCompliance, Days: 1}
		mustCreate(t, api, bucket, "eu-west-1", want)
		lock, err := awsclient.ReadObjectLock(ctx, api, bucket)
		if err != nil || !reflect.DeepEqual(lock, want) {
			t.Fatalf("ReadObjectLock = %+v, %v; want %+v", lock, err, want)
		}
		// Object Lock turns versioning on.
		if g := readGuards(t, api, bucket); g.Versioning != "Enabled" {
			t.Fatalf("versioning of an Object Lock bucket = %q; want Enabled", g.Versioning)
		}
		version := putObject(t, api, bucket, "basebackups_005/base_000000010000000000000002/metadata.json", "{}")

		// Bypassing governance does not help against COMPLIANCE: moto refuses the delete (AccessDenied).
		n, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, true)
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) {
			t.Fatalf("EmptyBucket(COMPLIANCE) = %d, %v; want an *ObjectLockedError", n, err)
		}
		if n != 0 || locked.Bucket != bucket || locked.Key != "basebackups_005/base_000000010000000000000002/metadata.json" ||
			locked.VersionID != version || locked.Mode != archive.LockCompliance || !strings.HasPrefix(locked.Reason, "COMPLIANCE retention until ") {
			t.Fatalf("EmptyBucket(COMPLIANCE) = %d, %+v; want 0 and the locked version %s", n, locked, version)
		}
		if !strings.Contains(err.Error(), "cannot be shortened or bypassed") {
			t.Errorf("error does not explain COMPLIANCE: %v", err)
		}
		if isEmpty(t, api, bucket) {
			t.Fatal("the COMPLIANCE-locked version was deleted")
		}
	})

	t.Run("GOVERNANCE", func(t *testing.T) {
		const bucket = "tf-acc-governance"
		mustCreate(t, api, bucket, "eu-west-1", &archive.ObjectLock{Mode: archive.LockGovernance, Days: 3})
		version := putObject(t, api, bucket, "wal_005/000000010000000000000003", "wal")

		_, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, false)
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) || locked.Mode != archive.LockGovernance || locked.VersionID != version {
			t.Fatalf("EmptyBucket(GOVERNANCE, no bypass) = %v; want *ObjectLockedError for version %s", err, version)
		}
		if !strings.Contains(err.Error(), "s3:BypassGovernanceRetention") {
			t.Errorf("error does not say how to bypass GOVERNANCE: %v", err)
		}

		n, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, true)
		if err != nil || n != 1 {
			t.Fatalf("EmptyBucket(GOVERNANCE, bypass) = %d, %v; want 1", n, err)
		}
		if !isEmpty(t, api, bucket) {
			t.Fatal("BucketIsEmpty = false after bypassing GOVERNANCE")
		}
	})

	t.Run("legal hold", func(t *testing.T) {
		const bucket = "tf-acc-legal-hold"
		mustCreate(t, api, bucket, "eu-west-1", &archive.ObjectLock{Mode: archive.LockGovernance, Days: 1})
		held := putObject(t, api, bucket, "held", "x")
		putObject(t, api, bucket, "free", "y")
		if _, err := api.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String(bucket), Key: aws.String("held"), VersionId: aws.String(held),
			LegalHold: &s3types.ObjectLockLegalHold{Status: s3types.ObjectLockLegalHoldStatusOn}, ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32}); err != nil {
			t.Fatalf("PutObjectLegalHold: %v", err)
		}
		n, err := awsclient.EmptyBucket(ctx, api, wait.Real, bucket, true)
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) || locked.Key != "held" || locked.Reason != "legal hold" || n != 1 {
			t.Fatalf("EmptyBucket(legal hold) = %d, %v; want 1 deleted and *ObjectLockedError for the held object", n, err)
		}
		if !strings.Contains(err.Error(), "the legal hold must be removed first") {
			t.Errorf("error does not say to remove the legal hold: %v", err)
		}
	})
}

// fakeS3 implements S3API for the paths moto cannot show. Methods it does not override panic (nil embedded
// interface), so a test fails loudly when the adapter calls something unexpected.
type fakeS3 struct {
	awsclient.S3API

	mu sync.Mutex

	head     func() (*s3.HeadBucketOutput, error)
	location string

	versions    []s3types.ObjectVersion
	markers     []s3types.DeleteMarkerEntry
	pageSize    int
	listCalls   int
	deleteCalls []*s3.DeleteObjectsInput
	deleteErr   map[string]s3types.Error // by key
	retention   map[string]*s3types.ObjectLockRetention
	retentionOK bool

	policyErrs  []error
	policyCalls int
}

func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return f.head()
}

func (f *fakeS3) GetBucketLocation(context.Context, *s3.GetBucketLocationInput, ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	return &s3.GetBucketLocationOutput{LocationConstraint: s3types.BucketLocationConstraint(f.location)}, nil
}

// ListObjectVersions pages versions then delete markers by a numeric KeyMarker, pageSize entries a page.
func (f *fakeS3) ListObjectVersions(_ context.Context, in *s3.ListObjectVersionsInput, _ ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	start := 0
	if in.KeyMarker != nil {
		_, _ = fmt.Sscan(aws.ToString(in.KeyMarker), &start)
	}
	size := f.pageSize
	if in.MaxKeys != nil && int(*in.MaxKeys) < size {
		size = int(*in.MaxKeys)
	}
	out := &s3.ListObjectVersionsOutput{}
	total := len(f.versions) + len(f.markers)
	end := min(start+size, total)
	for i := start; i < end; i++ {
		if i < len(f.versions) {
			out.Versions = append(out.Versions, f.versions[i])
		} else {
			out.DeleteMarkers = append(out.DeleteMarkers, f.markers[i-len(f.versions)])
		}
	}
	if end < total {
		out.IsTruncated = aws.Bool(true)
		out.NextKeyMarker = aws.String(fmt.Sprint(end))
		out.NextVersionIdMarker = aws.String("v")
	}
	return out, nil
}

func (f *fakeS3) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteCalls = append(f.deleteCalls, in)
	out := &s3.DeleteObjectsOutput{}
	for _, o := range in.Delete.Objects {
		if e, ok := f.deleteErr[aws.ToString(o.Key)]; ok {
			out.Errors = append(out.Errors, e)
			continue
		}
		out.Deleted = append(out.Deleted, s3types.DeletedObject{Key: o.Key, VersionId: o.VersionId})
	}
	return out, nil
}

var errFakeDenied = &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if !f.retentionOK {
		return nil, errFakeDenied
	}
	out := &s3.HeadObjectOutput{VersionId: in.VersionId}
	if r, ok := f.retention[aws.ToString(in.Key)]; ok {
		out.ObjectLockMode, out.ObjectLockRetainUntilDate = s3types.ObjectLockMode(r.Mode), r.RetainUntilDate
	}
	return out, nil
}

func TestEmptyBucket_fake(t *testing.T) {
	t.Parallel()
	newFake := func() *fakeS3 {
		f := &fakeS3{pageSize: 1000}
		for i := range 2345 {
			f.versions = append(f.versions, s3types.ObjectVersion{Key: aws.String(fmt.Sprintf("wal/%05d", i)), VersionId: aws.String(fmt.Sprintf("v%d", i))})
		}
		for i := range 7 {
			f.markers = append(f.markers, s3types.DeleteMarkerEntry{Key: aws.String(fmt.Sprintf("gone/%d", i)), VersionId: aws.String(fmt.Sprintf("m%d", i))})
		}
		return f
	}

	t.Run("pages and batches", func(t *testing.T) {
		f := newFake()
		// A page of 1500 entries needs two DeleteObjects calls.
		f.pageSize = 1500
		n, err := awsclient.EmptyBucket(context.Background(), f, wait.Real, "b", true)
		if err != nil || n != 2352 {
			t.Fatalf("EmptyBucket = %d, %v; want 2352", n, err)
		}
		if f.listCalls != 2 {
			t.Errorf("ListObjectVersions calls = %d; want 2 pages", f.listCalls)
		}
		sizes := []int{}
		for _, c := range f.deleteCalls {
			sizes = append(sizes, len(c.Delete.Objects))
			if !aws.ToBool(c.BypassGovernanceRetention) {
				t.Errorf("DeleteObjects without BypassGovernanceRetention")
			}
		}
		if !reflect.DeepEqual(sizes, []int{1000, 500, 852}) {
			t.Errorf("DeleteObjects batch sizes = %v; want [1000 500 852]", sizes)
		}
	})

	// The retention of wal/00042 ends 48 hours after now, on the clock EmptyBucket is given.
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	until := now.Add(48 * time.Hour)
	lockedFake := func() *fakeS3 {
		f := newFake()
		f.retentionOK = true
		f.retention = map[string]*s3types.ObjectLockRetention{"wal/00042": {Mode: s3types.ObjectLockRetentionModeCompliance, RetainUntilDate: &until}}
		f.deleteErr = map[string]s3types.Error{
			"wal/00042": {Key: aws.String("wal/00042"), VersionId: aws.String("v42"), Code: aws.String("AccessDenied"), Message: aws.String("Access Denied because object protected by object lock.")},
			"wal/00043": {Key: aws.String("wal/00043"), VersionId: aws.String("v43"), Code: aws.String("InternalError"), Message: aws.String("We encountered an internal error.")},
		}
		return f
	}

	t.Run("locked version named by S3", func(t *testing.T) {
		f := lockedFake()
		n, err := awsclient.EmptyBucket(context.Background(), f, wait.NewStepClock(now), "b", false)
		if n != 2350 || err == nil {
			t.Fatalf("EmptyBucket = %d, %v; want 2350 and an error", n, err)
		}
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) {
			t.Fatalf("error is not an *ObjectLockedError: %v", err)
		}
		want := &awsclient.ObjectLockedError{Bucket: "b", Key: "wal/00042", VersionID: "v42", Mode: "COMPLIANCE",
			Reason: "COMPLIANCE retention until " + until.Format(time.RFC3339)}
		if !reflect.DeepEqual(locked, want) {
			t.Errorf("ObjectLockedError = %+v; want %+v", locked, want)
		}
		for _, part := range []string{"2 could not be deleted", `"wal/00043" version "v43"`, "InternalError"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q does not contain %q", err, part)
			}
		}
	})

	t.Run("retention ended by the clock's now: not named as the cause", func(t *testing.T) {
		// The same refusal read a second after the retention ends: the object's retention no longer explains
		// it, so only S3's own message says Object Lock (as for an object whose retention cannot be read).
		f := lockedFake()
		_, err := awsclient.EmptyBucket(context.Background(), f, wait.NewStepClock(until.Add(time.Second)), "b", false)
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) {
			t.Fatalf("error is not an *ObjectLockedError: %v", err)
		}
		want := &awsclient.ObjectLockedError{Bucket: "b", Key: "wal/00042", VersionID: "v42", Reason: "Access Denied because object protected by object lock."}
		if !reflect.DeepEqual(locked, want) {
			t.Errorf("ObjectLockedError = %+v; want %+v", locked, want)
		}
	})

	t.Run("retention unreadable, S3 message names Object Lock", func(t *testing.T) {
		f := newFake()
		f.deleteErr = map[string]s3types.Error{
			"wal/00001": {Key: aws.String("wal/00001"), VersionId: aws.String("v1"), Code: aws.String("AccessDenied"), Message: aws.String("Access Denied because object protected by object lock.")},
			"wal/00002": {Key: aws.String("wal/00002"), VersionId: aws.String("v2"), Code: aws.String("AccessDenied"), Message: aws.String("Access Denied")},
		}
		_, err := awsclient.EmptyBucket(context.Background(), f, wait.Real, "b", false)
		var locked *awsclient.ObjectLockedError
		if !errors.As(err, &locked) || locked.Key != "wal/00001" || locked.Mode != "" {
			t.Fatalf("EmptyBucket = %v; want *ObjectLockedError for wal/00001 with no mode", err)
		}
		if !strings.Contains(err.Error(), `deleting object "wal/00002" version "v2" from S3 bucket "b": AccessDenied: Access Denied`) {
			t.Errorf("a plain AccessDenied is not reported as such: %v", err)
		}
	})

	t.Run("many failures are capped", func(t *testing.T) {
		f := newFake()
		f.deleteErr = map[string]s3types.Error{}
		for i := range 25 {
			k := fmt.Sprintf("wal/%05d", i)
			f.deleteErr[k] = s3types.Error{Key: aws.String(k), VersionId: aws.String(fmt.Sprintf("v%d", i)), Code: aws.String("InternalError"), Message: aws.String("boom")}
		}
		_, err := awsclient.EmptyBucket(context.Background(), f, wait.Real, "b", false)
		if err == nil || !strings.Contains(err.Error(), "25 could not be deleted (the first 10 shown)") || strings.Count(err.Error(), "boom") != 10 {
			t.Fatalf("EmptyBucket = %v; want 25 failures, 10 spelled out", err)
		}
	})
}

func TestFindBucket_fake(t *testing.T) {
	t.Parallel()
	redirect := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusMovedPermanently, Header: http.Header{"X-Amz-Bucket-Region": {"ap-southeast-2"}}}},
		Err:      &smithy.GenericAPIError{Code: "MovedPermanently"},
	}}
	notFound := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusNotFound}},
		Err:      &s3types.NotFound{},
	}}
	forbidden := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusForbidden}},
		Err:      &smithy.GenericAPIError{Code: "Forbidden"},
	}}
	for _, tc := range []struct {
		name     string
		head     func() (*s3.HeadBucketOutput, error)
		location string
		want     string
		wantErr  error
		errText  string
	}{
		{name: "header", head: func() (*s3.HeadBucketOutput, error) {
			return &s3.HeadBucketOutput{BucketRegion: aws.String("eu-central-1")}, nil
		}, want: "eu-central-1"},
		{name: "no header, us-east-1 location", head: func() (*s3.HeadBucketOutput, error) { return &s3.HeadBucketOutput{}, nil }, want: "us-east-1"},
		{name: "no header, EU location", head: func() (*s3.HeadBucketOutput, error) { return &s3.HeadBucketOutput{}, nil }, location: "EU", want: "eu-west-1"},
		{name: "no header, location", head: func() (*s3.HeadBucketOutput, error) { return &s3.HeadBucketOutput{}, nil }, location: "us-west-2", want: "us-west-2"},
		{name: "redirect from another region", head: func() (*s3.HeadBucketOutput, error) { return nil, redirect }, want: "ap-southeast-2"},
		{name: "not found", head: func() (*s3.HeadBucketOutput, error) { return nil, notFound }, wantErr: awsclient.ErrBucketNotFound},
		{name: "forbidden", head: func() (*s3.HeadBucketOutput, error) { return nil, forbidden }, errText: `reading S3 bucket "b" (HeadBucket)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := awsclient.FindBucket(context.Background(), &fakeS3{head: tc.head, location: tc.location}, "b")
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("FindBucket = %q, %v; want %v", got, err, tc.wantErr)
				}
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) || errors.Is(err, awsclient.ErrBucketNotFound) {
					t.Fatalf("FindBucket = %q, %v; want an error with %q", got, err, tc.errText)
				}
			default:
				if err != nil || got != tc.want {
					t.Fatalf("FindBucket = %q, %v; want %q", got, err, tc.want)
				}
			}
		})
	}
}

// Methods ApplyGuards calls for zero-value guards except the policy, for the policy retry test.

func (f *fakeS3) PutPublicAccessBlock(context.Context, *s3.PutPublicAccessBlockInput, ...func(*s3.Options)) (*s3.PutPublicAccessBlockOutput, error) {
	return &s3.PutPublicAccessBlockOutput{}, nil
}

func (f *fakeS3) DeleteBucketOwnershipControls(context.Context, *s3.DeleteBucketOwnershipControlsInput, ...func(*s3.Options)) (*s3.DeleteBucketOwnershipControlsOutput, error) {
	return &s3.DeleteBucketOwnershipControlsOutput{}, nil
}

func (f *fakeS3) DeleteBucketEncryption(context.Context, *s3.DeleteBucketEncryptionInput, ...func(*s3.Options)) (*s3.DeleteBucketEncryptionOutput, error) {
	return &s3.DeleteBucketEncryptionOutput{}, nil
}

func (f *fakeS3) DeleteBucketLifecycle(context.Context, *s3.DeleteBucketLifecycleInput, ...func(*s3.Options)) (*s3.DeleteBucketLifecycleOutput, error) {
	return &s3.DeleteBucketLifecycleOutput{}, nil
}

func (f *fakeS3) GetBucketLifecycleConfiguration(context.Context, *s3.GetBucketLifecycleConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "NoSuchLifecycleConfiguration"}
}

func (f *fakeS3) DeleteBucketReplication(context.Context, *s3.DeleteBucketReplicationInput, ...func(*s3.Options)) (*s3.DeleteBucketReplicationOutput, error) {
	return &s3.DeleteBucketReplicationOutput{}, nil
}

func (f *fakeS3) PutBucketPolicy(context.Context, *s3.PutBucketPolicyInput, ...func(*s3.Options)) (*s3.PutBucketPolicyOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policyCalls++
	if len(f.policyErrs) > 0 {
		err := f.policyErrs[0]
		f.policyErrs = f.policyErrs[1:]
		return nil, err
	}
	return &s3.PutBucketPolicyOutput{}, nil
}

func TestApplyGuards_policyRetry_fake(t *testing.T) {
	t.Parallel()
	aborted := &smithy.GenericAPIError{Code: "OperationAborted", Message: "A conflicting conditional operation is currently in progress against this resource. Please try again."}

	// The retries wait on the clock given, which advances at once: no real time passes.
	f := &fakeS3{policyErrs: []error{aborted, aborted}}
	clock := wait.NewStepClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err := awsclient.ApplyGuards(context.Background(), f, clock, "b", archive.Guards{PolicyJSON: "{}"}); err != nil {
		t.Fatalf("ApplyGuards with a policy racing another change = %v; want success after retries", err)
	}
	if f.policyCalls != 3 {
		t.Errorf("PutBucketPolicy calls = %d; want 3 (two OperationAborted, then success)", f.policyCalls)
	}
	if want := []time.Duration{wait.DefaultMinInterval, 2 * wait.DefaultMinInterval}; !slices.Equal(clock.Sleeps, want) {
		t.Errorf("waited %v between the calls; want %v", clock.Sleeps, want)
	}

	// A race that outlasts the policy's retry budget ends with S3's last error, as it came.
	f = &fakeS3{policyErrs: slices.Repeat([]error{aborted}, 1000)}
	clock = wait.NewStepClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	err := awsclient.ApplyGuards(context.Background(), f, clock, "b", archive.Guards{PolicyJSON: "{}"})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "OperationAborted" || f.policyCalls < 3 || f.policyCalls >= 1000 {
		t.Fatalf("ApplyGuards with a race that never ends = %v after %d calls; want OperationAborted after a few", err, f.policyCalls)
	}
	var slept time.Duration
	for _, d := range clock.Sleeps {
		slept += d
	}
	t.Logf("gave up after %d calls and %s on the clock", f.policyCalls, slept)

	// Other errors are not retried.
	f = &fakeS3{policyErrs: []error{errFakeDenied}}
	clock = wait.NewStepClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	err = awsclient.ApplyGuards(context.Background(), f, clock, "b", archive.Guards{PolicyJSON: "{}"})
	if err == nil || !strings.Contains(err.Error(), `putting the policy of S3 bucket "b"`) || f.policyCalls != 1 || len(clock.Sleeps) != 0 {
		t.Fatalf("ApplyGuards with AccessDenied = %v after %d calls and waits %v; want the error after one call, no wait", err, f.policyCalls, clock.Sleeps)
	}
}
