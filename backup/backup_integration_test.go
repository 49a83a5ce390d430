package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Integration tests of dump, restore, verify against real MariaDB sandboxes.
// Helpers are prefixed with "it" to stay clear of the unit tests' names.

// itServer is one sandbox node with an admin connection pool for the test.
type itServer struct {
	key  dbpilot.InstanceKey
	opts mysql.Options // admin credentials, for the backup API
	db   *mysql.DB
}

func itConnect(t *testing.T, d *sandbox.Descriptor, node int) *itServer {
	t.Helper()
	n := d.Nodes[node]
	db, err := mysql.Open(context.Background(), n.Key(), mysql.Options{Credentials: d.Admin, QueryTimeout: 60 * time.Second, MaxConns: 8})
	if err != nil {
		t.Fatalf("connect to %s: %v", n.Key(), err)
	}
	t.Cleanup(func() { db.Close() })
	return &itServer{key: n.Key(), opts: mysql.Options{Credentials: d.Admin}, db: db}
}

func (s *itServer) exec(t *testing.T, stmts ...string) {
	t.Helper()
	if err := s.db.Exec(context.Background(), stmts...); err != nil {
		t.Fatalf("on %s: %v", s.key, err)
	}
}

func (s *itServer) value(t *testing.T, q string, args ...any) string {
	t.Helper()
	v, _, err := s.db.QueryValue(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("on %s: %s: %v", s.key, q, err)
	}
	return v
}

func (s *itServer) maps(t *testing.T, q string) []map[string]string {
	t.Helper()
	r, err := s.db.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("on %s: %s: %v", s.key, q, err)
	}
	return r.Maps()
}

// rows returns every row of q, each rendered as one string (NULL as ∅).
func (s *itServer) rows(t *testing.T, q string) []string {
	t.Helper()
	r, err := s.db.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("on %s: %s: %v", s.key, q, err)
	}
	out := make([]string, 0, len(r.Values))
	for _, row := range r.Values {
		parts := make([]string, len(row))
		for i, v := range row {
			if v == nil {
				parts[i] = "∅"
			} else {
				parts[i] = fmt.Sprintf("%q", *v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// checksum is CHECKSUM TABLE ... EXTENDED ("" when the table is missing).
func (s *itServer) checksum(t *testing.T, table string) string {
	t.Helper()
	r, err := s.db.Query(context.Background(), "CHECKSUM TABLE "+table+" EXTENDED")
	if err != nil {
		t.Fatalf("on %s: checksum %s: %v", s.key, table, err)
	}
	if len(r.Values) != 1 || r.Values[0][1] == nil {
		return ""
	}
	return *r.Values[0][1]
}

func (s *itServer) count(t *testing.T, table string) int64 {
	t.Helper()
	var n int64
	fmt.Sscan(s.value(t, "SELECT COUNT(*) FROM "+table), &n)
	return n
}

func (s *itServer) tableExists(t *testing.T, db, table string) bool {
	t.Helper()
	return s.value(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table) == "1"
}

// itSameTables compares tables (quoted db.table names) of two servers by
// CHECKSUM TABLE EXTENDED and row count.
func itSameTables(t *testing.T, a, b *itServer, tables ...string) {
	t.Helper()
	for _, tb := range tables {
		ca, cb := a.checksum(t, tb), b.checksum(t, tb)
		na, nb := a.count(t, tb), b.count(t, tb)
		if ca == "" || cb == "" || ca != cb || na != nb {
			t.Errorf("%s differs: %s has %d rows, checksum %q; %s has %d rows, checksum %q", tb, a.key, na, ca, b.key, nb, cb)
		}
	}
}

// itVerifyOK checks the dump in dir against the server with Verify.
func itVerifyOK(t *testing.T, s *itServer, dir string, dbs ...string) *VerifyReport {
	t.Helper()
	rep, err := Verify(context.Background(), s.key, s.opts, VerifyOptions{Dir: dir, Threads: 2, Databases: dbs})
	if err != nil {
		t.Fatalf("verify %s against %s: %v", dir, s.key, err)
	}
	if !rep.OK() || len(rep.Tables) == 0 {
		t.Errorf("verify %s against %s: %s; details %+v", dir, s.key, rep, rep.Details)
	}
	return rep
}

// itTable finds a table of a manifest.
func itTable(t *testing.T, m *Manifest, db, name string) *Table {
	t.Helper()
	for _, tb := range m.Tables {
		if tb.DB == db && tb.Name == name {
			return tb
		}
	}
	t.Fatalf("manifest has no table %s.%s", db, name)
	return nil
}

func itHasTable(m *Manifest, db, name string) bool {
	for _, tb := range m.Tables {
		if tb.DB == db && tb.Name == name {
			return true
		}
	}
	return false
}

func itOneLine(t *testing.T, what string, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("%s: error is not one line: %q", what, msg)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("%s: error shows a secret: %q", what, msg)
		}
	}
}

func itWantCode(t *testing.T, what string, err error, code string, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if got := dbpilot.ErrorCode(err); got != code {
		t.Errorf("%s: code %s, want %s: %v", what, got, code, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("%s: error does not mention %q: %v", what, c, err)
		}
	}
	itOneLine(t, what, err)
}

func itDump(t *testing.T, s *itServer, opt DumpOptions) *Manifest {
	t.Helper()
	if opt.Out == "" {
		opt.Out = filepath.Join(t.TempDir(), "dump")
	}
	m, err := Dump(context.Background(), s.key, s.opts, opt)
	if err != nil {
		t.Fatalf("dump %s: %v", s.key, err)
	}
	if _, err := ReadManifest(opt.Out); err != nil {
		t.Fatalf("read back the manifest of %s: %v", opt.Out, err)
	}
	return m
}

func itRestore(t *testing.T, s *itServer, opt RestoreOptions) *RestoreResult {
	t.Helper()
	res, err := Restore(context.Background(), s.key, s.opts, opt)
	if err != nil {
		t.Fatalf("restore %s into %s: %v", opt.Dir, s.key, err)
	}
	return res
}

// TestBackupConsistentUnderWrites dumps a primary while writers move money
// between accounts and append to a ledger, then proves the dump is exactly
// the primary's state at the recorded GTID position: a replica stopped at
// that position equals the restored dump, table by table.
func TestBackupConsistentUnderWrites(t *testing.T) {
	rep := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	tgtD := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	primary, replica, target := itConnect(t, rep, 0), itConnect(t, rep, 1), itConnect(t, tgtD, 0)
	ctx := context.Background()

	const accounts, initial = 400, 1000
	primary.exec(t,
		"CREATE DATABASE bank",
		"CREATE TABLE bank.accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, updates INT NOT NULL DEFAULT 0)",
		"CREATE TABLE bank.ledger (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, amount INT NOT NULL, note VARCHAR(64), KEY (src))",
		"CREATE TABLE bank.tags (name VARCHAR(40) NOT NULL PRIMARY KEY, hits INT NOT NULL)",
		"CREATE TABLE bank.events (msg VARCHAR(64), at DATETIME(6))", // no key: one chunk
		"INSERT INTO bank.accounts (id, balance) SELECT seq, "+fmt.Sprint(initial)+" FROM mysql.seq_1_to_"+fmt.Sprint(accounts),
		"INSERT INTO bank.ledger (src, dst, amount, note) SELECT seq % 50 + 1, seq % 70 + 1, seq, CONCAT('seed ', seq) FROM mysql.seq_1_to_800",
		"INSERT INTO bank.tags SELECT CONCAT('tag-', MD5(seq)), 0 FROM mysql.seq_1_to_300",
		"INSERT INTO bank.events SELECT 'seed', NOW(6) FROM mysql.seq_1_to_50",
		"ANALYZE TABLE bank.accounts, bank.ledger, bank.tags, bank.events",
	)
	pos := primary.value(t, "SELECT @@gtid_binlog_pos")
	if v := replica.value(t, "SELECT MASTER_GTID_WAIT(?, 30)", pos); v != "0" {
		t.Fatalf("replica did not reach %s: MASTER_GTID_WAIT = %s", pos, v)
	}
	replica.exec(t, "STOP SLAVE")

	// Writers run until the dump returns.
	var stop atomic.Bool
	var commits atomic.Int64
	var wg sync.WaitGroup
	werr := make(chan error, 8)
	sdb := primary.db.SQL()
	tx := func(stmts ...string) error {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		tx, err := sdb.BeginTx(c, nil)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(c, s); err != nil {
				tx.Rollback()
				if n := mysql.ServerErrorNumber(err); n == 1213 || n == 1205 {
					return nil // deadlock victim: fine, the transaction is gone
				}
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		commits.Add(1)
		return nil
	}
	writer := func(id int, step func(r *rand.Rand) []string) {
		defer wg.Done()
		r := rand.New(rand.NewPCG(uint64(id), 42))
		for !stop.Load() {
			if err := tx(step(r)...); err != nil {
				werr <- fmt.Errorf("writer %d: %w", id, err)
				return
			}
		}
	}
	transfer := func(r *rand.Rand) []string {
		a, b := r.IntN(accounts)+1, r.IntN(accounts)+1
		if a > b {
			a, b = b, a
		}
		amt := r.IntN(100) + 1
		return []string{
			fmt.Sprintf("UPDATE bank.accounts SET balance = balance - %d, updates = updates + 1 WHERE id = %d", amt, a),
			fmt.Sprintf("UPDATE bank.accounts SET balance = balance + %d, updates = updates + 1 WHERE id = %d", amt, b),
			fmt.Sprintf("INSERT INTO bank.ledger (src, dst, amount, note) VALUES (%d, %d, %d, 'transfer')", a, b, amt),
		}
	}
	wg.Add(4)
	go writer(1, transfer)
	go writer(2, transfer)
	go writer(3, func(r *rand.Rand) []string {
		return []string{
			fmt.Sprintf("UPDATE bank.tags SET hits = hits + 1 WHERE name = CONCAT('tag-', MD5(%d))", r.IntN(300)+1),
			fmt.Sprintf("INSERT INTO bank.tags VALUES (CONCAT('new-', MD5(%d)), 1) ON DUPLICATE KEY UPDATE hits = hits + 1", r.IntN(1_000_000)),
			"INSERT INTO bank.events VALUES ('tag', NOW(6))",
		}
	})
	go writer(4, func(r *rand.Rand) []string {
		return []string{
			fmt.Sprintf("DELETE FROM bank.ledger WHERE id = %d", r.IntN(800)+1),
			fmt.Sprintf("UPDATE bank.ledger SET note = CONCAT('edited ', NOW(6)) WHERE id = %d", r.IntN(800)+1),
			fmt.Sprintf("INSERT INTO bank.accounts (id, balance) VALUES (%d, 0) ON DUPLICATE KEY UPDATE updates = updates + 1", accounts+1+r.IntN(10_000)),
		}
	})
	stopWriters := func() {
		if !stop.Swap(true) {
			wg.Wait()
		}
	}
	t.Cleanup(stopWriters)
	// Let the writers get going before the snapshot.
	for deadline := time.Now().Add(10 * time.Second); commits.Load() < 50 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}

	dir := filepath.Join(t.TempDir(), "dump")
	var during, lastSeen atomic.Int64
	before := commits.Load()
	lastSeen.Store(before)
	m, err := Dump(ctx, primary.key, primary.opts, DumpOptions{Out: dir, Threads: 3, ChunkRows: 20, Filter: Filter{Databases: []string{"bank"}},
		OnChunk: func(*Table, *Chunk) {
			// At least one commit between two chunks (waiting 1 s at most), so
			// that writes interleave with the chunk reads whatever the speed.
			seen := lastSeen.Load()
			for deadline := time.Now().Add(time.Second); commits.Load() <= seen && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			lastSeen.Store(commits.Load())
		}})
	during.Store(commits.Load() - before)
	stopWriters()
	close(werr)
	for e := range werr {
		t.Errorf("%v", e)
	}
	if err != nil {
		t.Fatalf("dump under writes: %v", err)
	}
	t.Logf("dump: %d chunks, %d rows, lock %s held %s; %d commits during the dump; position %s",
		m.Totals.Chunks, m.Totals.Rows, m.Lock.Kind, m.Lock.Held, during.Load(), m.Position.GTID)
	if during.Load() < 20 {
		t.Errorf("only %d commits happened during the dump: the test does not exercise concurrent writes", during.Load())
	}
	if m.Lock.Kind != "BACKUP STAGE BLOCK_COMMIT" {
		t.Errorf("lock = %q, want BACKUP STAGE BLOCK_COMMIT on MariaDB %s", m.Lock.Kind, m.Server.Version)
	}
	if m.Position.GTID == "" || m.Position.GTIDBinlogPos == "" || m.Position.BinlogFile == "" {
		t.Errorf("position not recorded: %+v", m.Position)
	}
	for _, name := range []string{"accounts", "ledger", "tags"} {
		if n := len(itTable(t, m, "bank", name).Chunks); n < 5 {
			t.Errorf("bank.%s has %d chunks, want many (ChunkRows 20)", name, n)
		}
	}
	if after := primary.value(t, "SELECT @@gtid_binlog_pos"); after == m.Position.GTID {
		t.Errorf("no transaction committed after the snapshot (position %s)", after)
	}

	// Bring the replica to exactly the dump's position.
	replica.exec(t, "START SLAVE UNTIL master_gtid_pos = '"+m.Position.GTID+"'")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := replica.maps(t, "SHOW SLAVE STATUS")
		slavePos := replica.value(t, "SELECT @@gtid_slave_pos")
		if len(st) == 1 && st[0]["Slave_SQL_Running"] == "No" && slavePos == m.Position.GTID {
			break
		}
		if len(st) == 1 && st[0]["Last_SQL_Error"] != "" {
			t.Fatalf("replica stopped with an error: %s", st[0]["Last_SQL_Error"])
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica did not stop at %s: gtid_slave_pos %s, status %v", m.Position.GTID, slavePos, st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	tables := []string{"bank.accounts", "bank.ledger", "bank.tags", "bank.events"}
	// The primary moved on; the replica stands at the snapshot.
	if primary.count(t, "bank.events") == replica.count(t, "bank.events") {
		t.Errorf("primary and replica have the same bank.events: writes after the snapshot are missing")
	}
	itVerifyOK(t, replica, dir)

	res := itRestore(t, target, RestoreOptions{Dir: dir, Threads: 3})
	if res.Rows != m.Totals.Rows || res.Chunks != m.Totals.Chunks {
		t.Errorf("restore result %+v, dump totals %+v", res, m.Totals)
	}
	itSameTables(t, replica, target, tables...)
	itVerifyOK(t, target, dir)
	for _, s := range []*itServer{replica, target} {
		if sum := s.value(t, "SELECT SUM(balance) FROM bank.accounts"); sum != fmt.Sprint(accounts*initial) {
			t.Errorf("%s: sum of balances = %s, want %d", s.key, sum, accounts*initial)
		}
	}
	// Each transfer wrote one ledger row and two account updates: the
	// snapshot must hold both or neither of every transaction.
	for _, s := range []*itServer{replica, target} {
		upd := s.value(t, "SELECT SUM(updates) FROM bank.accounts WHERE id <= ?", accounts)
		tr := s.value(t, "SELECT COUNT(*) * 2 FROM bank.ledger WHERE note = 'transfer'")
		if upd != tr {
			t.Errorf("%s: %s account updates, but 2 × transfers = %s", s.key, upd, tr)
		}
	}
}

// TestBackupRestore runs dump and restore on a pair of single servers:
// chunk borders of every kind of key and column type, filters, resume after
// an interruption, and corrupted chunks.
func TestBackupRestore(t *testing.T) {
	srcD := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	tgtD := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	src, tgt := itConnect(t, srcD, 0), itConnect(t, tgtD, 0)

	t.Run("chunk-borders", func(t *testing.T) { itTestChunkBorders(t, src, tgt) })
	t.Run("enum-bit-key", func(t *testing.T) { itTestEnumKey(t, src, tgt) })
	t.Run("filters", func(t *testing.T) { itTestFilters(t, src, tgt) })
	t.Run("resume", func(t *testing.T) { itTestResume(t, src, tgt) })
	t.Run("corrupt-chunk", func(t *testing.T) { itTestCorruptChunk(t, src, tgt) })
	// Last: restoring accounts may touch the target's own.
	t.Run("objects-users", func(t *testing.T) { itTestObjectsUsers(t, src, tgt, tgtD) })
}

// itEdgeTables are the tables of the chunk-borders database; keyed ones
// hold more rows than the chunk size.
var itEdgeTables = []string{"cpk", "strpk", "binpk", "dtpk", "decpk", "fltpk", "nullu", "nullu2", "types", "geo", "empty", "nokey", "prefixu", "we`ird tbl"}

func itSetupEdge(t *testing.T, s *itServer) {
	t.Helper()
	s.exec(t,
		"CREATE DATABASE edge CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"CREATE TABLE edge.cpk (a INT NOT NULL, b VARCHAR(20) NOT NULL, v INT, PRIMARY KEY (a, b))",
		"INSERT INTO edge.cpk VALUES (1,'x',1),(1,'Y',2),(1,'z ',3),(1,'a''b',4),(1,'',5),(2,'x',6),(2,'é',7),(2,'中',8),(2,'😀',9),(3,'m',10),(3,'n',11),(3,'o',12),(3,'p',13),(-1,'q',14),(-1,'R',15),(4,'back\\\\slash',16),(4,'tab\\there',17)",
		"CREATE TABLE edge.strpk (k VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, v INT)",
		`INSERT INTO edge.strpk VALUES ('a',1),('B',2),('c',3),('D',4),('e ',5),('F',6),('gé',7),('Hé',8),('ñ',9),('Ö',10),('中',11),('日本',12),('😀',13),('tab\there',14),('new\nline',15),('back\\slash',16),('quote''s',17),('%_like',18),('NULL',19),('\\N',20),(' lead',21),('',22),('zz',23),('Zzz',24)`,
		"CREATE TABLE edge.binpk (k VARBINARY(16) NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO edge.binpk VALUES (X'',1),(X'00',2),(X'0000',3),(X'01',4),(X'09',5),(X'0A',6),(X'5C',7),(X'5C4E',8),(X'61',9),(X'41',10),(X'7F',11),(X'80',12),(X'FF',13),(X'FFFF',14),(X'00FF',15),(X'E282AC',16),(X'20',17),(X'6120',18),(X'27',19)",
		"CREATE TABLE edge.dtpk (k DATETIME(6) NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO edge.dtpk VALUES ('1000-01-01 00:00:00',1),('1970-01-01 00:00:00',2),('2000-02-29 12:00:00.000001',3),('2000-02-29 12:00:00.000002',4),('2000-02-29 12:00:00.5',5),('2000-02-29 12:00:00',6),('2038-01-19 03:14:08',7),('2024-03-31 02:30:00',8),('9999-12-31 23:59:59.999999',9),('2001-01-01 00:00:00.999999',10),('2001-01-01 00:00:01',11)",
		"CREATE TABLE edge.decpk (k DECIMAL(30,10) NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO edge.decpk VALUES (-99999999999999999999.9999999999,1),(-1,2),(-0.0000000001,3),(0,4),(0.0000000001,5),(1,6),(1.5,7),(12345678901234567890.1234567890,8),(99999999999999999999.9999999999,9),(2.5,10),(-2.5,11)",
		"CREATE TABLE edge.fltpk (k FLOAT NOT NULL PRIMARY KEY, d DOUBLE NOT NULL, UNIQUE KEY ud (d))",
		"INSERT INTO edge.fltpk VALUES (0.1, 0.1),(1/3, 1/3),(-123.456, -123.456),(16777217, 9007199254740993),(3.4028234663852886e38, 1.7976931348623157e308),(1.1754943508222875e-38, 2.2250738585072014e-308),(0.2, 0.30000000000000004),(7, 1e-300),(-7, -1e300),(100.25, 100.25)",
		// The only unique key is nullable: NULL rows are a chunk of their own.
		"CREATE TABLE edge.nullu (id INT NULL, v VARCHAR(10), UNIQUE KEY uk (id))",
		"INSERT INTO edge.nullu VALUES (NULL,'n1'),(NULL,'n2'),(NULL,'n3'),(NULL,'n3'),(NULL,NULL),(NULL,'n6')",
		"INSERT INTO edge.nullu SELECT CAST(seq AS SIGNED) * 3 - 20, CONCAT('v', seq) FROM mysql.seq_1_to_14",
		"CREATE TABLE edge.nullu2 (a INT NULL, b VARCHAR(10) NULL, c INT NOT NULL, UNIQUE KEY uk2 (a, b))",
		"INSERT INTO edge.nullu2 VALUES (1,'x',1),(1,NULL,2),(1,NULL,3),(NULL,'x',4),(NULL,'x',5),(NULL,NULL,6),(NULL,NULL,7),(NULL,NULL,8),(2,'y',9),(2,'z',10),(3,'x',11),(3,'y',12),(4,'a',13),(5,'b',14),(6,'c',15),(7,'d',16),(8,'e',17)",
		`CREATE TABLE edge.types (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, bin BLOB, vb VARBINARY(512), j JSON, u VARCHAR(200) CHARACTER SET utf8mb4,
			txt TEXT, gv INT AS (id * 2) VIRTUAL, gs VARCHAR(210) AS (CONCAT(IFNULL(u, '-'), '!')) STORED, bt BIT(10), f FLOAT, d DOUBLE,
			ts TIMESTAMP(6) NULL DEFAULT NULL, dt DATE, tm TIME(3), y YEAR, e ENUM('zeta','alpha','c d'), s SET('x','y','z'), big LONGBLOB, KEY (gs))`,
		// Geometry keeps its SRID.
		"CREATE TABLE edge.geo (id INT NOT NULL PRIMARY KEY, p POINT NOT NULL, g GEOMETRY NULL)",
		"INSERT INTO edge.geo VALUES (1, ST_GeomFromText('POINT(1 2)', 4326), ST_GeomFromText('LINESTRING(0 0,1 1)', 3857)), (2, POINT(3, 4), NULL),"+
			" (3, ST_GeomFromText('POINT(-71.06 42.36)', 4326), ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))', 0)), (4, POINT(0, 0), ST_GeomFromText('MULTIPOINT(1 1,2 2)', 2154)),"+
			" (5, ST_GeomFromText('POINT(5 5)', 4326), ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1))', 4326))",
		"CREATE TABLE edge.empty (id INT NOT NULL PRIMARY KEY, v TEXT)",
		"CREATE TABLE edge.nokey (a INT, b VARCHAR(10), KEY (a))",
		"INSERT INTO edge.nokey VALUES (1,'dup'),(1,'dup'),(1,'dup'),(2,NULL),(2,NULL),(NULL,NULL),(NULL,NULL),(3,'x'),(4,'y'),(5,'z'),(6,'tab\\t'),(7,'\\\\N')",
		// A unique key on a prefix cannot cut chunks.
		"CREATE TABLE edge.prefixu (t VARCHAR(100) NOT NULL, UNIQUE KEY (t(5)))",
		"INSERT INTO edge.prefixu SELECT CONCAT(seq, '-', MD5(seq)) FROM mysql.seq_100_to_120",
		"CREATE TABLE edge.`we``ird tbl` (`co``l 1` VARCHAR(10) NOT NULL PRIMARY KEY, `x.y` INT)",
		"INSERT INTO edge.`we``ird tbl` SELECT CONCAT('k', seq), seq FROM mysql.seq_1_to_12",
	)
	// The column-type table, row by row through one session in UTC.
	conn, err := s.db.SQL().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	rev := slices.Clone(all)
	slices.Reverse(rev)
	texts := []any{"emoji 😀👍🏽👨‍👩‍👧‍👦", "中文 日本語 한국어", "e\u0301 combining é", "Z\u0324\u0354\u0367\u0311\u0313", "zero\u200dwidth\u200b", "مرحبا بالعالم",
		"tab\tnew\nline\rcr", `back\slash \N`, "", "NULL", "nul\x00byte", "quote ' \" ` end", "ctrl-z \x1a", nil, "  spaces  "}
	jsons := []any{`{"a":[1,2,{"b":null}],"é":"é 😀","n":1.5e300}`, `[]`, `"str\twith\\escapes\n"`, `null`, `{"deep":{"x":[true,false,-0.0]}}`, nil}
	floats := []any{"0", "-0", "3.4028234663852886e38", "-3.4028234663852886e38", "1.1754943508222875e-38", "1.401298464324817e-45", "0.1", "0.3333333432674408", "-123.456", "16777217", nil}
	doubles := []any{"0", "-0", "1.7976931348623157e308", "-1.7976931348623157e308", "2.2250738585072014e-308", "4.9406564584124654e-324", "0.1", "0.30000000000000004", "1e-300", "123456789012345680", nil, "3.141592653589793"}
	stamps := []any{"1970-01-01 00:00:01", "2038-01-19 03:14:07.999999", "2000-01-01 00:00:00.5", nil, "2024-03-31 01:30:00.000001"}
	dates := []any{"1000-01-01", "9999-12-31", "2000-02-29", nil}
	times := []any{"-838:59:59.000", "838:59:59", "00:00:00.001", "-00:00:00.5", nil}
	years := []any{"1901", "2155", "0000", nil}
	enums := []any{"zeta", "alpha", "c d", nil}
	sets := []any{"", "x", "x,z", "x,y,z", nil}
	bits := []any{uint64(0), uint64(1023), uint64(512), uint64(1), nil}
	const rows = 30
	for i := 0; i < rows; i++ {
		var bin, vb any
		switch i % 4 {
		case 0:
			bin, vb = all, rev
		case 1:
			bin, vb = rev, []byte{}
		case 2:
			bin, vb = []byte{0, '\\', 'N', '\t', '\n', '\r', 0x1a}, all[:1]
		default:
			bin, vb = nil, nil
		}
		var big any
		if i == 7 {
			big = bytes.Repeat([]byte{0, 0xff, '\\', '\t', '\n', '\r', 'a', 0x80}, 40_000) // 320 KB, 600 KB escaped
		}
		pick := func(vals []any) any { return vals[i%len(vals)] }
		_, err := conn.ExecContext(ctx, "INSERT INTO edge.types (bin, vb, j, u, txt, bt, f, d, ts, dt, tm, y, e, s, big) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			bin, vb, pick(jsons), pick(texts), pick(texts[3:]), pick(bits), pick(floats), pick(doubles), pick(stamps), pick(dates), pick(times), pick(years), pick(enums), pick(sets), big)
		if err != nil {
			t.Fatalf("insert row %d into edge.types: %v", i, err)
		}
	}
	s.exec(t, "CREATE SEQUENCE edge.seq START WITH 100 INCREMENT BY 5", "SELECT NEXTVAL(edge.seq)", "SELECT NEXTVAL(edge.seq)")
	// Statistics, so that the row estimates the chunking uses are current.
	for _, tb := range itEdgeTables {
		s.exec(t, "ANALYZE TABLE edge."+QuoteIdent(tb))
	}
}

func itTestChunkBorders(t *testing.T, src, tgt *itServer) {
	t.Cleanup(func() { itDropDBs(t, src, "edge"); itDropDBs(t, tgt, "edge") })
	itSetupEdge(t, src)
	qualified := make([]string, len(itEdgeTables))
	for i, tb := range itEdgeTables {
		qualified[i] = "edge." + QuoteIdent(tb)
	}

	dir := filepath.Join(t.TempDir(), "zstd")
	m := itDump(t, src, DumpOptions{Out: dir, Threads: 3, ChunkRows: 3, Filter: Filter{Databases: []string{"edge"}}})
	if m.Compression != "zstd" {
		t.Errorf("compression %q, want zstd by default", m.Compression)
	}
	// The manifest: keyed tables have many chunks along their key, the rest one.
	for _, name := range []string{"cpk", "strpk", "binpk", "dtpk", "decpk", "fltpk", "nullu", "nullu2", "types", "we`ird tbl"} {
		tb := itTable(t, m, "edge", name)
		if len(tb.Chunks) < 2 || tb.Key == "" {
			t.Errorf("edge.%s: %d chunks along key %q, want several (ChunkRows 3)", name, len(tb.Chunks), tb.Key)
		}
	}
	for _, name := range []string{"nokey", "prefixu"} {
		if tb := itTable(t, m, "edge", name); len(tb.Chunks) != 1 || tb.Key != "" || tb.Chunks[0].Where != "" {
			t.Errorf("edge.%s: key %q, chunks %+v; want exactly one chunk without a key", name, tb.Key, tb.Chunks)
		}
	}
	for _, name := range []string{"nullu", "nullu2"} {
		tb := itTable(t, m, "edge", name)
		var nullChunk *Chunk
		for _, c := range tb.Chunks {
			if strings.Contains(c.Where, "IS NULL") {
				nullChunk = c
			}
		}
		if nullChunk == nil {
			t.Errorf("edge.%s: no chunk selects the NULL keys: %+v", name, tb.Chunks)
		} else if want := src.count(t, "edge."+name+" WHERE "+nullChunk.Where); nullChunk.Rows != want || want == 0 {
			t.Errorf("edge.%s: NULL chunk %q has %d rows, the source %d", name, nullChunk.Where, nullChunk.Rows, want)
		}
	}
	if tb := itTable(t, m, "edge", "types"); slices.ContainsFunc(tb.Columns, func(c Column) bool { return c.Name == "gv" || c.Name == "gs" }) {
		t.Errorf("edge.types: generated columns are dumped: %+v", tb.Columns)
	}
	for _, name := range itEdgeTables {
		tb := itTable(t, m, "edge", name)
		var sum int64
		for _, c := range tb.Chunks {
			sum += c.Rows
			if !strings.HasSuffix(c.File, ".tsv.zst") {
				t.Errorf("edge.%s: chunk file %s, want .tsv.zst", name, c.File)
			}
			if _, err := os.Stat(filepath.Join(dir, c.File)); err != nil {
				t.Errorf("edge.%s: %v", name, err)
			}
		}
		if want := src.count(t, "edge."+QuoteIdent(name)); sum != tb.Rows || tb.Rows != want {
			t.Errorf("edge.%s: chunks hold %d rows, table %d, source %d", name, sum, tb.Rows, want)
		}
	}
	itVerifyOK(t, src, dir)

	res := itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 3})
	if res.Tables != len(itEdgeTables)+1 { // + the sequence
		t.Errorf("restored %d tables, want %d", res.Tables, len(itEdgeTables)+1)
	}
	itSameTables(t, src, tgt, qualified...)
	itVerifyOK(t, tgt, dir)
	// Row by row for the type zoo, so that a difference is visible.
	all := "SELECT id, HEX(bin), HEX(vb), j, HEX(u), HEX(txt), gv, gs, bt + 0, f, d, CAST(ts AS CHAR), dt, tm, y, e, s, MD5(big) FROM edge.types ORDER BY id"
	if a, b := src.rows(t, all), tgt.rows(t, all); !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Errorf("edge.types row differs:\nsource %s\ntarget %s", a[i], b[i])
			}
		}
	}
	if a, b := src.value(t, "SELECT NEXTVAL(edge.seq)"), tgt.value(t, "SELECT NEXTVAL(edge.seq)"); a != b {
		t.Errorf("sequence next value: source %s, target %s", a, b)
	}
	geo := "SELECT id, ST_SRID(p), ST_AsText(p), ST_SRID(g), ST_AsText(g) FROM edge.geo ORDER BY id"
	if a, b := src.rows(t, geo), tgt.rows(t, geo); !slices.Equal(a, b) {
		t.Errorf("edge.geo differs (SRID, WKT):\nsource %q\ntarget %q", a, b)
	}

	// The same without compression, restored over the first copy.
	dir2 := filepath.Join(t.TempDir(), "plain")
	m2 := itDump(t, src, DumpOptions{Out: dir2, Threads: 2, ChunkRows: 3, Compress: "none", Filter: Filter{Databases: []string{"edge"}}})
	if m2.Compression != "none" {
		t.Errorf("compression %q, want none", m2.Compression)
	}
	for _, tb := range m2.Tables {
		for _, c := range tb.Chunks {
			if !strings.HasSuffix(c.File, ".tsv") {
				t.Errorf("%s: chunk file %s, want .tsv", tb, c.File)
			}
		}
	}
	tgt.exec(t, "UPDATE edge.cpk SET v = v + 1", "DELETE FROM edge.strpk WHERE v < 5")
	itRestore(t, tgt, RestoreOptions{Dir: dir2, Threads: 2, DropExisting: true})
	itSameTables(t, src, tgt, qualified...)
	itVerifyOK(t, tgt, dir2)

	// Verify finds a changed value, a missing row and a missing table.
	tgt.exec(t, "UPDATE edge.strpk SET v = v + 1 WHERE k = 'gé'", "DELETE FROM edge.binpk WHERE k = X'00FF'", "DROP TABLE edge.nokey")
	rep, err := Verify(context.Background(), tgt.key, tgt.opts, VerifyOptions{Dir: dir2, Threads: 2})
	if err != nil {
		t.Fatalf("verify a changed copy: %v", err)
	}
	bad := map[string]bool{}
	for _, d := range rep.Details {
		bad[d.Table] = true
	}
	if rep.OK() || rep.Mismatches != 2 || !bad["edge.strpk"] || !bad["edge.binpk"] || !slices.Equal(rep.Missing, []string{"edge.nokey"}) {
		t.Errorf("verify of a changed copy: %s; mismatches %d, details %+v, missing %v", rep, rep.Mismatches, rep.Details, rep.Missing)
	}
}

// itTestEnumKey cuts chunks along an ENUM primary key whose
// members are not in alphabetical order: the index orders by member
// number, comparisons with a string literal order by text.
func itTestEnumKey(t *testing.T, src, tgt *itServer) {
	t.Cleanup(func() { itDropDBs(t, src, "ekey"); itDropDBs(t, tgt, "ekey") })
	// BIT: the boundary values are raw bytes, compared as strings.
	src.exec(t,
		"CREATE DATABASE ekey",
		"CREATE TABLE ekey.e (k ENUM('h','g','f','e','d','c','b','a') NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO ekey.e VALUES ('a',1),('b',2),('c',3),('d',4),('e',5),('f',6),('g',7),('h',8)",
		"CREATE TABLE ekey.bits (k BIT(8) NOT NULL PRIMARY KEY, v INT)",
		"INSERT INTO ekey.bits SELECT seq, seq FROM mysql.seq_0_to_255 WHERE seq % 9 = 0 OR seq IN (9, 10, 13, 39, 92, 255)",
		"ANALYZE TABLE ekey.e, ekey.bits",
	)
	dir := filepath.Join(t.TempDir(), "dump")
	m, err := Dump(context.Background(), src.key, src.opts, DumpOptions{Out: dir, Threads: 2, ChunkRows: 3, Filter: Filter{Databases: []string{"ekey"}}})
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	for _, name := range []string{"e", "bits"} {
		tb := itTable(t, m, "ekey", name)
		if want := src.count(t, "ekey."+name); tb.Rows != want {
			var wheres []string
			for _, c := range tb.Chunks {
				wheres = append(wheres, fmt.Sprintf("%s (%d rows)", c.Where, c.Rows))
			}
			t.Errorf("ekey.%s: the dump holds %d rows, the source %d; chunks: %s", name, tb.Rows, want, strings.Join(wheres, "; "))
		}
	}
	if _, err := Restore(context.Background(), tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	itSameTables(t, src, tgt, "ekey.e", "ekey.bits")
}

func itSetupFilters(t *testing.T, s *itServer) {
	t.Helper()
	s.exec(t,
		"CREATE DATABASE f1", "CREATE DATABASE f2", "CREATE DATABASE f3",
		"CREATE TABLE f1.t1 (id INT NOT NULL PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO f1.t1 SELECT seq, CONCAT('r', seq) FROM mysql.seq_1_to_60",
		"CREATE TABLE f1.t2 (id INT NOT NULL PRIMARY KEY)",
		"INSERT INTO f1.t2 SELECT seq FROM mysql.seq_1_to_10",
		"CREATE TABLE f1.logs_a (id INT NOT NULL PRIMARY KEY)",
		"INSERT INTO f1.logs_a SELECT seq FROM mysql.seq_1_to_10",
		"CREATE TABLE f1.logs_b (id INT NOT NULL PRIMARY KEY)",
		"INSERT INTO f1.logs_b SELECT seq FROM mysql.seq_1_to_10",
		"CREATE VIEW f1.v1 AS SELECT id, v FROM f1.t1 WHERE id < 10",
		"CREATE FUNCTION f1.twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
		"CREATE TABLE f2.t1 (id INT NOT NULL PRIMARY KEY, w TEXT)",
		"INSERT INTO f2.t1 SELECT seq, REPEAT('w', seq) FROM mysql.seq_1_to_25",
		"CREATE TABLE f3.x (k VARCHAR(10) NOT NULL PRIMARY KEY)",
		"INSERT INTO f3.x VALUES ('a'),('b'),('c')",
		"ANALYZE TABLE f1.t1, f1.t2, f1.logs_a, f1.logs_b, f2.t1, f3.x",
	)
}

func itDropDBs(t *testing.T, s *itServer, dbs ...string) {
	t.Helper()
	for _, d := range dbs {
		s.exec(t, "DROP DATABASE IF EXISTS "+QuoteIdent(d))
	}
}

func itTestFilters(t *testing.T, src, tgt *itServer) {
	itSetupFilters(t, src)
	dbs := []string{"f1", "f2", "f3"}
	t.Cleanup(func() { itDropDBs(t, src, dbs...); itDropDBs(t, tgt, dbs...) })
	ctx := context.Background()
	names := func(m *Manifest) []string {
		var out []string
		for _, tb := range m.Tables {
			out = append(out, tb.String())
		}
		slices.Sort(out)
		return out
	}
	dbNames := func(m *Manifest) []string {
		var out []string
		for _, d := range m.Databases {
			out = append(out, d.Name)
		}
		slices.Sort(out)
		return out
	}

	t.Run("everything", func(t *testing.T) {
		m := itDump(t, src, DumpOptions{Threads: 2, ChunkRows: 7})
		for _, d := range m.Databases {
			if systemDatabases[d.Name] {
				t.Errorf("system database %s dumped without being named", d.Name)
			}
		}
		want := []string{"f1.logs_a", "f1.logs_b", "f1.t1", "f1.t2", "f2.t1", "f3.x"}
		if got := names(m); !slices.Equal(got, want) {
			t.Errorf("tables %v, want %v", got, want)
		}
	})

	t.Run("databases", func(t *testing.T) {
		t.Cleanup(func() { itDropDBs(t, tgt, dbs...) })
		dir := filepath.Join(t.TempDir(), "d")
		m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 7, Filter: Filter{Databases: []string{"f1", "f2"}}})
		if got := dbNames(m); !slices.Equal(got, []string{"f1", "f2"}) {
			t.Errorf("databases %v, want [f1 f2]", got)
		}
		if itHasTable(m, "f3", "x") {
			t.Errorf("f3.x dumped")
		}
		// Restore only f1 of it: f2 stays away.
		res := itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2, Databases: []string{"f1"}})
		if res.Tables != 4 {
			t.Errorf("restoring database f1 restored %d tables, want 4", res.Tables)
		}
		itSameTables(t, src, tgt, "f1.t1", "f1.t2", "f1.logs_a", "f1.logs_b")
		if v := tgt.value(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('f2','f3')"); v != "0" {
			t.Errorf("restore of database f1 alone created f2 or f3 too: databases %v", tgt.rows(t, "SHOW DATABASES"))
			itDropDBs(t, tgt, "f2")
		}
		if v := tgt.value(t, "SELECT COUNT(*) FROM f1.v1"); v != "9" {
			t.Errorf("view f1.v1 on the target has %s rows, want 9", v)
		}
		if v := tgt.value(t, "SELECT f1.twice(21)"); v != "42" {
			t.Errorf("function f1.twice(21) on the target = %s", v)
		}
		rep := itVerifyOK(t, tgt, dir, "f1")
		if len(rep.Tables) != 4 {
			t.Errorf("verify of database f1 checked %d tables, want 4: %+v", len(rep.Tables), rep.Tables)
		}
		// Then f2, next to f1.
		res = itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2, Databases: []string{"f2"}})
		if res.Tables != 1 {
			t.Errorf("restoring database f2 restored %d tables, want 1", res.Tables)
		}
		itSameTables(t, src, tgt, "f2.t1")
		itVerifyOK(t, tgt, dir)
		_, err := Restore(ctx, tgt.key, tgt.opts, RestoreOptions{Dir: dir, Databases: []string{"f3"}})
		itWantCode(t, "restore a database not in the dump", err, dbpilot.ENOTFOUND, "f3")
		_, err = Dump(ctx, src.key, src.opts, DumpOptions{Out: filepath.Join(t.TempDir(), "x"), Filter: Filter{Databases: []string{"f1", "nope"}}})
		itWantCode(t, "dump a missing database", err, dbpilot.ENOTFOUND, "nope")
	})

	t.Run("include-exclude", func(t *testing.T) {
		t.Cleanup(func() { itDropDBs(t, tgt, dbs...) })
		dir := filepath.Join(t.TempDir(), "d")
		m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 7, Filter: Filter{Include: []string{"f1.t*", "f1.logs_?", "f3"}, Exclude: []string{"f1.t2", "f1.*_b"}}})
		want := []string{"f1.logs_a", "f1.t1", "f3.x"}
		if got := names(m); !slices.Equal(got, want) {
			t.Errorf("tables %v, want %v", got, want)
		}
		if got := dbNames(m); slices.Contains(got, "f2") {
			t.Errorf("databases %v include f2, which no pattern selects", got)
		}
		itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2})
		itSameTables(t, src, tgt, "f1.t1", "f1.logs_a", "f3.x")
		for _, absent := range [][2]string{{"f1", "t2"}, {"f1", "logs_b"}, {"f2", "t1"}} {
			if tgt.tableExists(t, absent[0], absent[1]) {
				t.Errorf("%s.%s restored though excluded", absent[0], absent[1])
			}
		}
		itDropDBs(t, tgt, dbs...)

		// Patterns that leave no table: refused, naming them, not an
		// empty dump.
		_, err := Dump(ctx, src.key, src.opts, DumpOptions{Out: filepath.Join(t.TempDir(), "x"), Filter: Filter{Include: []string{"f1"}, Exclude: []string{"f1.*"}}})
		itWantCode(t, "dump with patterns that match no table", err, dbpilot.EINVALID, "no table or view matches --include f1 --exclude 'f1.*'")

		// A pattern without a dot excludes a whole database.
		m = itDump(t, src, DumpOptions{Threads: 2, ChunkRows: 7, Filter: Filter{Exclude: []string{"f2", "f1"}}})
		if got := names(m); !slices.Equal(got, []string{"f3.x"}) {
			t.Errorf("excluding f1 and f2: tables %v, want [f3.x]", got)
		}
	})

	t.Run("where", func(t *testing.T) {
		t.Cleanup(func() { itDropDBs(t, tgt, dbs...) })
		dir := filepath.Join(t.TempDir(), "d")
		const cond = "id % 3 = 0 OR v = 'r1'"
		m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 7, Filter: Filter{Databases: []string{"f1"}}, Where: map[string]string{"f1.t1": cond}})
		tb := itTable(t, m, "f1", "t1")
		if tb.Where != cond || len(tb.Chunks) < 2 {
			t.Errorf("f1.t1: where %q, %d chunks", tb.Where, len(tb.Chunks))
		}
		want := src.count(t, "f1.t1 WHERE "+cond)
		if tb.Rows != want {
			t.Errorf("f1.t1: %d rows dumped, %d match %q", tb.Rows, want, cond)
		}
		itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2})
		if a, b := src.rows(t, "SELECT * FROM f1.t1 WHERE "+cond+" ORDER BY id"), tgt.rows(t, "SELECT * FROM f1.t1 ORDER BY id"); !slices.Equal(a, b) {
			t.Errorf("f1.t1 restored with --where:\n got %v\nwant %v", b, a)
		}
		itSameTables(t, src, tgt, "f1.t2", "f1.logs_a") // the other tables whole
		itVerifyOK(t, tgt, dir)
		itDropDBs(t, tgt, dbs...)
		_, err := Dump(ctx, src.key, src.opts, DumpOptions{Out: filepath.Join(t.TempDir(), "x"), Filter: Filter{Databases: []string{"f1"}}, Where: map[string]string{"f2.t1": "id > 1"}})
		itWantCode(t, "--where on a table not dumped", err, dbpilot.EINVALID, "f2.t1")
	})

	t.Run("no-data", func(t *testing.T) {
		t.Cleanup(func() { itDropDBs(t, tgt, dbs...) })
		dir := filepath.Join(t.TempDir(), "d")
		m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, NoData: true})
		if len(m.Tables) != 6 {
			t.Errorf("%d tables in a --no-data dump, want 6", len(m.Tables))
		}
		for _, tb := range m.Tables {
			if len(tb.Chunks) != 0 || tb.Rows != 0 {
				t.Errorf("%s: %d chunks, %d rows in a --no-data dump", tb, len(tb.Chunks), tb.Rows)
			}
		}
		if files, _ := os.ReadDir(filepath.Join(dir, dataDir)); len(files) != 0 {
			t.Errorf("--no-data dump has data files: %v", files)
		}
		itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2})
		for _, tb := range []string{"f1.t1", "f1.t2", "f1.logs_a", "f1.logs_b", "f2.t1", "f3.x"} {
			if n := tgt.count(t, tb); n != 0 {
				t.Errorf("%s has %d rows after restoring a --no-data dump", tb, n)
			}
		}
		if a, b := src.value(t, "SHOW CREATE TABLE f2.t1"), tgt.value(t, "SHOW CREATE TABLE f2.t1"); a != b {
			t.Errorf("f2.t1 schema differs")
		}
		itDropDBs(t, tgt, dbs...)
	})
}

func itTestResume(t *testing.T, src, tgt *itServer) {
	src.exec(t,
		"CREATE DATABASE res",
		"CREATE TABLE res.big (id INT NOT NULL PRIMARY KEY, payload VARCHAR(100), KEY (payload))",
		"INSERT INTO res.big SELECT seq, MD5(seq) FROM mysql.seq_1_to_300",
		"CREATE TABLE res.heap (a INT, b VARCHAR(10))", // no key: duplicates are possible
		"INSERT INTO res.heap SELECT seq % 5, 'dup' FROM mysql.seq_1_to_40",
		"CREATE TABLE res.nu (id INT NULL, UNIQUE KEY (id))",
		"INSERT INTO res.nu SELECT IF(seq % 4 = 0, NULL, seq) FROM mysql.seq_1_to_60",
		"ANALYZE TABLE res.big, res.heap, res.nu",
	)
	t.Cleanup(func() { itDropDBs(t, src, "res"); itDropDBs(t, tgt, "res") })
	tables := []string{"res.big", "res.heap", "res.nu"}
	dir := filepath.Join(t.TempDir(), "d")
	m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 10, Filter: Filter{Databases: []string{"res"}}})
	if m.Totals.Chunks < 20 {
		t.Fatalf("only %d chunks; want many", m.Totals.Chunks)
	}

	// Interrupt after three chunks.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int64
	_, err := Restore(ctx, tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2, DeferIndexes: true, OnChunk: func(*Table, *Chunk) {
		if done.Add(1) == 3 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatalf("restore cancelled after 3 chunks returned no error")
	}
	itOneLine(t, "interrupted restore", err)
	t.Logf("interrupted restore: %v", err)
	var loaded int64
	for _, tb := range tables {
		loaded += tgt.count(t, tb)
	}
	if loaded == 0 || loaded >= m.Totals.Rows {
		t.Fatalf("after the interruption the target has %d of %d rows", loaded, m.Totals.Rows)
	}
	// Make the last recorded chunk look committed but unrecorded (a crash
	// between COMMIT and the progress record): resume must reload it
	// without doubling its rows.
	prog := filepath.Join(dir, ProgressFile)
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "target ") {
		t.Fatalf("progress file after 3 chunks: %q", b)
	}
	if err := os.WriteFile(prog, []byte(strings.Join(lines[:len(lines)-1], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The progress file belongs to this target: resuming elsewhere is refused.
	_, err = Restore(context.Background(), src.key, src.opts, RestoreOptions{Dir: dir, Resume: true})
	itWantCode(t, "resume onto another server", err, dbpilot.ECONFLICT, tgt.key.String())

	// Without --resume or --drop-existing the existing tables are refused.
	_, err = Restore(context.Background(), tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2})
	itWantCode(t, "restore onto existing tables", err, dbpilot.ECONFLICT, "--drop-existing", "res.")
	if _, err := os.Stat(prog); err != nil {
		t.Fatalf("the refused restore removed the progress file: %v", err)
	}

	res, err := Restore(context.Background(), tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2, Resume: true, DeferIndexes: true})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Skipped < 2 || res.Skipped >= m.Totals.Chunks {
		t.Errorf("resume skipped %d of %d chunks", res.Skipped, m.Totals.Chunks)
	}
	itSameTables(t, src, tgt, tables...)
	itVerifyOK(t, tgt, dir)
	if dup := tgt.value(t, "SELECT COUNT(*) FROM (SELECT id FROM res.big GROUP BY id HAVING COUNT(*) > 1) d"); dup != "0" {
		t.Errorf("%s duplicate ids in res.big", dup)
	}
	if a, b := src.value(t, "SHOW CREATE TABLE res.big"), tgt.value(t, "SHOW CREATE TABLE res.big"); a != b {
		t.Errorf("res.big schema after a resumed restore with deferred indexes:\n%s\nwant\n%s", b, a)
	}
	// A resume of a finished restore loads nothing again.
	res, err = Restore(context.Background(), tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2, Resume: true})
	if err != nil {
		t.Fatalf("second resume: %v", err)
	}
	if res.Skipped != m.Totals.Chunks {
		t.Errorf("second resume skipped %d of %d chunks", res.Skipped, m.Totals.Chunks)
	}
	itSameTables(t, src, tgt, tables...)

	// --drop-existing replaces changed tables.
	tgt.exec(t, "DELETE FROM res.big WHERE id > 100", "INSERT INTO res.heap VALUES (99, 'extra')", "ALTER TABLE res.nu ADD COLUMN extra INT")
	itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2, DropExisting: true})
	itSameTables(t, src, tgt, tables...)
	itVerifyOK(t, tgt, dir)
}

// itTestObjectsUsers restores routines, triggers, views on views, events
// and accounts, out of the binary log.
func itTestObjectsUsers(t *testing.T, src, tgt *itServer, tgtD *sandbox.Descriptor) {
	ctx := context.Background()
	// A session opened before the restore, to put the target's accounts
	// back whatever happens to them.
	keep, err := tgt.db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resetAccounts := func() {
		for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
			for _, c := range []mysql.Credentials{tgtD.Admin, tgtD.Repl} {
				if _, err := keep.ExecContext(ctx, fmt.Sprintf("ALTER USER %s@%s IDENTIFIED BY %s", quoteString(c.User), quoteString(host), quoteString(c.Password))); err != nil {
					t.Errorf("reset %s on the target: %v", c.User, err)
				}
			}
		}
	}
	t.Cleanup(func() {
		defer keep.Close()
		resetAccounts()
		_, _ = keep.ExecContext(ctx, "DROP USER IF EXISTS 'app_user'@'%'")
		_, _ = keep.ExecContext(ctx, "DROP DATABASE IF EXISTS obj")
		itDropDBs(t, src, "obj")
		src.exec(t, "DROP USER IF EXISTS 'app_user'@'%'")
	})
	const appPassword = "app-Secret-42"
	src.exec(t,
		"CREATE DATABASE obj",
		"CREATE TABLE obj.t (id INT NOT NULL PRIMARY KEY, v INT)",
		"CREATE TABLE obj.audit (id INT, note VARCHAR(20))",
		"CREATE TRIGGER obj.t_ai AFTER INSERT ON obj.t FOR EACH ROW INSERT INTO obj.audit VALUES (NEW.id, 'ins')",
		"CREATE PROCEDURE obj.bump(IN n INT) UPDATE obj.t SET v = v + n",
		"CREATE FUNCTION obj.half(x INT) RETURNS INT DETERMINISTIC RETURN x DIV 2",
		"CREATE VIEW obj.v_base AS SELECT id, v FROM obj.t WHERE v > 10",
		"CREATE VIEW obj.a_on_base AS SELECT COUNT(*) AS n FROM obj.v_base", // sorts before the view it reads
		"CREATE EVENT obj.ev ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM obj.audit",
		"INSERT INTO obj.t SELECT seq, seq FROM mysql.seq_1_to_30",
		"CREATE USER 'app_user'@'%' IDENTIFIED BY '"+appPassword+"'",
		"GRANT SELECT, INSERT ON obj.* TO 'app_user'@'%'",
	)
	dir := filepath.Join(t.TempDir(), "d")
	m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 7, Users: true, Filter: Filter{Databases: []string{"obj"}}})
	if m.Users == "" {
		t.Fatalf("--users dump has no users file")
	}
	users, err := os.ReadFile(filepath.Join(dir, m.Users))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(users), "app_user") || strings.Contains(string(users), "'root'") || strings.Contains(string(users), "`root`") {
		t.Errorf("users file:\n%s", users)
	}
	binlogBefore := tgt.value(t, "SELECT @@gtid_binlog_pos")
	itRestore(t, tgt, RestoreOptions{Dir: dir, Threads: 2, Users: true, NoBinlog: true})
	if after := tgt.value(t, "SELECT @@gtid_binlog_pos"); after != binlogBefore {
		t.Errorf("a --no-binlog restore wrote to the target's binary log: %q → %q", binlogBefore, after)
	}
	// Accounts that exist on the target (the sandboxes' dbpilot and repl,
	// with other passwords on the source) keep their passwords.
	for _, c := range []mysql.Credentials{tgtD.Admin, tgtD.Repl} {
		db, err := mysql.Open(ctx, tgt.key, mysql.Options{Credentials: c})
		if err != nil {
			var lines []string
			for _, l := range strings.Split(string(users), "\n") {
				if strings.Contains(l, c.User) && strings.Contains(l, "127.0.0.1") {
					lines = append(lines, l)
				}
			}
			t.Errorf("after restore --users the target's own account %s cannot log in with its password: %v; the dump's statements for it: %q", c.User, err, lines)
			continue
		}
		db.Close()
	}
	// So that the checks below can connect whatever happened.
	resetAccounts()
	// The trigger must not have fired during the load.
	itSameTables(t, src, tgt, "obj.t", "obj.audit")
	itVerifyOK(t, tgt, dir)
	tgt.exec(t, "INSERT INTO obj.t VALUES (100, 1)", "CALL obj.bump(2)")
	if v := tgt.value(t, "SELECT COUNT(*) FROM obj.audit"); v != "31" {
		t.Errorf("trigger on the target: obj.audit has %s rows, want 31", v)
	}
	if v := tgt.value(t, "SELECT obj.half(9) + SUM(v) FROM obj.t"); v != fmt.Sprint(4+465+31*2+1) {
		t.Errorf("function and procedure on the target: %s", v)
	}
	if v := tgt.value(t, "SELECT n FROM obj.a_on_base"); v != "22" {
		t.Errorf("view on a view on the target: %s, want 22", v)
	}
	if v := tgt.value(t, "SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'obj' AND EVENT_NAME = 'ev'"); v != "1" {
		t.Errorf("event obj.ev missing on the target")
	}
	// The account came along, with its password and grants.
	app, err := mysql.Open(ctx, tgt.key, mysql.Options{Credentials: mysql.Credentials{User: "app_user", Password: appPassword}})
	if err != nil {
		t.Fatalf("app_user cannot log in to the target: %v", err)
	}
	defer app.Close()
	if v, _, err := app.QueryValue(ctx, "SELECT COUNT(*) FROM obj.t"); err != nil || v != "31" {
		t.Errorf("app_user reads obj.t: %q, %v", v, err)
	}
	if _, err := app.Query(ctx, "SELECT COUNT(*) FROM mysql.user"); mysql.ServerErrorNumber(err) != 1142 {
		t.Errorf("app_user reads mysql.user: %v, want SELECT command denied", err)
	}
}

// itCorrupt damages a file in its middle: "flip" flips one byte, "garble"
// zeroes 16 bytes (in a compressed file that breaks the zstd block itself).
func itCorrupt(t *testing.T, path, how string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 64 {
		t.Fatalf("%s: only %d bytes", path, len(b))
	}
	mid := len(b) / 2
	switch how {
	case "flip":
		b[mid] ^= 0x55
	case "garble":
		clear(b[mid-8 : mid+8])
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func itTestCorruptChunk(t *testing.T, src, tgt *itServer) {
	t.Cleanup(func() { itDropDBs(t, src, "cor"); itDropDBs(t, tgt, "cor") })
	src.exec(t,
		"CREATE DATABASE cor",
		"CREATE TABLE cor.multi (id INT NOT NULL PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO cor.multi SELECT seq, MD5(seq) FROM mysql.seq_1_to_100",
		"CREATE TABLE cor.single (a INT, b VARCHAR(40))",
		"INSERT INTO cor.single SELECT seq, SHA1(seq) FROM mysql.seq_1_to_30",
		"CREATE TABLE cor.wide (id INT NOT NULL PRIMARY KEY, v MEDIUMTEXT)",
	)
	// Chunks of 400 KB of random words: zstd compresses them to a few
	// blocks, and a damaged block is found by the decompressor before the
	// file's end.
	r := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	for i := 1; i <= 40; i++ {
		var v strings.Builder
		for v.Len() < 40_000 {
			v.WriteString(words[r.IntN(len(words))])
			v.WriteByte(" \t\n,"[r.IntN(4)])
		}
		if _, err := src.db.SQL().Exec("INSERT INTO cor.wide VALUES (?, ?)", i, v.String()); err != nil {
			t.Fatal(err)
		}
	}
	src.exec(t, "ANALYZE TABLE cor.multi, cor.single, cor.wide")
	cases := []struct{ compress, victim, how string }{
		{"zstd", "single", "flip"}, {"zstd", "multi", "flip"}, {"none", "single", "flip"}, {"none", "multi", "flip"},
		{"zstd", "wide", "flip"}, {"zstd", "wide", "garble"}, {"none", "wide", "garble"},
	}
	for _, tc := range cases {
		t.Run(tc.compress+"-"+tc.victim+"-"+tc.how, func(t *testing.T) {
			itDropDBs(t, tgt, "cor")
			dir := filepath.Join(t.TempDir(), "d")
			m := itDump(t, src, DumpOptions{Out: dir, Threads: 2, ChunkRows: 10, Compress: tc.compress, Filter: Filter{Databases: []string{"cor"}}})
			tb := itTable(t, m, "cor", tc.victim)
			c := tb.Chunks[len(tb.Chunks)/2]
			if tc.victim != "single" && len(tb.Chunks) < 3 {
				t.Fatalf("cor.%s has %d chunks", tc.victim, len(tb.Chunks))
			}
			if tc.compress == "zstd" && tc.victim != "single" && tc.victim != "multi" && c.FileSize*3 > c.Bytes*2 {
				t.Fatalf("%s: %d bytes compressed to %d; want real compression", c.File, c.Bytes, c.FileSize)
			}
			itCorrupt(t, filepath.Join(dir, c.File), tc.how)
			_, err := Restore(context.Background(), tgt.key, tgt.opts, RestoreOptions{Dir: dir, Threads: 2})
			if err == nil {
				t.Fatalf("restore of a dump with a corrupted %s succeeded", c.File)
			}
			t.Logf("%v", err)
			itWantCode(t, "restore a corrupted chunk", err, dbpilot.EINVALID, filepath.Base(c.File))
			msg := err.Error()
			if !strings.Contains(msg, "corrupt") && !strings.Contains(msg, "checksum") {
				t.Errorf("error does not say the file is corrupt: %v", err)
			}
			if n := strings.Count(msg, c.File); n > 1 {
				t.Errorf("error repeats itself (%d times the path): %v", n, err)
			}
			// Nothing of the corrupted chunk is on the target.
			where := c.Where
			if where == "" {
				where = "1"
			}
			if tgt.tableExists(t, "cor", tc.victim) {
				if n := tgt.count(t, "cor."+tc.victim+" WHERE "+where); n != 0 {
					t.Errorf("%d rows of the corrupted chunk %s were committed", n, c.File)
				}
				if n := tgt.count(t, "cor."+tc.victim); n > tb.Rows-c.Rows {
					t.Errorf("cor.%s has %d rows; without the corrupted chunk at most %d", tc.victim, n, tb.Rows-c.Rows)
				}
			}
		})
	}
}

// itLimitedFile fails with ENOSPC once the shared budget is spent.
type itLimitedFile struct {
	f      fileWriter
	path   string
	budget *atomic.Int64
}

func (w *itLimitedFile) Write(p []byte) (int, error) {
	left := w.budget.Add(-int64(len(p)))
	if left >= 0 {
		return w.f.Write(p)
	}
	n := max(len(p)+int(left), 0)
	w.budget.Store(-1)
	if n > 0 {
		if m, err := w.f.Write(p[:n]); err != nil {
			return m, err
		}
	}
	return n, &os.PathError{Op: "write", Path: w.path, Err: syscall.ENOSPC}
}

func (w *itLimitedFile) Sync() error  { return w.f.Sync() }
func (w *itLimitedFile) Close() error { return w.f.Close() }

// TestBackupFaults: wrong password, a full disk, an output directory in
// use, and the server dying in the middle of a dump.
func TestBackupFaults(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	s := itConnect(t, d, 0)
	s.exec(t,
		"CREATE DATABASE fault",
		"CREATE TABLE fault.t (id INT NOT NULL PRIMARY KEY, payload VARCHAR(100))",
		"INSERT INTO fault.t SELECT seq, CONCAT(MD5(seq), SHA1(seq)) FROM mysql.seq_1_to_3000",
		"ANALYZE TABLE fault.t",
	)
	ctx := context.Background()
	incomplete := func(t *testing.T, dir string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
			t.Errorf("failed dump in %s has a manifest", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, IncompleteFile)); err != nil {
			t.Errorf("failed dump in %s is not marked incomplete: %v", dir, err)
		}
		_, err := ReadManifest(dir)
		itWantCode(t, "read the manifest of a failed dump", err, dbpilot.EINVALID, "incomplete")
		_, err = Restore(ctx, s.key, s.opts, RestoreOptions{Dir: dir})
		itWantCode(t, "restore a failed dump", err, dbpilot.EINVALID, "incomplete")
		_, err = Verify(ctx, s.key, s.opts, VerifyOptions{Dir: dir})
		itWantCode(t, "verify a failed dump", err, dbpilot.EINVALID, "incomplete")
	}

	t.Run("wrong-password", func(t *testing.T) {
		const secret = "not-the-Password-7731"
		bad := mysql.Options{Credentials: mysql.Credentials{User: d.Admin.User, Password: secret}}
		dir := filepath.Join(t.TempDir(), "d")
		_, err := Dump(ctx, s.key, bad, DumpOptions{Out: dir})
		itWantCode(t, "dump with a wrong password", err, dbpilot.EAUTH)
		itOneLine(t, "dump with a wrong password", err, secret, d.Admin.Password)
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
			t.Errorf("a manifest was written")
		}
		okDir := filepath.Join(t.TempDir(), "ok")
		itDump(t, s, DumpOptions{Out: okDir, Threads: 1, Filter: Filter{Databases: []string{"fault"}}, NoData: true})
		_, err = Restore(ctx, s.key, bad, RestoreOptions{Dir: okDir})
		itWantCode(t, "restore with a wrong password", err, dbpilot.EAUTH)
		itOneLine(t, "restore with a wrong password", err, secret, d.Admin.Password)
		_, err = Verify(ctx, s.key, bad, VerifyOptions{Dir: okDir})
		itWantCode(t, "verify with a wrong password", err, dbpilot.EAUTH)
		itOneLine(t, "verify with a wrong password", err, secret, d.Admin.Password)
	})

	t.Run("out-not-empty", func(t *testing.T) {
		dir := t.TempDir()
		keep := filepath.Join(dir, "precious.txt")
		if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Dump(ctx, s.key, s.opts, DumpOptions{Out: dir})
		itWantCode(t, "dump into a directory in use", err, dbpilot.ECONFLICT, dir)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("the refused dump changed %s: %v", dir, entries)
		}
		// A dump directory cannot be reused either.
		done := filepath.Join(t.TempDir(), "done")
		itDump(t, s, DumpOptions{Out: done, NoData: true, Filter: Filter{Databases: []string{"fault"}}})
		_, err = Dump(ctx, s.key, s.opts, DumpOptions{Out: done})
		itWantCode(t, "dump into a finished dump", err, dbpilot.ECONFLICT)
		if _, err := ReadManifest(done); err != nil {
			t.Errorf("the refused dump damaged the finished one: %v", err)
		}
		_, err = ReadManifest(filepath.Join(t.TempDir(), "missing"))
		itWantCode(t, "read a missing dump", err, dbpilot.ENOTFOUND)
		_, err = ReadManifest(dir)
		itWantCode(t, "read a directory that is no dump", err, dbpilot.EINVALID, "not a dbpilot dump")
	})

	t.Run("disk-full", func(t *testing.T) {
		orig := createFile
		t.Cleanup(func() { createFile = orig })
		budget := &atomic.Int64{}
		budget.Store(16 << 10)
		createFile = func(path string) (fileWriter, error) {
			f, err := orig(path)
			if err != nil {
				return nil, err
			}
			return &itLimitedFile{f: f, path: path, budget: budget}, nil
		}
		for _, compress := range []string{"zstd", "none"} {
			budget.Store(16 << 10)
			dir := filepath.Join(t.TempDir(), compress)
			_, err := Dump(ctx, s.key, s.opts, DumpOptions{Out: dir, Threads: 2, ChunkRows: 100, Compress: compress, Filter: Filter{Databases: []string{"fault"}}})
			if err == nil {
				t.Fatalf("dump onto a full disk (%s) succeeded", compress)
			}
			if !strings.Contains(err.Error(), "no space left on device") || !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("dump onto a full disk (%s): %v", compress, err)
			}
			itOneLine(t, "dump onto a full disk", err)
			incomplete(t, dir)
			if b, _ := os.ReadFile(filepath.Join(dir, IncompleteFile)); !strings.Contains(string(b), "no space left") {
				t.Errorf("the incomplete marker does not say why: %q", b)
			}
		}
	})

	t.Run("server-dies", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "d")
		var once sync.Once
		var killErr error
		start := time.Now()
		_, err := Dump(ctx, s.key, s.opts, DumpOptions{Out: dir, Threads: 2, ChunkRows: 20, Filter: Filter{Databases: []string{"fault"}},
			OnChunk: func(*Table, *Chunk) { once.Do(func() { killErr = sandbox.Kill(d, "node1") }) }})
		if killErr != nil {
			t.Fatalf("kill the server: %v", killErr)
		}
		if err == nil {
			t.Fatalf("dump survived the death of its server")
		}
		t.Logf("dump after %s: %v", time.Since(start).Round(time.Millisecond), err)
		if time.Since(start) > 30*time.Second {
			t.Errorf("the dump took %s to notice the server died", time.Since(start))
		}
		itOneLine(t, "dump of a dying server", err, d.Admin.Password)
		if c := dbpilot.ErrorCode(err); c != dbpilot.EUNAVAIL {
			t.Errorf("dump of a dying server: code %s, want EUNAVAIL: %v", c, err)
		}
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
			t.Errorf("failed dump in %s has a manifest", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, IncompleteFile)); err != nil {
			t.Errorf("failed dump in %s is not marked incomplete: %v", dir, err)
		}
		_, err = ReadManifest(dir)
		itWantCode(t, "read the manifest of a failed dump", err, dbpilot.EINVALID, "incomplete")
	})
}
