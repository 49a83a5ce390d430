package backup

import "fmt"

// checkCondition checks that a --where condition is one SQL expression that
// stays inside the parentheses the dump wraps it in: every parenthesis
// outside string literals and quoted identifiers is balanced (never closing
// one it did not open), every literal and identifier is closed, and there is
// no statement separator (;) and no comment (#, -- , /* */, including the
// executable /*! */ and /*M! */) that could end or hide the wrapping
// parenthesis. It is a lexical check, not a parser: a condition that passes
// may still be refused by the server, but it stays one expression inside
// the dump's WHERE. Strings are lexed as in dbpilot's dump and restore
// sessions (an empty sql_mode, or one without ANSI_QUOTES and
// NO_BACKSLASH_ESCAPES): '...' and
// "..." are strings where a backslash escapes the next byte and a doubled
// quote is a quote; `...` is an identifier where a doubled backtick is one.
func checkCondition(cond string) error {
	depth := 0
	for i := 0; i < len(cond); i++ {
		c := cond[i]
		switch c {
		case '\'', '"', '`':
			end, ok := closeQuote(cond, i)
			if !ok {
				return fmt.Errorf("the %c at byte %d is never closed", c, i+1)
			}
			i = end
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return fmt.Errorf("the ')' at byte %d closes a parenthesis the condition did not open", i+1)
			}
		case ';':
			return fmt.Errorf("the ';' at byte %d would end the statement", i+1)
		case '#':
			return fmt.Errorf("the comment at byte %d ('#') is not allowed", i+1)
		case '/':
			if i+1 < len(cond) && cond[i+1] == '*' {
				return fmt.Errorf("the comment at byte %d ('/*') is not allowed", i+1)
			}
		case '-':
			// "-- " starts a comment when the second dash is followed by
			// whitespace or a control character, or ends the text; "a--1"
			// is a minus and a negative number.
			if i+1 < len(cond) && cond[i+1] == '-' && (i+2 == len(cond) || cond[i+2] <= ' ' || cond[i+2] == 0x7f) {
				return fmt.Errorf("the comment at byte %d ('--') is not allowed", i+1)
			}
		case 0:
			return fmt.Errorf("a NUL byte at byte %d", i+1)
		}
	}
	switch {
	case depth == 1:
		return fmt.Errorf("a '(' is never closed")
	case depth > 1:
		return fmt.Errorf("%d '(' are never closed", depth)
	}
	return nil
}

// closeQuote returns the index of the quote that closes the literal or
// quoted identifier opening at s[i].
func closeQuote(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++ // the escaped byte, whatever it is
		case s[j] == q:
			if j+1 < len(s) && s[j+1] == q {
				j++ // a doubled quote is the quote itself
				continue
			}
			return j, true
		}
	}
	return 0, false
}
