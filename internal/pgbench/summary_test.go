package pgbench_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// readTestdata returns the text of testdata/name.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tpsLine finds the digits of pgbench's tps line, independently of
// ParseSummary.
var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)$`)

// printedTPS returns the tps digits exactly as pgbench printed them.
func printedTPS(t *testing.T, stdout string) string {
	t.Helper()
	m := tpsLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no tps line in %q", stdout)
	}
	return m[1]
}

// formatTPS formats tps as pgbench does, with C's %f (six decimals).
func formatTPS(tps float64) string { return strconv.FormatFloat(tps, 'f', 6, 64) }

// TestParseSummaryCaptured parses real pgbench 15.18 summaries; the exact
// command of each capture is in testdata/README.md.
func TestParseSummaryCaptured(t *testing.T) {
	tests := []struct {
		file string
		want pgbench.Summary // Raw is filled in from the file
	}{
		// Built-in tpcb-like for 3 s: no stddev line, the average derived
		// from the run time.
		{"tpcb_time.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "<builtin: TPC-B (sort of)>",
			Protocol: "simple", TPS: 5845.862208, LatencyAvgMs: 0.342, Transactions: 17510,
			Clients: 2, Threads: 2, DurationSeconds: 3, Scale: 1, InitialConnectMs: 5.158,
		}},
		// Custom script with --transactions: "N/M" and no duration line.
		{"talk_transactions.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "talk.sql",
			Protocol: "extended", TPS: 23007.017140, LatencyAvgMs: 0.087, Transactions: 1000,
			Clients: 2, Threads: 2, DurationSeconds: 1000 / 23007.017140, Scale: 1, InitialConnectMs: 3.846,
		}},
		// --rate and --progress: stddev and schedule lag.
		{"selectonly_rate_progress.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "<builtin: select only>",
			Protocol: "prepared", TPS: 199.684585, LatencyAvgMs: 0.284, LatencyStddevMs: 0.105, HasStddev: true,
			Transactions: 597, Clients: 2, Threads: 2, DurationSeconds: 3, Scale: 1,
			LagAvgMs: 0.124, InitialConnectMs: 4.348,
		}},
		// --progress alone.
		{"talk_progress.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "talk.sql",
			Protocol: "simple", TPS: 27612.940579, LatencyAvgMs: 0.072, LatencyStddevMs: 0.028, HasStddev: true,
			Transactions: 82795, Clients: 2, Threads: 2, DurationSeconds: 3, Scale: 1, InitialConnectMs: 5.731,
		}},
		// --log with --progress and --transactions.
		{"talk_log.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "talk.sql",
			Protocol: "simple", TPS: 18800.526415, LatencyAvgMs: 0.104, LatencyStddevMs: 0.073, HasStddev: true,
			Transactions: 2000, Clients: 2, Threads: 2, DurationSeconds: 2000 / 18800.526415, Scale: 1,
			InitialConnectMs: 6.366,
		}},
		// --rate with --latency-limit: skipped transactions.
		{"talk_rate_skipped.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "talk.sql",
			Protocol: "simple", TPS: 923.086637, LatencyAvgMs: 0.228, LatencyStddevMs: 0.065, HasStddev: true,
			Transactions: 1842, Skipped: 136, Clients: 2, Threads: 2, DurationSeconds: 2, Scale: 1,
			LagAvgMs: 0.091, InitialConnectMs: 4.617,
		}},
		// Serialization failures: "(including failures)".
		{"hot_failed.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "hot.sql",
			Protocol: "simple", TPS: 4303.286037, LatencyAvgMs: 0.418, LatencyIncludesFailures: true,
			Transactions: 360, Failed: 440, Clients: 4, Threads: 2, DurationSeconds: 360 / 4303.286037, Scale: 1,
			InitialConnectMs: 6.159,
		}},
		// Retries, skipped and failed at once.
		{"hot_retries_progress.stdout", pgbench.Summary{
			PgbenchVersion: "15.18", ServerVersion: "15.18", TransactionType: "hot.sql",
			Protocol: "simple", TPS: 1720.673546, LatencyAvgMs: 0.384, LatencyStddevMs: 0.171, HasStddev: true,
			Transactions: 5156, Failed: 700, Skipped: 20, Clients: 4, Threads: 2, DurationSeconds: 3, Scale: 1,
			LagAvgMs: 0.083, InitialConnectMs: 5.939,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := readTestdata(t, tt.file)
			got, err := pgbench.ParseSummary(raw)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Raw = raw
			if got != tt.want {
				t.Errorf("ParseSummary() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestParseSummaryTPSIsThePrintedDecimal checks that TPS formats back to
// exactly the digits pgbench printed.
func TestParseSummaryTPSIsThePrintedDecimal(t *testing.T) {
	for _, file := range []string{"tpcb_time.stdout", "talk_transactions.stdout", "talk_log.stdout", "hot_failed.stdout"} {
		raw := readTestdata(t, file)
		s, err := pgbench.ParseSummary(raw)
		if err != nil {
			t.Fatal(err)
		}
		if printed := printedTPS(t, raw); formatTPS(s.TPS) != printed {
			t.Errorf("%s: TPS %v formats as %s, pgbench printed %s", file, s.TPS, formatTPS(s.TPS), printed)
		}
	}
}

func TestParseSummaryErrors(t *testing.T) {
	tests := []struct {
		name, stdout string
		want         []string
	}{
		// Every client aborted (missing tables): pgbench stops the summary
		// after the failed-transactions line and exits with status 2.
		{"aborted run", readTestdata(t, "aborted_missing_tables.stdout"),
			[]string{`no "latency average", "tps" line`, "did every client abort?", `number of transactions actually processed: 0`}},
		{"empty", "", []string{`no "number of transactions actually processed", "latency average", "tps" line`}},
		{"garbage", "hello\nworld\n", []string{`"hello\nworld"`}},
		{"bad number", "number of transactions actually processed: many\n", []string{`summary line "number of transactions actually processed: many"`}},
		{"bad tps", "tps = fast (without initial connection time)\n", []string{`summary line "tps = fast`}},
		{"latency without unit", "latency average = 0.3\n", []string{`no unit "ms"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgbench.ParseSummary(tt.stdout)
			if err == nil {
				t.Fatal("ParseSummary() = nil error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseSummary() error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestParseSummaryServerVersionAndReports covers what no capture here shows:
// a server of another version (pgbench then names it) and the per-script
// report after the tps line, whose " - latency average" must not win. The
// lines follow pgbench 15's printVersion and printResults.
func TestParseSummaryServerVersionAndReports(t *testing.T) {
	out := "pgbench (15.18 (Debian 15.18-0+deb12u1), server 16.4 (Ubuntu 16.4-1))\r\n" +
		"transaction type: multiple scripts\r\n" +
		"scaling factor: 10\r\n" +
		"query mode: simple\r\n" +
		"number of clients: 8\r\n" +
		"number of threads: 8\r\n" +
		"maximum number of tries: 1\r\n" +
		"duration: 60 s\r\n" +
		"number of transactions actually processed: 1000\r\n" +
		"number of failed transactions: 0 (0.000%)\r\n" +
		"latency average = 1.500 ms\r\n" +
		"initial connection time = 2.000 ms\r\n" +
		"tps = 16.666667 (without initial connection time)\r\n" +
		"SQL script 1: talk.sql\r\n" +
		" - weight: 1 (targets 100.0% of total)\r\n" +
		" - latency average = 9.999 ms\r\n"
	s, err := pgbench.ParseSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.PgbenchVersion != "15.18" || s.ServerVersion != "16.4" {
		t.Errorf("versions = %q, %q, want 15.18, 16.4", s.PgbenchVersion, s.ServerVersion)
	}
	if s.LatencyAvgMs != 1.5 || s.TPS != 16.666667 || s.DurationSeconds != 60 || s.Scale != 10 || s.Clients != 8 {
		t.Errorf("ParseSummary() = %+v", s)
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct{ out, want string }{
		{readTestdata(t, "version.txt"), "15.18"},
		{"pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18"},
		{"pgbench (PostgreSQL) 16.4\n", "16.4"},
		{"pgbench (PostgreSQL) 17beta1", "17beta1"},
		{"pgbench (PostgreSQL) 18devel", "18devel"},
	}
	for _, tt := range tests {
		got, err := pgbench.ParseVersion(tt.out)
		if err != nil || got != tt.want {
			t.Errorf("ParseVersion(%q) = %q, %v, want %q", tt.out, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "pgbench: command not found", "psql (PostgreSQL)"} {
		if got, err := pgbench.ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// TestParseProgressCaptured parses the progress lines pgbench 15.18 wrote
// to stderr in the captures (commands in testdata/README.md).
func TestParseProgressCaptured(t *testing.T) {
	tests := []struct {
		file string
		want []pgbench.Progress
	}{
		{"talk_progress.stderr", []pgbench.Progress{
			{Elapsed: 1, TPS: 27505.8, LatencyAvgMs: 0.072, LatencyStddevMs: 0.034},
			{Elapsed: 2, TPS: 27540.8, LatencyAvgMs: 0.072, LatencyStddevMs: 0.023},
			{Elapsed: 3, TPS: 27745.6, LatencyAvgMs: 0.072, LatencyStddevMs: 0.026},
		}},
		// Under --rate the lag follows; the last interval of a --time run
		// may be missing. The warning and "starting vacuum...end." lines are
		// not progress.
		{"selectonly_rate_progress.stderr", []pgbench.Progress{
			{Elapsed: 1, TPS: 194, LatencyAvgMs: 0.307, LatencyStddevMs: 0.130, LagMs: 0.129},
			{Elapsed: 2, TPS: 197, LatencyAvgMs: 0.282, LatencyStddevMs: 0.096, LagMs: 0.124},
		}},
		{"hot_retries_progress.stderr", []pgbench.Progress{
			{Elapsed: 1, TPS: 1751.9, LatencyAvgMs: 0.354, LatencyStddevMs: 0.185, Failed: 165, LagMs: 0.080, Skipped: 10, Retried: 290, Retries: 294},
			{Elapsed: 2, TPS: 1673.0, LatencyAvgMs: 0.410, LatencyStddevMs: 0.165, Failed: 296, LagMs: 0.087, Skipped: 6, Retried: 193, Retries: 193},
			{Elapsed: 3, TPS: 1731.1, LatencyAvgMs: 0.390, LatencyStddevMs: 0.156, Failed: 239, LagMs: 0.083, Skipped: 4, Retried: 260, Retries: 261},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var got []pgbench.Progress
			for line := range strings.Lines(readTestdata(t, tt.file)) {
				if p, ok := pgbench.ParseProgress(line); ok {
					got = append(got, p)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parsed %d progress lines, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d: %+v, want %+v", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseProgressOther(t *testing.T) {
	// pgbench 14 printed no failed count.
	p, ok := pgbench.ParseProgress("progress: 60.0 s, 253.4 tps, lat 3.945 ms stddev 0.787")
	if want := (pgbench.Progress{Elapsed: 60, TPS: 253.4, LatencyAvgMs: 3.945, LatencyStddevMs: 0.787}); !ok || p != want {
		t.Errorf("pgbench 14 line: %+v, %v, want %+v", p, ok, want)
	}
	for _, line := range []string{
		"", "starting vacuum...end.", "pgbench: warning: scale option ignored, using count from pgbench_branches table (1)",
		"progress: 1.0 s, fast tps, lat 0.1 ms stddev 0.1, 0 failed",
		"progress: 1.0 s, 1.0 tps, lat 0.1 ms stddev 0.1, 0 failed, and more",
	} {
		if p, ok := pgbench.ParseProgress(line); ok {
			t.Errorf("ParseProgress(%q) = %+v, true, want false", line, p)
		}
	}
}
