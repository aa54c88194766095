// The calendar part of the package ([ParseCalendar], [Calendar]) reads the
// subset of systemd calendar expressions (systemd.time(7), OnCalendar=) that a
// backup schedule uses, so a schedule that the nodes' systemd would refuse is
// refused at plan time, and so the provider knows when the schedule fires next
// and how long a backup may be old before it is overdue. Everything is UTC.

package backup

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
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
func parseCalSpec(s string) (calSpec, error) {
	body, utc, err := checkCalendarText(s)
	if err != nil {
		return calSpec{}, err
	}
	spec, ok := calShorthand(body)
	if !ok {
		if spec, err = parseCalForm(body); err != nil {
			return calSpec{}, err
		}
		if err := spec.validate(); err != nil {
			return calSpec{}, err
		}
	}
	spec.utc = utc
	spec.normalize()
	return spec, nil
}

// checkCalendarText refuses what is wrong with s as a whole and strips a
// trailing " UTC", returning the rest and whether it was there.
func checkCalendarText(s string) (string, bool, error) {
	switch {
	case s == "":
		return "", false, errors.New(`it is empty; write a schedule`)
	case len(s) > maxCalendarLen:
		return "", false, fmt.Errorf("it is %d characters long; shorten it to at most %d", len(s), maxCalendarLen)
	case strings.TrimSpace(s) != s:
		return "", false, errors.New("it starts or ends with white space; remove it")
	}
	for _, r := range s {
		if r < 0x20 || r >= 0x7f {
			return "", false, fmt.Errorf("it contains %q; use only ASCII letters, digits, spaces and the characters * , . - / and : (colon)", r)
		}
	}
	if strings.Contains(s, "~") {
		return "", false, errors.New(`"~" (days counted from the end of the month) is not supported; name the days of the month instead, such as *-*-01`)
	}
	if strings.HasPrefix(s, "@") {
		return "", false, errors.New(`"@" timestamps are not supported; write the date and time, such as 2027-01-01 00:00:00`)
	}
	body, utc := s, false
	if n := len(s) - len(" UTC"); n >= 0 && strings.EqualFold(s[n:], " UTC") {
		body, utc = s[:n], true
	}
	if strings.TrimRight(body, " ") != body {
		return "", false, errors.New(`it has more than one space before "UTC"; leave a single space`)
	}
	if i := strings.LastIndexByte(body, ' '); i >= 0 && strings.ContainsFunc(body[i+1:], isASCIILetter) {
		return "", false, fmt.Errorf(`%q at the end is not a date or time; schedules are evaluated in UTC, so remove any timezone other than "UTC"`, body[i+1:])
	}
	return body, utc, nil
}

// isASCIILetter reports whether r is an ASCII letter.
func isASCIILetter(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

// calShorthand returns the spec of a keyword such as "daily", as systemd 252
// defines it, and false when s is not a keyword.
func calShorthand(s string) (calSpec, bool) {
	zero := calChain{{0, -1, 0}}
	day1 := calChain{{1, -1, 0}}
	spec := calSpec{hour: zero, minute: zero, second: zero}
	switch strings.ToLower(s) {
	case "minutely":
		spec.hour, spec.minute = nil, nil
	case "hourly":
		spec.hour = nil
	case "daily":
	case "weekly":
		spec.weekdays = 1
	case "monthly":
		spec.day = day1
	case "yearly", "annually", "anually":
		spec.month, spec.day = calChain{{1, -1, 0}}, day1
	case "quarterly":
		spec.month, spec.day = calChain{{1, -1, 0}, {4, -1, 0}, {7, -1, 0}, {10, -1, 0}}, day1
	case "semiannually", "semi-annually", "biannually", "bi-annually":
		spec.month, spec.day = calChain{{1, -1, 0}, {7, -1, 0}}, day1
	default:
		return calSpec{}, false
	}
	return spec, true
}

// parseCalForm parses "[DOW] [[YYYY-]MM-DD] [HH:MM[:SS]]" like systemd:
// day names first, then a date if the first chain is followed by "-", then
// the time.
func parseCalForm(s string) (calSpec, error) {
	var spec calSpec
	rest, wd, err := parseWeekdays(s)
	if err != nil {
		return calSpec{}, err
	}
	spec.weekdays = wd
	if rest, err = parseCalDate(rest, &spec); err != nil {
		return calSpec{}, err
	}
	if err := parseCalTime(rest, &spec); err != nil {
		return calSpec{}, err
	}
	return spec, nil
}

// matchWeekday returns the number (0 = Monday) and length of the day name
// s starts with, and false when it starts with none.
func matchWeekday(s string) (nr, n int, ok bool) {
	for _, d := range weekdayNames {
		if len(s) >= len(d.name) && strings.EqualFold(s[:len(d.name)], d.name) {
			return d.nr, len(d.name), true
		}
	}
	return 0, 0, false
}

// parseWeekdays reads the leading day-of-week list, as systemd's
// parse_weekdays does, and returns the rest of s and the days as bits
// (0 = Monday). s is returned unchanged when it does not start with a day name.
func parseWeekdays(s string) (string, uint8, error) {
	var days uint8
	p, from, first := s, -1, true
	for {
		nr, n, ok := matchWeekday(p)
		if !ok {
			if first {
				return s, 0, nil
			}
			return "", 0, fmt.Errorf("%q is not a day of the week; use Mon, Tue, Wed, Thu, Fri, Sat or Sun (or the full names)", firstWord(p))
		}
		if n < len(p) && !strings.ContainsRune("-., ", rune(p[n])) {
			return "", 0, fmt.Errorf("%q is not a day of the week or a keyword; use Mon..Sun or one of %s", firstWord(p), calendarKeywords)
		}
		days |= 1 << nr
		if from >= 0 {
			if from > nr {
				wrapped := uint8(0x7f&^(1<<from-1)) | uint8(1<<(nr+1)-1)
				return "", 0, fmt.Errorf("the day-of-week range %s..%s runs backwards; ranges go from Monday towards Sunday, so write %s", weekdayAbbrev[from], weekdayAbbrev[nr], formatWeekdays(wrapped))
			}
			for j := from + 1; j < nr; j++ {
				days |= 1 << j
			}
		}
		p = p[n:]
		if p == "" {
			return "", days, nil
		}
		if p[0] == ' ' {
			return strings.TrimLeft(p, " "), days, nil
		}
		switch p[0] {
		case '.':
			if from >= 0 {
				return "", 0, errors.New("a day-of-week range has more than two ends; write ranges as Mon..Fri and separate them with commas")
			}
			if len(p) < 2 || p[1] != '.' {
				return "", 0, errors.New(`a day-of-week range needs two dots; write Mon..Fri`)
			}
			from, p = nr, p[2:]
		case '-':
			if from >= 0 {
				return "", 0, errors.New("a day-of-week range has more than two ends; write ranges as Mon..Fri and separate them with commas")
			}
			from, p = nr, p[1:]
		case ',':
			from, p = -1, p[1:]
		}
		if p == "" || p[0] == ' ' {
			if from >= 0 {
				return "", 0, fmt.Errorf("the day-of-week range starting at %s has no end; write it as %s..Sun", weekdayAbbrev[from], weekdayAbbrev[from])
			}
			return strings.TrimLeft(p, " "), days, nil
		}
		first = false
	}
}

// firstWord returns s up to the first character that cannot be in a word.
func firstWord(s string) string {
	if i := strings.IndexAny(s, " ,.-:/"); i >= 0 {
		return s[:i]
	}
	return s
}

// parseCalDate reads "[YYYY-]MM-DD" followed by spaces, as systemd's
// parse_date does, and returns the rest. When the first chain is followed by
// ":" or nothing, it is a time and s is returned unchanged.
func parseCalDate(s string, spec *calSpec) (string, error) {
	if s == "" {
		return "", nil
	}
	if isASCIILetter(rune(s[0])) {
		return "", fmt.Errorf("%q is not a day of the week or a keyword; use Mon..Sun or one of %s", firstWord(s), calendarKeywords)
	}
	first, rest, err := readChain(s, "date or hour", false)
	if err != nil {
		return "", err
	}
	if rest == "" || rest[0] == ':' {
		return s, nil
	}
	if rest[0] != '-' {
		return "", unexpected(rest, "date or hour")
	}
	second, rest, err := readChain(rest[1:], "date", false)
	if err != nil {
		return "", err
	}
	if rest == "" || rest[0] == ' ' {
		spec.month, spec.day = first, second
		return strings.TrimLeft(rest, " "), nil
	}
	if rest[0] != '-' {
		return "", unexpected(rest, "date")
	}
	third, rest, err := readChain(rest[1:], "day", false)
	if err != nil {
		return "", err
	}
	if rest != "" && rest[0] != ' ' {
		if rest[0] == '-' {
			return "", errors.New("the date has more than three parts; write YYYY-MM-DD or MM-DD")
		}
		return "", unexpected(rest, "day")
	}
	spec.year, spec.month, spec.day = first, second, third
	return strings.TrimLeft(rest, " "), nil
}

// parseCalTime reads "HH:MM[:SS]", as systemd's parse_calendar_time does;
// an empty s means 00:00:00 and omitted seconds mean :00.
func parseCalTime(s string, spec *calSpec) error {
	zero := calChain{{0, -1, 0}}
	if s == "" {
		spec.hour, spec.minute, spec.second = zero, zero, zero
		return nil
	}
	hour, rest, err := readChain(s, "hour", false)
	if err != nil {
		return err
	}
	if rest == "" || rest[0] != ':' {
		if rest == "" {
			return fmt.Errorf("the time %q has no minutes; write HH:MM or HH:MM:SS, such as 02:30", s)
		}
		return unexpected(rest, "hour")
	}
	minute, rest, err := readChain(rest[1:], "minute", false)
	if err != nil {
		return err
	}
	second := zero
	if rest != "" {
		if rest[0] != ':' {
			return unexpected(rest, "minute")
		}
		if second, rest, err = readChain(rest[1:], "second", true); err != nil {
			return err
		}
		if rest != "" {
			if rest[0] == ':' {
				return errors.New("the time has more than three parts; write HH:MM or HH:MM:SS")
			}
			return unexpected(rest, "second")
		}
	}
	spec.hour, spec.minute, spec.second = hour, minute, second
	return nil
}

// unexpected describes the character that starts rest, found after a field.
func unexpected(rest, field string) error {
	if rest[0] == ' ' {
		return fmt.Errorf("unexpected space before %q; a schedule is at most a day of week, a date and a time, separated by spaces", rest[1:])
	}
	return fmt.Errorf("unexpected %q in the %s field at %q; a field is *, a number, a list a,b, a range a..b or a repetition a/step", rest[0], field, rest)
}

// readChain reads "*" or a comma list of components, as systemd's
// parse_chain does, and returns the chain (nil for "*") and the rest of s.
// systemd reads "*" alone: "*/5" and "*,5" are refused.
func readChain(s, field string, seconds bool) (calChain, string, error) {
	if rest, ok := strings.CutPrefix(s, "*"); ok {
		switch {
		case strings.HasPrefix(rest, "/"):
			return nil, "", fmt.Errorf(`"*/step" in the %s field is refused by systemd; start the repetition at the first value instead, such as 0/5 for hours, minutes and seconds or 1/2 for months and days`, field)
		case strings.HasPrefix(rest, ",") || strings.HasPrefix(rest, ".."):
			return nil, "", fmt.Errorf(`"*" cannot be part of a list or range in the %s field; list numbers, such as 0,30`, field)
		}
		return nil, rest, nil
	}
	var chain calChain
	for {
		c, rest, err := readComponent(s, field, seconds)
		if err != nil {
			return nil, "", err
		}
		chain = append(chain, c)
		if rest == "" || rest[0] != ',' {
			return chain, rest, nil
		}
		s = rest[1:]
	}
}

// readComponent reads a number, a range a..b, a repetition a/step or a..b/step.
func readComponent(s, field string, seconds bool) (calComponent, string, error) {
	start, rest, err := readNumber(s, field, seconds)
	if err != nil {
		return calComponent{}, "", err
	}
	c := calComponent{start: start, stop: -1}
	if strings.HasPrefix(rest, "..") {
		if c.stop, rest, err = readNumber(rest[2:], field, seconds); err != nil {
			return calComponent{}, "", err
		}
		c.step = 1
	}
	if strings.HasPrefix(rest, "/") {
		if c.step, rest, err = readNumber(rest[1:], field, seconds); err != nil {
			return calComponent{}, "", err
		}
		if c.step == 0 {
			return calComponent{}, "", fmt.Errorf("the %s repetition step is 0; use a step of at least 1, such as 0/15", field)
		}
	}
	if rest != "" && !strings.ContainsRune(" ,-:", rune(rest[0])) {
		return calComponent{}, "", unexpected(rest, field)
	}
	return c, rest, nil
}

// readNumber reads the decimal number s starts with and returns the rest.
func readNumber(s, field string, seconds bool) (int, string, error) {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	if n == 0 {
		if s == "" {
			return 0, "", fmt.Errorf("the %s field ends where a number is expected; write a number, such as 0", field)
		}
		if s[0] == '*' {
			return 0, "", fmt.Errorf(`"*" cannot be part of a list or range in the %s field; list numbers, such as 0,30`, field)
		}
		return 0, "", fmt.Errorf("the %s field has %q where a number is expected; write a number, such as 0", field, s[0])
	}
	v, err := strconv.Atoi(s[:n])
	if err != nil || v > maxCalendarNumber {
		return 0, "", fmt.Errorf("the number %s in the %s field is too large; no field goes past %d", s[:n], field, maxCalendarYear)
	}
	rest := s[n:]
	if seconds && strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, "..") {
		frac := strings.TrimLeft(rest[1:], "0123456789")
		return 0, "", fmt.Errorf("fractional seconds (%s%s) are not supported; use whole seconds, such as 02:30:05", s[:n], rest[:len(rest)-len(frac)])
	}
	return v, rest, nil
}

// validate checks every field's values against its range.
func (spec calSpec) validate() error {
	for _, f := range []struct {
		chain calChain
		field calField
	}{
		{spec.year, fieldYear}, {spec.month, fieldMonth}, {spec.day, fieldDay},
		{spec.hour, fieldHour}, {spec.minute, fieldMinute}, {spec.second, fieldSecond},
	} {
		for _, c := range f.chain {
			if err := c.validate(f.field); err != nil {
				return err
			}
		}
	}
	return nil
}

// validate checks c against the range of field f. It is stricter than
// systemd's chain_valid, so that every component it passes means for systemd
// what it says.
func (c calComponent) validate(f calField) error {
	values := []int{c.start}
	if c.stop >= 0 {
		values = append(values, c.stop)
	}
	for _, v := range values {
		if f == fieldYear && v < 100 {
			return fmt.Errorf("the year %d has fewer than four digits; write the full year, such as 2027", v)
		}
		if v < f.min || v > f.max {
			return fmt.Errorf("the %s %d is out of range; use %d..%d", f.name, v, f.min, f.max)
		}
	}
	switch {
	case c.step > f.max-f.min:
		return fmt.Errorf("the %s repetition step %d is larger than the field's range %d..%d; use a smaller step", f.name, c.step, f.min, f.max)
	case c.stop >= 0 && c.stop < c.start:
		return fmt.Errorf("the %s range %d..%d runs backwards; write the lower value first, such as %d..%d", f.name, c.start, c.stop, c.stop, c.start)
	case c.stop >= 0 && c.stop == c.start:
		return fmt.Errorf("the %s range %d..%d has a single value; write %d", f.name, c.start, c.stop, c.start)
	case c.stop < 0 && c.step > 0 && c.start+c.step > f.max:
		return fmt.Errorf("the %s repetition %d/%d never repeats (%d is past %d); write %d alone or use a smaller step", f.name, c.start, c.step, c.start+c.step, f.max, c.start)
	}
	return nil
}

// normalize rewrites spec as systemd's calendar_spec_normalize does: all
// seven days mean any day, and every chain is trimmed, sorted and deduplicated.
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

// String is the normalized form, as `systemd-analyze calendar` prints it after "Normalized form:" (e.g. "*-*-* 00:00:00" for "daily", "*-*-* *:00/5:00" for "*:0/5").
func (c Calendar) String() string {
	return c.norm
}

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
