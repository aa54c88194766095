package archive_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestBucketPolicyJSON(t *testing.T) {
	s := validSpec()
	var doc struct {
		Version   string
		Statement []struct {
			Sid       string
			Effect    string
			Principal any
			Action    []string
			Resource  []string
			Condition map[string]map[string][]string
		}
	}
	if err := json.Unmarshal([]byte(s.BucketPolicyJSON()), &doc); err != nil {
		t.Fatalf("BucketPolicyJSON is not JSON: %v", err)
	}
	if doc.Version != "2012-10-17" || len(doc.Statement) != 1 {
		t.Fatalf("policy = %+v, want one statement", doc)
	}
	st := doc.Statement[0]
	want := []any{"DenyInsecureTransport", "Deny", "*", []string{"s3:*"},
		[]string{"arn:aws:s3:::pg-archive", "arn:aws:s3:::pg-archive/*"},
		map[string]map[string][]string{"Bool": {"aws:SecureTransport": {"false"}}}}
	got := []any{st.Sid, st.Effect, st.Principal, st.Action, st.Resource, st.Condition}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("statement = %v, want %v", got, want)
	}
	if !strings.Contains(s.ReplicaBucketPolicyJSON(), `"arn:aws:s3:::pg-archive-replica/*"`) {
		t.Errorf("replica policy does not cover the replica's objects:\n%s", s.ReplicaBucketPolicyJSON())
	}

	s.DenyInsecureTransport = false
	if s.BucketPolicyJSON() != "" || s.ReplicaBucketPolicyJSON() != "" {
		t.Errorf("policies without DenyInsecureTransport: %q, %q", s.BucketPolicyJSON(), s.ReplicaBucketPolicyJSON())
	}
	s.DenyInsecureTransport, s.Replica = true, nil
	if s.ReplicaBucketPolicyJSON() != "" {
		t.Errorf("replica policy without replica: %q", s.ReplicaBucketPolicyJSON())
	}
}

func TestPolicyDocumentsAreDeterministic(t *testing.T) {
	s := validSpec()
	for name, f := range map[string]func() string{
		"node": s.NodePolicyJSON, "bucket": s.BucketPolicyJSON, "replica bucket": s.ReplicaBucketPolicyJSON,
		"trust": s.ReplicationTrustPolicyJSON, "replication": s.ReplicationRolePolicyJSON,
	} {
		first := f()
		if first == "" || !json.Valid([]byte(first)) {
			t.Errorf("%s policy is not JSON: %q", name, first)
		}
		for range 20 {
			if again := f(); again != first {
				t.Fatalf("%s policy changed between calls:\n%s\n%s", name, first, again)
			}
		}
	}
}

func TestNodePolicyDocument(t *testing.T) {
	s := validSpec()
	doc := s.NodePolicy()
	if doc.Version != archive.PolicyVersion || len(doc.Statement) != 3 {
		t.Fatalf("NodePolicy = %+v", doc)
	}
	list := doc.Statement[0]
	if want := map[string]map[string][]string{"StringLike": {"s3:prefix": {"clusters/main/*", "clusters/main"}}}; !reflect.DeepEqual(list.Condition, want) {
		t.Errorf("ListBucket condition = %v, want %v", list.Condition, want)
	}
	if list.Principal != nil || strings.Contains(s.NodePolicyJSON(), "Principal") {
		t.Errorf("identity policy has a Principal:\n%s", s.NodePolicyJSON())
	}
	if got := doc.Statement[2].Resource; !reflect.DeepEqual(got, []string{keyEUW1}) {
		t.Errorf("KMS resource = %v", got)
	}
	s.Prefix = ""
	if c := s.NodePolicy().Statement[0].Condition; c != nil {
		t.Errorf("ListBucket condition at the bucket root = %v, want none", c)
	}
	if strings.Contains(s.NodePolicyJSON(), "Condition") {
		t.Errorf("JSON has a Condition at the bucket root:\n%s", s.NodePolicyJSON())
	}
	s.KMSKeyARN = ""
	if n := len(s.NodePolicy().Statement); n != 2 {
		t.Errorf("NodePolicy without KMS has %d statements, want 2", n)
	}
}

func TestReplicationPolicies(t *testing.T) {
	s := validSpec()
	trust := s.ReplicationTrustPolicyJSON()
	want := `{"Version":"2012-10-17","Statement":[{"Sid":"S3AssumeForReplication","Effect":"Allow",` +
		`"Principal":{"Service":"s3.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	if !archive.PolicyEqual(trust, want) {
		t.Errorf("trust policy:\n%s", trust)
	}
	s.KMSKeyARN, s.Replica.KMSKeyARN, s.ObjectLock = "", "", nil
	role := s.ReplicationRolePolicyJSON()
	for _, absent := range []string{"kms:", "GetObjectRetention"} {
		if strings.Contains(role, absent) {
			t.Errorf("role policy without KMS or Object Lock mentions %s:\n%s", absent, role)
		}
	}
	s.Replica = nil
	if s.ReplicationTrustPolicyJSON() != "" || s.ReplicationRolePolicyJSON() != "" {
		t.Error("replication policies without a replica")
	}
}

func TestPolicyEqual(t *testing.T) {
	base := validSpec().BucketPolicyJSON()
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"both empty", "", "", true},
		{"one empty", base, "", false},
		{"same", base, base, true},
		{"compact and single strings", base,
			`{"Version":"2012-10-17","Statement":{"Effect":"Deny","Principal":{"AWS":"*"},"Action":"S3:*",` +
				`"Resource":["arn:aws:s3:::pg-archive/*","arn:aws:s3:::pg-archive"],"Condition":{"Bool":{"aws:securetransport":false}}}}`, true},
		{"other Sid", base, strings.Replace(base, "DenyInsecureTransport", "TLSOnly", 1), true},
		{"statement order", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"a:b","Resource":"x"},{"Effect":"Deny","Action":"a:c","Resource":"y"}]}`,
			`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":["a:c"],"Resource":["y"]},{"Effect":"Allow","Action":["a:b"],"Resource":["x"]}]}`, true},
		{"other effect", base, strings.Replace(base, `"Deny"`, `"Allow"`, 1), false},
		{"other condition value", base, strings.Replace(base, `"false"`, `"true"`, 1), false},
		{"missing resource", base, strings.Replace(base, `"arn:aws:s3:::pg-archive/*"`, `"arn:aws:s3:::pg-archive"`, 1), false},
		{"resource case matters", base, strings.Replace(base, "pg-archive/*", "PG-ARCHIVE/*", 1), false},
		{"extra statement", base, `{"Version":"2012-10-17","Statement":[` + statementOf(base) + `,{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"*"}]}`, false},
		{"other version", base, strings.Replace(base, "2012-10-17", "2008-10-17", 1), false},
		{"not JSON", base, "{", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := archive.PolicyEqual(tc.a, tc.b); got != tc.want {
				t.Errorf("PolicyEqual = %v, want %v\n%s\n%s", got, tc.want, tc.a, tc.b)
			}
			if got := archive.PolicyEqual(tc.b, tc.a); got != tc.want {
				t.Errorf("PolicyEqual (swapped) = %v, want %v", got, tc.want)
			}
		})
	}
}

// statementOf returns the JSON of a document's first statement.
func statementOf(doc string) string {
	var d struct{ Statement []json.RawMessage }
	if err := json.Unmarshal([]byte(doc), &d); err != nil || len(d.Statement) == 0 {
		return "{}"
	}
	return string(d.Statement[0])
}
