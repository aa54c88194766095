package cluster

import (
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// ArchiveEnd is what h says a restore to the end of the archive starts from and reaches, as topology's
// plan of a cluster whose every node is lost takes it (topology.Desired.Archive): the newest base backup
// and when it finished, the newest segment and when it arrived, and the first segment missing.
func ArchiveEnd(h archive.Health) *topology.ArchiveEnd {
	end := &topology.ArchiveEnd{LastWAL: h.LastArchived, LastWALAt: h.LastArchivedAt, Hole: h.Hole}
	if b, err := archive.RestoreBackup(h, time.Time{}); err == nil { // the end of the archive: its newest backup
		end.Backup = b.Label
		if b.Stop > 0 {
			end.BackupAt = time.Unix(b.Stop, 0).UTC()
		}
	}
	return end
}
