package backup_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// calendarBase is the base time of the unit tables and the systemd cross-check.
const calendarBase = "2026-12-01 10:07:13"

// calendarBases are the base times the expressions are cross-checked at: the
// tables' base, and ends of days, months and years where systemd carries.
var calendarBases = []string{calendarBase, "2028-02-28 23:59:59", "2026-11-30 20:59:59", "2026-12-31 23:56:30"}

// goodCalendars are expressions ParseCalendar accepts, with their normalized
// form and their first elapse after calendarBase ("" when there is none
// within five years). The normalized forms and elapses are systemd 252's.
var goodCalendars = []struct {
	expr, norm, next string
}{
	{"minutely", "*-*-* *:*:00", "2026-12-01 10:08:00"},
	{"hourly", "*-*-* *:00:00", "2026-12-01 11:00:00"},
	{"HOURLY", "*-*-* *:00:00", "2026-12-01 11:00:00"},
	{"daily", "*-*-* 00:00:00", "2026-12-02 00:00:00"},
	{"weekly", "Mon *-*-* 00:00:00", "2026-12-07 00:00:00"},
	{"monthly", "*-*-01 00:00:00", "2027-01-01 00:00:00"},
	{"yearly", "*-01-01 00:00:00", "2027-01-01 00:00:00"},
	{"annually", "*-01-01 00:00:00", "2027-01-01 00:00:00"},
	{"anually", "*-01-01 00:00:00", "2027-01-01 00:00:00"},
	{"quarterly", "*-01,04,07,10-01 00:00:00", "2027-01-01 00:00:00"},
	{"semiannually", "*-01,07-01 00:00:00", "2027-01-01 00:00:00"},
	{"semi-annually", "*-01,07-01 00:00:00", "2027-01-01 00:00:00"},
	{"bi-annually", "*-01,07-01 00:00:00", "2027-01-01 00:00:00"},
	{"*:0/5", "*-*-* *:00/5:00", "2026-12-01 10:10:00"},
	{"Mon..Fri 02:30", "Mon..Fri *-*-* 02:30:00", "2026-12-02 02:30:00"},
	{"mon,wed,FRI *-*-* 10:30:15", "Mon,Wed,Fri *-*-* 10:30:15", "2026-12-02 10:30:15"},
	{"Sat,Sun 04:00:30", "Sat,Sun *-*-* 04:00:30", "2026-12-05 04:00:30"},
	{"Tuesday..Thursday 23:59:59", "Tue..Thu *-*-* 23:59:59", "2026-12-01 23:59:59"},
	{"Mon-Wed 12:00", "Mon..Wed *-*-* 12:00:00", "2026-12-01 12:00:00"},
	{"Mon..Wed,Fri,Sat 06:00", "Mon..Wed,Fri,Sat *-*-* 06:00:00", "2026-12-02 06:00:00"},
	{"Mon..Sun 05:00", "*-*-* 05:00:00", "2026-12-02 05:00:00"},
	{"Mon,Tue 1:2:3", "Mon,Tue *-*-* 01:02:03", "2026-12-07 01:02:03"},
	{"mon, 10:00", "Mon *-*-* 10:00:00", "2026-12-07 10:00:00"},
	{"*-*-* 00/6:00:00", "*-*-* 00/6:00:00", "2026-12-01 12:00:00"},
	{"*-*-* 8,12,20:15", "*-*-* 08,12,20:15:00", "2026-12-01 12:15:00"},
	{"*-*-* 10,8,10:00", "*-*-* 08,10:00:00", "2026-12-02 08:00:00"},
	{"*-*-* 01..05:00", "*-*-* 01..05:00:00", "2026-12-02 01:00:00"},
	{"*-*-* 8..17/2:00", "*-*-* 08..16/2:00:00", "2026-12-01 12:00:00"},
	{"*-*-* 8..18/5:00", "*-*-* 08..18/5:00:00", "2026-12-01 13:00:00"},
	{"0..10/1:00", "*-*-* 00..10:00:00", "2026-12-02 00:00:00"},
	{"5/1:00", "*-*-* 05/1:00:00", "2026-12-01 11:00:00"},
	{"*-*-* *:15,45", "*-*-* *:15,45:00", "2026-12-01 10:15:00"},
	{"*:0/1", "*-*-* *:00/1:00", "2026-12-01 10:08:00"},
	{"*:*:0/15", "*-*-* *:*:00/15", "2026-12-01 10:07:15"},
	{"*:*:*", "*-*-* *:*:*", "2026-12-01 10:07:14"},
	{"*:*:0/1", "*-*-* *:*:*", "2026-12-01 10:07:14"},
	{"*:*:9,0/1,5", "*-*-* *:*:*", "2026-12-01 10:07:14"},
	{"*:0/1,5:00", "*-*-* *:00/1,05:00", "2026-12-01 10:08:00"},
	{"*:*:0..30", "*-*-* *:*:00..30", "2026-12-01 10:07:14"},
	{"*:*:10..11/1", "*-*-* *:*:10..11", "2026-12-01 10:08:10"},
	{"*-*-* 0/1:0/30:0/20", "*-*-* 00/1:00/30:00/20", "2026-12-01 10:30:00"},
	{"*-*-* 12:00:30", "*-*-* 12:00:30", "2026-12-01 12:00:30"},
	{"*-*-* 00:00:00,30", "*-*-* 00:00:00,30", "2026-12-02 00:00:00"},
	{"*:00:00/59", "*-*-* *:00:00/59", "2026-12-01 11:00:00"},
	{"*-*-* 00:0/59:0/59", "*-*-* 00:00/59:00/59", "2026-12-02 00:00:00"},
	{"*-*-* 23:59:59", "*-*-* 23:59:59", "2026-12-01 23:59:59"},
	{"2027-01-15 03:00", "2027-01-15 03:00:00", "2027-01-15 03:00:00"},
	{"2026-12-01 10:07:13", "2026-12-01 10:07:13", ""}, // strictly after
	{"2026-12-01 10:07:14", "2026-12-01 10:07:14", "2026-12-01 10:07:14"},
	{"2026-12-01 10:07", "2026-12-01 10:07:00", ""},
	{"2031-01-01", "2031-01-01 00:00:00", "2031-01-01 00:00:00"},
	{"*-12-25", "*-12-25 00:00:00", "2026-12-25 00:00:00"},
	{"12-31 23:59:59", "*-12-31 23:59:59", "2026-12-31 23:59:59"},
	{"*-02-29 12:00", "*-02-29 12:00:00", "2028-02-29 12:00:00"},
	{"*-*-01,15 04:00", "*-*-01,15 04:00:00", "2026-12-15 04:00:00"},
	{"*-*-31", "*-*-31 00:00:00", "2026-12-31 00:00:00"},
	{"*-1/3-1 0:0", "*-01/3-01 00:00:00", "2027-01-01 00:00:00"},
	{"2026..2028-06-01 06:00", "2026..2028-06-01 06:00:00", "2027-06-01 06:00:00"},
	{"2027,2026-*-* 00:00", "2026,2027-*-* 00:00:00", "2026-12-02 00:00:00"},
	{"Fri *-*-13 13:13", "Fri *-*-13 13:13:00", "2027-08-13 13:13:00"},
	{"Sun 2027-*-* 00:00", "Sun 2027-*-* 00:00:00", "2027-01-03 00:00:00"},
	{"Mon *-02-29", "Mon *-02-29 00:00:00", ""}, // systemd: 2044-02-29, beyond five years
	{"*-*", "*-*-* 00:00:00", "2026-12-02 00:00:00"},
	{"Mon *-*-* *:*", "Mon *-*-* *:*:00", "2026-12-07 00:00:00"},
	{"03:00 UTC", "*-*-* 03:00:00 UTC", "2026-12-02 03:00:00"},
	{"hourly utc", "*-*-* *:00:00 UTC", "2026-12-01 11:00:00"},
	{"2199-12-31 23:59:59", "2199-12-31 23:59:59", ""},
	{"0/5:00", "*-*-* 00/5:00:00", "2026-12-01 15:00:00"},
	{"*:0/7", "*-*-* *:00/7:00", "2026-12-01 10:14:00"},
	{"*:*:0/7", "*-*-* *:*:00/7", "2026-12-01 10:07:14"},
	{"*-*-1/9", "*-*-01/9 00:00:00", "2026-12-10 00:00:00"},
	{"*:1/56:*", "*-*-* *:01/56:*", "2026-12-01 10:57:00"},
	{"00/21:12", "*-*-* 00/21:12:00", "2026-12-01 21:12:00"},
	{"*-1/5-1 0/7:0/25:0/13", "*-01/5-01 00/7:00/25:00/13", "2027-01-01 00:00:00"},
}

// carryCalendars are elapses where systemd 252 skips what the expression
// means: a repetition (a/step) that runs past the end of its field at the end
// of an hour, a day, a month or a year is carried into the next one, and the
// search goes on from there. The next elapses are systemd's.
var carryCalendars = []struct {
	expr, base, next, plain string // plain: the elapse the expression means
}{
	{"*:*:0/7", "2026-12-01 10:59:58", "2026-12-01 11:00:07", "2026-12-01 11:00:00"},
	{"*:0/7", "2026-12-01 23:56:30", "2026-12-02 00:07:00", "2026-12-02 00:00:00"},
	{"*:1/56:*", "2026-12-01 23:59:59", "2026-12-02 00:57:00", "2026-12-02 00:01:00"},
	{"0/5:00", "2026-11-30 20:00:00", "2026-12-01 05:00:00", "2026-12-01 00:00:00"},
	{"0/21:12", "2026-11-30 23:59:59", "2026-12-01 21:12:00", "2026-12-01 00:12:00"},
	{"*-*-1/9", "2026-12-30 00:00:00", "2027-01-10 00:00:00", "2027-01-01 00:00:00"},
	{"0/5:00", "2026-12-01 20:00:00", "2026-12-02 00:00:00", "2026-12-02 00:00:00"}, // within a month: no skip
	{"*:0/7", "2026-12-01 22:56:30", "2026-12-01 23:00:00", "2026-12-01 23:00:00"},  // within a day: no skip
}

// tooLongCalendar is valid for systemd but longer than ParseCalendar reads.
var tooLongCalendar = "*-*-* 00:" + strings.Repeat("0,", 45) + "00"

// badCalendars are expressions ParseCalendar refuses, with a substring of
// the error. systemdAccepts records whether systemd 252 accepts the
// expression; it does for these (all refused here on purpose):
//
//   - "*-*-* 10:00:00.5" and "*-*-* 10:00:00.000": fractional seconds;
//   - "*-02~01", "*-*~01" and "*-*~7/2": days counted from the end of the month;
//   - "10:00 Europe/Berlin", "10:00 CET": timezones other than UTC;
//   - "@1700000000": a Unix timestamp;
//   - "26-12-25": a two-digit year (systemd reads 2026);
//   - "*-*-* 10..10:00": a range with a single value;
//   - "*:50..70/30": a range past the field's end that systemd trims to 50;
//   - "*-*-* 8..9/50:00": a step larger than the field that systemd drops;
//   - tooLongCalendar: more than 100 characters.
var badCalendars = []struct {
	expr, err      string
	systemdAccepts bool
}{
	{"", "empty", false},
	{tooLongCalendar, "at most 100", true},
	{" daily", "white space", false},
	{"daily ", "white space", false},
	{"daily\n", "white space", false},
	{"dai\tly", `'\t'`, false},
	{"10:00  UTC", "single space", false},
	{"*-*-* 24:00", "hour 24 is out of range", false},
	{"0..24:00", "hour 24 is out of range", false},
	{"*:60", "minute 60 is out of range", false},
	{"*-*-* 10:00:60", "second 60 is out of range", false},
	{"*-13-01", "month 13 is out of range", false},
	{"*-0-1", "month 0 is out of range", false},
	{"*-*-32", "day 32 is out of range", false},
	{"*-*-0", "day 0 is out of range", false},
	{"1969-01-01", "year 1969 is out of range", false},
	{"2200-01-01", "year 2200 is out of range", false},
	{"26-12-25", "four digits", true},
	{"*-*-* 10:00:00.5", "fractional seconds (00.5)", true},
	{"*-*-* 10:00:00.000", "fractional seconds", true},
	{"*-*-01~03", `"~"`, false},
	{"*-02~01", `"~"`, true},
	{"*-*~01", `"~"`, true},
	{"*-*~7/2", `"~"`, true},
	{"10:00 Europe/Berlin", "timezone", true},
	{"10:00 CET", "timezone", true},
	{"Mon 10:00 Tue", "timezone", false},
	{"@1700000000", "timestamps", true},
	{"*/5:00", `"*/step"`, false},
	{"*:*/5", `"*/step"`, false},
	{"*:*:*/10", `"*/step"`, false},
	{"*-*/2-01", `"*/step"`, false},
	{"*,5:00", "cannot be part of a list", false},
	{"5,*:00", "cannot be part of a list", false},
	{"*..5:00", "cannot be part of a list or range", false},
	{"1/2/3:00", `unexpected '/'`, false},
	{"Fri..Mon", "runs backwards; ranges go from Monday towards Sunday, so write Mon,Fri..Sun", false},
	{"Sun-Sat", "so write Mon..Sun", false},
	{"Mon..", "has no end", false},
	{"Mon.Fri", "two dots", false},
	{"Mon..Wed..Fri", "more than two ends", false},
	{"Mond 10:00", `"Mond" is not a day of the week`, false},
	{"fortnightly", `"fortnightly" is not a day of the week or a keyword`, false},
	{"Mon,Funday", `"Funday" is not a day of the week`, false},
	{"10", "no minutes", false},
	{"10:00:00:00", "more than three parts", false},
	{"2026-12-01-05", "more than three parts", false},
	{"*", "no minutes", false},
	{"1,,2:00", "where a number is expected", false},
	{"10x:00", `unexpected 'x'`, false},
	{"10:00 11:00", "unexpected space", false},
	{"*:0/0", "step is 0", false},
	{"*:30/30", "never repeats", false},
	{"17..8:00", "runs backwards", false},
	{"*:*:10..10", "single value", false},
	{"*-*-* 10..10:00", "single value", true},
	{"*:50..70/30", "minute 70 is out of range", true},
	{"*-*-* 8..9/50:00", "larger than the field's range", true},
	{"99999999999:00", "too large", false},
	{"tomorrow", "not a day of the week or a keyword", false},
}

// mustParseBase parses a time written like calendarBase, in UTC.
func mustParseBase(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.DateTime, s)
	if err != nil {
		t.Fatalf("base time %q: %v", s, err)
	}
	return v
}

func TestCalendarParse(t *testing.T) {
	base := mustParseBase(t, calendarBase)
	for _, tc := range goodCalendars {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := backup.ParseCalendar(tc.expr)
			if err != nil {
				t.Fatalf("ParseCalendar(%q): %v", tc.expr, err)
			}
			if got := c.String(); got != tc.norm {
				t.Errorf("String() = %q, want %q", got, tc.norm)
			}
			next, ok := c.Next(base)
			switch {
			case tc.next == "" && ok:
				t.Errorf("Next(%s) = %s, want none", calendarBase, next)
			case tc.next != "" && !ok:
				t.Errorf("Next(%s) = none, want %s", calendarBase, tc.next)
			case ok && next.Format(time.DateTime) != tc.next:
				t.Errorf("Next(%s) = %s, want %s", calendarBase, next.Format(time.DateTime), tc.next)
			case ok && next.Location() != time.UTC:
				t.Errorf("Next(%s) is in %v, want UTC", calendarBase, next.Location())
			}
		})
	}
}

func TestCalendarNextCarriesLikeSystemd(t *testing.T) {
	for _, tc := range carryCalendars {
		c, err := backup.ParseCalendar(tc.expr)
		if err != nil {
			t.Fatalf("ParseCalendar(%q): %v", tc.expr, err)
		}
		next, ok := c.Next(mustParseBase(t, tc.base))
		if got := next.Format(time.DateTime); !ok || got != tc.next {
			t.Errorf("%q.Next(%s) = %s, %v; want %s like systemd (the expression itself means %s)", tc.expr, tc.base, got, ok, tc.next, tc.plain)
		}
	}
}

func TestCalendarRefuse(t *testing.T) {
	for _, tc := range badCalendars {
		t.Run(fmt.Sprintf("%.30q", tc.expr), func(t *testing.T) {
			c, err := backup.ParseCalendar(tc.expr)
			if err == nil {
				t.Fatalf("ParseCalendar(%q) = %q, want an error containing %q", tc.expr, c, tc.err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCalendar(%q) error = %q, want it to contain %q", tc.expr, err, tc.err)
			}
			if !strings.Contains(err.Error(), `for example "daily"`) {
				t.Errorf("ParseCalendar(%q) error = %q, want it to give examples", tc.expr, err)
			}
			if c != (backup.Calendar{}) {
				t.Errorf("ParseCalendar(%q) returned %q with its error, want the zero Calendar", tc.expr, c)
			}
		})
	}
}

func TestCalendarNextSubSecondAndZone(t *testing.T) {
	c, err := backup.ParseCalendar("*:*:*")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 7, 13, 500_000_000, time.UTC)
	if next, _ := c.Next(at); !next.Equal(at.Truncate(time.Second).Add(time.Second)) {
		t.Errorf("Next(%s) = %s, want the next whole second", at, next)
	}
	berlin := time.FixedZone("CET", 3600)
	daily, err := backup.ParseCalendar("daily")
	if err != nil {
		t.Fatal(err)
	}
	// 00:30 in Berlin is 23:30 UTC the day before: the next elapse is midnight UTC.
	next, _ := daily.Next(time.Date(2026, 12, 2, 0, 30, 0, 0, berlin))
	if want := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC); !next.Equal(want) || next.Location() != time.UTC {
		t.Errorf("Next(00:30 CET) = %s, want %s", next, want)
	}
	if _, ok := (backup.Calendar{}).Next(at); ok {
		t.Error("the zero Calendar elapses, want never")
	}
}

func TestCalendarInterval(t *testing.T) {
	from := mustParseBase(t, calendarBase)
	day := 24 * time.Hour
	for _, tc := range []struct {
		expr string
		want time.Duration
	}{
		{"daily", 24 * time.Hour},
		{"*:0/5", 5 * time.Minute},
		{"Mon *-*-* 03:00", 168 * time.Hour},
		{"hourly", time.Hour},
		{"*-*-01 00:00:00", 31 * day},
		{"minutely", time.Minute},
		{"*:*:*", time.Second},
		{"Mon..Fri 02:00", 3 * day},
		{"*-*-* 08,12,20:15", 12 * time.Hour},
		{"*-*-* 0/1:0/30:0/20", 29*time.Minute + 20*time.Second},
		{"weekly", 7 * day},
		{"quarterly", 92 * day},
		{"yearly", 365 * day},
		{"*-02-29", 4*365*day + day},
		{"*:0/7", 11 * time.Minute}, // 23:56 to 00:07: systemd skips 00:00
		{"*:*:0/7", 11 * time.Second},
		{"0/5:00", 9 * time.Hour}, // 20:00 to 05:00 at the end of a month
		{"*-*-1/9", 13 * day},     // Dec 28 to Jan 10: systemd skips Jan 1
		{"2027-01-15 03:00", 0},
		{"2020-01-01", 0},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := backup.ParseCalendar(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got := c.Interval(from)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Interval took %s, want well under a second", elapsed)
			}
			if got != tc.want {
				t.Errorf("Interval(%s) = %s, want %s", calendarBase, got, tc.want)
			}
		})
	}
}

// naiveInterval is Interval written plainly, elapse by elapse with Next.
func naiveInterval(c backup.Calendar, from time.Time) time.Duration {
	end := from.AddDate(1, 0, 0)
	prev, ok := c.Next(from)
	if !ok {
		return 0
	}
	var longest time.Duration
	for gaps := 0; !prev.After(end) || gaps == 0; gaps++ {
		next, ok := c.Next(prev)
		if !ok {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

func TestCalendarIntervalMatchesNaive(t *testing.T) {
	froms := []string{calendarBase, "2027-02-28 23:59:59", "2028-02-29 12:00:00", "2026-12-07 03:00:00"}
	for _, expr := range []string{
		"daily", "*:0/5", "Mon *-*-* 03:00", "Mon,Thu 03:00,15:30", "*-*-01,15 0/6:00",
		"*:0/20", "Sat,Sun *-*-* 10..12:00/30:00", "*-*-31 12:00", "*-02-28,29 0/12:00:0/30",
		"*-*-* 23:59:59", "2027-*-* 00:00", "Mon..Fri *-*-* 10:07:0/20", "*-12-01 11..13:00",
		"*:0/7", "0/5:00", "*-*-1/9 0/7:00", "Sat,Sun 0/5:0/25:00",
	} {
		c, err := backup.ParseCalendar(expr)
		if err != nil {
			t.Fatalf("ParseCalendar(%q): %v", expr, err)
		}
		for _, f := range froms {
			from := mustParseBase(t, f)
			if got, want := c.Interval(from), naiveInterval(c, from); got != want {
				t.Errorf("%q.Interval(%s) = %s, want %s", expr, f, got, want)
			}
		}
	}
}

// systemdElapses is what `systemd-analyze calendar` says of one expression.
type systemdElapses struct {
	norm     string
	elapses  []time.Time
	original string // "" when systemd prints none (the normalized form is the input)
}

// runSystemdCalendar runs `systemd-analyze calendar` on exprs in UTC, five
// iterations from base, and returns its standard output and error. It fails
// the test when systemd-analyze is not installed.
func runSystemdCalendar(t *testing.T, base string, exprs []string) (string, string) {
	t.Helper()
	path, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is not installed (%v): install systemd (apt-get install systemd) so that calendar expressions are checked against the systemd the nodes run", err)
	}
	args := append([]string{"calendar", "--no-pager", "--base-time=" + base + " UTC", "--iterations=5", "--"}, exprs...)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "TZ=UTC", "SYSTEMD_COLORS=0", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if exitErr := (*exec.ExitError)(nil); !errors.As(err, &exitErr) {
			t.Fatalf("running %s: %v", path, err)
		}
	}
	return stdout.String(), stderr.String()
}

// parseSystemdCalendar splits systemd-analyze's output into one entry per
// "Normalized form:" line.
func parseSystemdCalendar(t *testing.T, out string) []systemdElapses {
	t.Helper()
	var res []systemdElapses
	original := ""
	for _, line := range strings.Split(out, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		switch {
		case key == "Original form":
			original = value
		case key == "Normalized form":
			res = append(res, systemdElapses{norm: value, original: original})
			original = ""
		case key == "Next elapse" || strings.HasPrefix(key, "Iter. #"):
			if value == "never" {
				continue
			}
			at, err := time.Parse("Mon 2006-01-02 15:04:05 MST", value)
			if err != nil || len(res) == 0 {
				t.Fatalf("systemd-analyze printed %q: %v", line, err)
			}
			res[len(res)-1].elapses = append(res[len(res)-1].elapses, at.UTC())
		}
	}
	return res
}

// crossCheck compares ParseCalendar's result for each of exprs (all of which
// it accepts) with systemd's at base, and returns how many were compared.
func crossCheck(t *testing.T, base string, exprs []string) int {
	t.Helper()
	stdout, stderr := runSystemdCalendar(t, base, exprs)
	got := parseSystemdCalendar(t, stdout)
	if len(got) != len(exprs) {
		t.Fatalf("systemd-analyze described %d of %d expressions; it said:\n%s", len(got), len(exprs), stderr)
	}
	from := mustParseBase(t, base)
	for i, expr := range exprs {
		sd := got[i]
		if sd.original != "" && sd.original != expr {
			t.Fatalf("systemd-analyze's entry %d is for %q, want %q", i, sd.original, expr)
		}
		c, err := backup.ParseCalendar(expr)
		if err != nil {
			t.Fatalf("ParseCalendar(%q): %v", expr, err)
		}
		if c.String() != sd.norm {
			t.Errorf("%q: String() = %q, systemd normalizes to %q", expr, c.String(), sd.norm)
		}
		prev := from
		for n := range 5 {
			next, ok := c.Next(prev)
			switch {
			case n >= len(sd.elapses):
				if ok {
					t.Errorf("%q from %s: elapse #%d = %s, systemd says never", expr, base, n+1, next)
				}
			case !ok:
				if horizon := prev.AddDate(5, 0, 0); !sd.elapses[n].After(horizon) {
					t.Errorf("%q from %s: elapse #%d = none, systemd says %s", expr, base, n+1, sd.elapses[n])
				}
			case !next.Equal(sd.elapses[n]):
				t.Errorf("%q from %s: elapse #%d = %s, systemd says %s", expr, base, n+1, next, sd.elapses[n])
			}
			if !ok {
				break
			}
			prev = next
		}
	}
	return len(exprs)
}

func TestCalendarAgainstSystemd(t *testing.T) {
	exprs := make([]string, len(goodCalendars))
	for i, tc := range goodCalendars {
		exprs[i] = tc.expr
	}
	checked := 0
	for _, base := range calendarBases {
		checked += crossCheck(t, base, exprs)
	}
	t.Logf("cross-checked %d expressions at %d base times (%d comparisons of the normalized form and five elapses) against systemd-analyze", len(exprs), len(calendarBases), checked)
}

// systemdAccepts returns, for each of exprs, whether systemd parses it.
func systemdAccepts(t *testing.T, exprs []string) []bool {
	t.Helper()
	_, stderr := runSystemdCalendar(t, calendarBase, exprs)
	ok := make([]bool, len(exprs))
	for i, expr := range exprs {
		ok[i] = !strings.Contains(stderr, "Failed to parse calendar specification '"+expr+"'")
	}
	return ok
}

func TestCalendarRefusedAgainstSystemd(t *testing.T) {
	exprs := make([]string, len(badCalendars))
	for i, tc := range badCalendars {
		exprs[i] = tc.expr
		if _, err := backup.ParseCalendar(tc.expr); err == nil {
			t.Errorf("ParseCalendar(%q) accepted it, want an error", tc.expr)
		}
	}
	for i, accepted := range systemdAccepts(t, exprs) {
		if accepted != badCalendars[i].systemdAccepts {
			t.Errorf("systemd accepts %q: %v, the table says %v (update the table and its comment)", exprs[i], accepted, badCalendars[i].systemdAccepts)
		}
	}
}

// randomField writes a random numeric field over min..max: mostly valid,
// sometimes a value one past the end, a range running backwards or a step
// that never repeats.
func randomField(r *rand.Rand, min, max int, star bool) string {
	pick := func() int {
		if r.IntN(40) == 0 {
			return max + 1
		}
		return min + r.IntN(max-min+1)
	}
	str := func(v int) string {
		if r.IntN(4) == 0 {
			return fmt.Sprintf("%02d", v)
		}
		return fmt.Sprint(v)
	}
	if star && r.IntN(3) == 0 {
		return "*"
	}
	var parts []string
	for range 1 + r.IntN(3) {
		a, b := pick(), pick()
		if a > b && r.IntN(8) != 0 {
			a, b = b, a
		}
		step := 1 + r.IntN(max-min)
		switch r.IntN(5) {
		case 0, 1:
			parts = append(parts, str(a))
		case 2:
			parts = append(parts, str(a)+".."+str(b))
		case 3:
			if a+step > max && r.IntN(8) != 0 {
				a = min + r.IntN(max-min-step+1)
			}
			parts = append(parts, str(a)+"/"+fmt.Sprint(step))
		default:
			parts = append(parts, str(a)+".."+str(b)+"/"+fmt.Sprint(step))
		}
	}
	return strings.Join(parts, ",")
}

// randomWeekdays writes a random day-of-week list, sometimes with a range
// running backwards.
func randomWeekdays(r *rand.Rand) string {
	names := [][]string{
		{"Mon", "monday"}, {"Tue", "TUESDAY"}, {"Wed", "Wednesday"}, {"Thu", "thursday"},
		{"Fri", "Friday"}, {"Sat", "saturday"}, {"Sun", "Sunday"},
	}
	name := func(i int) string { return names[i][r.IntN(2)] }
	var parts []string
	for range 1 + r.IntN(2) {
		a, b := r.IntN(7), r.IntN(7)
		if a > b && r.IntN(8) != 0 {
			a, b = b, a
		}
		switch r.IntN(3) {
		case 0:
			parts = append(parts, name(a))
		case 1:
			parts = append(parts, name(a)+".."+name(b))
		default:
			parts = append(parts, name(a)+"-"+name(b))
		}
	}
	return strings.Join(parts, ",")
}

// randomCalendar writes a random expression in the grammar ParseCalendar reads.
func randomCalendar(r *rand.Rand) string {
	var parts []string
	if r.IntN(3) == 0 {
		parts = append(parts, randomWeekdays(r))
	}
	switch r.IntN(3) {
	case 1:
		parts = append(parts, randomField(r, 1, 12, true)+"-"+randomField(r, 1, 31, true))
	case 2:
		parts = append(parts, randomField(r, 2026, 2030, true)+"-"+randomField(r, 1, 12, true)+"-"+randomField(r, 1, 31, true))
	}
	if len(parts) == 0 || r.IntN(4) != 0 {
		tm := randomField(r, 0, 23, true) + ":" + randomField(r, 0, 59, true)
		if r.IntN(2) == 0 {
			tm += ":" + randomField(r, 0, 59, true)
		}
		parts = append(parts, tm)
	}
	if r.IntN(10) == 0 {
		parts = append(parts, "UTC")
	}
	return strings.Join(parts, " ")
}

// randomBases returns n random base times in 2026..2029, half of them in the
// last minutes of a month, where systemd carries.
func randomBases(r *rand.Rand, n int) []string {
	var bases []string
	for i := range n {
		at := time.Date(2026+r.IntN(4), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
		if i%2 == 0 {
			at = time.Date(at.Year(), at.Month()+1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(1+r.IntN(600)) * time.Second)
		}
		bases = append(bases, at.Format(time.DateTime))
	}
	return bases
}

// TestCalendarRandomAgainstSystemd checks random expressions: every one
// ParseCalendar accepts must mean the same to systemd, and every one systemd
// refuses must be refused.
func TestCalendarRandomAgainstSystemd(t *testing.T) {
	r := rand.New(rand.NewPCG(252, 1))
	var accepted, refused []string
	for range 1500 {
		expr := randomCalendar(r)
		if len(expr) > 100 {
			continue
		}
		if _, err := backup.ParseCalendar(expr); err == nil {
			accepted = append(accepted, expr)
		} else {
			refused = append(refused, expr)
		}
	}
	bases := append(slices.Clone(calendarBases), randomBases(r, 4)...)
	for _, base := range bases {
		crossCheck(t, base, accepted)
	}
	stricter := 0
	for i, ok := range systemdAccepts(t, refused) {
		if !ok {
			continue
		}
		stricter++
		_, err := backup.ParseCalendar(refused[i])
		if !strings.Contains(err.Error(), "single value") && !strings.Contains(err.Error(), "out of range") && !strings.Contains(err.Error(), "larger than the field's range") {
			t.Errorf("ParseCalendar(%q) refuses what systemd accepts: %v", refused[i], err)
		}
	}
	t.Logf("cross-checked %d random expressions ParseCalendar accepts at %d base times; it refuses %d more, %d of which systemd accepts (single-value ranges and values systemd trims away)", len(accepted), len(bases), len(refused), stricter)
}

// TestCalendarDueAgreesWithNodes: the nodes decide when a backup is due with systemd's own evaluator
// (DecideScript's "next" asks systemd-analyze, as the timers' systemd would), the provider with
// ParseCalendar (plan-time validation, the overdue threshold, the node simulator's timers). For every
// expression of the table, with the newest backup started at the table's base time, DecideScript finds no
// backup due one second before ParseCalendar's next elapse, names that elapse, and finds one due at it.
func TestCalendarDueAgreesWithNodes(t *testing.T) {
	script := filepath.Join(t.TempDir(), "decide.py")
	if err := os.WriteFile(script, backup.DecideScript, 0o755); err != nil {
		t.Fatal(err)
	}
	from := mustParseBase(t, calendarBase)
	listing := fmt.Sprintf(`[{"name":"demo","backup":[{"label":"F","type":"full","timestamp":{"start":%d,"stop":%d}}]}]`, from.Unix(), from.Unix()+60)
	decide := func(now time.Time, schedule string) string {
		cmd := exec.Command("/usr/bin/python3", script, "next", "pgbackrest", schedule, "7")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PGNVME_NOW=%d", now.Unix()))
		cmd.Stdin = strings.NewReader(listing)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("decide.py next %q: %v\n%s", schedule, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	checked := 0
	for _, tc := range goodCalendars {
		c, err := backup.ParseCalendar(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		next, ok := c.Next(from)
		if !ok {
			continue
		}
		before, at := decide(next.Add(-time.Second), tc.expr), decide(next, tc.expr)
		if want := "none the newest backup F started " + from.Format(time.RFC3339) + "; the schedule next elapses " + next.Format(time.RFC3339); before != want {
			t.Errorf("%q a second before ParseCalendar's next elapse %s: the nodes decide %q, want %q", tc.expr, next, before, want)
		}
		if !strings.HasPrefix(at, "incr ") {
			t.Errorf("%q at ParseCalendar's next elapse %s: the nodes decide %q, want an incremental backup", tc.expr, next, at)
		}
		checked++
	}
	t.Logf("%d expressions: the nodes' systemd-analyze and ParseCalendar agree on when a backup is due", checked)
}
