package backup

// A tiny SQL predicate evaluator for the condition shapes the chunk planner
// generates, so that tests can check on concrete rows that chunk conditions
// select every row exactly once. It understands backtick identifiers,
// integer literals (big), comparisons (< <= > >= = <> !=), IS [NOT] NULL,
// NOT, AND, OR (keywords in any case) and parentheses, with SQL's
// three-valued logic and SQL's precedence (NOT > AND > OR).

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// tri is a SQL truth value.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triNull
)

func (v tri) String() string { return [...]string{"FALSE", "TRUE", "NULL"}[v] }

func triAnd(a, b tri) tri {
	switch {
	case a == triFalse || b == triFalse:
		return triFalse
	case a == triNull || b == triNull:
		return triNull
	}
	return triTrue
}

func triOr(a, b tri) tri {
	switch {
	case a == triTrue || b == triTrue:
		return triTrue
	case a == triNull || b == triNull:
		return triNull
	}
	return triFalse
}

func triNot(a tri) tri {
	switch a {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triNull
}

// uRow maps column names to values; a missing or nil value is NULL.
type uRow map[string]*big.Int

// uPred is a compiled predicate.
type uPred func(uRow) tri

type uTok struct {
	kind string // "id", "num", "op", "(", ")", "kw"
	text string
}

func uLex(s string) ([]uTok, error) {
	var out []uTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '`':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated identifier in %q", s)
				}
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, uTok{"id", b.String()})
			i = j + 1
		case c == '(' || c == ')':
			out = append(out, uTok{string(c), string(c)})
			i++
		case c == '<' || c == '>' || c == '=' || c == '!':
			j := i + 1
			if j < len(s) && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			op := s[i:j]
			if op == "!" {
				return nil, fmt.Errorf("bad operator in %q", s)
			}
			out = append(out, uTok{"op", op})
			i = j
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if s[i:j] == "-" {
				return nil, fmt.Errorf("bad number in %q", s)
			}
			out = append(out, uTok{"num", s[i:j]})
			i = j
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
				j++
			}
			kw := strings.ToUpper(s[i:j])
			switch kw {
			case "AND", "OR", "NOT", "IS", "NULL":
			default:
				return nil, fmt.Errorf("unknown word %q in %q", s[i:j], s)
			}
			out = append(out, uTok{"kw", kw})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q in %q", c, s)
		}
	}
	return out, nil
}

type uParser struct {
	toks []uTok
	i    int
	src  string
}

func (p *uParser) peek() uTok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return uTok{}
}

func (p *uParser) isKW(kw string) bool { t := p.peek(); return t.kind == "kw" && t.text == kw }

func (p *uParser) expr() (uPred, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isKW("OR") {
		p.i++
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(row uRow) tri { return triOr(a(row), b(row)) }
	}
	return l, nil
}

func (p *uParser) and() (uPred, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.isKW("AND") {
		p.i++
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(row uRow) tri { return triAnd(a(row), b(row)) }
	}
	return l, nil
}

func (p *uParser) not() (uPred, error) {
	if p.isKW("NOT") {
		p.i++
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return func(row uRow) tri { return triNot(x(row)) }, nil
	}
	return p.primary()
}

func (p *uParser) primary() (uPred, error) {
	t := p.peek()
	switch t.kind {
	case "(":
		p.i++
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.peek().kind != ")" {
			return nil, fmt.Errorf("missing ) in %q", p.src)
		}
		p.i++
		return x, nil
	case "id":
		p.i++
		col := t.text
		if p.isKW("IS") {
			p.i++
			neg := false
			if p.isKW("NOT") {
				p.i++
				neg = true
			}
			if !p.isKW("NULL") {
				return nil, fmt.Errorf("want NULL after IS in %q", p.src)
			}
			p.i++
			return func(row uRow) tri {
				isNull := row[col] == nil
				if isNull != neg {
					return triTrue
				}
				return triFalse
			}, nil
		}
		op := p.peek()
		if op.kind != "op" {
			return nil, fmt.Errorf("want operator after %s in %q", col, p.src)
		}
		p.i++
		lit := p.peek()
		if lit.kind != "num" {
			return nil, fmt.Errorf("want a number after %s %s in %q", col, op.text, p.src)
		}
		p.i++
		n, ok := new(big.Int).SetString(lit.text, 10)
		if !ok {
			return nil, fmt.Errorf("bad number %q in %q", lit.text, p.src)
		}
		return func(row uRow) tri {
			v := row[col]
			if v == nil {
				return triNull
			}
			c := v.Cmp(n)
			var r bool
			switch op.text {
			case "<":
				r = c < 0
			case "<=":
				r = c <= 0
			case ">":
				r = c > 0
			case ">=":
				r = c >= 0
			case "=":
				r = c == 0
			case "<>", "!=":
				r = c != 0
			}
			if r {
				return triTrue
			}
			return triFalse
		}, nil
	}
	return nil, fmt.Errorf("unexpected %q in %q", t.text, p.src)
}

// uCompile compiles a condition; "" selects every row (no WHERE).
func uCompile(cond string) (uPred, error) {
	if cond == "" {
		return func(uRow) tri { return triTrue }, nil
	}
	toks, err := uLex(cond)
	if err != nil {
		return nil, err
	}
	p := &uParser{toks: toks, src: cond}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.i != len(toks) {
		return nil, fmt.Errorf("trailing %q in %q", p.peek().text, cond)
	}
	return x, nil
}

func uMustCompile(t testing.TB, cond string) uPred {
	t.Helper()
	p, err := uCompile(cond)
	if err != nil {
		t.Fatalf("evaluator cannot parse %q: %v", cond, err)
	}
	return p
}

// uInt builds a big.Int from an int64.
func uInt(v int64) *big.Int { return big.NewInt(v) }

func TestEvaluatorSelfCheck(t *testing.T) {
	row := uRow{"a": uInt(5), "b": nil}
	tests := []struct {
		cond string
		want tri
	}{
		{"`a` = 5", triTrue},
		{"`a` < 5", triFalse},
		{"`a` <= 5 AND `a` >= 5", triTrue},
		{"`b` = 1", triNull},
		{"`b` IS NULL", triTrue},
		{"`b` IS NOT NULL", triFalse},
		{"`a` > 1 OR `b` = 1", triTrue},
		{"`a` < 1 OR `b` = 1", triNull},
		{"`a` < 1 AND `b` = 1", triFalse},
		{"`a` = 1 AND `a` = 2 OR `a` = 5", triTrue}, // AND binds tighter
		{"`a` = 5 or `a` = 1 and `a` = 2", triTrue},
		{"NOT (`a` = 5)", triFalse},
		{"NOT `b` = 1", triNull},
		{"`a` <> 5", triFalse},
		{"`a` > -6", triTrue},
		{"", triTrue},
	}
	for _, tc := range tests {
		if got := uMustCompile(t, tc.cond)(row); got != tc.want {
			t.Errorf("%q = %v, want %v", tc.cond, got, tc.want)
		}
	}
	for _, bad := range []string{"`a` = ", "(`a` = 1", "`a` LIKE 1", "`a` = 'x'", "`a` = 1)"} {
		if _, err := uCompile(bad); err == nil {
			t.Errorf("uCompile(%q) accepted it", bad)
		}
	}
}
