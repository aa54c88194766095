package quorum

import (
	"fmt"
	"sort"
	"strings"
)

// Replication states and synchronous states as pg_stat_replication shows
// them (columns state and sync_state).
const (
	// StateStreaming is the walsender state of a standby that has caught up
	// and streams WAL as it is written. Only streaming standbys can confirm
	// synchronous commits.
	StateStreaming = "streaming"

	// SyncStateAsync is a standby that is not in the list: commits never wait
	// for it.
	SyncStateAsync = "async"
	// SyncStatePotential is a listed standby that commits do not wait for
	// now: under FIRST, one past the first Number; under either method, one
	// that is not streaming yet.
	SyncStatePotential = "potential"
	// SyncStateSync is a standby that FIRST commits wait for.
	SyncStateSync = "sync"
	// SyncStateQuorum is a standby that may be one of the Number that ANY
	// commits wait for.
	SyncStateQuorum = "quorum"
)

// StandbyState is one row of pg_stat_replication on the primary: one
// connected standby (walsender).
type StandbyState struct {
	// Name is the standby's application_name.
	Name string
	// State is the walsender state: "startup", "catchup", "streaming",
	// "backup" or "stopping".
	State string
	// SyncState is "async", "potential", "sync" or "quorum".
	SyncState string
}

// Satisfied reports whether the live standbys on a primary show what spec
// asks for, and when they do not, one sentence saying what is missing or
// wrong, such as `s2 is not connected` or `s1 shows async, want quorum`
// (several findings are joined with "; ").
//
// It expects what PostgreSQL 10 and later show in pg_stat_replication once
// every walsender has read the setting:
//
//   - ANY: every listed standby that is streaming shows "quorum";
//   - FIRST n: of the listed standbys that are streaming, the n earliest in
//     list order show "sync" and the others "potential";
//   - a listed standby that is not streaming yet (catchup, startup, ...)
//     shows "potential", and a standby that is not listed shows "async".
//
// A standby is listed when its name equals one of spec.Names ignoring ASCII
// letter case, as PostgreSQL compares them, or when the list has the
// wildcard "*". Under FIRST, a standby's place is its first match in the
// list; standbys sharing a place (the same name twice, or several matched by
// "*") may take the "sync" slots in any order.
//
// requireAll is true when every listed standby must be streaming (waiting
// for all standbys); when false, at least spec.Number listed standbys must
// be streaming, which is when synchronous commits can complete. The
// wildcard "*" names no particular standby: it only adds to the count.
//
// The zero Spec (asynchronous replication: an empty synchronous_standby_names)
// is satisfied when every standby shows "async".
//
// live must come from the same session that read synchronous_standby_names:
// pg_stat_replication computes sync_state with the reading session's copy of
// the setting, so a session that has not yet seen a reload reports the old
// one.
func Satisfied(spec Spec, live []StandbyState, requireAll bool) (bool, string) {
	var problems []string
	if len(spec.Names) == 0 {
		for _, s := range live {
			if s.SyncState != SyncStateAsync {
				problems = append(problems, fmt.Sprintf("%s shows %s, want %s (synchronous replication is off)", describe(s.Name), s.SyncState, SyncStateAsync))
			}
		}
		return report(problems)
	}

	prio := priorities(spec, live)
	var candidates []int // indexes into live of listed, streaming standbys
	for i, s := range live {
		if prio[i] > 0 && s.State == StateStreaming {
			candidates = append(candidates, i)
		}
	}

	// Presence: a listed name (other than the wildcard) with no streaming standby.
	var absent []string
	for _, n := range spec.Names {
		if n == Wildcard {
			continue
		}
		found, streaming := false, false
		var state string
		for _, s := range live {
			if foldASCII(s.Name) == foldASCII(n) {
				found = true
				state = s.State
				if s.State == StateStreaming {
					streaming = true
				}
			}
		}
		switch {
		case streaming:
		case found:
			absent = append(absent, fmt.Sprintf("%s is %s, not streaming yet", QuoteName(n), describeState(state)))
		default:
			absent = append(absent, QuoteName(n)+" is not connected")
		}
	}
	switch {
	case requireAll:
		problems = append(problems, absent...)
		if len(candidates) < spec.Number {
			// Only possible with the wildcard and fewer standbys than Number.
			problems = append(problems, fmt.Sprintf("%d of the listed standbys %s streaming, want at least %d", len(candidates), isAre(len(candidates)), spec.Number))
		}
	case len(candidates) < spec.Number:
		msg := fmt.Sprintf("%d of the listed standbys %s streaming, want at least %d", len(candidates), isAre(len(candidates)), spec.Number)
		if len(absent) > 0 {
			msg += " (" + strings.Join(absent, ", ") + ")"
		}
		problems = append(problems, msg)
	}

	want := expectedSyncStates(spec, live, prio, candidates)
	for i, s := range live {
		w := want[i]
		if w == "" { // a FIRST standby sharing the boundary place: checked by count below
			continue
		}
		if s.SyncState != w {
			why := ""
			if prio[i] == 0 {
				why = " (it is not in the list)"
			}
			problems = append(problems, fmt.Sprintf("%s shows %s, want %s%s", describe(s.Name), describeState(s.SyncState), w, why))
		}
	}
	if spec.Method == MethodFirst {
		got, wantSync := 0, min(spec.Number, len(candidates))
		for _, i := range candidates {
			if live[i].SyncState == SyncStateSync {
				got++
			}
		}
		if got != wantSync {
			problems = append(problems, fmt.Sprintf("%d standbys show sync, want %d", got, wantSync))
		}
	}
	return report(problems)
}

// CommitsBlocked reports whether a synchronous commit under spec would wait
// until more standbys connect: fewer than spec.Number listed standbys are
// streaming among live. It is false for the zero Spec (asynchronous
// replication). It does not look at synchronous_commit: with "local" or
// "off" commits never wait, whatever it returns.
func CommitsBlocked(spec Spec, live []StandbyState) bool {
	if len(spec.Names) == 0 || spec.Number < 1 {
		return false
	}
	prio := priorities(spec, live)
	n := 0
	for i, s := range live {
		if prio[i] > 0 && s.State == StateStreaming {
			n++
		}
	}
	return n < spec.Number
}

// priorities returns each live standby's place in spec.Names as PostgreSQL
// computes it (SyncRepGetStandbyPriority): the 1-based position of the first
// name that matches it ignoring ASCII case, or of the wildcard; 0 when none
// does.
func priorities(spec Spec, live []StandbyState) []int {
	out := make([]int, len(live))
	for i, s := range live {
		name := foldASCII(s.Name)
		for j, n := range spec.Names {
			if n == Wildcard || foldASCII(n) == name {
				out[i] = j + 1
				break
			}
		}
	}
	return out
}

// expectedSyncStates returns the sync_state each live standby should show,
// or "" for a FIRST candidate whose place ties with the last "sync" slot
// (either state is right for it; Satisfied checks the count instead).
func expectedSyncStates(spec Spec, live []StandbyState, prio, candidates []int) []string {
	want := make([]string, len(live))
	for i := range live {
		if prio[i] == 0 {
			want[i] = SyncStateAsync
		} else {
			want[i] = SyncStatePotential // listed; candidates are set below
		}
	}
	if spec.Method != MethodFirst {
		for _, i := range candidates {
			want[i] = SyncStateQuorum
		}
		return want
	}
	k := min(spec.Number, len(candidates))
	if k == 0 {
		return want
	}
	ordered := append([]int(nil), candidates...)
	sort.SliceStable(ordered, func(a, b int) bool { return prio[ordered[a]] < prio[ordered[b]] })
	boundary := prio[ordered[k-1]]
	tied := 0
	for _, i := range ordered {
		if prio[i] == boundary {
			tied++
		}
	}
	for _, i := range ordered {
		switch {
		case prio[i] < boundary:
			want[i] = SyncStateSync
		case prio[i] > boundary:
			want[i] = SyncStatePotential
		case tied == 1:
			want[i] = SyncStateSync
		default:
			want[i] = ""
		}
	}
	return want
}

// report turns findings into Satisfied's result.
func report(problems []string) (bool, string) {
	if len(problems) == 0 {
		return true, ""
	}
	return false, strings.Join(problems, "; ")
}

// describe names a live standby in a message.
func describe(name string) string {
	if name == "" {
		return "a standby without application_name"
	}
	return QuoteName(name)
}

// describeState writes an empty state (a NULL column) readably.
func describeState(s string) string {
	if s == "" {
		return "no state"
	}
	return s
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
