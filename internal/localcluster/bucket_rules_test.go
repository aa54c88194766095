package localcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestPlanChecksArchiveBucket: a local cluster whose pgBackRest repository is in S3 (moto behind TLS, as
// pgBackRest needs) has its backup policy held to the bucket's rules at plan, read with the repository's
// own endpoint, CA and keys: Object Lock longer than the recovery window is refused at
// backup.retention.recovery_window_days, a lifecycle rule that expires the repository's objects at
// archive; a bucket with neither plans.
func TestPlanChecksArchiveBucket(t *testing.T) {
	t.Parallel()
	tm := acctest.StartTLSMoto(t)
	ctx := context.Background()
	opts := func(bucket string) map[string]string {
		o := map[string]string{"repo1-type": "s3", "repo1-s3-bucket": bucket, "repo1-s3-region": "eu-west-1", "repo1-path": "/clusters/demo",
			"repo1-s3-key": "test", "repo1-s3-key-secret": "test"}
		for k, v := range tm.PgBackRestRepoOptions() {
			o[k] = v
		}
		return o
	}
	api, err := awsclient.S3ForPgBackRest(ctx, opts("x"))
	if err != nil {
		t.Fatal(err)
	}
	for bucket, lock := range map[string]*archive.ObjectLock{"tf-acc-locked": {Mode: archive.LockGovernance, Days: 30}, "tf-acc-expiring": nil, "tf-acc-plain": nil} {
		if err := awsclient.CreateBucket(ctx, api, wait.Real, bucket, "eu-west-1", lock, nil); err != nil {
			t.Fatalf("creating %s through the repository's endpoint: %v", bucket, err)
		}
	}
	if _, err := api.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("tf-acc-expiring"),
		LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{{
			ID: aws.String("old-clusters"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("clusters/")},
			Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(90)}}}}}); err != nil {
		t.Fatal(err)
	}
	window := 7
	for _, tc := range []struct {
		bucket, path, summary string
	}{
		{"tf-acc-locked", "backup.retention.recovery_window_days", "Retention Shorter Than Object Lock"},
		{"tf-acc-expiring", "archive", "Lifecycle Expires The Archive"},
		{"tf-acc-plain", "", ""},
	} {
		t.Run(tc.bucket, func(t *testing.T) {
			root, err := os.MkdirTemp("", "pgnvme-lc-bucket-") // the server's user reaches it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			if err := os.Chmod(root, 0o755); err != nil {
				t.Fatal(err)
			}
			s := cluster.FromInput(cluster.Input{Name: "demo", NodeCount: new(1),
				Archive: &cluster.ArchiveInput{PgBackRestOptions: opts(tc.bucket)},
				Backup:  &cluster.BackupInput{RecoveryWindowDays: &window},
				Blocks:  []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root, "data"), PortBase: acctest.FreePortBase(t, 1)}}})
			_, err = localcluster.NewPlatform().Plan(ctx, s, cluster.Prior{})
			var fe *cluster.FieldError
			switch {
			case tc.summary == "" && err != nil:
				t.Fatalf("plan: %v", err)
			case tc.summary != "" && (!errors.As(err, &fe) || fe.Summary != tc.summary || strings.Join(fe.Path, ".") != tc.path || !strings.Contains(fe.Detail, tc.bucket)):
				t.Fatalf("plan: %v; want %q at %s", err, tc.summary, tc.path)
			}
		})
	}
}
