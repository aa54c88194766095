package cluster

import (
	"errors"
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// ArchiveLocation is where s archives (archive.LocationOf its archiver's settings and stanza); ok is false
// without an archive or for a location pgnvme cannot read.
func (s Spec) ArchiveLocation() (archive.Location, bool) {
	if s.Archive == nil {
		return archive.Location{}, false
	}
	stanza := s.Archive.Stanza
	if stanza == "" {
		stanza = s.Name
	}
	return archive.LocationOf(s.Archive.PgBackRestOptions, s.Archive.WALGEnv, stanza)
}

// CheckArchiveBucket is the rule between s's archive bucket (b, as read from loc's bucket) and its backup
// policy: S3 must never delete by itself what a restore needs (a lifecycle rule that expires current
// objects under the archive's keys is refused at archive), and the policy's retention must not delete
// sooner than Object Lock keeps (a recovery window shorter than the default retention is refused at
// backup.retention.recovery_window_days: every version retention deletes would stay, locked and billed,
// and the window would not be what the bucket keeps).
func CheckArchiveBucket(s Spec, loc archive.Location, b archive.BucketRules) error {
	if s.Archive == nil {
		return nil
	}
	if exp := b.Expiring(loc); len(exp) > 0 {
		r := exp[0]
		when := fmt.Sprintf("after %d days", r.ExpirationDays)
		if r.ExpirationDays == 0 {
			when = "on a date"
		}
		return Errorf([]string{"archive"}, "Lifecycle Expires The Archive",
			"The lifecycle rule %q of bucket %s deletes current objects under %q %s, and the archive (%s) lies there: S3 would delete WAL "+
				"and base backups a restore needs, behind the backup retention's back. Remove the rule's expiration of current objects "+
				"(expiring noncurrent versions is fine), narrow its prefix, or archive elsewhere.", r.ID, loc.Bucket, r.Prefix, when, loc)
	}
	p := s.Archive.BackupPolicy()
	if b.Lock != nil && b.Lock.Days > p.RecoveryWindowDays {
		return Errorf([]string{"backup", "retention", "recovery_window_days"}, "Retention Shorter Than Object Lock",
			"Bucket %s keeps every object version for %d days (Object Lock, %s), but the backup retention keeps a recovery window of %d days: "+
				"what retention deletes would stay locked and billed for up to %d days, and the bucket would not hold what the policy says. "+
				"Set recovery_window_days to at least %d, or shorten the bucket's default retention.",
			loc.Bucket, b.Lock.Days, b.Lock.Mode, p.RecoveryWindowDays, b.Lock.Days, b.Lock.Days)
	}
	return nil
}

// StartArchiving is the one decision of both platforms before a cluster's archiving starts (a new cluster,
// not an interrupted create being finished): h is what the platform read at the location (readErr when it
// could not), own the cluster's system identifier ("" before initdb). Another cluster's history there is
// refused at archive (archive.CheckHistory); an unreadable location too, since what it holds is unknown.
func StartArchiving(h archive.History, readErr error, own string) error {
	if readErr != nil {
		return Errorf([]string{"archive"}, "Archive Not Readable",
			"Before a cluster starts archiving, pgnvme reads its archive location to make sure no other cluster's history is there, and it could not. "+
				"Nothing was changed. Make the location readable with the provider's credentials (S3: s3:ListBucket and s3:GetObject on it), or fix the archive settings.\n\n%v", readErr)
	}
	err := archive.CheckHistory(h, own)
	if fe := (*archive.ForeignHistoryError)(nil); errors.As(err, &fe) {
		return Errorf([]string{"archive"}, "Archive Holds Another Cluster's History", "%v", err)
	}
	return err
}
