package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"golang.org/x/sync/errgroup"
)

// bulkStatementBytes is the size at which a bulk INSERT is sent.
const bulkStatementBytes = 1 << 20

// snapshotSessionSQL prepares a bulk read session on A: values arrive as
// the bytes stored (character_set_results=binary), TIMESTAMPs in UTC.
var snapshotSessionSQL = []string{
	"SET NAMES utf8mb4",
	"SET SESSION character_set_results = binary",
	"SET SESSION time_zone = '+00:00'",
	"SET SESSION net_write_timeout = 600, net_read_timeout = 600, wait_timeout = 28800",
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}

// targetSessionSQL prepares a session that writes on B.
func targetSessionSQL(noBinlog bool) []string {
	s := []string{
		"SET NAMES utf8mb4",
		"SET SESSION time_zone = '+00:00'",
		"SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'",
		"SET SESSION foreign_key_checks = 0",
		"SET SESSION net_read_timeout = 600, net_write_timeout = 600, wait_timeout = 28800",
	}
	if noBinlog {
		s = append(s, "SET SESSION sql_log_bin = 0")
	}
	return s
}

func execAll(ctx context.Context, conn *sql.Conn, stmts ...string) error {
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstWords(s), err)
		}
	}
	return nil
}

// firstWords shortens a statement for messages.
func firstWords(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// bulkTable is one table of the bulk copy.
type bulkTable struct {
	t      *table
	create string // SHOW CREATE TABLE on A
}

// bulk copies the selected tables from one consistent snapshot of A and
// returns the snapshot's GTID position.
func (c *copier) bulk(ctx context.Context) (string, error) {
	started := time.Now()
	refs, err := c.sourceTables(ctx)
	if err != nil {
		return "", err
	}
	if err := c.checkBulk(ctx, refs); err != nil {
		return "", err
	}

	snaps, err := c.snapshotSessions(ctx, min(c.opt.Threads, len(refs)))
	defer func() {
		for _, s := range snaps {
			s.Close()
		}
	}()
	if err != nil {
		return "", err
	}
	tables, pos, err := c.snapshot(ctx, refs, snaps)
	if err != nil {
		return "", err
	}
	c.res.Bulk.Tables = len(tables)
	c.logf("snapshot of %d tables at GTID position %q (%s held %s)", len(tables), pos, c.res.Bulk.Lock, c.res.Bulk.LockHeld.Round(time.Microsecond))

	// Schemas on B.
	ctl, err := c.b.db.SQL().Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("dbcopy: connect to %s: %w", c.b.key, err)
	}
	defer ctl.Close()
	if err := execAll(ctx, ctl, targetSessionSQL(c.opt.NoBinlog)...); err != nil {
		return "", fmt.Errorf("dbcopy: prepare a session on %s: %w", c.b.key, err)
	}
	if err := c.createSchemas(ctx, ctl, tables); err != nil {
		return "", err
	}

	rows, bytes, err := c.copyData(ctx, snaps, tables)
	if err != nil {
		return "", err
	}
	for _, s := range snaps {
		_, _ = s.ExecContext(ctx, "COMMIT")
	}
	c.res.Bulk.Rows, c.res.Bulk.Bytes, c.res.Bulk.Elapsed = rows, bytes, time.Since(started)
	c.tables = map[tableRef]*table{}
	for _, bt := range tables {
		c.tables[tableRef{bt.t.SrcDB, bt.t.Name}] = bt.t
	}
	// The position is recorded last: a copy interrupted before cannot be
	// resumed (its tables are there, so a new copy refuses until they are
	// dropped).
	if err := execAll(ctx, ctl, c.positionSQL(pos)); err != nil {
		return "", fmt.Errorf("dbcopy: record the position on %s: %w", c.b.key, err)
	}
	c.logf("bulk copy done: %d tables, %d rows, %.1f MB in %s", len(tables), c.res.Bulk.Rows, float64(c.res.Bulk.Bytes)/1e6, c.res.Bulk.Elapsed.Round(time.Millisecond))
	return pos, nil
}

// checkBulk refuses before anything is copied: keyless tables, tables that
// exist on B, a copy already recorded on B.
func (c *copier) checkBulk(ctx context.Context, refs []tableRef) error {
	var keyless, existing []string
	for _, r := range refs {
		t, err := loadTable(ctx, c.a.db.SQL(), r.DB, r.Name)
		if err != nil {
			return err
		}
		if t != nil && len(t.Key) == 0 {
			keyless = append(keyless, r.String())
		}
		bt, err := loadTable(ctx, c.b.db.SQL(), c.dstDB(r.DB), r.Name)
		if err != nil {
			return err
		}
		if bt != nil {
			existing = append(existing, c.dstDB(r.DB)+"."+r.Name)
		}
	}
	if len(keyless) > 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s: no primary key or unique key of NOT NULL columns, which changes are applied by; add one or leave the table out with --exclude", strings.Join(keyless, ", "))
	}
	if len(existing) > 0 {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "dbcopy: %s exists on %s already: drop it or copy into another database (--rename-database)", strings.Join(existing, ", "), c.b.key)
	}
	if pos, err := c.recordedPosition(ctx); err != nil {
		return err
	} else if pos != "" {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "dbcopy: %s records a copy from %s already (at %q): continue it with --resume, or delete its row from %s.copy_position", c.b.key, c.a.key, pos, metaDB)
	}
	return nil
}

// snapshotSessions opens n sessions on A ready for a snapshot. On an error
// it returns the sessions opened so far with it, for the caller to close.
func (c *copier) snapshotSessions(ctx context.Context, n int) ([]*sql.Conn, error) {
	var snaps []*sql.Conn
	for range n {
		s, err := c.a.db.SQL().Conn(ctx)
		if err != nil {
			return snaps, fmt.Errorf("dbcopy: connect to %s: %w", c.a.key, err)
		}
		snaps = append(snaps, s)
		if err := execAll(ctx, s, snapshotSessionSQL...); err != nil {
			return snaps, fmt.Errorf("dbcopy: prepare a session on %s: %w", c.a.key, err)
		}
	}
	return snaps, nil
}

// createSchemas creates the tables' databases (with A's character set and
// collation) and the tables on B, through the session ctl.
func (c *copier) createSchemas(ctx context.Context, ctl *sql.Conn, tables []*bulkTable) error {
	made := map[string]bool{}
	for _, bt := range tables {
		if !made[bt.t.DstDB] {
			cs, _, err := c.a.db.QueryValue(ctx, "SELECT CONCAT('CHARACTER SET ', DEFAULT_CHARACTER_SET_NAME, ' COLLATE ', DEFAULT_COLLATION_NAME) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", bt.t.SrcDB)
			if err != nil {
				return err
			}
			if err := execAll(ctx, ctl, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(bt.t.DstDB)+" "+cs); err != nil {
				return fmt.Errorf("dbcopy: on %s: %w", c.b.key, err)
			}
			made[bt.t.DstDB] = true
		}
		if err := execAll(ctx, ctl, "USE "+quoteIdent(bt.t.DstDB), bt.create); err != nil {
			return fmt.Errorf("dbcopy: create %s on %s: %w", bt.t.dst(), c.b.key, err)
		}
	}
	return nil
}

// copyData copies the tables' rows, one table per snapshot session at a
// time, each with its own session on B, and returns the rows and bytes
// copied.
func (c *copier) copyData(ctx context.Context, snaps []*sql.Conn, tables []*bulkTable) (int64, int64, error) {
	jobs := make(chan *bulkTable)
	var rows, bytes atomic.Int64
	stopProgress := c.bulkProgress(&rows, len(tables))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		for _, bt := range tables {
			select {
			case jobs <- bt:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for _, s := range snaps {
		g.Go(func() error {
			w, err := c.b.db.SQL().Conn(gctx)
			if err != nil {
				return fmt.Errorf("dbcopy: connect to %s: %w", c.b.key, err)
			}
			defer w.Close()
			if err := execAll(gctx, w, targetSessionSQL(c.opt.NoBinlog)...); err != nil {
				return fmt.Errorf("dbcopy: prepare a session on %s: %w", c.b.key, err)
			}
			if err := execAll(gctx, w, "SET SESSION unique_checks = 0"); err != nil {
				return err
			}
			for bt := range jobs {
				if err := c.copyTable(gctx, s, w, bt.t, &rows, &bytes); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	stopProgress()
	return rows.Load(), bytes.Load(), err
}

// snapshot opens a consistent snapshot on every session while the
// server's consistency lock is held, reads the GTID position and the
// tables' definitions under it, and releases it.
func (c *copier) snapshot(ctx context.Context, refs []tableRef, snaps []*sql.Conn) ([]*bulkTable, string, error) {
	ctl, err := c.a.db.SQL().Conn(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("dbcopy: connect to %s: %w", c.a.key, err)
	}
	defer ctl.Close()
	lock := c.a.dialect().ConsistencyLock()
	c.res.Bulk = &BulkResult{Lock: lock.Kind}
	if err := execAll(ctx, ctl, "SET SESSION lock_wait_timeout = 60"); err != nil {
		return nil, "", err
	}
	if err := execAll(ctx, ctl, lock.Take...); err != nil {
		return nil, "", fmt.Errorf("dbcopy: could not take %s on %s (it needs the RELOAD privilege; a long query or transaction may hold it off): %w", lock.Kind, c.a.key, err)
	}
	locked := time.Now()
	defer func() {
		_, _ = ctl.ExecContext(context.WithoutCancel(ctx), lock.Release)
		c.res.Bulk.LockHeld = time.Since(locked)
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(snaps))
	for i, s := range snaps {
		wg.Go(func() { errs[i] = execAll(ctx, s, "START TRANSACTION WITH CONSISTENT SNAPSHOT") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("dbcopy: open snapshots on %s: %w", c.a.key, err)
	}
	q := "SELECT @@GLOBAL.gtid_binlog_pos"
	if !c.a.mariadb() {
		q = "SELECT @@GLOBAL.gtid_executed"
	}
	var pos string
	if err := ctl.QueryRowContext(ctx, q).Scan(&pos); err != nil {
		return nil, "", fmt.Errorf("dbcopy: read the GTID position of %s: %w", c.a.key, err)
	}
	pos = strings.ReplaceAll(strings.ReplaceAll(pos, "\n", ""), " ", "")
	var out []*bulkTable
	for _, r := range refs {
		t, err := loadTable(ctx, ctl, r.DB, r.Name)
		if err != nil {
			return nil, "", err
		}
		if t == nil {
			continue // dropped since listed
		}
		if len(t.Key) == 0 {
			return nil, "", dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s: no primary key or unique key of NOT NULL columns", r)
		}
		var name, create string
		if err := ctl.QueryRowContext(ctx, "SHOW CREATE TABLE "+t.src()).Scan(&name, &create); err != nil {
			return nil, "", fmt.Errorf("dbcopy: SHOW CREATE TABLE %s on %s: %w", r, c.a.key, err)
		}
		t.DstDB = c.dstDB(r.DB)
		// A foreign key to a table of another database follows that
		// database's --rename-database.
		create = renameReferences(create, c.dstDB)
		out = append(out, &bulkTable{t: t, create: create})
	}
	return out, pos, nil
}

// copyTable streams one table from the snapshot session src into B
// through w, in multi-row INSERTs of about bulkStatementBytes; the reads of
// the next statement overlap the write of the previous one.
func (c *copier) copyTable(ctx context.Context, src, w *sql.Conn, t *table, rowCount, byteCount *atomic.Int64) error {
	var cols []int
	var names, exprs []string
	for i, col := range t.Cols {
		if !col.Generated {
			cols = append(cols, i)
			names = append(names, quoteIdent(col.Name))
			exprs = append(exprs, selectExpr(&col))
		}
	}
	head := "INSERT INTO " + t.dst() + " (" + strings.Join(names, ",") + ") VALUES "
	stmts := make(chan string, 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for s := range stmts {
			if _, err := w.ExecContext(gctx, s); err != nil {
				return fmt.Errorf("dbcopy: copy %s into %s on %s: %w", t, t.dst(), c.b.key, err)
			}
		}
		return nil
	})
	g.Go(func() error {
		defer close(stmts)
		rows, err := src.QueryContext(gctx, "SELECT "+strings.Join(exprs, ",")+" FROM "+t.src())
		if err != nil {
			return fmt.Errorf("dbcopy: read %s on %s: %w", t, c.a.key, err)
		}
		defer rows.Close()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var b strings.Builder
		var n int64
		flush := func() error {
			if n == 0 {
				return nil
			}
			s := b.String()
			select {
			case stmts <- s:
			case <-gctx.Done():
				return gctx.Err()
			}
			rowCount.Add(n)
			byteCount.Add(int64(len(s)))
			b.Reset()
			n = 0
			return nil
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return fmt.Errorf("dbcopy: read %s on %s: %w", t, c.a.key, err)
			}
			if n == 0 {
				b.WriteString(head)
			} else {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			for i, ci := range cols {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(textLiteral(&t.Cols[ci], vals[i]))
			}
			b.WriteByte(')')
			n++
			if b.Len() >= bulkStatementBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("dbcopy: read %s on %s: %w", t, c.a.key, err)
		}
		return flush()
	})
	return g.Wait()
}

// bulkProgress prints the rows copied every ProgressInterval.
func (c *copier) bulkProgress(rows *atomic.Int64, tables int) (stop func()) {
	if c.opt.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(c.opt.ProgressInterval)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r := rows.Load()
				line := fmt.Sprintf("copy: bulk %d tables: %d rows, %.0f rows/s", tables, r, float64(r)/time.Since(start).Seconds())
				if c.opt.ProgressTTY {
					fmt.Fprint(c.opt.Progress, "\r\033[K"+line)
				} else {
					fmt.Fprintln(c.opt.Progress, line)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if c.opt.ProgressTTY {
			fmt.Fprint(c.opt.Progress, "\r\033[K")
		}
	}
}

// selectExpr is the expression a column is read with in the bulk copy:
// FLOAT as a double, whose text has enough digits to give back the same
// FLOAT (the server prints FLOAT itself with 6 digits only).
func selectExpr(c *column) string {
	if c.DataType == "float" {
		return "CONCAT(" + quoteIdent(c.Name) + " + 0e0)"
	}
	return quoteIdent(c.Name)
}
