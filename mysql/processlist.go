package mysql

import (
	"context"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Process is one session of a server's processlist (the fields of
// watchdog.Process, which it converts to).
type Process struct {
	ID      uint64
	User    string
	Host    string
	DB      string
	Command string
	State   string
	Info    string
	Time    time.Duration // TIME_MS on MariaDB, TIME (whole seconds) on MySQL
}

// InnoDBTrx is one open InnoDB transaction of a session (the fields of
// watchdog.Trx, which it converts to).
type InnoDBTrx struct {
	ThreadID   uint64        // trx_mysql_thread_id
	Age        time.Duration // NOW() - trx_started, computed by the server
	RowsLocked int64         // trx_rows_locked
	State      string        // trx_state
}

// Processlist is one read of the processlist and the sessions' InnoDB
// transactions.
type Processlist struct {
	At        time.Time
	Self      uint64 // CONNECTION_ID() of the session that read it
	Processes []Process
	Trx       []InnoDBTrx
}

// ProcesslistSQL returns the query that reads the processlist joined to
// information_schema.INNODB_TRX in one round trip. MariaDB has TIME_MS;
// MySQL's TIME is in whole seconds (performance_schema.processlist has no
// finer age either). Neither table takes locks on user tables.
func ProcesslistSQL(f dbpilot.Flavor) string {
	timeMS := "p.TIME_MS"
	if f != dbpilot.FlavorMariaDB {
		timeMS = "p.TIME*1000"
	}
	return "SELECT CONNECTION_ID() AS SELF, p.ID, p.USER, p.HOST, p.DB, p.COMMAND, p.TIME, p.STATE, p.INFO, " +
		timeMS + " AS TIME_MS, t.trx_mysql_thread_id AS TRX_THREAD, " +
		"TIMESTAMPDIFF(SECOND, t.trx_started, NOW()) AS TRX_AGE, t.trx_rows_locked AS TRX_ROWS_LOCKED, t.trx_state AS TRX_STATE " +
		"FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID"
}

// Processlist reads the processlist and the open InnoDB transactions of
// its sessions, in one statement bounded by the query timeout.
func (d *DB) Processlist(ctx context.Context, f dbpilot.Flavor) (*Processlist, error) {
	r, err := d.Query(ctx, ProcesslistSQL(f))
	if err != nil {
		return nil, err
	}
	pl, err := ParseProcesslist(r)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "mysql: read processlist on %s", d.Key)
	}
	pl.At = time.Now()
	return pl, nil
}

// ParseProcesslist reads the rows of ProcesslistSQL.
func ParseProcesslist(r *Rows) (*Processlist, error) {
	col := func(name string) int { return r.Index(name) }
	iSelf, iID, iUser, iHost, iDB := col("SELF"), col("ID"), col("USER"), col("HOST"), col("DB")
	iCmd, iTime, iState, iInfo, iMS := col("COMMAND"), col("TIME"), col("STATE"), col("INFO"), col("TIME_MS")
	iTrx, iAge, iLocked, iTrxState := col("TRX_THREAD"), col("TRX_AGE"), col("TRX_ROWS_LOCKED"), col("TRX_STATE")
	if iID < 0 || iCmd < 0 {
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "processlist: no ID or COMMAND column in %v", r.Columns)
	}
	pl := &Processlist{}
	for _, row := range r.Values {
		id, err := strconv.ParseUint(Str(row, iID), 10, 64)
		if err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "processlist: bad ID %q", Str(row, iID))
		}
		if pl.Self == 0 {
			pl.Self, _ = strconv.ParseUint(Str(row, iSelf), 10, 64)
		}
		p := Process{ID: id, User: Str(row, iUser), Host: Str(row, iHost), DB: Str(row, iDB),
			Command: Str(row, iCmd), State: Str(row, iState), Info: Str(row, iInfo)}
		if ms, err := strconv.ParseFloat(Str(row, iMS), 64); err == nil {
			p.Time = time.Duration(ms * float64(time.Millisecond))
		} else if s, err := strconv.ParseFloat(Str(row, iTime), 64); err == nil {
			p.Time = time.Duration(s * float64(time.Second))
		}
		pl.Processes = append(pl.Processes, p)
		if Str(row, iTrx) == "" {
			continue
		}
		t := InnoDBTrx{ThreadID: id, State: Str(row, iTrxState)}
		if s, err := strconv.ParseFloat(Str(row, iAge), 64); err == nil && s > 0 {
			t.Age = time.Duration(s * float64(time.Second))
		}
		t.RowsLocked, _ = strconv.ParseInt(Str(row, iLocked), 10, 64)
		pl.Trx = append(pl.Trx, t)
	}
	return pl, nil
}

// MDLWait is a pending table metadata lock and a session that holds a
// granted lock on the same table (the fields of watchdog.MDLWait, which it
// converts to).
type MDLWait struct {
	Waiter  uint64 // processlist ID of the session waiting
	Blocker uint64 // processlist ID of a session holding a lock on the table
	Schema  string
	Table   string
}

// MDLWaitsSQL reads performance_schema's metadata locks: a first row says
// whether the wait/lock/metadata/sql/mdl instrument is enabled (ENABLED,
// WAITER NULL), then one row per pending table lock and other session
// holding a granted lock on that table. The instrument is off by default on
// MariaDB (and performance_schema may be off): then the table is empty and
// the first row says so. metadata_locks holds at most
// performance_schema_max_metadata_locks rows; the read takes no metadata
// lock on user tables.
const MDLWaitsSQL = "SELECT ENABLED, NULL AS WAITER, NULL AS BLOCKER, NULL AS OBJECT_SCHEMA, NULL AS OBJECT_NAME " +
	"FROM performance_schema.setup_instruments WHERE NAME = 'wait/lock/metadata/sql/mdl' " +
	"UNION ALL " +
	"SELECT 'WAIT', tw.PROCESSLIST_ID, tg.PROCESSLIST_ID, w.OBJECT_SCHEMA, w.OBJECT_NAME " +
	"FROM performance_schema.metadata_locks w " +
	"JOIN performance_schema.threads tw ON tw.THREAD_ID = w.OWNER_THREAD_ID " +
	"JOIN performance_schema.metadata_locks g ON g.OBJECT_TYPE = w.OBJECT_TYPE AND g.OBJECT_SCHEMA <=> w.OBJECT_SCHEMA " +
	"AND g.OBJECT_NAME <=> w.OBJECT_NAME AND g.LOCK_STATUS = 'GRANTED' AND g.OWNER_THREAD_ID <> w.OWNER_THREAD_ID " +
	"JOIN performance_schema.threads tg ON tg.THREAD_ID = g.OWNER_THREAD_ID " +
	"WHERE w.LOCK_STATUS = 'PENDING' AND w.OBJECT_TYPE = 'TABLE' " +
	"AND tw.PROCESSLIST_ID IS NOT NULL AND tg.PROCESSLIST_ID IS NOT NULL"

// ParseMDLWaits reads the rows of MDLWaitsSQL: enabled says the instrument
// is on (the waits are then known).
func ParseMDLWaits(r *Rows) (waits []MDLWait, enabled bool) {
	iEn, iW, iB, iS, iT := r.Index("ENABLED"), r.Index("WAITER"), r.Index("BLOCKER"), r.Index("OBJECT_SCHEMA"), r.Index("OBJECT_NAME")
	for _, row := range r.Values {
		switch Str(row, iEn) {
		case "YES":
			enabled = true
		case "WAIT":
			w, err1 := strconv.ParseUint(Str(row, iW), 10, 64)
			b, err2 := strconv.ParseUint(Str(row, iB), 10, 64)
			if err1 == nil && err2 == nil {
				waits = append(waits, MDLWait{Waiter: w, Blocker: b, Schema: Str(row, iS), Table: Str(row, iT)})
			}
		}
	}
	return waits, enabled
}

// MDLWaits reads MDLWaitsSQL with the query timeout.
func (d *DB) MDLWaits(ctx context.Context) (waits []MDLWait, enabled bool, err error) {
	r, err := d.Query(ctx, MDLWaitsSQL)
	if err != nil {
		return nil, false, err
	}
	waits, enabled = ParseMDLWaits(r)
	return waits, enabled, nil
}

// erKillDenied is ER_KILL_DENIED_ERROR: "You are not owner of thread".
const erKillDenied = 1095

// Kill ends the statement running in session id (query true: KILL QUERY)
// or the whole connection (KILL CONNECTION), with the query timeout. It
// does not retry. A session that is already gone is an error with code
// dbpilot.ENOTFOUND; a missing privilege (CONNECTION_ADMIN/SUPER, or
// PROCESS for others' threads) one with dbpilot.EAUTH.
func (d *DB) Kill(ctx context.Context, id uint64, query bool) error {
	stmt := "KILL CONNECTION " + strconv.FormatUint(id, 10)
	if query {
		stmt = "KILL QUERY " + strconv.FormatUint(id, 10)
	}
	qctx, cancel := WithQueryTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	_, err := d.db.ExecContext(qctx, stmt)
	switch ServerErrorNumber(err) {
	case 0:
		if err != nil {
			return d.classify(err, stmt)
		}
		return nil
	case erNoSuchThread:
		return dbpilot.Errorf(dbpilot.ENOTFOUND, "mysql: %s on %s: no such session (already gone)", stmt, d.Key)
	case erKillDenied:
		return dbpilot.Errorf(dbpilot.EAUTH, "mysql: %s on %s: user %q may not kill it (needs SUPER or CONNECTION_ADMIN)", stmt, d.Key, d.opts.User)
	}
	return d.classify(err, stmt)
}
