package archive_test

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// This file holds a small IAM policy evaluator, enough to prove what the archive's policies allow: explicit
// Deny beats Allow beats the implicit deny; Action (case-insensitive) and Resource patterns with * and ?;
// NotAction/NotResource are not supported; Condition operators StringEquals, StringLike and Bool, with the
// ForAnyValue: and ForAllValues: set qualifiers and the IfExists suffix. A condition key missing from the
// request fails its condition (unless IfExists/ForAllValues), as in IAM. Principals are not checked: every
// document is evaluated as if it applied to the caller.

type decision int

const (
	implicitDeny decision = iota
	allowed
	explicitDeny
)

func (d decision) String() string {
	return [...]string{"implicit deny", "allow", "explicit deny"}[d]
}

// request is one authorised call: the IAM action, the resource ARN and the request's condition keys.
type request struct {
	action   string
	resource string
	context  map[string][]string
}

type evalStatement struct {
	effect    string
	actions   []string
	resources []string
	condition map[string]map[string][]string
}

// parsePolicy reads a policy document from its JSON, accepting a single string where AWS allows an array.
func parsePolicy(t testing.TB, doc string) []evalStatement {
	t.Helper()
	var raw struct {
		Version   string
		Statement json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		t.Fatalf("policy is not JSON: %v\n%s", err, doc)
	}
	if raw.Version != "2012-10-17" {
		t.Fatalf("policy Version = %q, want 2012-10-17", raw.Version)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw.Statement, &list); err != nil {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(raw.Statement, &one); err != nil {
			t.Fatalf("Statement is neither an object nor an array: %v", err)
		}
		list = []map[string]json.RawMessage{one}
	}
	var out []evalStatement
	for _, m := range list {
		for k := range m {
			switch k {
			case "Sid", "Effect", "Principal", "Action", "Resource", "Condition":
			default:
				t.Fatalf("evaluator does not support statement element %q", k)
			}
		}
		var st evalStatement
		if err := json.Unmarshal(m["Effect"], &st.effect); err != nil || (st.effect != "Allow" && st.effect != "Deny") {
			t.Fatalf("Effect %s is not Allow or Deny", m["Effect"])
		}
		st.actions = stringOrList(t, m["Action"])
		st.resources = stringOrList(t, m["Resource"])
		if c, ok := m["Condition"]; ok {
			var cond map[string]map[string]json.RawMessage
			if err := json.Unmarshal(c, &cond); err != nil {
				t.Fatalf("Condition: %v", err)
			}
			st.condition = map[string]map[string][]string{}
			for op, keys := range cond {
				st.condition[op] = map[string][]string{}
				for key, vals := range keys {
					st.condition[op][key] = stringOrList(t, vals)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

func stringOrList(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	if raw == nil {
		return nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("%s is neither a string nor a list of strings", raw)
	}
	return list
}

// evaluate decides a request against the statements of every document together, as IAM does for the
// policies that apply to one call.
func evaluate(t testing.TB, req request, docs ...string) decision {
	t.Helper()
	result := implicitDeny
	for _, doc := range docs {
		if doc == "" {
			continue
		}
		for _, st := range parsePolicy(t, doc) {
			if !matchAny(st.actions, req.action, true) || !matchAny(st.resources, req.resource, false) ||
				!conditionsHold(t, st.condition, req.context) {
				continue
			}
			if st.effect == "Deny" {
				return explicitDeny
			}
			result = allowed
		}
	}
	return result
}

func matchAny(patterns []string, value string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			if globMatch(strings.ToLower(p), strings.ToLower(value)) {
				return true
			}
		} else if globMatch(p, value) {
			return true
		}
	}
	return false
}

// globMatch matches IAM wildcards: * any run of characters (also none), ? exactly one.
func globMatch(pattern, s string) bool {
	p, v := []rune(pattern), []rune(s)
	// match[i][j]: pattern[i:] matches s[j:].
	match := make([][]bool, len(p)+1)
	for i := range match {
		match[i] = make([]bool, len(v)+1)
	}
	match[len(p)][len(v)] = true
	for i := len(p) - 1; i >= 0; i-- {
		for j := len(v); j >= 0; j-- {
			switch {
			case p[i] == '*':
				match[i][j] = match[i+1][j] || (j < len(v) && match[i][j+1])
			case j < len(v) && (p[i] == '?' || p[i] == v[j]):
				match[i][j] = match[i+1][j+1]
			}
		}
	}
	return match[0][0]
}

func conditionsHold(t testing.TB, cond map[string]map[string][]string, ctx map[string][]string) bool {
	t.Helper()
	for op, keys := range cond {
		for key, want := range keys {
			if !conditionHolds(t, op, want, lookup(ctx, key)) {
				return false
			}
		}
	}
	return true
}

// lookup finds a condition key case-insensitively; nil when the request does not carry it.
func lookup(ctx map[string][]string, key string) []string {
	for k, v := range ctx {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

func conditionHolds(t testing.TB, op string, want, got []string) bool {
	t.Helper()
	qualifier := ""
	if q, rest, ok := strings.Cut(op, ":"); ok {
		qualifier, op = q, rest
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")
	var cmp func(pattern, value string) bool
	switch op {
	case "StringEquals":
		cmp = func(p, v string) bool { return p == v }
	case "StringLike":
		cmp = globMatch
	case "Bool":
		cmp = strings.EqualFold
	default:
		t.Fatalf("evaluator does not support condition operator %q", op)
	}
	anyWant := func(v string) bool {
		for _, p := range want {
			if cmp(p, v) {
				return true
			}
		}
		return false
	}
	if got == nil {
		return ifExists || qualifier == "ForAllValues"
	}
	switch qualifier {
	case "ForAllValues":
		for _, v := range got {
			if !anyWant(v) {
				return false
			}
		}
		return true
	case "ForAnyValue", "":
		if qualifier == "" && len(got) != 1 {
			t.Fatalf("single-valued operator %s given %d values", op, len(got))
		}
		for _, v := range got {
			if anyWant(v) {
				return true
			}
		}
		return false
	default:
		t.Fatalf("evaluator does not support qualifier %q", qualifier)
		return false
	}
}

func TestEvaluator(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":"s3:Get*","Resource":"arn:aws:s3:::b/a?c/*"},
		{"Effect":"Deny","Action":["s3:getobject"],"Resource":["arn:aws:s3:::b/abc/secret"]},
		{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringLike":{"s3:prefix":["abc/*"]}}},
		{"Effect":"Allow","Action":"s3:PutObject","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"true"},"StringEquals":{"s3:x-amz-acl":"private"}}}
	]}`
	ctx := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = []string{kv[i+1]}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		req  request
		want decision
	}{
		{"star in action", request{action: "s3:GetObjectAcl", resource: "arn:aws:s3:::b/abc/x"}, allowed},
		{"action case", request{action: "S3:GETOBJECT", resource: "arn:aws:s3:::b/abc/x"}, allowed},
		{"question mark", request{action: "s3:GetObject", resource: "arn:aws:s3:::b/axc/deep/x"}, allowed},
		{"question mark is one char", request{action: "s3:GetObject", resource: "arn:aws:s3:::b/ac/x"}, implicitDeny},
		{"resource case matters", request{action: "s3:GetObject", resource: "arn:aws:s3:::b/ABC/x"}, implicitDeny},
		{"deny beats allow", request{action: "s3:GetObject", resource: "arn:aws:s3:::b/abc/secret"}, explicitDeny},
		{"not matched", request{action: "s3:DeleteObject", resource: "arn:aws:s3:::b/abc/x"}, implicitDeny},
		{"like holds", request{action: "s3:ListBucket", resource: "arn:aws:s3:::b", context: ctx("s3:prefix", "abc/d")}, allowed},
		{"like fails", request{action: "s3:ListBucket", resource: "arn:aws:s3:::b", context: ctx("s3:prefix", "abd/")}, implicitDeny},
		{"missing key fails", request{action: "s3:ListBucket", resource: "arn:aws:s3:::b"}, implicitDeny},
		{"all conditions hold", request{action: "s3:PutObject", resource: "x", context: ctx("aws:SecureTransport", "TRUE", "s3:x-amz-acl", "private")}, allowed},
		{"one condition fails", request{action: "s3:PutObject", resource: "x", context: ctx("aws:SecureTransport", "true", "s3:x-amz-acl", "public-read")}, implicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, tc.req, doc); got != tc.want {
				t.Errorf("evaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

const (
	evalKey      = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	evalOtherKey = "arn:aws:kms:eu-west-1:111122223333:key/0000abcd-12ab-34cd-56ef-1234567890ab"
	evalRepKey   = "arn:aws:kms:eu-central-1:111122223333:key/mrk-1234567890abcdef1234567890abcdef"
)

func evalSpec() archive.Spec {
	return archive.Spec{
		Bucket: "pg-archive", Prefix: "clusters/main", Region: "eu-west-1", KMSKeyARN: evalKey,
		NoncurrentVersionExpirationDays: 7, AbortIncompleteMultipartUploadDays: 1, DenyInsecureTransport: true,
		Replica: &archive.Replica{Region: "eu-central-1", Bucket: "pg-archive-replica", KMSKeyARN: evalRepKey},
	}
}

func s3obj(bucket, key string) string { return "arn:aws:s3:::" + bucket + "/" + key }

func list(bucket, prefix string) request {
	return request{action: "s3:ListBucket", resource: "arn:aws:s3:::" + bucket, context: map[string][]string{"s3:prefix": {prefix}}}
}

// TestNodePolicyWALG proves that the node policy allows exactly the S3 and KMS requests WAL-G and pgBackRest
// make under the prefix (WAL-G's S3 folder: ListObjects/ListObjectsV2 with a prefix and "/" delimiter,
// HeadObject and GetObject, PutObject or a multipart upload, DeleteObjects; SSE-KMS uploads need
// GenerateDataKey, multipart completion and reads need Decrypt), and nothing outside it.
func TestNodePolicyWALG(t *testing.T) {
	s := evalSpec()
	policy := s.NodePolicyJSON()
	b := s.Bucket
	wal := "clusters/main/wal_005/000000010000000000000003.lz4"
	base := "clusters/main/basebackups_005/base_000000010000000000000002"
	for _, tc := range []struct {
		name string
		req  request
		want decision
	}{
		// WAL-G checks its storage at start-up: ListObjects under the prefix with MaxKeys 1.
		{"storage check lists the prefix", list(b, "clusters/main/"), allowed},
		// wal-push
		{"wal-push head (overwrite check)", request{action: "s3:GetObject", resource: s3obj(b, wal)}, allowed},
		{"wal-push put", request{action: "s3:PutObject", resource: s3obj(b, wal)}, allowed},
		{"wal-push abort multipart", request{action: "s3:AbortMultipartUpload", resource: s3obj(b, wal)}, allowed},
		{"wal-push KMS data key", request{action: "kms:GenerateDataKey", resource: evalKey}, allowed},
		{"wal-push KMS encrypt", request{action: "kms:Encrypt", resource: evalKey}, allowed},
		// wal-fetch
		{"wal-fetch get", request{action: "s3:GetObject", resource: s3obj(b, wal)}, allowed},
		{"wal-fetch KMS decrypt", request{action: "kms:Decrypt", resource: evalKey}, allowed},
		// backup-push
		{"backup-push lists base backups", list(b, "clusters/main/basebackups_005/"), allowed},
		{"backup-push lists WAL", list(b, "clusters/main/wal_005/"), allowed},
		{"backup-push tar partition", request{action: "s3:PutObject", resource: s3obj(b, base+"/tar_partitions/part_1.tar.lz4")}, allowed},
		{"backup-push sentinel", request{action: "s3:PutObject", resource: s3obj(b, base+"_backup_stop_sentinel.json")}, allowed},
		// backup-fetch
		{"backup-fetch lists the backup", list(b, base+"/tar_partitions/"), allowed},
		{"backup-fetch sentinel", request{action: "s3:GetObject", resource: s3obj(b, base+"_backup_stop_sentinel.json")}, allowed},
		{"backup-fetch partition", request{action: "s3:GetObject", resource: s3obj(b, base+"/tar_partitions/part_1.tar.lz4")}, allowed},
		// backup-list
		{"backup-list", list(b, "clusters/main/basebackups_005/"), allowed},
		// delete retain
		{"delete lists WAL", list(b, "clusters/main/wal_005/"), allowed},
		{"delete removes WAL", request{action: "s3:DeleteObject", resource: s3obj(b, wal)}, allowed},
		{"delete removes a backup", request{action: "s3:DeleteObject", resource: s3obj(b, base+"/tar_partitions/part_1.tar.lz4")}, allowed},
		// pgBackRest, repo1-path=/clusters/main/pgbackrest
		{"pgbackrest lists archive", list(b, "clusters/main/pgbackrest/archive/db/"), allowed},
		{"pgbackrest lists repo root", list(b, "clusters/main/pgbackrest/"), allowed},
		{"pgbackrest writes archive.info", request{action: "s3:PutObject", resource: s3obj(b, "clusters/main/pgbackrest/archive/db/archive.info")}, allowed},
		{"pgbackrest exact-prefix listing", list(b, "clusters/main"), allowed},

		// Outside the prefix.
		{"object in another prefix", request{action: "s3:GetObject", resource: s3obj(b, "clusters/other/wal_005/x")}, implicitDeny},
		{"object in a prefix that only starts alike", request{action: "s3:PutObject", resource: s3obj(b, "clusters/mainframe/x")}, implicitDeny},
		{"object at the bucket root", request{action: "s3:PutObject", resource: s3obj(b, "x")}, implicitDeny},
		{"delete outside the prefix", request{action: "s3:DeleteObject", resource: s3obj(b, "clusters/other/x")}, implicitDeny},
		{"list another prefix", list(b, "clusters/other/"), implicitDeny},
		{"list a prefix that only starts alike", list(b, "clusters/mainframe/"), implicitDeny},
		{"list the bucket root", list(b, ""), implicitDeny},
		{"list without a prefix", request{action: "s3:ListBucket", resource: "arn:aws:s3:::" + b}, implicitDeny},
		// The replica: written by S3 replication only.
		{"replica object put", request{action: "s3:PutObject", resource: s3obj("pg-archive-replica", wal)}, implicitDeny},
		{"replica object get", request{action: "s3:GetObject", resource: s3obj("pg-archive-replica", wal)}, implicitDeny},
		{"replica list", list("pg-archive-replica", "clusters/main/"), implicitDeny},
		{"replica key", request{action: "kms:Decrypt", resource: evalRepKey}, implicitDeny},
		// Bucket configuration and version-level operations.
		{"delete the bucket", request{action: "s3:DeleteBucket", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"change the bucket policy", request{action: "s3:PutBucketPolicy", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"suspend versioning", request{action: "s3:PutBucketVersioning", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"change lifecycle", request{action: "s3:PutLifecycleConfiguration", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"read versioning (WAL-G then lists plainly)", request{action: "s3:GetBucketVersioning", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"delete an object version", request{action: "s3:DeleteObjectVersion", resource: s3obj(b, wal)}, implicitDeny},
		{"list versions", request{action: "s3:ListBucketVersions", resource: "arn:aws:s3:::" + b}, implicitDeny},
		{"set retention without Object Lock", request{action: "s3:PutObjectRetention", resource: s3obj(b, wal)}, implicitDeny},
		{"bypass governance", request{action: "s3:BypassGovernanceRetention", resource: s3obj(b, wal)}, implicitDeny},
		// Other keys and key administration.
		{"another key", request{action: "kms:Decrypt", resource: evalOtherKey}, implicitDeny},
		{"another key, data key", request{action: "kms:GenerateDataKey", resource: evalOtherKey}, implicitDeny},
		{"schedule key deletion", request{action: "kms:ScheduleKeyDeletion", resource: evalKey}, implicitDeny},
		{"change key policy", request{action: "kms:PutKeyPolicy", resource: evalKey}, implicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, tc.req, policy); got != tc.want {
				t.Errorf("%s on %s %v: %v, want %v\n%s", tc.req.action, tc.req.resource, tc.req.context, got, tc.want, policy)
			}
		})
	}
}

// TestNodePolicyVariants covers the bucket root as prefix, Object Lock and a KMS alias ARN.
func TestNodePolicyVariants(t *testing.T) {
	root := evalSpec()
	root.Prefix = ""
	root.KMSKeyARN = ""
	locked := evalSpec()
	locked.ObjectLock = &archive.ObjectLock{Mode: archive.LockGovernance, Days: 30}
	aliased := evalSpec()
	aliased.KMSKeyARN = "arn:aws:kms:eu-west-1:111122223333:alias/pg-archive"
	aliases := func(a ...string) map[string][]string { return map[string][]string{"kms:ResourceAliases": a} }
	for _, tc := range []struct {
		name string
		spec archive.Spec
		req  request
		want decision
	}{
		{"root: list anything", root, list("pg-archive", ""), allowed},
		{"root: list without prefix", root, request{action: "s3:ListBucket", resource: "arn:aws:s3:::pg-archive"}, allowed},
		{"root: any object", root, request{action: "s3:PutObject", resource: s3obj("pg-archive", "wal_005/x")}, allowed},
		{"root: no KMS grant", root, request{action: "kms:Decrypt", resource: evalKey}, implicitDeny},
		{"root: other bucket", root, request{action: "s3:PutObject", resource: s3obj("pg-archive-replica", "x")}, implicitDeny},
		{"lock: retention under the prefix", locked, request{action: "s3:PutObjectRetention", resource: s3obj("pg-archive", "clusters/main/wal_005/x")}, allowed},
		{"lock: retention elsewhere", locked, request{action: "s3:PutObjectRetention", resource: s3obj("pg-archive", "other/x")}, implicitDeny},
		{"lock: no bypass", locked, request{action: "s3:BypassGovernanceRetention", resource: s3obj("pg-archive", "clusters/main/x")}, implicitDeny},
		{"alias: key with the alias", aliased, request{action: "kms:Decrypt", resource: evalKey, context: aliases("alias/pg-archive")}, allowed},
		{"alias: key with it among others", aliased, request{action: "kms:GenerateDataKey", resource: evalKey, context: aliases("alias/x", "alias/pg-archive")}, allowed},
		{"alias: key without the alias", aliased, request{action: "kms:Decrypt", resource: evalOtherKey, context: aliases("alias/other")}, implicitDeny},
		{"alias: key without aliases", aliased, request{action: "kms:Decrypt", resource: evalOtherKey}, implicitDeny},
		{"alias: key in another region", aliased, request{action: "kms:Decrypt", resource: evalRepKey, context: aliases("alias/pg-archive")}, implicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := tc.spec.NodePolicyJSON()
			if got := evaluate(t, tc.req, policy); got != tc.want {
				t.Errorf("%s on %s: %v, want %v\n%s", tc.req.action, tc.req.resource, got, tc.want, policy)
			}
		})
	}
}

// TestBucketPolicyDeniesPlainHTTP proves the TLS-only statement: a request without TLS is denied explicitly,
// whatever the caller's own policy allows; a request over TLS is not denied by it.
func TestBucketPolicyDeniesPlainHTTP(t *testing.T) {
	s := evalSpec()
	tls := func(secure string, r request) request {
		r.context = map[string][]string{"aws:SecureTransport": {secure}}
		return r
	}
	get := request{action: "s3:GetObject", resource: s3obj(s.Bucket, "clusters/main/wal_005/x")}
	listB := request{action: "s3:ListBucket", resource: "arn:aws:s3:::" + s.Bucket}
	repGet := request{action: "s3:GetObject", resource: s3obj(s.Replica.Bucket, "clusters/main/wal_005/x")}
	for _, tc := range []struct {
		name   string
		policy string
		req    request
		want   decision
	}{
		{"object without TLS", s.BucketPolicyJSON(), tls("false", get), explicitDeny},
		{"bucket without TLS", s.BucketPolicyJSON(), tls("false", listB), explicitDeny},
		{"object over TLS", s.BucketPolicyJSON(), tls("true", get), implicitDeny},
		{"bucket over TLS", s.BucketPolicyJSON(), tls("true", listB), implicitDeny},
		{"replica object without TLS", s.ReplicaBucketPolicyJSON(), tls("false", repGet), explicitDeny},
		{"replica object over TLS", s.ReplicaBucketPolicyJSON(), tls("true", repGet), implicitDeny},
		{"other bucket without TLS", s.BucketPolicyJSON(), tls("false", repGet), implicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, tc.req, tc.policy); got != tc.want {
				t.Errorf("%v, want %v\n%s", got, tc.want, tc.policy)
			}
		})
	}

	// Together with the node policy: the deny wins without TLS, the node's allow stands with it.
	withNode := func(secure string) decision {
		r := tls(secure, get)
		return evaluate(t, r, s.NodePolicyJSON(), s.BucketPolicyJSON())
	}
	if got := withNode("false"); got != explicitDeny {
		t.Errorf("node GetObject without TLS: %v, want explicit deny", got)
	}
	if got := withNode("true"); got != allowed {
		t.Errorf("node GetObject over TLS: %v, want allow", got)
	}
}

// TestReplicationRolePolicy proves the replication role reads the source and writes the replica only.
func TestReplicationRolePolicy(t *testing.T) {
	s := evalSpec()
	s.ObjectLock = &archive.ObjectLock{Mode: archive.LockCompliance, Days: 7}
	policy := s.ReplicationRolePolicyJSON()
	src := "arn:aws:s3:::pg-archive"
	rep := "arn:aws:s3:::pg-archive-replica"
	for _, tc := range []struct {
		name string
		req  request
		want decision
	}{
		{"read replication config", request{action: "s3:GetReplicationConfiguration", resource: src}, allowed},
		{"list source", request{action: "s3:ListBucket", resource: src}, allowed},
		{"read version for replication", request{action: "s3:GetObjectVersionForReplication", resource: src + "/a/b"}, allowed},
		{"read version ACL", request{action: "s3:GetObjectVersionAcl", resource: src + "/a"}, allowed},
		{"read version tags", request{action: "s3:GetObjectVersionTagging", resource: src + "/a"}, allowed},
		{"read retention", request{action: "s3:GetObjectRetention", resource: src + "/a"}, allowed},
		{"read legal hold", request{action: "s3:GetObjectLegalHold", resource: src + "/a"}, allowed},
		{"replicate object", request{action: "s3:ReplicateObject", resource: rep + "/a"}, allowed},
		{"replicate delete", request{action: "s3:ReplicateDelete", resource: rep + "/a"}, allowed},
		{"replicate tags", request{action: "s3:ReplicateTags", resource: rep + "/a"}, allowed},
		{"decrypt source", request{action: "kms:Decrypt", resource: evalKey}, allowed},
		{"encrypt replica", request{action: "kms:Encrypt", resource: evalRepKey}, allowed},

		{"replicate into the source", request{action: "s3:ReplicateObject", resource: src + "/a"}, implicitDeny},
		{"write the replica directly", request{action: "s3:PutObject", resource: rep + "/a"}, implicitDeny},
		{"read the replica", request{action: "s3:GetObjectVersionForReplication", resource: rep + "/a"}, implicitDeny},
		{"delete source objects", request{action: "s3:DeleteObject", resource: src + "/a"}, implicitDeny},
		{"encrypt with the source key", request{action: "kms:Encrypt", resource: evalKey}, implicitDeny},
		{"decrypt with the replica key", request{action: "kms:Decrypt", resource: evalRepKey}, implicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, tc.req, policy); got != tc.want {
				t.Errorf("%s on %s: %v, want %v\n%s", tc.req.action, tc.req.resource, got, tc.want, policy)
			}
		})
	}
}

// TestNodePolicyPgBackRestCapture replays the S3 requests pgBackRest 2.45 really made (testdata, captured
// from moto) through the node policy: every one must be allowed, and each must be denied when the archive
// lives under another prefix. HEAD and GET of an object authorise as s3:GetObject, PUT as s3:PutObject,
// DELETE as s3:DeleteObject, a bucket GET with list-type=2 as s3:ListBucket with s3:prefix, and the
// multi-object delete (POST ?delete) as s3:DeleteObject of each key in its body: the keys pgBackRest listed
// just before, so the test uses the last listed prefix.
func TestNodePolicyPgBackRestCapture(t *testing.T) {
	data, err := os.ReadFile("testdata/pgbackrest-2.45-s3-requests.txt")
	if err != nil {
		t.Fatal(err)
	}
	spec := archive.Spec{Bucket: "pgprobe", Prefix: "clusters/main", Region: "us-east-1"}
	other := spec
	other.Prefix = "clusters/other"
	lastListed := ""
	n := 0
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("bad line %q", line)
		}
		method, target := fields[1], fields[2]
		u, err := url.Parse(target)
		if err != nil {
			t.Fatalf("%q: %v", target, err)
		}
		bucket, key, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		q := u.Query()
		var req request
		switch {
		case key == "" && method == "GET" && q.Get("list-type") == "2":
			lastListed = q.Get("prefix")
			req = list(bucket, lastListed)
		case key == "" && method == "POST" && q.Has("delete"):
			req = request{action: "s3:DeleteObject", resource: s3obj(bucket, lastListed+"pg_data/PG_VERSION")}
		case key != "" && (method == "GET" || method == "HEAD"):
			req = request{action: "s3:GetObject", resource: s3obj(bucket, key)}
		case key != "" && method == "PUT":
			req = request{action: "s3:PutObject", resource: s3obj(bucket, key)}
		case key != "" && method == "DELETE":
			req = request{action: "s3:DeleteObject", resource: s3obj(bucket, key)}
		default:
			t.Fatalf("no IAM action known for %q", line)
		}
		n++
		if got := evaluate(t, req, spec.NodePolicyJSON()); got != allowed {
			t.Errorf("%s: %s on %s %v: %v, want allow", line, req.action, req.resource, req.context, got)
		}
		if got := evaluate(t, req, other.NodePolicyJSON()); got != implicitDeny {
			t.Errorf("%s under prefix clusters/other: %v, want implicit deny", line, got)
		}
	}
	if n < 90 {
		t.Errorf("replayed only %d requests", n)
	}
}
