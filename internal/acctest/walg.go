package acctest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
)

// WALGStandIn builds the stand-in for WAL-G (internal/acctest/walgstandin: WAL-G's commands, arguments,
// exit statuses and S3 layout, for a machine where WAL-G cannot be installed) as an executable named wal-g
// in a new directory the server's user can read, and returns that directory: put it first on PATH where
// the product looks wal-g up.
func WALGStandIn(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgnvme-walg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the WAL-G stand-in needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "wal-g"), "github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/walgstandin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the WAL-G stand-in: %v\n%s", err, out)
	}
	return dir
}

// WALGArchive is a WAL-G archive in a moto bucket, written by a primary through the stand-in: Env is the
// archive's WAL-G environment (prefix, moto's endpoint, path style, region and moto's credentials), as a
// user gives walg_env.
type WALGArchive struct {
	Env     map[string]string
	Primary *pgfixture.Server
	Bucket  string
	Prefix  string
	API     *s3.Client
	walg    string
}

// StartWALGPrimary makes bucket in moto and starts a primary that archives every WAL segment into
// s3://bucket/prefix with the stand-in in dir (WALGStandIn): archive_mode on, archive_command `wal-g
// wal-push %p` with the archive's environment; fsync off, times in UTC.
func StartWALGPrimary(t testing.TB, m *Moto, dir, bucket, prefix string) *WALGArchive {
	t.Helper()
	const region = "us-east-1"
	api := s3.NewFromConfig(m.AWSConfig(region), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := api.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	a := &WALGArchive{Bucket: bucket, Prefix: prefix, API: api, walg: filepath.Join(dir, "wal-g"), Env: map[string]string{
		"WALG_S3_PREFIX": "s3://" + bucket + "/" + prefix, "AWS_ENDPOINT": m.URL, "AWS_S3_FORCE_PATH_STYLE": "true", "AWS_REGION": region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
	}}
	a.Primary = pgfixture.Start(t, pgfixture.Options{Params: map[string]string{
		"archive_mode":    "on",
		"archive_command": "/usr/bin/env " + strings.Join(a.envWords(), " ") + " " + a.walg + " wal-push %p",
		"fsync":           "off",
		"timezone":        "UTC",
		"log_timezone":    "UTC",
	}})
	a.Primary.SwitchWALAndWaitArchived(t, time.Minute)
	return a
}

// envWords are Env as KEY=VALUE words, sorted.
func (a *WALGArchive) envWords() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		out = append(out, k+"="+a.Env[k])
	}
	return out
}

// BackupPush runs `wal-g backup-push` of the primary as the server's user and returns the backup's name
// (the newest sentinel's).
func (a *WALGArchive) BackupPush(t testing.TB) string {
	t.Helper()
	p := a.Primary
	env := append(a.envWords(), "PGHOST="+p.Node.SocketDir(), "PGPORT="+strconv.Itoa(p.Port()), "PGUSER="+p.Engine.Superuser(),
		"PGNVME_PG_BINDIR="+p.Engine.BinDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := p.Engine.RunAsServerUser(ctx, p.Dir(), "/usr/bin/env", append(env, a.walg, "backup-push", p.Node.DataDir)...); err != nil {
		t.Fatalf("wal-g backup-push: %v", err)
	}
	keys := a.Keys(t, "basebackups_005/")
	var newest string
	for _, k := range keys {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(k, a.Prefix+"/basebackups_005/"), "_backup_stop_sentinel.json"); ok && name > newest {
			newest = name
		}
	}
	if newest == "" {
		t.Fatalf("no backup sentinel after backup-push: %v", keys)
	}
	return newest
}

// Keys lists the archive's object keys under its prefix plus sub, sorted.
func (a *WALGArchive) Keys(t testing.TB, sub string) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(a.API, &s3.ListObjectsV2Input{Bucket: aws.String(a.Bucket), Prefix: aws.String(a.Prefix + "/" + sub)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	slices.Sort(out)
	return out
}

// Delete removes the object at key.
func (a *WALGArchive) Delete(t testing.TB, key string) {
	t.Helper()
	if _, err := a.API.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(fmt.Errorf("deleting %s: %w", key, err))
	}
}
