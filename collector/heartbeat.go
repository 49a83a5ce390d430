package collector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
// On every server it then reads the table with the server's own clock:
//
//	dbpilot_heartbeat_lag_seconds                     now - ts of the primary's row (Target.PrimaryServerID; when 0, the newest row)
//	mysql_heartbeat_stored_timestamp_seconds{server_id} ts of every row (mysqld_exporter's name)
//	mysql_heartbeat_now_timestamp_seconds{server_id}    this server's clock, per row (mysqld_exporter's name)
//
// The lag rises second by second when replication stops or the primary
// dies, unlike Seconds_Behind_Master. It depends on synchronized clocks
// (NTP); a negative difference (clock skew) is reported as 0. When the table
// does not exist yet (a replica before the first heartbeat arrived) the run
// returns no samples and no error; when the primary's row is missing (just
// after a failover) the lag is left out.
func NewHeartbeat() Collector { return &heartbeat{state: map[dbpilot.InstanceKey]*hbState{}} }

func (*heartbeat) Name() string                   { return "heartbeat" }
func (*heartbeat) DefaultInterval() time.Duration { return time.Second }

// Forget drops what the collector remembers of an instance that left the
// fleet.
func (h *heartbeat) Forget(key dbpilot.InstanceKey) {
	h.mu.Lock()
	delete(h.state, key.Normalized())
	h.mu.Unlock()
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
		st.roSent = false
	}
	r, err := q.Query(ctx, hbReadSQL)
	if err != nil {
		if n := mysql.ServerErrorNumber(err); n == hbErrNoSuchTable || n == hbErrBadDB {
			return nil, nil
		}
		return nil, err
	}
	return hbSamples(r, t.PrimaryServerID), nil
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

// hbSamples turns the rows of hbReadSQL into samples.
func hbSamples(r *mysql.Rows, primaryID uint32) []dbpilot.Sample {
	var (
		out              []dbpilot.Sample
		lagTS, lagNow    int64
		found            bool
		bestTS, bestNow  int64
		haveBest         bool
		wantPrimaryRowID = strconv.FormatUint(uint64(primaryID), 10)
	)
	for _, row := range r.Values {
		if len(row) != 3 || row[0] == nil || row[1] == nil || row[2] == nil {
			continue
		}
		id := strings.TrimSpace(*row[0])
		ts, ok1 := hbParseMicros(*row[1])
		now, ok2 := hbParseMicros(*row[2])
		if !ok1 || !ok2 {
			continue
		}
		out = append(out,
			rhiSample("mysql_heartbeat_stored_timestamp_seconds", dbpilot.Gauge, float64(ts)/1e6, "server_id", id),
			rhiSample("mysql_heartbeat_now_timestamp_seconds", dbpilot.Gauge, float64(now)/1e6, "server_id", id),
		)
		if primaryID != 0 && id == wantPrimaryRowID {
			lagTS, lagNow, found = ts, now, true
		}
		if !haveBest || ts > bestTS {
			bestTS, bestNow, haveBest = ts, now, true
		}
	}
	if primaryID == 0 && haveBest {
		lagTS, lagNow, found = bestTS, bestNow, true
	}
	if found {
		lag := max(lagNow-lagTS, 0)
		out = append(out, rhiSample("dbpilot_heartbeat_lag_seconds", dbpilot.Gauge, float64(lag)/1e6))
	}
	return out
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
