package mysql

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Fingerprint normalizes a statement the way pt-query-digest's fingerprint
// does, so that the statements of one shape group together when the server
// gives no digest (the slow query log): comments are removed, whitespace
// collapsed, the text lowercased; quoted strings, numbers, hexadecimal and
// bit values, TRUE, FALSE and NULL become "?"; lists of values
// ("IN (?, ?, ?)", "VALUES (?, ?), (?, ?)") become "in(?+)" and
// "values(?+)"; a multi-row INSERT or REPLACE is cut after its first row;
// "LIMIT ?, ?" is "limit ?"; ASC is dropped after ORDER BY; "USE db" is
// "use ?" and "CALL p(...)" is "call p". Only ASCII letters are lowercased. Unlike pt-query-digest, digits
// inside names (t1, `col2`) are kept, and a trailing ";" is dropped.
//
// It is a tokenizer, not a parser: it never fails, and text it does not
// understand is kept (lowercased).
func Fingerprint(sql string) string {
	s := strings.TrimSpace(sql)
	if strings.HasPrefix(s, "administrator command: ") {
		return strings.TrimRight(s, "; \t\r\n")
	}
	var (
		b       strings.Builder
		space   bool   // whitespace or a comment since the last token
		prev    string // the last word token, lowercased ("" after other tokens)
		orderBy bool   // after ORDER BY: ASC is dropped
	)
	b.Grow(len(s))
	emit := func(tok string, word bool) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(tok)
		if word {
			prev = tok
		} else {
			prev = ""
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
		case c == '#' || c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] <= ' '):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j
			}
			space = true
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				i = len(s)
			} else {
				i += j + 4
			}
			space = true
		case c == '\'' || c == '"':
			i = skipQuoted(s, i)
			emit("?", false)
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				emit(lowerASCII(s[i:]), false)
				i = len(s)
				continue
			}
			emit(lowerASCII(s[i:i+j+2]), false)
			i += j + 2
		case (c == 'x' || c == 'X' || c == 'b' || c == 'B') && i+1 < len(s) && s[i+1] == '\'':
			i = skipQuoted(s, i+1)
			emit("?", false)
		case c >= '0' && c <= '9' && (space || !afterQualifier(&b)) || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && (space || !endsName(&b)):
			i = skipNumber(s, i)
			emit("?", false)
		case (c == '-' || c == '+') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '.') && unarySign(&b, prev):
			// A signed number: the sign is part of the literal.
			i = skipNumber(s, i+1)
			emit("?", false)
		case isNameByte(c):
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			w := lowerASCII(s[i:j])
			i = j
			switch {
			case w == "true" || w == "false" || w == "null":
				emit("?", false)
			case w == "asc" && orderBy:
				space = false // "a ASC, b" is "a, b"
			default:
				if w == "by" && prev == "order" {
					orderBy = true
				}
				emit(w, true)
			}
		default:
			emit(string(c), false)
			i++
		}
	}
	fp := strings.TrimRight(b.String(), "; ")
	switch {
	case useRE.MatchString(fp):
		return "use ?"
	case callRE.MatchString(fp):
		return callRE.FindStringSubmatch(fp)[1]
	}
	if m := insertRE.FindStringIndex(fp); m != nil {
		fp = cutAfterFirstRow(fp, m[1])
	}
	fp = listRE.ReplaceAllString(fp, "$1(?+)")
	fp = limitRE.ReplaceAllString(fp, "limit ?")
	return fp
}

var (
	useRE    = regexp.MustCompile(`^use \S+$`)
	callRE   = regexp.MustCompile(`^(call \S+?) ?\(`)
	insertRE = regexp.MustCompile(`^(?:insert|replace)(?: ignore)? .*?\bvalues? ?`)
	listRE   = regexp.MustCompile(`\b(in|values?)(?:[\s,]*\([\s?,]*\))+`)
	limitRE  = regexp.MustCompile(`\blimit \?(?: ?, ?\?| offset \?)?`)
)

// cutAfterFirstRow cuts a multi-row INSERT's values list after the row that
// starts at i ("(...) , (...)" is "(...)"), keeping what follows the rows
// (ON DUPLICATE KEY UPDATE ...).
func cutAfterFirstRow(fp string, i int) string {
	if i >= len(fp) || fp[i] != '(' {
		return fp
	}
	end := matchParen(fp, i)
	if end < 0 {
		return fp
	}
	j := end + 1
	rows := j
	for {
		k := j
		for k < len(fp) && fp[k] == ' ' {
			k++
		}
		if k >= len(fp) || fp[k] != ',' {
			break
		}
		k++
		for k < len(fp) && fp[k] == ' ' {
			k++
		}
		if k >= len(fp) || fp[k] != '(' {
			break
		}
		e := matchParen(fp, k)
		if e < 0 {
			break
		}
		j, rows = e+1, e+1
	}
	return fp[:end+1] + fp[rows:]
}

// matchParen returns the index of the ")" closing the "(" at i, or -1.
// Strings are already "?" in a fingerprint, so parentheses are balanced
// text.
func matchParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// skipQuoted returns the index just past the string quoted by s[i]; ”
// (doubled quote) and backslash escapes do not end it; an unterminated one
// runs to the end.
func skipQuoted(s string, i int) int {
	q := s[i]
	j := i + 1
	for j < len(s) {
		switch s[j] {
		case '\\':
			j += 2
			continue
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(s)
}

// skipNumber returns the index just past the number at s[i]: digits,
// a decimal point, an exponent with its sign, 0x and 0b prefixes (and
// letters glued to a number, which a name cannot start with).
func skipNumber(s string, i int) int {
	j := i
	for j < len(s) {
		c := s[j]
		switch {
		case isNameByte(c) || c == '.':
			j++
		case (c == '+' || c == '-') && j > i && (s[j-1] == 'e' || s[j-1] == 'E') && !strings.HasPrefix(lowerASCII(s[i:]), "0x"):
			j++
		default:
			return j
		}
	}
	return j
}

// unarySign reports whether a + or - starts a signed number rather than
// being an operator: at the start, after an operator or "(" or ",", or
// after a keyword that takes an expression.
func unarySign(b *strings.Builder, prev string) bool {
	if prev != "" {
		switch prev {
		case "select", "where", "and", "or", "not", "when", "then", "else", "values", "value", "in",
			"by", "like", "between", "is", "return", "set", "having", "on", "interval", "limit", "offset":
			return true
		}
		return false
	}
	out := b.String()
	if out == "" {
		return true
	}
	switch out[len(out)-1] {
	case '?', ')', '`':
		return false
	}
	return true
}

// endsName reports whether the fingerprint so far ends with a name, so that
// a "." followed by a digit continues it (t.1col) instead of starting .5.
func endsName(b *strings.Builder) bool {
	out := b.String()
	return out != "" && (out[len(out)-1] == '`' || isNameByte(out[len(out)-1]))
}

// afterQualifier reports whether the fingerprint so far ends with "name.",
// so that digits continue a qualified name (t.1col) instead of starting a
// number.
func afterQualifier(b *strings.Builder) bool {
	out := b.String()
	n := len(out)
	return n >= 2 && out[n-1] == '.' && (out[n-2] == '`' || isNameByte(out[n-2]))
}

// lowerASCII lowercases the ASCII letters of s, leaving other bytes as
// they are (strings.ToLower would replace invalid UTF-8).
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isNameByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// FingerprintDigest is the digest of a fingerprint, shaped like a server's
// statement digest (32 lowercase hexadecimal characters: the first 16 bytes
// of its SHA-256), so that slow log groups and performance_schema digests
// fit the same reports. It is not the server's digest: the same statement
// has different digests from the two sources.
func FingerprintDigest(fingerprint string) string {
	sum := sha256.Sum256([]byte(fingerprint))
	return hex.EncodeToString(sum[:16])
}
