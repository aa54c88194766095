package ec2cluster

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

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
	return cluster.PlanRestore(se.s, se.s.MajorOrDefault(), h, err)
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
	return awsclient.ReadSourceHealth(ctx, api, loc, se.p.clock.Now())
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

// waitRestored is waitWhole for the launch of a restore (of the cluster from its own archive, or of a new
// cluster from another), for timeout (cluster.RestoreWait: the restore's size at a floor rate; never less
// than the usual wait): it also gives the restore up once the attempts the nodes noted since the launch
// (those not in before, listed just before it) show that it keeps failing (cluster.RestoreGivenUp), rather
// than waiting out the timeout while a node tries again and again. Each poll lists the attempts and reads
// only those it has not read yet. An archive that cannot be read is only logged: the wait goes on.
func (se *session) waitRestored(ctx context.Context, what string, before map[string]bool, clone bool, timeout time.Duration) error {
	if timeout < se.p.timeouts.Healthy {
		timeout = se.p.timeouts.Healthy
	}
	tflog.Info(ctx, "waiting for the restore", map[string]any{"timeout_seconds": timeout.Seconds()})
	read, attempts := maps.Clone(before), map[string]string{}
	return se.waitStreamingOr(ctx, se.s.NodeNames(), what, timeout, func(ctx context.Context) error {
		if err := se.readRestoreAttempts(ctx, read, attempts); err != nil {
			tflog.Warn(ctx, "reading the restore's attempts", map[string]any{"error": err.Error()})
		}
		return cluster.RestoreGivenUp(cluster.RestoreAttemptsOf(attempts), clone)
	})
}

// readRestoreAttempts adds to attempts (key to content) the restore attempts noted in the cluster's own
// archive (archive.Location.RestoreAttemptsKey) whose keys are not in read, and adds their keys to read.
func (se *session) readRestoreAttempts(ctx context.Context, read map[string]bool, attempts map[string]string) error {
	loc, api, ok, err := se.archive(ctx)
	if !ok || err != nil {
		return err
	}
	found, err := awsclient.ReadRestoreAttempts(ctx, api, loc, read)
	for _, a := range found {
		read[a.Key], attempts[a.Key] = true, a.Text
	}
	return err
}

// restoreAttemptsBefore are the keys of the restore attempts noted before a launch (none when the archive
// cannot be read: then every attempt counts, which at worst stops a restore that failed twice before).
func (se *session) restoreAttemptsBefore(ctx context.Context) map[string]bool {
	known := map[string]bool{}
	loc, api, ok, err := se.archive(ctx)
	var keys []string
	if ok && err == nil {
		keys, err = awsclient.ListRestoreAttempts(ctx, api, loc)
	}
	if err != nil {
		tflog.Warn(ctx, "listing the restore's earlier attempts", map[string]any{"error": err.Error()})
	}
	for _, k := range keys {
		known[k] = true
	}
	return known
}
