package bootstrap

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// reloadContexts are the pg_settings.context values of parameters a reload
// (SIGHUP) applies: "sighup" to every session, the others as the default of
// new sessions ("backend", "superuser-backend") or of sessions that have not
// set them ("superuser", "user").
var reloadContexts = []string{"sighup", "superuser", "user", "backend", "superuser-backend"}

// RestartRequired splits the changed parameters into those that need a
// restart and those a reload applies, each sorted by name.
//
// changed maps every parameter whose value changes (set, changed or removed)
// to its new value; only the names matter. contexts maps parameter names to
// their pg_settings.context on the node (SELECT name, context FROM
// pg_settings); names are compared in lower case. A "postmaster" parameter
// needs a restart; "sighup", "superuser", "user", "backend" and
// "superuser-backend" ones a reload. A parameter the node does not know
// (absent from contexts, such as one of an extension that is not loaded yet)
// or with another context ("internal") is put with the restarts: a restart
// applies everything a reload does, and reports a bad value at once.
//
// Restarting a cluster one node at a time, standbys first, is right for
// raising a parameter. Lowering max_connections, max_worker_processes,
// max_wal_senders, max_prepared_transactions or max_locks_per_transaction
// is the other way round: a hot standby stops replaying while any of them is
// below its primary's value, so the primary goes first.
func RestartRequired(changed map[string]string, contexts map[string]string) (restart []string, reload []string) {
	lower := make(map[string]string, len(contexts))
	for k, v := range contexts {
		lower[strings.ToLower(k)] = strings.ToLower(strings.TrimSpace(v))
	}
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		ctx, known := lower[strings.ToLower(name)]
		if known && slices.Contains(reloadContexts, ctx) {
			reload = append(reload, name)
		} else {
			restart = append(restart, name)
		}
	}
	return restart, reload
}

// standbyLimits are the settings a hot standby must not have below its primary's: a standby started with
// a lower value refuses to start, and one that replays a higher value from its primary pauses (PostgreSQL's
// "insufficient parameter settings").
var standbyLimits = []string{"max_connections", "max_locks_per_transaction", "max_prepared_transactions", "max_wal_senders", "max_worker_processes"}

// StandbyLimits are the names of the settings a hot standby must not have below its primary's.
func StandbyLimits() []string { return slices.Clone(standbyLimits) }

// standbyLimitDefaults are PostgreSQL's defaults of standbyLimits (the same in 15 to 18; initdb writes
// max_connections = 100 when the machine allows it): what a node runs with once its configuration no
// longer names one.
var standbyLimitDefaults = map[string]string{"max_connections": "100", "max_locks_per_transaction": "64",
	"max_prepared_transactions": "0", "max_wal_senders": "10", "max_worker_processes": "8"}

// StandbyLimitsLowered names, sorted, the settings among those a hot standby must not have below its
// primary's whose new value (next, by name) is lower than the one PostgreSQL runs with (running, by name).
// A cluster that restarts for them restarts its primary first. Names compare in lower case; a value that
// is not a whole number counts as not lowered. A setting running does not name is not compared; one next
// does not name, or names with no value, is PostgreSQL's default (the configuration removed it).
func StandbyLimitsLowered(running, next map[string]string) []string {
	var out []string
	for _, name := range standbyLimits {
		was, ok1 := limitValue(running, name, "")
		will, ok2 := limitValue(next, name, standbyLimitDefaults[name])
		if ok1 && ok2 && will < was {
			out = append(out, name)
		}
	}
	return out
}

// limitValue is m's value of the setting name (any case) as a whole number; unset stands for a value m
// does not give.
func limitValue(m map[string]string, name, unset string) (int64, bool) {
	v := unset
	for k, mv := range m {
		if strings.EqualFold(k, name) && strings.TrimSpace(mv) != "" {
			v = mv
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// StandbyLimitsRaised is params (a new standby's settings, by name) with each setting a hot standby must not
// have below its primary's raised to the value the primary runs with (primary, by name) where params has
// it lower, and the names raised, sorted. A standby made while its primary still runs a higher value than
// the configuration's (the configuration lowers it: the primary restarts first) starts with the primary's,
// and lowers it with its own restart after the primary's; so does one whose configuration no longer names
// a setting the primary runs above PostgreSQL's default. Names compare in lower case; a value that is not a
// whole number is left as it is.
func StandbyLimitsRaised(params, primary map[string]string) (map[string]string, []string) {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]string{}
	}
	var raised []string
	for _, name := range StandbyLimitsLowered(primary, params) {
		for k, v := range primary {
			if strings.EqualFold(k, name) {
				for pk := range out {
					if strings.EqualFold(pk, name) {
						delete(out, pk)
					}
				}
				out[name] = v
				raised = append(raised, name)
			}
		}
	}
	return out, raised
}
