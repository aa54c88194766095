package ec2cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// A cluster with a restore block is created from another archive: the plan and the apply both plan the
// restore (cluster.PlanRestore) from what that archive holds then, and the apply's form step launches
// every node with the user-data of that restore (awsspec.RenderClone). The node that takes the new etcd
// cluster's initialize key restores; the others are copied from it.

// restorePlan is the restore of the cluster (which has a restore block) from its source archive, read in
// the source's region (else the cluster's) with the provider's credentials.
func (se *session) restorePlan(ctx context.Context) (cluster.RestorePlan, error) {
	from, _ := se.s.RestoreLocation()
	h, err := se.sourceHealth(ctx, from)
	return cluster.PlanRestore(se.s, h, err)
}

// sourceHealth reads the archive at loc (no cluster of it runs here: its WAL and base backups only).
func (se *session) sourceHealth(ctx context.Context, loc archive.Location) (*archive.Health, error) {
	if loc.Bucket == "" {
		return nil, fmt.Errorf("%s is not an S3 location", loc)
	}
	api, err := se.archiveReader(ctx, loc)
	if err != nil {
		return nil, err
	}
	r := archive.Reading{Tool: loc.Tool}
	if err := readArchive(ctx, api, loc, &r); err != nil {
		return nil, err
	}
	if err := awsclient.ReadWALGBackupPositions(ctx, api, loc, r.Backups); err != nil {
		return nil, err
	}
	h := archive.Assess(r, se.p.clock.Now())
	return &h, nil
}

// restoreSummary is the plan's words for p on EC2, where Patroni chooses the node that restores.
func (se *session) restoreSummary(p cluster.RestorePlan) string {
	names := se.s.NodeNames()
	first := "the node that takes Patroni's initialize key (one of " + strings.Join(names, ", ") + ")"
	var others []string
	if len(names) > 1 {
		others = []string{"the other nodes"}
	}
	return p.Summary(first, others)
}

// renderClone is each node's user-data for the create of a cluster restored as p planned.
func (se *session) renderClone(t target, addrs map[string]string, p cluster.RestorePlan) (map[string][]byte, error) {
	data, _, err := se.renderWith(func(s cluster.Spec, region string, addrs map[string]string, allowed []string, facts awsspec.Facts) (map[string]bootstrap.UserData, error) {
		return awsspec.RenderClone(s, region, addrs, allowed, facts, p)
	}, t, addrs)
	return data, err
}

// restored is what the restore that created the cluster did, as its first primary recorded it in the
// cluster's own archive (nil before it has, or without a restore block).
func (se *session) restored(ctx context.Context) (*cluster.RestoreResult, error) {
	if se.s.Restore == nil {
		return nil, nil
	}
	loc, api, ok, err := se.archive(ctx)
	if !ok || err != nil {
		return nil, err
	}
	data, err := awsclient.ReadArchiveRestored(ctx, api, loc)
	if err != nil {
		return nil, err
	}
	return cluster.ParseRestored(data)
}
