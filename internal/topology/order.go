package topology

import "cmp"

// candidate is a member as a choice of the next leader sees it.
type candidate struct {
	// Unfit says why the member cannot lead now ("" when it can): not streaming in the quorum, its lag
	// unknown or above the limit, its machine about to be replaced.
	Unfit string
	// Outdated is true when its machine must change: it leads only when no current member can.
	Outdated bool
	// Timeline and Pos are how far its history goes, where that decides (a failover: nothing catches up
	// after the primary is lost, so the survivor furthest ahead is the only one that holds every
	// acknowledged commit); both 0 where it does not (a switchover: the old leader stops cleanly and its
	// target receives everything before it leads, so any standby within the lag limit is as complete).
	Timeline int
	Pos      uint64
	// Behind is how many bytes it is behind the leader, where that is what is known (an election among
	// standbys of a leader that is gone, as the plan simulates it); 0 where it does not decide.
	Behind int64
	// Rank is the member's place in the configuration's order (the first the preferred leader).
	Rank int
}

// leadOrder is the one order in which members are chosen to lead (the failover's survivor to promote, a
// switchover's target for a leader being removed or replaced, the simulated election): a member fit to lead
// first, a current machine before an outdated one, the later timeline, the further WAL position, and
// among equals the configuration's order. Negative when a goes first.
func leadOrder(a, b candidate) int {
	if c := falseFirst(a.Unfit != "", b.Unfit != ""); c != 0 {
		return c
	}
	if c := falseFirst(a.Outdated, b.Outdated); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Timeline, a.Timeline); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Pos, a.Pos); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Behind, b.Behind); c != 0 {
		return c
	}
	return cmp.Compare(a.Rank, b.Rank)
}

// falseFirst orders false before true.
func falseFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
