package awsclient_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// motoClients hands out moto clients as *awsclient.Clients does with endpoint overrides.
type motoClients struct{ url string }

func (c motoClients) S3(_ context.Context, region string) (*s3.Client, error) {
	return motoS3(c.url, region, ""), nil
}

func (c motoClients) IAM(context.Context, string) (*iam.Client, error) { return motoIAM(c.url), nil }

func (c motoClients) Clock() wait.Clock { return wait.Real }

func TestArchiveTagHelpers(t *testing.T) {
	defaults := map[string]string{"env": "prod", "team": "platform"}
	if got := awsclient.MergeTags(defaults, map[string]string{"team": "db", "app": "orders"}); !reflect.DeepEqual(got,
		map[string]string{"env": "prod", "team": "db", "app": "orders"}) {
		t.Errorf("MergeTags = %v", got)
	}
	if got := awsclient.MergeTags(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("MergeTags(nil, nil) = %#v, want an empty map", got)
	}

	live := map[string]string{"env": "prod", "team": "db", "app": "orders"}
	tests := []struct {
		name       string
		configured map[string]string
		want       map[string]string
	}{
		{"a default with its value is not the resource's", nil, map[string]string{"team": "db", "app": "orders"}},
		{"unless the configuration sets it too", map[string]string{"env": "prod"}, live},
	}
	for _, tc := range tests {
		if got := awsclient.OwnTags(live, defaults, tc.configured); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: OwnTags = %v, want %v", tc.name, got, tc.want)
		}
	}

	tags := map[string]string{"env": "prod"}
	got := awsclient.ArchiveTags(tags, "clusters/orders", "zstd")
	if !reflect.DeepEqual(awsclient.PublicTags(got), tags) || len(got) != 3 {
		t.Errorf("ArchiveTags = %v", got)
	}
	if len(tags) != 1 {
		t.Errorf("ArchiveTags changed its argument: %v", tags)
	}
}

// ReadArchive finds the bucket in the region S3 reports, splits the internal tags from the public ones, and
// rebuilds the spec only when asked.
func TestReadArchive_moto(t *testing.T) {
	t.Parallel()
	c := motoClients{startArchiveMoto(t)}
	ctx := context.Background()
	const bucket = "tf-acc-read-archive"
	api := motoS3(c.url, "eu-west-1", "")
	mustCreate(t, api, bucket, "eu-west-1", nil)
	if err := awsclient.PutTags(ctx, api, wait.Real, bucket, awsclient.ArchiveTags(map[string]string{"env": "prod"}, "clusters/a", "zstd")); err != nil {
		t.Fatal(err)
	}

	live, err := awsclient.ReadArchive(ctx, c, bucket, "us-east-1", false)
	if err != nil {
		t.Fatalf("ReadArchive: %v", err)
	}
	if live.Region != "eu-west-1" || live.Imported != nil || live.Tags.Prefix == nil || *live.Tags.Prefix != "clusters/a" ||
		live.Tags.Compression != "zstd" || !reflect.DeepEqual(live.Tags.Public, map[string]string{"env": "prod"}) {
		t.Errorf("ReadArchive = %+v (prefix %v)", live, live.Tags.Prefix)
	}

	live, err = awsclient.ReadArchive(ctx, c, bucket, "eu-west-1", true)
	if err != nil {
		t.Fatalf("ReadArchive(rebuild): %v", err)
	}
	if live.Imported == nil || live.Imported.Spec.Bucket != bucket || live.Imported.Spec.Region != "eu-west-1" {
		t.Errorf("ReadArchive(rebuild).Imported = %+v", live.Imported)
	}

	if err := awsclient.PutTags(ctx, api, wait.Real, bucket, map[string]string{"env": "prod"}); err != nil {
		t.Fatal(err)
	}
	if live, err = awsclient.ReadArchive(ctx, c, bucket, "eu-west-1", false); err != nil || live.Tags.Prefix != nil || live.Tags.Compression != "" {
		t.Errorf("ReadArchive without internal tags = %+v, %v", live.Tags, err)
	}

	if _, err := awsclient.ReadArchive(ctx, c, "tf-acc-missing", "eu-west-1", false); !errors.Is(err, awsclient.ErrBucketNotFound) {
		t.Errorf("ReadArchive(missing) = %v, want ErrBucketNotFound", err)
	}
}

// CreateArchiveBucket reports whether the bucket exists, so the caller records it in state.
func TestCreateArchiveBucket_moto(t *testing.T) {
	t.Parallel()
	c := motoClients{startArchiveMoto(t)}
	ctx := context.Background()
	s := archive.Spec{Bucket: "tf-acc-create-archive", Region: "eu-west-1"}
	if created, err := awsclient.CreateArchiveBucket(ctx, c, s, map[string]string{"env": "prod"}); !created || err != nil {
		t.Fatalf("CreateArchiveBucket = %v, %v", created, err)
	}
	if region, err := awsclient.FindBucket(ctx, motoS3(c.url, "eu-west-1", ""), s.Bucket); err != nil || region != "eu-west-1" {
		t.Errorf("FindBucket after create = %q, %v", region, err)
	}
	if created, err := awsclient.CreateArchiveBucket(ctx, noClients{}, s, nil); created || err == nil {
		t.Errorf("CreateArchiveBucket without a client = %v, %v; want not created and an error", created, err)
	}
}

// noClients fails to hand out clients, as a provider with a broken configuration does.
type noClients struct{}

func (noClients) S3(context.Context, string) (*s3.Client, error) {
	return nil, errors.New("no credentials")
}

func (noClients) IAM(context.Context, string) (*iam.Client, error) {
	return nil, errors.New("no credentials")
}

func (noClients) Clock() wait.Clock { return wait.Real }
