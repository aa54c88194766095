package cluster_test

import (
	"errors"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// TestCheckArchiveBucket: a lifecycle rule that expires current objects under the archive's keys is
// refused at archive; Object Lock longer than the recovery window at backup.retention.recovery_window_days;
// expiring noncurrent versions, a rule elsewhere in the bucket and a window at least the lock's pass.
func TestCheckArchiveBucket(t *testing.T) {
	window := func(days int) cluster.Spec {
		return cluster.FromInput(cluster.Input{Name: "demo", Archive: &cluster.ArchiveInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/clusters/demo"}},
			Backup: &cluster.BackupInput{RecoveryWindowDays: &days}})
	}
	s := window(7)
	loc, ok := s.ArchiveLocation()
	if !ok {
		t.Fatal("no archive location")
	}
	rule := func(prefix string, days int, noncurrent int) archive.LifecycleRule {
		return archive.LifecycleRule{ID: "r", Enabled: true, Prefix: prefix, ExpirationDays: days, NoncurrentExpirationDays: noncurrent}
	}
	for _, tc := range []struct {
		name  string
		s     cluster.Spec
		rules archive.BucketRules
		at    []string
	}{
		{"nothing", s, archive.BucketRules{}, nil},
		{"noncurrent versions only", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{rule("", 0, 30)}}, nil},
		{"another prefix", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{rule("logs/", 7, 0)}}, nil},
		{"whole bucket", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{rule("", 90, 0)}}, []string{"archive"}},
		{"a parent prefix", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{rule("clusters/", 90, 0)}}, []string{"archive"}},
		{"inside the WAL", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{rule("clusters/demo/wal_005/0000", 90, 0)}}, []string{"archive"}},
		{"on a date", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{{ID: "d", Enabled: true, ExpiresOnDate: true}}}, []string{"archive"}},
		{"disabled", s, archive.BucketRules{Lifecycle: []archive.LifecycleRule{{ID: "d", Prefix: "", ExpirationDays: 1}}}, nil},
		{"lock longer than the window", s, archive.BucketRules{Lock: &archive.ObjectLock{Mode: "COMPLIANCE", Days: 8}}, []string{"backup", "retention", "recovery_window_days"}},
		{"lock as long as the window", s, archive.BucketRules{Lock: &archive.ObjectLock{Mode: "COMPLIANCE", Days: 7}}, nil},
		{"count only under a lock", window(0), archive.BucketRules{Lock: &archive.ObjectLock{Mode: "GOVERNANCE", Days: 1}}, []string{"backup", "retention", "recovery_window_days"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cluster.CheckArchiveBucket(tc.s, loc, tc.rules)
			var fe *cluster.FieldError
			switch {
			case tc.at == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.at != nil && !errors.As(err, &fe):
				t.Fatalf("not refused (%v), want a problem at %v", err, tc.at)
			case tc.at != nil && !equal(fe.Path, tc.at):
				t.Fatalf("refused at %v, want %v: %v", fe.Path, tc.at, err)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
