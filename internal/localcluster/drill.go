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
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
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
// at the attribute under root), the chosen backup restored into a scratch node with archiving off (a drill
// never writes to the archive it reads), archive recovery to the target and promotion, the check query, the
// archiver's own verification and the WAL's continuity; then the scratch node is removed, also on error. A
// restore that fails is an error; a verification or check that fails is a result.
//
// The archiver does the archiver's part and nothing else (drillArchiver): pgBackRest's `restore`, `verify`
// and `info`; WAL-G's `backup-fetch`, `wal-fetch` (the nodes' restore_command script) and `wal-verify`, its
// archive read from S3 as the EC2 platform reads a restore's source. Every decision is the same for both.
func (m *Manager) RunDrill(ctx context.Context, root []string, d Drill) (out DrillResult, err error) {
	a := d.Restore.Archive
	from, ok := archive.LocationOf(a.PgBackRestOptions, a.WALGEnv, a.Stanza)
	if !ok {
		return out, cluster.Errorf(append(root, "archive"), "Archive Not Readable Here", "The drill reads pgBackRest repositories of type posix or s3, "+
			"and WAL-G archives in S3 (WALG_S3_PREFIX); this archive is neither.")
	}
	archiver := func(m *Manager) drillArchiver {
		if from.Tool == archive.ToolWALG {
			return walgDrill{m: m, env: a.WALGEnv, from: from}
		}
		return pgbackrestDrill{m: m, opts: a.PgBackRestOptions, stanza: a.Stanza}
	}
	src := archiver(m)
	if err := src.installed(); err != nil {
		return out, err
	}
	h, err := src.health(ctx)
	// The drill restores the chosen backup with its own major's binaries (0: any major), so an archive
	// of an older major, or one whose cluster was upgraded, is drilled as it is.
	plan, err := cluster.PlanRestoreAt(root, d.Restore, from, 0, h, err)
	if err != nil {
		return out, err
	}
	if plan.Backup.Major != 0 {
		if m, err = m.WithMajor(plan.Backup.Major); err != nil {
			return out, cluster.Errorf(append(root, "archive"), "PostgreSQL Version Not Installed",
				"Backup %s in %s was taken from PostgreSQL %d, and the drill restores it with that major's binaries: %v.", plan.Backup.Label, from, plan.Backup.Major, err)
		}
		src = archiver(m)
	}
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return out, err
	}
	out.Plan, out.Health = plan, *h

	dir, err := os.MkdirTemp(d.WorkDir, "pgnvme-drill-")
	if err != nil {
		return out, fmt.Errorf("making the drill's scratch directory: %w", err)
	}
	uid, gid := m.engine.RunAsIDs()
	if err := os.Chown(dir, uid, gid); err != nil && !errors.Is(err, os.ErrPermission) {
		return out, err
	}
	name := a.Stanza
	if name == "" {
		name = "drill"
	}
	mb := Member{Name: "drill", Zone: "local", Port: d.Port, DataDir: filepath.Join(dir, "data")}
	s := Spec{Name: name, Members: []Member{mb}, Synchronous: bootstrap.Synchronous{Method: "any", DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitOn},
		Archive: src.archive()}
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
	// The drill reads the archive and never writes to it: no archiving, no restore_command but the drill's.
	r.Parameters["archive_mode"] = "off"
	delete(r.Parameters, "archive_command")
	delete(r.Parameters, "restore_command")
	start := m.waitClock().Now()
	tflog.Info(ctx, "restore drill: restoring into a scratch node", map[string]any{"from": from.String(), "backup": plan.Backup.Label, "target": plan.Target.String(), "dir": dir})
	hole := ""
	if h.Hole != "" {
		hole = fmt.Sprintf(" (the archive misses WAL segment %s)", h.Hole)
	}
	if err := src.recover(ctx, s, mb, r, dir, plan); err != nil {
		return out, fmt.Errorf("restoring %s from %s%s: %w", plan.Backup.Label, from, hole, err)
	}
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return out, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if out.Restored, err = recoveryResult(ctx, conn, plan, start, m.waitClock()); err != nil {
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
	verified, checked := src.verify(ctx, dir, *h)
	out.Verified, out.Detail = judgeDrill(verified, checked, *h, plan, out.Restored.ReachedLSN)
	tflog.Info(ctx, "restore drill done", map[string]any{"seconds": out.Restored.Seconds, "verified": out.Verified, "detail": out.Detail})
	return out, nil
}

// judgeDrill is the drill's verdict on an archive: the archiver's own verification (verified, and checked
// saying what it checked or what it found), the WAL's continuity (h.Hole) and, for a restore to the end of
// the archive, that replay reached the newest segment (it stops at the first segment it cannot fetch).
func judgeDrill(verified bool, checked string, h archive.Health, plan cluster.RestorePlan, reached string) (bool, string) {
	var problems []string
	if !verified {
		problems = append(problems, checked)
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
	return true, fmt.Sprintf("%s; WAL continuous up to %s", checked, h.LastArchived)
}

// recoveryResult is what a restore planned as p, started at start, did: where the recovery of the server
// behind conn stopped (pgclient.RecoveryEnd, read before it restarts), with the plan's backup and target,
// and when it finished on clock (the restore's start read from the same clock).
func recoveryResult(ctx context.Context, conn *pgclient.Conn, p cluster.RestorePlan, start time.Time, clock wait.Clock) (cluster.RestoreResult, error) {
	end, err := conn.RecoveryEnd(ctx)
	if err != nil {
		return cluster.RestoreResult{}, err
	}
	now := clock.Now()
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
