package quorum_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// TestPostgresAcceptsFormat checks Format, Parse and PostgreSQL against
// each other on a throwaway server (pgfixture's): every Format output is
// accepted by ALTER SYSTEM (whose check hook runs PostgreSQL's own parser)
// and SHOW returns it unchanged; other forms PostgreSQL accepts parse;
// values PostgreSQL rejects are rejected by Parse too.
func TestPostgresAcceptsFormat(t *testing.T) {
	pg := pgfixture.Start(t, pgfixture.Options{})

	specs := []quorum.Spec{
		{Method: quorum.MethodAny, Number: 1, Names: []string{"s1", "s2"}},
		{Method: quorum.MethodFirst, Number: 2, Names: []string{"a", "b c", "d"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"*"}},
		{Method: quorum.MethodFirst, Number: 1, Names: []string{"s1", "*"}},
		{Method: quorum.MethodAny, Number: 2, Names: []string{"S1", "MiXeD", "node_3"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"any", "first", "anyone"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{`x"y`, `"`, "it's", `back\slash`}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"nœud", "東京"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{"1", "1a", "a$b", "pg-1", "a,b", "(x)"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{" lead", "trail ", "two  spaces"}},
		{Method: quorum.MethodAny, Number: 1, Names: []string{strings.Repeat("n", 63)}},
	}
	for _, spec := range specs {
		text, err := quorum.Format(spec)
		if err != nil {
			t.Fatalf("Format(%+v): %v", spec, err)
		}
		if err := setSyncNames(pg, text); err != nil {
			t.Errorf("PostgreSQL rejected Format(%+v) = %q: %v", spec, text, err)
			continue
		}
		shown := waitShow(t, pg, text)
		if shown != text {
			t.Errorf("SHOW synchronous_standby_names = %q, want %q", shown, text)
		}
		back, err := quorum.Parse(shown)
		if err != nil {
			t.Errorf("Parse(%q) from SHOW: %v", shown, err)
		}
		if back.Method != spec.Method || back.Number != spec.Number || strings.Join(back.Names, "\x00") != strings.Join(spec.Names, "\x00") {
			t.Errorf("Parse(%q) = %+v, want %+v", shown, back, spec)
		}
	}

	// Forms Format never writes but PostgreSQL accepts: Parse must accept them.
	for _, text := range []string{
		"s1, s2", "*", "2 (a, b)", "any 1 (a)", "Any   2(a,b)", "first 1 (\"any\")",
		"ANY 01 (a)", "1, 2", `""`, "ANY 3 (a, b)", "a, A", "ANY 1 (a$b, é)", " ANY\t1\r( s1\f,\vs2 ) ",
	} {
		if err := setSyncNames(pg, text); err != nil {
			t.Errorf("PostgreSQL rejected %q: %v", text, err)
			continue
		}
		if shown := waitShow(t, pg, text); shown != text {
			t.Errorf("SHOW = %q, want %q", shown, text)
		}
		if _, err := quorum.Parse(text); err != nil {
			t.Errorf("PostgreSQL accepts %q but Parse says: %v", text, err)
		}
	}

	// Values PostgreSQL rejects: Parse must reject them too.
	for _, text := range []string{
		"ANY (s1)", "ANY 0 (s1)", "0 (s1)", "ANY 1 s1", "ANY 1 (s1", "ANY 1 s1)", `ANY 1 ("s1)`,
		"ANY 1 (s1) x", "ANY 1 (s1))", "ANY 1 (any)", "any", "first", "   ", "ANY 1 (1abc)",
		"ANY 1 (pg-1)", "s1 s2", "s1 (a)", "ANY 1 ()", "ANY 1 (s1,)", "ANY -1 (s1)", "\t",
	} {
		if _, err := quorum.Parse(text); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", text)
		}
		if err := setSyncNames(pg, text); err == nil {
			t.Errorf("PostgreSQL accepted %q, which Parse rejects", text)
		} else if !strings.Contains(err.Error(), "synchronous") && !strings.Contains(err.Error(), "syntax error") && !strings.Contains(err.Error(), "unterminated") {
			t.Errorf("PostgreSQL rejected %q for an unexpected reason: %v", text, err)
		}
	}
}

// setSyncNames runs ALTER SYSTEM SET synchronous_standby_names and reloads
// the configuration; the error carries psql's output.
func setSyncNames(pg *pgfixture.Server, text string) error {
	lit := "'" + strings.ReplaceAll(text, "'", "''") + "'"
	if _, err := pg.TryPsql("postgres", "ALTER SYSTEM SET synchronous_standby_names = "+lit); err != nil {
		return err
	}
	_, err := pg.TryPsql("postgres", "SELECT pg_reload_conf()")
	return err
}

// waitShow polls SHOW synchronous_standby_names on new connections until it
// returns want (the reload is asynchronous) or five seconds pass, and
// returns the last value seen.
func waitShow(t *testing.T, pg *pgfixture.Server, want string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = pg.Psql(t, "postgres", "SHOW synchronous_standby_names"); got == want {
			break
		}
	}
	return got
}
