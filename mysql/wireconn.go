package mysql

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	gmclient "github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot"
)

// WireConn is one connection that speaks the client protocol through
// go-mysql's client instead of database/sql and its driver: no pool, no
// per-statement goroutine or context watcher, prepared statements kept per
// connection, rows streamed and discarded without being converted. It is
// the load generator's connection (`dbpilot bench`), where the client's
// own cost per statement is what is measured; the rest of dbpilot uses DB.
//
// With Options.BlockingIO the socket is read with blocking system calls
// (see blockingconn_linux.go). A context's deadline bounds each wait for
// the server; a context's cancellation closes the connection, which wakes
// a statement blocked on it. Server errors are returned as the driver's
// *mysql.MySQLError (Number, SQLState, Message), as DB's are.
//
// A WireConn is used by one goroutine at a time; Close may be called from
// any.
type WireConn struct {
	key  dbpilot.InstanceKey
	nc   net.Conn
	conn *gmclient.Conn

	stmts map[string]*gmclient.Stmt
	res   gmysql.Result // reused by streamed queries
	pr    *packetReader // StreamText's reader, made at its first use

	watched  context.Context
	deadline time.Time // set on nc

	mu        sync.Mutex  // guards busy, gen, stopWatch (a context's end is seen in another goroutine)
	busy      bool        // a statement is in flight
	gen       uint64      // counts watched contexts
	stopWatch func() bool // unregisters the watch of the context
	closeOnce sync.Once
}

// maxWireStmts bounds a connection's prepared statements (the server's
// max_prepared_stmt_count is shared by every connection).
const maxWireStmts = 64

// DialWire opens one WireConn to key with opts' credentials, database,
// socket, dialer, connect timeout and BlockingIO. It does not set
// sql_mode: the session runs with the server's defaults, as sysbench's do.
func DialWire(ctx context.Context, key dbpilot.InstanceKey, opts Options) (*WireConn, error) {
	opts = opts.withDefaults()
	t := opts.TLSOf(key)
	w, err := dialWire(ctx, key, opts, t.Config(key.Host))
	if err != nil && t.Mode() == TLSPreferred && errors.Is(err, driver.ErrNoTLS) {
		// preferred: plain text when the server offers no TLS.
		w, err = dialWire(ctx, key, opts, nil)
	}
	return w, err
}

func dialWire(ctx context.Context, key dbpilot.InstanceKey, opts Options, tc *tls.Config) (*WireConn, error) {
	network, addr := "tcp", key.String()
	if opts.Socket != "" {
		network, addr = "unix", opts.Socket
	}
	dial := opts.Dial
	if opts.BlockingIO {
		dial = DialBlocking(opts.Dial)
	} else if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	var nc net.Conn
	deadline := time.Now().Add(opts.ConnectTimeout)
	conn, err := gmclient.ConnectWithDialer(dctx, network, addr, opts.User, opts.Password, opts.Database,
		func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// The handshake's reads are bounded by the connect timeout.
			if err := c.SetDeadline(deadline); err != nil {
				_ = c.Close()
				return nil, err
			}
			nc = c
			return c, nil
		}, func(c *gmclient.Conn) error {
			if tc != nil {
				c.SetTLSConfig(tc)
			}
			return nil
		})
	if err != nil {
		if ctx.Err() == nil && !time.Now().Before(deadline) {
			err = &ConnectTimeoutError{After: opts.ConnectTimeout}
		}
		if e := classifyTLS(err, key, opts.TLSOf(key), "connect"); e != nil {
			return nil, e
		}
		return nil, classifyWire(key, "connect", err)
	}
	w := &WireConn{key: key, nc: nc, conn: conn}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		w.Close()
		return nil, classifyWire(key, "connect", err)
	}
	return w, nil
}

// Close ends the connection (without COM_QUIT: the server sees the socket
// close). It is safe to call more than once and from another goroutine.
func (w *WireConn) Close() error {
	w.closeOnce.Do(func() {
		_ = w.nc.Close()
	})
	w.mu.Lock()
	if w.stopWatch != nil {
		w.stopWatch()
		w.stopWatch = nil
	}
	w.mu.Unlock()
	return nil
}

// start marks a statement in flight on ctx: ctx's cancellation closes
// the connection while it is (which wakes a blocked read), and ctx's
// deadline bounds its waits. The same context as the last statement's
// costs a mutex. A context that ends between statements (a transaction's,
// cancelled when it is done) leaves the connection alone: the next
// statement with it fails at once instead.
func (w *WireConn) start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if ctx != w.watched {
		w.watched = ctx
		w.gen++
		if w.stopWatch != nil {
			w.stopWatch()
			w.stopWatch = nil
		}
		if ctx.Done() != nil {
			gen := w.gen
			w.stopWatch = context.AfterFunc(ctx, func() {
				w.mu.Lock()
				abort := w.busy && w.gen == gen
				w.mu.Unlock()
				if abort {
					w.Close()
				}
			})
		}
	}
	w.busy = true
	w.mu.Unlock()
	dl, _ := ctx.Deadline()
	if !dl.Equal(w.deadline) {
		if err := w.nc.SetDeadline(dl); err != nil {
			return err
		}
		w.deadline = dl
	}
	return nil
}

// done marks the statement finished.
func (w *WireConn) done() {
	w.mu.Lock()
	w.busy = false
	w.mu.Unlock()
}

// stmt returns q prepared on the connection.
func (w *WireConn) stmt(q string) (*gmclient.Stmt, error) {
	if st := w.stmts[q]; st != nil {
		return st, nil
	}
	if len(w.stmts) >= maxWireStmts {
		for k, st := range w.stmts {
			_ = st.Close()
			delete(w.stmts, k)
		}
	}
	st, err := w.conn.Prepare(q)
	if err != nil {
		return nil, err
	}
	if w.stmts == nil {
		w.stmts = map[string]*gmclient.Stmt{}
	}
	w.stmts[q] = st
	return st, nil
}

// Exec runs a statement that returns no rows and returns the number of
// rows it affected. With args the statement is prepared on the server once
// per connection and executed in the binary protocol (sysbench's
// --db-ps-mode=auto); without, it is sent as text.
func (w *WireConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	defer w.done()
	if err := w.start(ctx); err != nil {
		return 0, w.fail(ctx, q, err)
	}
	var (
		res *gmysql.Result
		err error
	)
	if len(args) == 0 {
		res, err = w.conn.Execute(q)
	} else {
		var st *gmclient.Stmt
		if st, err = w.stmt(q); err == nil {
			res, err = st.Execute(args...)
		}
	}
	if err != nil {
		return 0, w.fail(ctx, q, err)
	}
	n := int64(res.AffectedRows)
	res.Close()
	return n, nil
}

// Query runs a statement and reads its rows as they arrive. scan, when not
// nil, is called with each row's values (int64, uint64, float64, []byte
// valid during the call only, or nil for NULL); otherwise rows are read
// and discarded, as sysbench does. Args are handled as Exec's.
func (w *WireConn) Query(ctx context.Context, q string, scan func(values []any) error, args ...any) error {
	defer w.done()
	if err := w.start(ctx); err != nil {
		return w.fail(ctx, q, err)
	}
	each := discardRow
	if scan != nil {
		var vals []any
		each = func(row []gmysql.FieldValue) error {
			vals = vals[:0]
			for i := range row {
				vals = append(vals, row[i].Value())
			}
			return scan(vals)
		}
	}
	var err error
	if len(args) == 0 {
		err = w.conn.ExecuteSelectStreaming(q, &w.res, each, nil)
	} else {
		var st *gmclient.Stmt
		if st, err = w.stmt(q); err == nil {
			err = st.ExecuteSelectStreaming(&w.res, each, nil, args...)
		}
	}
	if err != nil {
		return w.fail(ctx, q, err)
	}
	return nil
}

func discardRow([]gmysql.FieldValue) error { return nil }

// fail turns err into the error a caller classifies: the context's when it
// ended (the connection was closed for it), the driver's *MySQLError for a
// server error, the network error otherwise.
func (w *WireConn) fail(ctx context.Context, q string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("mysql: %s on %s: %w", firstWords(q), w.key, cerr)
	}
	// The socket's deadline is the context's: the read may fail before
	// the context's own timer has ended it. go-mysql turns network errors
	// into text, so the deadline is told by the clock.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("mysql: %s on %s: %w", firstWords(q), w.key, context.DeadlineExceeded)
	}
	return classifyWire(w.key, firstWords(q), err)
}

// classifyWire converts go-mysql's errors: a server error becomes the
// driver's *MySQLError and a broken connection the driver's
// ErrInvalidConn, so that callers need one vocabulary.
func classifyWire(key dbpilot.InstanceKey, what string, err error) error {
	var me *gmysql.MyError
	if errors.As(err, &me) {
		var state [5]byte
		copy(state[:], me.State)
		return fmt.Errorf("mysql: %s on %s: %w", what, key, &driver.MySQLError{Number: me.Code, SQLState: state, Message: me.Message})
	}
	if errors.Is(err, gmysql.ErrBadConn) {
		// The connection broke (network error, or closed): go-mysql keeps
		// only the text of the cause; callers test for the driver's
		// ErrInvalidConn.
		return fmt.Errorf("mysql: %s on %s: %v: %w", what, key, err, driver.ErrInvalidConn)
	}
	return fmt.Errorf("mysql: %s on %s: %w", what, key, err)
}
