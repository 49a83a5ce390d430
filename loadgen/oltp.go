package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// sysbench's OLTP workloads, as sysbench 1.0's oltp_*.lua scripts run them
// with their default options, so that results can be set side by side with
// sysbench's and a dataset prepared by `sysbench oltp_read_write prepare`
// can be run as it is (and the other way round).
//
// Schema: tables sbtest1..sbtestN, each
//
//	CREATE TABLE sbtestN (
//	  id INTEGER NOT NULL AUTO_INCREMENT,
//	  k INTEGER DEFAULT '0' NOT NULL,
//	  c CHAR(120) DEFAULT '' NOT NULL,
//	  pad CHAR(60) DEFAULT '' NOT NULL,
//	  PRIMARY KEY (id)) ENGINE=InnoDB
//
// loaded with table_size rows (id 1..table_size, k uniform in
// [1, table_size], c and pad random digits in groups of 11 separated by
// '-'), then the secondary index k_N on k, built after the load as
// sysbench does.
//
// Transactions (sysbench's defaults: point_selects=10, simple_ranges=1,
// sum_ranges=1, order_ranges=1, distinct_ranges=1, index_updates=1,
// non_index_updates=1, delete_inserts=1, range_size=100), each statement
// group on a table chosen uniformly, ids uniform in [1, table_size]
// (sysbench --rand-type=uniform):
//
//	oltp_point_select  one point select, no BEGIN/COMMIT
//	oltp_read_only     BEGIN, point selects, ranges, COMMIT
//	oltp_read_write    BEGIN, point selects, ranges, updates, delete+insert, COMMIT
//	oltp_write_only    BEGIN, updates, delete+insert, COMMIT
//	oltp_insert        one INSERT of a new row (auto-increment id)
//
// Write transactions of a run with a Ledger also insert their ledger id
// before COMMIT (oltp_insert then runs inside BEGIN/COMMIT).

// oltpKind is one of the oltp_* workloads.
type oltpKind int

const (
	oltpPointSelect oltpKind = iota
	oltpReadOnly
	oltpReadWrite
	oltpWriteOnly
	oltpInsert
)

// oltpNames are the workloads' names, by kind.
var oltpNames = []string{
	oltpPointSelect: "oltp_point_select",
	oltpReadOnly:    "oltp_read_only",
	oltpReadWrite:   "oltp_read_write",
	oltpWriteOnly:   "oltp_write_only",
	oltpInsert:      "oltp_insert",
}

// sysbench's defaults for the statement mix of a transaction.
const (
	sbPointSelects    = 10
	sbSimpleRanges    = 1
	sbSumRanges       = 1
	sbOrderRanges     = 1
	sbDistinctRanges  = 1
	sbIndexUpdates    = 1
	sbNonIndexUpdates = 1
	sbDeleteInserts   = 1
	sbRangeSize       = 100
)

// Prepare defaults, as sysbench's and this package's.
const (
	defaultTables    = 1
	defaultTableSize = 10000
	defaultParallel  = 4
	// sbInsertBatch is the number of rows of one INSERT while preparing.
	sbInsertBatch = 1000
)

// OLTP is one of sysbench's oltp_* workloads. Its clients pick tables and
// ids within the size it was prepared with or configured to (Configure);
// by default sysbench's: 1 table of 10000 rows.
type OLTP struct {
	kind oltpKind

	mu        sync.Mutex
	tables    int
	tableSize int
}

// newOLTP returns the oltp_* workload of kind with sysbench's default size.
func newOLTP(kind oltpKind) *OLTP {
	return &OLTP{kind: kind, tables: defaultTables, tableSize: defaultTableSize}
}

// Name is the workload's name (oltp_read_write, ...).
func (w *OLTP) Name() string { return oltpNames[w.kind] }

// Ops has one operation, the workload's transaction, named as the workload.
func (w *OLTP) Ops() []string { return []string{w.Name()} }

// writes reports whether the workload's transactions write.
func (w *OLTP) writes() bool {
	return w.kind == oltpReadWrite || w.kind == oltpWriteOnly || w.kind == oltpInsert
}

// Configure sets the number of tables and rows per table that clients
// choose from (sysbench's --tables and --table-size of a run); zero
// fields keep their current value. Prepare configures the workload too.
func (w *OLTP) Configure(opt PrepareOptions) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if opt.Tables > 0 {
		w.tables = opt.Tables
	}
	if opt.TableSize > 0 {
		w.tableSize = opt.TableSize
	}
}

// Detect counts the tables sbtest1, sbtest2, ... present in db's current
// database and takes MAX(id) of sbtest1 as the rows per table, then
// configures the workload with them. It fails when sbtest1 is missing
// or empty.
func (w *OLTP) Detect(ctx context.Context, db *sql.DB) (PrepareOptions, error) {
	dbName, err := currentDatabase(ctx, db)
	if err != nil {
		return PrepareOptions{}, err
	}
	var opt PrepareOptions
	for {
		ok, err := tableExists(ctx, db, sbTable(opt.Tables+1))
		if err != nil {
			return PrepareOptions{}, err
		}
		if !ok {
			break
		}
		opt.Tables++
	}
	if opt.Tables == 0 {
		return PrepareOptions{}, fmt.Errorf("bench: no table sbtest1 in %s; run prepare first", dbName)
	}
	if opt.TableSize, err = maxID(ctx, db, sbTable(1)); err != nil {
		return PrepareOptions{}, err
	}
	if opt.TableSize == 0 {
		return PrepareOptions{}, fmt.Errorf("bench: table sbtest1 in %s is empty; run prepare first", dbName)
	}
	w.Configure(opt)
	return opt, nil
}

// size returns the configured tables and rows per table.
func (w *OLTP) size() (tables, tableSize int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tables, w.tableSize
}

// oltpFamily are the workloads sharing the sbtest tables: prepare by one,
// run and clean up by any.
func oltpFamily() []string { return append([]string(nil), oltpNames...) }

// sbTable names table n (1-based).
func sbTable(n int) string { return "sbtest" + strconv.Itoa(n) }

// Prepare creates sbtest1..sbtestN and loads them with opt.Parallel
// connections (one table per connection at a time, INSERTs of 1000 rows),
// then builds each table's index on k. It refuses tables that exist
// unless opt.Force, and records each table it creates in the marker table.
func (w *OLTP) Prepare(ctx context.Context, db *sql.DB, opt PrepareOptions) error {
	opt = opt.withDefaults()
	w.Configure(opt)
	dbName, err := currentDatabase(ctx, db)
	if err != nil {
		return err
	}
	names := make([]string, opt.Tables)
	for i := range names {
		names[i] = sbTable(i + 1)
	}
	if err := checkTables(ctx, db, dbName, names, opt.Force); err != nil {
		return err
	}
	if err := ensureMarker(ctx, db); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.Parallel)
	for i := 1; i <= opt.Tables; i++ {
		g.Go(func() error {
			return w.prepareTable(gctx, db, i, opt.TableSize, uint64(i))
		})
	}
	return g.Wait()
}

// prepareTable creates, records and loads sbtest<n>, then indexes k.
func (w *OLTP) prepareTable(ctx context.Context, db *sql.DB, n, size int, seed uint64) error {
	table := sbTable(n)
	create := "CREATE TABLE " + table + " (" +
		"id INTEGER NOT NULL AUTO_INCREMENT, " +
		"k INTEGER DEFAULT '0' NOT NULL, " +
		"c CHAR(120) DEFAULT '' NOT NULL, " +
		"pad CHAR(60) DEFAULT '' NOT NULL, " +
		"PRIMARY KEY (id)) ENGINE=InnoDB"
	if _, err := execTimeout(ctx, db, ddlTimeout, create); err != nil {
		return fmt.Errorf("bench prepare: create %s: %w", table, err)
	}
	if err := MarkTable(ctx, db, w.Name(), table); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	var b strings.Builder
	for first := 1; first <= size; first += sbInsertBatch {
		last := min(first+sbInsertBatch-1, size)
		b.Reset()
		b.WriteString("INSERT INTO " + table + " (id, k, c, pad) VALUES ")
		for id := first; id <= last; id++ {
			if id > first {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			b.WriteString(strconv.Itoa(id))
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(1 + rng.IntN(size)))
			b.WriteString(",'")
			b.WriteString(sbCValue(rng))
			b.WriteString("','")
			b.WriteString(sbPadValue(rng))
			b.WriteString("')")
		}
		if _, err := execTimeout(ctx, db, loadTimeout, b.String()); err != nil {
			return fmt.Errorf("bench prepare: load %s: %w", table, err)
		}
	}
	if _, err := execTimeout(ctx, db, loadTimeout, fmt.Sprintf("CREATE INDEX k_%d ON %s (k)", n, table)); err != nil {
		return fmt.Errorf("bench prepare: index %s: %w", table, err)
	}
	return nil
}

// Cleanup drops the sbtest tables the marker table lists for an oltp_*
// workload (whichever of them prepared), and nothing else.
func (w *OLTP) Cleanup(ctx context.Context, db *sql.DB) error {
	return cleanupFamily(ctx, db, oltpFamily())
}

// NewClient returns a client choosing tables and ids with a generator
// seeded by seed.
func (w *OLTP) NewClient(seed int64) Client {
	tables, size := w.size()
	c := &oltpClient{
		kind:      w.kind,
		write:     w.writes(),
		tables:    tables,
		tableSize: size,
		rng:       rand.New(rand.NewPCG(uint64(seed), 0x5b5b_5b5b_0a0a_0a0a)),
		sql:       make([]sbStatements, tables+1),
	}
	for n := 1; n <= tables; n++ {
		c.sql[n] = newSBStatements(sbTable(n))
	}
	return c
}

// sbStatements are the statements of one sbtest table, built once per
// client rather than per transaction.
type sbStatements struct {
	pointSelect, simpleRange, sumRange, orderRange, distinctRange string
	indexUpdate, nonIndexUpdate, delete, insert, insertAuto       string
}

func newSBStatements(t string) sbStatements {
	return sbStatements{
		pointSelect:    "SELECT c FROM " + t + " WHERE id=?",
		simpleRange:    "SELECT c FROM " + t + " WHERE id BETWEEN ? AND ?",
		sumRange:       "SELECT SUM(k) FROM " + t + " WHERE id BETWEEN ? AND ?",
		orderRange:     "SELECT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c",
		distinctRange:  "SELECT DISTINCT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c",
		indexUpdate:    "UPDATE " + t + " SET k=k+1 WHERE id=?",
		nonIndexUpdate: "UPDATE " + t + " SET c=? WHERE id=?",
		delete:         "DELETE FROM " + t + " WHERE id=?",
		insert:         "INSERT INTO " + t + " (id, k, c, pad) VALUES (?, ?, ?, ?)",
		insertAuto:     "INSERT INTO " + t + " (k, c, pad) VALUES (?, ?, ?)",
	}
}

// oltpClient is one connection's client of an oltp_* workload.
type oltpClient struct {
	kind      oltpKind
	write     bool
	tables    int
	tableSize int
	rng       *rand.Rand
	sql       []sbStatements // by table number
	buf       []stmt         // the transaction being generated, reused
}

// Next returns the one operation; it writes for read_write, write_only
// and insert.
func (c *oltpClient) Next() (int, bool) { return 0, c.write }

// Run executes one transaction on conn.
func (c *oltpClient) Run(ctx context.Context, conn Conn, op int, ledger *Ledger) error {
	if op != 0 {
		return fmt.Errorf("bench: %s has no operation %d", oltpNames[c.kind], op)
	}
	id := ledgerID(ledger, c.write)
	if err := runStatements(ctx, conn, c.statements(id)); err != nil {
		return err
	}
	ledger.Ack(id)
	return nil
}

// table picks a table uniformly, as sysbench's get_table_num, and returns
// its statements.
func (c *oltpClient) table() *sbStatements { return &c.sql[1+c.rng.IntN(c.tables)] }

// id picks a row id uniformly in [1, table_size].
func (c *oltpClient) id() int { return 1 + c.rng.IntN(c.tableSize) }

// statements generates one transaction; ledger, when not 0, is the ledger
// id the transaction records before COMMIT. The slice is reused by the
// next call.
func (c *oltpClient) statements(ledger uint64) []stmt {
	s := c.buf[:0]
	defer func() { c.buf = s[:0] }()
	switch c.kind {
	case oltpPointSelect:
		t := c.table()
		s = append(s, stmt{sql: t.pointSelect, args: []any{c.id()}, query: true})
		return s
	case oltpInsert:
		t := c.table()
		ins := stmt{sql: t.insertAuto, args: []any{c.id(), sbCValue(c.rng), sbPadValue(c.rng)}}
		if ledger == 0 {
			s = append(s, ins)
			return s
		}
		s = append(s, stmt{sql: "BEGIN"}, ins, stmt{sql: InsertSQL(ledger)}, stmt{sql: "COMMIT"})
		return s
	}
	s = append(s, stmt{sql: "BEGIN"})
	if c.kind == oltpReadOnly || c.kind == oltpReadWrite {
		s = c.reads(s)
	}
	if c.kind == oltpWriteOnly || c.kind == oltpReadWrite {
		s = c.writes(s)
	}
	if ledger != 0 {
		s = append(s, stmt{sql: InsertSQL(ledger)})
	}
	s = append(s, stmt{sql: "COMMIT"})
	return s
}

// reads appends the read statements of a transaction: point selects, then
// the four kinds of range, each group on its own table.
func (c *oltpClient) reads(s []stmt) []stmt {
	t := c.table()
	for range sbPointSelects {
		s = append(s, stmt{sql: t.pointSelect, args: []any{c.id()}, query: true})
	}
	for _, r := range []struct {
		sql func(*sbStatements) string
		n   int
	}{
		{func(t *sbStatements) string { return t.simpleRange }, sbSimpleRanges},
		{func(t *sbStatements) string { return t.sumRange }, sbSumRanges},
		{func(t *sbStatements) string { return t.orderRange }, sbOrderRanges},
		{func(t *sbStatements) string { return t.distinctRange }, sbDistinctRanges},
	} {
		t := c.table()
		for range r.n {
			id := c.id()
			s = append(s, stmt{sql: r.sql(t), args: []any{id, id + sbRangeSize - 1}, query: true})
		}
	}
	return s
}

// writes appends the write statements of a transaction: index updates,
// non-index updates, then delete+insert of the same id.
func (c *oltpClient) writes(s []stmt) []stmt {
	t := c.table()
	for range sbIndexUpdates {
		s = append(s, stmt{sql: t.indexUpdate, args: []any{c.id()}})
	}
	t = c.table()
	for range sbNonIndexUpdates {
		s = append(s, stmt{sql: t.nonIndexUpdate, args: []any{sbCValue(c.rng), c.id()}})
	}
	t = c.table()
	for range sbDeleteInserts {
		id, k := c.id(), c.id()
		s = append(s,
			stmt{sql: t.delete, args: []any{id}},
			stmt{sql: t.insert, args: []any{id, k, sbCValue(c.rng), sbPadValue(c.rng)}})
	}
	return s
}

// sbDigits returns groups of 11 random digits separated by '-', as
// sysbench's "###########-###########..." templates.
func sbDigits(rng *rand.Rand, groups int) string {
	b := make([]byte, 0, groups*12)
	for g := range groups {
		if g > 0 {
			b = append(b, '-')
		}
		v := rng.Uint64N(100_000_000_000) // 11 digits
		var d [11]byte
		for i := 10; i >= 0; i-- {
			d[i] = byte('0' + v%10)
			v /= 10
		}
		b = append(b, d[:]...)
	}
	return string(b)
}

// sbCValue is a value of column c: 10 groups, 119 characters.
func sbCValue(rng *rand.Rand) string { return sbDigits(rng, 10) }

// sbPadValue is a value of column pad: 5 groups, 59 characters.
func sbPadValue(rng *rand.Rand) string { return sbDigits(rng, 5) }
