// When a calendar elapses: Next and Interval, following systemd 252's own search, on civil UTC times.

package backup

import (
	"math/bits"
	"time"
)

// Next is the first elapse strictly after t (UTC), and false when there is none within 5 years.
//
// t is taken to the second: an elapse in the same second as t is not after it.
func (c Calendar) Next(t time.Time) (time.Time, bool) {
	next, ok := c.nextAfter(t.Unix())
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(next, 0).UTC(), true
}

// nextAfter is Next in seconds since the Unix epoch.
func (c Calendar) nextAfter(sec int64) (int64, bool) {
	from := civilFromUnix(sec)
	next, ok := c.findNext(from)
	if !ok {
		return 0, false
	}
	limit := from
	limit.year += nextHorizonYears
	if n := next.unix(); n <= limit.unix() {
		return n, true
	}
	return 0, false
}

// Interval is the longest gap between two consecutive elapses over the year after from (a backup older than this, plus a margin, is overdue).
//
// The gaps counted are those that start at an elapse after from and no later
// than a year after from; the gap after the first elapse always counts, so
// a schedule rarer than yearly gets its own period. Interval is 0 when the
// calendar elapses fewer than twice (see Next for the horizon).
//
// Within a day, the elapses after a given one do not depend on the date, so
// each way of entering a day is walked once and then reused for every day
// entered that way.
func (c Calendar) Interval(from time.Time) time.Duration {
	prev, ok := c.nextAfter(from.Unix())
	if !ok {
		return 0
	}
	end := civilFromUnix(from.Unix())
	end.year++
	last := end.unix()
	runs := map[int64]dayRun{}
	var longest int64
	gaps, entered := 0, true
	for prev <= last || gaps == 0 {
		if entered {
			day := floorDiv(prev, secondsPerDay) * secondsPerDay
			run, ok := runs[prev-day]
			if !ok {
				run = c.walkDay(prev)
				runs[prev-day] = run
			}
			if run.gaps > 0 && day+run.last <= last {
				longest, gaps, prev = max(longest, run.longest), gaps+run.gaps, day+run.last
			}
		}
		next, ok := c.nextAfter(prev)
		if !ok {
			break
		}
		longest, gaps = max(longest, next-prev), gaps+1
		entered = floorDiv(next, secondsPerDay) != floorDiv(prev, secondsPerDay)
		prev = next
	}
	return time.Duration(longest) * time.Second
}

// dayRun is what walkDay finds: the elapses after the first on its day.
type dayRun struct {
	longest int64 // the longest gap between them, in seconds
	gaps    int   // how many gaps there are
	last    int64 // the last elapse of the day, in seconds since midnight
}

// walkDay follows the elapses after first (in seconds since the Unix epoch)
// to the last one on its day.
func (c Calendar) walkDay(first int64) dayRun {
	day := floorDiv(first, secondsPerDay)
	var run dayRun
	at := first
	for {
		next, ok := c.nextAfter(at)
		if !ok || floorDiv(next, secondsPerDay) != day {
			break
		}
		run.longest, run.gaps = max(run.longest, next-at), run.gaps+1
		at = next
	}
	run.last = at - day*secondsPerDay
	return run
}

// maxSearchSteps is systemd's MAX_CALENDAR_ITERATIONS: a search that takes
// more steps fails.
const maxSearchSteps = 1000

// civil is a broken-down UTC time like C's struct tm, except that month is
// 1..12; fields may be out of range until normalized.
type civil struct {
	year, month, day, hour, min, sec int
}

// findNext is systemd 252's find_next for a time strictly after from: it
// starts in the middle of from's second and walks the fields from the year
// down, carrying as systemd does.
func (c Calendar) findNext(from civil) (civil, bool) {
	t, frac := from, true
	for range maxSearchSteps {
		t = t.normalize()
		// Year.
		r := c.matchYear(&t.year)
		if r < 0 {
			return civil{}, false
		}
		if r > 0 {
			t.month, t.day, t.hour, t.min, t.sec, frac = 1, 1, 0, 0, 0, false
		}
		if t.withinBounds() <= 0 {
			return civil{}, false
		}
		// Month.
		if r = c.month.match(&t.month); r > 0 {
			t.day, t.hour, t.min, t.sec, frac = 1, 0, 0, 0, false
		}
		if r >= 0 {
			r = t.withinBounds()
		}
		if r < 0 {
			t.year, t.month, t.day, t.hour, t.min, t.sec, frac = t.year+1, 1, 1, 0, 0, 0, false
			continue
		}
		if r == 0 {
			continue
		}
		// Day of month and of week.
		if r = c.day.match(&t.day); r > 0 {
			t.hour, t.min, t.sec, frac = 0, 0, 0, false
		}
		if r >= 0 {
			r = t.withinBounds()
		}
		if r < 0 {
			t.month, t.day, t.hour, t.min, t.sec, frac = t.month+1, 1, 0, 0, 0, false
			continue
		}
		if r == 0 {
			continue
		}
		if c.weekdays&(1<<t.weekday()) == 0 {
			t.day, t.hour, t.min, t.sec, frac = t.day+1, 0, 0, 0, false
			continue
		}
		// Hour.
		if r = c.hour.match(&t.hour); r > 0 {
			t.min, t.sec, frac = 0, 0, false
		}
		if r >= 0 {
			r = t.withinBounds()
		}
		if r < 0 {
			t.day, t.hour, t.min, t.sec, frac = t.day+1, 0, 0, 0, false
			continue
		}
		if r == 0 {
			continue
		}
		// Minute.
		if r = c.minute.match(&t.min); r > 0 {
			t.sec, frac = 0, false
		}
		if r >= 0 {
			r = t.withinBounds()
		}
		if r < 0 {
			t.hour, t.min, t.sec, frac = t.hour+1, 0, 0, false
			continue
		}
		if r == 0 {
			continue
		}
		// Second: systemd searches microseconds; within a second the first
		// whole second at or after sec.5 is the first at or after sec+1.
		sec := t.sec
		if frac {
			sec++
		}
		if r = c.second.match(&sec); r >= 0 {
			t.sec = sec
			r = t.withinBounds()
		}
		frac = false
		if r < 0 {
			t.min, t.sec = t.min+1, 0
			continue
		}
		if r == 0 {
			continue
		}
		return t, true
	}
	return civil{}, false
}

// match is systemd's find_matching_component: it moves *v to the field's
// first value at or after it, which may be past the field's end (a/step
// overflowing), and returns 1 when *v moved, 0 when it did not and -1 when
// there is no such value.
func (m calMatcher) match(v *int) int {
	if d, ok := nextBit(m.bits, *v); ok {
		moved := d != *v
		*v = d
		if moved {
			return 1
		}
		return 0
	}
	if *v >= 0 && *v < len(m.over) && m.over[*v] != 0 {
		*v = int(m.over[*v])
		return 1
	}
	return -1
}

// matchYear is match for the year, whose values never overflow: a year past
// maxCalendarYear ends the search anyway.
func (c Calendar) matchYear(y *int) int {
	for i := max(*y, minCalendarYear) - minCalendarYear; i <= maxCalendarYear-minCalendarYear; i++ {
		if c.years[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		d := i + minCalendarYear
		moved := d != *y
		*y = d
		if moved {
			return 1
		}
		return 0
	}
	return -1
}

// withinBounds is systemd 252's tm_within_bounds: 1 when t is a valid time,
// -1 when its year is past maxCalendarYear, and 0 when it had to be
// normalized. Normalizing then resets only the field just below the highest
// one that changed (so 23:113 becomes 00:53 the next day, not 00:00), which
// is how systemd skips elapses after a carry.
func (t *civil) withinBounds() int {
	if t.year > maxCalendarYear {
		return -1
	}
	n := t.normalize()
	switch {
	case n.year != t.year:
		n.month = 1
	case n.month != t.month:
		n.day = 1
	case n.day != t.day:
		n.hour = 0
	case n.hour != t.hour:
		n.min = 0
	case n.min != t.min:
		n.sec = 0
	case n.sec == t.sec:
		return 1
	}
	*t = n
	return 0
}

// normalize carries out-of-range fields into the next ones, as timegm does.
func (t civil) normalize() civil {
	return civilFromUnix(t.unix())
}

// unix returns t in seconds since the Unix epoch.
func (t civil) unix() int64 {
	months := int64(t.year)*12 + int64(t.month-1)
	y := floorDiv(months, 12)
	days := daysFromCivil(y, months-y*12+1, 1) + int64(t.day-1)
	return days*secondsPerDay + int64(t.hour)*3600 + int64(t.min)*60 + int64(t.sec)
}

// weekday returns t's day of the week (t must be normalized).
func (t civil) weekday() time.Weekday {
	days := daysFromCivil(int64(t.year), int64(t.month), int64(t.day))
	return time.Weekday(((days+4)%7 + 7) % 7) // 1970-01-01 was a Thursday
}

// civilFromUnix breaks sec, seconds since the Unix epoch, down in UTC.
func civilFromUnix(sec int64) civil {
	days := floorDiv(sec, secondsPerDay)
	rest := int(sec - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	return civil{year: y, month: m, day: d, hour: rest / 3600, min: rest / 60 % 60, sec: rest % 60}
}

// daysFromCivil returns the days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil (Howard Hinnant's civil_from_days).
func civilFromDays(days int64) (year, month, day int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := (mp+2)%12 + 1
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// nextBit returns the lowest set bit of b at or above i, and false when there is none.
func nextBit(b uint64, i int) (int, bool) {
	i = max(i, 0)
	if i >= 64 || b>>i == 0 {
		return 0, false
	}
	return i + bits.TrailingZeros64(b>>i), true
}
