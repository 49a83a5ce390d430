package collector

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/stall"
	"github.com/dbpilot/dbpilot/mysql"
)

// runnerConn is one connection to the instance (a *sql.Conn in production,
// a fake in tests).
type runnerConn interface {
	Querier
	// Close closes the connection for good (it is not returned to a pool:
	// sessions are closed only when broken, timed out or no longer wanted).
	Close() error
}

// runnerDialer opens connections to an instance.
type runnerDialer interface {
	// dial opens a new connection.
	dial(ctx context.Context) (runnerConn, error)
	// reset forgets pooled state after a failure, so that the next dial
	// connects from scratch.
	reset()
	// retarget points later dials at another address.
	retarget(key dbpilot.InstanceKey)
}

// runnerIdent is what a Runner learns of the server when it connects.
type runnerIdent struct {
	Flavor  dbpilot.Flavor
	Version dbpilot.Version
}

// runnerPool hands out a bounded number of sessions, opening them lazily
// and backing off while the instance is unreachable.
type runnerPool struct {
	dialer runnerDialer
	tokens chan struct{} // one per session in use
	// dialBudget bounds one connection attempt (connect and session set-up)
	// apart from the wait for a connection slot.
	dialBudget time.Duration
	// life ends the attempt in flight when the pool closes.
	life   context.Context
	finish context.CancelFunc
	// onReconnect runs after a successful connection that follows a
	// failure, onDown when a connection attempt fails after a success (or
	// first thing). Both run under the pool's lock and must not block.
	onReconnect func()
	onDown      func(err error)
	now         func() time.Time

	mu      sync.Mutex
	idle    []*runnerSession
	ident   *runnerIdent // nil until the first connection, and after reset
	backoff time.Duration
	retryAt time.Time
	downErr error // the last connection failure; nil while connected
	dials   int   // connection attempts, for tests
	// dialing is closed when the connection attempt in flight ends (nil:
	// none): runs wait for it up to their own deadline, not the attempt's.
	dialing chan struct{}
	closed  bool
	gen     int // bumped by retarget: older sessions are not reused
}

func newRunnerPool(d runnerDialer, sessions int, dialBudget time.Duration) *runnerPool {
	life, finish := context.WithCancel(context.Background())
	return &runnerPool{
		dialer:     d,
		tokens:     make(chan struct{}, sessions),
		dialBudget: dialBudget,
		life:       life,
		finish:     finish,
		now:        time.Now,
	}
}

// ErrBacklog marks a run that could not start for serve's own reasons: it
// waited for a session another run of the instance held, or for one of
// the process' connection slots, past its timeout. The server was not
// asked, so it is not reported down (no mysql_up 0): the run counts as
// lagging (dbpilot_collection_lagging, Backlog).
var ErrBacklog = errors.New("serve's collection is behind")

// backlog counts the runs waiting now for a session or a connection slot.
var backlog atomic.Int64

// Backlog returns how many collector runs of the process wait now for a
// session of their instance or a connection slot: collection that is
// behind because serve is, not because a server is.
func Backlog() int64 { return backlog.Load() }

// lagged counts the runs that gave up waiting (ErrBacklog).
var lagged atomic.Uint64

// Lagged returns how many collector runs of the process could not start
// within their timeout for serve's own reasons (ErrBacklog), since start.
func Lagged() uint64 { return lagged.Load() }

// backlogError is the error of a run that waited past its deadline for
// what (a session, a connection slot).
// At 1000 instances on a saturated serve thousands of runs a second can
// lag: the errors of the common cases are made once, not per run.
func backlogError(ctx context.Context, what string) error {
	lagged.Add(1)
	cause := ctx.Err()
	if cause == context.DeadlineExceeded {
		switch what {
		case waitSession:
			return errWaitSession
		case waitDial:
			return errWaitDial
		}
	}
	return newBacklogError(what, cause)
}

func newBacklogError(what string, cause error) error {
	return dbpilot.WrapError(dbpilot.EUNAVAIL, fmt.Errorf("%w: %w", ErrBacklog, cause), "collector: wait for %s", what)
}

const (
	waitSession = "a session of the instance"
	waitDial    = "the instance's connection attempt in progress"
)

var (
	errWaitSession = newBacklogError(waitSession, context.DeadlineExceeded)
	errWaitDial    = newBacklogError(waitDial, context.DeadlineExceeded)
)

// errRunnerClosed is returned once the Runner is stopped.
var errRunnerClosed = dbpilot.Errorf(dbpilot.EUNAVAIL, "collector: runner stopped")

// acquire returns a session: an idle one, or a new connection unless the
// instance is down and its retry time has not come.
func (p *runnerPool) acquire(ctx context.Context, timeout time.Duration) (*runnerSession, error) {
	select {
	case p.tokens <- struct{}{}:
	default:
		backlog.Add(1)
		select {
		case p.tokens <- struct{}{}:
			backlog.Add(-1)
		case <-ctx.Done():
			backlog.Add(-1)
			return nil, backlogError(ctx, waitSession)
		}
	}
	s, err := p.get(ctx, timeout)
	if err != nil {
		<-p.tokens
	}
	return s, err
}

// get returns an idle session, or one a connection attempt opens. The
// attempt runs on its own budget (dialBudget: the connect timeout and the
// session's set-up), not on the run's: a run whose deadline comes first
// while it waits is lagging (ErrBacklog), since the server has not yet had
// its connect timeout to answer, and the attempt goes on for the next run.
// Only the attempt's own failure (refused, no answer within the connect
// timeout, access denied) marks the instance down.
func (p *runnerPool) get(ctx context.Context, timeout time.Duration) (*runnerSession, error) {
	for {
		if s, err := p.popIdle(timeout); s != nil || err != nil {
			return s, err
		}
		p.mu.Lock()
		if now := p.now(); p.downErr != nil && now.Before(p.retryAt) {
			err := dbpilot.WrapError(dbpilot.EUNAVAIL, p.downErr, "collector: instance down, next connection attempt in %v", p.retryAt.Sub(now).Round(time.Millisecond))
			p.mu.Unlock()
			return nil, err
		}
		if p.dialing == nil {
			p.dialing = make(chan struct{})
			p.dials++
			go p.dial(p.dialing, p.ident, p.gen)
		}
		dialing := p.dialing
		p.mu.Unlock()
		select {
		case <-dialing:
			// An idle session, a failure, or another run took the
			// session: look again.
		case <-ctx.Done():
			return nil, backlogError(ctx, waitDial)
		}
	}
}

// dial makes one connection attempt and leaves its session idle, or
// records its failure; it closes done when it ends.
func (p *runnerPool) dial(done chan struct{}, ident *runnerIdent, gen int) {
	dialed := time.Now()
	s, err := p.connect(p.life, ident)
	if err != nil && !errors.Is(err, ErrBacklog) && mysql.IsTimeout(err) && stall.Stalled(dialed, p.dialBudget) {
		// The attempt timed out while serve could not run: no proof the
		// server is down, and no backoff.
		err = dbpilot.WrapError(dbpilot.EUNAVAIL, fmt.Errorf("%w: %w", ErrBacklog, err), "collector: serve was stalled while connecting")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(done)
	p.dialing = nil
	switch {
	case errors.Is(err, ErrBacklog):
		// serve's own wait: the server was not asked; the next run tries again.
	case err != nil:
		// Refused, timed out, or refused us (access denied): back off.
		p.failLocked(err)
	case p.closed || gen != p.gen:
		s.conn.Close() // stopped, or retargeted meanwhile
	default:
		s.gen = gen
		p.ident = &s.ident
		wasDown := p.downErr != nil
		p.downErr, p.backoff = nil, 0
		if wasDown && p.onReconnect != nil {
			p.onReconnect() // must not block
		}
		p.idle = append(p.idle, s)
	}
}

// popIdle returns an idle session, or an error once the pool is closed.
// popIdle takes an idle session, preferably one whose statement timeout
// is already timeout: the every-second collectors then keep one session
// and the slower ones (other timeouts) the other, instead of a SET before
// most statements.
func (p *runnerPool) popIdle(timeout time.Duration) (*runnerSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errRunnerClosed
	}
	n := len(p.idle)
	if n == 0 {
		return nil, nil
	}
	i := n - 1
	for j := n - 1; j >= 0; j-- {
		if p.idle[j].statementTimeout() == timeout {
			i = j
			break
		}
	}
	s := p.idle[i]
	p.idle = append(p.idle[:i], p.idle[i+1:]...)
	return s, nil
}

// connect dials and prepares a session. The dialer bounds the connection
// (the connect timeout, after its wait for a connection slot); the
// session's set-up has the rest of dialBudget.
func (p *runnerPool) connect(ctx context.Context, ident *runnerIdent) (*runnerSession, error) {
	c, err := p.dialer.dial(ctx)
	if err != nil {
		return nil, err
	}
	s := &runnerSession{conn: c}
	ictx, cancel := context.WithTimeout(ctx, p.dialBudget)
	defer cancel()
	if err := s.init(ictx, ident); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// failLocked records a connection failure and schedules the next attempt.
func (p *runnerPool) failLocked(err error) {
	switch {
	case p.backoff == 0:
		p.backoff = RunnerBackoffMin
	default:
		p.backoff = min(2*p.backoff, RunnerBackoffMax)
	}
	p.retryAt = p.now().Add(p.backoff)
	if p.downErr == nil && p.onDown != nil {
		p.onDown(err)
	}
	p.downErr = err
	p.dropIdleLocked()
	p.dialer.reset()
	p.ident = nil
}

func (p *runnerPool) dropIdleLocked() {
	for _, s := range p.idle {
		s.conn.Close()
	}
	p.idle = nil
}

// release returns a session after a run. failed is the connection-level
// error the run saw on it, if any: such a session is closed; unless the run
// merely timed out, the connection is presumed broken and the idle sessions
// go too.
func (p *runnerPool) release(s *runnerSession, failed error, timedOut bool) {
	defer func() { <-p.tokens }()
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed != nil || p.closed || s.gen != p.gen {
		s.conn.Close()
		if failed != nil && !timedOut {
			p.dropIdleLocked()
		}
		return
	}
	p.idle = append(p.idle, s)
}

// retarget drops every connection; later ones go to key.
func (p *runnerPool) retarget(key dbpilot.InstanceKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropIdleLocked()
	p.dialer.retarget(key)
	p.gen++
	p.ident = nil
	p.downErr, p.backoff, p.retryAt = nil, 0, time.Time{}
}

func (p *runnerPool) close() {
	p.finish()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.dropIdleLocked()
	p.dialer.reset()
}

// dialCount returns the connection attempts so far.
func (p *runnerPool) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

// runnerSession is one prepared connection. It implements Querier and
// remembers the first connection-level error a query on it hit.
type runnerSession struct {
	conn  runnerConn
	ident runnerIdent
	gen   int

	mu      sync.Mutex
	fail    error
	stmtMax time.Duration // the server-side limit now set; 0 none
	noLimit bool          // the server has no statement time limit
	// MariaDB 10.1.2+: the limit goes with each query
	// (SET STATEMENT max_statement_time=... FOR), not in a SET of its own
	// whenever a run's timeout differs from the last one's (two sessions
	// shared by collectors of 1, 5, 10 and 60 s intervals: most of a
	// server's SETs). prefix is it for stmtMax; prefixed caches queries
	// with it (a session runs a few dozen distinct ones).
	prefix   string
	prefixed map[string]string
}

// statementPrefix reports whether the server takes SET STATEMENT ... FOR
// (MariaDB 10.1.2 and later).
func (s *runnerSession) statementPrefix() bool {
	return s.ident.Flavor == dbpilot.FlavorMariaDB && s.ident.Version.AtLeast(10, 1, 2)
}

// withLimit returns q with the statement limit's prefix, if any.
func (s *runnerSession) withLimit(q string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefix == "" {
		return q
	}
	if p, ok := s.prefixed[q]; ok {
		return p
	}
	p := s.prefix + q
	if len(s.prefixed) < 256 {
		s.prefixed[q] = p
	}
	return p
}

// Session settings: a collector never waits long for a lock.
var runnerSessionSQL = []string{
	"SET SESSION lock_wait_timeout = 1",
	"SET SESSION innodb_lock_wait_timeout = 1",
}

const runnerVersionSQL = "SELECT @@global.version, @@global.version_comment"

// init identifies the server (unless known) and applies the session
// settings; settings the server does not know are skipped.
func (s *runnerSession) init(ctx context.Context, known *runnerIdent) error {
	if known != nil {
		s.ident = *known
	} else {
		r, err := s.conn.Query(ctx, runnerVersionSQL)
		if err != nil {
			return err
		}
		if len(r.Values) == 1 && len(r.Values[0]) == 2 && r.Values[0][0] != nil {
			comment := ""
			if r.Values[0][1] != nil {
				comment = *r.Values[0][1]
			}
			raw := *r.Values[0][0]
			s.ident.Flavor = mysql.DetectFlavor(raw, comment)
			v := raw
			if s.ident.Flavor == dbpilot.FlavorMariaDB {
				v = strings.TrimPrefix(v, "5.5.5-")
			}
			s.ident.Version, _ = dbpilot.ParseVersion(v)
		}
	}
	for _, q := range runnerSessionSQL {
		if err := s.conn.Exec(ctx, q); err != nil && mysql.ServerErrorNumber(err) == 0 {
			return err
		}
	}
	return nil
}

// statementTimeout is the server's statement limit set on the session.
func (s *runnerSession) statementTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stmtMax
}

// setStatementTimeout makes the server stop statements of this session
// after d, so that a query the runner gave up on does not run on.
func (s *runnerSession) setStatementTimeout(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	skip := s.noLimit || s.stmtMax == d
	if !skip && s.statementPrefix() {
		s.stmtMax = d
		s.prefix = fmt.Sprintf("SET STATEMENT max_statement_time=%.3f FOR ", d.Seconds())
		s.prefixed = make(map[string]string, 16)
		skip = true
	}
	s.mu.Unlock()
	if skip {
		return nil
	}
	var q string
	if s.ident.Flavor == dbpilot.FlavorMariaDB {
		q = fmt.Sprintf("SET SESSION max_statement_time = %.3f", d.Seconds())
	} else {
		q = fmt.Sprintf("SET SESSION max_execution_time = %d", d.Milliseconds())
	}
	err := s.Exec(ctx, q)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.stmtMax = d
	case mysql.ServerErrorNumber(err) != 0:
		s.noLimit = true // unknown variable (old server): go without
		return nil
	}
	return err
}

// Query runs a query, recording connection-level failures; on MariaDB
// with the run's statement limit (SET STATEMENT ... FOR). Statements run
// with Exec (the heartbeat's writes, the watchdog's kills) have none
// there, only the run's timeout.
func (s *runnerSession) Query(ctx context.Context, query string, args ...any) (*mysql.Rows, error) {
	r, err := s.conn.Query(ctx, s.withLimit(query), args...)
	s.note(err)
	return r, err
}

// Exec runs statements, recording connection-level failures.
func (s *runnerSession) Exec(ctx context.Context, stmts ...string) error {
	err := s.conn.Exec(ctx, stmts...)
	s.note(err)
	return err
}

func (s *runnerSession) note(err error) {
	if err == nil || mysql.ServerErrorNumber(err) != 0 {
		return
	}
	s.mu.Lock()
	if s.fail == nil {
		s.fail = err
	}
	s.mu.Unlock()
}

func (s *runnerSession) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

// runnerMySQLDialer connects through package mysql: one *mysql.DB (a pool
// of at most two connections) from which sessions take dedicated
// connections.
type runnerMySQLDialer struct {
	mu   sync.Mutex
	key  dbpilot.InstanceKey
	opts mysql.Options
	db   *mysql.DB
}

// runnerDials bounds the connections every runner of the process opens at
// once. A serve starting on a fleet (or a network coming back) would
// otherwise open thousands together; their handshakes then took longer than
// the connect timeout, each failure was retried, and the storm never ended
// (1000 simulated instances on 2 cores). Runs wait for a slot within their
// own timeout. 64 leaves room for dials to black-holed hosts, each holding
// a slot for up to the connect timeout, beside the reconnections of live
// instances.
var runnerDials = make(chan struct{}, 64)

func (d *runnerMySQLDialer) dial(ctx context.Context) (runnerConn, error) {
	select {
	case runnerDials <- struct{}{}:
		defer func() { <-runnerDials }()
	default:
		backlog.Add(1)
		select {
		case runnerDials <- struct{}{}:
			backlog.Add(-1)
			defer func() { <-runnerDials }()
		case <-ctx.Done():
			backlog.Add(-1)
			d.mu.Lock()
			key := d.key
			d.mu.Unlock()
			return nil, backlogError(ctx, "a connection slot to "+key.String())
		}
	}
	d.mu.Lock()
	db, key, opts := d.db, d.key, d.opts
	d.mu.Unlock()
	if db == nil {
		var err error
		if db, err = mysql.Open(ctx, key, opts); err != nil {
			return nil, err
		}
		d.mu.Lock()
		if d.db != nil {
			db.Close()
			db = d.db
		} else {
			d.db = db
		}
		d.mu.Unlock()
	}
	c, err := db.SQL().Conn(ctx)
	if err != nil {
		return nil, mysql.Classify(err, key, opts.User, "connect")
	}
	qt := opts.QueryTimeout
	if qt <= 0 {
		qt = mysql.DefaultQueryTimeout
	}
	return &runnerSQLConn{c: c, key: key, user: opts.User, timeout: qt}, nil
}

func (d *runnerMySQLDialer) reset() {
	d.mu.Lock()
	db := d.db
	d.db = nil
	d.mu.Unlock()
	if db != nil {
		db.Close()
	}
}

func (d *runnerMySQLDialer) retarget(key dbpilot.InstanceKey) {
	d.reset()
	d.mu.Lock()
	d.key = key
	d.mu.Unlock()
}

// runnerSQLConn is a dedicated connection; it serializes its queries (the
// protocol allows one at a time) and reads results fully, as mysql.DB does.
type runnerSQLConn struct {
	mu      sync.Mutex
	c       *sql.Conn
	key     dbpilot.InstanceKey
	user    string
	timeout time.Duration
}

func (c *runnerSQLConn) Query(ctx context.Context, query string, args ...any) (*mysql.Rows, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	qctx, cancel := mysql.WithQueryTimeout(ctx, c.timeout)
	defer cancel()
	rows, err := c.c.QueryContext(qctx, query, args...)
	if err != nil {
		return nil, mysql.Classify(err, c.key, c.user, "query "+runnerFirstWords(query))
	}
	defer rows.Close()
	res, err := mysql.ReadQueryRows(query, rows)
	if err != nil {
		return nil, mysql.Classify(err, c.key, c.user, "query "+runnerFirstWords(query))
	}
	return res, nil
}

func (c *runnerSQLConn) Exec(ctx context.Context, stmts ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range stmts {
		qctx, cancel := mysql.WithQueryTimeout(ctx, c.timeout)
		_, err := c.c.ExecContext(qctx, q)
		cancel()
		if err != nil {
			return mysql.Classify(err, c.key, c.user, "exec "+runnerFirstWords(q))
		}
	}
	return nil
}

// Close discards the connection: marking it bad keeps database/sql from
// handing it out again.
func (c *runnerSQLConn) Close() error {
	_ = c.c.Raw(func(any) error { return driver.ErrBadConn })
	return c.c.Close()
}

// runnerFirstWords names a statement in errors by its first words.
func runnerFirstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// runnerDialBudget is what one connection attempt may take besides its wait
// for a connection slot: the connect timeout and the session's set-up.
func runnerDialBudget(opts mysql.Options) time.Duration {
	ct := opts.ConnectTimeout
	if ct <= 0 {
		ct = mysql.DefaultConnectTimeout
	}
	return 2 * ct
}
