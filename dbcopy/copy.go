// Package dbcopy copies databases from one MySQL/MariaDB server to another
// and keeps the copy current until cut-over: a consistent bulk copy (one
// snapshot read by several connections, written straight into the target,
// no files), then change data capture from the source's binary log (ROW
// format) from the snapshot's GTID position onward, applied to the target
// as SQL by key, in transactions that end on the source's transaction
// boundaries — the job of AWS DMS or the RDS migration tools, reading the
// binary log the way gh-ost and Debezium do.
//
// The position reached is stored on the target in dbpilot.copy_position,
// in the same transaction as the rows it covers, so an interrupted copy
// resumes (Options.Resume) without losing or repeating a transaction.
package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/mysql"
)

// Options configures a copy.
type Options struct {
	// Filter selects the tables, with dump's semantics (--databases,
	// --include, --exclude). The dbpilot database is never copied.
	Filter backup.Filter
	// Rename maps source databases to target names (--rename-database).
	Rename map[string]string
	// Threads is the number of tables copied at once in the bulk phase;
	// default 4.
	Threads int
	// Resume continues from the position recorded on the target, skipping
	// the bulk copy.
	Resume bool
	// NoBinlog keeps the target's writes out of its binary log.
	NoBinlog bool
	// Cutover ends the copy: once the target has caught up (and after
	// CutoverSignal, when set), wait until the source is read_only (or set
	// it, with SetReadOnly), apply up to its final GTID position, and
	// compare CHECKSUM TABLE of every copied table.
	Cutover       bool
	SetReadOnly   bool
	CutoverSignal <-chan struct{}
	// CaughtUp is the lag under which the target counts as caught up for
	// the cut-over; default 2 s.
	CaughtUp time.Duration
	// Heartbeat, when positive, writes NOW(6) into dbpilot.copy_heartbeat
	// on the source at this interval; the lag is then measured with
	// microseconds from those rows instead of the binary log's whole
	// seconds (gh-ost's heartbeat).
	Heartbeat time.Duration
	// ServerID is the replica server id the binary log is read with;
	// default a random one in 1e9..2e9.
	ServerID uint32
	// MaxBatch bounds the source transactions applied in one target
	// transaction; default 200.
	MaxBatch int
	// Progress receives progress lines every ProgressInterval (default
	// 5 s; 1 s on a TTY, where one line is rewritten).
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	Log              *slog.Logger
	// OnBulkDone is called after the bulk copy with the snapshot's GTID
	// position (tests).
	OnBulkDone func(gtid string)
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	if o.Threads == 0 {
		o.Threads = 4
	}
	if o.Threads < 1 || o.Threads > 64 {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: --threads %d: want 1 to 64", o.Threads)
	}
	if o.SetReadOnly && !o.Cutover {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: --set-read-only goes with --cutover")
	}
	for from, to := range o.Rename {
		if from == "" || to == "" {
			return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: --rename-database %q:%q: want OLD:NEW", from, to)
		}
		if strings.EqualFold(to, metaDB) {
			return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: --rename-database: %s is dbpilot's own database on the target", to)
		}
	}
	if o.CaughtUp <= 0 {
		o.CaughtUp = 2 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 200
	}
	if o.ServerID == 0 {
		o.ServerID = 1_000_000_000 + rand.Uint32N(1_000_000_000)
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 5 * time.Second
		if o.ProgressTTY {
			o.ProgressInterval = time.Second
		}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Filter.Validate()
}

// metaDB is dbpilot's database on the target (copy_position) and, with
// Heartbeat, on the source.
const metaDB = "dbpilot"

// Result sums up a copy.
type Result struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Flavor string `json:"flavor"`
	// Tables are the copied tables, as db.table on the source.
	Tables []string    `json:"tables"`
	Bulk   *BulkResult `json:"bulk,omitempty"`
	// StartGTID is where change capture started (the snapshot's position,
	// or the recorded one with Resume); GTID the position reached: every
	// transaction up to it is applied on the target.
	StartGTID string    `json:"start_gtid"`
	GTID      string    `json:"gtid"`
	Apply     ApplyStat `json:"apply"`
	// DDL lists the statements applied on the target.
	DDL     []string       `json:"ddl,omitempty"`
	Cutover *CutoverResult `json:"cutover,omitempty"`
	// Stopped says why change capture ended: "cutover", "interrupted", or
	// the error.
	Stopped string `json:"stopped"`
}

// BulkResult sums up the bulk copy.
type BulkResult struct {
	Lock     string        `json:"lock"`
	LockHeld time.Duration `json:"lock_held_ns"`
	Tables   int           `json:"tables"`
	Rows     int64         `json:"rows"`
	Bytes    int64         `json:"bytes"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// ApplyStat sums up change capture.
type ApplyStat struct {
	Transactions int64         `json:"transactions"`
	Rows         int64         `json:"rows"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	RowsPerSec   float64       `json:"rows_per_sec"`
	TxPerSec     float64       `json:"tx_per_sec"`
	// CatchUp is the time change capture took to apply the backlog of
	// the bulk copy (or of the pause before --resume).
	CatchUp time.Duration `json:"catch_up_ns"`
	// Lag is the time from a transaction's commit on the source to its
	// commit on the target, once caught up; LagSource says how it was measured:
	// "heartbeat" (microseconds) or "binlog" (the events' whole seconds,
	// so up to 1 s more than the truth).
	LagSource  string        `json:"lag_source"`
	LagP50     time.Duration `json:"lag_p50_ns"`
	LagP99     time.Duration `json:"lag_p99_ns"`
	LagMax     time.Duration `json:"lag_max_ns"`
	LagSamples int64         `json:"lag_samples"`
}

// CutoverResult is the end of a copy.
type CutoverResult struct {
	SetReadOnly bool       `json:"set_read_only"`
	FinalGTID   string     `json:"final_gtid"`
	Checksums   []Checksum `json:"checksums"`
	// Differ names the tables whose checksums differ.
	Differ []string `json:"differ,omitempty"`
}

// Checksum is CHECKSUM TABLE of one table on both servers.
type Checksum struct {
	Table  string `json:"table"`  // source db.table
	Target string `json:"target"` // target db.table
	Source string `json:"source_checksum"`
	Copy   string `json:"target_checksum"`
	Equal  bool   `json:"equal"`
}

// ErrChecksumsDiffer is returned (wrapped) when the cut-over's checksums
// differ; the Result names the tables.
var ErrChecksumsDiffer = errors.New("checksums differ")

// server is one end of the copy.
type server struct {
	key     dbpilot.InstanceKey
	opts    mysql.Options
	db      *mysql.DB
	flavor  dbpilot.Flavor
	version dbpilot.Version
}

func (s *server) mariadb() bool { return s.flavor == dbpilot.FlavorMariaDB }

func (s *server) dialect() mysql.Dialect { return mysql.Dialect{Flavor: s.flavor, Version: s.version} }

func openServer(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options, conns int) (*server, error) {
	o := opts
	o.MaxConns = conns
	if o.QueryTimeout < time.Hour {
		o.QueryTimeout = 24 * time.Hour
	}
	db, err := mysql.Open(ctx, key, o)
	if err != nil {
		return nil, err
	}
	s := &server{key: key, opts: opts, db: db}
	r, err := db.Query(ctx, "SELECT @@version, @@version_comment")
	if err != nil {
		db.Close()
		return nil, err
	}
	s.flavor = mysql.DetectFlavor(mysql.Str(r.Values[0], 0), mysql.Str(r.Values[0], 1))
	if s.version, err = dbpilot.ParseVersion(mysql.Str(r.Values[0], 0)); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// variables reads global variables as a map; absent ones are "".
func (s *server) variables(ctx context.Context, names ...string) (map[string]string, error) {
	q := "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	r, err := s.db.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, row := range r.Values {
		out[strings.ToLower(mysql.Str(row, 0))] = mysql.Str(row, 1)
	}
	return out, nil
}

// checkSource refuses a source whose binary log cannot feed the copy: no
// binary log, a format other than ROW, or a row image other than FULL.
func checkSource(ctx context.Context, a *server) error {
	v, err := a.variables(ctx, "log_bin", "binlog_format", "binlog_row_image", "gtid_mode")
	if err != nil {
		return err
	}
	if lb := v["log_bin"]; lb != "ON" && lb != "1" {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s has no binary log (log_bin=%s); start it with log_bin, binlog_format=ROW", a.key, lb)
	}
	if f := v["binlog_format"]; !strings.EqualFold(f, "ROW") {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s has binlog_format=%s: dbpilot copy reads row events and needs ROW (SET GLOBAL binlog_format=ROW, and in the config file); nothing was copied", a.key, f)
	}
	if img := v["binlog_row_image"]; img != "" && !strings.EqualFold(img, "FULL") {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s has binlog_row_image=%s: dbpilot copy needs FULL row images (SET GLOBAL binlog_row_image=FULL); nothing was copied", a.key, img)
	}
	if !a.mariadb() && !strings.EqualFold(v["gtid_mode"], "ON") {
		return dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s has gtid_mode=%s: dbpilot copy follows MySQL by GTID and needs gtid_mode=ON", a.key, v["gtid_mode"])
	}
	return nil
}

// Copy copies the selected tables of A to B and applies A's changes until
// ctx is done or, with Cutover, until the cut-over. The Result is returned
// also with an error, as far as the copy got.
func Copy(ctx context.Context, from dbpilot.InstanceKey, fromOpts mysql.Options, to dbpilot.InstanceKey, toOpts mysql.Options, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if from == to {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: source and target are both %s", from)
	}
	a, err := openServer(ctx, from, fromOpts, opt.Threads+3)
	if err != nil {
		return nil, err
	}
	defer a.db.Close()
	b, err := openServer(ctx, to, toOpts, opt.Threads+3)
	if err != nil {
		return nil, err
	}
	defer b.db.Close()
	if err := checkSource(ctx, a); err != nil {
		return nil, err
	}
	if same, err := sameServer(ctx, a, b); err != nil {
		return nil, err
	} else if same {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: %s and %s are the same server", from, to)
	}
	c := &copier{a: a, b: b, opt: opt, res: &Result{Source: from.String(), Target: to.String(), Flavor: string(a.flavor)}}
	return c.res, c.run(ctx)
}

// sameServer compares server ids and the port both report.
func sameServer(ctx context.Context, a, b *server) (bool, error) {
	q := "SELECT CONCAT(@@server_id, ':', @@port, ':', @@hostname)"
	va, _, err := a.db.QueryValue(ctx, q)
	if err != nil {
		return false, err
	}
	vb, _, err := b.db.QueryValue(ctx, q)
	if err != nil {
		return false, err
	}
	return va == vb, nil
}

// copier is one run of Copy.
type copier struct {
	a, b   *server
	opt    Options
	res    *Result
	tables map[tableRef]*table
}

// dstDB is a source database's name on the target.
func (c *copier) dstDB(db string) string {
	if n, ok := c.opt.Rename[db]; ok {
		return n
	}
	return db
}

// selected reports whether the filters select db.name.
func (c *copier) selected(db, name string) bool {
	return !strings.EqualFold(db, metaDB) && c.opt.Filter.TableSelected(db, name)
}

func (c *copier) dbSelected(db string) bool {
	return !strings.EqualFold(db, metaDB) && c.opt.Filter.DatabaseSelected(db)
}

func (c *copier) scope() ddlScope {
	return ddlScope{
		Copied:     func(db, name string) bool { return c.tables[tableRef{db, name}] != nil },
		Selected:   c.selected,
		DBSelected: c.dbSelected,
		Rename:     c.dstDB,
	}
}

func (c *copier) logf(format string, args ...any) {
	if c.opt.Progress != nil {
		if c.opt.ProgressTTY {
			fmt.Fprint(c.opt.Progress, "\r\033[K")
		}
		fmt.Fprintf(c.opt.Progress, "copy: "+format+"\n", args...)
	}
}

func (c *copier) run(ctx context.Context) error {
	if err := c.prepareTarget(ctx); err != nil {
		return err
	}
	var start string
	if c.opt.Resume {
		pos, err := c.recordedPosition(ctx)
		if err != nil {
			return err
		}
		if pos == "" {
			return dbpilot.Errorf(dbpilot.ENOTFOUND, "dbcopy: --resume: %s records no copy from %s in %s.copy_position; start without --resume", c.b.key, c.a.key, metaDB)
		}
		// The copied tables are the target's: the source may have moved
		// on (a RENAME the copy stopped at must not look unrelated).
		refs, err := c.targetTables(ctx)
		if err != nil {
			return err
		}
		c.tables = map[tableRef]*table{}
		for _, r := range refs {
			t, err := loadTable(ctx, c.b.db.SQL(), c.dstDB(r.DB), r.Name)
			if err != nil {
				return err
			}
			if t == nil {
				return dbpilot.Errorf(dbpilot.ENOTFOUND, "dbcopy: --resume: %s has no table %s.%s (copy of %s)", c.b.key, c.dstDB(r.DB), r.Name, r)
			}
			t.SrcDB = r.DB
			c.tables[r] = t
		}
		start = pos
		c.logf("resuming from GTID position %q recorded on %s", pos, c.b.key)
	} else {
		pos, err := c.bulk(ctx)
		if err != nil {
			if c.res.Bulk != nil && c.res.Bulk.Tables > 0 {
				// Tables were created on B: say so, and how to start over.
				return fmt.Errorf("%w (the bulk copy did not finish: drop the copied tables on %s before copying again)", err, c.b.key)
			}
			return err
		}
		start = pos
		if c.opt.OnBulkDone != nil {
			c.opt.OnBulkDone(pos)
		}
	}
	for r := range c.tables {
		c.res.Tables = append(c.res.Tables, r.String())
	}
	slices.Sort(c.res.Tables)
	c.res.StartGTID, c.res.GTID = start, start
	return c.capture(ctx, start)
}

// prepareTarget creates dbpilot.copy_position on B.
func (c *copier) prepareTarget(ctx context.Context) error {
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + quoteIdent(metaDB),
		"CREATE TABLE IF NOT EXISTS " + quoteIdent(metaDB) + ".copy_position (" +
			"source VARCHAR(255) NOT NULL PRIMARY KEY, gtid TEXT NOT NULL, " +
			"updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
	}
	if err := c.b.db.Exec(ctx, stmts...); err != nil {
		return fmt.Errorf("dbcopy: create %s.copy_position on %s: %w", metaDB, c.b.key, err)
	}
	return nil
}

func (c *copier) recordedPosition(ctx context.Context) (string, error) {
	v, ok, err := c.b.db.QueryValue(ctx, "SELECT gtid FROM "+quoteIdent(metaDB)+".copy_position WHERE source = ?", c.a.key.String())
	if err != nil {
		return "", fmt.Errorf("dbcopy: read the recorded position on %s: %w", c.b.key, err)
	}
	if !ok {
		return "", nil
	}
	return v, nil
}

// positionSQL records pos on B (run in the transaction that applied it).
func (c *copier) positionSQL(pos string) string {
	return "INSERT INTO " + quoteIdent(metaDB) + ".copy_position (source, gtid) VALUES (" + quoteString(c.a.key.String()) + ", " +
		quoteString(pos) + ") ON DUPLICATE KEY UPDATE gtid = VALUES(gtid)"
}

// sourceTables lists A's base tables the filters select.
func (c *copier) sourceTables(ctx context.Context) ([]tableRef, error) {
	r, err := c.a.db.Query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "+
		"AND TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys') ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return nil, fmt.Errorf("dbcopy: list tables on %s: %w", c.a.key, err)
	}
	var out []tableRef
	for _, row := range r.Values {
		db, name := mysql.Str(row, 0), mysql.Str(row, 1)
		if c.selected(db, name) {
			out = append(out, tableRef{db, name})
		}
	}
	if len(out) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "dbcopy: no table of %s matches the filters", c.a.key)
	}
	return out, nil
}

// targetTables lists the tables of B that are copies of A's tables the
// filters select, by their names on A.
func (c *copier) targetTables(ctx context.Context) ([]tableRef, error) {
	srcOf := map[string]string{}
	for from, to := range c.opt.Rename {
		srcOf[to] = from
	}
	r, err := c.b.db.Query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "+
		"AND TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys') ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return nil, fmt.Errorf("dbcopy: list tables on %s: %w", c.b.key, err)
	}
	var out []tableRef
	for _, row := range r.Values {
		db, name := mysql.Str(row, 0), mysql.Str(row, 1)
		src, renamed := srcOf[db]
		if !renamed {
			if _, moved := c.opt.Rename[db]; moved {
				continue // a database of the same name as a renamed source
			}
			src = db
		}
		if c.selected(src, name) {
			out = append(out, tableRef{src, name})
		}
	}
	if len(out) == 0 {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "dbcopy: --resume: %s has no copied table the filters select", c.b.key)
	}
	return out, nil
}

// querier is a *sql.DB or *sql.Conn.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// loadTable reads a table's columns and key from information_schema; nil
// when the table does not exist.
func loadTable(ctx context.Context, q querier, db, name string) (*table, error) {
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, LOWER(DATA_TYPE), IFNULL(CHARACTER_SET_NAME, ''), LOWER(COLUMN_TYPE), "+
		"IS_NULLABLE, IFNULL(EXTRA, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", db, name)
	if err != nil {
		return nil, fmt.Errorf("dbcopy: read the columns of %s.%s: %w", db, name, err)
	}
	t := &table{SrcDB: db, DstDB: db, Name: name}
	nullable := map[string]bool{}
	for rows.Next() {
		var col column
		var colType, isNull, extra string
		if err := rows.Scan(&col.Name, &col.DataType, &col.Charset, &colType, &isNull, &extra); err != nil {
			rows.Close()
			return nil, fmt.Errorf("dbcopy: read the columns of %s.%s: %w", db, name, err)
		}
		col.Unsigned = strings.Contains(colType, "unsigned")
		extra = strings.ToUpper(extra)
		col.Generated = strings.Contains(extra, "GENERATED") || strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "PERSISTENT") || strings.Contains(extra, "STORED")
		nullable[col.Name] = isNull == "YES"
		t.Cols = append(t.Cols, col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dbcopy: read the columns of %s.%s: %w", db, name, err)
	}
	if len(t.Cols) == 0 {
		return nil, nil
	}
	rows, err = q.QueryContext(ctx, "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? "+
		"AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX", db, name)
	if err != nil {
		return nil, fmt.Errorf("dbcopy: read the keys of %s.%s: %w", db, name, err)
	}
	type idx struct {
		name string
		cols []string
		ok   bool
	}
	var order []*idx
	byName := map[string]*idx{}
	for rows.Next() {
		var iname, cname string
		var sub sql.NullInt64
		if err := rows.Scan(&iname, &cname, &sub); err != nil {
			rows.Close()
			return nil, fmt.Errorf("dbcopy: read the keys of %s.%s: %w", db, name, err)
		}
		ix := byName[iname]
		if ix == nil {
			ix = &idx{name: iname, ok: true}
			byName[iname] = ix
			order = append(order, ix)
		}
		ix.cols = append(ix.cols, cname)
		if nullable[cname] || sub.Valid {
			ix.ok = false
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dbcopy: read the keys of %s.%s: %w", db, name, err)
	}
	for _, ix := range order {
		if !ix.ok {
			continue
		}
		for _, cn := range ix.cols {
			for i := range t.Cols {
				if t.Cols[i].Name == cn {
					t.Key = append(t.Key, i)
				}
			}
		}
		t.KeyName = ix.name
		break
	}
	return t, nil
}
