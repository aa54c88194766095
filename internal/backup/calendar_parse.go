// Reading a calendar expression: the text, the shorthands, weekdays, date and time, and the checks of
// each field (ParseCalendar).

package backup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

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
