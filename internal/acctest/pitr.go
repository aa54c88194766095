package acctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
)

// Rows 1..PITRBefore are committed before the target time, PITRBefore+1..PITRAfter after it.
const (
	PITRBefore = 100
	PITRAfter  = 200
	pitrBatch  = 20
)

// PITRResult is what RunPITR measured.
type PITRResult struct {
	Target                                        string
	Segment                                       string
	Rows                                          string // count|min|max|rows after the target, on the restored server
	Timeline                                      string
	PrimaryUp, Backup, Archive, Restore, Recovery time.Duration
}

func (r PITRResult) String() string {
	return fmt.Sprintf("primary up with stanza-create and check %s, full backup %s, archive after switch %s, restore %s, recovery to promotion %s",
		r.PrimaryUp.Round(time.Millisecond), r.Backup.Round(time.Millisecond), r.Archive.Round(time.Millisecond),
		r.Restore.Round(time.Millisecond), r.Recovery.Round(time.Millisecond))
}

// RunPITR is the archive proof: a PostgreSQL primary (the fixture's) archives with pgBackRest into the repository pb
// describes, takes a full backup, commits rows 1..PITRBefore, notes a target time, commits the rest, and a
// point-in-time restore into a new data directory must hold exactly the rows before the target (and its log
// must show recovery stopping at the target). The primary is stopped before RunPITR returns, so nothing
// writes to the bucket afterwards.
func RunPITR(t *testing.T, pb *PgBackRest) PITRResult {
	t.Helper()
	var r PITRResult
	t0 := time.Now()
	primary := StartArchivingPrimary(t, pb)
	defer primary.Stop(t)
	r.PrimaryUp = time.Since(t0)
	primary.Psql(t, "postgres", "CREATE TABLE pitr (id int PRIMARY KEY, batch int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")

	t0 = time.Now()
	label := pb.Backup(t, "full")
	r.Backup = time.Since(t0)
	t.Logf("full backup %s in %s", label, r.Backup.Round(time.Millisecond))

	insertPITRRows(t, primary, 1, PITRBefore)
	primary.Psql(t, "postgres", "SELECT pg_sleep(0.3)")
	r.Target = primary.TargetTime(t)
	primary.Psql(t, "postgres", "SELECT pg_sleep(0.3)")
	insertPITRRows(t, primary, PITRBefore+1, PITRAfter)
	if got := primary.Psql(t, "postgres", "SELECT count(*), max(id) FROM pitr"); got != fmt.Sprintf("%d|%d", PITRAfter, PITRAfter) {
		t.Fatalf("primary holds count|max %s, want %d|%d", got, PITRAfter, PITRAfter)
	}
	// The target really lies between the two batches' commits.
	if got := primary.Psql(t, "postgres", fmt.Sprintf(
		"SELECT max(at) FILTER (WHERE id <= %d) < '%s'::timestamptz AND min(at) FILTER (WHERE id > %d) > '%s'::timestamptz FROM pitr",
		PITRBefore, r.Target, PITRBefore, r.Target)); got != "t" {
		t.Fatalf("target time %s is not between the batches", r.Target)
	}

	t0 = time.Now()
	r.Segment = primary.SwitchWALAndWaitArchived(t, 30*time.Second)
	r.Archive = time.Since(t0)
	primary.Stop(t)

	t0 = time.Now()
	restored := PrepareRestore(t)
	pb.Restore(t, r.Target, restored.Node.DataDir)
	r.Restore = time.Since(t0)
	t0 = time.Now()
	StartRestored(t, restored)
	defer restored.Stop(t)
	r.Recovery = time.Since(t0)

	want := fmt.Sprintf("%d|1|%d|0", PITRBefore, PITRBefore)
	r.Rows = restored.Psql(t, "postgres", fmt.Sprintf("SELECT count(*), min(id), max(id), count(*) FILTER (WHERE id > %d) FROM pitr", PITRBefore))
	if r.Rows != want {
		t.Fatalf("restored to %s: count|min|max|rows after the target = %s, want %s\nrestored server log:\n%s", r.Target, r.Rows, want, restored.LogTail(40))
	}
	// Recovery must have stopped at the target time, not at the end of the archive.
	log := restored.LogTail(200)
	for _, line := range []string{"starting point-in-time recovery to " + r.Target[:19], "recovery stopping before commit of transaction"} {
		if !strings.Contains(log, line) {
			t.Errorf("restored server log lacks %q:\n%s", line, log)
		}
	}
	r.Timeline = restored.Psql(t, "postgres", "SELECT timeline_id FROM pg_control_checkpoint()")
	t.Logf("restored to %s: %s rows (count|min|max|after), timeline %s", r.Target, r.Rows, r.Timeline)
	return r
}

// insertPITRRows commits rows from..to in transactions of pitrBatch rows each.
func insertPITRRows(t *testing.T, n *pgfixture.Server, from, to int) {
	t.Helper()
	for lo := from; lo <= to; lo += pitrBatch {
		hi := min(lo+pitrBatch-1, to)
		n.Psql(t, "postgres", fmt.Sprintf("INSERT INTO pitr (id, batch) SELECT g, %d FROM generate_series(%d, %d) g", lo/pitrBatch, lo, hi))
	}
}

// CheckObjectsEncrypted lists what pgBackRest wrote under repoPath and checks with HeadObject that a sample
// (the info files, a WAL segment, the backup manifest or bundle, a data file) is stored under SSE-KMS with
// keyARN, logging what the server reports.
func CheckObjectsEncrypted(t *testing.T, ctx context.Context, c *s3.Client, bucket, repoPath, keyARN string) {
	t.Helper()
	prefix := strings.TrimPrefix(repoPath, "/") + "/"
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListObjectsV2 %s: %v", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sample := map[string]string{}
	for _, k := range keys {
		rel := strings.TrimPrefix(k, prefix)
		switch {
		case rel == "archive/demo/archive.info":
			sample["archive.info"] = k
		case rel == "backup/demo/backup.info":
			sample["backup.info"] = k
		case strings.HasPrefix(rel, "archive/demo/") && strings.Count(rel, "/") == 4 && sample["wal"] == "":
			sample["wal"] = k
		case strings.HasSuffix(rel, "/backup.manifest"):
			sample["manifest"] = k
		case strings.HasPrefix(rel, "backup/demo/") && strings.Count(rel, "/") >= 3 && !strings.HasSuffix(rel, ".copy") &&
			!strings.HasSuffix(rel, "backup.manifest") && sample["data"] == "":
			sample["data"] = k
		}
	}
	for _, what := range []string{"archive.info", "backup.info", "wal", "manifest", "data"} {
		if sample[what] == "" {
			t.Errorf("no %s object under s3://%s/%s (%d objects)", what, bucket, prefix, len(keys))
		}
	}
	t.Logf("%d objects under s3://%s/%s", len(keys), bucket, prefix)
	for _, what := range []string{"archive.info", "backup.info", "wal", "manifest", "data"} {
		k := sample[what]
		if k == "" {
			continue
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			t.Errorf("HeadObject %s: %v", k, err)
			continue
		}
		t.Logf("HeadObject %s: ServerSideEncryption=%q SSEKMSKeyId=%q BucketKeyEnabled=%v",
			k, h.ServerSideEncryption, aws.ToString(h.SSEKMSKeyId), aws.ToBool(h.BucketKeyEnabled))
		if h.ServerSideEncryption != s3types.ServerSideEncryptionAwsKms {
			t.Errorf("%s is stored with ServerSideEncryption %q, want aws:kms", k, h.ServerSideEncryption)
		}
		if id := aws.ToString(h.SSEKMSKeyId); id != keyARN && !strings.HasSuffix(keyARN, "/"+id) {
			t.Errorf("%s is encrypted with key %q, want %s", k, id, keyARN)
		}
	}
}
