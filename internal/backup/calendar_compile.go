// A parsed expression normalised, compiled into matchers, and printed as systemd prints it.

package backup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func (spec *calSpec) normalize() {
	if spec.weekdays == 0x7f {
		spec.weekdays = 0
	}
	for _, ch := range []*calChain{&spec.year, &spec.month, &spec.day, &spec.hour, &spec.minute, &spec.second} {
		*ch = normalizeChain(*ch)
	}
}

// normalizeChain is systemd's normalize_chain: a range's stop is moved back
// to its last repetition, a repetition that never repeats becomes a single
// value, and the components are sorted by (start, stop, step) without duplicates.
func normalizeChain(ch calChain) calChain {
	if ch == nil {
		return nil
	}
	out := make(calChain, 0, len(ch))
	for _, c := range ch {
		if c.stop > c.start && c.step > 0 {
			c.stop -= (c.stop - c.start) % c.step
		}
		if (c.stop > c.start && c.start+c.step > c.stop) || c.start == c.stop {
			c.step, c.stop = 0, -1
		}
		out = append(out, c)
	}
	sortComponents(out)
	dedup := out[:1]
	for _, c := range out[1:] {
		if c != dedup[len(dedup)-1] {
			dedup = append(dedup, c)
		}
	}
	return dedup
}

// sortComponents sorts ch by start, then stop, then step (an insertion sort:
// a chain holds at most a few dozen components).
func sortComponents(ch calChain) {
	less := func(a, b calComponent) bool {
		if a.start != b.start {
			return a.start < b.start
		}
		if a.stop != b.stop {
			return a.stop < b.stop
		}
		return a.step < b.step
	}
	for i := 1; i < len(ch); i++ {
		for j := i; j > 0 && less(ch[j], ch[j-1]); j-- {
			ch[j], ch[j-1] = ch[j-1], ch[j]
		}
	}
}

// compile turns a normalized spec into a Calendar.
func (spec calSpec) compile() Calendar {
	c := Calendar{norm: spec.format()}
	for y := fieldYear.min; y <= fieldYear.max; y++ {
		if spec.year.matches(y) {
			i := y - minCalendarYear
			c.years[i/64] |= 1 << (i % 64)
		}
	}
	c.month = spec.month.matcher(fieldMonth)
	c.day = spec.day.matcher(fieldDay)
	c.hour = spec.hour.matcher(fieldHour)
	c.minute = spec.minute.matcher(fieldMinute)
	second := spec.second
	if second == nil {
		second = calChain{{0, -1, 1}} // systemd stores "*" seconds as 0/1
	}
	c.second = second.matcher(fieldSecond)
	for nr := range 7 {
		if spec.weekdays == 0 || spec.weekdays&(1<<nr) != 0 {
			c.weekdays |= 1 << ((nr + 1) % 7) // Monday is 0 for systemd and 1 for time.Weekday
		}
	}
	return c
}

// matches reports whether v is one of ch's values.
func (ch calChain) matches(v int) bool {
	if ch == nil {
		return true
	}
	for _, c := range ch {
		switch {
		case v == c.start:
			return true
		case c.step > 0 && v > c.start && (v-c.start)%c.step == 0 && (c.stop < 0 || v <= c.stop):
			return true
		}
	}
	return false
}

// matcher compiles ch for field f (whose max is below 61).
func (ch calChain) matcher(f calField) calMatcher {
	var m calMatcher
	for v := f.min; v <= f.max; v++ {
		if ch.matches(v) {
			m.bits |= 1 << v
		}
	}
	for v := range len(m.over) {
		for _, c := range ch {
			if c.step == 0 || c.stop >= 0 || c.start >= v {
				continue
			}
			k := c.start + c.step*((v-c.start+c.step-1)/c.step)
			if k > f.max && (m.over[v] == 0 || k < int(m.over[v])) {
				m.over[v] = uint8(k)
			}
		}
	}
	return m
}

// format is the normalized form, as systemd's calendar_spec_to_string writes it.
func (spec calSpec) format() string {
	var b strings.Builder
	if spec.weekdays != 0 {
		b.WriteString(formatWeekdays(spec.weekdays))
		b.WriteByte(' ')
	}
	b.WriteString(spec.year.format(fieldYear.width, false))
	b.WriteByte('-')
	b.WriteString(spec.month.format(fieldMonth.width, false))
	b.WriteByte('-')
	b.WriteString(spec.day.format(fieldDay.width, false))
	b.WriteByte(' ')
	b.WriteString(spec.hour.format(fieldHour.width, false))
	b.WriteByte(':')
	b.WriteString(spec.minute.format(fieldMinute.width, false))
	b.WriteByte(':')
	b.WriteString(spec.second.format(fieldSecond.width, true))
	if spec.utc {
		b.WriteString(" UTC")
	}
	return b.String()
}

// formatWeekdays writes the days (bit 0 = Monday) as systemd's
// format_weekdays does: runs of three or more as ranges, others as lists.
func formatWeekdays(days uint8) string {
	var parts []string
	for x := 0; x < 7; {
		if days&(1<<x) == 0 {
			x++
			continue
		}
		end := x
		for end+1 < 7 && days&(1<<(end+1)) != 0 {
			end++
		}
		switch end - x {
		case 0:
			parts = append(parts, weekdayAbbrev[x])
		case 1:
			parts = append(parts, weekdayAbbrev[x], weekdayAbbrev[end])
		default:
			parts = append(parts, weekdayAbbrev[x]+".."+weekdayAbbrev[end])
		}
		x = end + 1
	}
	return strings.Join(parts, ",")
}

// format writes the chain as systemd's format_chain does. In the seconds
// field a chain holding 0/1 is written "*", as systemd stores "*" that way.
func (ch calChain) format(width int, seconds bool) string {
	if ch == nil || seconds && slices.Contains(ch, calComponent{0, -1, 1}) {
		return "*"
	}
	parts := make([]string, len(ch))
	for i, c := range ch {
		s := fmt.Sprintf("%0*d", width, c.start)
		if c.stop > 0 {
			s += fmt.Sprintf("..%0*d", width, c.stop)
		}
		if c.step > 0 && (c.stop <= 0 || c.step != 1) {
			s += "/" + strconv.Itoa(c.step)
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}
