package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Workloads returns the names of the workloads NewWorkload knows, in the
// order a usage message lists them.
func Workloads() []string {
	return append(oltpFamily(), "linkbench")
}

// NewWorkload returns the workload called name, with its default size:
// sysbench's 1 table of 10000 rows for oltp_*, 100000 nodes for linkbench.
// A run against data prepared with other sizes configures the workload
// first (Configurer); Prepare configures it too.
func NewWorkload(name string) (Workload, error) {
	for k, n := range oltpNames {
		if n == name {
			return newOLTP(oltpKind(k)), nil
		}
	}
	if name == "linkbench" {
		return newLinkBench(), nil
	}
	return nil, fmt.Errorf("bench: unknown workload %q; known: %s", name, strings.Join(Workloads(), ", "))
}

// Configurer is implemented by workloads whose clients choose rows within
// the prepared data and so must know its size: the oltp_* workloads
// (Tables, TableSize, as sysbench's --tables and --table-size of a run)
// and linkbench (Nodes). Zero fields keep the current value.
type Configurer interface {
	Configure(opt PrepareOptions)
	// Detect reads the size of the data prepared in db's current
	// database (by this package or by sysbench or LinkBench: the tables
	// sbtest1..N present and MAX(id) of sbtest1, MAX(id) of nodetable),
	// configures the workload with it and returns it.
	Detect(ctx context.Context, db *sql.DB) (PrepareOptions, error)
}

// maxID returns MAX(id) of table (0 when empty).
func maxID(ctx context.Context, db *sql.DB, table string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	var n sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(id) FROM "+quoteIdent(table)).Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: size of %s: %w", table, err)
	}
	return int(n.Int64), nil
}

// stmt is one statement of a transaction as a workload generates it: the
// SQL with ? placeholders and its arguments. Statements that return rows
// (query) have their rows read and discarded, as sysbench and LinkBench
// do, so that the server's work of sending them is measured.
type stmt struct {
	sql   string
	args  []any
	query bool
}

// String shows the statement with its arguments (tests, errors).
func (s stmt) String() string {
	if len(s.args) == 0 {
		return s.sql
	}
	return fmt.Sprintf("%s %v", s.sql, s.args)
}

// rollbackTimeout bounds the best-effort ROLLBACK after a failed
// statement.
const rollbackTimeout = 5 * time.Second

// session runs the statements of one transaction on a connection,
// remembering whether a transaction is open so that a failure rolls it
// back.
type session struct {
	conn Conn
	open bool
}

// begin opens a transaction.
func (s *session) begin(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("BEGIN: %w", err)
	}
	s.open = true
	return nil
}

// exec runs a statement that returns no rows and returns the rows it
// affected.
func (s *session) exec(ctx context.Context, q string, args ...any) (int64, error) {
	n, err := s.conn.Exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", firstWord(q), err)
	}
	return n, nil
}

// query runs a statement and reads its rows; scan, when not nil, is
// called with each row's values.
func (s *session) query(ctx context.Context, q string, scan func([]any) error, args ...any) error {
	if err := s.conn.Query(ctx, q, scan, args...); err != nil {
		return fmt.Errorf("%s: %w", firstWord(q), err)
	}
	return nil
}

// run executes one generated statement; BEGIN and COMMIT open and close
// the transaction.
func (s *session) run(ctx context.Context, st stmt) error {
	switch {
	case st.sql == "BEGIN":
		return s.begin(ctx)
	case st.sql == "COMMIT":
		return s.commit(ctx)
	case st.query:
		return s.query(ctx, st.sql, nil, st.args...)
	default:
		_, err := s.exec(ctx, st.sql, st.args...)
		return err
	}
}

// commit commits the open transaction.
func (s *session) commit(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("COMMIT: %w", err)
	}
	s.open = false
	return nil
}

// abort rolls back an open transaction, best effort (also when ctx has
// ended), and returns err.
func (s *session) abort(ctx context.Context, err error) error {
	if s.open {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_, _ = s.conn.Exec(rctx, "ROLLBACK")
		cancel()
		s.open = false
	}
	return err
}

// runStatements executes a generated transaction on conn: on the first
// error it rolls back (best effort) and returns the error.
func runStatements(ctx context.Context, conn Conn, stmts []stmt) error {
	if conn == nil {
		return errors.New("bench: no connection")
	}
	s := &session{conn: conn}
	for _, st := range stmts {
		if err := s.run(ctx, st); err != nil {
			return s.abort(ctx, err)
		}
	}
	if s.open {
		return s.abort(ctx, errors.New("bench: transaction left open"))
	}
	return nil
}

// asInt returns a column value Conn.Query scanned as an integer.
func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case uint64:
		return int64(x), nil
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	case nil:
		return 0, errors.New("NULL where a number was expected")
	}
	return 0, fmt.Errorf("%T where a number was expected", v)
}

// ledgerID returns a new ledger id for a write transaction (0 when there
// is no ledger or the transaction does not write).
func ledgerID(ledger *Ledger, write bool) uint64 {
	if !write {
		return 0
	}
	return ledger.Next()
}

// firstWord returns the statement's verb for error messages.
func firstWord(q string) string {
	for i, r := range q {
		if r == ' ' {
			return q[:i]
		}
	}
	return q
}
