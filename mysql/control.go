package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

// Server errors the controller tolerates.
const (
	erNoSuchThread        = 1094 // KILL of a connection that already ended
	erSlaveConfiguration  = 1794 // MySQL: replica not configured or failed to initialize
	erSlaveChannelMissing = 3074 // MySQL: no such channel
)

// Controller implements dbpilot.ReplicationController over SQL: replication control,
// read-only, GTID waits, connection kills and semi-sync, for MariaDB and
// MySQL (flavor and version detected on first use of each server and
// remembered).
//
// It keeps one connection pool per instance, opened on first use and
// reopened after a connection failure; calls for one instance run one at a
// time (WaitForGTID excepted: it uses a connection of its own, so that a
// long wait neither blocks nor is cut by the statement timeout). It is safe
// for concurrent use on different instances.
//
// Errors read "mysql: <operation> on <host:port>: ..." and carry a dbpilot
// error code (Classify); they never contain a password.
type Controller struct {
	admin   Options
	repl    Credentials
	replTLS *TLSSettings // replicas' TLS to their sources (nil: SSL options untouched)
	in      *Inspector

	mu     sync.Mutex
	closed bool
	conns  map[dbpilot.InstanceKey]*ctlConn // by normalized key
}

// ctlConn is the state kept for one instance. sem holds a token while an
// operation on the instance runs; db and id belong to the token holder.
type ctlConn struct {
	sem chan struct{}
	db  *DB
	id  *serverIdent
}

var (
	_ dbpilot.ReplicationController = (*Controller)(nil)
	_ dbpilot.ReplicaPositioner     = (*Controller)(nil)
)

var errControllerClosed = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: controller closed")

// NewController returns a Controller that connects with admin and points
// replicas at their sources with the replication credentials repl.
func NewController(admin Options, repl Credentials) *Controller {
	admin = admin.withDefaults()
	return &Controller{admin: admin, repl: repl, in: NewInspector(admin), conns: make(map[dbpilot.InstanceKey]*ctlConn)}
}

// WithReplicationTLS sets the TLS that ChangeSource gives replicas
// (MASTER_SSL options, paths on the replicas' hosts; nil leaves a
// channel's SSL options as they are) and returns c. Call it before use.
func (c *Controller) WithReplicationTLS(t *TLSSettings) *Controller {
	c.replTLS = t
	return c
}

// Close closes every connection, waiting for operations in flight. Every
// method fails after Close.
func (c *Controller) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = map[dbpilot.InstanceKey]*ctlConn{}
	c.mu.Unlock()
	var errs []error
	for _, cc := range conns {
		cc.sem <- struct{}{}
		if cc.db != nil {
			if err := cc.db.Close(); err != nil {
				errs = append(errs, err)
			}
			cc.db, cc.id = nil, nil
		}
		<-cc.sem
	}
	if err := c.in.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Inspect reads the full state of the server at key (see Inspector.Inspect).
func (c *Controller) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	return c.in.Inspect(ctx, key)
}

// StopReplica stops every replication channel of key: MariaDB STOP ALL
// SLAVES, MySQL STOP REPLICA (STOP SLAVE before 8.0.22). A server with no
// replication configured is not an error.
func (c *Controller) StopReplica(ctx context.Context, key dbpilot.InstanceKey) error {
	return c.do(ctx, key, "stop replica", func(s *ctl) error { return s.stopReplica(ctx) })
}

// StopReceivers stops the IO (receiver) thread of every replication channel
// of key, leaving the appliers running: MariaDB STOP ALL SLAVES IO_THREAD,
// MySQL STOP REPLICA IO_THREAD. A server with no replication configured is
// not an error.
//
// On MariaDB a semi-sync replica's IO thread, when it stops, connects to its
// source to kill its binlog dump thread and waits up to
// rpl_semi_sync_slave_kill_conn_timeout (5 s by default) for the greeting:
// with a hung source every STOP SLAVE took seconds. That timeout is lowered
// to 1 s for the stop (the source is being failed over) and set back after.
func (c *Controller) StopReceivers(ctx context.Context, key dbpilot.InstanceKey) error {
	return c.do(ctx, key, "stop receivers", func(s *ctl) error {
		const op = "stop receivers"
		orig, lowered := 0, false
		if s.d.MariaDB() {
			r, err := s.query(ctx, op, killConnTimeoutSQL)
			if err != nil {
				return err
			}
			// 0 means no timeout at all: lowered too.
			if v, err := strconv.Atoi(r.NameValues()[killConnTimeoutVar]); err == nil && v != 1 {
				if err := s.exec(ctx, op, "SET GLOBAL "+killConnTimeoutVar+" = 1"); err != nil {
					return err
				}
				orig, lowered = v, true
			}
		}
		err := s.x.Exec(ctx, s.d.flavor().stopReceivers())
		if lowered {
			if rerr := s.exec(ctx, op, fmt.Sprintf("SET GLOBAL %s = %d", killConnTimeoutVar, orig)); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil && !notConfigured(err) {
			return s.fail(op, err)
		}
		return nil
	})
}

const (
	killConnTimeoutVar = "rpl_semi_sync_slave_kill_conn_timeout"
	killConnTimeoutSQL = "SHOW GLOBAL VARIABLES LIKE '" + killConnTimeoutVar + "'"
)

var _ dbpilot.ReceiverStopper = (*Controller)(nil)

// StartReplica starts every replication channel of key: MariaDB START ALL
// SLAVES, MySQL START REPLICA. A server with no replication configured is
// not an error.
func (c *Controller) StartReplica(ctx context.Context, key dbpilot.InstanceKey) error {
	return c.do(ctx, key, "start replica", func(s *ctl) error { return s.startReplica(ctx) })
}

// ResetReplicaAll stops and removes every replication channel of key:
// MariaDB RESET SLAVE 'name' ALL for each connection SHOW ALL SLAVES STATUS
// lists, MySQL RESET REPLICA ALL. gtid_slave_pos (MariaDB) and gtid_executed
// (MySQL) are kept.
func (c *Controller) ResetReplicaAll(ctx context.Context, key dbpilot.InstanceKey) error {
	return c.do(ctx, key, "reset replica", func(s *ctl) error { return s.resetReplicaAll(ctx) })
}

// ChangeSource points a channel of key at source with GTID positioning, the
// controller's replication credentials, a 1 s heartbeat and a 1 s connect
// retry, stopping the channel first if it runs. On MariaDB it also sets
// IGNORE_DOMAIN_IDS to opt.IgnoreDomains, explicitly to () when there are
// none, since the setting persists across CHANGE MASTER; a non-empty list
// clears DO_DOMAIN_IDS, which cannot be set at the same time. On MySQL,
// IgnoreDomains is refused (EUNSUPPORTED). Replication is not started.
func (c *Controller) ChangeSource(ctx context.Context, key, source dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error {
	return c.do(ctx, key, "change source", func(s *ctl) error { return s.changeSource(ctx, source, c.repl, c.replTLS, opt) })
}

// SetReadOnly sets read_only. MySQL 5.7.8+: turning on sets super_read_only
// (which implies read_only); turning off clears super_read_only then
// read_only.
func (c *Controller) SetReadOnly(ctx context.Context, key dbpilot.InstanceKey, readOnly bool) error {
	op := "set read_only=OFF"
	if readOnly {
		op = "set read_only=ON"
	}
	return c.do(ctx, key, op, func(s *ctl) error { return s.exec(ctx, op, readOnlySQL(s.id, readOnly)...) })
}

// SetSemiSync enables or disables the semi-sync primary and replica sides:
// rpl_semi_sync_master_enabled / rpl_semi_sync_slave_enabled, or on MySQL
// the source/replica (8.0.26+ plugins) or master/slave variables. A side
// whose plugin is not loaded is skipped silently; a variable already at the
// wanted value is left alone. On MariaDB a change of the replica side
// applies when the IO thread next connects.
func (c *Controller) SetSemiSync(ctx context.Context, key dbpilot.InstanceKey, primary, replica bool) error {
	return c.do(ctx, key, "set semi-sync", func(s *ctl) error { return s.setSemiSync(ctx, primary, replica) })
}

// SetReplicaPosition sets MariaDB's gtid_slave_pos: the position key asks
// its sources for when it replicates with MASTER_USE_GTID=slave_pos. Every
// channel must be stopped. MySQL has no such position (EUNSUPPORTED).
func (c *Controller) SetReplicaPosition(ctx context.Context, key dbpilot.InstanceKey, pos string) error {
	return c.do(ctx, key, "set gtid_slave_pos", func(s *ctl) error { return s.setReplicaPosition(ctx, pos) })
}

// WaitForGTID waits until key has applied every transaction of pos, at most
// timeout: MariaDB SELECT MASTER_GTID_WAIT(pos, timeout), which waits on
// gtid_slave_pos, that is for transactions applied by replication (not for
// local writes); MySQL SELECT WAIT_FOR_EXECUTED_GTID_SET(pos, timeout). The
// statement runs on a connection of its own whose statement timeout is
// timeout plus the admin query timeout. An empty pos is reached at once.
// When the position is not reached in time the error has code EUNAVAIL and
// names the target position and the one reached.
func (c *Controller) WaitForGTID(ctx context.Context, key dbpilot.InstanceKey, pos string, timeout time.Duration) error {
	const op = "wait for GTID"
	if timeout <= 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "mysql: %s on %s: timeout %s must be positive", op, key, timeout)
	}
	if strings.TrimSpace(pos) == "" {
		return nil
	}
	var id serverIdent
	if err := c.do(ctx, key, op, func(s *ctl) error { id = s.id; return nil }); err != nil {
		return err
	}
	opts := c.admin
	opts.QueryTimeout = timeout + c.admin.QueryTimeout
	db, err := Open(ctx, key, opts)
	if err != nil {
		return wrapOp(err, key, c.admin.User, op, "")
	}
	defer db.Close()
	s := &ctl{x: db, key: key, user: c.admin.User, id: id, d: id.dialect()}
	return s.waitForGTID(ctx, pos, timeout)
}

// KillClientConnections ends every client connection of key except the
// connection it works through and the server's own threads (replication
// dump, IO, SQL and worker threads, the event scheduler, anything run by
// "system user"). Connections of the admin user, this process's other
// pooled connections included, are killed too. It returns how many it
// killed; connections that ended meanwhile are not counted.
func (c *Controller) KillClientConnections(ctx context.Context, key dbpilot.InstanceKey) (int, error) {
	var n int
	err := c.do(ctx, key, "kill client connections", func(s *ctl) error {
		var err error
		n, err = s.killClients(ctx)
		return err
	})
	return n, err
}

// do runs f on key's session, opening the connection and detecting the
// server if needed. A connection failure closes the pool; when the pool was
// reused (the server may have restarted) f runs once more on a fresh one.
func (c *Controller) do(ctx context.Context, key dbpilot.InstanceKey, op string, f func(*ctl) error) error {
	cc, err := c.acquire(ctx, key)
	if err != nil {
		return wrapOp(err, key, c.admin.User, op, "")
	}
	defer func() { <-cc.sem }()
	for attempt := 0; ; attempt++ {
		reused := cc.db != nil
		err := c.open(ctx, cc, key)
		if err == nil {
			s := &ctl{x: cc.db, key: key, user: c.admin.User, id: *cc.id, d: cc.id.dialect()}
			err = f(s)
		}
		if err == nil {
			return nil
		}
		if dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL && ctx.Err() == nil {
			if cc.db != nil {
				cc.db.Close()
			}
			cc.db, cc.id = nil, nil
			if reused && attempt == 0 {
				continue
			}
		}
		return wrapOp(err, key, c.admin.User, op, "")
	}
}

// open makes sure cc has a pool and knows the server's identity.
func (c *Controller) open(ctx context.Context, cc *ctlConn, key dbpilot.InstanceKey) error {
	if cc.db == nil {
		db, err := Open(ctx, key, c.admin)
		if err != nil {
			return err
		}
		cc.db, cc.id = db, nil
	}
	if cc.id == nil {
		s := session{q: cc.db, key: key, user: c.admin.User}
		id, err := s.detect(ctx)
		if err != nil {
			return err
		}
		cc.id = &id
	}
	return nil
}

// acquire returns key's state holding its token.
func (c *Controller) acquire(ctx context.Context, key dbpilot.InstanceKey) (*ctlConn, error) {
	nk := key.Normalized()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errControllerClosed
	}
	cc := c.conns[nk]
	if cc == nil {
		cc = &ctlConn{sem: make(chan struct{}, 1)}
		c.conns[nk] = cc
	}
	c.mu.Unlock()
	select {
	case cc.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, Classify(ctx.Err(), key, c.admin.User, "wait for connection")
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		<-cc.sem
		return nil, errControllerClosed
	}
	return cc, nil
}

// wrapOp rewrites err as "mysql: op on key: cause", keeping its code;
// secret, when set, is removed from the message.
func wrapOp(err error, key dbpilot.InstanceKey, user, op, secret string) error {
	if err == nil {
		return nil
	}
	var e *dbpilot.Error
	if !errors.As(err, &e) {
		return Classify(redactError(err, secret), key, user, op)
	}
	if strings.HasPrefix(e.Message, "mysql: "+op+" on ") {
		return err // already in shape
	}
	if e.Err == nil {
		// One of our own messages ("mysql: controller closed").
		msg := strings.TrimPrefix(e.Message, "mysql: ")
		return dbpilot.Errorf(e.Code, "mysql: %s on %s: %s", op, key, redactSecret(msg, secret))
	}
	w := Classify(redactError(e.Err, secret), key, user, op)
	var we *dbpilot.Error
	if errors.As(w, &we) {
		we.Code = e.Code // the code given closer to the failure
	}
	return w
}

func redactSecret(s, secret string) string {
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return redactPasswords(s)
}

// redactError returns err with secret and password literals removed from its
// message, keeping a server error's number.
func redactError(err error, secret string) error {
	msg := err.Error()
	clean := redactSecret(msg, secret)
	if clean == msg {
		return err
	}
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return &driver.MySQLError{Number: me.Number, SQLState: me.SQLState, Message: redactSecret(me.Message, secret)}
	}
	return errors.New(clean)
}

// execer is what control needs of a connection: *DB, a pinned connection, or
// a recorder in tests.
type execer interface {
	Exec(ctx context.Context, stmts ...string) error
	Query(ctx context.Context, query string, args ...any) (*Rows, error)
}

// pinner is implemented by execers that can hand out one connection for a
// sequence of statements that must share it (CONNECTION_ID, then KILL).
type pinner interface {
	pin(ctx context.Context) (execer, func(), error)
}

// ctl is one operation's view of one server. Its methods build statements
// from the dialect and run them through x, so that tests can record them.
type ctl struct {
	x      execer
	key    dbpilot.InstanceKey
	user   string
	id     serverIdent
	d      Dialect
	secret string // removed from error messages
}

// fail wraps err as "mysql: op on key: ...".
func (s *ctl) fail(op string, err error) error { return wrapOp(err, s.key, s.user, op, s.secret) }

func (s *ctl) exec(ctx context.Context, op string, stmts ...string) error {
	for _, st := range stmts {
		if err := s.x.Exec(ctx, st); err != nil {
			return s.fail(op, err)
		}
	}
	return nil
}

func (s *ctl) query(ctx context.Context, op, q string) (*Rows, error) {
	r, err := s.x.Query(ctx, q)
	if err != nil {
		return nil, s.fail(op, err)
	}
	return r, nil
}

func (s *ctl) channels(ctx context.Context, op string) ([]dbpilot.ReplicationChannel, error) {
	r, err := s.query(ctx, op, s.d.ShowReplicaStatusSQL())
	if err != nil {
		return nil, err
	}
	var out []dbpilot.ReplicationChannel
	for _, row := range r.Maps() {
		ch, err := parseReplicaStatusRow(s.id.Flavor, row)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "mysql: %s on %s", op, s.key)
		}
		out = append(out, ch)
	}
	return out, nil
}

// notConfigured reports whether err says that replication (or the channel)
// is not configured: what an idempotent stop or reset may ignore.
func notConfigured(err error) bool {
	switch ServerErrorNumber(err) {
	case ErBadSlave, ErUnknownConnection, erSlaveConfiguration, erSlaveChannelMissing:
		return true
	}
	return false
}

// stopAllSQL stops every channel: MariaDB STOP ALL SLAVES, MySQL STOP
// REPLICA (or SLAVE) without a channel.
func stopAllSQL(d Dialect) string { return d.flavor().stopAll() }

// startAllSQL starts every channel.
func startAllSQL(d Dialect) string { return d.flavor().startAll() }

func (s *ctl) stopReplica(ctx context.Context) error {
	if err := s.x.Exec(ctx, stopAllSQL(s.d)); err != nil && !notConfigured(err) {
		return s.fail("stop replica", err)
	}
	return nil
}

func (s *ctl) startReplica(ctx context.Context) error {
	const op = "start replica"
	err := s.x.Exec(ctx, startAllSQL(s.d))
	if err == nil {
		return nil
	}
	if notConfigured(err) {
		// Fine when there is nothing to start; not when a channel is broken.
		chs, cerr := s.channels(ctx, op)
		if cerr == nil && len(chs) == 0 {
			return nil
		}
	}
	return s.fail(op, err)
}

// resetAllSQL returns the statements that remove every channel: MariaDB
// needs one RESET SLAVE 'name' ALL per connection (names from SHOW ALL
// SLAVES STATUS); MySQL's RESET REPLICA ALL covers every channel.
func resetAllSQL(d Dialect, names []string) []string { return d.flavor().resetAll(names) }

func (s *ctl) resetReplicaAll(ctx context.Context) error {
	const op = "reset replica"
	var names []string
	if s.d.MariaDB() {
		chs, err := s.channels(ctx, op)
		if err != nil {
			return err
		}
		for _, ch := range chs {
			names = append(names, ch.Name)
		}
	}
	for _, st := range resetAllSQL(s.d, names) {
		if err := s.x.Exec(ctx, st); err != nil && !notConfigured(err) {
			return s.fail(op, err)
		}
	}
	return nil
}

// changeSourceSQL is Dialect.ChangeSourceSQL with MariaDB's domain filter:
// IGNORE_DOMAIN_IDS always set (to () when ignore is empty), and
// DO_DOMAIN_IDS cleared when ignore is not empty. MySQL has no domains.
func changeSourceSQL(d Dialect, cs ChangeSource, ignore []uint32) (string, error) {
	filter, ok := d.flavor().domainFilter(ignore)
	if !ok {
		return "", dbpilot.Errorf(dbpilot.EUNSUPPORTED, "ignoring GTID domains %v needs MariaDB; %s %s has no domains", ignore, d.Flavor, d.Version)
	}
	return d.ChangeSourceSQL(cs) + filter, nil
}

func (s *ctl) changeSource(ctx context.Context, source dbpilot.InstanceKey, repl Credentials, replTLS *TLSSettings, opt dbpilot.ChangeSourceOptions) error {
	const op = "change source"
	s.secret = repl.Password
	if source.IsZero() {
		return dbpilot.Errorf(dbpilot.EINVALID, "mysql: %s on %s: no source given", op, s.key)
	}
	stmt, err := changeSourceSQL(s.d, ChangeSource{
		Channel: opt.Channel, Source: source, User: repl.User, Password: repl.Password,
		ConnectRetry: time.Second, HeartbeatPeriod: time.Second, TLS: replTLS,
	}, opt.IgnoreDomains)
	if err != nil {
		return s.fail(op, err)
	}
	chs, err := s.channels(ctx, op)
	if err != nil {
		return err
	}
	for _, ch := range chs {
		if ch.Name == opt.Channel && (ch.IORunning != dbpilot.IOStopped || ch.SQLRunning) {
			if err := s.exec(ctx, op, s.d.StopReplicaSQL(opt.Channel)); err != nil {
				return err
			}
		}
	}
	return s.exec(ctx, op, stmt)
}

// readOnlySQL returns the statements that set read-only: MySQL 5.7.8+ uses
// super_read_only (on: it implies read_only; off: both, super first).
func readOnlySQL(id serverIdent, on bool) []string { return id.dialect().flavor().readOnly(on) }

// semiSyncVarsSQL lists the semi-sync switches the server has.
const semiSyncVarsSQL = "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_%enabled'"

// semiSyncSQL returns the statements that set the semi-sync sides, given the
// switches the server has (name → value): the source/replica names where
// present, else master/slave; a side without a variable (plugin not loaded)
// is skipped, and so is a variable already at the wanted value.
func semiSyncSQL(vars map[string]string, primary, replica bool) []string {
	lower := make(map[string]string, len(vars))
	for k, v := range vars {
		lower[strings.ToLower(k)] = v
	}
	var stmts []string
	set := func(want bool, names ...string) {
		for _, n := range names {
			v, ok := lower[n]
			if !ok {
				continue
			}
			if cur, ok := parseBool(v); !ok || cur != want {
				stmts = append(stmts, fmt.Sprintf("SET GLOBAL %s=%s", n, onOff(want)))
			}
			return
		}
	}
	set(primary, "rpl_semi_sync_source_enabled", "rpl_semi_sync_master_enabled")
	set(replica, "rpl_semi_sync_replica_enabled", "rpl_semi_sync_slave_enabled")
	return stmts
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

func (s *ctl) setSemiSync(ctx context.Context, primary, replica bool) error {
	const op = "set semi-sync"
	r, err := s.query(ctx, op, semiSyncVarsSQL)
	if err != nil {
		return err
	}
	return s.exec(ctx, op, semiSyncSQL(r.NameValues(), primary, replica)...)
}

func (s *ctl) setReplicaPosition(ctx context.Context, pos string) error {
	const op = "set gtid_slave_pos"
	if !s.d.MariaDB() {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "mysql: %s on %s: %s has no gtid_slave_pos", op, s.key, s.id.Flavor)
	}
	return s.exec(ctx, op, s.d.SetGTIDPositionSQL(pos))
}

// waitSQL returns the statement waiting for pos, and what it returns on
// success and on timeout.
func waitSQL(d Dialect, pos string, timeout time.Duration) (q, ok, timedOut string) {
	return d.flavor().waitForGTID(pos, timeout)
}

// positionSQL reads what the server has applied, for messages: MariaDB
// gtid_current_pos, MySQL gtid_executed.
func positionSQL(d Dialect) string { return d.flavor().appliedPosition() }

func (s *ctl) waitForGTID(ctx context.Context, pos string, timeout time.Duration) error {
	const op = "wait for GTID"
	q, ok, timedOut := waitSQL(s.d, pos, timeout)
	r, err := s.query(ctx, op, q)
	if err != nil {
		return err
	}
	got := "NULL"
	if len(r.Values) == 1 && len(r.Values[0]) == 1 && r.Values[0][0] != nil {
		got = strings.TrimSpace(*r.Values[0][0])
	}
	switch got {
	case ok:
		return nil
	case timedOut:
		reached := "unknown"
		if pr, err := s.x.Query(ctx, positionSQL(s.d)); err == nil && len(pr.Values) == 1 && len(pr.Values[0]) == 1 && pr.Values[0][0] != nil {
			reached = cleanGTIDSet(*pr.Values[0][0])
			if reached == "" {
				reached = "nothing"
			}
		}
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: %s on %s: position %s not reached within %s; reached %s", op, s.key, pos, timeout.Round(time.Millisecond), reached)
	}
	return dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: %s on %s: %s returned %s", op, s.key, strings.Fields(q)[1], got)
}

// Threads of the server itself, never killed.
var systemCommands = map[string]bool{"Binlog Dump": true, "Binlog Dump GTID": true, "Daemon": true}

// killTargets returns the processlist IDs to kill: every connection but self,
// the server's own threads (replication dump/IO/SQL/worker threads,
// "system user", the event scheduler), a standby fence running
// (StandbyMarker: it only takes writes away) and dbpilot's liveness
// session. That
// session only sleeps (it never writes), serve moves it to the new primary
// by itself, and its KILL (a thread in SLEEP()) now and then took 2 s on
// MariaDB 10.11 with PROCESSLIST and SHOW SLAVE HOSTS blocked behind it:
// 7 switchovers in 280 were write-unavailable 2.2 s, none in 180 after.
func killTargets(rows []map[string]string, self string) []string {
	var ids []string
	for _, row := range rows {
		r := canonicalRow(row)
		id, user, cmd := r["id"], r["user"], r["command"]
		switch {
		case id == "" || id == self:
		case systemCommands[cmd], strings.HasPrefix(cmd, "Slave_"), strings.HasPrefix(cmd, "Replica_"):
		case user == "system user", user == "event_scheduler":
		case strings.Contains(r["info"], LivenessMarker), strings.Contains(r["info"], StandbyMarker):
		default:
			ids = append(ids, id)
		}
	}
	return ids
}

const processlistAllSQL = "SELECT ID, USER, COMMAND, INFO FROM information_schema.PROCESSLIST"

func (s *ctl) killClients(ctx context.Context) (int, error) {
	const op = "kill client connections"
	x := s.x
	if p, ok := x.(pinner); ok {
		px, release, err := p.pin(ctx)
		if err != nil {
			return 0, s.fail(op, err)
		}
		defer release()
		x = px
	}
	ps := *s
	ps.x = x
	self, err := ps.query(ctx, op, "SELECT CONNECTION_ID()")
	if err != nil {
		return 0, err
	}
	if len(self.Values) != 1 || len(self.Values[0]) != 1 || self.Values[0][0] == nil {
		return 0, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: %s on %s: CONNECTION_ID() returned no value", op, s.key)
	}
	r, err := ps.query(ctx, op, processlistAllSQL)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range killTargets(r.Maps(), *self.Values[0][0]) {
		err := x.Exec(ctx, "KILL CONNECTION "+id)
		switch {
		case err == nil:
			n++
		case ServerErrorNumber(err) == erNoSuchThread:
		default:
			return n, ps.fail(op, err)
		}
	}
	return n, nil
}

// pin returns one connection of the pool for statements that must share it.
func (d *DB) pin(ctx context.Context) (execer, func(), error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, nil, d.classify(err, "connect")
	}
	return &pinnedConn{c: c, d: d}, func() { c.Close() }, nil
}

// pinnedConn runs statements on one connection with the pool's timeout.
type pinnedConn struct {
	c *sql.Conn
	d *DB
}

func (p *pinnedConn) Exec(ctx context.Context, stmts ...string) error {
	for _, st := range stmts {
		qctx, cancel := context.WithTimeout(ctx, p.d.opts.QueryTimeout)
		_, err := p.c.ExecContext(qctx, st)
		cancel()
		if err != nil {
			return p.d.classify(err, "exec "+firstWords(st))
		}
	}
	return nil
}

func (p *pinnedConn) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	qctx, cancel := WithQueryTimeout(ctx, p.d.opts.QueryTimeout)
	defer cancel()
	rows, err := p.c.QueryContext(qctx, query, args...)
	if err != nil {
		return nil, p.d.classify(err, "query "+firstWords(query))
	}
	defer rows.Close()
	res, err := ReadRows(rows)
	if err != nil {
		return nil, p.d.classify(err, "query "+firstWords(query))
	}
	return res, nil
}
