package backup

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestCheckCondition(t *testing.T) {
	good := []string{
		"id > 5",
		"created >= \"2026-01-01\"",
		"id % 3 = 0 OR v = 'r1'",
		"(a = 1 OR b = 2) AND (c IN (1, 2, 3))",
		"name = 'it''s (not'",                         // doubled quote, parenthesis in a string
		`name = 'a\'b)' OR x = "q\")"`,                // backslash escapes
		"`we)ird` = 1 AND `a``b` > 2",                 // parenthesis and doubled backtick in identifiers
		"a--1 > 0",                                    // minus minus one, not a comment
		"note = '-- not a comment; # nor /* this */'", // comment markers inside a string
		"a / 2 > b",
		"id IN (SELECT id FROM other WHERE x = 'y')",
	}
	for _, c := range good {
		if err := checkCondition(c); err != nil {
			t.Errorf("checkCondition(%q): %v", c, err)
		}
	}
	bad := []struct{ cond, want string }{
		{"secret=1)) OR ((1=1", "the ')' at byte 9 closes a parenthesis"},
		{"1=1) OR (1=1", "closes a parenthesis"},
		{")(", "closes a parenthesis"},
		{"(a = 1", "a '(' is never closed"},
		{"((a = 1)", "a '(' is never closed"},
		{"((a", "2 '(' are never closed"},
		{"a = 1; DROP TABLE t", "the ';' at byte 6 would end the statement"},
		{"a = 1 -- ) OR (1=1", "comment at byte 7 ('--')"},
		{"a = 1 --", "('--')"},
		{"a = 1 --\t", "('--')"},
		{"a = 1 # ) OR (1", "('#')"},
		{"a = 1 /*! ) OR (1=1 */", "('/*')"},
		{"a = 1 /*M! ) OR (1=1 */", "('/*')"},
		{"a = 1 /* x */", "('/*')"},
		{"a = 'open", "the ' at byte 5 is never closed"},
		{`a = "x\"`, `the " at byte 5 is never closed`},
		{"`a = 1", "the ` at byte 1 is never closed"},
		{"a = 'x\\", "never closed"},
		{"a = 1\x00", "NUL"},
	}
	for _, tc := range bad {
		err := checkCondition(tc.cond)
		if err == nil {
			t.Errorf("checkCondition(%q) accepted it", tc.cond)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkCondition(%q) = %q, want it to contain %q", tc.cond, err, tc.want)
		}
	}
}

// TestParseWhereRefusesEscapes is the reported case: the condition closed
// the dump's parentheses and every chunk selected the whole table.
func TestParseWhereRefusesEscapes(t *testing.T) {
	for _, v := range []string{"db.t:secret=1)) OR ((1=1", "db.t:a=1;", "db.t:a=1 -- x"} {
		got, err := ParseWhere([]string{v})
		if err == nil {
			t.Errorf("ParseWhere(%q) = %v, want an error", v, got)
			continue
		}
		if code := dbpilot.ErrorCode(err); code != dbpilot.EINVALID {
			t.Errorf("ParseWhere(%q): code %q, want %q", v, code, dbpilot.EINVALID)
		}
		if msg := err.Error(); !strings.Contains(msg, "--where for db.t is not one SQL expression") || strings.Contains(msg, "\n") {
			t.Errorf("ParseWhere(%q): error %q", v, msg)
		}
	}
	// The library entry point refuses it too.
	o := DumpOptions{Out: "x", Where: map[string]string{"db.t": "a=1) OR (1=1"}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--where for db.t") {
		t.Errorf("DumpOptions.Validate with an escaping --where: %v", err)
	}
}

// FuzzCheckCondition: a condition the check accepts stays one expression
// inside the parentheses the dump adds: the wrapped text is accepted too
// and its first '(' closes at its last byte (balancedOuter, the chunk
// planner's own scanner, agrees where its lexing is the same: no backslash
// in a backtick identifier); a condition with one more ')' or '(' is
// refused.
func FuzzCheckCondition(f *testing.F) {
	for _, s := range []string{"id > 5", "secret=1)) OR ((1=1", "a = 'x''y' AND `b``c` = \"d\\\"\"", "a--1", "a -- b", "/*!1*/", "(((", "'", "x = ';' OR y = '#'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkCondition(s) != nil {
			return
		}
		w := "(" + s + ")"
		if err := checkCondition(w); err != nil {
			t.Fatalf("%q accepted, %q refused: %v", s, w, err)
		}
		if !(strings.Contains(s, "`") && strings.Contains(s, `\`)) && !balancedOuter(w) {
			t.Fatalf("%q accepted, but %q does not close at its end", s, w)
		}
		if checkCondition(s+")") == nil || checkCondition("("+s) == nil {
			t.Fatalf("%q accepted, and so is it with one more parenthesis", s)
		}
		for _, tail := range []string{";", " #", " -- ", " /*"} {
			if checkCondition(s+tail) == nil {
				t.Fatalf("%q accepted with %q after it", s, tail)
			}
		}
	})
}
