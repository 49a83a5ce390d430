package dbcopy

import (
	"strings"
)

// ddlAction is what the copy does with a statement of the binary log.
type ddlAction int

const (
	ddlIgnore ddlAction = iota // touches no copied table
	ddlApply                   // run Stmt on B
	ddlStop                    // stop the copy: B would diverge
)

func (a ddlAction) String() string {
	return [...]string{"ignore", "apply", "stop"}[a]
}

// tableRef names a table on A.
type tableRef struct{ DB, Name string }

func (r tableRef) String() string { return r.DB + "." + r.Name }

// ddlDecision is the classification of one statement.
type ddlDecision struct {
	Action ddlAction
	// Stmt is the statement to run on B (table names rewritten to B's
	// databases).
	Stmt string
	// Reload are copied tables whose columns or key may have changed, or
	// which appear (CREATE, RENAME's new name): read them again from B.
	Reload []tableRef
	// Drop are copied tables that disappear.
	Drop []tableRef
	// Reason says why a statement stops the copy.
	Reason string
}

// ddlScope tells the classifier which tables the copy covers.
type ddlScope struct {
	// Copied reports whether db.table is copied now.
	Copied func(db, name string) bool
	// Selected reports whether db.table would be copied (the filters):
	// the new name of a CREATE or RENAME.
	Selected func(db, name string) bool
	// DBSelected reports whether db holds copied tables.
	DBSelected func(db string) bool
	// Rename maps a database of A to its name on B.
	Rename func(db string) string
}

// token is one lexical token of a statement: a word (keyword or bare
// identifier), a quoted identifier, a string, or punctuation.
type token struct {
	text       string // unquoted for quoted identifiers
	start, end int    // byte span in the statement
	quoted     bool   // `identifier`
	str        bool   // 'string' or "string"
}

// isWord reports whether the token is the keyword kw (case-insensitive).
func (t token) isWord(kw string) bool { return !t.quoted && !t.str && strings.EqualFold(t.text, kw) }

// tokenize splits a statement into tokens, skipping comments (executable
// comments /*! ... */ and /*M! ... */ are read as their content).
func tokenize(s string) []token {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '#' || (c == '-' && i+2 < len(s) && s[i+1] == '-' && (s[i+2] == ' ' || s[i+2] == '\t')):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if i+2 < len(s) && s[i+2] == '!' {
				// Executable comment: skip the marker and version, keep the body.
				i += 3
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					i++
				}
				continue
			}
			if i+3 < len(s) && s[i+2] == 'M' && s[i+3] == '!' {
				i += 4
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					i++
				}
				continue
			}
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == '*' && i+1 < len(s) && s[i+1] == '/':
			i += 2 // end of an executable comment
		case c == '`':
			j := i + 1
			var b strings.Builder
			for j < len(s) {
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
			toks = append(toks, token{text: b.String(), start: i, end: min(j+1, len(s)), quoted: true})
			i = j + 1
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) {
				if s[j] == '\\' {
					j += 2
					continue
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			toks = append(toks, token{text: s[i+1 : min(j, len(s))], start: i, end: min(j+1, len(s)), str: true})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, token{text: s[i:j], start: i, end: j})
			i = j
		default:
			toks = append(toks, token{text: s[i : i+1], start: i, end: i + 1})
			i++
		}
	}
	return toks
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{}
}

func (p *parser) eof() bool { return p.i >= len(p.toks) }

// accept consumes the keywords kws, in order, when they come next.
func (p *parser) accept(kws ...string) bool {
	for k, kw := range kws {
		if p.i+k >= len(p.toks) || !p.toks[p.i+k].isWord(kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

// name reads [db.]name; it returns the span the name covers.
func (p *parser) name(defaultDB string) (ref tableRef, start, end int, ok bool) {
	t := p.peek()
	if p.eof() || t.str || (!t.quoted && !isWordByte(t.text[0])) {
		return ref, 0, 0, false
	}
	p.i++
	ref, start, end = tableRef{DB: defaultDB, Name: t.text}, t.start, t.end
	if p.peek().text == "." && !p.peek().quoted && p.i+1 < len(p.toks) {
		n := p.toks[p.i+1]
		if !n.str {
			p.i += 2
			ref = tableRef{DB: t.text, Name: n.text}
			end = n.end
		}
	}
	return ref, start, end, true
}

// ignoredObjects are objects dbpilot copy does not copy; statements on them
// change no row of a copied table (row events carry what triggers do).
var ignoredObjects = map[string]bool{"VIEW": true, "TRIGGER": true, "PROCEDURE": true, "FUNCTION": true, "EVENT": true,
	"USER": true, "ROLE": true, "SERVER": true, "SEQUENCE": true, "PACKAGE": true, "TABLESPACE": true, "LOGFILE": true}

// ignoredStatements change no copied table's rows or definition.
var ignoredStatements = map[string]bool{"GRANT": true, "REVOKE": true, "FLUSH": true, "ANALYZE": true, "OPTIMIZE": true,
	"REPAIR": true, "CHECK": true, "SAVEPOINT": true, "RELEASE": true, "XA": true, "INSTALL": true, "UNINSTALL": true,
	"SET": true, "BEGIN": true, "COMMIT": true, "ROLLBACK": true, "DO": true, "PURGE": true, "RESET": true, "KILL": true,
	"SHOW": true, "SELECT": true, "LOCK": true, "UNLOCK": true, "BACKUP": true}

// dmlStatements change rows; in a ROW-format binary log they appear as
// statements only when a session switched to STATEMENT or MIXED format.
var dmlStatements = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "LOAD": true, "CALL": true, "HANDLER": true}

// classifyDDL decides what to do with a statement of A's binary log run
// with default database defaultDB.
func classifyDDL(stmt, defaultDB string, sc ddlScope) ddlDecision {
	p := &parser{toks: tokenize(stmt)}
	if p.eof() {
		return ddlDecision{Action: ddlIgnore}
	}
	first := strings.ToUpper(p.peek().text)
	switch {
	case p.accept("ALTER"):
		p.accept("ONLINE")
		p.accept("IGNORE")
		switch {
		case p.accept("TABLE"):
			return classifyAlterTable(stmt, p, defaultDB, sc)
		case p.accept("DATABASE"), p.accept("SCHEMA"):
			return classifyDatabaseStmt(stmt, p, defaultDB, sc, "ALTER DATABASE")
		}
		return classifyOther(stmt, p, defaultDB, sc)
	case p.accept("CREATE"):
		p.accept("OR", "REPLACE")
		switch {
		case p.accept("TEMPORARY", "TABLE"):
			return ddlDecision{Action: ddlIgnore, Reason: "temporary table"}
		case p.accept("TABLE"):
			return classifyCreateTable(stmt, p, defaultDB, sc)
		case p.accept("DATABASE"), p.accept("SCHEMA"):
			return classifyDatabaseStmt(stmt, p, defaultDB, sc, "CREATE DATABASE")
		}
		p.accept("ONLINE")
		p.accept("UNIQUE")
		p.accept("FULLTEXT")
		p.accept("SPATIAL")
		if p.accept("INDEX") {
			return classifyIndex(stmt, p, defaultDB, sc)
		}
		return classifyOther(stmt, p, defaultDB, sc)
	case p.accept("DROP"):
		switch {
		case p.accept("TEMPORARY", "TABLE"):
			return ddlDecision{Action: ddlIgnore, Reason: "temporary table"}
		case p.accept("TABLE"):
			return classifyDropTable(stmt, p, defaultDB, sc)
		case p.accept("DATABASE"), p.accept("SCHEMA"):
			return classifyDropDatabase(stmt, p, sc)
		}
		p.accept("ONLINE")
		if p.accept("INDEX") {
			return classifyIndex(stmt, p, defaultDB, sc)
		}
		return classifyOther(stmt, p, defaultDB, sc)
	case p.accept("RENAME", "TABLE"):
		return classifyRenameTable(stmt, p, defaultDB, sc)
	case p.accept("TRUNCATE"):
		p.accept("TABLE")
		ref, s, e, ok := p.name(defaultDB)
		if !ok {
			return stop(stmt, "cannot read the table name")
		}
		if !sc.Copied(ref.DB, ref.Name) {
			return ddlDecision{Action: ddlIgnore}
		}
		return ddlDecision{Action: ddlApply, Stmt: stmt[:s] + dstName(ref, sc) + stmt[e:]}
	case dmlStatements[first]:
		if touchesCopied(stmt, defaultDB, sc) {
			return stop(stmt, "a row change logged as a statement (the session used binlog_format STATEMENT or MIXED) on copied tables")
		}
		return ddlDecision{Action: ddlIgnore}
	case ignoredStatements[first]:
		return ddlDecision{Action: ddlIgnore}
	}
	return classifyOther(stmt, p, defaultDB, sc)
}

func stop(stmt, reason string) ddlDecision {
	return ddlDecision{Action: ddlStop, Stmt: stmt, Reason: reason}
}

func dstName(ref tableRef, sc ddlScope) string {
	return quoteIdent(sc.Rename(ref.DB)) + "." + quoteIdent(ref.Name)
}

// touchesCopied reports whether a statement may change copied tables: its
// default database or any database it names holds copied tables.
func touchesCopied(stmt, defaultDB string, sc ddlScope) bool {
	if defaultDB != "" && sc.DBSelected(defaultDB) {
		return true
	}
	toks := tokenize(stmt)
	for i, t := range toks {
		if t.str {
			continue
		}
		if i+1 < len(toks) && toks[i+1].text == "." && !toks[i+1].quoted && sc.DBSelected(t.text) {
			return true
		}
	}
	return false
}

// classifyOther handles statements on objects dbpilot copy does not copy
// (views, routines, triggers, accounts...), and stops on anything else
// that may touch copied tables.
func classifyOther(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	for !p.eof() {
		t := p.peek()
		if !t.quoted && !t.str && ignoredObjects[strings.ToUpper(t.text)] {
			return ddlDecision{Action: ddlIgnore, Reason: "not a copied object"}
		}
		// Skip CREATE's DEFINER=..., ALGORITHM=..., SQL SECURITY ... and
		// AGGREGATE before the object's kind.
		if t.isWord("DEFINER") || t.isWord("ALGORITHM") || t.isWord("SQL") || t.isWord("SECURITY") || t.isWord("AGGREGATE") ||
			t.isWord("DEFINER") || t.isWord("INVOKER") || t.isWord("MERGE") || t.isWord("TEMPTABLE") || t.isWord("UNDEFINED") ||
			t.text == "=" || t.text == "@" || t.str || t.quoted || t.isWord("CURRENT_USER") || t.text == "(" || t.text == ")" ||
			t.isWord("IF") || t.isWord("NOT") || t.isWord("EXISTS") || t.isWord("OR") || t.isWord("REPLACE") || t.isWord("DEFAULT") {
			p.i++
			continue
		}
		// A bare user name of DEFINER=name@host.
		if p.i > 0 && (p.toks[p.i-1].text == "=" || p.toks[p.i-1].text == "@") {
			p.i++
			continue
		}
		break
	}
	if touchesCopied(stmt, defaultDB, sc) {
		return stop(stmt, "a statement dbpilot copy does not apply, on a database with copied tables")
	}
	return ddlDecision{Action: ddlIgnore}
}

func classifyAlterTable(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	p.accept("IF", "EXISTS")
	ref, s, e, ok := p.name(defaultDB)
	if !ok {
		return stop(stmt, "cannot read the table name")
	}
	if !sc.Copied(ref.DB, ref.Name) {
		if sc.Selected(ref.DB, ref.Name) {
			return stop(stmt, "ALTER of "+ref.String()+", which the filters select but the copy does not have")
		}
		return ddlDecision{Action: ddlIgnore}
	}
	for !p.eof() {
		t := p.peek()
		p.i++
		switch {
		case t.isWord("RENAME"):
			n := p.peek()
			if n.isWord("COLUMN") || n.isWord("INDEX") || n.isWord("KEY") {
				continue
			}
			return stop(stmt, "renames copied table "+ref.String())
		case t.isWord("EXCHANGE"), t.isWord("DISCARD"), t.isWord("IMPORT"):
			return stop(stmt, strings.ToUpper(t.text)+" on copied table "+ref.String())
		}
	}
	return ddlDecision{Action: ddlApply, Stmt: stmt[:s] + dstName(ref, sc) + stmt[e:], Reload: []tableRef{ref}}
}

func classifyCreateTable(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	p.accept("IF", "NOT", "EXISTS")
	ref, s, e, ok := p.name(defaultDB)
	if !ok {
		return stop(stmt, "cannot read the table name")
	}
	if !sc.Selected(ref.DB, ref.Name) {
		return ddlDecision{Action: ddlIgnore}
	}
	for q := p.i; q < len(p.toks); q++ {
		t := p.toks[q]
		if t.isWord("LIKE") || t.isWord("SELECT") {
			return stop(stmt, "CREATE TABLE ... "+strings.ToUpper(t.text)+" of a copied table")
		}
	}
	return ddlDecision{Action: ddlApply, Stmt: stmt[:s] + dstName(ref, sc) + stmt[e:], Reload: []tableRef{ref}}
}

func classifyIndex(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	p.accept("IF", "NOT", "EXISTS")
	p.accept("IF", "EXISTS")
	if _, _, _, ok := p.name(""); !ok {
		return stop(stmt, "cannot read the index name")
	}
	if !p.accept("ON") {
		return stop(stmt, "cannot read the table name")
	}
	ref, s, e, ok := p.name(defaultDB)
	if !ok {
		return stop(stmt, "cannot read the table name")
	}
	if !sc.Copied(ref.DB, ref.Name) {
		return ddlDecision{Action: ddlIgnore}
	}
	return ddlDecision{Action: ddlApply, Stmt: stmt[:s] + dstName(ref, sc) + stmt[e:], Reload: []tableRef{ref}}
}

func classifyDropTable(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	ifExists := p.accept("IF", "EXISTS")
	var copied, other []tableRef
	for {
		ref, _, _, ok := p.name(defaultDB)
		if !ok {
			return stop(stmt, "cannot read the table names")
		}
		if sc.Copied(ref.DB, ref.Name) {
			copied = append(copied, ref)
		} else {
			other = append(other, ref)
		}
		if p.peek().text != "," || p.peek().quoted || p.peek().str {
			break
		}
		p.i++
	}
	if len(copied) == 0 {
		return ddlDecision{Action: ddlIgnore}
	}
	if len(other) > 0 {
		return stop(stmt, "drops copied and other tables together")
	}
	var b strings.Builder
	b.WriteString("DROP TABLE ")
	if ifExists {
		b.WriteString("IF EXISTS ")
	}
	for i, r := range copied {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(dstName(r, sc))
	}
	return ddlDecision{Action: ddlApply, Stmt: b.String(), Drop: copied}
}

func classifyRenameTable(stmt string, p *parser, defaultDB string, sc ddlScope) ddlDecision {
	var pairs [][2]tableRef
	for {
		from, _, _, ok := p.name(defaultDB)
		if !ok || !p.accept("TO") {
			return stop(stmt, "cannot read the table names")
		}
		to, _, _, ok := p.name(defaultDB)
		if !ok {
			return stop(stmt, "cannot read the table names")
		}
		pairs = append(pairs, [2]tableRef{from, to})
		if p.peek().text != "," || p.peek().quoted || p.peek().str {
			break
		}
		p.i++
	}
	var b strings.Builder
	var d ddlDecision
	// Tables renamed within the statement (a TO tmp, b TO a, tmp TO b)
	// count as copied once their first rename is.
	renamed := map[tableRef]bool{}
	copied := func(r tableRef) bool { return renamed[r] || sc.Copied(r.DB, r.Name) }
	for _, pr := range pairs {
		from, to := pr[0], pr[1]
		fc, ts := copied(from), sc.Selected(to.DB, to.Name)
		switch {
		case !fc && !ts:
			continue
		case fc && !ts:
			return stop(stmt, "renames copied table "+from.String()+" to "+to.String()+", which the filters leave out")
		case !fc && ts:
			return stop(stmt, "renames "+from.String()+", which is not copied, to "+to.String()+", which the filters select")
		}
		if b.Len() == 0 {
			b.WriteString("RENAME TABLE ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(dstName(from, sc) + " TO " + dstName(to, sc))
		delete(renamed, from)
		renamed[to] = true
		d.Drop = append(d.Drop, from)
		d.Reload = append(d.Reload, to)
	}
	if b.Len() == 0 {
		return ddlDecision{Action: ddlIgnore}
	}
	d.Action, d.Stmt = ddlApply, b.String()
	return d
}

func classifyDatabaseStmt(stmt string, p *parser, defaultDB string, sc ddlScope, what string) ddlDecision {
	p.accept("IF", "NOT", "EXISTS")
	db := defaultDB
	start, end := len(stmt), len(stmt)
	if t := p.peek(); !p.eof() && (t.quoted || (!t.str && isWordByte(t.text[0]) && !isDatabaseOption(t))) {
		db, start, end = t.text, t.start, t.end
	}
	if db == "" || !sc.DBSelected(db) {
		return ddlDecision{Action: ddlIgnore}
	}
	if start == len(stmt) {
		// ALTER DATABASE without a name acts on the default database:
		// name it.
		i := strings.Index(strings.ToUpper(stmt), "DATABASE")
		if i < 0 {
			i = strings.Index(strings.ToUpper(stmt), "SCHEMA")
			if i < 0 {
				return stop(stmt, what+" without a database name")
			}
			i += len("SCHEMA")
		} else {
			i += len("DATABASE")
		}
		return ddlDecision{Action: ddlApply, Stmt: stmt[:i] + " " + quoteIdent(sc.Rename(db)) + stmt[i:]}
	}
	out := stmt[:start] + quoteIdent(sc.Rename(db)) + stmt[end:]
	if what == "CREATE DATABASE" && !strings.Contains(strings.ToUpper(stmt[:start]), "EXISTS") {
		// B may have the database already (created by the copy).
		out = strings.Replace(out, stmt[:start], stmt[:start]+"IF NOT EXISTS ", 1)
	}
	return ddlDecision{Action: ddlApply, Stmt: out}
}

func isDatabaseOption(t token) bool {
	for _, w := range []string{"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "UPGRADE"} {
		if t.isWord(w) {
			return true
		}
	}
	return false
}

func classifyDropDatabase(stmt string, p *parser, sc ddlScope) ddlDecision {
	p.accept("IF", "EXISTS")
	t := p.peek()
	if p.eof() || t.str {
		return stop(stmt, "cannot read the database name")
	}
	if sc.DBSelected(t.text) {
		return stop(stmt, "drops database "+t.text+", which holds copied tables")
	}
	return ddlDecision{Action: ddlIgnore}
}
