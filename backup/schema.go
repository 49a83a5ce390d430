package backup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Schema files hold SQL statements in a form the mariadb/mysql client also
// replays: a "DELIMITER ;;" line first, then each statement followed by a
// line holding only ";;". Statements that need the session settings they
// were created with (routines, triggers, views, events) are preceded by
// SET SESSION statements.
const (
	schemaHeader = "-- dbpilot schema file\nDELIMITER ;;\n"
	stmtEnd      = "\n;;\n"
)

// schemaWriter collects statements of one schema file.
type schemaWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *schemaWriter) add(stmt string) {
	if w.buf.Len() == 0 {
		w.buf.WriteString(schemaHeader)
	}
	w.buf.WriteString(strings.TrimRight(stmt, "; \n\t"))
	w.buf.WriteString(stmtEnd)
	w.n++
}

// withSession adds stmt preceded by the session settings it needs and
// followed by their reset.
func (w *schemaWriter) withSession(sqlMode, charset, collation, stmt string) {
	w.add("SET SESSION sql_mode = " + quoteString(sqlMode))
	if charset != "" {
		w.add("SET SESSION character_set_client = " + quoteString(charset))
	}
	if collation != "" {
		w.add("SET SESSION collation_connection = " + quoteString(collation))
	}
	w.add(stmt)
	w.add("SET SESSION sql_mode = DEFAULT, character_set_client = DEFAULT, collation_connection = DEFAULT")
}

// write stores the file under dir/schema; an empty writer writes nothing
// and returns "".
func (w *schemaWriter) write(d *dumpDir, name string) (string, error) {
	if w.n == 0 {
		return "", nil
	}
	rel := filepath.Join(schemaDir, name)
	if err := d.writeSmall(rel, w.buf.Bytes()); err != nil {
		return "", err
	}
	return rel, nil
}

// readStatements reads the statements of a schema file.
func readStatements(dir, rel string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: read schema file %s", rel)
	}
	s := string(b)
	if !strings.HasPrefix(s, schemaHeader) {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s/%s is not a dbpilot schema file", dir, rel)
	}
	s = s[len(schemaHeader):]
	var out []string
	for s != "" {
		i := strings.Index(s, stmtEnd)
		if i < 0 {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s/%s is truncated", dir, rel)
		}
		out = append(out, s[:i])
		s = s[i+len(stmtEnd):]
	}
	return out, nil
}

// dumpDatabaseSchema writes CREATE DATABASE and the database's routines,
// views, triggers and events.
func dumpDatabaseSchema(ctx context.Context, s *session, d *dumpDir, db string, views []string, tables map[string]bool) (Database, []string, error) {
	var warnings []string
	out := Database{Name: db, ViewNames: views}
	qdb := QuoteIdent(db)
	base := fileName(db)

	rows, _, err := s.query(ctx, "show create database", "SHOW CREATE DATABASE "+qdb)
	if err != nil {
		return out, nil, err
	}
	var w schemaWriter
	w.add(strings.Replace(str(rows[0][1]), "CREATE DATABASE ", "CREATE DATABASE IF NOT EXISTS ", 1))
	if out.SchemaFile, err = w.write(d, base+".sql"); err != nil {
		return out, nil, err
	}

	// Routines.
	var rw schemaWriter
	rrows, _, err := s.query(ctx, "list routines", "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY ROUTINE_TYPE, ROUTINE_NAME", db)
	if err != nil {
		return out, nil, err
	}
	for _, r := range rrows {
		name, typ := str(r[0]), str(r[1])
		if typ != "PROCEDURE" && typ != "FUNCTION" {
			warnings = append(warnings, fmt.Sprintf("%s %s.%s not dumped (only procedures and functions are)", strings.ToLower(typ), db, name))
			continue
		}
		cr, cols, err := s.query(ctx, "show create "+strings.ToLower(typ), "SHOW CREATE "+typ+" "+qdb+"."+QuoteIdent(name))
		if err != nil {
			return out, nil, err
		}
		m := rowMap(cols, cr)
		body := m["Create "+titleCase(typ)]
		if body == "" {
			warnings = append(warnings, fmt.Sprintf("%s %s.%s not dumped: its definition is not readable (needs SELECT on mysql.proc or SHOW_ROUTINE)", strings.ToLower(typ), db, name))
			continue
		}
		rw.withSession(m["sql_mode"], m["character_set_client"], m["collation_connection"], body)
		out.RoutineNames = append(out.RoutineNames, typ+" "+name)
	}
	if out.Routines, err = rw.write(d, base+".routines.sql"); err != nil {
		return out, nil, err
	}

	// Views.
	var vw schemaWriter
	for _, name := range views {
		cr, cols, err := s.query(ctx, "show create view", "SHOW CREATE VIEW "+qdb+"."+QuoteIdent(name))
		if err != nil {
			return out, nil, err
		}
		m := rowMap(cols, cr)
		vw.withSession("", m["character_set_client"], m["collation_connection"], m["Create View"])
	}
	if out.Views, err = vw.write(d, base+".views.sql"); err != nil {
		return out, nil, err
	}

	// Triggers of the dumped tables.
	var tw schemaWriter
	trows, _, err := s.query(ctx, "list triggers", "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_ORDER", db)
	if err != nil {
		return out, nil, err
	}
	for _, r := range trows {
		if !tables[str(r[1])] {
			continue
		}
		cr, cols, err := s.query(ctx, "show create trigger", "SHOW CREATE TRIGGER "+qdb+"."+QuoteIdent(str(r[0])))
		if err != nil {
			return out, nil, err
		}
		m := rowMap(cols, cr)
		tw.withSession(m["sql_mode"], m["character_set_client"], m["collation_connection"], m["SQL Original Statement"])
		out.TriggerNames = append(out.TriggerNames, str(r[0]))
	}
	if out.Triggers, err = tw.write(d, base+".triggers.sql"); err != nil {
		return out, nil, err
	}

	// Events.
	var ew schemaWriter
	erows, _, err := s.query(ctx, "list events", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY EVENT_NAME", db)
	if err != nil {
		return out, nil, err
	}
	for _, r := range erows {
		cr, cols, err := s.query(ctx, "show create event", "SHOW CREATE EVENT "+qdb+"."+QuoteIdent(str(r[0])))
		if err != nil {
			return out, nil, err
		}
		m := rowMap(cols, cr)
		ew.withSession(m["sql_mode"], m["character_set_client"], m["collation_connection"], m["Create Event"])
		out.EventNames = append(out.EventNames, str(r[0]))
	}
	if out.Events, err = ew.write(d, base+".events.sql"); err != nil {
		return out, nil, err
	}
	return out, warnings, nil
}

// dumpTableSchema writes CREATE TABLE (or CREATE SEQUENCE and its next
// value, read in the snapshot).
func dumpTableSchema(ctx context.Context, s *session, d *dumpDir, t *Table) error {
	q := t.QualifiedName()
	var w schemaWriter
	if t.Sequence {
		rows, _, err := s.query(ctx, "show create sequence", "SHOW CREATE SEQUENCE "+q)
		if err != nil {
			return err
		}
		w.add(str(rows[0][1]))
		next, ok, err := s.value(ctx, "read sequence", "SELECT next_not_cached_value FROM "+q)
		if err != nil {
			return err
		}
		if ok {
			w.add("SELECT SETVAL(" + q + ", " + next + ", 0)")
		}
	} else {
		rows, _, err := s.query(ctx, "show create table", "SHOW CREATE TABLE "+q)
		if err != nil {
			return err
		}
		w.add(str(rows[0][1]))
	}
	rel, err := w.write(d, fileName(t.DB)+"."+fileName(t.Name)+".sql")
	t.SchemaFile = rel
	return err
}

// dumpUsers writes CREATE USER and GRANT statements for every account but
// the server's own system accounts.
func dumpUsers(ctx context.Context, s *session, d *dumpDir) (string, error) {
	// MariaDB keeps roles in mysql.user too (is_role); they are not dumped.
	rows, _, err := s.query(ctx, "list users", "SELECT User, Host FROM mysql.user WHERE is_role <> 'Y' ORDER BY User, Host")
	if mysql.ServerErrorNumber(err) == 1054 { // MySQL: no is_role column
		rows, _, err = s.query(ctx, "list users", "SELECT User, Host FROM mysql.user ORDER BY User, Host")
	}
	if err != nil {
		return "", err
	}
	var w schemaWriter
	for _, r := range rows {
		user, host := str(r[0]), str(r[1])
		if systemAccount(user) {
			continue
		}
		acct := quoteString(user) + "@" + quoteString(host)
		cu, err := s.query1(ctx, "show create user", "SHOW CREATE USER "+acct)
		if err != nil {
			return "", err
		}
		w.add(strings.Replace(cu, "CREATE USER ", "CREATE USER IF NOT EXISTS ", 1))
		grows, _, err := s.query(ctx, "show grants", "SHOW GRANTS FOR "+acct)
		if err != nil {
			return "", err
		}
		for _, g := range grows {
			w.add(grantWithoutPassword(str(g[0])))
		}
	}
	return w.write(d, "users.sql")
}

func (s *session) query1(ctx context.Context, op, q string) (string, error) {
	v, _, err := s.value(ctx, op, q)
	return v, err
}

// systemAccount reports accounts that belong to the server itself.
func systemAccount(user string) bool {
	switch user {
	case "root", "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema", "":
		return true
	}
	return false
}

func rowMap(cols []string, rows [][]*string) map[string]string {
	m := map[string]string{}
	if len(rows) == 0 {
		return m
	}
	for i, c := range cols {
		m[c] = str(rows[0][i])
	}
	return m
}

func titleCase(s string) string {
	s = strings.ToLower(s)
	return strings.ToUpper(s[:1]) + s[1:]
}

// secondaryIndexLine matches a plain secondary index line of SHOW CREATE
// TABLE ("  KEY `k_1` (`k`)," or FULLTEXT/SPATIAL keys).
var secondaryIndexLine = regexp.MustCompile("^\\s*(KEY|FULLTEXT KEY|SPATIAL KEY|INDEX) `")

// autoIncColumn matches the column definition line of an AUTO_INCREMENT column.
var autoIncColumn = regexp.MustCompile("^\\s*`((?:[^`]|``)+)` .*\\bAUTO_INCREMENT\\b")

// splitSecondaryIndexes removes non-unique secondary indexes from a CREATE
// TABLE statement and returns them as ALTER TABLE clauses ("ADD KEY ...").
// Tables with foreign keys keep their indexes (a foreign key needs one).
func splitSecondaryIndexes(create string) (string, []string) {
	if strings.Contains(create, "FOREIGN KEY") {
		return create, nil
	}
	lines := strings.Split(create, "\n")
	// An AUTO_INCREMENT column must lead some index: keep the indexes it
	// leads.
	autoInc := ""
	for _, l := range lines {
		if m := autoIncColumn.FindStringSubmatch(l); m != nil {
			autoInc = m[1]
		}
	}
	var keep []string
	var added []string
	for _, l := range lines {
		if secondaryIndexLine.MatchString(l) && (autoInc == "" || !strings.Contains(l, "(`"+autoInc+"`")) {
			added = append(added, "ADD "+strings.TrimSuffix(strings.TrimSpace(l), ","))
			continue
		}
		keep = append(keep, l)
	}
	if len(added) == 0 {
		return create, nil
	}
	// The line before the closing ")" must not end with a comma.
	for i := len(keep) - 1; i > 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(keep[i]), ")") {
			keep[i-1] = strings.TrimSuffix(keep[i-1], ",")
			break
		}
	}
	return strings.Join(keep, "\n"), added
}

// grantIdentified matches the authentication MariaDB's SHOW GRANTS puts in
// a GRANT line; replayed, it would reset the password of an account that
// already exists on the target. CREATE USER carries it instead.
var grantIdentified = regexp.MustCompile(` IDENTIFIED (BY PASSWORD '[^']*'|VIA .*?)( WITH | REQUIRE |$)`)

func grantWithoutPassword(g string) string {
	return grantIdentified.ReplaceAllString(g, "$2")
}
