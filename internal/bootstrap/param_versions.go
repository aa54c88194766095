package bootstrap

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// parameterVersion is the range of PostgreSQL majors that know a server parameter: Since (0: before every
// major pgnvme runs) to Until (0: still there), with what became of it.
type parameterVersion struct {
	Since, Until int
	Note         string
}

// parameterVersions are the server parameters that some majors pgnvme runs (capacity.MinPostgresMajor to
// MaxPostgresMajor) know and others do not: the ones pgnvme_tuning writes for newer majors, and the ones
// people carry over from configurations of older ones. A server refuses to start with a parameter it does
// not know, so the plan refuses it (ParameterVersionProblems). TestParameterVersions_postgres checks the
// table against the installed server's own list.
var parameterVersions = map[string]parameterVersion{
	"io_method":                       {Since: 18, Note: "asynchronous I/O"},
	"io_workers":                      {Since: 18, Note: "asynchronous I/O"},
	"io_max_combine_limit":            {Since: 18},
	"autovacuum_worker_slots":         {Since: 18},
	"autovacuum_vacuum_max_threshold": {Since: 18},
	"io_combine_limit":                {Since: 17},
	"summarize_wal":                   {Since: 17},
	"wal_summary_keep_time":           {Since: 17},
	"transaction_timeout":             {Since: 17},
	"debug_parallel_query":            {Since: 16, Note: "force_parallel_mode before 16"},
	"vacuum_buffer_usage_limit":       {Since: 16},
	"force_parallel_mode":             {Until: 15, Note: "renamed debug_parallel_query in 16"},
	"promote_trigger_file":            {Until: 15, Note: "removed in 16: promote with pg_ctl promote or pg_promote()"},
	"vacuum_defer_cleanup_age":        {Until: 15, Note: "removed in 16: use hot_standby_feedback or a replication slot"},
	"old_snapshot_threshold":          {Until: 16, Note: "removed in 17"},
	"db_user_namespace":               {Until: 16, Note: "removed in 17"},
	"stats_temp_directory":            {Until: 14, Note: "removed in 15: statistics live in shared memory"},
	"wal_keep_segments":               {Until: 12, Note: "replaced by wal_keep_size in 13"},
}

// ParameterVersionProblems are the parameters of params that PostgreSQL major does not know (names ignore
// letter case), by name: each says which majors know it and what to do.
func ParameterVersionProblems(params map[string]string, major int) map[string]error {
	out := map[string]error{}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v, ok := parameterVersions[strings.ToLower(k)]
		if !ok || ((v.Since == 0 || major >= v.Since) && (v.Until == 0 || major <= v.Until)) {
			continue
		}
		which := fmt.Sprintf("PostgreSQL %d and later", v.Since)
		if v.Until != 0 {
			which = fmt.Sprintf("PostgreSQL %d and earlier", v.Until)
		}
		note := ""
		if v.Note != "" {
			note = " (" + v.Note + ")"
		}
		msg := fmt.Sprintf("The parameter %q is one of %s%s; this cluster runs PostgreSQL %d, which would refuse to start with it. "+
			"Remove it, or take the parameters from pgnvme_tuning or pgnvme_capacity_plan with postgres_major = %d, which write only what %d knows.",
			k, which, note, major, major, major)
		out[k] = errors.New(msg)
	}
	return out
}

// ParameterVersionsTable is the table ParameterVersionProblems reads, name to [since, until] (0: open), for
// tests that check it against a server.
func ParameterVersionsTable() map[string][2]int {
	out := make(map[string][2]int, len(parameterVersions))
	for k, v := range parameterVersions {
		out[k] = [2]int{v.Since, v.Until}
	}
	return out
}
