package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// walSegmentBytes is the size of a WAL segment: PostgreSQL's default, which pgnvme never changes.
const walSegmentBytes = 16 << 20

// SegmentEnd is the WAL position just past the end of the segment named name ("000000030000000000000008":
// timeline, then the position's high 32 bits, then its segment number within them), so that an archive
// whose newest segment is name holds WAL up to SegmentEnd(name).
func SegmentEnd(name string) (uint64, error) {
	if len(name) != 24 {
		return 0, fmt.Errorf("%q is not a WAL segment name (24 hexadecimal digits)", name)
	}
	hi, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	if err1 != nil || err2 != nil || seg >= 1<<32/walSegmentBytes {
		return 0, fmt.Errorf("%q is not a WAL segment name (24 hexadecimal digits)", name)
	}
	return hi<<32 | (seg+1)*walSegmentBytes, nil
}

// atRisk says what the live members and the archive hold when no leader can be elected, and from which
// position acknowledged commits may be lost: "node-3 holds WAL up to 0/9A0F2D8 (...); the archive's newest
// segment is ... (WAL up to 0/9000000), archived at T. Commits after 0/9A0F2D8 (...) may be lost: ...".
func (c Cluster) atRisk(live, lost []Member) string {
	var known []string
	var furthest uint64
	var furthestOn string
	var blind []string
	for _, m := range live {
		switch {
		case m.WAL != nil && m.WAL.Received > 0:
			s := fmt.Sprintf("%s holds WAL up to %s", m.Name, FormatLSN(m.WAL.Received))
			if m.WAL.Replayed > 0 && m.WAL.Replayed != m.WAL.Received {
				s += fmt.Sprintf(" (replayed up to %s)", FormatLSN(m.WAL.Replayed))
			}
			if m.WAL.Timeline > 0 {
				s += fmt.Sprintf(" on timeline %d", m.WAL.Timeline)
			}
			known = append(known, s)
			if m.WAL.Received > furthest {
				furthest, furthestOn = m.WAL.Received, m.Name
			}
		case m.WALError != "":
			known = append(known, fmt.Sprintf("%s's WAL position could not be read (%s)", m.Name, m.WALError))
			blind = append(blind, m.Name)
		default:
			known = append(known, fmt.Sprintf("%s's WAL position was not read", m.Name))
			blind = append(blind, m.Name)
		}
	}
	switch a := c.Archive; {
	case a == nil:
		known = append(known, "what the archive holds is not known (the cluster has no archive, or it could not be read)")
	case a.LastWAL == "":
		known = append(known, "the archive holds no WAL segment")
	default:
		s := "the archive's newest segment is " + a.LastWAL
		if end, err := SegmentEnd(a.LastWAL); err == nil {
			s += " (WAL up to " + FormatLSN(end) + ")"
			if end > furthest {
				furthest, furthestOn = end, "the archive"
			}
		}
		if !a.LastWALAt.IsZero() {
			s += ", archived at " + a.LastWALAt.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		if a.Hole != "" {
			s += fmt.Sprintf(" (segment %s is missing from it, so replay from the archive stops before it)", a.Hole)
		}
		known = append(known, s)
	}
	out := "What is known: " + strings.Join(known, "; ") + "."
	why := "replication is asynchronous, so the lost primary may have acknowledged commits no standby had received"
	if c.SyncNumber > 0 {
		standbys := "1 standby"
		if c.SyncNumber > 1 {
			standbys = fmt.Sprintf("%d standbys", c.SyncNumber)
		}
		why = fmt.Sprintf("a commit was acknowledged once %s had flushed it, and the lost members (%s) may have flushed WAL that no survivor holds and the archive does not have yet",
			standbys, names(lost))
	}
	switch {
	case len(blind) > 0:
		out += fmt.Sprintf(" Which acknowledged commits may be lost cannot be said while %s's WAL position is unknown: %s", strings.Join(blind, ", "), why)
	case furthest > 0:
		out += fmt.Sprintf(" Acknowledged commits after %s (the furthest of these, on %s) may be lost: %s", FormatLSN(furthest), furthestOn, why)
		if furthestOn == "the archive" {
			out += " (a standby's restore_command replays the archive's WAL past its own, so a survivor catches up to the archive's end by itself)"
		}
	default:
		out += " Any acknowledged commit may be lost: " + why
	}
	return out + "."
}

// takeover is the step that promotes the one member left when no leader can be elected and the operator
// accepted the loss at exactly its position (Cluster.AcceptLossAt); why is "" then. Otherwise why says,
// for the refusal, what accept_data_loss_at_lsn would do or why it cannot.
func (c Cluster) takeover(live []Member) (Step, string) {
	if len(live) != 1 {
		return Step{}, fmt.Sprintf(" accept_data_loss_at_lsn cannot help here: it promotes the one member left, and %d are (%s)", len(live), names(live))
	}
	m := live[0]
	switch {
	case !m.Etcd:
		return Step{}, fmt.Sprintf(" accept_data_loss_at_lsn cannot help here: %s runs no etcd member, whose data would become the new DCS", m.Name)
	case m.WAL == nil || m.WAL.Received == 0:
		return Step{}, fmt.Sprintf(" accept_data_loss_at_lsn can promote %s only once its WAL position is known: plan again when its Patroni answers", m.Name)
	}
	pos := FormatLSN(m.WAL.Received)
	at, err := ParseLSN(c.AcceptLossAt)
	if c.AcceptLossAt == "" || err != nil || at != m.WAL.Received {
		why := fmt.Sprintf(" To give up whatever only the lost members held and go on from %s, set accept_data_loss_at_lsn = %q and apply: %s is then "+
			"promoted, as long as it is still exactly there, and the lost members are replaced and copied from it", m.Name, pos, m.Name)
		if c.AcceptLossAt != "" {
			why += fmt.Sprintf(" (accept_data_loss_at_lsn is %q, which accepts the loss only at exactly that position, and %s is at %s)", c.AcceptLossAt, m.Name, pos)
		}
		return Step{}, why
	}
	return Step{Kind: StepTakeOver, Node: m.Name, At: pos, Reason: fmt.Sprintf(
		"no member leads and the DCS has no majority (%s is the one member left), and accept_data_loss_at_lsn = %q accepts exactly %s's position: "+
			"acknowledged commits only the lost members held (after %s) are given up. %s's etcd member becomes a new one-member etcd cluster that keeps "+
			"the DCS's data, Patroni fails over to %s, and the lost members are replaced after it and copied from it",
		m.Name, c.AcceptLossAt, m.Name, pos, m.Name, m.Name)}, ""
}
