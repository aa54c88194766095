package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// GeneratedSuffixLength is the length of the unique suffix appended to a bucket_prefix to name the bucket.
const GeneratedSuffixLength = 26

// Bucket name limits of S3 general purpose buckets.
const (
	minBucketNameLength = 3
	maxBucketNameLength = 63
	maxBucketPrefixLen  = maxBucketNameLength - GeneratedSuffixLength
	maxPrefixBytes      = 512
)

// Reserved beginnings and endings of bucket names: S3 uses them for its own names (access point aliases,
// Object Lambda, Multi-Region Access Points, directory and table buckets, documentation examples).
var (
	reservedNamePrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedNameSuffixes = []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}
)

var (
	ipLike         = regexp.MustCompile(`^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$`)
	prefixSegment  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	iamRoleNameOK  = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	lowerAlphaNum  = "abcdefghijklmnopqrstuvwxyz0123456789"
	bucketNameChar = lowerAlphaNum + ".-"
)

// ValidateBucketName checks the rules of S3 general purpose bucket names: 3 to 63 characters of lower-case
// letters, digits, dots and hyphens, beginning and ending with a letter or digit, no two adjacent periods,
// not formatted as an IP address, and none of the prefixes (xn--, sthree-, amzn-s3-demo-) or suffixes
// (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3) S3 reserves.
//
// Dots are allowed because S3 allows them, but they are a poor choice for an archive: with virtual-hosted
// addressing the name becomes part of the TLS host name and no longer matches the *.s3.<region>.amazonaws.com
// certificate, which breaks WAL-G and pgBackRest unless path-style addressing is used.
func ValidateBucketName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("bucket name is empty: give a name of 3 to 63 lower-case letters, digits and hyphens")
	case len(name) < minBucketNameLength:
		return fmt.Errorf("bucket name %q is %d characters long: S3 bucket names have 3 to 63 characters", name, len(name))
	case len(name) > maxBucketNameLength:
		return fmt.Errorf("bucket name %q is %d characters long: S3 bucket names have at most 63 characters; shorten it", name, len(name))
	case strings.ToLower(name) != name:
		if ValidateBucketName(strings.ToLower(name)) == nil {
			return fmt.Errorf("bucket name %q contains upper-case letters, which S3 does not allow: use %q", name, strings.ToLower(name))
		}
		return fmt.Errorf("bucket name %q contains upper-case letters, which S3 does not allow: use only lower-case letters, digits, dots and hyphens", name)
	}
	if err := checkNameChars("bucket name", name); err != nil {
		return err
	}
	if !strings.ContainsRune(lowerAlphaNum, rune(name[0])) || !strings.ContainsRune(lowerAlphaNum, rune(name[len(name)-1])) {
		return fmt.Errorf("bucket name %q must begin and end with a lower-case letter or a digit", name)
	}
	if err := checkNameShape("bucket name", name); err != nil {
		return err
	}
	if ipLike.MatchString(name) {
		return fmt.Errorf("bucket name %q is formatted as an IP address, which S3 does not allow: choose a name with letters", name)
	}
	for _, s := range reservedNameSuffixes {
		if strings.HasSuffix(name, s) {
			return fmt.Errorf("bucket name %q ends with %q, a suffix S3 reserves for its own names: choose another name", name, s)
		}
	}
	return nil
}

// checkNameChars rejects characters S3 does not allow in bucket names.
func checkNameChars(what, name string) error {
	for _, r := range name {
		if !strings.ContainsRune(bucketNameChar, r) {
			return fmt.Errorf("%s %q contains %q: S3 bucket names use only lower-case letters, digits, dots and hyphens", what, name, r)
		}
	}
	return nil
}

// checkNameShape rejects adjacent periods and the reserved beginnings.
func checkNameShape(what, name string) error {
	if strings.Contains(name, "..") {
		return fmt.Errorf("%s %q contains two adjacent periods, which S3 does not allow", what, name)
	}
	for _, p := range reservedNamePrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s %q begins with %q, a prefix S3 reserves for its own names: choose another name", what, name, p)
		}
	}
	return nil
}

// ValidateBucketPrefix checks a bucket_prefix: followed by a generated suffix of GeneratedSuffixLength
// lower-case letters and digits it must form a valid bucket name, so it has 1 to 37 characters under the
// same rules as ValidateBucketName, except that it may end with a hyphen or a dot.
func ValidateBucketPrefix(prefix string) error {
	switch {
	case prefix == "":
		return fmt.Errorf("bucket_prefix is empty: give the beginning of the bucket name, or set bucket instead")
	case len(prefix) > maxBucketPrefixLen:
		return fmt.Errorf("bucket_prefix %q is %d characters long: with the %d-character generated suffix the name would exceed 63, so use at most %d",
			prefix, len(prefix), GeneratedSuffixLength, maxBucketPrefixLen)
	case strings.ToLower(prefix) != prefix:
		return fmt.Errorf("bucket_prefix %q contains upper-case letters, which S3 does not allow in bucket names: use %q", prefix, strings.ToLower(prefix))
	}
	if err := checkNameChars("bucket_prefix", prefix); err != nil {
		return err
	}
	if !strings.ContainsRune(lowerAlphaNum, rune(prefix[0])) {
		return fmt.Errorf("bucket_prefix %q must begin with a lower-case letter or a digit", prefix)
	}
	if err := checkNameShape("bucket_prefix", prefix); err != nil {
		return err
	}
	// The rest (IP form, reserved suffixes) cannot happen once a suffix of letters and digits follows, but
	// check the whole name anyway so the two validators never disagree.
	if err := ValidateBucketName(GeneratedBucketName(prefix, strings.Repeat("0", GeneratedSuffixLength))); err != nil {
		return fmt.Errorf("bucket_prefix %q does not give a valid bucket name: %w", prefix, err)
	}
	return nil
}

// GeneratedBucketName is the bucket name for a bucket_prefix: the prefix followed by the suffix, which the
// caller generates (GeneratedSuffixLength lower-case letters and digits, unique). It only concatenates.
func GeneratedBucketName(prefix, suffix string) string {
	return prefix + suffix
}

// ValidatePrefix checks the path inside the bucket where this cluster's archive lives. "" (the bucket root)
// is allowed; otherwise it is segments of letters, digits, '.', '_' and '-' separated by single slashes, with
// no leading or trailing slash, no "." or ".." segment, and at most 512 bytes.
func ValidatePrefix(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > maxPrefixBytes {
		return fmt.Errorf("prefix is %d bytes long: keep it under %d so object keys stay within S3's 1024-byte limit", len(p), maxPrefixBytes)
	}
	if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("prefix %q has a leading or trailing slash: write it as %q", p, strings.Trim(p, "/"))
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("prefix %q contains an empty segment (\"//\"): separate segments with single slashes", p)
		case seg == "." || seg == "..":
			return fmt.Errorf("prefix %q contains a %q segment: S3 keys are not resolved like paths, so write the path out", p, seg)
		case !prefixSegment.MatchString(seg):
			return fmt.Errorf("prefix %q contains characters other than letters, digits, '.', '_', '-' and '/' in segment %q: rename it", p, seg)
		}
	}
	return nil
}

// replicationRolePrefix begins every replication role name.
const replicationRolePrefix = "pgnvme-replication-"

// ReplicationRoleName is the name of the IAM role S3 assumes to replicate bucket to its replica:
// "pgnvme-replication-" followed by the bucket name, or, when that would exceed IAM's 64 characters, by the
// first characters of the bucket name and "-" plus the first 8 hex digits of the name's SHA-256. It is
// deterministic, so a later apply finds the role it made.
func ReplicationRoleName(bucket string) string {
	name := replicationRolePrefix + bucket
	if len(name) <= 64 && iamRoleNameOK.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(bucket))
	tag := hex.EncodeToString(sum[:])[:8]
	keep := 64 - len(replicationRolePrefix) - 1 - len(tag)
	head := strings.Map(func(r rune) rune {
		if r < 128 && iamRoleNameOK.MatchString(string(r)) {
			return r
		}
		return '-'
	}, bucket)
	if len(head) > keep {
		head = head[:keep]
	}
	return replicationRolePrefix + head + "-" + tag
}
