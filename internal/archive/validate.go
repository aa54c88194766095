package archive

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Compressions are the compression methods WAL-G supports for WALG_COMPRESSION_METHOD.
var Compressions = []string{CompressionLZ4, CompressionLZMA, CompressionZSTD, CompressionBrotli}

// StorageClasses are the storage classes a replica may store its objects in.
var StorageClasses = []string{
	"STANDARD", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE",
}

// Partitions are the AWS partitions an archive may live in.
var Partitions = []string{"aws", "aws-cn", "aws-us-gov"}

// Object Lock default retention limits, in days (S3 allows up to 100 years).
const (
	MinObjectLockDays = 1
	MaxObjectLockDays = 36500
)

var (
	regionForm = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	accountID  = regexp.MustCompile(`^[0-9]{12}$`)
	keyUUID    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	keyMRK     = regexp.MustCompile(`^mrk-[0-9a-f]{32}$`)
	aliasName  = regexp.MustCompile(`^[A-Za-z0-9/_-]{1,250}$`)
)

// ValidationError is a problem with one attribute of the archive bucket. Spec.Validate returns them (alone,
// or several joined with errors.Join) so the caller can point at the attribute.
type ValidationError struct {
	// Attribute is the Terraform attribute path, e.g. "replica.region"; "" when no single attribute is at
	// fault (the provider's region, for example).
	Attribute string
	// Message says what is wrong and what to do, in one or two sentences.
	Message string
}

// Error returns the message.
func (e *ValidationError) Error() string { return e.Message }

// ValidateRegion checks that r has the form of an AWS region name, such as us-east-1 or us-gov-west-1.
func ValidateRegion(r string) error {
	if r == "" {
		return fmt.Errorf("region is empty: set an AWS region such as eu-west-1")
	}
	if !regionForm.MatchString(r) {
		return fmt.Errorf("region %q is not an AWS region name: use one such as eu-west-1 or us-gov-west-1", r)
	}
	return nil
}

// kmsARN is a parsed KMS key or alias ARN.
type kmsARN struct {
	partition, region, account string
	alias                      string // "alias/name" for an alias ARN, "" for a key ARN
}

// ValidateKMSKeyARN checks a KMS key given for SSE-KMS. It accepts a key ARN
// (arn:<partition>:kms:<region>:<account>:key/<key id or mrk- id>) or an alias ARN
// (arn:<partition>:kms:<region>:<account>:alias/<name>) in the aws, aws-cn or aws-us-gov partition. A bare
// key ID or alias name is refused: the region check, the node policy and WAL-G's WALG_S3_SSE_KMS_ID need
// the full ARN.
func ValidateKMSKeyARN(arn string) error {
	_, err := parseKMSARN(arn)
	return err
}

func parseKMSARN(arn string) (kmsARN, error) {
	example := "arn:aws:kms:<region>:<account>:key/<key id>"
	switch {
	case arn == "":
		return kmsARN{}, fmt.Errorf("KMS key ARN is empty: give a key ARN such as %s, or leave it unset for AES256", example)
	case keyUUID.MatchString(arn) || keyMRK.MatchString(arn):
		return kmsARN{}, fmt.Errorf("%q is a KMS key ID, not an ARN: give the full key ARN (%s) so its region and account are known", arn, example)
	case strings.HasPrefix(arn, "alias/"):
		return kmsARN{}, fmt.Errorf("%q is a KMS alias name, not an ARN: give the alias ARN (arn:aws:kms:<region>:<account>:%s)", arn, arn)
	}
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return kmsARN{}, fmt.Errorf("%q is not a KMS key ARN: give one such as %s", arn, example)
	}
	k := kmsARN{partition: parts[1], region: parts[3], account: parts[4]}
	res := parts[5]
	switch {
	case !slices.Contains(Partitions, k.partition):
		return kmsARN{}, fmt.Errorf("KMS key ARN %q names partition %q: use aws, aws-cn or aws-us-gov", arn, k.partition)
	case parts[2] != "kms":
		return kmsARN{}, fmt.Errorf("%q is an ARN of service %q, not a KMS key: give a key ARN such as %s", arn, parts[2], example)
	case !regionForm.MatchString(k.region):
		return kmsARN{}, fmt.Errorf("KMS key ARN %q has no valid region: KMS keys are regional, so the ARN names one, such as eu-west-1", arn)
	case !accountID.MatchString(k.account):
		return kmsARN{}, fmt.Errorf("KMS key ARN %q has account %q: an AWS account ID is exactly 12 digits", arn, k.account)
	}
	switch {
	case strings.HasPrefix(res, "key/"):
		id := strings.TrimPrefix(res, "key/")
		if !keyUUID.MatchString(id) && !keyMRK.MatchString(id) {
			return kmsARN{}, fmt.Errorf("KMS key ARN %q has key ID %q: a key ID is a lower-case UUID or mrk- followed by 32 hex digits", arn, id)
		}
	case strings.HasPrefix(res, "alias/"):
		name := strings.TrimPrefix(res, "alias/")
		if !aliasName.MatchString(name) {
			return kmsARN{}, fmt.Errorf("KMS alias ARN %q has alias name %q: alias names use letters, digits, '/', '_' and '-'", arn, name)
		}
		k.alias = res
	default:
		return kmsARN{}, fmt.Errorf("KMS ARN %q names neither a key (key/...) nor an alias (alias/...): give a key ARN such as %s", arn, example)
	}
	return k, nil
}

// ValidateStorageClass checks the storage class of replicated objects in the replica: STANDARD,
// STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR, GLACIER or DEEP_ARCHIVE ("" means STANDARD).
// GLACIER and DEEP_ARCHIVE are allowed and cheapest, but restoring from the replica then needs an S3
// restore of every object first (hours), so a recovery from the replica region is slow.
func ValidateStorageClass(c string) error {
	if c == "" || slices.Contains(StorageClasses, c) {
		return nil
	}
	hint := ""
	if slices.Contains(StorageClasses, strings.ToUpper(c)) {
		hint = fmt.Sprintf(" (storage classes are upper case: %q)", strings.ToUpper(c))
	}
	return fmt.Errorf("storage class %q is not one a replica can use%s: choose one of %s", c, hint, strings.Join(StorageClasses, ", "))
}

// ValidateCompression checks a WAL-G compression method: one of Compressions.
func ValidateCompression(c string) error {
	if slices.Contains(Compressions, c) {
		return nil
	}
	return fmt.Errorf("compression %q is not a WAL-G compression method: choose one of %s", c, strings.Join(Compressions, ", "))
}

// partition is the spec's partition: Partition when set, else the one the region belongs to.
func (s Spec) partition() string {
	if s.Partition != "" {
		return s.Partition
	}
	return PartitionOf(s.Region)
}

// PartitionOf is the AWS partition of region, the second field of its ARNs: aws-cn for cn-*, aws-us-gov for
// us-gov-*, aws otherwise. It is the provider's one rule for it (awsclient's instance policies use it too).
func PartitionOf(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	default:
		return "aws"
	}
}

// Validate checks the whole spec: every value on its own (as the Validate* functions do) and the rules that
// tie values together (KMS keys in their bucket's region, a replica in another region under another name).
// It returns nil, one *ValidationError, or several joined with errors.Join.
func (s Spec) Validate() error {
	var errs []error
	add := func(attr string, err error) {
		if err != nil {
			errs = append(errs, &ValidationError{Attribute: attr, Message: sentence(err.Error())})
		}
	}
	addf := func(attr, format string, args ...any) {
		errs = append(errs, &ValidationError{Attribute: attr, Message: fmt.Sprintf(format, args...)})
	}

	add("bucket", ValidateBucketName(s.Bucket))
	add("prefix", ValidatePrefix(s.Prefix))
	regionOK := ValidateRegion(s.Region) == nil
	add("region", ValidateRegion(s.Region))
	if s.Partition != "" && !slices.Contains(Partitions, s.Partition) {
		addf("", "Partition %q is not an AWS partition: use aws, aws-cn or aws-us-gov.", s.Partition)
	}
	add("", validateEndpoint(s.Endpoint))
	if s.Compression != "" {
		add("compression", ValidateCompression(s.Compression))
	}
	if s.NoncurrentVersionExpirationDays < 1 {
		addf("noncurrent_version_expiration_days", "noncurrent_version_expiration_days is %d: it must be at least 1 (the default is %d).",
			s.NoncurrentVersionExpirationDays, DefaultNoncurrentVersionExpirationDays)
	}
	if s.AbortIncompleteMultipartUploadDays < 1 {
		addf("abort_incomplete_multipart_upload_days", "abort_incomplete_multipart_upload_days is %d: it must be at least 1 (the default is %d).",
			s.AbortIncompleteMultipartUploadDays, DefaultAbortIncompleteMultipartUploadDays)
	}
	if s.KMSKeyARN != "" {
		k, err := parseKMSARN(s.KMSKeyARN)
		add("kms_key_arn", err)
		if err == nil && regionOK {
			if k.region != s.Region {
				addf("kms_key_arn", "kms_key_arn is in region %s but the bucket is in %s: a KMS key is regional and S3 only uses keys of its own region, so use a key in %s.",
					k.region, s.Region, s.Region)
			}
			if k.partition != s.partition() {
				addf("kms_key_arn", "kms_key_arn is in partition %s but the bucket is in %s: use a key of the bucket's partition.", k.partition, s.partition())
			}
		}
	}
	if l := s.ObjectLock; l != nil {
		if l.Mode != LockGovernance && l.Mode != LockCompliance {
			addf("object_lock.mode", "object_lock.mode %q is not an Object Lock mode: use %s or %s.", l.Mode, LockGovernance, LockCompliance)
		}
		if l.Days < MinObjectLockDays || l.Days > MaxObjectLockDays {
			addf("object_lock.days", "object_lock.days is %d: the default retention must be between %d and %d days.", l.Days, MinObjectLockDays, MaxObjectLockDays)
		}
	}
	if r := s.Replica; r != nil {
		errs = append(errs, s.validateReplica(r, regionOK)...)
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return errors.Join(errs...)
	}
}

func (s Spec) validateReplica(r *Replica, regionOK bool) []error {
	var errs []error
	add := func(attr string, err error) {
		if err != nil {
			errs = append(errs, &ValidationError{Attribute: attr, Message: sentence(err.Error())})
		}
	}
	addf := func(attr, format string, args ...any) {
		errs = append(errs, &ValidationError{Attribute: attr, Message: fmt.Sprintf(format, args...)})
	}
	replicaRegionOK := ValidateRegion(r.Region) == nil
	add("replica.region", ValidateRegion(r.Region))
	if replicaRegionOK && regionOK {
		if r.Region == s.Region {
			addf("replica.region", "replica.region is %s, the bucket's own region: the replica exists to survive the loss of that region, so choose another one.", r.Region)
		} else if PartitionOf(r.Region) != s.partition() {
			addf("replica.region", "replica.region %s is in partition %s but the bucket is in %s: S3 replicates only within a partition.",
				r.Region, PartitionOf(r.Region), s.partition())
		}
	}
	add("replica.bucket", ValidateBucketName(r.Bucket))
	if r.Bucket != "" && r.Bucket == s.Bucket {
		addf("replica.bucket", "replica.bucket is %q, the archive bucket itself: give the replica its own name.", r.Bucket)
	}
	add("replica.storage_class", ValidateStorageClass(r.StorageClass))
	if r.KMSKeyARN != "" {
		k, err := parseKMSARN(r.KMSKeyARN)
		add("replica.kms_key_arn", err)
		if err == nil && replicaRegionOK && k.region != r.Region {
			addf("replica.kms_key_arn", "replica.kms_key_arn is in region %s but the replica is in %s: a KMS key is regional, so use a key in %s.",
				k.region, r.Region, r.Region)
		}
	} else if s.KMSKeyARN != "" {
		addf("replica.kms_key_arn", "replica.kms_key_arn is not set but the bucket uses SSE-KMS: S3 replicates KMS-encrypted objects only when it can re-encrypt them with a key in the replica's region, so set one.")
	}
	return errs
}

// sentence makes an error text a sentence: a capital first letter and a final period.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	if c := msg[0]; c >= 'a' && c <= 'z' {
		msg = string(c-'a'+'A') + msg[1:]
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// validateEndpoint checks an endpoint override URL.
func validateEndpoint(e Endpoint) error {
	if e.URL == "" {
		return nil
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("S3 endpoint %q is not an http or https URL: set it like https://localhost:9443", e.URL)
	}
	return nil
}
