package gtid

import (
	"errors"
	"strings"
	"testing"
)

// The seed corpus lives in testdata/fuzz/<FuzzName>/.

// checkParseError fails unless err is a one-line *ParseError about input
// with a position inside it.
func checkParseError(t *testing.T, input string, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("parse %q: error %v is not a *ParseError", input, err)
	}
	if pe.Input != input || pe.Pos < 0 || pe.Pos > len(input) || pe.Reason == "" {
		t.Fatalf("parse %q: bad ParseError %+v", input, pe)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "gtid: invalid ") {
		t.Fatalf("parse %q: error is not one line: %q", input, msg)
	}
}

func FuzzParseMariaGTID(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseMariaGTID(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		out := g.String()
		g2, err := ParseMariaGTID(out)
		if err != nil || g2 != g || g2.String() != out {
			t.Fatalf("%q parsed to %v, which re-parses to %v, %v", s, out, g2, err)
		}
	})
}

func FuzzParseMariaList(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseMariaList(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		out := l.String()
		l2, err := ParseMariaList(out)
		if err != nil || !l2.Equal(l) || l2.String() != out {
			t.Fatalf("%q parsed to %q, which re-parses to %q, %v", s, out, l2, err)
		}
		if !l.Contains(l) || !l.Union(l).Equal(l) || !l.Subtract(l).IsEmpty() {
			t.Fatalf("%q: self-algebra fails", s)
		}
	})
}

func FuzzParseMariaSet(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMariaSet(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		out := m.String()
		m2, err := ParseMariaSet(out)
		if err != nil || !m2.Equal(m) || m2.String() != out {
			t.Fatalf("%q parsed to %q, which re-parses to %q, %v", s, out, m2, err)
		}
		if !m.Contains(m) || !m.Union(m).Equal(m) || !m.Subtract(m).IsEmpty() || !m.Intersect(m).Equal(m) {
			t.Fatalf("%q: self-algebra fails", s)
		}
	})
}

func FuzzParseMySQLSet(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMySQLSet(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		out := m.String()
		m2, err := ParseMySQLSet(out)
		if err != nil || !m2.Equal(m) || m2.String() != out {
			t.Fatalf("%q parsed to %q, which re-parses to %q, %v", s, out, m2, err)
		}
		if !m.Contains(m) || !m.Union(m).Equal(m) || !m.Subtract(m).IsEmpty() || !m.Intersect(m).Equal(m) {
			t.Fatalf("%q: self-algebra fails", s)
		}
		if m.IsEmpty() != (m.Count() == 0) {
			t.Fatalf("%q: IsEmpty = %v, Count = %d", s, m.IsEmpty(), m.Count())
		}
	})
}
