package gtid

import "fmt"

// ParseError reports text that is not a valid GTID, GTID list or GTID set.
type ParseError struct {
	// What names the kind of text being parsed, e.g. "MariaDB GTID",
	// "MariaDB GTID list" or "MySQL GTID set".
	What string
	// Input is the complete text given to the parser.
	Input string
	// Pos is the byte offset in Input where the problem was found.
	Pos int
	// Reason says what is wrong at Pos.
	Reason string
}

// excerptRadius bounds how much of a long input an error message quotes
// on either side of the position.
const excerptRadius = 40

// Error formats the error as one line, e.g.
//
//	gtid: invalid MariaDB GTID "0-1-x" at position 4: sequence number is not a number
//
// Inputs longer than a few dozen bytes are quoted as an excerpt around Pos.
func (e *ParseError) Error() string {
	what := e.What
	if what == "" {
		what = "GTID text"
	}
	return fmt.Sprintf("gtid: invalid %s %s at position %d: %s", what, excerpt(e.Input, e.Pos), e.Pos, e.Reason)
}

// excerpt quotes s, or the part of s around pos when s is long.
func excerpt(s string, pos int) string {
	if len(s) <= 2*excerptRadius {
		return fmt.Sprintf("%q", s)
	}
	pos = min(max(pos, 0), len(s))
	lo := max(pos-excerptRadius, 0)
	hi := min(pos+excerptRadius, len(s))
	q := fmt.Sprintf("%q", s[lo:hi])
	if lo > 0 {
		q = "..." + q
	}
	if hi < len(s) {
		q += "..."
	}
	return q
}
