package pgbench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LogStats summarises pgbench per-transaction logs. Latencies are in
// milliseconds and cover the successful transactions only.
type LogStats struct {
	// Transactions is the number of successful transactions (lines with a
	// latency). It equals the summary's "number of transactions actually
	// processed"; the log's line count is Transactions + Skipped + Failed.
	Transactions int64
	// Skipped is the number of "skipped" lines (--rate with
	// --latency-limit).
	Skipped int64
	// Failed is the number of failed lines ("failed", or "serialization"
	// and "deadlock" with --failures-detailed).
	Failed int64
	// P50, P90, P95 and P99 are nearest-rank percentiles: the smallest
	// latency L such that at least p% of the latencies are <= L, that is
	// the ceil(p/100 * n)-th smallest of n. Each is a latency pgbench
	// logged, never an interpolation.
	P50, P90, P95, P99 float64
	// Max and Min are the largest and smallest latency.
	Max, Min float64
	// Mean is the arithmetic mean of the latencies.
	Mean float64
	// Stddev is the population standard deviation of the latencies, as
	// pgbench computes "latency stddev".
	Stddev float64
}

// LogAccumulator collects the per-transaction log lines of one pgbench run,
// from one or more files (pgbench writes one per thread), in any order.
// The zero value is ready to use; it is not safe for concurrent use.
//
// pgbench 15 writes, without --aggregate-interval, one line per
// transaction:
//
//	client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//
// where time is the latency in whole microseconds, or "skipped" or
// "failed" ("serialization" or "deadlock" with --failures-detailed);
// schedule_lag (microseconds) is present with --rate and retries with
// --max-tries other than 1. Aggregated logs (--aggregate-interval) have
// another format and are not supported.
//
// Latencies are whole microseconds, so the accumulator keeps a count per
// distinct value: memory grows with the number of distinct latencies, not
// with the number of transactions, and the percentiles stay exact.
type LogAccumulator struct {
	counts          map[int64]int64 // latency in microseconds -> transactions
	ok              int64           // successful transactions
	skipped, failed int64
	sumUs           int64 // sum of the latencies, microseconds
	lines           int64
}

// AddLine adds one log line; a blank line is ignored. The error quotes a
// line that is not in the format above.
func (a *LogAccumulator) AddLine(line string) error {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	if len(fields) < 6 || len(fields) > 8 {
		return fmt.Errorf("pgbench log line %q has %d fields, want 6 to 8 (client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries])", line, len(fields))
	}
	for i, f := range fields {
		if i == 2 {
			continue // the latency or status, read below
		}
		if _, err := strconv.ParseInt(f, 10, 64); err != nil {
			return fmt.Errorf("pgbench log line %q: field %d (%s) is not an integer", line, i+1, f)
		}
	}
	a.lines++
	switch fields[2] {
	case "skipped":
		a.skipped++
		return nil
	case "failed", "serialization", "deadlock", "other":
		a.failed++
		return nil
	}
	us, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil || us < 0 {
		a.lines--
		return fmt.Errorf("pgbench log line %q: the latency %q is neither whole microseconds nor skipped or failed", line, fields[2])
	}
	if a.counts == nil {
		a.counts = make(map[int64]int64)
	}
	a.counts[us]++
	a.ok++
	a.sumUs += us
	return nil
}

// Add adds every line read from r, such as one thread's log file. The
// error names the line number; lines before it stay added.
func (a *LogAccumulator) Add(r io.Reader) error {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		if err := a.AddLine(sc.Text()); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the pgbench log after line %d: %w", n, err)
	}
	return nil
}

// Lines returns the number of log lines added (blank lines aside):
// successful, skipped and failed transactions alike.
func (a *LogAccumulator) Lines() int64 { return a.lines }

// Stats returns the statistics of the lines added so far. It fails when no
// line holds a latency (no successful transaction).
func (a *LogAccumulator) Stats() (LogStats, error) {
	if a.ok == 0 {
		return LogStats{}, errors.New("the pgbench log holds no successful transaction: percentiles need at least one latency")
	}
	values := make([]int64, 0, len(a.counts))
	for v := range a.counts {
		values = append(values, v)
	}
	slices.Sort(values)

	meanUs := float64(a.sumUs) / float64(a.ok)
	var sq float64
	for _, v := range values {
		d := float64(v) - meanUs
		sq += float64(a.counts[v]) * d * d
	}

	st := LogStats{
		Transactions: a.ok,
		Skipped:      a.skipped,
		Failed:       a.failed,
		Min:          ms(values[0]),
		Max:          ms(values[len(values)-1]),
		Mean:         meanUs / 1000,
		Stddev:       math.Sqrt(sq/float64(a.ok)) / 1000,
	}
	for _, p := range []struct {
		pct int64
		dst *float64
	}{{50, &st.P50}, {90, &st.P90}, {95, &st.P95}, {99, &st.P99}} {
		*p.dst = ms(a.nearestRank(values, p.pct))
	}
	return st, nil
}

// nearestRank returns the ceil(pct/100 * n)-th smallest latency (at least
// the first), walking the sorted distinct values and their counts. The rank
// is computed in integers: in floating point 0.07*100 is above 7.
func (a *LogAccumulator) nearestRank(values []int64, pct int64) int64 {
	rank := max((pct*a.ok+99)/100, 1)
	var seen int64
	for _, v := range values {
		seen += a.counts[v]
		if seen >= rank {
			return v
		}
	}
	return values[len(values)-1]
}

// ms converts microseconds to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
