// Package quorum reads, writes and checks values of PostgreSQL's
// synchronous_standby_names setting.
//
// The grammar is PostgreSQL's own (src/backend/replication/syncrep_scanner.l
// and syncrep_gram.y, PostgreSQL 10 and later):
//
//	value        = standby_list
//	             | NUM "(" standby_list ")"          legacy form, same as FIRST NUM
//	             | ANY NUM "(" standby_list ")"
//	             | FIRST NUM "(" standby_list ")"
//	standby_list = name { "," name }
//	name         = identifier | NUM | quoted | "*"
//	identifier   = [A-Za-z\200-\377_][A-Za-z\200-\377_0-9$]*   (not ANY or FIRST)
//	quoted       = '"' { any byte but '"' | '""' } '"'
//	NUM          = [0-9]+
//
// ANY and FIRST are keywords in any letter case wherever they appear, so a
// standby called "any" or "first" must be quoted. Spaces, tabs, newlines,
// carriage returns, form feeds and vertical tabs between tokens are ignored.
// The empty string turns synchronous replication off.
//
// Parse accepts exactly what PostgreSQL's check hook accepts (one exception:
// numbers that do not fit in 32 bits, see Parse). Validate is stricter: it
// rejects values PostgreSQL takes but that cannot work, such as more
// synchronous standbys than names, or two names that PostgreSQL treats as one.
package quorum

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Method is how the primary chooses the standbys a commit waits for.
type Method string

const (
	// MethodAny is quorum commit: a commit waits for any Number of the listed
	// standbys, whichever answer first.
	MethodAny Method = "any"
	// MethodFirst is priority commit: a commit waits for the Number connected
	// standbys that come first in the list.
	MethodFirst Method = "first"
)

// NameDataLen is PostgreSQL's NAMEDATALEN. A standby's application_name is
// cut to NameDataLen-1 bytes, so a longer name in the list never matches.
const NameDataLen = 64

// MaxNameBytes is the longest standby name that can match an
// application_name: NameDataLen-1 bytes.
const MaxNameBytes = NameDataLen - 1

// Wildcard is the standby name that matches every standby.
const Wildcard = "*"

// Spec is one value of synchronous_standby_names.
//
// The zero Spec (Number 0, no names) means asynchronous replication and is
// what Parse returns for the empty string; Format and Validate reject it,
// because it has no synchronous_standby_names form other than "".
type Spec struct {
	// Method is MethodAny or MethodFirst, in lower case.
	Method Method
	// Number is how many standbys must confirm each commit (>= 1).
	Number int
	// Names are the standbys' application_name values, in list order. "*"
	// stands for any standby.
	Names []string
}

// Format renders s as a synchronous_standby_names value, for example
// `ANY 1 (s1, s2)` or `FIRST 2 (a, "b c")`. Keywords are upper case, names
// are written with QuoteName, and the list is separated by ", ". It returns
// Validate's error when s is not valid.
func Format(s Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.ToUpper(string(s.Method)))
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(s.Number))
	b.WriteString(" (")
	for i, n := range s.Names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteName(n))
	}
	b.WriteByte(')')
	return b.String(), nil
}

// QuoteName writes one standby name the way Format does.
//
// "*" is written bare: it is the wildcard that matches any standby. (Quoted,
// it would mean the same thing: PostgreSQL compares the parsed text with "*".)
// A name made only of lower-case ASCII letters, digits and underscores, that
// starts with a letter or underscore and is not the keyword "any" or "first",
// is written bare. Every other name is double-quoted, with each embedded
// double quote doubled: `a b` becomes `"a b"`, `S1` becomes `"S1"`, `any`
// becomes `"any"`, `1a` becomes `"1a"` and `x"y` becomes `"x""y"`.
//
// PostgreSQL would also read some other names back unchanged without quotes
// (upper case letters, "$", bytes >= 0x80, digit-only names); quoting them is
// always correct and keeps the rule the same as quote_ident's.
func QuoteName(name string) string {
	if name == Wildcard || isBareName(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// isBareName reports whether name can be written without quotes by Format's
// rule: [a-z_][a-z0-9_]* and not a keyword.
func isBareName(name string) bool {
	if name == "" || isKeyword(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// isKeyword reports whether word is ANY or FIRST in any letter case.
func isKeyword(word string) bool {
	return strings.EqualFold(word, string(MethodAny)) || strings.EqualFold(word, string(MethodFirst))
}

// Validate reports the first reason s cannot be used as a synchronous
// replication setting, or nil. It requires:
//
//   - Method "any" or "first", in lower case exactly (MethodAny, MethodFirst);
//     Parse always returns lower case;
//   - Number >= 1 and Number <= len(Names): PostgreSQL accepts more, but then
//     no commit can ever be confirmed;
//   - at least one name, and no empty name;
//   - no duplicates: PostgreSQL matches names to application_name without
//     regard to ASCII letter case (pg_strcasecmp), so "S1" and "s1" are the
//     same standby;
//   - names of at most MaxNameBytes (63) bytes: application_name is cut to
//     that length, so a longer name never matches;
//   - no ASCII control characters (bytes 0x00-0x1f and 0x7f): ALTER SYSTEM
//     refuses a value with a newline, no setting can hold a NUL byte, and
//     PostgreSQL replaces control characters in application_name with "?",
//     so such a name could never match.
func (s Spec) Validate() error {
	switch s.Method {
	case MethodAny, MethodFirst:
	case "":
		return errors.New(`method is empty: use "any" (quorum: any n standbys) or "first" (priority: the first n standbys)`)
	default:
		if m := Method(strings.ToLower(string(s.Method))); m == MethodAny || m == MethodFirst {
			return fmt.Errorf("method %q must be written in lower case: use %q", s.Method, m)
		}
		return fmt.Errorf(`method %q is not supported: use "any" (quorum: any n standbys) or "first" (priority: the first n standbys)`, s.Method)
	}
	if len(s.Names) == 0 {
		return errors.New("no standby names: list at least one standby application_name, or \"*\" for any standby")
	}
	if s.Number < 1 {
		return fmt.Errorf("number of synchronous standbys is %d: it must be at least 1 (for asynchronous replication leave synchronous_standby_names empty)", s.Number)
	}
	if s.Number > len(s.Names) {
		return fmt.Errorf("number of synchronous standbys (%d) is greater than the number of names (%d): no commit could ever be confirmed; list more standbys or lower the number", s.Number, len(s.Names))
	}
	seen := make(map[string]int, len(s.Names))
	for i, n := range s.Names {
		switch {
		case n == "":
			return fmt.Errorf("standby name %d is empty: use the standby's application_name", i+1)
		case HasControl(n):
			return fmt.Errorf("standby name %d (%q) contains a control character (such as a newline or tab): PostgreSQL cannot match it against an application_name; use printable characters", i+1, n)
		case len(n) > MaxNameBytes:
			return fmt.Errorf("standby name %d (%q) is %d bytes long: PostgreSQL cuts application_name to %d bytes, so it could never match; use a shorter name", i+1, n, len(n), MaxNameBytes)
		}
		key := foldASCII(n)
		if j, ok := seen[key]; ok {
			if s.Names[j] == n {
				return fmt.Errorf("standby name %q is listed twice (names %d and %d)", n, j+1, i+1)
			}
			return fmt.Errorf("standby names %q and %q are the same standby: PostgreSQL compares names ignoring letter case (names %d and %d)", s.Names[j], n, j+1, i+1)
		}
		seen[key] = i
	}
	return nil
}

// foldASCII lower-cases ASCII letters only, as pg_strcasecmp does.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Warnings returns advice about a spec that is valid but probably not what
// its author wants, one full sentence per finding, or nil. It does not repeat
// Validate's errors.
func (s Spec) Warnings() []string {
	var out []string
	hasWildcard := false
	for _, n := range s.Names {
		if n == Wildcard {
			hasWildcard = true
		}
	}
	if s.Number >= 1 && s.Number == len(s.Names) && !hasWildcard {
		if s.Method == MethodAny {
			out = append(out, fmt.Sprintf("ANY %d of %d standbys needs every listed standby to confirm each commit: one standby down stops every commit; list more standbys than the number.", s.Number, len(s.Names)))
		} else {
			out = append(out, fmt.Sprintf("FIRST %d of %d standbys needs every listed standby to confirm each commit: one standby down stops every commit; list more standbys than the number.", s.Number, len(s.Names)))
		}
	}
	if s.Method == MethodFirst && s.Number >= 1 && len(s.Names) > s.Number {
		out = append(out, "FIRST waits for the highest-priority standbys, not the fastest: a slow standby early in the list slows every commit; ANY waits for whichever standbys answer first.")
	}
	for _, n := range s.Names {
		if !printableASCII(n) && !HasControl(n) {
			out = append(out, fmt.Sprintf("Standby name %q has characters outside printable ASCII: PostgreSQL replaces them in a standby's application_name (with \"?\" in version 15, with escapes from 16), so no standby can match it; use ASCII names.", n))
		}
	}
	return out
}

// HasControl reports whether s has an ASCII control byte (0x00-0x1f, 0x7f).
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// printableASCII reports whether every byte of s is in 0x20..0x7e, the bytes
// PostgreSQL keeps in application_name.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
