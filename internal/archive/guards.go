package archive

import (
	"fmt"
	"strings"
)

// Guard values the archive always wants.
const (
	VersioningEnabled   = "Enabled"
	BucketOwnerEnforced = "BucketOwnerEnforced"
)

// IDs of the two lifecycle rules and of the replication rule.
const (
	RuleNoncurrentVersionExpiration = "noncurrent-version-expiration"
	RuleAbortIncompleteUpload       = "abort-incomplete-multipart-upload"
	ReplicationRuleID               = "pgnvme-replica"
)

// Guard names: the keys of Drift's result.
const (
	GuardVersioning        = "versioning"
	GuardPublicAccessBlock = "public_access_block"
	GuardObjectOwnership   = "object_ownership"
	GuardEncryption        = "encryption"
	GuardBucketPolicy      = "bucket_policy"
	GuardLifecycle         = "lifecycle"
	GuardReplication       = "replication"
	// GuardReplica is the replica bucket's own guards, reported by the adapter in one entry.
	GuardReplica = "replica"
)

// DriftOK is Drift's value for a guard that matches.
const DriftOK = "ok"

// DriftDeleteMarkersNotReplicated is part of the replication guard's drift when the replication rule does not
// replicate delete markers but should.
const DriftDeleteMarkersNotReplicated = "delete markers are not replicated"

// GuardNames are the guards s is checked for: the six every archive has, and replication and replica with a
// replica.
func (s Spec) GuardNames() []string {
	names := []string{GuardVersioning, GuardPublicAccessBlock, GuardObjectOwnership, GuardEncryption, GuardBucketPolicy, GuardLifecycle}
	if s.Replica != nil {
		names = append(names, GuardReplication, GuardReplica)
	}
	return names
}

// Desired is the guarded configuration of the archive bucket: versioning Enabled, all four public access
// blocks on, BucketOwnerEnforced, default encryption (SSE-KMS with the key and an S3 Bucket Key, or AES256),
// exactly two lifecycle rules over the whole bucket (expire noncurrent versions, abort incomplete multipart
// uploads; never an expiration of current objects: WAL-G's retention deletes WAL, and expiring it on its own
// breaks point-in-time recovery) and the TLS-only bucket policy. Replication is nil: the caller fills it in
// with DesiredReplication once the replication role exists.
func (s Spec) Desired() Guards {
	return s.guards(s.KMSKeyARN, s.BucketPolicyJSON())
}

// DesiredReplica is the guarded configuration of the replica bucket: the same guards with the replica's own
// key and TLS-only policy, and no replication. It is the zero Guards without a replica.
func (s Spec) DesiredReplica() Guards {
	if s.Replica == nil {
		return Guards{}
	}
	return s.guards(s.Replica.KMSKeyARN, s.ReplicaBucketPolicyJSON())
}

func (s Spec) guards(kmsKeyARN, policy string) Guards {
	enc := Encryption{Algorithm: SSEAES256}
	if kmsKeyARN != "" {
		enc = Encryption{Algorithm: SSEKMS, KMSKeyARN: kmsKeyARN, BucketKey: true}
	}
	return Guards{
		Versioning: VersioningEnabled,
		PublicAccessBlock: PublicAccessBlock{
			BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true,
		},
		ObjectOwnership: BucketOwnerEnforced,
		Encryption:      enc,
		Lifecycle: []LifecycleRule{
			{ID: RuleNoncurrentVersionExpiration, Enabled: true, NoncurrentExpirationDays: s.NoncurrentVersionExpirationDays},
			{ID: RuleAbortIncompleteUpload, Enabled: true, AbortIncompleteUploadDays: s.AbortIncompleteMultipartUploadDays},
		},
		PolicyJSON: policy,
	}
}

// DesiredReplication is the archive's replication rule towards the replica, run as roleARN: rule
// "pgnvme-replica", enabled, every object into the replica bucket in its storage class, re-encrypted with
// the replica's key when it has one, delete markers replicated. nil without a replica.
//
// When the archive uses SSE-KMS the adapter must also select SSE-KMS encrypted objects
// (SourceSelectionCriteria) and give ReplicaKMSKeyARN as the destination key: S3 skips KMS-encrypted objects
// otherwise.
func (s Spec) DesiredReplication(roleARN string) *Replication {
	if s.Replica == nil {
		return nil
	}
	return &Replication{
		RoleARN:              roleARN,
		RuleID:               ReplicationRuleID,
		Enabled:              true,
		DestinationBucketARN: s.ReplicaARN(),
		StorageClass:         s.Replica.StorageClass,
		ReplicaKMSKeyARN:     s.Replica.KMSKeyARN,
		DeleteMarkers:        !s.Replica.KeepDeleted,
	}
}

// Drift compares the live guards (got) with the wanted ones: one entry per guard (versioning,
// public_access_block, object_ownership, encryption, bucket_policy, lifecycle, and replication when either
// side has a replication rule), "ok" or a short sentence of what is live instead. Policies compare by
// meaning (PolicyEqual); lifecycle rules by ID and content, extra rules being drift.
func Drift(want, got Guards) map[string]string {
	d := map[string]string{
		GuardVersioning:        driftVersioning(want.Versioning, got.Versioning),
		GuardPublicAccessBlock: driftPublicAccessBlock(want.PublicAccessBlock, got.PublicAccessBlock),
		GuardObjectOwnership:   driftOwnership(want.ObjectOwnership, got.ObjectOwnership),
		GuardEncryption:        driftEncryption(want.Encryption, got.Encryption),
		GuardBucketPolicy:      driftPolicy(want.PolicyJSON, got.PolicyJSON),
		GuardLifecycle:         driftLifecycle(want.Lifecycle, got.Lifecycle),
	}
	if want.Replication != nil || got.Replication != nil {
		d[GuardReplication] = driftReplication(want.Replication, got.Replication)
	}
	return d
}

func driftVersioning(want, got string) string {
	switch {
	case want == got:
		return DriftOK
	case got == "":
		return "versioning was never enabled"
	default:
		return "versioning is " + got
	}
}

func driftPublicAccessBlock(want, got PublicAccessBlock) string {
	fields := []struct {
		name      string
		want, got bool
	}{
		{"BlockPublicAcls", want.BlockPublicAcls, got.BlockPublicAcls},
		{"IgnorePublicAcls", want.IgnorePublicAcls, got.IgnorePublicAcls},
		{"BlockPublicPolicy", want.BlockPublicPolicy, got.BlockPublicPolicy},
		{"RestrictPublicBuckets", want.RestrictPublicBuckets, got.RestrictPublicBuckets},
	}
	var off, on []string
	for _, f := range fields {
		switch {
		case f.want && !f.got:
			off = append(off, f.name)
		case !f.want && f.got:
			on = append(on, f.name)
		}
	}
	var parts []string
	if len(off) > 0 {
		parts = append(parts, strings.Join(off, ", ")+isAre(len(off))+" off")
	}
	if len(on) > 0 {
		parts = append(parts, strings.Join(on, ", ")+isAre(len(on))+" on")
	}
	if len(parts) == 0 {
		return DriftOK
	}
	return "public access block: " + strings.Join(parts, "; ")
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

func driftOwnership(want, got string) string {
	switch {
	case want == got:
		return DriftOK
	case got == "":
		return "no object ownership controls, want " + want
	default:
		return "object ownership is " + got + ", want " + want
	}
}

func describeEncryption(e Encryption) string {
	if e.Algorithm == SSEKMS {
		if e.KMSKeyARN == "" {
			return SSEKMS + " with the AWS managed key"
		}
		return SSEKMS + " with " + e.KMSKeyARN
	}
	return e.Algorithm
}

func driftEncryption(want, got Encryption) string {
	if want.Algorithm != SSEKMS {
		// An S3 Bucket Key only matters with SSE-KMS.
		want.BucketKey, got.BucketKey = false, false
	}
	switch {
	case want == got:
		return DriftOK
	case got.Algorithm == "":
		return "no default encryption, want " + describeEncryption(want)
	case got.Algorithm != want.Algorithm || got.KMSKeyARN != want.KMSKeyARN:
		return "encryption is " + describeEncryption(got) + ", want " + describeEncryption(want)
	case want.BucketKey:
		return "S3 Bucket Key is off, want on"
	default:
		return "S3 Bucket Key is on, want off"
	}
}

func driftPolicy(want, got string) string {
	switch {
	case PolicyEqual(want, got):
		return DriftOK
	case strings.TrimSpace(want) == "":
		return "a bucket policy is attached, want none"
	case strings.TrimSpace(got) == "":
		return "no bucket policy (TLS-only statement missing)"
	}
	if _, err := canonicalPolicy(got); err != nil {
		return "bucket policy is not a valid policy document"
	}
	if containsStatements(got, want) {
		return "bucket policy has statements besides the TLS-only one"
	}
	return "bucket policy was changed (TLS-only statement missing or altered)"
}

// containsStatements reports whether every statement of sub is in doc, by meaning.
func containsStatements(doc, sub string) bool {
	all, err := canonicalStatements(doc)
	if err != nil {
		return false
	}
	part, err := canonicalStatements(sub)
	if err != nil {
		return false
	}
	have := map[string]bool{}
	for _, s := range all {
		have[s] = true
	}
	for _, s := range part {
		if !have[s] {
			return false
		}
	}
	return true
}

func driftLifecycle(want, got []LifecycleRule) string {
	if len(got) == 0 && len(want) > 0 {
		return "no lifecycle configuration (noncurrent versions are never expired)"
	}
	var problems []string
	// Expiring current objects is the dangerous case: name it first.
	for _, r := range got {
		if r.Enabled && r.ExpirationDays > 0 {
			problems = append(problems, fmt.Sprintf("lifecycle rule %q expires current objects after %d days, which deletes WAL and breaks point-in-time recovery",
				r.ID, r.ExpirationDays))
		}
	}
	gotByID := map[string]LifecycleRule{}
	for _, r := range got {
		gotByID[r.ID] = r
	}
	wantIDs := map[string]bool{}
	for _, w := range want {
		wantIDs[w.ID] = true
		g, ok := gotByID[w.ID]
		if !ok {
			problems = append(problems, fmt.Sprintf("lifecycle rule %q is missing", w.ID))
			continue
		}
		problems = append(problems, ruleDiff(w, g)...)
	}
	for _, g := range got {
		if !wantIDs[g.ID] && (!g.Enabled || g.ExpirationDays == 0) {
			problems = append(problems, fmt.Sprintf("extra lifecycle rule %q", g.ID))
		}
	}
	if len(problems) == 0 {
		return DriftOK
	}
	return strings.Join(problems, "; ")
}

// ruleDiff describes how a live rule differs from the wanted rule of the same ID (ExpirationDays of an
// enabled rule is reported by the caller).
func ruleDiff(w, g LifecycleRule) []string {
	var out []string
	q := fmt.Sprintf("lifecycle rule %q", w.ID)
	if w.Enabled && !g.Enabled {
		out = append(out, q+" is disabled")
	}
	if g.Prefix != w.Prefix {
		if w.Prefix == "" {
			out = append(out, fmt.Sprintf("%s applies only to prefix %q, want the whole bucket", q, g.Prefix))
		} else {
			out = append(out, fmt.Sprintf("%s applies to prefix %q, want %q", q, g.Prefix, w.Prefix))
		}
	}
	if g.ExpirationDays != w.ExpirationDays && !g.Enabled {
		out = append(out, fmt.Sprintf("%s would expire current objects after %d days", q, g.ExpirationDays))
	}
	if g.NoncurrentExpirationDays != w.NoncurrentExpirationDays {
		out = append(out, fmt.Sprintf("%s %s, want %s", q, afterDays("expires noncurrent versions", g.NoncurrentExpirationDays),
			wantDays(w.NoncurrentExpirationDays)))
	}
	if g.AbortIncompleteUploadDays != w.AbortIncompleteUploadDays {
		out = append(out, fmt.Sprintf("%s %s, want %s", q, afterDays("aborts incomplete multipart uploads", g.AbortIncompleteUploadDays),
			wantDays(w.AbortIncompleteUploadDays)))
	}
	if g.Other != w.Other {
		if g.Other != "" {
			out = append(out, fmt.Sprintf("%s also %s", q, g.Other))
		} else {
			out = append(out, fmt.Sprintf("%s lacks: %s", q, w.Other))
		}
	}
	return out
}

// afterDays phrases what a rule does: "<what> after N days", or "never <what>" for 0 days.
func afterDays(what string, days int) string {
	if days == 0 {
		return "never " + what
	}
	return fmt.Sprintf("%s after %d days", what, days)
}

// wantDays phrases a wanted day count: "N days", or "none" for 0.
func wantDays(days int) string {
	if days == 0 {
		return "none"
	}
	return fmt.Sprintf("%d days", days)
}

func driftReplication(want, got *Replication) string {
	switch {
	case want == nil && got == nil:
		return DriftOK
	case want == nil:
		return fmt.Sprintf("replication rule %q to %s is configured, want none", got.RuleID, got.DestinationBucketARN)
	case got == nil:
		return "no replication configuration, want rule " + fmt.Sprintf("%q", want.RuleID) + " to " + want.DestinationBucketARN
	}
	var out []string
	if got.RuleID != want.RuleID {
		out = append(out, fmt.Sprintf("replication rule is %q, want %q", got.RuleID, want.RuleID))
	}
	if want.Enabled && !got.Enabled {
		out = append(out, "replication rule is disabled")
	} else if !want.Enabled && got.Enabled {
		out = append(out, "replication rule is enabled, want disabled")
	}
	if got.DestinationBucketARN != want.DestinationBucketARN {
		out = append(out, "replication goes to "+got.DestinationBucketARN+", want "+want.DestinationBucketARN)
	}
	if want.RoleARN != "" && got.RoleARN != want.RoleARN {
		out = append(out, "replication runs as "+orNone(got.RoleARN)+", want "+want.RoleARN)
	}
	if storageClass(got.StorageClass) != storageClass(want.StorageClass) {
		out = append(out, "replicas are stored as "+storageClass(got.StorageClass)+", want "+storageClass(want.StorageClass))
	}
	if got.ReplicaKMSKeyARN != want.ReplicaKMSKeyARN {
		out = append(out, "replicas are encrypted with "+keyOrAES(got.ReplicaKMSKeyARN)+", want "+keyOrAES(want.ReplicaKMSKeyARN))
	}
	if want.DeleteMarkers != got.DeleteMarkers {
		if want.DeleteMarkers {
			out = append(out, DriftDeleteMarkersNotReplicated)
		} else {
			out = append(out, "delete markers are replicated, want not")
		}
	}
	if len(out) == 0 {
		return DriftOK
	}
	return strings.Join(out, "; ")
}

func storageClass(c string) string {
	if c == "" {
		return "STANDARD"
	}
	return c
}

func keyOrAES(arn string) string {
	if arn == "" {
		return "the replica's default encryption"
	}
	return arn
}

func orNone(s string) string {
	if s == "" {
		return "no role"
	}
	return s
}
