package archive_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestARNs(t *testing.T) {
	s := validSpec()
	for _, tc := range []struct{ name, got, want string }{
		{"ARN", s.ARN(), "arn:aws:s3:::pg-archive"},
		{"ReplicaARN", s.ReplicaARN(), "arn:aws:s3:::pg-archive-replica"},
		{"ObjectARNPrefix", s.ObjectARNPrefix(), "arn:aws:s3:::pg-archive/clusters/main/*"},
		{"WALGS3Prefix", s.WALGS3Prefix(), "s3://pg-archive/clusters/main"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	root := archive.Spec{Bucket: "pg", Region: "us-gov-west-1"}
	for _, tc := range []struct{ name, got, want string }{
		{"ARN from the region's partition", root.ARN(), "arn:aws-us-gov:s3:::pg"},
		{"ReplicaARN without replica", root.ReplicaARN(), ""},
		{"ObjectARNPrefix at the root", root.ObjectARNPrefix(), "arn:aws-us-gov:s3:::pg/*"},
		{"WALGS3Prefix at the root", root.WALGS3Prefix(), "s3://pg"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	explicit := archive.Spec{Bucket: "pg", Region: "eu-west-1", Partition: "aws"}
	if got := explicit.ARN(); got != "arn:aws:s3:::pg" {
		t.Errorf("ARN with Partition aws = %q", got)
	}
}

func TestWALGEnv(t *testing.T) {
	base := func() archive.Spec {
		return archive.Spec{Bucket: "pg-archive", Prefix: "clusters/main", Region: "eu-west-1",
			NoncurrentVersionExpirationDays: 7, AbortIncompleteMultipartUploadDays: 1}
	}
	common := map[string]string{
		"WALG_S3_PREFIX":          "s3://pg-archive/clusters/main",
		"AWS_REGION":              "eu-west-1",
		"WALG_COMPRESSION_METHOD": "lz4",
		"WALG_DELTA_MAX_STEPS":    "6",
		"WALG_UPLOAD_CONCURRENCY": "16",
		// A push never replaces a segment of other content (another cluster's history in the prefix).
		"WALG_PREVENT_WAL_OVERWRITE": "true",
	}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(common)
		maps.Copy(m, extra)
		return m
	}
	for _, tc := range []struct {
		name string
		edit func(*archive.Spec)
		want map[string]string
	}{
		{"AES256", func(*archive.Spec) {}, with(map[string]string{"WALG_S3_SSE": "AES256"})},
		{"KMS", func(s *archive.Spec) { s.KMSKeyARN = keyEUW1 },
			with(map[string]string{"WALG_S3_SSE": "aws:kms", "WALG_S3_SSE_KMS_ID": keyEUW1})},
		{"compression", func(s *archive.Spec) { s.Compression = archive.CompressionBrotli },
			with(map[string]string{"WALG_S3_SSE": "AES256", "WALG_COMPRESSION_METHOD": "brotli"})},
		{"Object Lock governance", func(s *archive.Spec) { s.ObjectLock = &archive.ObjectLock{Mode: archive.LockGovernance, Days: 7} },
			with(map[string]string{"WALG_S3_SSE": "AES256", "S3_RETENTION_MODE": "GOVERNANCE", "S3_RETENTION_PERIOD": "604800"})},
		{"Object Lock compliance", func(s *archive.Spec) { s.ObjectLock = &archive.ObjectLock{Mode: archive.LockCompliance, Days: 1} },
			with(map[string]string{"WALG_S3_SSE": "AES256", "S3_RETENTION_MODE": "COMPLIANCE", "S3_RETENTION_PERIOD": "86400"})},
		{"endpoint, path style", func(s *archive.Spec) { s.Endpoint = archive.Endpoint{URL: "https://localhost:9443", PathStyle: true} },
			with(map[string]string{"WALG_S3_SSE": "AES256", "AWS_ENDPOINT": "https://localhost:9443", "AWS_S3_FORCE_PATH_STYLE": "true"})},
		{"endpoint, host style", func(s *archive.Spec) { s.Endpoint = archive.Endpoint{URL: "http://minio:9000"} },
			with(map[string]string{"WALG_S3_SSE": "AES256", "AWS_ENDPOINT": "http://minio:9000"})},
		{"replica is never mentioned", func(s *archive.Spec) {
			s.Replica = &archive.Replica{Region: "eu-central-1", Bucket: "pg-archive-replica", KMSKeyARN: keyEUC1}
		}, with(map[string]string{"WALG_S3_SSE": "AES256"})},
		{"everything", func(s *archive.Spec) {
			*s = validSpec()
			s.Endpoint = archive.Endpoint{URL: "https://localhost:9443", PathStyle: true}
		}, with(map[string]string{
			"WALG_COMPRESSION_METHOD": "zstd", "WALG_S3_SSE": "aws:kms", "WALG_S3_SSE_KMS_ID": keyEUW1,
			"S3_RETENTION_MODE": "GOVERNANCE", "S3_RETENTION_PERIOD": "1209600",
			"AWS_ENDPOINT": "https://localhost:9443", "AWS_S3_FORCE_PATH_STYLE": "true",
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			got := s.WALGEnv()
			if !maps.Equal(got, tc.want) {
				t.Errorf("WALGEnv:\n got %v\nwant %v", got, tc.want)
			}
			// WAL-G refuses aws:kms without a key ID, and a key ID without aws:kms.
			if (got["WALG_S3_SSE"] == "aws:kms") != (got["WALG_S3_SSE_KMS_ID"] != "") {
				t.Errorf("WALG_S3_SSE %q with WALG_S3_SSE_KMS_ID %q", got["WALG_S3_SSE"], got["WALG_S3_SSE_KMS_ID"])
			}
			for k, v := range got {
				if strings.Contains(k, "SECRET") || strings.Contains(k, "ACCESS_KEY") || strings.Contains(k, "SESSION_TOKEN") {
					t.Errorf("credential variable %s in WALGEnv", k)
				}
				if s.Replica != nil && (strings.Contains(v, s.Replica.Bucket) || strings.Contains(v, s.Replica.Region)) {
					t.Errorf("%s=%s mentions the replica", k, v)
				}
			}
		})
	}
}

func TestPgBackRestOptions(t *testing.T) {
	s := validSpec()
	aws := map[string]string{
		"repo1-type":          "s3",
		"repo1-s3-bucket":     "pg-archive",
		"repo1-s3-region":     "eu-west-1",
		"repo1-s3-endpoint":   "s3.eu-west-1.amazonaws.com",
		"repo1-s3-uri-style":  "host",
		"repo1-path":          "/clusters/main/pgbackrest",
		"repo1-s3-kms-key-id": keyEUW1,
		"repo1-bundle":        "y",
	}
	if got := s.PgBackRestOptions(); !maps.Equal(got, aws) {
		t.Errorf("AWS:\n got %v\nwant %v", got, aws)
	}

	local := archive.Spec{Bucket: "tf-acc-archive", Region: "us-east-1", Endpoint: archive.Endpoint{URL: "https://localhost:9443", PathStyle: true}}
	want := map[string]string{
		"repo1-type":         "s3",
		"repo1-s3-bucket":    "tf-acc-archive",
		"repo1-s3-region":    "us-east-1",
		"repo1-s3-endpoint":  "localhost",
		"repo1-storage-port": "9443",
		"repo1-s3-uri-style": "path",
		"repo1-path":         "/pgbackrest",
		"repo1-bundle":       "y",
	}
	if got := local.PgBackRestOptions(); !maps.Equal(got, want) {
		t.Errorf("override:\n got %v\nwant %v", got, want)
	}

	noPort := archive.Spec{Bucket: "b-1", Region: "us-east-1", Endpoint: archive.Endpoint{URL: "https://s3.example.com"}}
	got := noPort.PgBackRestOptions()
	if got["repo1-s3-endpoint"] != "s3.example.com" || got["repo1-s3-uri-style"] != "host" {
		t.Errorf("override without port: %v", got)
	}
	if _, ok := got["repo1-storage-port"]; ok {
		t.Errorf("repo1-storage-port set without a port in the URL: %v", got)
	}

	china := archive.Spec{Bucket: "b-1", Region: "cn-north-1"}
	if got := china.PgBackRestOptions()["repo1-s3-endpoint"]; got != "s3.cn-north-1.amazonaws.com.cn" {
		t.Errorf("China endpoint = %q", got)
	}

	// Only options pgBackRest 2.45 knows, and never credentials.
	known := []string{"repo1-type", "repo1-s3-bucket", "repo1-s3-region", "repo1-s3-endpoint", "repo1-storage-port",
		"repo1-s3-uri-style", "repo1-path", "repo1-s3-kms-key-id", "repo1-bundle"}
	for _, sp := range []archive.Spec{s, local, noPort, china} {
		for k := range sp.PgBackRestOptions() {
			if !slices.Contains(known, k) {
				t.Errorf("unexpected option %s", k)
			}
		}
	}
}
