package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// StatementError is the failure of one statement of a script: which one,
// where it starts, and the server's (classified) error. Its message is the
// error on one line followed by the statement in full, indented, with
// passwords redacted (redactPasswords).
type StatementError struct {
	Statement Statement
	Total     int   // statements in the script
	Err       error // as Classify returns it
}

func (e *StatementError) Error() string {
	lines := strings.Split(redactPasswords(e.Statement.Text), "\n")
	for i, l := range lines {
		lines[i] = "  " + strings.TrimRight(l, "\r")
	}
	return e.Err.Error() + "\n" + strings.Join(lines, "\n")
}

func (e *StatementError) Unwrap() error { return e.Err }

// RunScript runs stmts in order on one connection (so that USE, SET,
// variables and temporary tables carry from one statement to the next),
// each with the query timeout, and calls each with a statement's result
// sets (none for a statement that returns no rows; several for a CALL)
// before it runs the next. It stops at the first statement that fails and
// returns a *StatementError for it, or at the first error each returns.
func (d *DB) RunScript(ctx context.Context, stmts []Statement, each func(Statement, []*Rows) error) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return d.classify(err, "connect")
	}
	defer conn.Close()
	for _, st := range stmts {
		sets, err := d.runStatement(ctx, conn, st.Text)
		if err != nil {
			op := fmt.Sprintf("statement %d of %d (line %d)", st.Num, len(stmts), st.Line)
			if len(stmts) == 1 {
				op = "statement"
			}
			return &StatementError{Statement: st, Total: len(stmts), Err: d.classify(err, op)}
		}
		if err := each(st, sets); err != nil {
			return err
		}
	}
	return nil
}

func (d *DB) runStatement(ctx context.Context, conn *sql.Conn, text string) ([]*Rows, error) {
	qctx, cancel := WithQueryTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := conn.QueryContext(qctx, text)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sets []*Rows
	for {
		r, err := readRows(rows, 0)
		if err != nil {
			return nil, err
		}
		if len(r.Columns) > 0 {
			sets = append(sets, r)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return sets, rows.Close()
}
