package collector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Statements of the heartbeat collector. The table lives in the dbpilot
// schema; server_id is the writer's, gtid_domain_id its MariaDB domain
// (NULL on MySQL).
const (
	hbCreateDBSQL    = "CREATE DATABASE IF NOT EXISTS dbpilot"
	hbCreateTableSQL = "CREATE TABLE IF NOT EXISTS dbpilot.heartbeat (" +
		"server_id INT UNSIGNED NOT NULL PRIMARY KEY, " +
		"ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), " +
		"gtid_domain_id INT UNSIGNED NULL) ENGINE=InnoDB"
	hbIdentMariaSQL = "SELECT @@global.server_id, @@global.gtid_domain_id"
	hbIdentMySQLSQL = "SELECT @@global.server_id, NULL"
	// hbReadSQL reads every writer's row with this server's clock, as
	// mysqld_exporter's heartbeat collector does. UNIX_TIMESTAMP of a
	// TIMESTAMP column is its stored value, free of time zone conversion.
	hbReadSQL = "SELECT server_id, UNIX_TIMESTAMP(ts), UNIX_TIMESTAMP(NOW(6)) FROM dbpilot.heartbeat"
)

// Server errors the heartbeat collector reacts to.
const (
	hbErrBadDB        = 1049 // ER_BAD_DB_ERROR: no dbpilot schema
	hbErrNoSuchTable  = 1146 // ER_NO_SUCH_TABLE
	hbErrReadOnly     = 1290 // ER_OPTION_PREVENTS_STATEMENT: --read-only, --super-read-only
	hbErrReadOnlyTrx  = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	hbErrReadOnlyMode = 1836 // ER_READ_ONLY_MODE
)

// hbRolePrimary is the Target.Role of a writer: a cluster's primary, or a
// member of a ring (each member writes).
const hbRolePrimary = "primary"

// heartbeat writes and reads pt-heartbeat style heartbeats. It keeps per
// instance whether the table was made on the current connection; it is safe
// for concurrent use on different targets.
type heartbeat struct {
	mu    sync.Mutex
	state map[dbpilot.InstanceKey]*hbState
	book  hbBook
	clock func() time.Time // time.Now; a fixed clock in tests
}

type hbState struct {
	mu       sync.Mutex
	conn     any    // the Querier the table was made through
	ensured  bool   // schema and table made on conn
	serverID uint64 // @@server_id, read once per connection
	domain   string // @@gtid_domain_id as an SQL literal, "NULL" on MySQL
	roSent   bool   // the read-only error was returned; stay quiet until a write works
}

// NewHeartbeat returns the "heartbeat" collector, run every second: true
// replication lag, measured like pt-heartbeat.
//
// On a writer (Target.Role "primary": a cluster's primary, or a ring member)
// it makes, once per connection, the schema dbpilot and the table
// dbpilot.heartbeat (server_id, ts TIMESTAMP(6), gtid_domain_id), then on
// every run replaces its own row with the current time:
//
//	REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (<@@server_id>, NOW(6), <@@gtid_domain_id>)
//
// an ordinary binlogged write that replicates down the tree. It therefore
// adds one transaction (one GTID) per second to the primary's binlog, in
// MariaDB in the writer's own gtid_domain_id. The server_id is written as a
// literal so that statement-based replication stores the writer's id, not
// the replica's. It never writes on any other role: a write on a replica or
// intermediate would be an errant transaction. When the primary refuses the
// write because it is read-only (errors 1290, 1792, 1836), the run returns
// no samples and an error, once; later runs stay silent until a write
// succeeds again.
//
// On every server it then reads the table:
//
//	dbpilot_heartbeat_lag_seconds                     replication lag: the primary's newest heartbeat against the replica's (below)
//	dbpilot_heartbeat_age_seconds                     now - ts of the primary's row, in this server's clock (the lag's former meaning)
//	mysql_heartbeat_stored_timestamp_seconds{server_id} ts of every row (mysqld_exporter's name)
//	mysql_heartbeat_now_timestamp_seconds{server_id}    this server's clock, per row (mysqld_exporter's name)
//
// The primary's row is the one of Target.PrimaryServerID (when 0, the
// newest row). Its age, the pt-heartbeat and mysqld_exporter measure,
// counts the time since the primary's last write too: on a caught-up
// replica it reads anything from 0 to the write interval (1 s), and it
// depends on synchronized clocks.
//
// The lag compares heartbeats with heartbeats, all stamped by the
// primary's clock. The collector notes, on every instance, the ts values of
// the instance's own row as it reads them (one collector value serves
// every instance of a serve, so the primary's runs and its replicas' runs
// share what they saw): the primary's successive heartbeats, and the
// primary's NOW(6) at the read. On a replica whose Target.PrimaryKey is
// an instance noted in the last three of its read intervals (at least
// 3 s), with ts_r the ts of the primary's row on the replica:
//
//   - ts_r is the primary's newest noted heartbeat, or newer: lag 0; the
//     replica holds every heartbeat the primary wrote (a primary that
//     stopped writing, read-only or coordination down, leaves nothing to
//     be behind on);
//   - otherwise the lag is the time since the primary committed its first
//     heartbeat after ts_r, the oldest write the replica lacks: primary's
//     NOW(6) at its last read, plus the time elapsed since, minus that
//     heartbeat's commit (the NOW(6) of the read that followed this
//     collector's write; its ts when another writer wrote it). It rises one
//     second per second while the SQL thread is stopped, and reads the
//     replication delay (milliseconds) on a caught-up replica read just
//     after a write;
//   - ts_r older than every heartbeat noted (serve just started, or more
//     than 600 heartbeats behind): primary's estimated now minus ts_r, an
//     upper bound by at most one write interval.
//
// The lag never uses the replica's clock there, so clock skew between the
// servers does not enter it. When the primary is not monitored by this
// serve, not known (PrimaryServerID 0), or was not read recently (dead,
// unreachable: its heartbeats stop while the replica cannot tell), the lag
// falls back to the age, the honest upper bound that keeps rising. A
// negative difference (clock skew) is reported as 0.
//
// The lag rises second by second when replication stops or the primary
// dies, unlike Seconds_Behind_Master. When the table does not exist yet (a
// replica before the first heartbeat arrived) the run returns no samples
// and no error; when the primary's row is missing (just after a failover)
// the lag and age are left out.
func NewHeartbeat() Collector {
	return &heartbeat{state: map[dbpilot.InstanceKey]*hbState{}, book: hbBook{w: map[dbpilot.InstanceKey]*hbWriter{}}, clock: time.Now}
}

func (*heartbeat) Name() string                   { return "heartbeat" }
func (*heartbeat) DefaultInterval() time.Duration { return time.Second }

// Forget drops what the collector remembers of an instance that left the
// fleet.
func (h *heartbeat) Forget(key dbpilot.InstanceKey) {
	h.mu.Lock()
	delete(h.state, key.Normalized())
	h.mu.Unlock()
	h.book.forget(key)
}

func (h *heartbeat) stateFor(key dbpilot.InstanceKey) *hbState {
	k := key.Normalized()
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state[k]
	if st == nil {
		st = &hbState{}
		h.state[k] = st
	}
	return st
}

func (h *heartbeat) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	st := h.stateFor(t.Key)
	st.mu.Lock()
	defer st.mu.Unlock()
	wrote := false
	if t.Role == hbRolePrimary {
		if err := st.write(ctx, q, t); err != nil {
			if !hbIsReadOnly(err) {
				return nil, err
			}
			if st.roSent {
				return nil, nil
			}
			st.roSent = true
			return nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "heartbeat: %s is read-only but has the primary role: no heartbeat written (reported once)", t.Key)
		}
		st.roSent, wrote = false, true
	}
	sent := h.clock()
	r, err := q.Query(ctx, hbReadSQL)
	if err != nil {
		if n := mysql.ServerErrorNumber(err); n == hbErrNoSuchTable || n == hbErrBadDB {
			return nil, nil
		}
		return nil, err
	}
	// The read's NOW(6) and the rows it saw belong to the middle of its
	// round trip.
	at := sent.Add(h.clock().Sub(sent) / 2)
	rows := hbParseRows(r)
	own := t.ServerID
	if own == 0 {
		own = uint32(st.serverID)
	}
	if own != 0 {
		for _, row := range rows {
			if row.id == own {
				h.book.note(t.Key, own, row.ts, row.now, at, wrote)
			}
		}
	}
	return hbSamples(rows, t, &h.book, at), nil
}

// write replaces the writer's row, first making the table on a new
// connection, and again should it have been dropped.
func (st *hbState) write(ctx context.Context, q Querier, t Target) error {
	// Never write on a read_only server, even when the topology calls it
	// primary (an account with ALL privileges would bypass read_only and
	// leave an errant transaction, e.g. on a fenced old primary, or on the
	// old primary of a switchover whose connections were just killed).
	// Checked before anything else: CREATE ... IF NOT EXISTS is written to
	// the binary log even when the object exists, so the table's set-up
	// on a new connection is such a write too.
	ro, err := q.Query(ctx, "SELECT @@global.read_only")
	if err != nil {
		return err
	}
	if len(ro.Values) == 1 && len(ro.Values[0]) == 1 && ro.Values[0][0] != nil && strings.TrimSpace(*ro.Values[0][0]) != "0" {
		return errHBReadOnly
	}
	if !st.ensured || !hbSameConn(st.conn, q) {
		if err := st.ensure(ctx, q, t); err != nil {
			return err
		}
	}
	stmt := fmt.Sprintf("REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (%d, NOW(6), %s)", st.serverID, st.domain)
	err = q.Exec(ctx, stmt)
	if n := mysql.ServerErrorNumber(err); n == hbErrNoSuchTable || n == hbErrBadDB {
		st.ensured = false
		if err := st.ensure(ctx, q, t); err != nil {
			return err
		}
		err = q.Exec(ctx, stmt)
	}
	return err
}

func (st *hbState) ensure(ctx context.Context, q Querier, t Target) error {
	st.ensured = false
	if err := q.Exec(ctx, hbCreateDBSQL, hbCreateTableSQL); err != nil {
		return err
	}
	identSQL := hbIdentMySQLSQL
	if t.Flavor == dbpilot.FlavorMariaDB {
		identSQL = hbIdentMariaSQL
	}
	r, err := q.Query(ctx, identSQL)
	if err != nil {
		return err
	}
	if len(r.Values) != 1 || len(r.Values[0]) != 2 || r.Values[0][0] == nil {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "heartbeat: read server_id on %s: unexpected result", t.Key)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(*r.Values[0][0]), 10, 32)
	if err != nil {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "heartbeat: server_id on %s is %q, want a number", t.Key, *r.Values[0][0])
	}
	st.serverID, st.domain = id, "NULL"
	if v := r.Values[0][1]; v != nil {
		if d, err := strconv.ParseUint(strings.TrimSpace(*v), 10, 32); err == nil {
			st.domain = strconv.FormatUint(d, 10)
		}
	}
	st.conn, st.ensured = q, true
	return nil
}

// hbSameConn reports whether q is the connection the table was made on.
// Queriers of a type that cannot be compared count as the same.
func hbSameConn(prev any, q Querier) bool {
	if prev == nil {
		return false
	}
	tp, tq := reflect.TypeOf(prev), reflect.TypeOf(q)
	if tp != tq {
		return false
	}
	if !tp.Comparable() {
		return true
	}
	return prev == any(q)
}

// errHBReadOnly is returned when the writer finds @@read_only on.
var errHBReadOnly = errors.New("read_only is ON")

func hbIsReadOnly(err error) bool {
	if errors.Is(err, errHBReadOnly) {
		return true
	}
	switch mysql.ServerErrorNumber(err) {
	case hbErrReadOnly, hbErrReadOnlyTrx, hbErrReadOnlyMode:
		return true
	}
	return false
}

// hbRow is one row of hbReadSQL: the writer's server_id, its ts and the
// reading server's NOW(6), in microseconds.
type hbRow struct {
	id      uint32
	ts, now int64
}

// hbParseRows reads the rows of hbReadSQL, skipping malformed ones.
func hbParseRows(r *mysql.Rows) []hbRow {
	var out []hbRow
	for _, row := range r.Values {
		if len(row) != 3 || row[0] == nil || row[1] == nil || row[2] == nil {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(*row[0]), 10, 32)
		ts, ok1 := hbParseMicros(*row[1])
		now, ok2 := hbParseMicros(*row[2])
		if err != nil || !ok1 || !ok2 {
			continue
		}
		out = append(out, hbRow{id: uint32(id), ts: ts, now: now})
	}
	return out
}

// hbSamples turns the rows read on t into samples, the lag measured
// against what book noted of t's primary at time at.
func hbSamples(rows []hbRow, t Target, book *hbBook, at time.Time) []dbpilot.Sample {
	var (
		out   []dbpilot.Sample
		lagOf *hbRow
	)
	for i := range rows {
		row := &rows[i]
		id := strconv.FormatUint(uint64(row.id), 10)
		out = append(out,
			rhiSample("mysql_heartbeat_stored_timestamp_seconds", dbpilot.Gauge, float64(row.ts)/1e6, "server_id", id),
			rhiSample("mysql_heartbeat_now_timestamp_seconds", dbpilot.Gauge, float64(row.now)/1e6, "server_id", id),
		)
		switch {
		case t.PrimaryServerID != 0:
			if row.id == t.PrimaryServerID {
				lagOf = row
			}
		case lagOf == nil || row.ts > lagOf.ts:
			lagOf = row
		}
	}
	if lagOf == nil {
		return out
	}
	age := max(lagOf.now-lagOf.ts, 0)
	lag, ok := int64(0), false
	if t.PrimaryServerID != 0 {
		ref := t.PrimaryKey
		if ref.IsZero() && t.PrimaryServerID == t.ServerID {
			ref = t.Key // the primary itself
		}
		if !ref.IsZero() {
			lag, ok = book.lag(ref, t.PrimaryServerID, lagOf.ts, at)
		}
	}
	if !ok {
		lag = age
	}
	return append(out,
		rhiSample("dbpilot_heartbeat_lag_seconds", dbpilot.Gauge, float64(lag)/1e6),
		rhiSample("dbpilot_heartbeat_age_seconds", dbpilot.Gauge, float64(age)/1e6))
}

// hbHistory is how many successive heartbeats of a writer the book keeps
// (10 minutes at one a second); hbStaleMin the least time after which a
// writer not read again no longer counts.
const (
	hbHistory  = 600
	hbStaleMin = 3 * time.Second
)

// hbBook is what the heartbeat collector saw of each instance's own row:
// the writers' heartbeats, in their own clock. Safe for concurrent use.
type hbBook struct {
	mu sync.Mutex
	w  map[dbpilot.InstanceKey]*hbWriter
}

type hbWriter struct {
	serverID uint32
	hist     []hbBeat      // its heartbeats as read, ts ascending
	now      int64         // its NOW(6) at the last read
	at       time.Time     // when that read returned (serve's clock, monotonic)
	gap      time.Duration // between its last two reads
}

// hbBeat is one heartbeat: its ts, and the time (writer's clock) by which
// it was committed.
type hbBeat struct{ ts, committed int64 }

// note records one read of key's own row (server_id id): its ts and the
// server's NOW(6) at the read, made at at. wrote says the collector wrote
// the row just before the read, on the same connection: a new ts is then
// the write's, committed by the read's NOW(6); otherwise (another serve or
// tool writes) its ts is the best estimate of its commit.
func (b *hbBook) note(key dbpilot.InstanceKey, id uint32, ts, now int64, at time.Time, wrote bool) {
	k := key.Normalized()
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.w[k]
	if w == nil || w.serverID != id {
		w = &hbWriter{serverID: id}
		b.w[k] = w
	}
	beat := hbBeat{ts: ts, committed: ts}
	if wrote {
		// Not ts, the statement's start: the commit that followed it
		// (milliseconds under load) is no lag of the replicas.
		beat.committed = max(ts, now)
	}
	switch n := len(w.hist); {
	case n == 0 || ts > w.hist[n-1].ts:
		if n == hbHistory {
			w.hist = append(w.hist[:0], w.hist[1:]...)
		}
		w.hist = append(w.hist, beat)
	case ts < w.hist[n-1].ts:
		// Older than the newest: the row was written by a clock set back
		// or another writer; start again from it.
		w.hist = append(w.hist[:0], beat)
	}
	if !w.at.IsZero() {
		w.gap = at.Sub(w.at)
	}
	w.now, w.at = now, at
}

// lag returns the replication lag, in microseconds, of a replica whose
// copy of the row of writer key (server_id id) has ts tr, read at at; ok
// is false when the book cannot tell (writer not read recently, or never).
func (b *hbBook) lag(key dbpilot.InstanceKey, id uint32, tr int64, at time.Time) (lag int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.w[key.Normalized()]
	if w == nil || w.serverID != id || len(w.hist) == 0 {
		return 0, false
	}
	since := at.Sub(w.at)
	if since > max(3*w.gap, hbStaleMin) {
		return 0, false
	}
	now := w.now + since.Microseconds() // the writer's clock at at
	i := sort.Search(len(w.hist), func(i int) bool { return w.hist[i].ts > tr })
	switch {
	case i == len(w.hist):
		return 0, true // holds the newest heartbeat
	case i == 0:
		return max(now-tr, 0), true // older than every heartbeat noted
	}
	return max(now-w.hist[i].committed, 0), true // lacks hist[i] and every later one
}

func (b *hbBook) forget(key dbpilot.InstanceKey) {
	b.mu.Lock()
	delete(b.w, key.Normalized())
	b.mu.Unlock()
}

// hbParseMicros reads a non-negative decimal number of seconds with up to
// six decimals ("1700000000.123456", as UNIX_TIMESTAMP prints it) into
// microseconds, exactly.
func hbParseMicros(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" || len(intPart) > 12 || len(frac) > 6 {
		return 0, false
	}
	sec, err := strconv.ParseUint(intPart, 10, 64)
	if err != nil {
		return 0, false
	}
	var us uint64
	if frac != "" {
		f, err := strconv.ParseUint(frac, 10, 64)
		if err != nil {
			return 0, false
		}
		us = f
		for i := len(frac); i < 6; i++ {
			us *= 10
		}
	}
	return int64(sec*1_000_000 + us), true
}
