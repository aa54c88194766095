package pgbench_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// meanTolerance is how far, in ms, the mean of the log may be from the
// "latency average" pgbench printed when it measured each transaction
// (--progress, --rate or --latency-limit). pgbench sums the same whole
// microseconds it logs, so the two differ only by the rounding of the
// printed figure to three decimals: at most 0.0005 ms, plus float noise.
// Without those options the printed average is derived from the run time
// (run time * clients / transactions), which also counts each client's time
// between transactions, and the log's mean is lower (see hot_failed below).
const meanTolerance = 0.0005 + 1e-9

// addLogs adds every file matching testdata/pattern to a and returns how
// many lines they hold.
func addLogs(t *testing.T, a *pgbench.LogAccumulator, pattern string) (files int, lines int64) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines += int64(strings.Count(string(b), "\n"))
		if err := a.Add(strings.NewReader(string(b))); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return len(paths), lines
}

// checkOrdered fails unless min <= p50 <= p90 <= p95 <= p99 <= max.
func checkOrdered(t *testing.T, st pgbench.LogStats) {
	t.Helper()
	chain := []float64{st.Min, st.P50, st.P90, st.P95, st.P99, st.Max}
	for i := 1; i < len(chain); i++ {
		if chain[i-1] > chain[i] {
			t.Errorf("percentiles out of order (min, p50, p90, p95, p99, max) = %v", chain)
			return
		}
	}
}

// TestLogAccumulatorCaptured reads the real per-transaction logs of pgbench
// 15.18 (two threads, so two files per run; commands in
// testdata/README.md) and checks them against the summary of the same run.
func TestLogAccumulatorCaptured(t *testing.T) {
	tests := []struct {
		name, stdout, logs    string
		ok, skipped, failed   int64
		measured              bool // the printed average is the mean of measured latencies
		wantMean, wantStddev  float64
		wantP50, wantP99, max float64
	}{
		{name: "talk_log", stdout: "talk_log.stdout", logs: "talk_log/talk.*",
			ok: 2000, measured: true},
		{name: "talk_rate_skipped", stdout: "talk_rate_skipped.stdout", logs: "talk_rate_skipped/talk.*",
			ok: 1842, skipped: 136, measured: true},
		{name: "hot_failed", stdout: "hot_failed.stdout", logs: "hot_failed/hot.*",
			ok: 360, failed: 440},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := pgbench.ParseSummary(readTestdata(t, tt.stdout))
			if err != nil {
				t.Fatal(err)
			}
			var a pgbench.LogAccumulator
			files, lines := addLogs(t, &a, tt.logs)
			if files != 2 {
				t.Fatalf("%d log files, want 2 (one per thread)", files)
			}
			st, err := a.Stats()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", st)
			if st.Transactions != tt.ok || st.Skipped != tt.skipped || st.Failed != tt.failed {
				t.Errorf("(ok, skipped, failed) = (%d, %d, %d), want (%d, %d, %d)",
					st.Transactions, st.Skipped, st.Failed, tt.ok, tt.skipped, tt.failed)
			}
			if got := st.Transactions + st.Skipped + st.Failed; got != lines || a.Lines() != lines {
				t.Errorf("ok+skipped+failed = %d, Lines() = %d, want the files' %d lines", got, a.Lines(), lines)
			}
			if st.Transactions != sum.Transactions || st.Skipped != sum.Skipped || st.Failed != sum.Failed {
				t.Errorf("log (ok, skipped, failed) = (%d, %d, %d), summary = (%d, %d, %d)",
					st.Transactions, st.Skipped, st.Failed, sum.Transactions, sum.Skipped, sum.Failed)
			}
			checkOrdered(t, st)
			if tt.measured {
				if d := math.Abs(st.Mean - sum.LatencyAvgMs); d > meanTolerance {
					t.Errorf("log mean %.6f ms is %.6f ms from the printed average %.3f ms (tolerance %.4f)",
						st.Mean, d, sum.LatencyAvgMs, meanTolerance)
				}
				if d := math.Abs(st.Stddev - sum.LatencyStddevMs); !sum.HasStddev || d > meanTolerance {
					t.Errorf("log stddev %.6f ms is %.6f ms from the printed stddev %.3f ms (printed: %v)",
						st.Stddev, d, sum.LatencyStddevMs, sum.HasStddev)
				}
			} else if st.Mean > sum.LatencyAvgMs+meanTolerance {
				t.Errorf("log mean %.6f ms is above the derived average %.3f ms", st.Mean, sum.LatencyAvgMs)
			}
		})
	}
}

// TestLogAccumulatorCapturedFigures pins the talk_log figures, worked out
// independently with awk over the two files:
//
//	cat testdata/talk_log/talk.* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[1000], a[1800], a[1900], a[1980], a[NR], a[1]}'
//	72 179 242 295 1798 63
//	cat testdata/talk_log/talk.* | awk '{s+=$3} END {print s, NR}'
//	207017 2000
func TestLogAccumulatorCapturedFigures(t *testing.T) {
	var a pgbench.LogAccumulator
	addLogs(t, &a, "talk_log/talk.*")
	st, err := a.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want := pgbench.LogStats{Transactions: 2000, P50: 0.072, P90: 0.179, P95: 0.242, P99: 0.295, Max: 1.798, Min: 0.063,
		Mean: 207017.0 / 2000 / 1000, Stddev: st.Stddev}
	if math.Abs(st.Mean-want.Mean) > 1e-9 {
		t.Errorf("Mean = %v, want %v", st.Mean, want.Mean)
	}
	st.Mean = want.Mean
	if st != want {
		t.Errorf("Stats() =\n%+v\nwant\n%+v", st, want)
	}
}

// us builds log lines with the given latencies in microseconds.
func us(latencies ...int) string {
	var b strings.Builder
	for i, l := range latencies {
		b.WriteString("0 " + strconv.Itoa(i+1) + " " + strconv.Itoa(l) + " 0 1796043811 " + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestLogAccumulatorPercentilesByHand checks the nearest-rank method: the
// p-th percentile of n sorted latencies is the ceil(p/100 * n)-th.
func TestLogAccumulatorPercentilesByHand(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1 µs, reversed
	}
	tests := []struct {
		name string
		logs []string
		want pgbench.LogStats
	}{
		{
			// n = 10: ranks 5, 9, ceil(9.5) = 10, ceil(9.9) = 10. Mean 0.55 ms;
			// population variance of 0.1..1.0 ms is 0.01 * 8.25.
			name: "ten, shuffled, two files",
			logs: []string{us(700, 100, 1000, 400), us(300, 900, 200, 600, 800, 500)},
			want: pgbench.LogStats{Transactions: 10, P50: 0.5, P90: 0.9, P95: 1.0, P99: 1.0, Max: 1.0, Min: 0.1,
				Mean: 0.55, Stddev: math.Sqrt(0.01 * 8.25)},
		},
		{
			// n = 100: rank p exactly (0.95*100 and 0.07*100 are not exact in
			// floating point, so the rank must be integer arithmetic).
			name: "one to a hundred",
			logs: []string{us(hundred...)},
			want: pgbench.LogStats{Transactions: 100, P50: 0.050, P90: 0.090, P95: 0.095, P99: 0.099, Max: 0.1, Min: 0.001,
				Mean: 0.0505, Stddev: math.Sqrt(9999.0/12) / 1000},
		},
		{
			// n = 3 with a repeat: ranks 2, ceil(2.7) = 3, 3, 3. Mean 1670 µs;
			// deviations -1665, -1665, 3330: variance (2*1665² + 3330²)/3 = 5544450 µs².
			name: "repeats",
			logs: []string{us(5, 5000, 5)},
			want: pgbench.LogStats{Transactions: 3, P50: 0.005, P90: 5, P95: 5, P99: 5, Max: 5, Min: 0.005,
				Mean: 1.670, Stddev: math.Sqrt(5544450) / 1000},
		},
		{
			name: "one",
			logs: []string{us(1234)},
			want: pgbench.LogStats{Transactions: 1, P50: 1.234, P90: 1.234, P95: 1.234, P99: 1.234, Max: 1.234, Min: 1.234, Mean: 1.234},
		},
		{
			// A zero latency is a real (sub-microsecond) one; skipped, failed
			// and blank lines carry none. Lag and retries columns are read past.
			name: "zero, skipped, failed, lag and retries columns",
			logs: []string{"0 1 0 0 1796043822 258446 71 0\n\n0 2 skipped 0 1796043822 258475 0 0\n" +
				"1 1 failed 0 1796043822 258476 12 2\n1 2 serialization 0 1796043822 258477 3 2\n" +
				"1 3 deadlock 0 1796043822 258478 3 2\n1 4 2000 0 1796043822 258479 5 1\n"},
			want: pgbench.LogStats{Transactions: 2, Skipped: 1, Failed: 3, P50: 0, P90: 2, P95: 2, P99: 2, Max: 2, Min: 0,
				Mean: 1, Stddev: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a pgbench.LogAccumulator
			for _, l := range tt.logs {
				if err := a.Add(strings.NewReader(l)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := a.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Mean-tt.want.Mean) > 1e-12 || math.Abs(got.Stddev-tt.want.Stddev) > 1e-12 {
				t.Errorf("mean, stddev = %v, %v, want %v, %v", got.Mean, got.Stddev, tt.want.Mean, tt.want.Stddev)
			}
			got.Mean, got.Stddev = tt.want.Mean, tt.want.Stddev
			if got != tt.want {
				t.Errorf("Stats() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestLogAccumulatorErrors(t *testing.T) {
	for _, line := range []string{
		"0 1 100 0 1796043811",                        // 5 fields
		"0 1 100 0 1796043811 1 2 3 4",                // 9 fields
		"0 1 1.5 0 1796043811 436036",                 // not whole microseconds
		"0 1 -3 0 1796043811 436036",                  // negative
		"0 1 aborted 0 1796043811 1",                  // unknown status
		"x 1 100 0 1796043811 436036",                 // client id
		"0 1 100 0 1796043811.5 436036",               // epoch
		"1345828501 5601 1542744 483552416 61 2573 x", // aggregated-log-like with junk
	} {
		var a pgbench.LogAccumulator
		err := a.AddLine(line)
		if err == nil {
			t.Errorf("AddLine(%q) = nil, want an error", line)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(line)) {
			t.Errorf("AddLine(%q) = %q, want it to quote the line", line, err)
		}
		if a.Lines() != 0 {
			t.Errorf("AddLine(%q) counted the bad line", line)
		}
	}

	var a pgbench.LogAccumulator
	err := a.Add(strings.NewReader(us(100, 200) + "garbage\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Errorf("Add() = %v, want an error naming line 3", err)
	}

	var empty pgbench.LogAccumulator
	if _, err := empty.Stats(); err == nil {
		t.Error("Stats() of nothing = nil error")
	}
	var onlySkipped pgbench.LogAccumulator
	if err := onlySkipped.AddLine("0 1 skipped 0 1796043822 258475 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := onlySkipped.Stats(); err == nil || !strings.Contains(err.Error(), "no successful transaction") {
		t.Errorf("Stats() of only skipped lines = %v, want an error", err)
	}
}
