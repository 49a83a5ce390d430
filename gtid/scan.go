package gtid

import (
	"fmt"
	"math"
)

// scanner walks GTID text byte by byte and builds ParseErrors that carry the
// whole input and an absolute position.
type scanner struct {
	what string // kind of text, for ParseError.What
	s    string
	i    int
}

func (sc *scanner) errAt(pos int, format string, args ...any) *ParseError {
	return &ParseError{What: sc.what, Input: sc.s, Pos: pos, Reason: fmt.Sprintf(format, args...)}
}

func (sc *scanner) eof() bool { return sc.i >= len(sc.s) }

// peek returns the current byte, or 0 at the end of the input.
func (sc *scanner) peek() byte {
	if sc.i >= len(sc.s) {
		return 0
	}
	return sc.s[sc.i]
}

func (sc *scanner) skipSpace() {
	for sc.i < len(sc.s) && isSpace(sc.s[sc.i]) {
		sc.i++
	}
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isDelim reports whether c may end a number token: the separators of every
// GTID syntax in this package, white space and the end of input (c == 0 is
// only passed at the end of input; a NUL byte inside the input is not a
// delimiter, see number).
func isDelim(c byte) bool {
	return c == '-' || c == ',' || c == ':' || isSpace(c)
}

// describe names a byte for error messages.
func describe(c byte) string {
	return fmt.Sprintf("%q", rune(c))
}

// number reads a decimal number named name (e.g. "domain ID") no greater
// than limit. Leading zeros are allowed; signs are not.
func (sc *scanner) number(name string, limit uint64) (uint64, error) {
	start := sc.i
	if sc.eof() {
		return 0, sc.errAt(start, "%s is missing", name)
	}
	c := sc.s[sc.i]
	if !isDigit(c) {
		if c == '-' && sc.i+1 < len(sc.s) && isDigit(sc.s[sc.i+1]) {
			return 0, sc.errAt(start, "%s is negative", name)
		}
		if isDelim(c) {
			return 0, sc.errAt(start, "%s is missing", name)
		}
		return 0, sc.errAt(start, "%s is not a number", name)
	}
	var n uint64
	for sc.i < len(sc.s) && isDigit(sc.s[sc.i]) {
		d := uint64(sc.s[sc.i] - '0')
		if n > (math.MaxUint64-d)/10 || n*10+d > limit {
			return 0, sc.errAt(start, "%s is out of range (maximum %d)", name, limit)
		}
		n = n*10 + d
		sc.i++
	}
	if !sc.eof() && !isDelim(sc.s[sc.i]) {
		return 0, sc.errAt(sc.i, "%s is not a number", name)
	}
	return n, nil
}

// interval reads "n" or "lo-hi" with 1 <= lo <= hi <= limit, allowing white
// space around the dash.
func (sc *scanner) interval(limit uint64) (interval, error) {
	start := sc.i
	lo, err := sc.number("interval start", limit)
	if err != nil {
		return interval{}, err
	}
	if lo == 0 {
		return interval{}, sc.errAt(start, "interval start is 0, transaction numbers start at 1")
	}
	save := sc.i
	sc.skipSpace()
	if sc.peek() != '-' {
		sc.i = save
		return interval{lo, lo}, nil
	}
	sc.i++
	sc.skipSpace()
	endPos := sc.i
	hi, err := sc.number("interval end", limit)
	if err != nil {
		return interval{}, err
	}
	if hi < lo {
		return interval{}, sc.errAt(endPos, "interval end %d is less than start %d", hi, lo)
	}
	return interval{lo, hi}, nil
}
