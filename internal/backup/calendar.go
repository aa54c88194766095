// The calendar part of the package ([ParseCalendar], [Calendar]) reads the
// subset of systemd calendar expressions (systemd.time(7), OnCalendar=) that a
// backup schedule uses, so a schedule that the nodes' systemd would refuse is
// refused at plan time, and so the provider knows when the schedule fires next
// and how long a backup may be old before it is overdue. Everything is UTC.

package backup

import (
	"fmt"
)

const (
	// maxCalendarLen is the longest calendar expression ParseCalendar reads.
	maxCalendarLen = 100
	// minCalendarYear and maxCalendarYear bound the years systemd accepts.
	minCalendarYear = 1970
	maxCalendarYear = 2199
	// nextHorizonYears is how far ahead Next looks for an elapse.
	nextHorizonYears = 5
	// maxCalendarNumber caps the numbers read, far beyond any field range.
	maxCalendarNumber = 1_000_000
	secondsPerDay     = 24 * 60 * 60
	calendarExamples  = `for example "daily", "Mon..Fri *-*-* 02:30:00", "*-*-* 00/6:00:00" or "Sun *-*-* 03:15 UTC"`
	calendarKeywords  = "minutely, hourly, daily, weekly, monthly, quarterly, semiannually, yearly or annually"
)

// Calendar is a parsed systemd calendar expression (always UTC).
//
// Next and Interval follow systemd 252's own search (find_next in
// calendarspec.c) rather than the plain meaning of the expression: where a
// repetition such as 0/7 runs past the end of its field at the end of an
// hour, a day, a month or a year, systemd carries the excess into the next
// one and skips the first elapses there (for "*:0/7", 00:00 is skipped after
// 23:56), and so do they.
//
// The zero Calendar never elapses. Calendar values are comparable.
type Calendar struct {
	norm     string
	years    [4]uint64 // bit y-minCalendarYear
	weekdays uint8     // bit time.Weekday
	month    calMatcher
	day      calMatcher
	hour     calMatcher
	minute   calMatcher
	second   calMatcher
}

// calMatcher holds one field's values for the search: its values within the
// field's range as bits, and for each value v the first value past the
// field's end that a repetition without an end (a/step) reaches from v.
type calMatcher struct {
	bits uint64
	over [61]uint8 // 0 when none; index 60 is for seconds searched from 59.5
}

// calField describes one numeric field of a calendar expression.
type calField struct {
	name     string
	min, max int
	width    int // digits in the normalized form
}

var (
	fieldYear   = calField{"year", minCalendarYear, maxCalendarYear, 4}
	fieldMonth  = calField{"month", 1, 12, 2}
	fieldDay    = calField{"day", 1, 31, 2}
	fieldHour   = calField{"hour", 0, 23, 2}
	fieldMinute = calField{"minute", 0, 59, 2}
	fieldSecond = calField{"second", 0, 59, 2}
)

// calComponent is one element of a comma list: start, start..stop or a
// repetition start[..stop]/step. stop is -1 when absent and step is 0 when
// the component is a single value.
type calComponent struct {
	start, stop, step int
}

// calChain is a comma list of components; nil means "*".
type calChain []calComponent

// calSpec is a parsed expression before it is compiled into a Calendar.
type calSpec struct {
	weekdays             uint8 // bit 0 = Monday … bit 6 = Sunday (systemd's order); 0 = any
	year, month, day     calChain
	hour, minute, second calChain
	utc                  bool
}

// weekdayNames are the names systemd reads, longest first so that "Monday"
// is not read as "Mon" followed by "day".
var weekdayNames = []struct {
	name string
	nr   int
}{
	{"monday", 0}, {"mon", 0},
	{"tuesday", 1}, {"tue", 1},
	{"wednesday", 2}, {"wed", 2},
	{"thursday", 3}, {"thu", 3},
	{"friday", 4}, {"fri", 4},
	{"saturday", 5}, {"sat", 5},
	{"sunday", 6}, {"sun", 6},
}

// weekdayAbbrev are the names the normalized form uses, in systemd's order.
var weekdayAbbrev = [7]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// ParseCalendar parses s; the error says what is wrong and gives an example of what works.
//
// It accepts the keywords minutely, hourly, daily, weekly, monthly,
// quarterly, semiannually (also semi-annually, biannually, bi-annually),
// yearly and annually (also anually), and the form
// "[DOW] [[YYYY-]MM-DD] [HH:MM[:SS]] [UTC]" where DOW is a comma list of
// day names or ranges (Mon..Fri) and every numeric field is "*", a number,
// a range a..b, a repetition a/step or a..b/step, or a comma list of those.
// It refuses what systemd 252 refuses (including "*/step": systemd reads "*"
// only alone, so write 0/step), and also fractional seconds, "~" (days
// counted from the end of the month), timezones other than UTC, "@"
// timestamps, two-digit years, ranges of a single value (10..10) and values
// systemd accepts only by rewriting them away (such as 50..70/30 for minutes,
// or a step larger than the field), so that whatever it accepts means the
// same to systemd. It reads at most 100 characters.
func ParseCalendar(s string) (Calendar, error) {
	spec, err := parseCalSpec(s)
	if err != nil {
		return Calendar{}, fmt.Errorf("calendar expression %q: %w; %s", s, err, calendarExamples)
	}
	return spec.compile(), nil
}

// parseCalSpec parses, checks and normalizes s like systemd's
// calendar_spec_from_string, refusing the parts this package does not support.

// String is the normalized form, as `systemd-analyze calendar` prints it after "Normalized form:" (e.g. "*-*-* 00:00:00" for "daily", "*-*-* *:00/5:00" for "*:0/5").
func (c Calendar) String() string {
	return c.norm
}
