package backup

import (
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// QuoteIdent quotes a MySQL identifier with backticks.
func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString quotes a string literal for SQL, escaping everything that
// matters in any sql_mode (NO_BACKSLASH_ESCAPES is never set by dbpilot's
// sessions).
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

// fileName encodes a database or table name into a portable file name:
// ASCII letters, digits, '_' and '-' stay, everything else becomes @XX per
// byte (like the server's own file name encoding, so "a.b" and "a@2eb" never
// collide with a plain name).
func fileName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "@%02x", c)
		}
	}
	return b.String()
}

// keyLiteral renders a key value, as the server sent it over a binary
// connection, as a literal that compares in the column's own collation:
// strings get their character set introducer, binary strings are hex, and
// everything else (numbers, dates) is a quoted string the server converts.
func keyLiteral(c keyCol, v []byte) string {
	switch {
	case c.charset == "binary" || c.binary:
		return "X'" + hex.EncodeToString(v) + "'"
	case c.charset != "":
		return "_" + c.charset + " X'" + hex.EncodeToString(v) + "'"
	case c.numeric:
		if isPlainNumber(v) {
			return string(v)
		}
	}
	return quoteString(string(v))
}

func isPlainNumber(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for i, c := range v {
		if !(c >= '0' && c <= '9' || c == '.' || (i == 0 && c == '-') || c == 'e' || c == 'E' || c == '+') {
			return false
		}
	}
	return true
}

// Filter selects tables by database list and include/exclude patterns.
type Filter struct {
	Databases []string // empty: every non-system database
	Include   []string // db.table patterns with * and ?; a pattern without a dot names databases
	Exclude   []string
}

// systemDatabases are never dumped unless named in Databases.
var systemDatabases = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// Validate checks the patterns.
func (f Filter) Validate() error {
	for _, p := range append(append([]string{}, f.Include...), f.Exclude...) {
		if p == "" {
			return dbpilot.Errorf(dbpilot.EINVALID, "backup: empty --include/--exclude pattern")
		}
		if _, err := path.Match(p, "x"); err != nil {
			return dbpilot.Errorf(dbpilot.EINVALID, "backup: bad pattern %q: %v", p, err)
		}
	}
	for _, d := range f.Databases {
		if d == "" {
			return dbpilot.Errorf(dbpilot.EINVALID, "backup: empty database name in --databases")
		}
	}
	return nil
}

// String describes the filters as the flags that set them, e.g.
// "--databases shop --include shop --exclude 'shop.*'"; "" when there is
// none.
func (f Filter) String() string {
	var parts []string
	if len(f.Databases) > 0 {
		parts = append(parts, "--databases "+flagArg(strings.Join(f.Databases, ",")))
	}
	for _, p := range f.Include {
		parts = append(parts, "--include "+flagArg(p))
	}
	for _, p := range f.Exclude {
		parts = append(parts, "--exclude "+flagArg(p))
	}
	return strings.Join(parts, " ")
}

// flagArg quotes a flag's value for a shell when it needs it.
func flagArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,-/@:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DatabaseSelected reports whether db can hold selected objects.
func (f Filter) DatabaseSelected(db string) bool {
	if len(f.Databases) > 0 {
		found := false
		for _, d := range f.Databases {
			if d == db {
				found = true
			}
		}
		if !found {
			return false
		}
	} else if systemDatabases[strings.ToLower(db)] {
		return false
	}
	for _, p := range f.Exclude {
		if !strings.Contains(p, ".") && match(p, db) {
			return false
		}
	}
	if len(f.Include) == 0 {
		return true
	}
	for _, p := range f.Include {
		pd := p
		if i := strings.Index(p, "."); i >= 0 {
			pd = p[:i]
		}
		if match(pd, db) {
			return true
		}
	}
	return false
}

// TableSelected reports whether db.table is selected.
func (f Filter) TableSelected(db, table string) bool {
	if !f.DatabaseSelected(db) {
		return false
	}
	name := db + "." + table
	for _, p := range f.Exclude {
		if strings.Contains(p, ".") && match(p, name) {
			return false
		}
	}
	if len(f.Include) == 0 {
		return true
	}
	for _, p := range f.Include {
		if strings.Contains(p, ".") {
			if match(p, name) {
				return true
			}
		} else if match(p, db) {
			return true
		}
	}
	return false
}

// match is path.Match where * and ? also match '/', which MySQL allows in
// names.
func match(pattern, name string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x01"), strings.ReplaceAll(name, "/", "\x01"))
	return ok
}

// ParseWhere parses --where values "db.table:condition" into a map keyed by
// "db.table". Each condition must be one SQL expression (see
// checkCondition): the dump puts it in parentheses after its own chunk
// conditions, and text that closes them (or a comment or a ';') would
// select other rows than the condition says.
func ParseWhere(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		i := strings.Index(v, ":")
		if i <= 0 || strings.TrimSpace(v[i+1:]) == "" || !strings.Contains(v[:i], ".") {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: --where %q: want db.table:condition", v)
		}
		name := v[:i]
		if _, dup := out[name]; dup {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: --where given twice for %s", name)
		}
		cond := strings.TrimSpace(v[i+1:])
		if err := validWhere(name, cond); err != nil {
			return nil, err
		}
		out[name] = cond
	}
	return out, nil
}

// validWhere checks the --where condition of table name.
func validWhere(name, cond string) error {
	if err := checkCondition(cond); err != nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --where for %s is not one SQL expression: %v; give a condition such as 'a > 5 AND (b = 1 OR c = 2)'", name, err)
	}
	return nil
}
