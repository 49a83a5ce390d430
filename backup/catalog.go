package backup

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// session is one connection to a server, with errors classified and the
// instance named.
type session struct {
	key  dbpilot.InstanceKey
	user string
	conn *sql.Conn
	// wire, when set instead of conn, is a connection read by dbpilot's
	// own text-protocol reader (the dump's workers: see streamRows).
	wire *mysql.WireConn
}

func (s *session) close() {
	if s.wire != nil {
		s.wire.Close()
		return
	}
	s.conn.Close()
}

func (s *session) fail(op string, err error) error { return mysql.Classify(err, s.key, s.user, op) }

func (s *session) exec(ctx context.Context, op string, stmts ...string) error {
	for _, q := range stmts {
		var err error
		if s.wire != nil {
			_, err = s.wire.Exec(ctx, q)
		} else {
			_, err = s.conn.ExecContext(ctx, q)
		}
		if err != nil {
			return s.fail(op, err)
		}
	}
	return nil
}

// query reads a whole (small) result; NULL is nil.
func (s *session) query(ctx context.Context, op, q string, args ...any) ([][]*string, []string, error) {
	if s.wire != nil {
		if len(args) > 0 {
			return nil, nil, fmt.Errorf("backup: %s: a wire session takes no arguments", op)
		}
		var out [][]*string
		cols, err := s.wire.StreamText(ctx, q, func(vals [][]byte) (bool, error) {
			row := make([]*string, len(vals))
			for i, v := range vals {
				if v != nil {
					str := string(v)
					row[i] = &str
				}
			}
			out = append(out, row)
			return true, nil
		})
		if err != nil {
			return nil, nil, s.fail(op, err)
		}
		return out, cols, nil
	}
	rows, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, s.fail(op, err)
	}
	defer rows.Close()
	r, err := mysql.ReadRows(rows)
	if err != nil {
		return nil, nil, s.fail(op, err)
	}
	return r.Values, r.Columns, nil
}

// value reads one value ("" and false for no row or NULL).
func (s *session) value(ctx context.Context, op, q string, args ...any) (string, bool, error) {
	rows, _, err := s.query(ctx, op, q, args...)
	if err != nil || len(rows) == 0 || len(rows[0]) == 0 || rows[0][0] == nil {
		return "", false, err
	}
	return *rows[0][0], true, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// inList renders a list of string literals for IN (...).
func inList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = quoteString(v)
	}
	return strings.Join(q, ",")
}

// catalog is what the dump reads about the selected objects.
type catalog struct {
	databases []string
	tables    []*tableInfo
	views     map[string][]string // db → view names
}

// readCatalog lists the selected databases, base tables (with columns and
// indexes) and views.
func readCatalog(ctx context.Context, s *session, f Filter) (*catalog, error) {
	const op = "read catalog"
	rows, _, err := s.query(ctx, op, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return nil, err
	}
	c := &catalog{views: map[string][]string{}}
	for _, r := range rows {
		if db := str(r[0]); f.DatabaseSelected(db) {
			c.databases = append(c.databases, db)
		}
	}
	for _, want := range f.Databases {
		found := false
		for _, db := range c.databases {
			found = found || db == want
		}
		if !found {
			return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "backup: database %q not found on %s", want, s.key)
		}
	}
	if len(c.databases) == 0 {
		return c, nil
	}
	in := inList(c.databases)
	rows, _, err = s.query(ctx, op, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_ROWS, DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ("+in+") ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return nil, err
	}
	byName := map[string]*tableInfo{}
	for _, r := range rows {
		db, name, typ := str(r[0]), str(r[1]), str(r[2])
		if typ == "VIEW" {
			if f.TableSelected(db, name) {
				c.views[db] = append(c.views[db], name)
			}
			continue
		}
		if typ != "BASE TABLE" && typ != "SEQUENCE" && typ != "SYSTEM VERSIONED" {
			continue
		}
		if !f.TableSelected(db, name) {
			continue
		}
		est, _ := strconv.ParseInt(str(r[4]), 10, 64)
		size, _ := strconv.ParseInt(str(r[5]), 10, 64)
		t := &tableInfo{DB: db, Name: name, Engine: str(r[3]), Sequence: typ == "SEQUENCE", EstRows: est, DataBytes: size}
		c.tables = append(c.tables, t)
		byName[db+"\x00"+name] = t
	}
	rows, _, err = s.query(ctx, op, "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, EXTRA, CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN ("+in+") ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t := byName[str(r[0])+"\x00"+str(r[1])]
		if t == nil {
			continue
		}
		extra := strings.ToUpper(str(r[6]))
		t.Columns = append(t.Columns, colInfo{
			Name: str(r[2]), DataType: strings.ToLower(str(r[3])), Type: str(r[4]),
			Nullable: str(r[5]) == "YES",
			// MariaDB: VIRTUAL GENERATED, STORED GENERATED (PERSISTENT
			// before 10.2); MySQL: VIRTUAL GENERATED, STORED GENERATED.
			// Not MySQL's DEFAULT_GENERATED: an expression default.
			Generated: strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "STORED GENERATED") || strings.Contains(extra, "PERSISTENT"),
			Charset:   str(r[7]),
		})
	}
	rows, _, err = s.query(ctx, op, "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS WHERE TABLE_SCHEMA IN ("+in+") ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t := byName[str(r[0])+"\x00"+str(r[1])]
		if t == nil {
			continue
		}
		name := str(r[2])
		var ix *indexInfo
		if n := len(t.Indexes); n > 0 && t.Indexes[n-1].Name == name {
			ix = &t.Indexes[n-1]
		} else {
			t.Indexes = append(t.Indexes, indexInfo{Name: name, Unique: str(r[3]) == "0", Usable: true})
			ix = &t.Indexes[len(t.Indexes)-1]
		}
		if r[4] == nil || r[5] != nil {
			ix.Usable = false // expression or prefix part
		}
		ix.Columns = append(ix.Columns, str(r[4]))
	}
	return c, nil
}
