package ec2cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// stopArchiving makes the primary's archive_command fail, as with its archive unreachable (ALTER SYSTEM
// overrides what Patroni writes), then switches WAL segments under the writer until n complete segments
// the primary could not archive have been flushed by every standby. It returns the last of them.
func (e *simEnv) stopArchiving(uri, password string, n int) string {
	e.t.Helper()
	e.psql(uri, password, "ALTER SYSTEM SET archive_command = '/bin/false'")
	e.psql(uri, password, "SELECT pg_reload_conf()")
	var last, lsn string
	for range n {
		prev := last
		// A switch without WAL written since the last one switches nothing: wait for the writer's.
		acctest.WaitFor(e.t, 30*time.Second, "a WAL segment switch", func() (bool, string) {
			lsn = e.psql(uri, password, "SELECT pg_switch_wal()")
			last = e.psql(uri, password, "SELECT pg_walfile_name('"+lsn+"'::pg_lsn - 1)")
			return last != prev, "still " + last
		})
	}
	acctest.WaitFor(e.t, 30*time.Second, "every standby to flush past "+lsn, func() (bool, string) {
		got := e.psql(uri, password, "SELECT count(*) FROM pg_stat_replication WHERE flush_lsn >= '"+lsn+"'")
		return got == "2", got + " standbys"
	})
	failed := e.psql(uri, password, "SELECT failed_count > 0 AND coalesce(last_archived_wal, '') < '"+last+"' FROM pg_stat_archiver")
	if failed != "t" {
		e.t.Fatalf("the primary archived %s although its archive_command fails", last)
	}
	return last
}

// archiveHole is acctest.WALHole over the WAL the cluster's pgBackRest repository in the bucket holds.
func (e *simEnv) archiveHole(ctx context.Context, name, last string) string {
	e.t.Helper()
	var keys []string
	for _, o := range e.archiveObjects(ctx, "clusters/"+name+"/pgbackrest/archive/") {
		keys = append(keys, aws.ToString(o.Key))
	}
	return acctest.WALHole(keys, last)
}

// archiveListing lists every object of the cluster's archive prefix with its size and ETag (moto's is the
// content's MD5), sorted: equal listings are equal archives, byte for byte.
func (e *simEnv) archiveListing(ctx context.Context, name string) []string {
	e.t.Helper()
	var out []string
	for _, o := range e.archiveObjects(ctx, "clusters/"+name+"/") {
		out = append(out, fmt.Sprintf("%s %d %s", aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag)))
	}
	return out
}

func (e *simEnv) archiveObjects(ctx context.Context, prefix string) []s3types.Object {
	e.t.Helper()
	return e.bucketObjects(ctx, e.bucket, prefix)
}

// s3 is a client of the simulator's S3 (moto).
func (e *simEnv) s3() *s3.Client {
	return s3.NewFromConfig(e.awsConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(nodesim.AWSEndpoint)
		o.UsePathStyle = true
	})
}

// bucketListing is archiveListing for any bucket and prefix.
func (e *simEnv) bucketListing(ctx context.Context, bucket, prefix string) []string {
	e.t.Helper()
	var out []string
	for _, o := range e.bucketObjects(ctx, bucket, prefix) {
		out = append(out, fmt.Sprintf("%s %d %s", aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag)))
	}
	return out
}

// replicate copies every object under prefix of the archive bucket to a new bucket in region, as S3
// replication would (moto does not replicate), and returns how many it copied.
func (e *simEnv) replicate(ctx context.Context, prefix, bucket, region string) int {
	e.t.Helper()
	c := e.s3()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}}); err != nil {
		e.t.Fatalf("creating the replica bucket: %v", err)
	}
	objects := e.archiveObjects(ctx, prefix)
	for _, o := range objects {
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: o.Key,
			CopySource: aws.String(e.bucket + "/" + aws.ToString(o.Key))}); err != nil {
			e.t.Fatalf("copying %s to the replica bucket: %v", aws.ToString(o.Key), err)
		}
	}
	return len(objects)
}

func (e *simEnv) bucketObjects(ctx context.Context, bucket, prefix string) []s3types.Object {
	e.t.Helper()
	var out []s3types.Object
	p := s3.NewListObjectsV2Paginator(e.s3(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			e.t.Fatalf("listing the archive: %v", err)
		}
		out = append(out, page.Contents...)
	}
	return out
}
