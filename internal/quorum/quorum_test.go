package quorum_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		spec quorum.Spec
		want string
	}{
		{"any one of two", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}}, "ANY 1 (s1, s2)"},
		{"first with space", quorum.Spec{Method: quorum.MethodFirst, Number: 2, Names: []string{"a", "b c"}}, `FIRST 2 (a, "b c")`},
		{"wildcard", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"*"}}, "ANY 1 (*)"},
		{"upper case quoted", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"S1", "s2"}}, `ANY 1 ("S1", s2)`},
		{"keywords quoted", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"any", "first", "anyone"}}, `ANY 1 ("any", "first", anyone)`},
		{"embedded quote", quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{`x"y`}}, `FIRST 1 ("x""y")`},
		{"digits quoted", quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"1", "1a"}}, `FIRST 1 ("1", "1a")`},
		{"underscore and digits", quorum.Spec{Method: quorum.MethodAny, Number: 2, Names: []string{"_a1", "node_2", "n3"}}, "ANY 2 (_a1, node_2, n3)"},
		{"dollar and dash quoted", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"a$b", "pg-1"}}, `ANY 1 ("a$b", "pg-1")`},
		{"unicode quoted", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"nœud"}}, `ANY 1 ("nœud")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := quorum.Format(tt.spec)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			if got != tt.want {
				t.Errorf("Format = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	specs := []quorum.Spec{
		{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}},
		{Method: quorum.MethodFirst, Number: 1, Names: []string{"s1"}},
		{Method: quorum.MethodAny, Number: 2, Names: []string{"a", "b", "c"}},
		{Method: quorum.MethodFirst, Number: 3, Names: []string{"a", "b", "c", "d"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"*"}},
		{Method: quorum.MethodFirst, Number: 2, Names: []string{"s1", "*"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"b c", "with  two  spaces", " lead", "trail "}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{`x"y`, `"`, `""`, `"quoted"`}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"Upper", "MiXeD_1"}},
		{Method: quorum.MethodFirst, Number: 1, Names: []string{"any", "first"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"ANY", "anyone", "firstly", "first_"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"nœud", "東京", "zürich-1"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"1", "42", "1a", "a$", "$a"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"a,b", "(x)", "'single'", `back\slash`, "~!@#%^&*"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("n", 63)}},
		{Method: quorum.MethodAny, Number: 5, Names: []string{"a", "b", "c", "d", "e"}},
	}
	for _, spec := range specs {
		text, err := quorum.Format(spec)
		if err != nil {
			t.Errorf("Format(%+v): %v", spec, err)
			continue
		}
		got, err := quorum.Parse(text)
		if err != nil {
			t.Errorf("Parse(Format(%+v) = %q): %v", spec, text, err)
			continue
		}
		if !reflect.DeepEqual(got, spec) {
			t.Errorf("Parse(%q) = %+v, want %+v", text, got, spec)
		}
	}
}

func TestParse(t *testing.T) {
	anyOf := func(n int, names ...string) quorum.Spec {
		return quorum.Spec{Method: quorum.MethodAny, Number: n, Names: names}
	}
	first := func(n int, names ...string) quorum.Spec {
		return quorum.Spec{Method: quorum.MethodFirst, Number: n, Names: names}
	}
	tests := []struct {
		in   string
		want quorum.Spec
	}{
		{"", quorum.Spec{}},
		{"ANY 1 (s1, s2)", anyOf(1, "s1", "s2")},
		{"any 1 (s1,s2)", anyOf(1, "s1", "s2")},
		{"Any   2(a,b)", anyOf(2, "a", "b")},
		{"aNy 1 (a)", anyOf(1, "a")},
		{"FIRST 2 (a, \"b c\")", first(2, "a", "b c")},
		{"first 1 (a)", first(1, "a")},
		{"  \t\n ANY\v1\f(\r s1 ,\n s2 )  ", anyOf(1, "s1", "s2")},
		// Legacy "n (list)" is FIRST n.
		{"2 (a, b, c)", first(2, "a", "b", "c")},
		{"1(a)", first(1, "a")},
		// A bare list is FIRST 1.
		{"s1, s2", first(1, "s1", "s2")},
		{"s1", first(1, "s1")},
		{"*", first(1, "*")},
		{"1, 2", first(1, "1", "2")},
		{"1", first(1, "1")},
		{"anyone", first(1, "anyone")},
		{"first_node, any1", first(1, "first_node", "any1")},
		// Names keep their case; quotes are removed and "" undoubled.
		{"ANY 1 (S1, \"S2\")", anyOf(1, "S1", "S2")},
		{`ANY 1 ("x""y", "a,b", "*")`, anyOf(1, `x"y`, "a,b", "*")},
		{`FIRST 1 ("any", "FIRST")`, first(1, "any", "FIRST")},
		{`ANY 1 ("")`, anyOf(1, "")},
		{"ANY 1 (\"tab\there\", \"new\nline\")", anyOf(1, "tab\there", "new\nline")},
		{`""`, first(1, "")},
		{"ANY 1 (a$b, é, _x)", anyOf(1, "a$b", "é", "_x")},
		{"ANY 01 (a)", anyOf(1, "a")},
		// Accepted by PostgreSQL although Validate rejects them.
		{"ANY 3 (a, b)", anyOf(3, "a", "b")},
		{"a, A", first(1, "a", "A")},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := quorum.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseEmptyIsAsynchronous(t *testing.T) {
	got, err := quorum.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	if got.Number != 0 || got.Names != nil || got.Method != "" {
		t.Errorf("Parse(\"\") = %#v, want the zero Spec", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in       string
		pos      int
		near     string
		contains string
	}{
		{"   ", 4, "", "only white space"},
		{"\t\n", 3, "", "only white space"},
		{"ANY (s1)", 5, "(", "expected the number of synchronous standbys after ANY"},
		{"first (s1)", 7, "(", "after FIRST"},
		{"ANY 0 (s1)", 5, "0", "must be greater than zero"},
		{"0 (s1)", 1, "0", "must be greater than zero"},
		{"ANY 99999999999 (a)", 5, "99999999999", "too large"},
		{"ANY 1 s1", 7, "s1", `expected "("`},
		{"ANY 1", 6, "", `expected "("`},
		{"ANY", 4, "", "expected the number"},
		{"ANY 1 (s1", 10, "", `expected "," or ")"`},
		{"ANY 1 (s1, s2", 14, "", `expected "," or ")"`},
		{"ANY 1 s1)", 7, "s1", `expected "("`},
		{"ANY 1 ((s1))", 8, "(", "expected a standby name"},
		{"ANY 1 ()", 8, ")", "expected a standby name"},
		{"ANY 1 (s1,)", 11, ")", "expected a standby name"},
		{"ANY 1 (,s1)", 8, ",", "expected a standby name"},
		{"ANY 1 (s1 s2)", 11, "s2", `expected "," or ")"`},
		{`ANY 1 ("s1)`, 12, "", "unterminated quoted identifier starting at position 8"},
		{`ANY 1 (s1, "a""b)`, 18, "", "unterminated quoted identifier"},
		{`"`, 2, "", "unterminated quoted identifier"},
		{"ANY 1 (s1) x", 12, "x", "expected end of input"},
		{"ANY 1 (s1))", 11, ")", "expected end of input"},
		{"ANY 1 (s1), s2", 11, ",", "expected end of input"},
		{"ANY 1 (any)", 8, "any", `ANY is a keyword`},
		{"s1, first", 5, "first", "FIRST is a keyword"},
		{"any", 4, "", "expected the number"},
		{"first", 6, "", "expected the number"},
		{"ANY 1 (1abc)", 9, "abc", `expected "," or ")"`},
		{"ANY 1 (pg-1)", 10, "-", `unexpected character "-"`},
		{"s1 s2", 4, "s2", `expected "," or end of input`},
		{"s1 (a)", 4, "(", "only a number may come before"},
		{"s1,", 4, "", "expected a standby name"},
		{",", 1, ",", "expected a standby name"},
		{"ANY 1 (s1);", 11, ";", "unexpected character"},
		{"ANY -1 (s1)", 5, "-", "unexpected character"},
		{"ANY 1.5 (s1)", 6, ".", "unexpected character"},
		{"ANY ANY 1 (s1)", 5, "ANY", "expected the number"},
		{"FIRST 1 ANY (s1)", 9, "ANY", `expected "("`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := quorum.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %#v, want an error", tt.in, got)
			}
			var se *quorum.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T %v, want *quorum.SyntaxError", tt.in, err, err)
			}
			if se.Pos != tt.pos || se.Near != tt.near {
				t.Errorf("Parse(%q) error at position %d near %q, want %d near %q (%v)", tt.in, se.Pos, se.Near, tt.pos, tt.near, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Parse(%q) error %q does not contain %q", tt.in, err, tt.contains)
			}
			if se.Value != tt.in {
				t.Errorf("SyntaxError.Value = %q, want %q", se.Value, tt.in)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		spec     quorum.Spec
		contains string // "" means valid
	}{
		{"any one of two", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}}, ""},
		{"all of two", quorum.Spec{Method: quorum.MethodAny, Number: 2, Names: []string{"s1", "s2"}}, ""},
		{"wildcard", quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"*"}}, ""},
		{"63 bytes", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("a", 63)}}, ""},
		{"empty method", quorum.Spec{Number: 1, Names: []string{"s1"}}, "method is empty"},
		{"upper case method", quorum.Spec{Method: "ANY", Number: 1, Names: []string{"s1"}}, `must be written in lower case: use "any"`},
		{"mixed case method", quorum.Spec{Method: "First", Number: 1, Names: []string{"s1"}}, `use "first"`},
		{"unknown method", quorum.Spec{Method: "quorum", Number: 1, Names: []string{"s1"}}, "not supported"},
		{"number zero", quorum.Spec{Method: quorum.MethodAny, Number: 0, Names: []string{"s1"}}, "at least 1"},
		{"number negative", quorum.Spec{Method: quorum.MethodAny, Number: -1, Names: []string{"s1"}}, "at least 1"},
		{"number above names", quorum.Spec{Method: quorum.MethodAny, Number: 3, Names: []string{"s1", "s2"}}, "greater than the number of names"},
		{"no names", quorum.Spec{Method: quorum.MethodAny, Number: 1}, "no standby names"},
		{"empty name", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", ""}}, "standby name 2 is empty"},
		{"duplicate", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2", "s1"}}, "listed twice (names 1 and 3)"},
		{"case duplicate", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"S1", "s1"}}, "ignoring letter case"},
		{"duplicate wildcard", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"*", "*"}}, "listed twice"},
		{"64 bytes", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("a", 64)}}, "64 bytes long"},
		{"64 bytes unicode", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("é", 32)}}, "64 bytes long"},
		{"nul byte", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"a\x00b"}}, "control character"},
		{"newline", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"a\nb"}}, "control character"},
		{"tab", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"a\tb"}}, "control character"},
		{"delete", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"a\x7fb"}}, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want error containing %q", tt.contains)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Validate = %q, want it to contain %q", err, tt.contains)
			}
			if _, ferr := quorum.Format(tt.spec); ferr == nil || ferr.Error() != err.Error() {
				t.Errorf("Format error = %v, want Validate's %v", ferr, err)
			}
		})
	}
}

func TestQuoteName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"s1", "s1"},
		{"_", "_"},
		{"node_1", "node_1"},
		{"*", "*"},
		{"", `""`},
		{"S1", `"S1"`},
		{"any", `"any"`},
		{"first", `"first"`},
		{"anyone", "anyone"},
		{"1", `"1"`},
		{"1a", `"1a"`},
		{"a b", `"a b"`},
		{`a"b`, `"a""b"`},
		{`"`, `""""`},
		{"a$", `"a$"`},
		{"pg-1", `"pg-1"`},
		{"é", `"é"`},
		{"**", `"**"`},
	}
	for _, tt := range tests {
		if got := quorum.QuoteName(tt.in); got != tt.want {
			t.Errorf("QuoteName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name     string
		spec     quorum.Spec
		contains []string
	}{
		{"any one of two", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}}, nil},
		{"any two of two", quorum.Spec{Method: quorum.MethodAny, Number: 2, Names: []string{"s1", "s2"}}, []string{"one standby down stops every commit"}},
		{"any one of one", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s1"}}, []string{"one standby down stops every commit"}},
		{"first one of one", quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"s1"}}, []string{"one standby down stops every commit"}},
		{"wildcard alone", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"*"}}, nil},
		{"first one of two", quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{"s1", "s2"}}, []string{"not the fastest"}},
		{"non-ascii", quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"nœud", "s2"}}, []string{`"nœud"`, "no standby can match it"}},
		{"asynchronous", quorum.Spec{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.spec.Warnings()
			if len(tt.contains) == 0 {
				if len(got) != 0 {
					t.Errorf("Warnings = %q, want none", got)
				}
				return
			}
			all := strings.Join(got, "\n")
			for _, c := range tt.contains {
				if !strings.Contains(all, c) {
					t.Errorf("Warnings = %q, want one containing %q", got, c)
				}
			}
			for _, w := range got {
				if !strings.HasSuffix(w, ".") {
					t.Errorf("warning %q is not a full sentence", w)
				}
			}
		})
	}
}
