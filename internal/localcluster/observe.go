package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Observe reads every member of s and changes nothing:
//
//   - running (its postmaster is alive): role from pg_is_in_recovery(); a
//     standby's FlushLSN is pg_last_wal_receive_lsn() (kept after its
//     primary is gone), ReplayLSN pg_last_wal_replay_lsn(), Timeline the
//     received timeline (else its last restartpoint's); a primary's FlushLSN
//     is pg_current_wal_flush_lsn() and Timeline its current WAL file's.
//     When it cannot be read, Role stays "" and Error says why.
//   - stopped (data directory, no process): role from standby.signal,
//     Timeline from pg_controldata (the later of its checkpoint's and its
//     minimum recovery point's). FlushLSN is the end of the valid WAL in its
//     pg_wal on that timeline (localnode.Engine.EndOfWAL, read with
//     pg_waldump): everything it could replay when started, so topology can
//     tell whether a stopped standby is behind the promotion candidate. A
//     standby's ReplayLSN is its minimum recovery point (its data pages
//     reflect WAL up to there). When the WAL cannot be read, the position
//     stays unknown and Error says why, so topology refuses a failover that
//     could lose commits only that node has.
//   - missing (no data directory): nothing else is known.
//
// Streaming and SyncState come from the running primary's
// pg_stat_replication, when exactly one primary runs.
//
// Former members come last: members the manifest still lists that s no
// longer does (a scale-down not yet applied). topology.Next then removes
// them, and Reconcile finds their data directories in the manifest.
func (m *Manager) Observe(ctx context.Context, s Spec) ([]Status, error) {
	if len(s.Members) == 0 {
		return nil, fmt.Errorf("the cluster %s has no members", s.Name)
	}
	members := append(slices.Clone(s.Members), formerMembers(s)...)
	out := make([]Status, len(members))
	var primaries []int
	for i, mb := range members {
		st, err := m.observe(ctx, mb)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			st.Error = err.Error()
		}
		out[i] = st
		if st.State == StateRunning && st.Role == topology.RolePrimary {
			primaries = append(primaries, i)
		}
	}
	if len(primaries) == 1 {
		p := members[primaries[0]]
		standbys, _, err := m.replication(ctx, p)
		if err != nil {
			out[primaries[0]].Error = fmt.Sprintf("reading pg_stat_replication: %v", err)
		}
		for _, sb := range standbys {
			for i := range out {
				if out[i].Name == sb.ApplicationName && i != primaries[0] {
					out[i].Streaming = sb.State == "streaming"
					out[i].SyncState = sb.SyncState
				}
			}
		}
	}
	return out, nil
}

// observe reads one member.
func (m *Manager) observe(ctx context.Context, mb Member) (Status, error) {
	st := Status{Member: mb}
	n := Node(mb, localnode.RoleStandby)
	_, running, err := m.engine.Running(n)
	if err != nil {
		st.State = StateUnknown
		return st, err
	}
	if running {
		st.State = StateRunning
		p, err := m.position(ctx, mb)
		if err != nil {
			return st, err
		}
		st.Role = topology.RoleStandby
		if !p.InRecovery {
			st.Role = topology.RolePrimary
		} else if restoring(mb) {
			// A primary being restored from the archive: promoting it now would end its replay
			// short of the archive's end, and it becomes the primary by itself when it is done.
			st.Role = ""
			return st, fmt.Errorf("%s is being restored from the archive (archive recovery, replayed up to %s): it takes writes when it reaches the archive's end; wait for that and plan again", mb.Name, p.ReplayLSN)
		}
		st.FlushLSN, st.ReplayLSN, st.Timeline = p.FlushLSN, p.ReplayLSN, p.Timeline
		st.PendingRestart, st.RestartLowers, err = m.pendingRestart(ctx, mb)
		return st, err
	}
	if _, err := os.Stat(restoreMarker(mb)); err == nil {
		// An unfinished pgbackrest restore: an incomplete copy, which the next restore destroys first.
		st.State = StateMissing
		return st, nil
	}
	if _, err := os.Stat(filepath.Join(mb.DataDir, "PG_VERSION")); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			st.State = StateUnknown
			return st, err
		}
		if empty, err := isEmptyOrAbsent(mb.DataDir); err == nil && empty {
			st.State = StateMissing
			return st, nil
		}
		// Leftovers without PG_VERSION (a copy that failed half-way): a
		// stopped node whose role cannot be read.
		st.State = StateStopped
		return st, nil
	}
	st.State = StateStopped
	role, err := m.engine.ConfiguredRole(n)
	if err != nil {
		return st, err
	}
	cd, err := m.engine.ControlData(ctx, n)
	if err != nil {
		return st, err
	}
	st.Role = string(role)
	st.Timeline = max(cd.TimeLineID, cd.MinRecoveryTLI)
	end, err := m.engine.EndOfWAL(ctx, n, st.Timeline)
	if err != nil {
		// Position unknown: topology refuses what could lose commits.
		return st, err
	}
	st.FlushLSN = end
	if role == localnode.RoleStandby && cd.MinRecoveryLSN != "" && cd.MinRecoveryLSN != "0/0" {
		// The standby replayed at least to where its data pages reached.
		st.ReplayLSN = cd.MinRecoveryLSN
	}
	return st, nil
}

// restoring reports whether mb's data directory is in archive recovery to become a primary: it has
// recovery.signal and no standby.signal.
func restoring(mb Member) bool {
	_, recovery := os.Stat(filepath.Join(mb.DataDir, "recovery.signal"))
	_, standby := os.Stat(filepath.Join(mb.DataDir, "standby.signal"))
	return recovery == nil && errors.Is(standby, fs.ErrNotExist)
}

// isEmptyOrAbsent reports whether dir is absent or an empty directory.
func isEmptyOrAbsent(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) == 0, nil
}

// topologyOf is s as observed (st, from Observe) in topology's terms, the one mapping of the local
// platform's processes to members: a member with a data directory has a live machine (running, or stopped
// with its role read from the data directory), one without has lost it, or never had one when the manifest
// of the cluster's last apply does not list it (a member being added). The engine promotes here
// (EnginePromotes): no process fails over by itself.
func topologyOf(s Spec, st []Status) topology.Cluster {
	c := topology.Cluster{EnginePromotes: true, ViewKnown: true, SyncNumber: s.Synchronous.Number, Archived: s.Archive != nil,
		AcceptLossAt: s.AcceptLossAt}
	if s.Synchronous.DataDurability == bootstrap.DurabilityRequired {
		c.Quorum = s.Synchronous.Number
	}
	var listed []Member
	if root, err := DataDirRoot(s); err == nil {
		if old, err := ReadManifest(root); err == nil {
			listed = old.Members
		}
	}
	for _, x := range st {
		_, wanted := s.member(x.Name)
		m := topology.Member{Name: x.Name, Wanted: wanted, Role: x.Role, LagBytes: -1, Streaming: x.Streaming,
			InQuorum: x.SyncState == "quorum" || x.SyncState == "sync"}
		switch x.State {
		case StateMissing:
			m.Machine, m.Role, m.Why = topology.MachineLost, "", "its data directory is gone"
			if !slices.ContainsFunc(listed, func(l Member) bool { return l.Name == x.Name }) {
				m.Machine, m.Why = topology.MachineAbsent, ""
			}
		case StateUnknown:
			m.Machine, m.Role, m.Unseen = topology.MachineLive, "", orDefault(x.Error, "its state cannot be read")
		default:
			m.Machine, m.Running = topology.MachineLive, x.State == StateRunning
			m.PendingRestart, m.RestartLowers = x.PendingRestart, x.RestartLowers
			if m.Running && m.Role == "" {
				m.Unseen = orDefault(x.Error, "its role cannot be read")
			}
			w := &topology.WAL{Timeline: x.Timeline}
			w.Received, _ = topology.ParseLSN(x.FlushLSN) // unreadable is 0: unknown
			w.Replayed, _ = topology.ParseLSN(x.ReplayLSN)
			m.WAL = w
		}
		c.Formed = c.Formed || m.Machine != topology.MachineAbsent
		c.Members = append(c.Members, m)
	}
	return c
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// runningPrimary is the one running primary of st, if exactly one runs.
func runningPrimary(st []Status) (Member, bool) {
	var found []Member
	for _, x := range st {
		if x.State == StateRunning && x.Role == topology.RolePrimary {
			found = append(found, x.Member)
		}
	}
	if len(found) != 1 {
		return Member{}, false
	}
	return found[0], true
}
