package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// heartbeatTable is the source table of Options.Heartbeat.
const heartbeatTable = "copy_heartbeat"

// tick is how often the apply loop checks the cut-over and progress.
const tick = 200 * time.Millisecond

// streamed is one event of the binary log, or the error that ended it.
type streamed struct {
	ev  *replication.BinlogEvent
	err error
}

// applier applies A's binary log to B.
type applier struct {
	c   *copier
	w   *sql.Conn // B session
	ctx context.Context
	ch  chan streamed

	pos       *position // applied, in B's open transaction or committed
	committed string    // recorded on B

	// The source transaction being read.
	inTx     bool
	sawBegin bool
	curGTID  string

	// B's open transaction.
	bOpen       bool
	batchStart  time.Time
	pendingTx   int
	pendingRows int64
	pendingTS   []uint32    // binlog timestamps of the pending source transactions
	pendingHB   []time.Time // heartbeat times among them

	// Statistics.
	started      time.Time
	caughtUpAt   time.Time
	txs, rows    int64
	lagBinlog    *hdrhistogram.Histogram // µs
	lagHB        *hdrhistogram.Histogram // µs
	lastLag      time.Duration
	lastProgress time.Time
	lastTxs      int64
	lastRows     int64

	// Cut-over.
	cutState    int // 0 running, 1 waiting for read_only, 2 applying to final
	final       string
	roSet       bool
	lastROCheck time.Time
	stopHB      func()
	hbEnabled   bool
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

func recordLag(h *hdrhistogram.Histogram, d time.Duration) {
	us := max(d.Microseconds(), 1)
	_ = h.RecordValue(min(us, h.HighestTrackableValue()))
}

// capture streams A's binary log from start and applies it to B until ctx
// is done, the cut-over is complete, or an error.
func (c *copier) capture(ctx context.Context, start string) error {
	pos, err := parsePosition(c.a.mariadb(), start)
	if err != nil {
		return err
	}
	// B's statements are not cut by Ctrl-C: the loop stops between them.
	bctx := context.WithoutCancel(ctx)
	w, err := c.b.db.SQL().Conn(bctx)
	if err != nil {
		return fmt.Errorf("dbcopy: connect to %s: %w", c.b.key, err)
	}
	defer w.Close()
	if err := execAll(bctx, w, targetSessionSQL(c.opt.NoBinlog)...); err != nil {
		return fmt.Errorf("dbcopy: prepare a session on %s: %w", c.b.key, err)
	}
	if err := execAll(bctx, w, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"); err != nil {
		return fmt.Errorf("dbcopy: prepare a session on %s: %w", c.b.key, err)
	}
	flavor := gmysql.MySQLFlavor
	if c.a.mariadb() {
		flavor = gmysql.MariaDBFlavor
	}
	gset, err := gmysql.ParseGTIDSet(flavor, start)
	if err != nil {
		return fmt.Errorf("dbcopy: GTID position %q: %w", start, err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:                c.opt.ServerID,
		Flavor:                  flavor,
		Host:                    c.a.key.Host,
		Port:                    uint16(c.a.key.Port),
		User:                    c.a.opts.User,
		Password:                c.a.opts.Password,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         time.Second,
		ReadTimeout:             30 * time.Second,
		MaxReconnectAttempts:    10,
		Logger:                  c.opt.Log,
		// Connect, greeting and authentication within the connect
		// timeout (the library bounds only the dial, by 10 s).
		Dialer: mysql.DialBounded(c.a.opts.Dial, c.a.opts.ConnectTimeout),
		// TLS as the copy's other connections to the source.
		TLSConfig: c.a.opts.TLSConfig(c.a.key),
	})
	defer syncer.Close()
	streamer, err := syncer.StartSyncGTID(gset)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "dbcopy: read the binary log of %s from GTID position %q (the account needs REPLICATION SLAVE)", c.a.key, start)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ap := &applier{c: c, w: w, ctx: bctx, ch: make(chan streamed, 4096), pos: pos, committed: start,
		started: time.Now(), lastProgress: time.Now(), lagBinlog: newHist(), lagHB: newHist(), stopHB: func() {}}
	go func() {
		for {
			ev, err := streamer.GetEvent(rctx)
			select {
			case ap.ch <- streamed{ev, err}:
			case <-rctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if c.opt.Heartbeat > 0 {
		stop, err := c.startHeartbeat(rctx)
		if err != nil {
			return err
		}
		ap.stopHB, ap.hbEnabled = stop, true
	}
	defer func() { ap.stopHB() }()
	c.logf("applying changes of %s from GTID position %q (server id %d)", c.a.key, start, c.opt.ServerID)
	err = ap.loop(ctx)
	ap.finishStats()
	if err == nil && ap.cutState == 3 {
		c.res.Stopped = "cutover"
		return c.checksums(bctx, ap)
	}
	return err
}

// loop runs until the end of the copy.
func (ap *applier) loop(ctx context.Context) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ap.interrupted()
		case s := <-ap.ch:
			if s.err != nil {
				if ctx.Err() != nil {
					return ap.interrupted()
				}
				ap.rollback()
				return dbpilot.WrapError(dbpilot.EUNAVAIL, s.err, "dbcopy: read the binary log of %s (applied up to GTID %q)", ap.c.a.key, ap.committed)
			}
			if err := ap.handle(s.ev); err != nil {
				ap.rollback()
				return err
			}
			if !ap.inTx && ap.pendingTx > 0 && (len(ap.ch) == 0 || ap.pendingTx >= ap.c.opt.MaxBatch || time.Since(ap.batchStart) > 100*time.Millisecond) {
				if err := ap.commit(); err != nil {
					return err
				}
			}
		case <-t.C:
			if !ap.inTx && ap.pendingTx > 0 {
				if err := ap.commit(); err != nil {
					return err
				}
			}
			if ap.caughtUpAt.IsZero() && !ap.inTx && ap.pendingTx == 0 && len(ap.ch) == 0 {
				ap.caughtUpAt = time.Now() // nothing to apply
				ap.c.logf("caught up after %s", ap.caughtUpAt.Sub(ap.started).Round(time.Millisecond))
			}
			ap.progress(false)
		}
		if done, err := ap.cutover(); err != nil {
			ap.rollback()
			return err
		} else if done {
			return nil
		}
	}
}

// interrupted ends the loop on Ctrl-C: what B's open transaction holds is
// committed when it ends on a source transaction's boundary, else rolled
// back; the position reached is B's.
func (ap *applier) interrupted() error {
	if !ap.inTx && ap.pendingTx > 0 {
		if err := ap.commit(); err != nil {
			return err
		}
	} else {
		ap.rollback()
	}
	ap.c.res.Stopped = "interrupted"
	ap.c.logf("interrupted: %s has every transaction of %s up to GTID position %q; continue with --resume", ap.c.b.key, ap.c.a.key, ap.committed)
	return nil
}

func (ap *applier) rollback() {
	if ap.bOpen {
		_, _ = ap.w.ExecContext(ap.ctx, "ROLLBACK")
		ap.bOpen = false
	}
	ap.pendingTx, ap.pendingRows, ap.pendingTS, ap.pendingHB = 0, 0, ap.pendingTS[:0], ap.pendingHB[:0]
	ap.c.res.GTID = ap.committed
}

func (ap *applier) exec(q string) error {
	if !ap.bOpen {
		if _, err := ap.w.ExecContext(ap.ctx, "BEGIN"); err != nil {
			return fmt.Errorf("dbcopy: BEGIN on %s: %w", ap.c.b.key, err)
		}
		ap.bOpen = true
		if ap.pendingTx == 0 {
			ap.batchStart = time.Now()
		}
	}
	if _, err := ap.w.ExecContext(ap.ctx, q); err != nil {
		return dbpilot.WrapError(dbpilot.ECONFLICT, err, "dbcopy: applying GTID %s on %s failed (applied up to %q): %s", ap.curGTID, ap.c.b.key, ap.committed, firstWords(q))
	}
	return nil
}

// commit records the position in B's open transaction and commits it.
func (ap *applier) commit() error {
	p := ap.pos.String()
	if err := ap.exec(ap.c.positionSQL(p)); err != nil {
		return err
	}
	if _, err := ap.w.ExecContext(ap.ctx, "COMMIT"); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "dbcopy: COMMIT on %s (applied up to %q)", ap.c.b.key, ap.committed)
	}
	now := time.Now()
	if ap.caughtUpAt.IsZero() && len(ap.ch) == 0 {
		// Everything read so far is applied: the backlog of the bulk
		// copy is gone. Lag is measured from here on.
		ap.caughtUpAt = now
		ap.c.logf("caught up after %s", now.Sub(ap.started).Round(time.Millisecond))
	}
	ap.bOpen = false
	ap.committed = p
	ap.c.res.GTID = p
	ap.txs += int64(ap.pendingTx)
	ap.rows += ap.pendingRows
	if ap.caughtUpAt.IsZero() {
		ap.pendingTx, ap.pendingRows, ap.pendingTS, ap.pendingHB = 0, 0, ap.pendingTS[:0], ap.pendingHB[:0]
		return nil
	}
	for _, ts := range ap.pendingTS {
		d := now.Sub(time.Unix(int64(ts), 0))
		recordLag(ap.lagBinlog, d)
		if !ap.hbEnabled {
			ap.lastLag = d
		}
	}
	for _, hb := range ap.pendingHB {
		d := now.Sub(hb)
		recordLag(ap.lagHB, d)
		ap.lastLag = d
	}
	ap.pendingTx, ap.pendingRows, ap.pendingTS, ap.pendingHB = 0, 0, ap.pendingTS[:0], ap.pendingHB[:0]
	return nil
}

// sourceCommit ends a source transaction in B's open transaction.
func (ap *applier) sourceCommit(ts uint32) error {
	if ap.curGTID != "" {
		if err := ap.pos.add(ap.curGTID); err != nil {
			return err
		}
	}
	if ap.pendingTx == 0 && !ap.bOpen {
		ap.batchStart = time.Now()
	}
	ap.pendingTx++
	ap.pendingTS = append(ap.pendingTS, ts)
	ap.inTx, ap.sawBegin, ap.curGTID = false, false, ""
	return nil
}

func (ap *applier) handle(ev *replication.BinlogEvent) error {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		ap.curGTID = e.GTID.String()
		ap.inTx, ap.sawBegin = true, false
	case *replication.GTIDEvent:
		set, err := e.GTIDNext()
		if err != nil {
			return fmt.Errorf("dbcopy: read a GTID event: %w", err)
		}
		ap.curGTID = set.String()
		ap.inTx, ap.sawBegin = true, false
	case *replication.QueryEvent:
		return ap.query(ev, e)
	case *replication.XIDEvent:
		return ap.sourceCommit(ev.Header.Timestamp)
	case *replication.RowsEvent:
		return ap.rowsEvent(ev.Header.EventType, e)
	}
	return nil
}

func (ap *applier) query(ev *replication.BinlogEvent, e *replication.QueryEvent) error {
	q := strings.TrimSpace(string(e.Query))
	switch strings.ToUpper(q) {
	case "BEGIN":
		ap.sawBegin = true
		return nil
	case "COMMIT", "ROLLBACK":
		return ap.sourceCommit(ev.Header.Timestamp)
	}
	db := string(e.Schema)
	d := classifyDDL(q, db, ap.c.scope())
	if ap.sawBegin {
		// A statement inside a transaction: a row change logged as a
		// statement, or a statement on other objects.
		if d.Action == ddlStop {
			return ap.stopAt(d)
		}
		if d.Action == ddlApply {
			return ap.stopAt(stop(q, "a statement inside a transaction"))
		}
		return nil
	}
	if d.Action == ddlIgnore {
		return ap.sourceCommit(ev.Header.Timestamp)
	}
	// A statement on its own: B's open transaction holds whole source
	// transactions only; commit them before stopping or applying it.
	if ap.pendingTx > 0 {
		if err := ap.commit(); err != nil {
			return err
		}
	}
	if d.Action == ddlStop {
		return ap.stopAt(d)
	}
	// A DDL on copied tables: run it on B, record its position, read the
	// tables it changed again from B.
	stmts := []string{}
	if db != "" && ap.c.dbSelected(db) {
		stmts = append(stmts, "USE "+quoteIdent(ap.c.dstDB(db)))
	}
	// A foreign key added to a table of another renamed database follows it.
	stmts = append(stmts, renameReferences(d.Stmt, ap.c.dstDB))
	for _, s := range stmts {
		if _, err := ap.w.ExecContext(ap.ctx, s); err != nil {
			return dbpilot.WrapError(dbpilot.ECONFLICT, err, "dbcopy: stopped at GTID %q: %s refused %q (from %s GTID %s)", ap.committed, ap.c.b.key, d.Stmt, ap.c.a.key, ap.curGTID)
		}
	}
	if _, err := ap.w.ExecContext(ap.ctx, "USE "+quoteIdent(metaDB)); err != nil {
		return fmt.Errorf("dbcopy: on %s: %w", ap.c.b.key, err)
	}
	for _, r := range d.Drop {
		delete(ap.c.tables, r)
	}
	for _, r := range d.Reload {
		t, err := loadTable(ap.ctx, ap.w, ap.c.dstDB(r.DB), r.Name)
		if err != nil {
			return err
		}
		if t == nil {
			delete(ap.c.tables, r)
			continue
		}
		if len(t.Key) == 0 {
			return ap.stopAt(stop(q, "leaves "+r.String()+" without a primary key or unique key of NOT NULL columns"))
		}
		t.SrcDB = r.DB
		ap.c.tables[r] = t
	}
	ap.c.res.DDL = append(ap.c.res.DDL, d.Stmt)
	ap.c.logf("applied on %s: %s", ap.c.b.key, firstWords(d.Stmt))
	if err := ap.sourceCommit(ev.Header.Timestamp); err != nil {
		return err
	}
	return ap.commit()
}

// stopAt ends the copy at a statement it cannot apply safely.
func (ap *applier) stopAt(d ddlDecision) error {
	ap.rollback()
	return dbpilot.Errorf(dbpilot.ECONFLICT, "dbcopy: stopped at GTID %q: %s (GTID %s) cannot be applied safely: %s: %s",
		ap.committed, ap.c.a.key, ap.curGTID, d.Reason, firstLine(d.Stmt))
}

func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		return s[:297] + "..."
	}
	return s
}

type rowsKind int

const (
	rowsInsert rowsKind = iota
	rowsUpdate
	rowsDelete
	rowsOther
)

func kindOf(t replication.EventType) rowsKind {
	switch t {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return rowsInsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return rowsUpdate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return rowsDelete
	}
	return rowsOther
}

func (ap *applier) rowsEvent(et replication.EventType, e *replication.RowsEvent) error {
	ref := tableRef{string(e.Table.Schema), string(e.Table.Table)}
	kind := kindOf(et)
	if ref.DB == metaDB && ref.Name == heartbeatTable {
		if kind == rowsInsert || kind == rowsUpdate {
			for i, row := range e.Rows {
				if kind == rowsUpdate && i%2 == 0 {
					continue
				}
				if len(row) >= 2 {
					if s, ok := row[1].(string); ok {
						if t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", s, time.UTC); err == nil {
							ap.pendingHB = append(ap.pendingHB, t)
						}
					}
				}
			}
		}
		return nil
	}
	t := ap.c.tables[ref]
	if t == nil {
		return nil
	}
	for _, skipped := range e.SkippedColumns {
		if len(skipped) > 0 {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "dbcopy: %s: a row event without full row images (binlog_row_image must be FULL); applied up to %q", t, ap.committed)
		}
	}
	var q string
	var err error
	switch kind {
	case rowsInsert:
		q, err = insertSQL(t, e.Rows)
		ap.pendingRows += int64(len(e.Rows))
	case rowsDelete:
		q, err = deleteSQL(t, e.Rows)
		ap.pendingRows += int64(len(e.Rows))
	case rowsUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			u, err := updateSQL(t, e.Rows[i], e.Rows[i+1])
			if err != nil {
				return err
			}
			ap.pendingRows++
			if u == "" {
				continue
			}
			if err := ap.exec(u); err != nil {
				return err
			}
		}
		return nil
	default:
		return dbpilot.Errorf(dbpilot.ECONFLICT, "dbcopy: %s: unsupported row event %s; applied up to %q", t, et, ap.committed)
	}
	if err != nil {
		return err
	}
	return ap.exec(q)
}

// caughtUp reports whether B has applied everything read so far, with the
// last transaction's lag under Options.CaughtUp.
func (ap *applier) caughtUp() bool {
	return !ap.caughtUpAt.IsZero() && len(ap.ch) == 0 && !ap.inTx && ap.pendingTx == 0 && ap.lastLag <= ap.c.opt.CaughtUp
}

// cutover advances the cut-over; true when it is complete.
func (ap *applier) cutover() (bool, error) {
	o := ap.c.opt
	if !o.Cutover {
		return false, nil
	}
	switch ap.cutState {
	case 0:
		if o.CutoverSignal != nil {
			select {
			case <-o.CutoverSignal:
			default:
				return false, nil
			}
		}
		if !ap.caughtUp() {
			return false, nil
		}
		ap.cutState = 1
		if o.SetReadOnly {
			ap.stopHB()
			if err := ap.c.a.db.Exec(ap.ctx, "SET GLOBAL read_only = ON"); err != nil {
				return false, fmt.Errorf("dbcopy: cut-over: set read_only on %s: %w", ap.c.a.key, err)
			}
			ap.roSet = true
			ap.c.logf("cut-over: read_only set on %s", ap.c.a.key)
		} else {
			ap.c.logf("cut-over: caught up; waiting for %s to be read_only", ap.c.a.key)
		}
		fallthrough
	case 1:
		if time.Since(ap.lastROCheck) < tick {
			return false, nil
		}
		ap.lastROCheck = time.Now()
		v, _, err := ap.c.a.db.QueryValue(ap.ctx, "SELECT @@GLOBAL.read_only")
		if err != nil {
			return false, fmt.Errorf("dbcopy: cut-over: read read_only on %s: %w", ap.c.a.key, err)
		}
		if v != "1" && !strings.EqualFold(v, "ON") {
			return false, nil
		}
		ap.stopHB()
		q := "SELECT @@GLOBAL.gtid_binlog_pos"
		if !ap.c.a.mariadb() {
			q = "SELECT @@GLOBAL.gtid_executed"
		}
		f, _, err := ap.c.a.db.QueryValue(ap.ctx, q)
		if err != nil {
			return false, fmt.Errorf("dbcopy: cut-over: read the final GTID position of %s: %w", ap.c.a.key, err)
		}
		ap.final = strings.ReplaceAll(strings.ReplaceAll(f, "\n", ""), " ", "")
		ap.cutState = 2
		ap.c.logf("cut-over: %s is read_only at GTID position %q; applying the rest", ap.c.a.key, ap.final)
		fallthrough
	case 2:
		if ap.inTx || ap.pendingTx > 0 {
			return false, nil
		}
		ok, err := ap.pos.reached(ap.final)
		if err != nil || !ok {
			return false, err
		}
		ap.cutState = 3
		ap.progress(true)
		return true, nil
	}
	return ap.cutState == 3, nil
}

// progress prints a line every ProgressInterval (force: now).
func (ap *applier) progress(force bool) {
	o := ap.c.opt
	if o.Progress == nil || (!force && time.Since(ap.lastProgress) < o.ProgressInterval) {
		return
	}
	el := time.Since(ap.lastProgress).Seconds()
	line := fmt.Sprintf("copy: GTID %s  lag %s  %.0f rows/s  %.0f tx/s  (applied %d rows, %d tx)",
		ap.committed, ap.lastLag.Round(time.Millisecond), float64(ap.rows-ap.lastRows)/el, float64(ap.txs-ap.lastTxs)/el, ap.rows, ap.txs)
	ap.lastProgress, ap.lastRows, ap.lastTxs = time.Now(), ap.rows, ap.txs
	if o.ProgressTTY {
		fmt.Fprint(o.Progress, "\r\033[K"+line)
	} else {
		fmt.Fprintln(o.Progress, line)
	}
}

func (ap *applier) finishStats() {
	if ap.c.opt.ProgressTTY && ap.c.opt.Progress != nil {
		fmt.Fprintln(ap.c.opt.Progress)
	}
	st := &ap.c.res.Apply
	st.Transactions, st.Rows = ap.txs, ap.rows
	st.Elapsed = time.Since(ap.started)
	if s := st.Elapsed.Seconds(); s > 0 {
		st.RowsPerSec, st.TxPerSec = float64(ap.rows)/s, float64(ap.txs)/s
	}
	if !ap.caughtUpAt.IsZero() {
		st.CatchUp = ap.caughtUpAt.Sub(ap.started)
	}
	h := ap.lagBinlog
	st.LagSource = "binlog"
	if ap.hbEnabled {
		h, st.LagSource = ap.lagHB, "heartbeat"
	}
	st.LagSamples = h.TotalCount()
	if h.TotalCount() > 0 {
		st.LagP50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
		st.LagP99 = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
		st.LagMax = time.Duration(h.Max()) * time.Microsecond
	}
	if ap.c.res.Cutover == nil && ap.final != "" {
		ap.c.res.Cutover = &CutoverResult{}
	}
	if ap.c.res.Cutover != nil {
		ap.c.res.Cutover.FinalGTID, ap.c.res.Cutover.SetReadOnly = ap.final, ap.roSet
	}
}

// startHeartbeat writes NOW(6) into dbpilot.copy_heartbeat on A every
// Options.Heartbeat until stopped.
func (c *copier) startHeartbeat(ctx context.Context) (func(), error) {
	tbl := quoteIdent(metaDB) + "." + heartbeatTable
	if err := c.a.db.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(metaDB),
		"CREATE TABLE IF NOT EXISTS "+tbl+" (target VARCHAR(255) NOT NULL PRIMARY KEY, ts DATETIME(6) NOT NULL) ENGINE=InnoDB"); err != nil {
		return nil, fmt.Errorf("dbcopy: --heartbeat: create %s on %s: %w", tbl, c.a.key, err)
	}
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.opt.Heartbeat)
		defer t.Stop()
		q := "INSERT INTO " + tbl + " (target, ts) VALUES (" + quoteString(c.b.key.String()) + ", UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE ts = UTC_TIMESTAMP(6)"
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				if err := c.a.db.Exec(hctx, q); err != nil && hctx.Err() == nil {
					c.opt.Log.Warn("heartbeat", "server", c.a.key.String(), "err", err)
				}
			}
		}
	}()
	var stopped bool
	return func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}, nil
}

// checksums compares CHECKSUM TABLE of every copied table on A and B.
func (c *copier) checksums(ctx context.Context, ap *applier) error {
	cr := c.res.Cutover
	if cr == nil {
		cr = &CutoverResult{FinalGTID: ap.final, SetReadOnly: ap.roSet}
		c.res.Cutover = cr
	}
	refs := make([]tableRef, 0, len(c.tables))
	for r := range c.tables {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(x, y tableRef) int { return strings.Compare(x.String(), y.String()) })
	for _, r := range refs {
		t := c.tables[r]
		sa, err := checksum(ctx, c.a.db.SQL(), t.src())
		if err != nil {
			return fmt.Errorf("dbcopy: CHECKSUM TABLE %s on %s: %w", r, c.a.key, err)
		}
		sb, err := checksum(ctx, c.b.db.SQL(), t.dst())
		if err != nil {
			return fmt.Errorf("dbcopy: CHECKSUM TABLE %s on %s: %w", t.DstDB+"."+t.Name, c.b.key, err)
		}
		ck := Checksum{Table: r.String(), Target: t.DstDB + "." + t.Name, Source: sa, Copy: sb, Equal: sa == sb}
		cr.Checksums = append(cr.Checksums, ck)
		if !ck.Equal {
			cr.Differ = append(cr.Differ, r.String())
		}
	}
	if len(cr.Differ) > 0 {
		return fmt.Errorf("dbcopy: after the cut-over at GTID %q, CHECKSUM TABLE differs for %s: %w", cr.FinalGTID, strings.Join(cr.Differ, ", "), ErrChecksumsDiffer)
	}
	c.logf("cut-over done at GTID position %q: %d tables, checksums equal", cr.FinalGTID, len(cr.Checksums))
	return nil
}

func checksum(ctx context.Context, db *sql.DB, name string) (string, error) {
	var n string
	var v sql.NullString
	if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+name).Scan(&n, &v); err != nil {
		return "", err
	}
	if !v.Valid {
		return "", errors.New("table not found")
	}
	return v.String, nil
}
