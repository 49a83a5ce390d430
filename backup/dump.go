package backup

import (
	"bufio"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/internal/fastzstd"
	"github.com/dbpilot/dbpilot/mysql"
	"golang.org/x/sync/errgroup"
)

// DumpOptions configures a dump.
type DumpOptions struct {
	Out       string
	Threads   int    // worker connections; default 4
	ChunkRows int64  // target rows per chunk; default 100000
	Compress  string // "zstd" (default) or "none"
	Filter    Filter
	Where     map[string]string // "db.table" → condition, one SQL expression (see ParseWhere)
	NoData    bool
	Users     bool
	// LockWaitTimeout bounds the wait for the consistency lock; default 60 s.
	LockWaitTimeout time.Duration
	// Progress, when set, receives progress lines; on a terminal (TTY) one
	// line is rewritten in place.
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	Tool             string // "dbpilot VERSION", recorded in the manifest
	// OnChunk is called after each chunk file is complete (tests).
	OnChunk func(*Table, *Chunk)
	// OnLocked is called while the consistency lock is held, once the
	// snapshots are open and before the position is read (tests).
	OnLocked func()

	// Desync sets wsrep_desync=ON on a Galera node while the snapshots are
	// taken and OFF as soon as they are open (also when the dump fails or
	// is interrupted), and samples the node's receive queue and flow
	// control until the queue has drained (desync.go). A server that is not
	// a Galera node is refused.
	Desync bool
	// DesyncWait bounds the wait, after the dump, for the receive queue to
	// drain; default 1 minute.
	DesyncWait time.Duration
	// DesyncInterval is the sampling interval; default 100 ms.
	DesyncInterval time.Duration
	// OnDesync receives the desync report when the desync was turned on,
	// after the dump (also a failed one).
	OnDesync func(DesyncReport)
}

const (
	defaultThreads   = 4
	defaultChunkRows = 100_000
	workerBufSize    = 256 << 10
)

// Validate checks the options and fills defaults.
func (o *DumpOptions) Validate() error {
	if o.Out == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: name the output directory with --out DIR")
	}
	if o.Threads == 0 {
		o.Threads = defaultThreads
	}
	if o.Threads < 1 || o.Threads > 64 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --threads %d: want 1 to 64", o.Threads)
	}
	if o.ChunkRows == 0 {
		o.ChunkRows = defaultChunkRows
	}
	if o.ChunkRows < 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --chunk-rows %d: want a positive number", o.ChunkRows)
	}
	switch o.Compress {
	case "":
		o.Compress = "zstd"
	case "zstd", "none":
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --compress %q: want zstd or none", o.Compress)
	}
	if o.LockWaitTimeout <= 0 {
		o.LockWaitTimeout = 60 * time.Second
	}
	if o.DesyncWait < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: --desync-wait %s: want a positive duration", o.DesyncWait)
	}
	if o.DesyncInterval < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: desync sampling interval %s: want a positive duration", o.DesyncInterval)
	}
	if o.DesyncWait == 0 {
		o.DesyncWait = defaultDesyncWait
	}
	if o.DesyncInterval == 0 {
		o.DesyncInterval = defaultDesyncInterval
	}
	for name, cond := range o.Where {
		if err := validWhere(name, cond); err != nil {
			return err
		}
	}
	return o.Filter.Validate()
}

// fileWriter is a file being written (a seam for fault tests).
type fileWriter interface {
	io.Writer
	Sync() error
	Close() error
}

// createFile creates a new file of a dump; tests replace it to simulate a
// full disk.
var createFile = openFile

// dumpDir is the output directory of a dump.
type dumpDir struct{ path string }

func (d *dumpDir) writeSmall(rel string, data []byte) error {
	f, err := createFile(filepath.Join(d.path, rel))
	if err != nil {
		return fmt.Errorf("backup: create %s: %w", rel, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("backup: write %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backup: write %s: %w", rel, err)
	}
	return nil
}

// prepareOut creates the output directory, which must not exist or be
// empty, and marks it incomplete.
func prepareOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: create %s", dir)
		}
	case err != nil:
		return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: read %s", dir)
	case len(entries) > 0:
		return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: output directory %s is not empty; choose a new directory", dir)
	}
	for _, sub := range []string{schemaDir, dataDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: create %s", filepath.Join(dir, sub))
		}
	}
	marker := fmt.Sprintf("dump started %s by pid %d and not finished\n", time.Now().UTC().Format(time.RFC3339), os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, IncompleteFile), []byte(marker), 0o600); err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "backup: write %s", filepath.Join(dir, IncompleteFile))
	}
	return nil
}

func markFailed(dir string, cause error) {
	msg := fmt.Sprintf("dump failed %s: %s\n", time.Now().UTC().Format(time.RFC3339), firstLine(cause.Error()))
	_ = os.WriteFile(filepath.Join(dir, IncompleteFile), []byte(msg), 0o600)
}

// backupConnOptions are the connection options of dump and restore
// sessions: statements run as long as they need (the context bounds them).
func backupConnOptions(o mysql.Options, conns int) mysql.Options {
	o = withBufferedReads(o)
	o.MaxConns = conns
	if o.QueryTimeout < time.Hour {
		o.QueryTimeout = 24 * time.Hour
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	return o
}

// openSessions opens a pool of n connections to key for bulk work (see
// backupConnOptions) and pins each of them as a session. closeAll closes
// the sessions and the pool.
func openSessions(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, n int) (sessions []*session, closeAll func(), err error) {
	db, err := mysql.Open(ctx, key, backupConnOptions(conn, n))
	if err != nil {
		return nil, nil, err
	}
	closeAll = func() {
		for _, s := range sessions {
			s.close()
		}
		db.Close()
	}
	for i := 0; i < n; i++ {
		c, err := db.SQL().Conn(ctx)
		if err != nil {
			closeAll()
			return nil, nil, mysql.Classify(err, key, conn.User, "connect")
		}
		sessions = append(sessions, &session{key: key, user: conn.User, conn: c})
	}
	return sessions, closeAll, nil
}

// openWireSessions opens n sessions on connections read by dbpilot's own
// text-protocol reader (mysql.WireConn.StreamText): the dump's workers.
// sql_mode is emptied as on the pool's connections. closeAll closes them.
func openWireSessions(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, n int) (sessions []*session, closeAll func(), err error) {
	closeAll = func() {
		for _, s := range sessions {
			s.close()
		}
	}
	if conn.ConnectTimeout <= 0 {
		conn.ConnectTimeout = 5 * time.Second
	}
	if conn.Socket == "" {
		dial := conn.Dial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		conn.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(1 << 20)
			}
			return c, err
		}
	}
	for range n {
		w, err := mysql.DialWire(ctx, key, conn)
		if err != nil {
			closeAll()
			return nil, nil, mysql.Classify(err, key, conn.User, "connect")
		}
		s := &session{key: key, user: conn.User, wire: w}
		sessions = append(sessions, s)
		if err := s.exec(ctx, "prepare session", "SET SESSION sql_mode = ''"); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return sessions, closeAll, nil
}

// readServer identifies the server.
func readServer(ctx context.Context, s *session) (Server, bool, error) {
	rows, _, err := s.query(ctx, "identify server", "SELECT @@version, @@version_comment, @@server_id, @@hostname, @@log_bin")
	if err != nil {
		return Server{}, false, err
	}
	r := rows[0]
	v, err := dbpilot.ParseVersion(str(r[0]))
	if err != nil {
		return Server{}, false, err
	}
	srv := Server{Address: s.key.String(), Version: v, Hostname: str(r[3]), Flavor: mysql.DetectFlavor(str(r[0]), str(r[1]))}
	id, _ := strconv.ParseUint(str(r[2]), 10, 32)
	srv.ServerID = uint32(id)
	return srv, str(r[4]) == "1" || strings.EqualFold(str(r[4]), "ON"), nil
}

// dialect is the statement vocabulary of the server's flavor and version.
func (s Server) dialect() mysql.Dialect { return mysql.Dialect{Flavor: s.Flavor, Version: s.Version} }

// snapshotSQL are the statements that prepare a dump session.
var snapshotSessionSQL = []string{
	"SET NAMES utf8mb4",
	"SET SESSION character_set_results = binary",
	"SET SESSION time_zone = '+00:00'",
	"SET SESSION net_write_timeout = 600, net_read_timeout = 600, wait_timeout = 28800",
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}

// readGTIDState reads the server's GTID position (mysql.Dialect's
// GTIDPositionSQL): MariaDB gtid_binlog_pos, gtid_slave_pos and
// gtid_current_pos; MySQL gtid_executed.
func readGTIDState(ctx context.Context, s *session, d mysql.Dialect, op string) (dbpilot.GTIDState, error) {
	rows, _, err := s.query(ctx, op, d.GTIDPositionSQL())
	if err != nil {
		return dbpilot.GTIDState{}, err
	}
	var row []*string
	if len(rows) > 0 {
		row = rows[0]
	}
	return d.ParseGTIDPosition(row)
}

// readPosition reads the GTID and binary log position, under the lock.
func readPosition(ctx context.Context, s *session, srv Server) (Position, error) {
	d := srv.dialect()
	st, err := readGTIDState(ctx, s, d, "read GTID position")
	if err != nil {
		return Position{}, err
	}
	p := Position{GTIDBinlogPos: st.BinlogPos, GTIDSlavePos: st.SlavePos, GTIDCurrentPos: st.CurrentPos, GTIDExecuted: st.Executed, GTID: st.Executed}
	if d.MariaDB() {
		if p.GTID, err = replicaStartPosition(st.BinlogPos, st.SlavePos); err != nil {
			return p, err
		}
	}
	rows, _, err := s.query(ctx, "read binary log position", d.BinlogStatusSQL())
	if err != nil {
		return p, err
	}
	if len(rows) > 0 {
		p.BinlogFile = str(rows[0][0])
		p.BinlogPos, _ = strconv.ParseUint(str(rows[0][1]), 10, 64)
	}
	return p, nil
}

// replicaStartPosition is, per domain, the later of the binary log's and
// the replication position: every transaction the snapshot contains,
// whether the server wrote it or applied it as a replica without
// log_slave_updates.
func replicaStartPosition(binlogPos, slavePos string) (string, error) {
	b, err := gtid.ParseMariaList(binlogPos)
	if err != nil {
		return "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "backup: parse gtid_binlog_pos %q", binlogPos)
	}
	s, err := gtid.ParseMariaList(slavePos)
	if err != nil {
		return "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "backup: parse gtid_slave_pos %q", slavePos)
	}
	return gtid.HighestPerDomain(b, s).String(), nil
}

// chunkJob is one chunk to dump.
type chunkJob struct {
	table *Table
	chunk *Chunk
	query string
}

// Dump writes a consistent logical dump of the server at key into opt.Out.
// All worker connections open their snapshots while the server's shortest
// consistency lock is held (MariaDB 10.4+: BACKUP STAGE BLOCK_COMMIT; else
// FLUSH TABLES WITH READ LOCK), together with reading the GTID and binary
// log position; the lock is released before any data is read. On any
// failure the directory keeps its incomplete marker and no manifest.
//
// Dump leaves process-wide settings alone. The driver allocates per value
// read while the dump's own heap stays small (fixed buffers per worker), so
// a program that runs a dump may want to collect garbage less often, e.g.
// debug.SetGCPercent(400) with a soft limit of debug.SetMemoryLimit(160 <<
// 20): less CPU, and well under 256 MB even with many threads. The dbpilot
// dump and clone commands do so unless GOGC or GOMEMLIMIT are set.
//
// With opt.Desync, the node must be a Galera node (checked before anything
// is written); wsrep_desync is ON from just before the lock to just after
// it, and turned OFF again whatever happens to the dump (see desync.go).
func Dump(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt DumpOptions) (m *Manifest, err error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	var ds *desync
	if opt.Desync {
		if ds, err = openDesync(ctx, key, conn, opt); err != nil {
			return nil, err
		}
		// Deferred so that the desync ends even on a panic.
		defer func() {
			dumpErr := err
			err = ds.finish(ctx, dumpErr)
			if dumpErr == nil && err != nil {
				m = nil
			}
		}()
	}
	if err := prepareOut(opt.Out); err != nil {
		return nil, err
	}
	m, err = dump(ctx, key, conn, opt, ds)
	if err != nil {
		markFailed(opt.Out, err)
		return nil, fmt.Errorf("%w (the partial dump in %s is marked incomplete)", err, opt.Out)
	}
	return m, nil
}

// dumpRun is one dump in progress: the control session reads the catalog,
// takes the lock and writes the schema files; the planner cuts tables into
// chunks; the workers dump them. The planner and the workers read the
// snapshots opened under the lock.
type dumpRun struct {
	key     dbpilot.InstanceKey
	opt     DumpOptions
	dir     *dumpDir
	ctl     *session
	planner *session
	workers []*session
	srv     Server
	cat     *catalog
	m       *Manifest
}

// dump runs the phases of a dump: read the source, open the snapshots,
// copy schema and data, write the manifest.
func dump(ctx context.Context, key dbpilot.InstanceKey, connOpts mysql.Options, opt DumpOptions, ds *desync) (*Manifest, error) {
	started := time.Now().UTC()
	sessions, closeAll, err := openSessions(ctx, key, connOpts, 2)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	workers, closeWorkers, err := openWireSessions(ctx, key, connOpts, opt.Threads)
	if err != nil {
		return nil, err
	}
	defer closeWorkers()
	r := &dumpRun{key: key, opt: opt, dir: &dumpDir{path: opt.Out}, ctl: sessions[0], planner: sessions[1], workers: workers}
	if err := r.readSource(ctx, started); err != nil {
		return nil, err
	}
	if ds != nil {
		if err := ds.turnOn(ctx); err != nil {
			return nil, err
		}
	}
	err = r.snapshot(ctx)
	if ds != nil && err == nil {
		// The lock is released: the node can apply again and catch up.
		// (After a failure, Dump's cleanup turns it off.)
		err = ds.turnOff(ctx)
	}
	if err != nil {
		return nil, err
	}
	infos, tables := r.tableList()
	if err := r.copyData(ctx, infos, tables); err != nil {
		return nil, err
	}
	return r.finish(tables)
}

// readSource identifies the server, starts the manifest and reads the
// catalog of what to dump, refusing an empty selection (patterns that leave
// no table nor view) and a --where on a
// table that is not dumped.
func (r *dumpRun) readSource(ctx context.Context, started time.Time) error {
	srv, _, err := readServer(ctx, r.ctl)
	if err != nil {
		return err
	}
	r.srv = srv
	opt := r.opt
	r.m = &Manifest{Format: FormatVersion, Tool: opt.Tool, Server: srv, Started: started, Compression: opt.Compress,
		Options: DumpRecord{Threads: opt.Threads, ChunkRows: opt.ChunkRows, Databases: opt.Filter.Databases,
			Include: opt.Filter.Include, Exclude: opt.Filter.Exclude, Where: opt.Where, NoData: opt.NoData, Users: opt.Users}}
	if err := r.ctl.exec(ctx, "prepare session", "SET NAMES utf8mb4", "SET SESSION time_zone = '+00:00'"); err != nil {
		return err
	}
	cat, err := readCatalog(ctx, r.ctl, opt.Filter)
	if err != nil {
		return err
	}
	if len(cat.tables) == 0 && len(cat.views) == 0 && len(cat.databases) == 0 {
		return dbpilot.Errorf(dbpilot.ENOTFOUND, "backup: nothing to dump on %s: no database matches the selection", r.key)
	}
	// Patterns that leave no table nor view (--include shop --exclude
	// 'shop.*') would give a dump of empty databases: refused. Databases
	// named alone (--databases) are dumped even when empty.
	if len(cat.tables) == 0 && len(cat.views) == 0 && len(opt.Filter.Include)+len(opt.Filter.Exclude) > 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "backup: nothing to dump on %s: no table or view matches %s; check the patterns (db.table, or a database without a dot)", r.key, opt.Filter)
	}
	for name := range opt.Where {
		found := false
		for _, t := range cat.tables {
			found = found || t.DB+"."+t.Name == name
		}
		if !found {
			return dbpilot.Errorf(dbpilot.EINVALID, "backup: --where names %s, which is not a dumped table", name)
		}
	}
	for _, t := range cat.tables {
		if e := strings.ToLower(t.Engine); !t.Sequence && e != "innodb" && e != "rocksdb" && e != "" {
			r.m.Warnings = append(r.m.Warnings, fmt.Sprintf("%s.%s uses the non-transactional engine %s: its data is read outside the snapshot and may not match the recorded position", t.DB, t.Name, t.Engine))
		}
	}
	r.cat = cat
	return nil
}

// snapshot opens the snapshot of the planner and of every worker while the
// consistency lock is held, and reads the position under it; the lock is
// released before snapshot returns, whatever happened.
func (r *dumpRun) snapshot(ctx context.Context) error {
	snaps := append([]*session{r.planner}, r.workers...)
	for _, s := range snaps {
		if err := s.exec(ctx, "prepare session", snapshotSessionSQL...); err != nil {
			return err
		}
	}
	lock := r.srv.dialect().ConsistencyLock()
	if err := r.ctl.exec(ctx, "set lock_wait_timeout", fmt.Sprintf("SET SESSION lock_wait_timeout = %d", int(r.opt.LockWaitTimeout.Seconds()+0.5))); err != nil {
		return err
	}
	t0 := time.Now()
	if err := r.ctl.exec(ctx, "take "+lock.Kind, lock.Take...); err != nil {
		return fmt.Errorf("backup: could not take %s on %s (it needs the RELOAD privilege; a long query or transaction may hold it off): %w", lock.Kind, r.key, err)
	}
	locked := time.Now()
	pos, err := r.underLock(ctx, lock, snaps)
	r.m.Lock = Lock{Kind: lock.Kind, Waited: locked.Sub(t0), Held: time.Since(locked)}
	if err != nil {
		return err
	}
	r.m.Position = pos
	if r.opt.Progress != nil {
		fmt.Fprintf(r.opt.Progress, "dump: %s held %s (waited %s); GTID position %q, binary log %s:%d\n",
			lock.Kind, r.m.Lock.Held.Round(time.Microsecond), r.m.Lock.Waited.Round(time.Microsecond), pos.GTID, pos.BinlogFile, pos.BinlogPos)
	}
	return nil
}

// underLock opens the snapshots side by side and reads the position, then
// releases the lock (also when the context is done).
func (r *dumpRun) underLock(ctx context.Context, lock mysql.ConsistencyLock, snaps []*session) (Position, error) {
	defer func() {
		_ = r.ctl.exec(context.WithoutCancel(ctx), "release "+lock.Kind, lock.Release)
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(snaps))
	for i, s := range snaps {
		wg.Go(func() {
			errs[i] = s.exec(ctx, "open snapshot", "START TRANSACTION WITH CONSISTENT SNAPSHOT")
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Position{}, err
	}
	if r.opt.OnLocked != nil {
		r.opt.OnLocked()
	}
	return readPosition(ctx, r.ctl, r.srv)
}

// tableList returns the catalog's tables in dump order — the largest
// single job first (sortBySize) — and their manifest entries.
func (r *dumpRun) tableList() ([]*tableInfo, []*Table) {
	infos := append([]*tableInfo(nil), r.cat.tables...)
	sortBySize(infos, r.opt.ChunkRows)
	tables := make([]*Table, 0, len(infos))
	for _, ti := range infos {
		tables = append(tables, &Table{DB: ti.DB, Name: ti.Name, Engine: ti.Engine, Sequence: ti.Sequence,
			Columns: columnsFor(ti, r.srv.Flavor != dbpilot.FlavorMariaDB), Where: r.opt.Where[ti.DB+"."+ti.Name]})
	}
	return infos, tables
}

// copyData writes schema and data at once: the control session writes the
// schema files, the planner cuts chunks and the workers dump them as they
// come. The first failure stops the others and is returned.
func (r *dumpRun) copyData(ctx context.Context, infos []*tableInfo, tables []*Table) error {
	prog := newProgress("dump", r.opt.Progress, r.opt.ProgressTTY, r.opt.ProgressInterval)
	var est int64
	for _, ti := range infos {
		if !ti.Sequence && !r.opt.NoData {
			est += ti.EstRows
		}
	}
	prog.estRows.Store(est)
	prog.tablesAll.Store(int64(len(tables)))
	prog.run()
	defer prog.halt()

	track := &tableTracker{state: map[*Table]*tableState{}, prog: prog}
	for _, t := range tables {
		track.state[t] = &tableState{}
	}
	jobs := make(chan chunkJob, len(r.workers)*2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return dumpSchemas(gctx, r.ctl, r.dir, r.cat, tables, r.opt, r.m) })
	g.Go(func() error {
		defer close(jobs)
		return r.planChunks(gctx, infos, tables, jobs, track, prog)
	})
	for _, s := range r.workers {
		g.Go(func() error { return r.dumpChunks(gctx, s, jobs, track, prog) })
	}
	err := g.Wait()
	prog.halt()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "backup: dump of %s interrupted", r.key)
	}
	prog.finish()
	return nil
}

// planChunks cuts the tables into chunks, in dump order, and sends each
// chunk to the workers as soon as it is cut.
func (r *dumpRun) planChunks(ctx context.Context, infos []*tableInfo, tables []*Table, jobs chan<- chunkJob, track *tableTracker, prog *progress) error {
	for i, ti := range infos {
		t := tables[i]
		if ti.Sequence || r.opt.NoData {
			prog.tables.Add(1)
			continue
		}
		emit := func(where string) bool {
			c := &Chunk{File: filepath.Join(dataDir, fmt.Sprintf("%s.%s.%05d.tsv%s", fileName(t.DB), fileName(t.Name), len(t.Chunks)+1, extension(r.opt.Compress))), Where: and(where, paren(t.Where))}
			t.Chunks = append(t.Chunks, c)
			prog.chunksAll.Add(1)
			track.chunkPlanned(t)
			select {
			case jobs <- chunkJob{table: t, chunk: c, query: chunkQuery(t, c)}:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if err := planTable(ctx, r.planner, ti, t, r.opt.ChunkRows, emit); err != nil {
			return err
		}
		track.tablePlanned(t)
	}
	return nil
}

// dumpChunks is a worker: it dumps the chunks it receives on its session
// until jobs is closed, a chunk fails or the dump stops.
func (r *dumpRun) dumpChunks(ctx context.Context, s *session, jobs <-chan chunkJob, track *tableTracker, prog *progress) error {
	w := newChunkWriter(r.opt.Compress)
	for job := range jobs {
		if ctx.Err() != nil {
			return nil
		}
		if err := w.dumpChunk(ctx, s, r.dir, job, prog); err != nil {
			return err
		}
		track.chunkDone(job.table)
		if r.opt.OnChunk != nil {
			r.opt.OnChunk(job.table, job.chunk)
		}
	}
	return nil
}

// finish totals the manifest, makes every file durable, then writes the
// manifest and removes the incomplete marker: a manifest exists only once
// every file it lists is on disk.
func (r *dumpRun) finish(tables []*Table) (*Manifest, error) {
	m, out := r.m, r.opt.Out
	for _, t := range tables {
		for _, c := range t.Chunks {
			t.Rows += c.Rows
			t.Bytes += c.Bytes
			m.Totals.Chunks++
			m.Totals.Files += c.FileSize
		}
		m.Totals.Rows += t.Rows
		m.Totals.Bytes += t.Bytes
	}
	m.Totals.Tables = len(tables)
	m.Tables = tables
	if err := syncAll(out, tables); err != nil {
		return nil, err
	}
	m.Finished = time.Now().UTC()
	if err := writeManifest(out, m); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(out, IncompleteFile)); err != nil {
		return nil, fmt.Errorf("backup: remove %s: %w", IncompleteFile, err)
	}
	if err := syncDir(out); err != nil {
		return nil, err
	}
	return m, nil
}

// tableTracker counts a table as done in the progress once it is planned
// and every chunk of it is written.
type tableTracker struct {
	mu    sync.Mutex
	state map[*Table]*tableState
	prog  *progress
}

type tableState struct {
	left    int
	planned bool
}

func (tt *tableTracker) chunkPlanned(t *Table) {
	tt.mu.Lock()
	tt.state[t].left++
	tt.mu.Unlock()
}

func (tt *tableTracker) chunkDone(t *Table) {
	tt.mu.Lock()
	st := tt.state[t]
	st.left--
	done := st.planned && st.left == 0
	tt.mu.Unlock()
	if done {
		tt.prog.tables.Add(1)
	}
}

func (tt *tableTracker) tablePlanned(t *Table) {
	tt.mu.Lock()
	st := tt.state[t]
	st.planned = true
	done := st.left == 0
	tt.mu.Unlock()
	if done {
		tt.prog.tables.Add(1)
	}
}

func extension(compress string) string {
	if compress == "zstd" {
		return ".zst"
	}
	return ""
}

// dumpSchemas writes every schema file and fills the manifest's database
// list and the tables' schema files.
func dumpSchemas(ctx context.Context, s *session, d *dumpDir, cat *catalog, tables []*Table, opt DumpOptions, m *Manifest) error {
	byDB := map[string]map[string]bool{}
	for _, t := range tables {
		if byDB[t.DB] == nil {
			byDB[t.DB] = map[string]bool{}
		}
		byDB[t.DB][t.Name] = true
	}
	var dbs []Database
	var warnings []string
	for _, name := range cat.databases {
		if len(opt.Filter.Include) > 0 && byDB[name] == nil && len(cat.views[name]) == 0 {
			continue // an --include pattern selected nothing in it
		}
		dbEntry, w, err := dumpDatabaseSchema(ctx, s, d, name, cat.views[name], byDB[name])
		if err != nil {
			return err
		}
		warnings = append(warnings, w...)
		dbs = append(dbs, dbEntry)
	}
	for _, t := range tables {
		if err := dumpTableSchema(ctx, s, d, t); err != nil {
			return err
		}
	}
	if opt.Users {
		f, err := dumpUsers(ctx, s, d)
		if err != nil {
			return err
		}
		m.Users = f
	}
	m.Databases = dbs
	m.Warnings = append(m.Warnings, warnings...)
	return nil
}

// chunkQuery is the SELECT that reads a chunk.
func chunkQuery(t *Table, c *Chunk) string {
	exprs := make([]string, len(t.Columns))
	for i, col := range t.Columns {
		exprs[i] = col.selectExpr()
	}
	q := "SELECT /*!40001 SQL_NO_CACHE */ " + strings.Join(exprs, ", ") + " FROM " + t.QualifiedName()
	if t.Key != "" && c.Where != "" && c.Where != t.Where {
		q += " FORCE INDEX (" + QuoteIdent(t.Key) + ")"
	}
	if c.Where != "" {
		q += " WHERE " + c.Where
	}
	return q
}

// planTable cuts a table into chunks and emits their conditions (without
// the user's --where, which emit adds).
func planTable(ctx context.Context, s *session, ti *tableInfo, t *Table, chunkRows int64, emit func(string) bool) error {
	key, ok := chooseKey(ti)
	if !ok {
		emit("")
		return nil
	}
	t.Key = key.index
	for _, c := range key.cols {
		t.KeyColumns = append(t.KeyColumns, c.name)
	}
	if key.nullable {
		if !emit(key.someNull()) {
			return nil
		}
	}
	notNull := key.notNull()
	if ti.EstRows <= chunkRows {
		emit(notNull)
		return nil
	}
	if key.integer {
		col := key.cols[0].name
		rows, _, err := s.query(ctx, "read key range of "+t.String(), "SELECT MIN("+QuoteIdent(col)+"), MAX("+QuoteIdent(col)+") FROM "+t.QualifiedName())
		if err != nil {
			return err
		}
		lo, okLo := new(big.Int).SetString(str(rows[0][0]), 10)
		hi, okHi := new(big.Int).SetString(str(rows[0][1]), 10)
		if !okLo || !okHi {
			emit("") // empty table
			return nil
		}
		n := (ti.EstRows + chunkRows - 1) / chunkRows
		for _, c := range integerRanges(col, lo, hi, n) {
			if !emit(c) {
				return nil
			}
		}
		return nil
	}
	return scanBoundaries(ctx, s, t, key, chunkRows, notNull, emit)
}

// scanBoundaries walks the key's index in order, reading only the key
// columns, and emits a chunk every chunkRows keys, so workers start on the
// first chunks while the scan goes on. Never OFFSET: one streaming pass.
func scanBoundaries(ctx context.Context, s *session, t *Table, key chunkKey, chunkRows int64, notNull string, emit func(string) bool) error {
	cols := make([]string, len(key.cols))
	for i, c := range key.cols {
		cols[i] = QuoteIdent(c.name)
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + t.QualifiedName() + " FORCE INDEX (" + QuoteIdent(key.index) + ")"
	if notNull != "" {
		q += " WHERE " + notNull
	}
	q += " ORDER BY " + strings.Join(cols, ", ")
	var prev [][]byte
	var stopped bool
	err := streamRows(ctx, s, q, func(vals [][]byte, n int64) (bool, error) {
		if n%chunkRows != 0 {
			return true, nil
		}
		cur := make([][]byte, len(vals))
		for i, v := range vals {
			cur[i] = append([]byte{}, v...)
		}
		cond := key.rangeCond(prev, cur)
		prev = cur
		if !emit(cond) {
			stopped = true
			return false, nil
		}
		return true, nil
	})
	if err != nil || stopped {
		return err
	}
	emit(key.rangeCond(prev, nil))
	return nil
}

// streamRows runs q on the session's connection at the driver level and
// calls f for every row (n counts from 1); the values are only valid during
// the call. NULL is nil. Returning false from f stops reading (the rest of
// the result is drained).
func streamRows(ctx context.Context, s *session, q string, f func(vals [][]byte, n int64) (bool, error)) error {
	if s.wire != nil {
		var (
			n    int64
			ferr error
		)
		_, err := s.wire.StreamText(ctx, q, func(vals [][]byte) (keep bool, err error) {
			n++
			keep, ferr = f(vals, n)
			return keep, ferr
		})
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return s.fail("read "+firstWordsOf(q), err)
		}
		return nil
	}
	var ferr error
	err := s.conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return errors.New("driver cannot query")
		}
		rows, err := qc.QueryContext(ctx, q, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		ncol := len(rows.Columns())
		dest := make([]driver.Value, ncol)
		vals := make([][]byte, ncol)
		scratch := make([]byte, 0, 32*ncol)
		var n int64
		keep := true
		for {
			if err := rows.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			if !keep {
				continue
			}
			n++
			scratch = scratch[:0]
			for i, v := range dest {
				switch x := v.(type) {
				case nil:
					vals[i] = nil
				case []byte:
					vals[i] = x
				case int64:
					st := len(scratch)
					scratch = strconv.AppendInt(scratch, x, 10)
					vals[i] = scratch[st:len(scratch):len(scratch)]
				case uint64:
					st := len(scratch)
					scratch = strconv.AppendUint(scratch, x, 10)
					vals[i] = scratch[st:len(scratch):len(scratch)]
				case float32:
					st := len(scratch)
					scratch = strconv.AppendFloat(scratch, float64(x), 'g', -1, 32)
					vals[i] = scratch[st:len(scratch):len(scratch)]
				case float64:
					st := len(scratch)
					scratch = strconv.AppendFloat(scratch, x, 'g', -1, 64)
					vals[i] = scratch[st:len(scratch):len(scratch)]
				case string:
					vals[i] = []byte(x)
				default:
					vals[i] = []byte(fmt.Sprint(x))
				}
			}
			keep, ferr = f(vals, n)
			if ferr != nil {
				return ferr
			}
		}
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return s.fail("read "+firstWordsOf(q), err)
	}
	return nil
}

func firstWordsOf(q string) string {
	if i := strings.Index(q, " FROM "); i >= 0 {
		rest := q[i+6:]
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	return "rows"
}

// chunkWriter is a worker's reusable output machinery: a fixed buffer and
// one compressor, whatever the table size.
type chunkWriter struct {
	compress string
	buf      *bufio.Writer
	zw       *fastzstd.Writer
	crc      hash.Hash32
}

func newChunkWriter(compress string) *chunkWriter {
	w := &chunkWriter{compress: compress, buf: bufio.NewWriterSize(nil, workerBufSize), crc: crc32.New(crc32.MakeTable(crc32.Castagnoli))}
	if compress == "zstd" {
		// One goroutine and at most a 1 MiB window per worker: bounded
		// memory. Literals-only blocks where LZ matching does not pay
		// (see fastzstd): compression is most of a zstd dump's CPU. No
		// frame checksum: the manifest's CRC-32C of the whole file is
		// checked on restore.
		w.zw = fastzstd.NewWriter(nil)
	}
	return w
}

// countingWriter counts and checksums what reaches the file.
type countingWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// dumpChunk reads one chunk from the snapshot and writes its file.
func (w *chunkWriter) dumpChunk(ctx context.Context, s *session, d *dumpDir, job chunkJob, prog *progress) error {
	path := filepath.Join(d.path, job.chunk.File)
	f, err := createFile(path)
	if err != nil {
		return fmt.Errorf("backup: create %s: %w", path, err)
	}
	w.crc.Reset()
	cw := &countingWriter{w: f, crc: w.crc}
	var sink io.Writer = cw
	if w.zw != nil {
		w.zw.Reset(cw)
		sink = w.zw
	}
	w.buf.Reset(sink)
	enc := newRowEncoder(w.buf)
	var lastRows, lastBytes int64
	err = streamRows(ctx, s, job.query, func(vals [][]byte, n int64) (bool, error) {
		if err := enc.writeRow(vals); err != nil {
			return false, fmt.Errorf("backup: write %s: %w", path, err)
		}
		if n%4096 == 0 {
			prog.rows.Add(enc.rows - lastRows)
			prog.bytes.Add(enc.bytes - lastBytes)
			lastRows, lastBytes = enc.rows, enc.bytes
		}
		return true, nil
	})
	if err == nil {
		if ferr := w.buf.Flush(); ferr != nil {
			err = fmt.Errorf("backup: write %s: %w", path, ferr)
		}
	}
	if err == nil && w.zw != nil {
		if zerr := w.zw.Close(); zerr != nil {
			err = fmt.Errorf("backup: write %s: %w", path, zerr)
		}
	}
	if err == nil {
		startWriteback(f)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backup: write %s: %w", path, cerr)
	}
	if err != nil {
		return fmt.Errorf("backup: dump %s chunk %s: %w", job.table, filepath.Base(job.chunk.File), err)
	}
	prog.rows.Add(enc.rows - lastRows)
	prog.bytes.Add(enc.bytes - lastBytes)
	prog.chunks.Add(1)
	job.chunk.Rows = enc.rows
	job.chunk.Bytes = enc.bytes
	job.chunk.FileSize = cw.n
	job.chunk.FileCRC = w.crc.Sum32()
	job.chunk.Sum = enc.sum
	return nil
}
