package localcluster

// What a new cluster's plan and create check before anything is made: the archive location (its bucket's
// rules, no history there), and whether the configuration is a replacement of the cluster under the same
// data directory, the unfinished create of this very cluster (resumed), or an unfinished restore (started
// over).

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// checkArchiveBucket holds s's backup policy to the Object Lock and lifecycle rules of the bucket its
// pgBackRest repository is in (cluster.CheckArchiveBucket, the EC2 platform's rule), read with the
// repository's own endpoint and credentials (awsclient.S3ForPgBackRest). A repository on disk has none; a
// bucket whose rules cannot be read (an S3 service without these APIs, credentials without
// s3:GetBucketObjectLockConfiguration or s3:GetLifecycleConfiguration) is logged, not refused.
func checkArchiveBucket(ctx context.Context, s cluster.Spec) error {
	loc, ok := s.ArchiveLocation()
	if !ok || loc.Bucket == "" || loc.Tool != archive.ToolPgBackRest {
		return nil
	}
	api, err := awsclient.S3ForPgBackRest(ctx, s.Archive.PgBackRestOptions)
	if err == nil {
		var b archive.BucketRules
		if b, err = awsclient.ReadBucketRules(ctx, api, loc.Bucket); err == nil {
			return cluster.CheckArchiveBucket(s, loc, b)
		}
	}
	tflog.Warn(ctx, "the archive bucket's Object Lock and lifecycle rules could not be read, so the backup policy was not checked against them",
		map[string]any{"bucket": loc.Bucket, "error": err.Error()})
	return nil
}

// startArchiving is cluster.StartArchiving for a cluster not created yet: its archive location must hold
// no history (a replaced cluster's included: the new one would be another system).
func startArchiving(ctx context.Context, m *Manager, ls Spec) error {
	h, err := m.ArchiveHistory(ctx, ls)
	return cluster.StartArchiving(h, err, "")
}

// replaced is the cluster of the same name whose manifest lies under s's data directory root while s is
// planned as new and is not an unfinished create of it: the cluster a replacement destroys first.
func replaced(s Spec) (Spec, bool) {
	root, err := DataDirRoot(s)
	if err != nil {
		return Spec{}, false
	}
	old, err := ReadManifest(root)
	if err != nil || old.Name != s.Name {
		return Spec{}, false
	}
	return old, true
}

// resumable reports whether s's data directory root holds the manifest of an unfinished create of this
// very cluster: same name and the same members (names, ports, data directories). An interrupted apply
// leaves that behind without any state; Create then finishes it instead of refusing.
func resumable(s Spec) bool {
	root, err := DataDirRoot(s)
	if err != nil {
		return false
	}
	old, err := ReadManifest(root)
	if err != nil || old.Name != s.Name || len(old.Members) != len(s.Members) {
		return false
	}
	for i := range old.Members {
		a, b := old.Members[i], s.Members[i]
		if a.Name != b.Name || a.Port != b.Port || filepath.Clean(a.DataDir) != filepath.Clean(b.DataDir) {
			return false
		}
	}
	return true
}

// restoreStartsOver reports whether ls, a cluster with a restore block, is an unfinished create (see
// resumable) in which no member holds data yet: its restore was interrupted before the primary was promoted
// (an apply that failed there removes what it restored itself; one that was killed cannot). The create then
// starts over, after removing what was left, instead of being resumed: there is nothing to resume from, and
// topology would otherwise create an empty cluster.
func (m *Manager) restoreStartsOver(ctx context.Context, ls Spec) (bool, error) {
	if ls.Restore == nil || !resumable(ls) {
		return false, nil
	}
	st, err := m.Observe(ctx, ls)
	if err != nil {
		return false, fmt.Errorf("reading the unfinished cluster %s: %w", ls.Name, err)
	}
	for _, x := range st {
		if x.State != StateMissing {
			return false, nil
		}
	}
	return true, nil
}
