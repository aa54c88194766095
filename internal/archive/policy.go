package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// PolicyVersion is the IAM policy language version every document here uses.
const PolicyVersion = "2012-10-17"

// PolicyDocument is an IAM policy document (identity, resource or trust policy) in AWS's JSON form.
type PolicyDocument struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a PolicyDocument. Principal is nil in identity policies, "*" for everyone,
// or a map such as map[string]string{"Service": "s3.amazonaws.com"}. Condition maps an operator (e.g.
// "StringLike") to condition keys and their values.
type Statement struct {
	Sid       string                         `json:"Sid,omitempty"`
	Effect    string                         `json:"Effect"`
	Principal any                            `json:"Principal,omitempty"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource,omitempty"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// JSON renders the document deterministically: fields in AWS's order, map keys sorted, two-space indent.
// It returns "" only when a Principal holds a value JSON cannot encode, which the documents built here never
// do.
func (d PolicyDocument) JSON() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Actions a database node may perform on its archive objects. GetObject also covers HeadObject, PutObject
// covers the multipart upload calls (create, upload part, complete), DeleteObject covers DeleteObjects.
var nodeObjectActions = []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}

// NodePolicy is the least-privilege identity policy for database nodes running WAL-G (wal-push, wal-fetch,
// backup-push, backup-fetch, backup-list, delete retain) or pgBackRest against this archive:
//
//   - s3:ListBucket on the bucket, only for listings under the prefix (s3:prefix like "<prefix>/*" or exactly
//     "<prefix>"; no condition when the prefix is "");
//   - s3:GetObject, s3:PutObject, s3:DeleteObject, s3:AbortMultipartUpload on the objects under the prefix,
//     plus s3:PutObjectRetention with Object Lock (WAL-G sets a retention date on each upload, which S3
//     authorises as PutObjectRetention);
//   - with a KMS key: kms:Encrypt, kms:Decrypt and kms:GenerateDataKey on that key only (for an alias ARN:
//     on keys of that account and region that carry the alias, through kms:ResourceAliases).
//
// Nothing on the replica (S3 replication writes it, never the nodes), no bucket configuration, no
// s3:DeleteObjectVersion (deleting makes delete markers; lifecycle expires old versions), and no
// s3:GetBucketVersioning: current WAL-G asks for it to decide whether to list and delete object versions,
// and when refused it falls back to plain listings and deletes, which is what this policy allows.
func (s Spec) NodePolicy() PolicyDocument {
	list := Statement{
		Sid:      "ListArchivePrefix",
		Effect:   "Allow",
		Action:   []string{"s3:ListBucket"},
		Resource: []string{s.ARN()},
	}
	if s.Prefix != "" {
		list.Condition = map[string]map[string][]string{
			"StringLike": {"s3:prefix": {s.Prefix + "/*", s.Prefix}},
		}
	}
	objectActions := slices.Clone(nodeObjectActions)
	if s.ObjectLock != nil {
		objectActions = append(objectActions, "s3:PutObjectRetention")
	}
	doc := PolicyDocument{Version: PolicyVersion, Statement: []Statement{
		list,
		{Sid: "ReadWriteArchiveObjects", Effect: "Allow", Action: objectActions, Resource: []string{s.ObjectARNPrefix()}},
	}}
	if s.KMSKeyARN != "" {
		doc.Statement = append(doc.Statement,
			kmsStatement("UseArchiveKey", []string{"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"}, s.KMSKeyARN))
	}
	return doc
}

// NodePolicyJSON is NodePolicy as JSON.
func (s Spec) NodePolicyJSON() string {
	return s.NodePolicy().JSON()
}

// kmsStatement allows actions on one KMS key. IAM matches a key operation against the key's ARN, never an
// alias ARN, so an alias ARN becomes "any key of that account and region" narrowed by kms:ResourceAliases.
func kmsStatement(sid string, actions []string, arn string) Statement {
	st := Statement{Sid: sid, Effect: "Allow", Action: actions, Resource: []string{arn}}
	if k, err := parseKMSARN(arn); err == nil && k.alias != "" {
		st.Resource = []string{"arn:" + k.partition + ":kms:" + k.region + ":" + k.account + ":key/*"}
		st.Condition = map[string]map[string][]string{
			"ForAnyValue:StringEquals": {"kms:ResourceAliases": {k.alias}},
		}
	}
	return st
}

// denyInsecureTransport is the TLS-only bucket policy of a bucket, as terraform-aws-modules'
// attach_deny_insecure_transport_policy writes it.
func denyInsecureTransport(arn string) PolicyDocument {
	return PolicyDocument{Version: PolicyVersion, Statement: []Statement{{
		Sid:       "DenyInsecureTransport",
		Effect:    "Deny",
		Principal: "*",
		Action:    []string{"s3:*"},
		Resource:  []string{arn, arn + "/*"},
		Condition: map[string]map[string][]string{"Bool": {"aws:SecureTransport": {"false"}}},
	}}}
}

// BucketPolicyJSON is the bucket policy: one statement that denies every request made without TLS to the
// bucket and its objects, or "" when DenyInsecureTransport is false.
func (s Spec) BucketPolicyJSON() string {
	if !s.DenyInsecureTransport {
		return ""
	}
	return denyInsecureTransport(s.ARN()).JSON()
}

// ReplicaBucketPolicyJSON is the replica's bucket policy, the same TLS-only statement for the replica, or ""
// without a replica or when DenyInsecureTransport is false.
func (s Spec) ReplicaBucketPolicyJSON() string {
	if !s.DenyInsecureTransport || s.Replica == nil {
		return ""
	}
	return denyInsecureTransport(s.ReplicaARN()).JSON()
}

// ReplicationTrustPolicyJSON is the trust policy of the replication role: S3 may assume it. "" without a
// replica.
func (s Spec) ReplicationTrustPolicyJSON() string {
	if s.Replica == nil {
		return ""
	}
	return PolicyDocument{Version: PolicyVersion, Statement: []Statement{{
		Sid:       "S3AssumeForReplication",
		Effect:    "Allow",
		Principal: map[string]string{"Service": "s3.amazonaws.com"},
		Action:    []string{"sts:AssumeRole"},
	}}}.JSON()
}

// ReplicationRolePolicyJSON is the permission policy of the replication role, or "" without a replica:
// read the replication configuration and list the source bucket; read object versions for replication
// (with their ACLs and tags, and with Object Lock their retention and legal hold) from the source; replicate
// objects, deletes and tags into the replica; with KMS, decrypt with the source key and encrypt with the
// replica key.
func (s Spec) ReplicationRolePolicyJSON() string {
	if s.Replica == nil {
		return ""
	}
	sourceObjects := []string{"s3:GetObjectVersionForReplication", "s3:GetObjectVersionAcl", "s3:GetObjectVersionTagging"}
	if s.ObjectLock != nil {
		sourceObjects = append(sourceObjects, "s3:GetObjectRetention", "s3:GetObjectLegalHold")
	}
	doc := PolicyDocument{Version: PolicyVersion, Statement: []Statement{
		{Sid: "ReadSourceBucket", Effect: "Allow", Action: []string{"s3:GetReplicationConfiguration", "s3:ListBucket"}, Resource: []string{s.ARN()}},
		{Sid: "ReadSourceObjects", Effect: "Allow", Action: sourceObjects, Resource: []string{s.ARN() + "/*"}},
		{Sid: "WriteReplicaObjects", Effect: "Allow", Action: []string{"s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags"},
			Resource: []string{s.ReplicaARN() + "/*"}},
	}}
	if s.KMSKeyARN != "" {
		doc.Statement = append(doc.Statement, kmsStatement("DecryptSource", []string{"kms:Decrypt"}, s.KMSKeyARN))
	}
	if s.Replica.KMSKeyARN != "" {
		doc.Statement = append(doc.Statement, kmsStatement("EncryptReplica", []string{"kms:Encrypt"}, s.Replica.KMSKeyARN))
	}
	return doc.JSON()
}

// PolicyEqual reports whether two policy documents mean the same: both "", or both valid JSON documents with
// the same Version and the same statements in any order, where a single string equals a one-element array,
// the order of actions, resources, principals and condition values does not matter, action names and
// condition keys compare case-insensitively, Principal "*" equals {"AWS": "*"}, and Sid is ignored.
func PolicyEqual(a, b string) bool {
	if strings.TrimSpace(a) == "" || strings.TrimSpace(b) == "" {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	na, errA := canonicalPolicy(a)
	nb, errB := canonicalPolicy(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return na == nb
}

// canonicalPolicy renders a policy in a normal form: equal forms mean equal policies.
func canonicalPolicy(doc string) (string, error) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return "", err
	}
	version, _ := raw["Version"].(string)
	stmts, err := canonicalStatementList(raw["Statement"])
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]any{"Version": version, "Statement": stmts})
	return string(b), err
}

// canonicalStatements is the sorted normal form of each statement of a policy document.
func canonicalStatements(doc string) ([]string, error) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, err
	}
	return canonicalStatementList(raw["Statement"])
}

func canonicalStatementList(v any) ([]string, error) {
	var stmts []any
	switch x := v.(type) {
	case []any:
		stmts = x
	case map[string]any:
		stmts = []any{x}
	case nil:
	default:
		return nil, fmt.Errorf("statement is a %T", x)
	}
	out := make([]string, 0, len(stmts))
	for _, st := range stmts {
		m, ok := st.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("statement is a %T", st)
		}
		c, err := canonicalStatement(m)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}

func canonicalStatement(m map[string]any) (string, error) {
	c := map[string]any{}
	for k, v := range m {
		switch k {
		case "Sid":
		case "Effect":
			c[k] = v
		case "Action", "NotAction":
			set, err := stringSet(v, strings.ToLower)
			if err != nil {
				return "", err
			}
			c[k] = set
		case "Resource", "NotResource":
			set, err := stringSet(v, nil)
			if err != nil {
				return "", err
			}
			c[k] = set
		case "Principal", "NotPrincipal":
			p, err := canonicalPrincipal(v)
			if err != nil {
				return "", err
			}
			c[k] = p
		case "Condition":
			cond, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("condition is a %T", v)
			}
			cc := map[string]map[string][]string{}
			for op, keys := range cond {
				km, ok := keys.(map[string]any)
				if !ok {
					return "", fmt.Errorf("condition %s is a %T", op, keys)
				}
				cc[op] = map[string][]string{}
				for key, vals := range km {
					set, err := stringSet(vals, nil)
					if err != nil {
						return "", err
					}
					cc[op][strings.ToLower(key)] = set
				}
			}
			c[k] = cc
		default:
			c[k] = v
		}
	}
	b, err := json.Marshal(c)
	return string(b), err
}

func canonicalPrincipal(v any) (map[string][]string, error) {
	if s, ok := v.(string); ok {
		if s == "*" {
			return map[string][]string{"AWS": {"*"}}, nil
		}
		return nil, fmt.Errorf("principal %q", s)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("principal is a %T", v)
	}
	out := map[string][]string{}
	for k, vals := range m {
		set, err := stringSet(vals, nil)
		if err != nil {
			return nil, err
		}
		out[k] = set
	}
	return out, nil
}

// stringSet turns a JSON string, number, bool or array of them into a sorted, de-duplicated slice.
func stringSet(v any, norm func(string) string) ([]string, error) {
	var items []any
	if arr, ok := v.([]any); ok {
		items = arr
	} else {
		items = []any{v}
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		switch x := it.(type) {
		case string:
			s = x
		case bool:
			s = strconv.FormatBool(x)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return nil, fmt.Errorf("value is a %T", it)
		}
		if norm != nil {
			s = norm(s)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
