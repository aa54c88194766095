// Package backup is the cluster's base-backup policy: when the primary takes a backup, which ones are
// full, and what retention deletes. The provider validates it at plan time (ParseCalendar, Problems);
// the nodes apply it with DecideScript, one program for both platforms and both archivers.
//
// One source per rule. Each judgement about backups and their verification is made in one language, in
// the place that must make it:
//
//   - Whether a backup is due, which kind, and how many full backups retention keeps: on the node, in
//     DecideScript, from the archive's own listing (`pgbackrest info`, `wal-g backup-list`). The primary
//     decides between applies, with no provider running; the provider holds no copy of these rules. It
//     reads listings for its own rules only (archive.Assess: a backup overdue; cluster.PlanRestoreAt: the
//     backup a restore starts from), never to re-decide these; both read the same listing alike
//     (TestListingReadAlike, on pgBackRest's own output).
//   - The verdict on the archiver's verification (what `pgbackrest verify` and `wal-g wal-verify`
//     report): in DecideScript's "verdict", for both archivers. The primary needs it itself (it verifies
//     again an hour after a failure, never after a pass) and records it in the archive
//     (archive.Verification), where the plan reads it without reaching a node; the provider's restore
//     drill, which runs the tools on the machine running Terraform, takes the same verdict from the same
//     program rather than judging the output again in Go. A wal-verify WARNING passes (the only missing
//     segments are the newest, which WAL-G calls delayed or uploading, or a timeline it could not read:
//     "cannot tell yet", named in the record's detail); FAILURE fails (a segment lost before those, a
//     hole, or a newer timeline in the archive), and so does a missing check or a pgBackRest run with no
//     result.
//   - A hole in the WAL after the oldest backup's first segment: in Go, archive.Assess, from the
//     archive's listing, for both archivers, at every refresh and in every drill; the verdict does not
//     repeat it (pgBackRest's verify does not report holes, WAL-G's reports its own).
//   - The schedule (a systemd calendar expression): evaluated by systemd on the nodes (DecideScript asks
//     systemd-analyze when a backup is due, the same code as the nodes' timers; the local platform's
//     scheduler runs DecideScript too) and by ParseCalendar here, which must answer where there is no
//     node or no systemd: validation at plan time, the overdue threshold (Policy.Interval), the node
//     simulator's timers. The two never decide the same question, and the tests hold ParseCalendar to
//     systemd-analyze on this machine: normalized forms and elapses for a table and random expressions,
//     and the nodes' due decision at ParseCalendar's elapses (TestCalendarDueAgreesWithNodes).
package backup

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DecideScript is the program (python3) the primary's scheduled backup asks what to do: whether a
// backup is due and of which kind, and how many full backups retention keeps (see its doc string).
//
//go:embed decide.py
var DecideScript []byte

// CompactDecideScript is DecideScript as a node's user-data carries it (EC2 takes at most 16 KiB of
// user-data): its module docstring, the description of its commands and rules, replaced by a line naming
// the source, and its comment lines and functions' docstrings left out (each function's docstring is
// followed by its code, so the code runs the same).
func CompactDecideScript() string {
	s := string(DecideScript)
	start := strings.Index(s, `"""`)
	end := strings.Index(s[start+3:], `"""`) + start + 6
	var out strings.Builder
	out.WriteString(s[:start] + `"""pgnvme-backup-decide: usage and rules in internal/backup/decide.py of terraform-provider-pgnvme."""`)
	inDoc := false
	for _, line := range strings.SplitAfter(s[end:], "\n") {
		code := strings.TrimSpace(line)
		switch {
		case inDoc:
			inDoc = !strings.Contains(code, `"""`)
		case strings.HasPrefix(code, `"""`) && line != code:
			inDoc = strings.Count(code, `"""`) == 1
		case !strings.HasPrefix(code, "#"):
			out.WriteString(line)
		}
	}
	return out.String()
}

// Defaults of a policy: a backup a day, a full one every 7th, a 7-day recovery window and at least two
// full backups kept.
const (
	DefaultSchedule           = "daily"
	DefaultFullEvery          = 7
	DefaultRecoveryWindowDays = 7
	DefaultMinFullBackups     = 2
	// MaxFullEvery bounds a chain of incremental backups (each restore replays the whole chain).
	MaxFullEvery = 100
	// MaxRecoveryWindowDays is ten years.
	MaxRecoveryWindowDays = 3650
)

// DynamicConfigKey is where the policy lives in Patroni's dynamic configuration (EC2), under its
// postgresql section (where Patroni keeps keys it does not know from the bootstrap on): PATCH /config
// changes it in place, and the node's backup script reads it from GET /config.
const DynamicConfigKey = "pgnvme_backup"

// Policy is the cluster's backup policy.
type Policy struct {
	// Schedule is a systemd calendar expression (UTC): when a backup is due (see ParseCalendar).
	Schedule string
	// FullEvery: every FullEvery-th backup is full, the others incremental (pgBackRest incr, WAL-G
	// delta); 1 makes every backup full.
	FullEvery int
	// RecoveryWindowDays: retention keeps what a restore to any moment of the last RecoveryWindowDays
	// days needs; 0 keeps MinFullBackups full backups only.
	RecoveryWindowDays int
	// MinFullBackups: retention never keeps fewer full backups.
	MinFullBackups int
}

// Default is the policy of a cluster that archives and sets no backup block.
func Default() Policy {
	return Policy{Schedule: DefaultSchedule, FullEvery: DefaultFullEvery, RecoveryWindowDays: DefaultRecoveryWindowDays, MinFullBackups: DefaultMinFullBackups}
}

// Problem is one thing wrong with a policy: the attribute (relative to the backup block, such as
// "schedule" or "retention.min_full_backups") and what to change.
type Problem struct {
	Attribute string
	Detail    string
}

// Problems lists everything wrong with p.
func (p Policy) Problems() []Problem {
	var out []Problem
	if _, err := ParseCalendar(p.Schedule); err != nil {
		out = append(out, Problem{"schedule", err.Error()})
	}
	if p.FullEvery < 1 || p.FullEvery > MaxFullEvery {
		out = append(out, Problem{"full_every", fmt.Sprintf("full_every is %d: it must be between 1 (every backup full) and %d "+
			"(a restore replays the full backup and every incremental one after it).", p.FullEvery, MaxFullEvery)})
	}
	if p.RecoveryWindowDays < 0 || p.RecoveryWindowDays > MaxRecoveryWindowDays {
		out = append(out, Problem{"retention.recovery_window_days", fmt.Sprintf("recovery_window_days is %d: it must be between 0 "+
			"(keep min_full_backups full backups only) and %d.", p.RecoveryWindowDays, MaxRecoveryWindowDays)})
	}
	if p.MinFullBackups < 1 {
		out = append(out, Problem{"retention.min_full_backups", fmt.Sprintf("min_full_backups is %d: keep at least 1 full backup, "+
			"or nothing could be restored; 2 or more survive a damaged backup.", p.MinFullBackups)})
	}
	return out
}

// Interval is the longest the schedule lets pass between two backups (over the next year); the
// plan warns when the newest backup is older than that plus a margin. 24 h when the schedule does not
// parse.
func (p Policy) Interval(now time.Time) time.Duration {
	c, err := ParseCalendar(p.Schedule)
	if err != nil {
		return 24 * time.Hour
	}
	return c.Interval(now)
}

// DynamicConfig is the policy as the nodes read it from Patroni's dynamic configuration, under
// DynamicConfigKey.
func (p Policy) DynamicConfig() map[string]any {
	return map[string]any{
		"schedule":             p.Schedule,
		"full_every":           p.FullEvery,
		"recovery_window_days": p.RecoveryWindowDays,
		"min_full_backups":     p.MinFullBackups,
	}
}

// Args are the policy as DecideScript's "policy" command takes its defaults, and as a local
// cluster's backup scheduler takes it: SCHEDULE FULL_EVERY WINDOW_DAYS MIN_FULL.
func (p Policy) Args() []string {
	return []string{p.Schedule, strconv.Itoa(p.FullEvery), strconv.Itoa(p.RecoveryWindowDays), strconv.Itoa(p.MinFullBackups)}
}
