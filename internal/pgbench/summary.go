package pgbench

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Summary is the report pgbench 15 prints to stdout at the end of a run.
// Every figure is the number pgbench printed, parsed from its decimal text;
// none is recomputed.
type Summary struct {
	// PgbenchVersion is pgbench's version number ("15.18") from the first
	// line, "pgbench (15.18 (Debian 15.18-0+deb12u1))".
	PgbenchVersion string
	// ServerVersion is the server's version number. pgbench names the
	// server only when its version differs ("pgbench (15.18 (...), server
	// 16.4)"); otherwise it is PgbenchVersion.
	ServerVersion string
	// TransactionType is the script: "<builtin: TPC-B (sort of)>" or the
	// custom script's file name.
	TransactionType string
	// Protocol is the "query mode": simple, extended or prepared.
	Protocol string
	// TPS is "tps = N (without initial connection time)": successful
	// transactions per second of the run, connection set-up excluded.
	TPS float64
	// LatencyAvgMs is "latency average = X ms". With --progress, --rate or
	// --latency-limit it is the mean of the measured transaction latencies;
	// otherwise pgbench derives it from the run time (run time * clients /
	// transactions), which also counts each client's time between
	// transactions.
	LatencyAvgMs float64
	// LatencyIncludesFailures is set when the average line ends with
	// "(including failures)": failed transactions count in the derived
	// average.
	LatencyIncludesFailures bool
	// LatencyStddevMs is "latency stddev = X ms" (the population standard
	// deviation of the measured latencies), which pgbench prints only with
	// --progress, --rate or --latency-limit; 0 when not printed.
	LatencyStddevMs float64
	// HasStddev reports whether pgbench printed the stddev line.
	HasStddev bool
	// Transactions is "number of transactions actually processed: N" (N/M
	// with --transactions): the successful transactions, without failed
	// or skipped ones.
	Transactions int64
	// Failed is "number of failed transactions: N (x%)": transactions that
	// ended in a serialization failure or deadlock and were not retried.
	Failed int64
	// Skipped is "number of transactions skipped: N (x%)", printed with
	// --rate and --latency-limit: transactions not sent because they were
	// already later than the limit; 0 when not printed.
	Skipped int64
	// Clients is "number of clients".
	Clients int
	// Threads is "number of threads" (pgbench uses no more threads than
	// clients).
	Threads int
	// DurationSeconds is "duration: N s" with --time. With --transactions
	// pgbench prints no duration, and it is derived as Transactions / TPS,
	// the time pgbench divided by (0 when TPS is 0).
	DurationSeconds float64
	// Scale is "scaling factor: N": for built-in scripts the scale pgbench
	// found in pgbench_branches, for custom scripts the one passed.
	Scale int
	// LagAvgMs is the average of "rate limit schedule lag: avg X (max Y)
	// ms", printed with --rate; 0 otherwise.
	LagAvgMs float64
	// InitialConnectMs is "initial connection time = X ms".
	InitialConnectMs float64
	// Raw is the text that was parsed.
	Raw string
}

// errQuoteLimit bounds how much of pgbench's text an error quotes.
const errQuoteLimit = 4000

// ParseSummary parses the summary pgbench 15 prints to stdout. It reads
// the lines up to and including "tps = ..." and ignores anything else (the
// per-script and per-command reports after it, and progress lines, which
// pgbench writes to stderr). The "tps", "latency average" and "number of
// transactions actually processed" lines are required: a run whose clients
// all aborted prints none of the first two, and the error quotes the text.
//
// A run in which some clients abort still prints a full summary: only
// pgbench's exit status (2) and stderr tell, so the caller checks those.
func ParseSummary(stdout string) (Summary, error) {
	s := Summary{Raw: stdout}
	var haveTPS, haveLatency, haveProcessed, haveDuration bool
	// lines maps the prefix of each summary line to the parser of the rest.
	lines := []struct {
		prefix string
		parse  func(rest string) error
	}{
		{"transaction type: ", func(v string) error { s.TransactionType = v; return nil }},
		{"query mode: ", func(v string) error { s.Protocol = v; return nil }},
		{"scaling factor: ", func(v string) (err error) { s.Scale, err = strconv.Atoi(v); return err }},
		{"number of clients: ", func(v string) (err error) { s.Clients, err = strconv.Atoi(v); return err }},
		{"number of threads: ", func(v string) (err error) { s.Threads, err = strconv.Atoi(v); return err }},
		{"duration: ", func(v string) error {
			n, ok := strings.CutSuffix(v, " s")
			if !ok {
				return errors.New(`no unit "s"`)
			}
			var err error
			s.DurationSeconds, err = strconv.ParseFloat(n, 64)
			haveDuration = err == nil
			return err
		}},
		{"number of transactions actually processed: ", func(v string) error {
			n, _, _ := strings.Cut(v, "/") // "N/M" with --transactions
			var err error
			s.Transactions, err = strconv.ParseInt(n, 10, 64)
			haveProcessed = err == nil
			return err
		}},
		{"number of failed transactions: ", func(v string) (err error) { s.Failed, err = parseCount(v); return err }},
		{"number of transactions skipped: ", func(v string) (err error) { s.Skipped, err = parseCount(v); return err }},
		{"latency average = ", func(v string) error {
			v, s.LatencyIncludesFailures = strings.CutSuffix(v, " (including failures)")
			var err error
			s.LatencyAvgMs, err = parseMs(v)
			haveLatency = err == nil
			return err
		}},
		{"latency stddev = ", func(v string) error {
			var err error
			s.LatencyStddevMs, err = parseMs(v)
			s.HasStddev = err == nil
			return err
		}},
		{"rate limit schedule lag: avg ", func(v string) error {
			n, _, _ := strings.Cut(v, " ") // "X (max Y) ms"
			var err error
			s.LagAvgMs, err = strconv.ParseFloat(n, 64)
			return err
		}},
		{"initial connection time = ", func(v string) (err error) { s.InitialConnectMs, err = parseMs(v); return err }},
		{"tps = ", func(v string) error {
			n, _, _ := strings.Cut(v, " ") // "N (without initial connection time)"
			var err error
			s.TPS, err = strconv.ParseFloat(n, 64)
			haveTPS = err == nil
			return err
		}},
	}

	for line := range strings.Lines(stdout) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "pgbench (") && strings.HasSuffix(line, ")") {
			s.PgbenchVersion, s.ServerVersion = parseBanner(line)
			continue
		}
		for _, l := range lines {
			rest, ok := strings.CutPrefix(line, l.prefix)
			if !ok {
				continue
			}
			if err := l.parse(rest); err != nil {
				return Summary{}, fmt.Errorf("reading pgbench's summary line %q: %w", line, err)
			}
			break
		}
		if haveTPS {
			// The summary ends here; per-script reports may follow.
			break
		}
	}

	var missing []string
	if !haveProcessed {
		missing = append(missing, `"number of transactions actually processed"`)
	}
	if !haveLatency {
		missing = append(missing, `"latency average"`)
	}
	if !haveTPS {
		missing = append(missing, `"tps"`)
	}
	if len(missing) > 0 {
		return Summary{}, fmt.Errorf("pgbench printed no complete summary (no %s line; did every client abort?): %s",
			strings.Join(missing, ", "), quote(stdout))
	}
	if !haveDuration && s.TPS > 0 {
		s.DurationSeconds = float64(s.Transactions) / s.TPS
	}
	return s, nil
}

// parseMs parses "X ms".
func parseMs(v string) (float64, error) {
	n, ok := strings.CutSuffix(v, " ms")
	if !ok {
		return 0, fmt.Errorf("%q has no unit \"ms\"", v)
	}
	return strconv.ParseFloat(n, 64)
}

// parseCount parses "N (x%)", the percentage being optional.
func parseCount(v string) (int64, error) {
	n, _, _ := strings.Cut(v, " ")
	return strconv.ParseInt(n, 10, 64)
}

// parseBanner reads pgbench's first line, "pgbench (VERSION)" or "pgbench
// (VERSION, server SERVER_VERSION)", where each version may carry a
// parenthesised build note, and returns the two version numbers.
func parseBanner(line string) (pgbenchVersion, serverVersion string) {
	inner := strings.TrimSuffix(strings.TrimPrefix(line, "pgbench ("), ")")
	client, server, found := strings.Cut(inner, ", server ")
	pgbenchVersion = firstField(client)
	if !found {
		return pgbenchVersion, pgbenchVersion
	}
	return pgbenchVersion, firstField(server)
}

// firstField returns the text up to the first space.
func firstField(s string) string {
	f, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return f
}

// quote returns s quoted for an error message, shortened to its last
// errQuoteLimit bytes.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > errQuoteLimit {
		s = "..." + s[len(s)-errQuoteLimit:]
	}
	return strconv.Quote(s)
}

// versionPattern matches `pgbench --version` output.
var versionPattern = regexp.MustCompile(`\(PostgreSQL\) (\d+(?:\.\d+)*[0-9A-Za-z]*)`)

// ParseVersion returns the version number from `pgbench --version` output:
// "pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" gives "15.18",
// "pgbench (PostgreSQL) 17beta1" gives "17beta1".
func ParseVersion(out string) (string, error) {
	m := versionPattern.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("no version in pgbench --version output %s: expected \"pgbench (PostgreSQL) N.N\"", quote(out))
	}
	return m[1], nil
}

// Progress is one progress line, which pgbench writes to stderr every
// --progress seconds with figures for that interval only.
type Progress struct {
	// Elapsed is the time since the run began, in seconds (a Unix time
	// with --progress-timestamp).
	Elapsed float64
	// TPS is the interval's successful transactions per second.
	TPS float64
	// LatencyAvgMs and LatencyStddevMs are the mean and standard deviation
	// of the interval's latencies (0 when none completed).
	LatencyAvgMs, LatencyStddevMs float64
	// Failed is the interval's failed transactions (pgbench 15 and later).
	Failed int64
	// LagMs is the average schedule lag, printed with --rate.
	LagMs float64
	// Skipped is the interval's skipped transactions, printed with --rate
	// and --latency-limit.
	Skipped int64
	// Retried and Retries are the interval's retried transactions and
	// retries, printed with --max-tries other than 1.
	Retried, Retries int64
}

// progressPattern matches pgbench 15's progress line; the failed count is
// optional so that pgbench 14's lines also match.
var progressPattern = regexp.MustCompile(`^progress: (\S+) s, (\S+) tps, lat (\S+) ms stddev (\S+)` +
	`(?:, (\d+) failed)?(?:, lag (\S+) ms)?(?:, (\d+) skipped)?(?:, (\d+) retried, (\d+) retries)?$`)

// ParseProgress parses one progress line, such as "progress: 5.0 s, 1234.5
// tps, lat 0.808 ms stddev 0.123, 0 failed" (with ", lag 0.137 ms" and ",
// N skipped" under --rate). It reports false for any other line, so the
// caller can feed it every stderr line.
func ParseProgress(line string) (Progress, bool) {
	m := progressPattern.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return Progress{}, false
	}
	var p Progress
	floats := []*float64{&p.Elapsed, &p.TPS, &p.LatencyAvgMs, &p.LatencyStddevMs}
	for i, dst := range floats {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return Progress{}, false
		}
		*dst = v
	}
	optional := []struct {
		text string
		dst  any
	}{{m[5], &p.Failed}, {m[6], &p.LagMs}, {m[7], &p.Skipped}, {m[8], &p.Retried}, {m[9], &p.Retries}}
	for _, o := range optional {
		if o.text == "" {
			continue
		}
		var err error
		switch dst := o.dst.(type) {
		case *int64:
			*dst, err = strconv.ParseInt(o.text, 10, 64)
		case *float64:
			*dst, err = strconv.ParseFloat(o.text, 64)
		}
		if err != nil {
			return Progress{}, false
		}
	}
	return p, true
}
