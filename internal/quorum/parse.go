package quorum

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SyntaxError is the error Parse returns for a value PostgreSQL would refuse.
type SyntaxError struct {
	// Value is the text given to Parse.
	Value string
	// Pos is the 1-based byte position of the offending token in Value, or
	// len(Value)+1 at end of input.
	Pos int
	// Near is the offending token as written, or "" at end of input.
	Near string
	// Msg says what was wrong or expected there.
	Msg string
}

// Error reads like PostgreSQL's message plus the position, for example
// `synchronous_standby_names "ANY (s1)": syntax error at position 5, at or near "(": expected the number of synchronous standbys after ANY`.
func (e *SyntaxError) Error() string {
	where := "at end of input"
	if e.Near != "" {
		where = fmt.Sprintf("at or near %q", e.Near)
	}
	return fmt.Sprintf("synchronous_standby_names %q: syntax error at position %d, %s: %s", e.Value, e.Pos, where, e.Msg)
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokAny
	tokFirst
	tokName // identifier, quoted identifier or "*"
	tokNum
	tokComma
	tokLParen
	tokRParen
	tokJunk
	tokUnterminated // a quoted identifier without its closing quote
)

type token struct {
	kind tokenKind
	pos  int    // 0-based byte offset in the input
	text string // the token as written
	val  string // the name it stands for (quotes removed, "" undoubled)
}

// isSpace matches the scanner's space class [ \t\n\r\f\v].
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scan splits value into tokens the way syncrep_scanner.l does: longest
// match, ANY and FIRST in any case are keywords, quoted identifiers keep
// their text with "" read as ".
func scan(value string) []token {
	var toks []token
	i := 0
	for {
		for i < len(value) && isSpace(value[i]) {
			i++
		}
		if i >= len(value) {
			return append(toks, token{kind: tokEOF, pos: len(value)})
		}
		start := i
		c := value[i]
		switch {
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(value) {
				if value[i] == '"' {
					if i+1 < len(value) && value[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteByte(value[i])
				i++
			}
			if !closed {
				return append(toks, token{kind: tokUnterminated, pos: start, text: value[start:]})
			}
			toks = append(toks, token{kind: tokName, pos: start, text: value[start:i], val: b.String()})
		case isIdentStart(c):
			for i < len(value) && isIdentCont(value[i]) {
				i++
			}
			word := value[start:i]
			kind := tokName
			switch {
			case strings.EqualFold(word, string(MethodAny)):
				kind = tokAny
			case strings.EqualFold(word, string(MethodFirst)):
				kind = tokFirst
			}
			toks = append(toks, token{kind: kind, pos: start, text: word, val: word})
		case isDigit(c):
			for i < len(value) && isDigit(value[i]) {
				i++
			}
			toks = append(toks, token{kind: tokNum, pos: start, text: value[start:i], val: value[start:i]})
		default:
			i++
			kind := tokJunk
			switch c {
			case '*':
				kind = tokName
			case ',':
				kind = tokComma
			case '(':
				kind = tokLParen
			case ')':
				kind = tokRParen
			}
			toks = append(toks, token{kind: kind, pos: start, text: value[start:i], val: value[start:i]})
		}
	}
}

// Parse reads a synchronous_standby_names value in any form PostgreSQL
// accepts:
//
//   - "ANY n (list)" gives Method "any";
//   - "FIRST n (list)" gives Method "first";
//   - the legacy "n (list)" means FIRST n;
//   - a bare list "s1, s2" (and "*" alone) means FIRST 1;
//
// with keywords in any letter case, any amount of white space between tokens,
// and names bare, as numbers (`1, 2` names standbys "1" and "2"), as "*", or
// double-quoted with embedded quotes doubled.
//
// Names are returned as written, without folding case: PostgreSQL does not
// fold them either, it compares them with application_name ignoring ASCII
// case. Quotes are removed and doubled quotes undoubled. Method is always
// lower case.
//
// The empty string returns (Spec{}, nil): Number 0 and no names mean
// asynchronous replication. A value of only white space is an error, as in
// PostgreSQL ("syntax error at end of input").
//
// Parse checks what PostgreSQL checks (the grammar, and a number >= 1) and no
// more: duplicates, empty quoted names ("") and numbers larger than the list
// parse, as they do in PostgreSQL; call Validate to reject them. One
// deviation: a number above 2147483647 is an error here, while PostgreSQL
// reads it with C's atoi and silently uses a wrapped-around value.
//
// Errors are *SyntaxError values with the position of the offending token.
func Parse(value string) (Spec, error) {
	if value == "" {
		return Spec{}, nil
	}
	p := parser{value: value, toks: scan(value)}
	if p.peek().kind == tokEOF {
		return Spec{}, p.fail(p.peek(), `the value is only white space: use the empty string to turn synchronous replication off`)
	}
	return p.parse()
}

type parser struct {
	value string
	toks  []token
	i     int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF && t.kind != tokUnterminated {
		p.i++
	}
	return t
}

// fail builds a SyntaxError at t. An unterminated quoted identifier and an
// unexpected character are reported as such whatever was expected.
func (p *parser) fail(t token, msg string) error {
	switch t.kind {
	case tokUnterminated:
		return &SyntaxError{Value: p.value, Pos: len(p.value) + 1, Msg: fmt.Sprintf("unterminated quoted identifier starting at position %d: add the closing double quote", t.pos+1)}
	case tokJunk:
		msg = fmt.Sprintf("unexpected character %q (quote names that contain it)", t.text)
	case tokEOF:
		return &SyntaxError{Value: p.value, Pos: len(p.value) + 1, Msg: msg}
	}
	return &SyntaxError{Value: p.value, Pos: t.pos + 1, Near: t.text, Msg: msg}
}

func (p *parser) parse() (Spec, error) {
	var spec Spec
	first := p.peek()
	switch {
	case first.kind == tokAny || first.kind == tokFirst:
		p.next()
		spec.Method = MethodAny
		if first.kind == tokFirst {
			spec.Method = MethodFirst
		}
		n, err := p.number(fmt.Sprintf("expected the number of synchronous standbys after %s", strings.ToUpper(first.text)))
		if err != nil {
			return Spec{}, err
		}
		spec.Number = n
		if err := p.parenList(&spec); err != nil {
			return Spec{}, err
		}
	case first.kind == tokNum && p.toks[p.i+1].kind == tokLParen:
		// Legacy "n (list)", priority commit.
		n, err := p.number("")
		if err != nil {
			return Spec{}, err
		}
		spec.Method, spec.Number = MethodFirst, n
		if err := p.parenList(&spec); err != nil {
			return Spec{}, err
		}
	default:
		// A bare list is FIRST 1.
		names, err := p.list()
		if err != nil {
			return Spec{}, err
		}
		if t := p.peek(); t.kind != tokEOF {
			if t.kind == tokLParen && len(names) == 1 {
				return Spec{}, p.fail(t, `expected "," or end of input: only a number may come before "("`)
			}
			return Spec{}, p.fail(t, `expected "," or end of input`)
		}
		return Spec{Method: MethodFirst, Number: 1, Names: names}, nil
	}
	if t := p.peek(); t.kind != tokEOF {
		return Spec{}, p.fail(t, "expected end of input after the closing parenthesis")
	}
	return spec, nil
}

// number reads NUM and checks it the way PostgreSQL does (> 0).
func (p *parser) number(expected string) (int, error) {
	t := p.next()
	if t.kind != tokNum {
		return 0, p.fail(t, expected)
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil || n > math.MaxInt32 {
		return 0, &SyntaxError{Value: p.value, Pos: t.pos + 1, Near: t.text, Msg: "number of synchronous standbys is too large"}
	}
	if n <= 0 {
		return 0, &SyntaxError{Value: p.value, Pos: t.pos + 1, Near: t.text, Msg: fmt.Sprintf("number of synchronous standbys (%d) must be greater than zero", n)}
	}
	return int(n), nil
}

// parenList reads "(" standby_list ")".
func (p *parser) parenList(spec *Spec) error {
	if t := p.next(); t.kind != tokLParen {
		return p.fail(t, `expected "(" and a list of standby names after the number`)
	}
	names, err := p.list()
	if err != nil {
		return err
	}
	if t := p.next(); t.kind != tokRParen {
		return p.fail(t, `expected "," or ")"`)
	}
	spec.Names = names
	return nil
}

// list reads standby_name { "," standby_name } and stops before the first
// token that does not continue the list; the caller checks that token.
func (p *parser) list() ([]string, error) {
	var names []string
	for {
		t := p.next()
		switch t.kind {
		case tokName, tokNum:
			names = append(names, t.val)
		case tokAny, tokFirst:
			return nil, p.fail(t, fmt.Sprintf("%s is a keyword: write a standby with that name in double quotes, as \"%s\"", strings.ToUpper(t.text), t.text))
		default:
			return nil, p.fail(t, "expected a standby name")
		}
		if p.peek().kind != tokComma {
			return names, nil
		}
		p.next()
	}
}
