// Package mysql is everything in dbpilot that speaks SQL to a MySQL or MariaDB
// server: connecting, inspecting, and controlling replication, with the
// differences between flavors and versions (SHOW SLAVE vs SHOW REPLICA,
// MariaDB vs MySQL GTID) kept in this package.
package mysql

import (
	"context"
	"crypto/tls"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

// Default timeouts. Every SQL call dbpilot makes is bounded.
const (
	DefaultConnectTimeout = 1 * time.Second
	DefaultQueryTimeout   = 5 * time.Second
)

// Credentials is a user and password. The password is never printed: String
// and the %v verbs show only the user.
type Credentials struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// String shows the user only.
func (c Credentials) String() string { return c.User }

// GoString shows the user only.
func (c Credentials) GoString() string { return fmt.Sprintf("Credentials{User:%q}", c.User) }

// Options configures connections.
type Options struct {
	Credentials
	// ConnectTimeout bounds each new connection as a whole: the TCP (or
	// Unix socket) connect, the server's greeting, authentication and the
	// session setup. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	QueryTimeout   time.Duration // default DefaultQueryTimeout
	// Socket, when set, connects through this Unix socket instead of TCP to
	// the key (which still names the instance in messages).
	Socket string
	// Dial, when set, opens the TCP connections (tests route them through a
	// proxy to cut dbpilot's path to a server without touching replication).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Database is the default database of the sessions ("": none).
	Database string
	// BlockingIO reads and writes the connections' sockets with blocking
	// system calls, a thread each, instead of Go's network poller: less
	// CPU per statement for a few busy connections (the bench's), more
	// threads (Linux only; ignored elsewhere).
	BlockingIO bool
	// MaxConns is the size of the pool; default 2. Parallel work (dump,
	// restore) opens one connection per worker.
	MaxConns int
	// MultiStatements lets one query carry several statements (the standby
	// fence of Liveness).
	MultiStatements bool
	// TLS secures the TCP connections (nil: plain text; see LoadTLS).
	// Unix socket connections never use it: a socket is secure transport.
	TLS *TLS
	// TLSFor, when set, picks the TLS of each server (serve: a cluster's
	// own tls block); a nil answer falls back to TLS.
	TLSFor func(dbpilot.InstanceKey) *TLS
}

// TLSOf returns the TLS of connections to key: TLSFor's, else TLS; nil
// over a Unix socket.
func (o Options) TLSOf(key dbpilot.InstanceKey) *TLS {
	if o.Socket != "" {
		return nil
	}
	if o.TLSFor != nil {
		if t := o.TLSFor(key); t != nil {
			return t
		}
	}
	return o.TLS
}

// TLSConfig returns the crypto/tls configuration of a connection to key,
// nil for plain text (go-mysql's clients take it).
func (o Options) TLSConfig(key dbpilot.InstanceKey) *tls.Config {
	return o.TLSOf(key).Config(key.Host)
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	return o
}

// DB is a connection pool to one server, holding a single connection by
// default so that session settings stay put.
type DB struct {
	Key  dbpilot.InstanceKey
	opts Options
	tls  *TLS // the connections' (nil: plain text)
	db   *sql.DB
}

// Open connects to the server at key and checks that it answers.
func Open(ctx context.Context, key dbpilot.InstanceKey, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	cfg := driver.NewConfig()
	cfg.User = opts.User
	cfg.Passwd = opts.Password
	cfg.Net = "tcp"
	cfg.Addr = key.String()
	cfg.DBName = opts.Database
	if opts.Socket != "" {
		cfg.Net = "unix"
		cfg.Addr = opts.Socket
	} else if opts.Dial != nil {
		cfg.DialFunc = opts.Dial
	}
	if opts.BlockingIO {
		cfg.DialFunc = DialBlocking(opts.Dial)
	}
	cfg.Timeout = opts.ConnectTimeout
	cfg.ReadTimeout = opts.QueryTimeout + time.Second
	cfg.WriteTimeout = opts.QueryTimeout + time.Second
	cfg.InterpolateParams = true
	cfg.MultiStatements = opts.MultiStatements
	cfg.AllowNativePasswords = true
	cfg.Params = map[string]string{"sql_mode": "''"}
	t := opts.TLSOf(key)
	if t != nil {
		cfg.TLS = t.Config(key.Host)
		cfg.AllowFallbackToPlaintext = t.Mode() == TLSPreferred
	}
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "mysql: configure connection to %s", key)
	}
	// cfg.Timeout bounds the dial only, and the driver reads the greeting
	// with ReadTimeout (the query timeout): every connection of the pool,
	// the first and those opened later for a statement, gets the connect
	// timeout as a whole instead.
	sdb := sql.OpenDB(boundedConnector{Connector: connector, timeout: opts.ConnectTimeout})
	maxConns := 2
	if opts.MaxConns > 0 {
		maxConns = opts.MaxConns
	}
	sdb.SetMaxOpenConns(maxConns)
	sdb.SetMaxIdleConns(maxConns)
	sdb.SetConnMaxIdleTime(time.Minute)
	d := &DB{Key: key, opts: opts, tls: t, db: sdb}
	pctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout+opts.QueryTimeout)
	defer cancel()
	if err := sdb.PingContext(pctx); err != nil {
		sdb.Close()
		return nil, d.classify(err, "connect")
	}
	return d, nil
}

// boundedConnector opens the driver's connections within a connect
// timeout: the driver watches the context through the handshake (greeting,
// authentication, session variables) and lets go of it once connected.
type boundedConnector struct {
	sqldriver.Connector
	timeout time.Duration
}

func (c boundedConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	deadline, _ := cctx.Deadline()
	conn, err := c.Connector.Connect(cctx)
	if err != nil && ctx.Err() == nil && (cctx.Err() != nil || isTimeout(err) && !time.Now().Before(deadline)) {
		// Our deadline, not the caller's: say which one. (The driver may
		// report the closed socket, "invalid connection", rather than
		// the context's end.)
		return nil, &ConnectTimeoutError{After: c.timeout}
	}
	return conn, err
}

// ConnectTimeoutError is a connection that was not ready (connected,
// greeted, authenticated) within the connect timeout.
type ConnectTimeoutError struct{ After time.Duration }

func (e *ConnectTimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s (connect timeout)", e.After)
}

// Timeout reports true: it is a net.Error timeout.
func (e *ConnectTimeoutError) Timeout() bool { return true }

// Temporary reports false.
func (e *ConnectTimeoutError) Temporary() bool { return false }

// Is makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *ConnectTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// isTimeout reports whether err is a deadline's.
// ErrTimedOut is the cause of a classified error (Classify) whose
// statement or connection ran out of time.
var ErrTimedOut = errors.New("timed out")

// IsTimeout reports whether err, classified or not, is a connection or
// statement that ran out of time (not a refusal or a reset).
func IsTimeout(err error) bool {
	return errors.Is(err, ErrTimedOut) || isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Close closes the pool.
func (d *DB) Close() error { return d.db.Close() }

// SQL returns the underlying pool for callers that need it (tests, dump).
func (d *DB) SQL() *sql.DB { return d.db }

// Exec runs statements one by one, each with the query timeout. Each
// may run on another of the pool's connections: no session state (SET
// SESSION, BEGIN … COMMIT, LOCK TABLES, user variables) carries from one
// to the next unless the pool holds one connection (MaxConns 1, or
// SQL().SetMaxOpenConns(1), as backup's replaceTarget does). Every caller
// in the tree runs statements that stand alone.
func (d *DB) Exec(ctx context.Context, stmts ...string) error {
	for _, s := range stmts {
		qctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
		_, err := d.db.ExecContext(qctx, s)
		cancel()
		if err != nil {
			return d.classify(err, "exec "+firstWords(s))
		}
	}
	return nil
}

// Rows is a result set read fully into memory as strings, keyed by column.
// NULL is reported as a missing key in Map and as nil in Values.
type Rows struct {
	Columns []string
	Values  [][]*string
}

// Maps returns every row as a column→value map; NULL columns are absent.
func (r *Rows) Maps() []map[string]string {
	out := make([]map[string]string, 0, len(r.Values))
	for _, row := range r.Values {
		m := make(map[string]string, len(row))
		for i, v := range row {
			if v != nil {
				m[r.Columns[i]] = *v
			}
		}
		out = append(out, m)
	}
	return out
}

// canonicalIndex maps the canonical names of r's columns (canonicalName)
// to their positions. Should two columns fold into one name, the first in
// sorted order wins, as for canonicalRow.
func (r *Rows) canonicalIndex() map[string]int {
	index := make(map[string]int, len(r.Columns))
	for i, c := range r.Columns {
		cn := canonicalName(c)
		if j, dup := index[cn]; dup && r.Columns[j] < c {
			continue // the earlier-sorting column keeps the name
		}
		index[cn] = i
	}
	return index
}

// Index returns the position of the column named name (compared without
// case), or -1.
func (r *Rows) Index(name string) int {
	for i, c := range r.Columns {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// Str returns the value of column i of row, "" for NULL or i < 0.
func Str(row []*string, i int) string {
	if i < 0 || i >= len(row) || row[i] == nil {
		return ""
	}
	return *row[i]
}

// NameValues reads name/value rows — SHOW [GLOBAL] STATUS, SHOW VARIABLES,
// or a SELECT of VARIABLE_NAME, VARIABLE_VALUE — into a map keyed by the
// lower-cased name (the first column) with the value (the second) as the
// server printed it. Rows with a NULL name or value are left out.
func (r *Rows) NameValues() map[string]string {
	if r == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(r.Values))
	for _, row := range r.Values {
		if len(row) >= 2 && row[0] != nil && row[1] != nil {
			out[strings.ToLower(*row[0])] = *row[1]
		}
	}
	return out
}

// Query runs one statement with the query timeout and reads every row.
func (d *DB) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	qctx, cancel := WithQueryTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := d.db.QueryContext(qctx, query, args...)
	if err != nil {
		return nil, d.classify(err, "query "+firstWords(query))
	}
	defer rows.Close()
	res, err := ReadQueryRows(query, rows)
	if err != nil {
		return nil, d.classify(err, "query "+firstWords(query))
	}
	return res, nil
}

// MultiStatements reports whether the pool was opened with
// Options.MultiStatements (QueryMulti works).
func (d *DB) MultiStatements() bool { return d.opts.MultiStatements }

// QueryMulti runs stmts in one round trip and returns one result per
// statement, in order. It needs a pool opened with
// Options.MultiStatements; the statements must not carry user input. The
// server stops at the first statement that fails: the error is that one's,
// and no result is returned.
func (d *DB) QueryMulti(ctx context.Context, stmts ...string) ([]*Rows, error) {
	if !d.opts.MultiStatements {
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: several statements in one round trip to %s need a connection opened for them", d.Key)
	}
	qctx, cancel := WithQueryTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	query := strings.Join(stmts, "; ")
	rows, err := d.db.QueryContext(qctx, query)
	if err != nil {
		return nil, d.classify(err, "query "+firstWords(stmts[0]))
	}
	defer rows.Close()
	out, err := readResultSets(stmts, rows)
	if err != nil {
		return nil, d.classify(err, "query "+firstWords(stmts[min(len(out), len(stmts)-1)]))
	}
	return out, nil
}

// QueryValue runs a query expected to return one value; ok is false for no row or NULL.
func (d *DB) QueryValue(ctx context.Context, query string, args ...any) (val string, ok bool, err error) {
	r, err := d.Query(ctx, query, args...)
	if err != nil {
		return "", false, err
	}
	if len(r.Values) == 0 || len(r.Values[0]) == 0 || r.Values[0][0] == nil {
		return "", false, nil
	}
	return *r.Values[0][0], true, nil
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 4 {
		f = f[:4]
	}
	out := strings.Join(f, " ")
	// Never echo a password that a statement might carry.
	if i := strings.Index(strings.ToUpper(out), "PASSWORD"); i >= 0 {
		out = out[:i] + "..."
	}
	return out
}

// ServerError numbers dbpilot reacts to.
const (
	ErAccessDenied       = 1045
	ErDBAccessDenied     = 1044
	ErSpecificAccess     = 1227
	ErUnknownSystemVar   = 1193
	ErParseError         = 1064
	ErNoSuchTable        = 1146
	ErBadSlave           = 1200 // ER_BAD_SLAVE: replica not configured
	ErSlaveMustStop      = 1198
	ErUnknownConnection  = 1617 // MariaDB: no such master connection
	ErTooManyConnections = 1040
	ErHostBlocked        = 1129
	ErUserLimitReached   = 1226 // ER_USER_LIMIT_REACHED: max_user_connections and the like
	ErAccountLocked      = 4151 // MariaDB ER_ACCOUNT_HAS_BEEN_LOCKED (MySQL: 3118)
	ErAccountLockedMySQL = 3118
)

// ServerErrorNumber returns the server error number in err's chain, or 0.
func ServerErrorNumber(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// classify wraps err with the instance and the operation, and assigns a
// dbpilot error code. The DSN (and so the password) is never part of it.
func (d *DB) classify(err error, op string) error {
	if err != nil {
		if e := classifyTLS(err, d.Key, d.tls, op); e != nil {
			return e
		}
	}
	deniedHint := ""
	if d.tls == nil && d.opts.Socket == "" {
		// MariaDB refuses a plain-text connection under
		// require_secure_transport=ON with "access denied".
		deniedHint = "; a server that requires TLS refuses plain text this way too: --ssl-mode, --ssl-ca"
	}
	return classifyHint(err, d.Key, d.opts.User, op, deniedHint)
}

// Classify wraps a driver error with context and a dbpilot error code.
func Classify(err error, key dbpilot.InstanceKey, user, op string) error {
	return classifyHint(err, key, user, op, "")
}

// classifyHint is Classify with a hint added to "access denied".
func classifyHint(err error, key dbpilot.InstanceKey, user, op, deniedHint string) error {
	if err == nil {
		return nil
	}
	if e := classifyTLS(err, key, nil, op); e != nil {
		return e
	}
	var me *driver.MySQLError
	if errors.As(err, &me) {
		// The server answered: whatever it said, it is alive (Errno).
		var e *dbpilot.Error
		switch me.Number {
		case ErAccessDenied, ErDBAccessDenied:
			e = dbpilot.WrapError(dbpilot.EAUTH, err, "mysql: %s on %s: access denied for user %q (check the user and password%s)", op, key, user, deniedHint)
		case ErAccountLocked, ErAccountLockedMySQL:
			e = dbpilot.WrapError(dbpilot.EAUTH, err, "mysql: %s on %s: the account of user %q is locked (ALTER USER ... ACCOUNT UNLOCK)", op, key, user)
		case ErSpecificAccess, 1142, 1143: // and TABLE/COLUMN access denied
			e = dbpilot.WrapError(dbpilot.EAUTH, err, "mysql: %s on %s: user %q lacks a privilege", op, key, user)
		case ErTooManyConnections, ErUserLimitReached:
			e = dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: %s on %s: the server refuses user %q: too many connections", op, key, user)
		case ErHostBlocked:
			e = dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: %s on %s: the server blocks this host (FLUSH HOSTS on it)", op, key)
		default:
			e = dbpilot.WrapError(dbpilot.EINTERNAL, err, "mysql: %s on %s", op, key)
		}
		e.Errno = me.Number
		return e
	}
	var cte *ConnectTimeoutError
	if errors.As(err, &cte) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, cte, "mysql: %s on %s", op, key)
	}
	if isTimeout(err) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, ErrTimedOut, "mysql: %s on %s", op, key)
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, driver.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, simplifyNetErr(err), "mysql: %s on %s", op, key)
	}
	if errors.Is(err, context.Canceled) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: %s on %s", op, key)
	}
	return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: %s on %s", op, key)
}

// simplifyNetErr turns "dial tcp 127.0.0.1:1: connect: connection refused"
// into "connection refused".
func simplifyNetErr(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return errors.New(msg)
}

var silenceDriverLog sync.Once

// SilenceDriverLog stops the MySQL driver from writing its own log lines to
// stderr ("[mysql] packets.go: unexpected EOF" and the like on a broken
// connection); dbpilot reports errors itself. The driver's logger is
// process-wide, so programs call this once at start (the dbpilot command
// does) rather than every importer of this package. Calling it again does
// nothing.
func SilenceDriverLog() {
	silenceDriverLog.Do(func() { _ = driver.SetLogger(nopLogger{}) })
}

type nopLogger struct{}

func (nopLogger) Print(...any) {}
