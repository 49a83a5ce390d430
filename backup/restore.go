package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
	driver "github.com/go-sql-driver/mysql"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"
)

// RestoreOptions configures a restore.
type RestoreOptions struct {
	Dir       string
	Threads   int      // default 4
	Databases []string // only these databases of the dump
	// Resume continues an interrupted restore: chunks recorded in DIR's
	// progress file are skipped, every other chunk's rows are deleted and
	// loaded again in one transaction, so nothing is lost or doubled.
	Resume bool
	// DropExisting drops tables, views, routines and events of the dump
	// that exist on the target; without it, existing tables are refused.
	DropExisting bool
	// SetGTIDPosition sets the target's replication position to the dump's
	// (MariaDB gtid_slave_pos, MySQL gtid_purged); implies NoBinlog.
	SetGTIDPosition bool
	// NoBinlog keeps the restore out of the target's binary log
	// (sql_log_bin=0).
	NoBinlog bool
	// DeferIndexes creates non-unique secondary indexes after a table's
	// data is loaded (a sorted build instead of row-by-row inserts).
	DeferIndexes bool
	// Users restores the dump's accounts and grants.
	Users            bool
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	// OnChunk is called after each chunk is committed (tests).
	OnChunk func(*Table, *Chunk)
}

// RestoreResult sums up a restore.
type RestoreResult struct {
	Target   string        `json:"target"`
	Tables   int           `json:"tables"`
	Chunks   int           `json:"chunks"`
	Skipped  int           `json:"chunks_skipped"` // already done (--resume)
	Rows     int64         `json:"rows"`
	Bytes    int64         `json:"bytes"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	GTIDSet  string        `json:"gtid_position_set,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
}

// Validate checks the options and fills defaults.
func (o *RestoreOptions) Validate() error {
	if o.Dir == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: name the dump directory to restore")
	}
	if o.Threads == 0 {
		o.Threads = defaultThreads
	}
	if o.Threads < 1 || o.Threads > 64 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --threads %d: want 1 to 64", o.Threads)
	}
	if o.Resume && o.DropExisting {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --resume and --drop-existing exclude each other")
	}
	if o.SetGTIDPosition {
		o.NoBinlog = true
	}
	return nil
}

// restoreSessionSQL prepares a restore session. Data arrives as raw bytes
// (LOAD DATA ... CHARACTER SET binary); TIMESTAMPs were dumped in UTC.
func restoreSessionSQL(noBinlog bool) []string {
	s := []string{
		"SET NAMES utf8mb4",
		"SET SESSION time_zone = '+00:00'",
		"SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
		"SET SESSION foreign_key_checks = 0, unique_checks = 0",
		// Chunks of one table load side by side; READ COMMITTED takes no
		// gap locks, which would make them deadlock.
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
		"SET SESSION net_read_timeout = 600, net_write_timeout = 600, wait_timeout = 28800",
	}
	if noBinlog {
		s = append(s, "SET SESSION sql_log_bin = 0")
	}
	return s
}

// progressLog is the restore's record of committed work in DIR.
type progressLog struct {
	mu   sync.Mutex
	f    *os.File
	done map[string]bool
}

func openProgressLog(dir string, resume bool, target string) (*progressLog, error) {
	path := filepath.Join(dir, ProgressFile)
	pl := &progressLog{done: map[string]bool{}}
	header := "target " + target
	if resume {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: read %s", path)
		default:
			lines := strings.Split(string(b), "\n")
			if len(lines) > 0 && lines[0] != "" && lines[0] != header {
				return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "backup: %s records a restore to %s, not %s; restore without --resume", path, strings.TrimPrefix(lines[0], "target "), target)
			}
			for _, l := range lines[1:] {
				if l != "" {
					pl.done[l] = true
				}
			}
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !resume {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: open %s", path)
	}
	pl.f = f
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		if err := pl.record(header); err != nil {
			f.Close()
			return nil, err
		}
	}
	return pl, nil
}

func (p *progressLog) has(entry string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[entry]
}

func (p *progressLog) record(entry string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.f.WriteString(entry + "\n"); err != nil {
		return fmt.Errorf("backup: record progress: %w", err)
	}
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("backup: record progress: %w", err)
	}
	p.done[entry] = true
	return nil
}

func (p *progressLog) close() { p.f.Close() }

// Restore loads the dump in opt.Dir into the server at key: schema first,
// then the data chunks in parallel (each chunk in one transaction, its file
// checksum checked while it streams; a mismatch rolls the chunk back), then
// routines, views, triggers and events.
func Restore(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt RestoreOptions) (*RestoreResult, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	m, err := ReadManifest(opt.Dir)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r := &restoreRun{key: key, opt: opt, m: m, res: &RestoreResult{Target: key.String()}, deferred: map[*Table][]string{}}
	if r.tables, r.dbs, err = selectForRestore(m, opt.Databases); err != nil {
		return nil, err
	}
	sessions, closeAll, err := openSessions(ctx, key, conn, opt.Threads+1)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	r.ctl, r.workers = sessions[0], sessions[1:]
	if err := r.prepare(ctx, sessions); err != nil {
		return nil, err
	}
	defer r.plog.close()
	if err := restoreSchema(ctx, r.ctl, opt, r.tables, r.dbs, r.deferred); err != nil {
		return nil, err
	}
	if err := r.loadData(ctx); err != nil {
		return nil, err
	}
	if err := r.objects(ctx); err != nil {
		return nil, err
	}
	return r.finish(ctx, start)
}

// restoreRun is one restore in progress: the control session checks the
// target and creates the schema and the objects; the workers load chunks.
type restoreRun struct {
	key     dbpilot.InstanceKey
	opt     RestoreOptions
	m       *Manifest
	res     *RestoreResult
	tables  []*Table
	dbs     []Database
	ctl     *session
	workers []*session
	srv     Server
	plog    *progressLog
	// deferred are the secondary indexes a table gets once its data is in
	// (--defer-indexes).
	deferred map[*Table][]string
}

// prepare sets up the sessions, identifies the target, refuses a target
// that cannot take the dump, and opens the progress log.
func (r *restoreRun) prepare(ctx context.Context, sessions []*session) error {
	for _, s := range sessions {
		if err := s.exec(ctx, "prepare session", restoreSessionSQL(r.opt.NoBinlog)...); err != nil {
			return err
		}
	}
	srv, _, err := readServer(ctx, r.ctl)
	if err != nil {
		return err
	}
	r.srv = srv
	if srv.Flavor != r.m.Server.Flavor {
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("dump of %s %s restored into %s %s", r.m.Server.Flavor, r.m.Server.Version, srv.Flavor, srv.Version))
	}
	if r.opt.SetGTIDPosition {
		if err := checkCanSetPosition(ctx, r.ctl, srv, r.m); err != nil {
			return err
		}
	}
	if !r.opt.Resume && !r.opt.DropExisting {
		if err := refuseExisting(ctx, r.ctl, r.tables, r.dbs); err != nil {
			return err
		}
	}
	r.plog, err = openProgressLog(r.opt.Dir, r.opt.Resume, r.key.String())
	return err
}

// loadData loads every chunk the progress log does not record, in
// parallel, each in one transaction; a table gets its deferred indexes once
// its last chunk is in. The first failure stops the other workers and is
// returned.
func (r *restoreRun) loadData(ctx context.Context) error {
	prog := newProgress("restore", r.opt.Progress, r.opt.ProgressTTY, r.opt.ProgressInterval)
	var jobs []job
	left := map[*Table]*atomic.Int64{}
	for _, t := range r.tables {
		n := &atomic.Int64{}
		left[t] = n
		for _, c := range t.Chunks {
			if r.plog.has("chunk " + c.File) {
				r.res.Skipped++
				continue
			}
			jobs = append(jobs, job{t, c})
			n.Add(1)
			prog.estRows.Add(c.Rows)
		}
		prog.tablesAll.Add(1)
	}
	prog.chunksAll.Store(int64(len(jobs)))
	prog.run()
	defer prog.halt()
	// Tables without chunks left need only their deferred indexes.
	for _, t := range r.tables {
		if left[t].Load() == 0 {
			if err := r.finishTable(ctx, r.ctl, t, prog); err != nil {
				return err
			}
		}
	}
	sched := newScheduler(jobs)
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range r.workers {
		g.Go(func() error { return r.loadChunks(gctx, s, sched, left, prog) })
	}
	err := g.Wait()
	prog.halt()
	if ctx.Err() != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, ctx.Err(), "backup: restore into %s interrupted (continue with --resume)", r.key)
	}
	if err != nil {
		return err
	}
	prog.finish()
	return nil
}

// loadChunks is a worker: it loads the chunks the scheduler hands it on its
// session, records each in the progress log, and finishes the table whose
// last chunk it loaded.
func (r *restoreRun) loadChunks(ctx context.Context, s *session, sched *scheduler, left map[*Table]*atomic.Int64, prog *progress) error {
	l := newChunkLoader(r.m.Compression)
	defer l.close()
	for ctx.Err() == nil {
		j, ok := sched.next()
		if !ok {
			return nil
		}
		err := l.load(ctx, s, r.opt.Dir, j.t, j.c, r.opt.Resume, prog)
		sched.done(j)
		if err != nil {
			return err
		}
		if err := r.plog.record("chunk " + j.c.File); err != nil {
			return err
		}
		if r.opt.OnChunk != nil {
			r.opt.OnChunk(j.t, j.c)
		}
		if left[j.t].Add(-1) == 0 {
			if err := r.finishTable(ctx, s, j.t, prog); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishTable builds a table's deferred indexes, unless the progress log
// records them, and counts the table done.
func (r *restoreRun) finishTable(ctx context.Context, s *session, t *Table, prog *progress) error {
	if adds := r.deferred[t]; len(adds) > 0 && !r.plog.has("indexes "+t.String()) {
		if err := s.exec(ctx, "add indexes to "+t.String(), addIndexSQL(t, adds)...); err != nil {
			return err
		}
		if err := r.plog.record("indexes " + t.String()); err != nil {
			return err
		}
	}
	prog.tables.Add(1)
	return nil
}

// objects creates the objects that need the tables and their data —
// routines, views, triggers, events, accounts — unless the progress log
// records that an interrupted run did.
func (r *restoreRun) objects(ctx context.Context) error {
	if r.plog.has("objects") {
		return nil
	}
	if err := restoreObjects(ctx, r.ctl, r.opt, r.m, r.dbs); err != nil {
		return err
	}
	return r.plog.record("objects")
}

// finish sets the replication position (--set-gtid-position) and sums up.
func (r *restoreRun) finish(ctx context.Context, start time.Time) (*RestoreResult, error) {
	res := r.res
	if r.opt.SetGTIDPosition {
		if err := setPosition(ctx, r.ctl, r.srv, r.m.Position.GTID); err != nil {
			return nil, err
		}
		res.GTIDSet = r.m.Position.GTID
	}
	for _, t := range r.tables {
		res.Tables++
		res.Chunks += len(t.Chunks)
		res.Rows += t.Rows
		res.Bytes += t.Bytes
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// selectForRestore picks the tables and databases to restore.
func selectForRestore(m *Manifest, only []string) ([]*Table, []Database, error) {
	want := map[string]bool{}
	for _, d := range only {
		want[d] = true
	}
	var dbs []Database
	found := map[string]bool{}
	for _, d := range m.Databases {
		if len(want) == 0 || want[d.Name] {
			dbs = append(dbs, d)
			found[d.Name] = true
		}
	}
	for _, d := range only {
		if !found[d] {
			return nil, nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "backup: database %q is not in the dump", d)
		}
	}
	keep := map[string]bool{}
	for _, d := range dbs {
		keep[d.Name] = true
	}
	var tables []*Table
	for _, t := range m.Tables {
		if keep[t.DB] {
			tables = append(tables, t)
		}
	}
	return tables, dbs, nil
}

// refuseExisting fails when a table or view of the dump exists on the
// target.
func refuseExisting(ctx context.Context, s *session, tables []*Table, dbs []Database) error {
	if len(dbs) == 0 {
		return nil
	}
	names := make([]string, 0, len(dbs))
	for _, d := range dbs {
		names = append(names, d.Name)
	}
	rows, _, err := s.query(ctx, "list existing tables", "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ("+inList(names)+")")
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, r := range rows {
		exists[str(r[0])+"."+str(r[1])] = true
	}
	var clash []string
	for _, t := range tables {
		if exists[t.String()] {
			clash = append(clash, t.String())
		}
	}
	for _, d := range dbs {
		for _, v := range d.ViewNames {
			if exists[d.Name+"."+v] {
				clash = append(clash, d.Name+"."+v)
			}
		}
	}
	if len(clash) > 0 {
		more := ""
		if len(clash) > 3 {
			more = fmt.Sprintf(" and %d more", len(clash)-3)
			clash = clash[:3]
		}
		return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: %s already exist%s on %s; restore with --drop-existing to replace them, or --resume to continue an interrupted restore",
			strings.Join(clash, ", ")+more, plural(len(clash)+len(more)), s.key)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// restoreSchema creates databases and tables (and sequences).
func restoreSchema(ctx context.Context, s *session, opt RestoreOptions, tables []*Table, dbs []Database, deferred map[*Table][]string) error {
	for _, d := range dbs {
		stmts, err := readStatements(opt.Dir, d.SchemaFile)
		if err != nil {
			return err
		}
		if err := s.exec(ctx, "create database "+d.Name, stmts...); err != nil {
			return err
		}
		if opt.DropExisting {
			for _, v := range d.ViewNames {
				if err := s.exec(ctx, "drop view", "DROP VIEW IF EXISTS "+QuoteIdent(d.Name)+"."+QuoteIdent(v)); err != nil {
					return err
				}
			}
		}
	}
	for _, t := range tables {
		stmts, err := readStatements(opt.Dir, t.SchemaFile)
		if err != nil {
			return err
		}
		if len(stmts) == 0 {
			return dbpilot.Errorf(dbpilot.EINVALID, "backup: %s: empty schema file %s", t, t.SchemaFile)
		}
		create := stmts[0]
		if opt.DeferIndexes && !t.Sequence {
			var adds []string
			create, adds = splitSecondaryIndexes(create)
			if len(adds) > 0 {
				deferred[t] = adds
			}
		}
		if opt.Resume {
			var n string
			var ok bool
			n, ok, err = s.value(ctx, "check table", "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", t.DB, t.Name)
			if err != nil {
				return err
			}
			if ok && n == "1" {
				continue // created by the interrupted run
			}
		}
		if opt.DropExisting {
			if err := s.exec(ctx, "drop table", "DROP TABLE IF EXISTS "+t.QualifiedName()); err != nil {
				return err
			}
		}
		if err := s.exec(ctx, "use database", "USE "+QuoteIdent(t.DB)); err != nil {
			return err
		}
		if err := s.exec(ctx, "create table "+t.String(), create); err != nil {
			return err
		}
		if err := s.exec(ctx, "set up sequence "+t.String(), stmts[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// restoreObjects creates routines, views, triggers, events and, with
// --users, accounts.
func restoreObjects(ctx context.Context, s *session, opt RestoreOptions, m *Manifest, dbs []Database) error {
	replace := opt.DropExisting || opt.Resume
	for _, d := range dbs {
		qdb := QuoteIdent(d.Name)
		if err := s.exec(ctx, "use database", "USE "+qdb); err != nil {
			return err
		}
		if replace {
			var drops []string
			for _, r := range d.RoutineNames {
				if typ, name, ok := strings.Cut(r, " "); ok {
					drops = append(drops, "DROP "+typ+" IF EXISTS "+qdb+"."+QuoteIdent(name))
				}
			}
			for _, v := range d.ViewNames {
				drops = append(drops, "DROP VIEW IF EXISTS "+qdb+"."+QuoteIdent(v))
			}
			for _, tr := range d.TriggerNames {
				drops = append(drops, "DROP TRIGGER IF EXISTS "+qdb+"."+QuoteIdent(tr))
			}
			for _, e := range d.EventNames {
				drops = append(drops, "DROP EVENT IF EXISTS "+qdb+"."+QuoteIdent(e))
			}
			if err := s.exec(ctx, "replace objects of "+d.Name, drops...); err != nil {
				return err
			}
		}
		for _, f := range []struct{ file, what string }{{d.Routines, "routines"}, {d.Views, "views"}, {d.Triggers, "triggers"}, {d.Events, "events"}} {
			if f.file == "" {
				continue
			}
			stmts, err := readStatements(opt.Dir, f.file)
			if err != nil {
				return err
			}
			if f.what == "views" {
				err = createViews(ctx, s, stmts)
			} else {
				err = s.exec(ctx, "create "+f.what+" of "+d.Name, stmts...)
			}
			if err != nil {
				return err
			}
		}
	}
	if opt.Users && m.Users != "" {
		stmts, err := readStatements(opt.Dir, m.Users)
		if err != nil {
			return err
		}
		if err := s.exec(ctx, "create users", stmts...); err != nil {
			return err
		}
	}
	return s.exec(ctx, "reset session", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'")
}

// createViews creates views in rounds, so that a view on another view is
// created after it. Each view comes as a group of statements (session
// settings, CREATE, reset).
func createViews(ctx context.Context, s *session, stmts []string) error {
	var groups [][]string
	var cur []string
	for _, st := range stmts {
		cur = append(cur, st)
		if strings.HasPrefix(st, "SET SESSION sql_mode = DEFAULT") {
			groups = append(groups, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	for len(groups) > 0 {
		var retry [][]string
		var lastErr error
		for _, g := range groups {
			if err := s.exec(ctx, "create view", g...); err != nil {
				if mysql.ServerErrorNumber(err) == mysql.ErNoSuchTable {
					retry = append(retry, g)
					lastErr = err
					continue
				}
				return err
			}
		}
		if len(retry) == len(groups) {
			return lastErr
		}
		groups = retry
	}
	return nil
}

// checkCanSetPosition refuses --set-gtid-position where it cannot work.
func checkCanSetPosition(ctx context.Context, s *session, srv Server, m *Manifest) error {
	if srv.Flavor.IsMySQLFamily() != m.Server.Flavor.IsMySQLFamily() {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "backup: --set-gtid-position: the dump's GTIDs are %s GTIDs and %s is %s", m.Server.Flavor, s.key, srv.Flavor)
	}
	if m.Position.GTID == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --set-gtid-position: the dump recorded no GTID position (binary log or GTIDs off on %s)", m.Server.Address)
	}
	d := srv.dialect()
	if d.MariaDB() {
		rows, _, err := s.query(ctx, "check replication", d.ShowReplicaStatusSQL())
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: --set-gtid-position: %s has replication configured; stop and reset it first (RESET SLAVE ALL)", s.key)
		}
		// Transactions in the target's own binary log that the dump's
		// position does not cover would be errant on a replica (and the
		// server refuses such a gtid_slave_pos, error 1947).
		st, err := readGTIDState(ctx, s, d, "read gtid_binlog_pos")
		if err != nil {
			return err
		}
		own := st.BinlogPos
		ownList, err1 := gtid.ParseMariaList(own)
		dumpList, err2 := gtid.ParseMariaList(m.Position.GTID)
		if err1 == nil && err2 == nil && !dumpList.Contains(ownList) {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: --set-gtid-position: %s has transactions of its own in its binary log (gtid_binlog_pos %s) that the dump's position %s lacks; they would be errant on a replica — use a fresh server or RESET MASTER on it first", s.key, own, m.Position.GTID)
		}
		return nil
	}
	st, err := readGTIDState(ctx, s, d, "check gtid_executed")
	if err != nil {
		return err
	}
	if v := st.Executed; v != "" && d.SetGTIDPositionNeedsEmptyState() {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: --set-gtid-position: %s already has gtid_executed %q; MySQL %s can only set gtid_purged on an empty GTID state (RESET MASTER)", s.key, v, srv.Version)
	}
	return nil
}

// setPosition sets the target's replication start position: MariaDB
// gtid_slave_pos (CHANGE MASTER ... MASTER_USE_GTID=slave_pos starts
// there), MySQL gtid_purged (8.0+: added with the + form).
func setPosition(ctx context.Context, s *session, srv Server, pos string) error {
	return s.exec(ctx, "set the replication position", srv.dialect().SetGTIDPositionSQL(pos))
}

// chunkLoader is a worker's reusable input machinery.
type chunkLoader struct {
	compress string
	zr       *zstd.Decoder
	crc      hash.Hash32
	buf      *bufio.Reader
}

func newChunkLoader(compress string) *chunkLoader {
	l := &chunkLoader{compress: compress, crc: crc32.New(crc32.MakeTable(crc32.Castagnoli)), buf: bufio.NewReaderSize(nil, workerBufSize)}
	if compress == "zstd" {
		l.zr, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(64<<20))
	}
	return l
}

func (l *chunkLoader) close() {
	if l.zr != nil {
		l.zr.Close()
	}
}

// checkedReader reads a chunk file and, at its end, checks size and CRC
// against the manifest.
type checkedReader struct {
	eof  bool
	r    io.Reader
	crc  hash.Hash32
	n    int64
	want *Chunk
	path string
}

// ErrCorrupt marks a data file whose checksum does not match the manifest.
var ErrCorrupt = errors.New("checksum mismatch")

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.eof {
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
		if cerr := c.check(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

func (c *checkedReader) check() error {
	if c.n != c.want.FileSize || c.crc.Sum32() != c.want.FileCRC {
		return dbpilot.WrapError(dbpilot.EINVALID, ErrCorrupt, "backup: %s is corrupt: %d bytes with CRC-32C %08x, the manifest says %d bytes with %08x", c.path, c.n, c.crc.Sum32(), c.want.FileSize, c.want.FileCRC)
	}
	return nil
}

// finish reads whatever the decompressor left unread and checks the file.
func (c *checkedReader) finish() error {
	if !c.eof {
		if _, err := io.Copy(io.Discard, c); err != nil {
			return err
		}
	}
	return c.check()
}

// countingReader counts uncompressed bytes for progress.
type countingReader struct {
	r    io.Reader
	prog *progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.prog.bytes.Add(int64(n))
	return n, err
}

var readerSeq atomic.Int64

// loadSQL is the LOAD DATA statement for a table's chunk from reader name.
func loadSQL(t *Table, name string) string {
	cols := make([]string, len(t.Columns))
	var sets []string
	for i, c := range t.Columns {
		if c.Load == "" {
			cols[i] = QuoteIdent(c.Name)
			continue
		}
		v := fmt.Sprintf("@dbp_v%d", i)
		cols[i] = v
		sets = append(sets, QuoteIdent(c.Name)+" = "+strings.ReplaceAll(c.Load, "@v", v))
	}
	q := "LOAD DATA LOCAL INFILE " + quoteString("Reader::"+name) + " INTO TABLE " + t.QualifiedName() +
		" CHARACTER SET binary " + LoadFormat + " (" + strings.Join(cols, ", ") + ")"
	if len(sets) > 0 {
		q += " SET " + strings.Join(sets, ", ")
	}
	return q
}

// load loads one chunk in one transaction, retrying a few times when the
// server picks it as a deadlock victim or its lock wait times out.
func (l *chunkLoader) load(ctx context.Context, s *session, dir string, t *Table, c *Chunk, resume bool, prog *progress) error {
	for attempt := 1; ; attempt++ {
		before := prog.bytes.Load()
		err := l.loadOnce(ctx, s, dir, t, c, resume, prog)
		n := mysql.ServerErrorNumber(err)
		if err == nil || (n != 1213 && n != 1205) || attempt == 5 || ctx.Err() != nil {
			return err
		}
		prog.bytes.Add(before - prog.bytes.Load())
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
	}
}

// loadOnce loads one chunk in one transaction. With resume, the chunk's
// rows are deleted first in the same transaction (an interrupted run may
// have committed it without recording it).
func (l *chunkLoader) loadOnce(ctx context.Context, s *session, dir string, t *Table, c *Chunk, resume bool, prog *progress) error {
	path := filepath.Join(dir, c.File)
	f, err := os.Open(path)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: open chunk of %s", t)
	}
	defer f.Close()
	l.crc.Reset()
	cr := &checkedReader{r: f, crc: l.crc, want: c, path: path}
	var r io.Reader = cr
	if l.zr != nil {
		if err := l.zr.Reset(r); err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, corrupt(err), "backup: %s is corrupt", path)
		}
		r = &decodeReader{r: l.zr, path: path}
	}
	l.buf.Reset(r)
	data := &countingReader{r: l.buf, prog: prog}
	name := fmt.Sprintf("dbpilot-%d", readerSeq.Add(1))
	driver.RegisterReaderHandler(name, func() io.Reader { return data })
	defer driver.DeregisterReaderHandler(name)

	if err := s.exec(ctx, "begin", "START TRANSACTION"); err != nil {
		return err
	}
	rollback := func() { _ = s.exec(context.WithoutCancel(ctx), "rollback", "ROLLBACK") }
	if resume {
		del := "DELETE FROM " + t.QualifiedName()
		if c.Where != "" {
			del += " WHERE " + c.Where
		}
		if _, err := s.conn.ExecContext(ctx, del); err != nil {
			rollback()
			return s.fail("clear chunk "+filepath.Base(c.File)+" of "+t.String(), err)
		}
	}
	r2, err := s.conn.ExecContext(ctx, loadSQL(t, name))
	if err != nil {
		rollback()
		if errors.Is(err, ErrCorrupt) {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: load %s into %s (nothing of this chunk was committed)", filepath.Base(c.File), t)
		}
		if n := mysql.ServerErrorNumber(err); n == 1148 || n == 3948 {
			return dbpilot.WrapError(dbpilot.EUNSUPPORTED, err, "backup: %s refuses LOAD DATA LOCAL: enable it with SET GLOBAL local_infile = 1", s.key)
		}
		return s.fail("load "+filepath.Base(c.File)+" into "+t.String(), err)
	}
	if err := cr.finish(); err != nil {
		rollback()
		return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: load %s into %s (nothing of this chunk was committed)", filepath.Base(c.File), t)
	}
	if n, _ := r2.RowsAffected(); n != c.Rows {
		rollback()
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: load %s into %s: %d rows loaded, the manifest says %d; rolled back", filepath.Base(c.File), t, n, c.Rows)
	}
	if err := s.exec(ctx, "commit", "COMMIT"); err != nil {
		return err
	}
	prog.rows.Add(c.Rows)
	prog.chunks.Add(1)
	return nil
}

// job is one chunk to load.
type job struct {
	t *Table
	c *Chunk
}

// scheduler hands out chunks so that workers load different tables: rows
// inserted side by side into one table contend on its indexes and gain
// nothing, while different tables load in parallel. Only when every table
// with chunks left is busy does a second worker join one (the big table's
// tail).
type scheduler struct {
	mu     sync.Mutex
	queues [][]job // per table, in manifest order (largest first)
	active []int
	index  map[*Table]int
}

func newScheduler(jobs []job) *scheduler {
	s := &scheduler{index: map[*Table]int{}}
	for _, j := range jobs {
		i, ok := s.index[j.t]
		if !ok {
			i = len(s.queues)
			s.index[j.t] = i
			s.queues = append(s.queues, nil)
			s.active = append(s.active, 0)
		}
		s.queues[i] = append(s.queues[i], j)
	}
	return s
}

func (s *scheduler) next() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := -1
	for i, q := range s.queues {
		if len(q) == 0 {
			continue
		}
		if best < 0 || s.active[i] < s.active[best] || (s.active[i] == s.active[best] && bigger(q, s.queues[best])) {
			best = i
		}
	}
	if best < 0 {
		return job{}, false
	}
	j := s.queues[best][0]
	s.queues[best] = s.queues[best][1:]
	s.active[best]++
	return j, true
}

// bigger reports whether queue a should go before b: its next chunk is
// larger (a table that cannot be split is one big chunk and must not be
// left for the end), then it has more left.
func bigger(a, b []job) bool {
	if a[0].c.Bytes != b[0].c.Bytes {
		return a[0].c.Bytes > b[0].c.Bytes
	}
	return len(a) > len(b)
}

func (s *scheduler) done(j job) {
	s.mu.Lock()
	s.active[s.index[j.t]]--
	s.mu.Unlock()
}

// addIndexSQL builds deferred indexes: one ALTER TABLE for the plain ones
// (one sorted pass), and one per FULLTEXT index (InnoDB builds only one at
// a time).
func addIndexSQL(t *Table, adds []string) []string {
	var plain, out []string
	for _, a := range adds {
		if strings.HasPrefix(a, "ADD FULLTEXT") {
			out = append(out, "ALTER TABLE "+t.QualifiedName()+" "+a)
			continue
		}
		plain = append(plain, a)
	}
	if len(plain) > 0 {
		out = append([]string{"ALTER TABLE " + t.QualifiedName() + " " + strings.Join(plain, ", ")}, out...)
	}
	return out
}

// corrupt marks err as a corruption unless it already is one.
func corrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// decodeReader turns decompression errors into corruption errors naming
// the file (the decoder may fail before the file's own CRC is checked).
type decodeReader struct {
	r    io.Reader
	path string
}

func (d *decodeReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, ErrCorrupt) {
		var de *dbpilot.Error
		if !errors.As(err, &de) {
			err = dbpilot.WrapError(dbpilot.EINVALID, corrupt(err), "backup: %s is corrupt", d.path)
		}
	}
	return n, err
}
