package dbcopy

import "strings"

// renameReferences rewrites the foreign keys of a CREATE or ALTER TABLE
// statement that name a table of another database, for --rename-database:
// REFERENCES `db`.`t` (or db.t) gets the database's name on B. A
// reference without a database is to the table's own database, which
// moves with it. String literals, quoted identifiers and /* */ comments
// are skipped whole, so only the keyword REFERENCES outside them counts.
func renameReferences(stmt string, rename func(db string) string) string {
	var b strings.Builder
	i := 0
	for i < len(stmt) {
		switch c := stmt[i]; {
		case c == '\'' || c == '"':
			j := skipString(stmt, i)
			b.WriteString(stmt[i:j])
			i = j
		case c == '`':
			j := skipIdent(stmt, i)
			b.WriteString(stmt[i:j])
			i = j
		case c == '/' && strings.HasPrefix(stmt[i:], "/*"):
			j := strings.Index(stmt[i+2:], "*/")
			if j < 0 {
				j = len(stmt)
			} else {
				j += i + 4
			}
			b.WriteString(stmt[i:j])
			i = j
		case isWordStart(stmt, i) && hasKeyword(stmt[i:], "REFERENCES"):
			j := i + len("REFERENCES")
			for j < len(stmt) && (stmt[j] == ' ' || stmt[j] == '\t' || stmt[j] == '\n' || stmt[j] == '\r') {
				j++
			}
			b.WriteString(stmt[i:j])
			i = j
			db, end, ok := identAt(stmt, i)
			if !ok {
				continue
			}
			if _, _, qualified := identAt(stmt, end+1); qualified && end < len(stmt) && stmt[end] == '.' {
				if to := rename(db); to != db {
					b.WriteString(quoteIdent(to))
					i = end
					continue
				}
			}
			b.WriteString(stmt[i:end])
			i = end
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// identAt reads the identifier at s[i], backquoted or bare, and returns
// its name and the index after it.
func identAt(s string, i int) (name string, end int, ok bool) {
	if i >= len(s) {
		return "", i, false
	}
	if s[i] == '`' {
		end = skipIdent(s, i)
		if end > len(s) || end-i < 2 || s[end-1] != '`' {
			return "", i, false
		}
		return strings.ReplaceAll(s[i+1:end-1], "``", "`"), end, true
	}
	end = i
	for end < len(s) && (isIdentByte(s[end]) || s[end] >= 0x80) {
		end++
	}
	return s[i:end], end, end > i
}

// skipString returns the index after the string literal opened at s[i]
// (a doubled quote or a backslash escape stays inside).
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// skipIdent returns the index after the backquoted identifier opened at
// s[i] (a doubled backquote stays inside).
func skipIdent(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == '`' {
			if j+1 < len(s) && s[j+1] == '`' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func isWordStart(s string, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	return !(c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// hasKeyword reports whether s starts with kw (any case) as a whole word.
func hasKeyword(s, kw string) bool {
	if len(s) < len(kw) || !strings.EqualFold(s[:len(kw)], kw) {
		return false
	}
	return len(s) == len(kw) || !isIdentByte(s[len(kw)])
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
