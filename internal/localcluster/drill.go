package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Drill is a restore drill: a backup of an archive restored, as a restore of a cluster would, into a
// scratch node on this machine, checked, and removed.
type Drill struct {
	// Restore is what is restored: the archive (pgBackRest options and stanza), the backup and the target,
	// as a restore block gives them.
	Restore cluster.Restore
	// CheckSQL, when set, is a query the restored database must answer with one true value.
	CheckSQL string
	// WorkDir holds the scratch node's directory (os.TempDir() when ""); Port is its port on 127.0.0.1.
	WorkDir string
	Port    int
}

// DrillResult is what a drill found.
type DrillResult struct {
	// Plan is the restore's plan (the backup chosen for the target), Restored what the restore did.
	Plan     cluster.RestorePlan
	Restored cluster.RestoreResult
	// Health is the archive as read before the restore.
	Health archive.Health
	// Verified is true when the archive passed every check (pgbackrest verify: every file of every backup
	// and every WAL segment against its checksum; the WAL continuous from the oldest backup to the newest
	// segment; the restore reaching the archive's end when it had no target), Detail says what failed (or
	// what was checked).
	Verified bool
	Detail   string
	// CheckOK is the check query's answer (nil without one).
	CheckOK *bool
}

// RunDrill runs drill d: the restore's plan from what the archive holds (cluster.PlanRestoreAt, its errors
// at the attribute under root), `pgbackrest restore` of the chosen backup into a scratch node with
// archiving off (a drill never writes to the archive it reads), archive recovery to the target and
// promotion, the check query, `pgbackrest verify` and the WAL's continuity; then the scratch node is
// removed, also on error. A restore that fails is an error; a verification or check that fails is a result.
func (m *Manager) RunDrill(ctx context.Context, root []string, d Drill) (out DrillResult, err error) {
	opts, stanza := d.Restore.Archive.PgBackRestOptions, d.Restore.Archive.Stanza
	from, ok := archive.LocationOf(opts, nil, stanza)
	if !ok {
		return out, cluster.Errorf(append(root, "archive"), "Archive Not Readable Here", "The drill reads pgBackRest repositories of type posix or s3; "+
			"%s is neither.", opts["repo1-type"])
	}
	if m.pgbackrest == "" {
		return out, errors.New("pgBackRest is not installed on the machine that runs Terraform, and the drill restores with it: install the pgbackrest package " +
			"(apt-get install pgbackrest)")
	}
	h, err := m.readHealth(ctx, opts, stanza, archive.Reading{Tool: archive.ToolPgBackRest}, nil)
	plan, err := cluster.PlanRestoreAt(root, d.Restore, from, h, err)
	if err != nil {
		return out, err
	}
	out.Plan, out.Health = plan, *h
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return out, err
	}

	dir, err := os.MkdirTemp(d.WorkDir, "pgnvme-drill-")
	if err != nil {
		return out, fmt.Errorf("making the drill's scratch directory: %w", err)
	}
	uid, gid := m.engine.RunAsIDs()
	if err := os.Chown(dir, uid, gid); err != nil && !errors.Is(err, os.ErrPermission) {
		return out, err
	}
	mb := Member{Name: "drill", Zone: "local", Port: d.Port, DataDir: filepath.Join(dir, "data")}
	s := Spec{Name: stanza, Members: []Member{mb}, Synchronous: bootstrap.Synchronous{Method: "any", DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn},
		Archive: &bootstrap.Archive{PgBackRestOptions: opts, Stanza: stanza}}
	n := Node(mb, localnode.RolePrimary)
	defer func() {
		if derr := m.engine.Destroy(context.WithoutCancel(ctx), n); derr != nil {
			err = errors.Join(err, derr)
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	async := ""
	r, err := m.render(s, major, mb, localnode.RolePrimary, mb, &async)
	if err != nil {
		return out, err
	}
	// The drill reads the archive and never writes to it: no archiving, no restore_command but pgBackRest's.
	r.Parameters["archive_mode"] = "off"
	delete(r.Parameters, "archive_command")
	delete(r.Parameters, "restore_command")
	if err := m.writePgBackRest(mb, r); err != nil {
		return out, err
	}
	start := time.Now()
	tflog.Info(ctx, "restore drill: restoring into a scratch node", map[string]any{"from": from.String(), "backup": plan.Backup.Label, "target": plan.Target.String(), "dir": dir})
	hole := ""
	if h.Hole != "" {
		hole = fmt.Sprintf(" (the archive misses WAL segment %s)", h.Hole)
	}
	if err := m.recoverFrom(ctx, s, mb, r.Parameters, filepath.Join(pgBackRestDir(mb), "pgbackrest.conf"), stanza, restoreArgs(plan)...); err != nil {
		return out, fmt.Errorf("restoring %s from %s%s: %w", plan.Backup.Label, from, hole, err)
	}
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return out, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if out.Restored, err = recoveryResult(ctx, conn, plan, start); err != nil {
		return out, err
	}
	if d.CheckSQL != "" {
		ok, err := conn.CheckTrue(ctx, d.CheckSQL)
		if err != nil {
			return out, cluster.Errorf(append(root, "check_sql"), "Check Query Failed", "The restored database could not answer check_sql: %v", err)
		}
		out.CheckOK = &ok
	}
	_ = conn.Close(ctx)
	out.Verified, out.Detail = m.verifyArchive(ctx, opts, stanza, *h, plan, out.Restored.ReachedLSN)
	tflog.Info(ctx, "restore drill done", map[string]any{"seconds": out.Restored.Seconds, "verified": out.Verified, "detail": out.Detail})
	return out, nil
}

// verifyArchive checks the archive a drill restored from: `pgbackrest verify` (every backup file and WAL
// segment against its checksum and size), the WAL's continuity (h.Hole) and, for a restore to the end of the
// archive, that replay reached the newest segment (it stops at the first segment it cannot fetch).
func (m *Manager) verifyArchive(ctx context.Context, opts map[string]string, stanza string, h archive.Health, plan cluster.RestorePlan, reached string) (bool, string) {
	var problems []string
	var verify string
	_, err := m.withLocation(ctx, opts, stanza, func(_ archive.Location, run pgbackrestRun) error {
		var err error
		verify, err = run("--output=text", "--verbose", "verify")
		return err
	})
	switch {
	case err != nil:
		problems = append(problems, "pgbackrest verify failed: "+err.Error())
	case !strings.Contains(verify, "status: ok"):
		problems = append(problems, "pgbackrest verify found errors:\n"+strings.TrimSpace(verify))
	}
	if h.Hole != "" {
		problems = append(problems, fmt.Sprintf("WAL segment %s is missing: no restore can replay past it, though the archive holds segments up to %s", h.Hole, h.LastArchived))
	}
	if plan.Target.End() && h.LastArchived != "" && h.Hole == "" {
		if lsn, err := topology.ParseLSN(reached); err == nil && archive.SegmentName(1, lsn)[8:] < h.LastArchived[8:] {
			problems = append(problems, fmt.Sprintf("replay stopped at %s, in a segment before the archive's newest, %s", reached, h.LastArchived))
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "\n")
	}
	return true, fmt.Sprintf("pgbackrest verify: %d backups and their WAL valid; WAL continuous up to %s", len(h.Backups), h.LastArchived)
}

// recoveryResult is what a restore planned as p, started at start, did: where the recovery of the server
// behind conn stopped (pgclient.RecoveryEnd, read before it restarts), with the plan's backup and target.
func recoveryResult(ctx context.Context, conn *pgclient.Conn, p cluster.RestorePlan, start time.Time) (cluster.RestoreResult, error) {
	end, err := conn.RecoveryEnd(ctx)
	if err != nil {
		return cluster.RestoreResult{}, err
	}
	now := time.Now()
	res := p.Planned()
	res.ReachedLSN, res.ReachedTime, res.Timeline = end.ReplayLSN, end.ReplayTime, end.Timeline
	res.Seconds, res.FinishedAt = now.Sub(start).Round(time.Millisecond).Seconds(), now.UTC().Truncate(time.Second)
	if from, err1 := topology.ParseLSN(p.Backup.LSNStart); err1 == nil {
		if to, err2 := topology.ParseLSN(end.ReplayLSN); err2 == nil && to > from {
			res.WALReplayedBytes = int64(to - from)
		}
	}
	return res, nil
}
