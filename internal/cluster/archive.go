package cluster

import (
	"errors"

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
