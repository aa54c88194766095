package archive_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

const (
	keyEUW1     = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	keyEUC1     = "arn:aws:kms:eu-central-1:111122223333:key/mrk-1234567890abcdef1234567890abcdef"
	aliasEUW1   = "arn:aws:kms:eu-west-1:111122223333:alias/pg-archive"
	keyGovWest1 = "arn:aws-us-gov:kms:us-gov-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

func TestValidateKMSKeyARN(t *testing.T) {
	for _, tc := range []struct {
		name, arn, wantErr string
	}{
		{"key ARN", keyEUW1, ""},
		{"multi-Region key ARN", keyEUC1, ""},
		{"alias ARN", aliasEUW1, ""},
		{"alias ARN with slashes", "arn:aws:kms:eu-west-1:111122223333:alias/team/pg", ""},
		{"GovCloud", keyGovWest1, ""},
		{"China", "arn:aws-cn:kms:cn-north-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", ""},
		{"empty", "", "empty"},
		{"bare key ID", "1234abcd-12ab-34cd-56ef-1234567890ab", "key ID, not an ARN"},
		{"bare mrk ID", "mrk-1234567890abcdef1234567890abcdef", "key ID, not an ARN"},
		{"bare alias", "alias/pg-archive", "alias name, not an ARN"},
		{"wrong service", "arn:aws:s3:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", `service "s3"`},
		{"short account", "arn:aws:kms:eu-west-1:11112222333:key/1234abcd-12ab-34cd-56ef-1234567890ab", "exactly 12 digits"},
		{"long account", "arn:aws:kms:eu-west-1:1111222233334:key/1234abcd-12ab-34cd-56ef-1234567890ab", "exactly 12 digits"},
		{"unknown partition", "arn:azure:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", `partition "azure"`},
		{"no region", "arn:aws:kms::111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", "no valid region"},
		{"bad key ID", "arn:aws:kms:eu-west-1:111122223333:key/not-a-uuid", "lower-case UUID"},
		{"upper-case key ID", "arn:aws:kms:eu-west-1:111122223333:key/1234ABCD-12ab-34cd-56ef-1234567890ab", "lower-case UUID"},
		{"neither key nor alias", "arn:aws:kms:eu-west-1:111122223333:grant/x", "neither a key"},
		{"not an ARN", "kms-key", "not a KMS key ARN"},
		{"too few parts", "arn:aws:kms:eu-west-1", "not a KMS key ARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, archive.ValidateKMSKeyARN(tc.arn), tc.wantErr)
		})
	}
}

func TestValidateStorageClass(t *testing.T) {
	for _, c := range []string{"", "STANDARD", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"} {
		checkErr(t, archive.ValidateStorageClass(c), "")
	}
	checkErr(t, archive.ValidateStorageClass("glacier"), `upper case: "GLACIER"`)
	checkErr(t, archive.ValidateStorageClass("REDUCED_REDUNDANCY"), "choose one of STANDARD")
	checkErr(t, archive.ValidateStorageClass("EXPRESS_ONEZONE"), "not one a replica can use")
}

func TestValidateCompression(t *testing.T) {
	for _, c := range archive.Compressions {
		checkErr(t, archive.ValidateCompression(c), "")
	}
	if len(archive.Compressions) != 4 || archive.Compressions[0] != archive.DefaultCompression {
		t.Errorf("Compressions = %v", archive.Compressions)
	}
	checkErr(t, archive.ValidateCompression("gzip"), "choose one of lz4, lzma, zstd, brotli")
	checkErr(t, archive.ValidateCompression("LZ4"), "not a WAL-G compression method")
	checkErr(t, archive.ValidateCompression(""), "not a WAL-G compression method")
}

func TestValidateRegion(t *testing.T) {
	for _, r := range []string{"us-east-1", "eu-central-2", "ap-southeast-5", "us-gov-west-1", "cn-northwest-1", "il-central-1"} {
		checkErr(t, archive.ValidateRegion(r), "")
	}
	checkErr(t, archive.ValidateRegion(""), "empty")
	checkErr(t, archive.ValidateRegion("eu-west"), "not an AWS region name")
	checkErr(t, archive.ValidateRegion("EU-WEST-1"), "not an AWS region name")
	checkErr(t, archive.ValidateRegion("euw1"), "not an AWS region name")
}

// validSpec is a complete, valid spec with every option on.
func validSpec() archive.Spec {
	return archive.Spec{
		Bucket: "pg-archive", Prefix: "clusters/main", Region: "eu-west-1", KMSKeyARN: keyEUW1,
		NoncurrentVersionExpirationDays: 7, AbortIncompleteMultipartUploadDays: 1,
		ObjectLock:            &archive.ObjectLock{Mode: archive.LockGovernance, Days: 14},
		Replica:               &archive.Replica{Region: "eu-central-1", Bucket: "pg-archive-replica", KMSKeyARN: keyEUC1, StorageClass: "STANDARD_IA"},
		Compression:           archive.CompressionZSTD,
		DenyInsecureTransport: true,
	}
}

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(*archive.Spec)
		wantAttr string
		wantErr  string
	}{
		{"valid", func(*archive.Spec) {}, "", ""},
		{"minimal", func(s *archive.Spec) {
			*s = archive.Spec{Bucket: "pgx", Region: "us-east-1", NoncurrentVersionExpirationDays: 1, AbortIncompleteMultipartUploadDays: 1}
		}, "", ""},
		{"alias ARN", func(s *archive.Spec) { s.KMSKeyARN = aliasEUW1 }, "", ""},
		{"GovCloud", func(s *archive.Spec) {
			s.Region, s.KMSKeyARN, s.Replica = "us-gov-west-1", keyGovWest1, nil
		}, "", ""},
		{"endpoint override", func(s *archive.Spec) { s.Endpoint = archive.Endpoint{URL: "https://localhost:9443", PathStyle: true} }, "", ""},
		{"uppercase bucket", func(s *archive.Spec) { s.Bucket = "PG-Archive" }, "bucket", `use "pg-archive"`},
		{"IP-like bucket", func(s *archive.Spec) { s.Bucket = "10.0.0.1" }, "bucket", "IP address"},
		{"bad prefix", func(s *archive.Spec) { s.Prefix = "/main" }, "prefix", "leading or trailing slash"},
		{"no region", func(s *archive.Spec) { s.Region = "" }, "region", "Region is empty"},
		{"unknown partition", func(s *archive.Spec) { s.Partition = "aws-iso" }, "", "not an AWS partition"},
		{"unknown compression", func(s *archive.Spec) { s.Compression = "gzip" }, "compression", "not a WAL-G compression method"},
		{"noncurrent days 0", func(s *archive.Spec) { s.NoncurrentVersionExpirationDays = 0 }, "noncurrent_version_expiration_days", "at least 1"},
		{"abort days 0", func(s *archive.Spec) { s.AbortIncompleteMultipartUploadDays = 0 }, "abort_incomplete_multipart_upload_days", "at least 1"},
		{"abort days negative", func(s *archive.Spec) { s.AbortIncompleteMultipartUploadDays = -3 }, "abort_incomplete_multipart_upload_days", "is -3"},
		{"malformed KMS ARN", func(s *archive.Spec) { s.KMSKeyARN = "1234abcd-12ab-34cd-56ef-1234567890ab" }, "kms_key_arn", "key ID, not an ARN"},
		{"KMS key in another region", func(s *archive.Spec) { s.KMSKeyARN = strings.Replace(keyEUW1, "eu-west-1", "us-east-1", 1) },
			"kms_key_arn", "a KMS key is regional"},
		{"KMS key in another partition", func(s *archive.Spec) { s.KMSKeyARN = strings.Replace(keyEUW1, "arn:aws:", "arn:aws-cn:", 1) },
			"kms_key_arn", "partition aws-cn"},
		{"lock days 0", func(s *archive.Spec) { s.ObjectLock.Days = 0 }, "object_lock.days", "between 1 and 36500"},
		{"lock days too many", func(s *archive.Spec) { s.ObjectLock.Days = 36501 }, "object_lock.days", "between 1 and 36500"},
		{"lock mode", func(s *archive.Spec) { s.ObjectLock.Mode = "governance" }, "object_lock.mode", "GOVERNANCE or COMPLIANCE"},
		{"replica in the bucket's region", func(s *archive.Spec) {
			s.Replica.Region = "eu-west-1"
			s.Replica.KMSKeyARN = keyEUW1
		}, "replica.region", "the bucket's own region"},
		{"replica region malformed", func(s *archive.Spec) { s.Replica.Region = "frankfurt" }, "replica.region", "not an AWS region name"},
		{"replica in another partition", func(s *archive.Spec) {
			s.Replica.Region, s.Replica.KMSKeyARN = "cn-north-1", ""
			s.KMSKeyARN = ""
		}, "replica.region", "only within a partition"},
		{"replica bucket invalid", func(s *archive.Spec) { s.Replica.Bucket = "xn--replica" }, "replica.bucket", `"xn--"`},
		{"replica bucket is the bucket", func(s *archive.Spec) { s.Replica.Bucket = s.Bucket }, "replica.bucket", "the archive bucket itself"},
		{"replica storage class", func(s *archive.Spec) { s.Replica.StorageClass = "COLD" }, "replica.storage_class", "not one a replica can use"},
		{"replica KMS malformed", func(s *archive.Spec) { s.Replica.KMSKeyARN = "alias/replica" }, "replica.kms_key_arn", "alias name, not an ARN"},
		{"replica KMS key in the wrong region", func(s *archive.Spec) { s.Replica.KMSKeyARN = keyEUW1 }, "replica.kms_key_arn", "a KMS key is regional"},
		{"replica without a key under SSE-KMS", func(s *archive.Spec) { s.Replica.KMSKeyARN = "" }, "replica.kms_key_arn", "re-encrypt"},
		{"replica without a key under AES256", func(s *archive.Spec) {
			s.KMSKeyARN = ""
			s.Replica.KMSKeyARN = ""
		}, "", ""},
		{"endpoint not a URL", func(s *archive.Spec) { s.Endpoint.URL = "localhost:9443" }, "", "not an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.edit(&s)
			err := s.Validate()
			checkErr(t, err, tc.wantErr)
			if err == nil {
				return
			}
			var ve *archive.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			if ve.Attribute != tc.wantAttr {
				t.Errorf("Attribute = %q, want %q", ve.Attribute, tc.wantAttr)
			}
			if msg := ve.Error(); !strings.HasSuffix(msg, ".") {
				t.Errorf("message %q does not end a sentence", msg)
			}
		})
	}
}

func TestSpecValidateReportsEveryProblem(t *testing.T) {
	s := validSpec()
	s.Bucket = "AB"
	s.ObjectLock.Days = 0
	s.Replica.Region = s.Region
	err := s.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate = %v, want several errors joined", err)
	}
	var attrs []string
	for _, e := range joined.Unwrap() {
		var ve *archive.ValidationError
		if !errors.As(e, &ve) {
			t.Fatalf("%v is not a *ValidationError", e)
		}
		attrs = append(attrs, ve.Attribute)
	}
	want := "bucket object_lock.days replica.region replica.kms_key_arn"
	if got := strings.Join(attrs, " "); got != want {
		t.Errorf("attributes = %q, want %q\n%v", got, want, err)
	}
}
