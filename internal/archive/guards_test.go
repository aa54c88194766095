package archive_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestDesired(t *testing.T) {
	s := validSpec()
	allBlocked := archive.PublicAccessBlock{BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true}
	want := archive.Guards{
		Versioning:        "Enabled",
		PublicAccessBlock: allBlocked,
		ObjectOwnership:   "BucketOwnerEnforced",
		Encryption:        archive.Encryption{Algorithm: "aws:kms", KMSKeyARN: keyEUW1, BucketKey: true},
		Lifecycle: []archive.LifecycleRule{
			{ID: "noncurrent-version-expiration", Enabled: true, NoncurrentExpirationDays: 7},
			{ID: "abort-incomplete-multipart-upload", Enabled: true, AbortIncompleteUploadDays: 1},
		},
		PolicyJSON: s.BucketPolicyJSON(),
	}
	if got := s.Desired(); !reflect.DeepEqual(got, want) {
		t.Errorf("Desired:\n got %+v\nwant %+v", got, want)
	}

	replica := want
	replica.Encryption = archive.Encryption{Algorithm: "aws:kms", KMSKeyARN: keyEUC1, BucketKey: true}
	replica.PolicyJSON = s.ReplicaBucketPolicyJSON()
	if got := s.DesiredReplica(); !reflect.DeepEqual(got, replica) {
		t.Errorf("DesiredReplica:\n got %+v\nwant %+v", got, replica)
	}

	aes := archive.Spec{Bucket: "pg", Region: "us-east-1", NoncurrentVersionExpirationDays: 30, AbortIncompleteMultipartUploadDays: 2}
	g := aes.Desired()
	if g.Encryption != (archive.Encryption{Algorithm: "AES256"}) || g.PolicyJSON != "" || g.Replication != nil {
		t.Errorf("Desired without KMS or TLS policy: %+v", g)
	}
	if g.Lifecycle[0].NoncurrentExpirationDays != 30 || g.Lifecycle[1].AbortIncompleteUploadDays != 2 {
		t.Errorf("lifecycle days: %+v", g.Lifecycle)
	}
	for _, r := range g.Lifecycle {
		if r.ExpirationDays != 0 || r.Prefix != "" {
			t.Errorf("rule %+v expires current objects or is not over the whole bucket", r)
		}
	}
	if got := aes.DesiredReplica(); !reflect.DeepEqual(got, archive.Guards{}) {
		t.Errorf("DesiredReplica without replica = %+v", got)
	}
}

func TestDesiredReplication(t *testing.T) {
	s := validSpec()
	role := "arn:aws:iam::111122223333:role/pgnvme-replication-pg-archive"
	want := &archive.Replication{
		RoleARN: role, RuleID: "pgnvme-replica", Enabled: true,
		DestinationBucketARN: "arn:aws:s3:::pg-archive-replica", StorageClass: "STANDARD_IA",
		ReplicaKMSKeyARN: keyEUC1, DeleteMarkers: true,
	}
	if got := s.DesiredReplication(role); !reflect.DeepEqual(got, want) {
		t.Errorf("DesiredReplication:\n got %+v\nwant %+v", got, want)
	}
	s.Replica = nil
	if got := s.DesiredReplication(role); got != nil {
		t.Errorf("DesiredReplication without replica = %+v", got)
	}
}

func TestDrift(t *testing.T) {
	s := validSpec()
	role := "arn:aws:iam::111122223333:role/r"
	want := s.Desired()
	want.Replication = s.DesiredReplication(role)
	allOK := map[string]string{
		"versioning": "ok", "public_access_block": "ok", "object_ownership": "ok", "encryption": "ok",
		"bucket_policy": "ok", "lifecycle": "ok", "replication": "ok",
	}
	clone := func(g archive.Guards) archive.Guards {
		g.Lifecycle = append([]archive.LifecycleRule(nil), g.Lifecycle...)
		if g.Replication != nil {
			r := *g.Replication
			g.Replication = &r
		}
		return g
	}
	for _, tc := range []struct {
		name  string
		edit  func(*archive.Guards)
		guard string
		want  string
	}{
		{"nothing", func(*archive.Guards) {}, "", ""},
		{"versioning suspended", func(g *archive.Guards) { g.Versioning = "Suspended" }, "versioning", "versioning is Suspended"},
		{"versioning never enabled", func(g *archive.Guards) { g.Versioning = "" }, "versioning", "versioning was never enabled"},
		{"one public access block off", func(g *archive.Guards) { g.PublicAccessBlock.BlockPublicPolicy = false },
			"public_access_block", "public access block: BlockPublicPolicy is off"},
		{"all public access blocks off", func(g *archive.Guards) { g.PublicAccessBlock = archive.PublicAccessBlock{} },
			"public_access_block", "public access block: BlockPublicAcls, IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets are off"},
		{"object writer", func(g *archive.Guards) { g.ObjectOwnership = "ObjectWriter" },
			"object_ownership", "object ownership is ObjectWriter, want BucketOwnerEnforced"},
		{"no ownership controls", func(g *archive.Guards) { g.ObjectOwnership = "" },
			"object_ownership", "no object ownership controls, want BucketOwnerEnforced"},
		{"AES256 instead of KMS", func(g *archive.Guards) { g.Encryption = archive.Encryption{Algorithm: "AES256"} },
			"encryption", "encryption is AES256, want aws:kms with " + keyEUW1},
		{"another key", func(g *archive.Guards) { g.Encryption.KMSKeyARN = keyEUC1 },
			"encryption", "encryption is aws:kms with " + keyEUC1 + ", want aws:kms with " + keyEUW1},
		{"AWS managed key", func(g *archive.Guards) { g.Encryption.KMSKeyARN = "" },
			"encryption", "encryption is aws:kms with the AWS managed key, want aws:kms with " + keyEUW1},
		{"bucket key off", func(g *archive.Guards) { g.Encryption.BucketKey = false }, "encryption", "S3 Bucket Key is off, want on"},
		{"no encryption", func(g *archive.Guards) { g.Encryption = archive.Encryption{} },
			"encryption", "no default encryption, want aws:kms with " + keyEUW1},
		{"policy removed", func(g *archive.Guards) { g.PolicyJSON = "" }, "bucket_policy", "no bucket policy (TLS-only statement missing)"},
		{"policy reformatted", func(g *archive.Guards) {
			g.PolicyJSON = `{"Version":"2012-10-17","Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*",` +
				`"Resource":["arn:aws:s3:::pg-archive/*","arn:aws:s3:::pg-archive"],"Condition":{"Bool":{"aws:SecureTransport":"false"}}}}`
		}, "", ""},
		{"policy changed", func(g *archive.Guards) {
			g.PolicyJSON = `{"Version":"2012-10-17","Statement":{"Effect":"Deny","Principal":"*","Action":"s3:PutObject",` +
				`"Resource":"arn:aws:s3:::pg-archive/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}}`
		}, "bucket_policy", "bucket policy was changed (TLS-only statement missing or altered)"},
		{"policy extended", func(g *archive.Guards) {
			g.PolicyJSON = `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*",` +
				`"Resource":["arn:aws:s3:::pg-archive/*","arn:aws:s3:::pg-archive"],"Condition":{"Bool":{"aws:SecureTransport":"false"}}},` +
				`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pg-archive/*"}]}`
		}, "bucket_policy", "bucket policy has statements besides the TLS-only one"},
		{"policy garbage", func(g *archive.Guards) { g.PolicyJSON = "{" }, "bucket_policy", "bucket policy is not a valid policy document"},
		{"current objects expire", func(g *archive.Guards) {
			g.Lifecycle = append(g.Lifecycle, archive.LifecycleRule{ID: "x", Enabled: true, ExpirationDays: 30})
		}, "lifecycle", `lifecycle rule "x" expires current objects after 30 days, which deletes WAL and breaks point-in-time recovery`},
		{"our rule expires current objects", func(g *archive.Guards) { g.Lifecycle[0].ExpirationDays = 30 },
			"lifecycle", `lifecycle rule "noncurrent-version-expiration" expires current objects after 30 days, which deletes WAL and breaks point-in-time recovery`},
		{"extra harmless rule", func(g *archive.Guards) {
			g.Lifecycle = append(g.Lifecycle, archive.LifecycleRule{ID: "ia", Enabled: true, Other: "transitions to STANDARD_IA after 30 days"})
		}, "lifecycle", `extra lifecycle rule "ia"`},
		{"rule missing", func(g *archive.Guards) { g.Lifecycle = g.Lifecycle[:1] },
			"lifecycle", `lifecycle rule "abort-incomplete-multipart-upload" is missing`},
		{"no lifecycle", func(g *archive.Guards) { g.Lifecycle = nil },
			"lifecycle", "no lifecycle configuration (noncurrent versions are never expired)"},
		{"rule disabled", func(g *archive.Guards) { g.Lifecycle[1].Enabled = false },
			"lifecycle", `lifecycle rule "abort-incomplete-multipart-upload" is disabled`},
		{"other days", func(g *archive.Guards) { g.Lifecycle[0].NoncurrentExpirationDays = 30 },
			"lifecycle", `lifecycle rule "noncurrent-version-expiration" expires noncurrent versions after 30 days, want 7 days`},
		{"days removed", func(g *archive.Guards) { g.Lifecycle[1].AbortIncompleteUploadDays = 0 },
			"lifecycle", `lifecycle rule "abort-incomplete-multipart-upload" never aborts incomplete multipart uploads, want 1 days`},
		{"rule narrowed", func(g *archive.Guards) { g.Lifecycle[0].Prefix = "logs/" },
			"lifecycle", `lifecycle rule "noncurrent-version-expiration" applies only to prefix "logs/", want the whole bucket`},
		{"rule does more", func(g *archive.Guards) { g.Lifecycle[0].Other = "transitions to GLACIER after 1 day" },
			"lifecycle", `lifecycle rule "noncurrent-version-expiration" also transitions to GLACIER after 1 day`},
		{"rules reordered", func(g *archive.Guards) { g.Lifecycle[0], g.Lifecycle[1] = g.Lifecycle[1], g.Lifecycle[0] }, "", ""},
		{"two problems", func(g *archive.Guards) {
			g.Lifecycle[0].Enabled = false
			g.Lifecycle[1].AbortIncompleteUploadDays = 3
		}, "lifecycle", `lifecycle rule "noncurrent-version-expiration" is disabled; lifecycle rule "abort-incomplete-multipart-upload" aborts incomplete multipart uploads after 3 days, want 1 days`},
		{"replication removed", func(g *archive.Guards) { g.Replication = nil },
			"replication", `no replication configuration, want rule "pgnvme-replica" to arn:aws:s3:::pg-archive-replica`},
		{"replication disabled", func(g *archive.Guards) { g.Replication.Enabled = false }, "replication", "replication rule is disabled"},
		{"replication elsewhere", func(g *archive.Guards) { g.Replication.DestinationBucketARN = "arn:aws:s3:::other" },
			"replication", "replication goes to arn:aws:s3:::other, want arn:aws:s3:::pg-archive-replica"},
		{"replication role", func(g *archive.Guards) { g.Replication.RoleARN = "arn:aws:iam::111122223333:role/x" },
			"replication", "replication runs as arn:aws:iam::111122223333:role/x, want " + role},
		{"replication storage class", func(g *archive.Guards) { g.Replication.StorageClass = "" },
			"replication", "replicas are stored as STANDARD, want STANDARD_IA"},
		{"replica key", func(g *archive.Guards) { g.Replication.ReplicaKMSKeyARN = "" },
			"replication", "replicas are encrypted with the replica's default encryption, want " + keyEUC1},
		{"delete markers", func(g *archive.Guards) { g.Replication.DeleteMarkers = false }, "replication", "delete markers are not replicated"},
		{"rule renamed", func(g *archive.Guards) { g.Replication.RuleID = "mine" }, "replication", `replication rule is "mine", want "pgnvme-replica"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clone(want)
			tc.edit(&got)
			wantDrift := maps.Clone(allOK)
			if tc.guard != "" {
				wantDrift[tc.guard] = tc.want
			}
			if d := archive.Drift(want, got); !maps.Equal(d, wantDrift) {
				t.Errorf("Drift:\n got %v\nwant %v", d, wantDrift)
			}
		})
	}
}

func TestDriftReplicationKey(t *testing.T) {
	s := validSpec()
	s.Replica = nil
	want := s.Desired()
	d := archive.Drift(want, want)
	if _, ok := d["replication"]; ok || len(d) != 6 {
		t.Errorf("Drift without replication on either side = %v, want six guards and no replication key", d)
	}
	got := want
	got.Replication = &archive.Replication{RuleID: "old", DestinationBucketARN: "arn:aws:s3:::old-replica", Enabled: true}
	if v := archive.Drift(want, got)["replication"]; v != `replication rule "old" to arn:aws:s3:::old-replica is configured, want none` {
		t.Errorf("unwanted replication: %q", v)
	}
	// The role ARN is unknown before IAM answers: a want without it does not compare roles.
	rs := validSpec()
	wantNoRole := rs.Desired()
	wantNoRole.Replication = rs.DesiredReplication("")
	gotRole := rs.Desired()
	gotRole.Replication = rs.DesiredReplication("arn:aws:iam::111122223333:role/r")
	if v := archive.Drift(wantNoRole, gotRole)["replication"]; v != "ok" {
		t.Errorf("replication with an unknown wanted role: %q", v)
	}
	// An unwanted bucket policy is drift too.
	aes := archive.Spec{Bucket: "pg", Region: "us-east-1", NoncurrentVersionExpirationDays: 7, AbortIncompleteMultipartUploadDays: 1}
	w := aes.Desired()
	g := w
	g.PolicyJSON = validSpec().BucketPolicyJSON()
	if v := archive.Drift(w, g)["bucket_policy"]; v != "a bucket policy is attached, want none" {
		t.Errorf("unwanted policy: %q", v)
	}
	// A Bucket Key reported on an AES256 bucket is not drift: it only matters with SSE-KMS.
	g = w
	g.Encryption.BucketKey = true
	if v := archive.Drift(w, g)["encryption"]; v != "ok" {
		t.Errorf("AES256 with a Bucket Key flag: %q", v)
	}
}
