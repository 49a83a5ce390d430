package mysql

import (
	"fmt"
	"strings"
)

// This file splits a script of SQL statements into the statements a client
// sends one at a time, as the mariadb and mysql command-line clients do. It
// does no I/O (the runner is in runscript.go), so that it can be tested on
// tables of scripts and fuzzed.

// Statement is one statement of a script.
type Statement struct {
	// Text is the statement as written, from its first token to its
	// delimiter (excluded), trailing blanks trimmed. Comments inside it are
	// kept; comments before it are not part of it.
	Text string
	// Num is the statement's position in the script, from 1.
	Num int
	// Line is the line of the script, from 1, on which Text starts.
	Line int
}

// ScriptError is a script that cannot be split: an unterminated string,
// quoted name or comment, or a DELIMITER command without a delimiter.
type ScriptError struct {
	Line int // where the faulty construct starts, from 1
	Msg  string
}

func (e *ScriptError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// SplitScript splits script into statements the way the mariadb client does:
//
//   - statements end at the delimiter, ";" unless changed, or at the end of
//     the script; empty statements are skipped;
//
//   - the delimiter does not count inside 'strings', "strings" (backslash
//     escapes and doubled quotes included) and `quoted names`, nor inside
//     comments: "-- " and "#" to the end of the line, and /* ... */;
//
//   - executable comments (/*! ... */, /*M! ... */) and optimizer hints
//     (/*+ ... */) are statement text, as the server runs them; a script of
//     mysqldump output splits as the client splits it;
//
//   - "DELIMITER xx" at the start of a statement (a client command, not
//     SQL, running to the end of its line) changes the delimiter, so that a
//     CREATE PROCEDURE, FUNCTION or TRIGGER body can hold semicolons:
//
//     DELIMITER //
//     CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END//
//     DELIMITER ;
//
// An unterminated string, quoted name or comment is an error (a *ScriptError
// naming its line), found before any statement runs.
func SplitScript(script string) ([]Statement, error) {
	var (
		s         = script
		out       []Statement
		delim     = ";"
		line      = 1
		start     = -1 // offset of the current statement's first token; -1: none yet
		startLine int
	)
	code := func(i int) {
		if start < 0 {
			start, startLine = i, line
		}
	}
	flush := func(end int) {
		if start >= 0 {
			out = append(out, Statement{Text: strings.TrimRight(s[start:end], blanks), Num: len(out) + 1, Line: startLine})
			start = -1
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
			continue
		case isBlank(c):
			i++
			continue
		}
		if start < 0 && isDelimiterCommand(s[i:]) {
			eol := endOfLine(s, i)
			d, err := delimiterArg(s[i+len("delimiter") : eol])
			if err != nil {
				return nil, &ScriptError{Line: line, Msg: err.Error()}
			}
			delim = d
			i = eol
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			flush(i)
			i += len(delim)
			continue
		}
		switch {
		case c == '\'' || c == '"' || c == '`':
			code(i)
			end, ok := quoteEnd(s, i)
			if !ok {
				return nil, &ScriptError{Line: line, Msg: fmt.Sprintf("unterminated %s starting here", quoteName(c))}
			}
			line += strings.Count(s[i:end], "\n")
			i = end
		case c == '#' || c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] <= ' '):
			i = endOfLine(s, i) // the newline itself is counted above
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			n := strings.Index(s[i+2:], "*/")
			if n < 0 {
				return nil, &ScriptError{Line: line, Msg: "unterminated /* comment starting here"}
			}
			end := i + 2 + n + 2
			if body := s[i+2:]; strings.HasPrefix(body, "!") || strings.HasPrefix(body, "M!") || strings.HasPrefix(body, "+") {
				code(i) // runs on the server: part of the statement
			}
			line += strings.Count(s[i:end], "\n")
			i = end
		default:
			code(i)
			i++
		}
	}
	flush(len(s))
	return out, nil
}

const blanks = " \t\r\n\f\v"

func isBlank(c byte) bool { return strings.IndexByte(blanks, c) >= 0 }

// endOfLine returns the offset of the newline ending the line that holds
// offset i, or len(s).
func endOfLine(s string, i int) int {
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		return i + n
	}
	return len(s)
}

// isDelimiterCommand reports whether s starts with the client command
// DELIMITER (any case) followed by a blank or the end.
func isDelimiterCommand(s string) bool {
	const word = "delimiter"
	if len(s) < len(word) || !strings.EqualFold(s[:len(word)], word) {
		return false
	}
	return len(s) == len(word) || isBlank(s[len(word)])
}

// delimiterArg reads the new delimiter from the rest of a DELIMITER line:
// its first word, or a quoted string; what follows is ignored, as by the
// client.
func delimiterArg(rest string) (string, error) {
	rest = strings.TrimLeft(rest, blanks)
	var d string
	if rest != "" && (rest[0] == '\'' || rest[0] == '"' || rest[0] == '`') {
		if n := strings.IndexByte(rest[1:], rest[0]); n >= 0 {
			d = rest[1 : 1+n]
		} else {
			d = rest[1:]
		}
	} else if n := strings.IndexAny(rest, blanks); n >= 0 {
		d = rest[:n]
	} else {
		d = rest
	}
	switch {
	case strings.TrimSpace(d) == "":
		return "", fmt.Errorf("DELIMITER needs the new delimiter, e.g. DELIMITER //")
	case strings.Contains(d, `\`):
		return "", fmt.Errorf("DELIMITER %s: a delimiter cannot contain a backslash", d)
	case strings.ContainsAny(d, blanks):
		return "", fmt.Errorf("DELIMITER %q: a delimiter cannot contain a blank", d)
	}
	return d, nil
}

// quoteEnd returns the offset just past the quote that closes the one at
// s[i]. Backslash escapes the next byte in strings (” and ""), not in
// quoted names (“); a doubled quote stands for itself in all three.
func quoteEnd(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

func quoteName(q byte) string {
	switch q {
	case '\'':
		return "'string'"
	case '"':
		return `"string"`
	}
	return "`quoted name`"
}
