package pgbench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The built-in scripts of pgbench 15 (`pgbench -b list`).
const (
	// BuiltinTPCBLike is pgbench's default transaction, "TPC-B (sort of)":
	// three UPDATEs, one SELECT and one INSERT.
	BuiltinTPCBLike = "tpcb-like"
	// BuiltinSimpleUpdate is tpcb-like without the updates of
	// pgbench_tellers and pgbench_branches (`-N`).
	BuiltinSimpleUpdate = "simple-update"
	// BuiltinSelectOnly is one SELECT by primary key (`-S`).
	BuiltinSelectOnly = "select-only"
)

// Builtins lists the built-in script names, the default first.
var Builtins = []string{BuiltinTPCBLike, BuiltinSimpleUpdate, BuiltinSelectOnly}

// The query protocols of pgbench's `--protocol` (`-M`).
const (
	// ProtocolSimple sends each statement as one simple-query message
	// (pgbench's default).
	ProtocolSimple = "simple"
	// ProtocolExtended uses the extended query protocol, unnamed statements.
	ProtocolExtended = "extended"
	// ProtocolPrepared uses the extended query protocol with statements
	// prepared once per connection.
	ProtocolPrepared = "prepared"
)

// Protocols lists the query protocols, the default first.
var Protocols = []string{ProtocolSimple, ProtocolExtended, ProtocolPrepared}

// TalkScript is the talk's random UPDATE workload: one UPDATE of a random
// row of pgbench_accounts per transaction. It reads :scale, which pgbench
// sets from --scale for custom scripts (it never detects the scale for
// them), so RunArgs always passes the scale.
const TalkScript = "\\set aid random(1, 100000 * :scale)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"

// Options describe one pgbench run (and the initialisation before it).
type Options struct {
	// Host is the server host name, address or Unix socket directory; ""
	// leaves it to libpq (PGHOST, then the default socket).
	Host string
	// Port is the server port; 0 leaves it to libpq (PGPORT, then 5432).
	Port int
	// User is the role to connect as; "" leaves it to libpq (PGUSER, then
	// the operating-system user).
	User string
	// Database is the database name; "" leaves it to libpq (PGDATABASE,
	// then the user name). It may also be a libpq connection string or
	// URI, which pgbench expands.
	Database string

	// Builtin is one of Builtins, or "" when ScriptPath is set.
	Builtin string
	// ScriptPath is a file holding a custom script, or "" when Builtin is
	// set. The caller writes the script text (such as TalkScript) to it.
	ScriptPath string
	// Scale is the scale factor, at least 1. It is always passed with
	// --scale: pgbench -i builds that many units of 100,000 accounts, and a
	// run passes it to custom scripts as :scale. For built-in scripts
	// pgbench ignores it and uses the row count of pgbench_branches,
	// printing "warning: scale option ignored" to stderr.
	Scale int
	// Clients is the number of concurrent connections (--client), at
	// least 1.
	Clients int
	// Threads is the number of pgbench worker threads (--jobs), from 1 to
	// Clients.
	Threads int
	// DurationSeconds is the length of the run (--time); exactly one of it
	// and Transactions is above 0.
	DurationSeconds int
	// Transactions is the number of transactions each client runs
	// (--transactions); exactly one of it and DurationSeconds is above 0.
	Transactions int
	// Protocol is one of Protocols (--protocol); "" is ProtocolSimple.
	Protocol string
	// Rate is the target rate in transactions per second over all
	// clients (--rate); 0 runs unthrottled.
	Rate float64
	// LogPrefix, when not "", turns on the per-transaction log (--log
	// --log-prefix=LogPrefix). pgbench writes one file per thread:
	// LogPrefix.PID for the first thread and LogPrefix.PID.N for thread N.
	// The prefix may hold a directory.
	LogPrefix string
	// ProgressSeconds, when above 0, makes pgbench print a progress line
	// to stderr every that many seconds (--progress). It also changes the
	// summary: with it (or with Rate) pgbench measures each transaction and
	// prints "latency stddev", and "latency average" becomes the mean of
	// the measured latencies instead of a figure derived from the run time.
	ProgressSeconds int
}

// Validate reports every problem with o, each as a sentence saying what to
// change, joined with errors.Join; nil when o can run. InitArgs and RunArgs
// expect options that pass it.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch {
	case o.Builtin != "" && o.ScriptPath != "":
		add("both a built-in script (%q) and a custom script file (%q) are set: set only one of them", o.Builtin, o.ScriptPath)
	case o.Builtin == "" && o.ScriptPath == "":
		add("neither a built-in script nor a custom script file is set: set one of them (built-in scripts: %s)", strings.Join(Builtins, ", "))
	case o.Builtin != "" && !slices.Contains(Builtins, o.Builtin):
		add("unknown built-in script %q: use one of %s", o.Builtin, strings.Join(Builtins, ", "))
	}

	switch {
	case o.DurationSeconds < 0:
		add("the duration is %d seconds: set a duration of at least 1 second, or 0 with a number of transactions", o.DurationSeconds)
	case o.Transactions < 0:
		add("the number of transactions is %d: set at least 1 transaction per client, or 0 with a duration", o.Transactions)
	case o.DurationSeconds > 0 && o.Transactions > 0:
		add("both a duration (%d s) and a number of transactions per client (%d) are set: set only one of them", o.DurationSeconds, o.Transactions)
	case o.DurationSeconds == 0 && o.Transactions == 0:
		add("neither a duration nor a number of transactions per client is set: set one of them above 0")
	}

	if o.Clients < 1 {
		add("the number of clients is %d: set at least 1 client", o.Clients)
	}
	switch {
	case o.Threads < 1:
		add("the number of threads is %d: set at least 1 thread", o.Threads)
	case o.Clients >= 1 && o.Threads > o.Clients:
		add("the number of threads (%d) is above the number of clients (%d): set at most %d threads, or more clients", o.Threads, o.Clients, o.Clients)
	}
	if o.Scale < 1 {
		add("the scale is %d: set a scale of at least 1 (each unit is 100,000 rows of pgbench_accounts)", o.Scale)
	}
	if math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate < 0 {
		add("the rate is %v transactions per second: set a rate above 0, or 0 to run unthrottled", o.Rate)
	}
	if o.Protocol != "" && !slices.Contains(Protocols, o.Protocol) {
		add("unknown protocol %q: use one of %s", o.Protocol, strings.Join(Protocols, ", "))
	}
	if o.ProgressSeconds < 0 {
		add("the progress interval is %d seconds: set it to at least 1 second, or 0 for no progress lines", o.ProgressSeconds)
	}
	if o.Port < 0 || o.Port > 65535 {
		add("the port is %d: set a port from 1 to 65535, or 0 for libpq's default", o.Port)
	}
	if strings.HasPrefix(o.Database, "-") {
		add("the database name %q begins with \"-\", which pgbench would read as an option: use another database name", o.Database)
	}
	return errors.Join(errs...)
}

// InitArgs returns the arguments, after the program name, that initialise
// the pgbench tables at o.Scale:
//
//	--initialize --scale=S --quiet [--host=H] [--port=P] [--username=U] [DB]
//
// pgbench -i drops and recreates pgbench_accounts, pgbench_branches,
// pgbench_tellers and pgbench_history, fills them, vacuums them and adds the
// primary keys (its default steps, "dtgvp"). --quiet reports progress every
// 5 seconds instead of every 100,000 rows; all of it goes to stderr.
func InitArgs(o Options) []string {
	args := []string{"--initialize", "--scale=" + strconv.Itoa(o.Scale), "--quiet"}
	return appendConnArgs(args, o)
}

// RunArgs returns the arguments, after the program name, of the benchmark
// run o describes, in this order:
//
//	--client=C --jobs=J (--time=T | --transactions=N) --protocol=M --scale=S
//	[--rate=R] [--progress=P] [--log --log-prefix=PREFIX]
//	(--builtin=NAME | --no-vacuum --file=PATH)
//	[--host=H] [--port=P] [--username=U] [DB]
//
// Vacuum: before a built-in script pgbench vacuums pgbench_branches and
// pgbench_tellers and truncates pgbench_history; RunArgs keeps that default
// so a run matches pgbench run by hand with the same script. A custom script
// may not use those tables, so RunArgs passes --no-vacuum with it.
//
// A script path holding "@" gets the explicit weight "@1", since pgbench
// reads the text after the last "@" as the script's weight.
func RunArgs(o Options) []string {
	protocol := o.Protocol
	if protocol == "" {
		protocol = ProtocolSimple
	}
	args := []string{"--client=" + strconv.Itoa(o.Clients), "--jobs=" + strconv.Itoa(o.Threads)}
	if o.DurationSeconds > 0 {
		args = append(args, "--time="+strconv.Itoa(o.DurationSeconds))
	} else {
		args = append(args, "--transactions="+strconv.Itoa(o.Transactions))
	}
	args = append(args, "--protocol="+protocol, "--scale="+strconv.Itoa(o.Scale))
	if o.Rate > 0 {
		args = append(args, "--rate="+strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	if o.ProgressSeconds > 0 {
		args = append(args, "--progress="+strconv.Itoa(o.ProgressSeconds))
	}
	if o.LogPrefix != "" {
		args = append(args, "--log", "--log-prefix="+o.LogPrefix)
	}
	if o.ScriptPath != "" {
		path := o.ScriptPath
		if strings.Contains(path, "@") {
			path += "@1"
		}
		args = append(args, "--no-vacuum", "--file="+path)
	} else {
		args = append(args, "--builtin="+o.Builtin)
	}
	return appendConnArgs(args, o)
}

// appendConnArgs appends the connection options that are set, and the
// database name last.
func appendConnArgs(args []string, o Options) []string {
	if o.Host != "" {
		args = append(args, "--host="+o.Host)
	}
	if o.Port != 0 {
		args = append(args, "--port="+strconv.Itoa(o.Port))
	}
	if o.User != "" {
		args = append(args, "--username="+o.User)
	}
	if o.Database != "" {
		args = append(args, o.Database)
	}
	return args
}
