package dbcopy

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// end is one sandbox server of a test.
type end struct {
	key  dbpilot.InstanceKey
	opts mysql.Options
	db   *sql.DB
}

func sandboxPair(t *testing.T) (a, b end) {
	t.Helper()
	testutil.Home(t)
	da := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	db := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	return connect(t, da), connect(t, db)
}

func connect(t *testing.T, d *sandbox.Descriptor) end {
	t.Helper()
	e := end{key: d.Nodes[0].Key(), opts: d.AdminOptions()}
	o := e.opts
	o.MaxConns = 4
	m, err := mysql.Open(context.Background(), e.key, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e.db = m.SQL()
	return e
}

func (e end) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := e.db.Exec(s); err != nil {
			t.Fatalf("%s: %s: %v", e.key, s, err)
		}
	}
}

func (e end) value(t *testing.T, q string) string {
	t.Helper()
	var v sql.NullString
	if err := e.db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %s: %v", e.key, q, err)
	}
	return v.String
}

// TestCopyUnderLoad copies a database under a concurrent writer
// (multi-row transactions of inserts, updates and deletes on several
// tables), with an ALTER TABLE ADD COLUMN in the middle, renamed on the
// target, then cuts over with --set-read-only: every table's checksum is
// equal and the final GTID is the source's gtid_binlog_pos.
func TestCopyUnderLoad(t *testing.T) {
	a, b := sandboxPair(t)
	a.exec(t,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.items (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(60) CHARACTER SET utf8mb4, "+
			"price DECIMAL(10,2), qty INT NOT NULL, ratio FLOAT, big BIGINT UNSIGNED, tiny TINYINT UNSIGNED, "+
			"at TIMESTAMP(6) NULL, d DATE, kind ENUM('a','b','c'), flags SET('x','y','z'), data BLOB, "+
			"note TEXT CHARACTER SET latin1, doubled INT AS (qty * 2) VIRTUAL, "+
			"pt POINT NULL, bits BIT(5), doc JSON, dt DATETIME(3), dbl DOUBLE, bin VARBINARY(8), tm TIME(2), yr YEAR)",
		"INSERT INTO shop.items (name, price, qty, ratio, big, tiny, at, d, kind, flags, data, note) "+
			"SELECT CONCAT('item é ', seq), seq * 1.25, seq, seq / 7, 18446744073709551615 - seq, 255, "+
			"'2026-01-02 03:04:05.123456', '2026-03-01', 'b', 'x,z', UNHEX('00FF10'), CONCAT('caf', CHAR(233)) FROM mysql.seq_1_to_3000",
		"UPDATE shop.items SET pt = POINT(id, -id / 3), bits = id MOD 32, doc = JSON_OBJECT('n', id, 's', 'é'), "+
			"dt = '2026-05-06 07:08:09.123', dbl = id / 3, bin = UNHEX('00BEEF'), tm = '-12:34:56.78', yr = 2001 WHERE id MOD 2 = 0",
		"CREATE TABLE shop.lines (order_id INT NOT NULL, line INT NOT NULL, sku VARCHAR(20) NOT NULL, n INT, PRIMARY KEY (order_id, line))",
		"INSERT INTO shop.lines SELECT seq DIV 5, seq MOD 5, CONCAT('sku', seq), seq FROM mysql.seq_1_to_2000",
		"CREATE TABLE shop.kv (k VARCHAR(30) NOT NULL, v TEXT, UNIQUE KEY (k))",
		"INSERT INTO shop.kv SELECT CONCAT('key-', seq), REPEAT('v', seq MOD 50) FROM mysql.seq_1_to_500",
		"CREATE DATABASE other",
		"CREATE TABLE other.t (id INT PRIMARY KEY)",
		"INSERT INTO other.t SELECT seq FROM mysql.seq_1_to_10",
	)

	// The writer's account has no SUPER: read_only stops it.
	a.exec(t, "CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app-pw'", "GRANT ALL ON shop.* TO 'app'@'127.0.0.1'",
		"GRANT ALL ON other.* TO 'app'@'127.0.0.1'")
	wopts := a.opts
	wopts.Credentials = mysql.Credentials{User: "app", Password: "app-pw"}
	wopts.MaxConns = 1
	wdb, err := mysql.Open(context.Background(), a.key, wopts)
	if err != nil {
		t.Fatal(err)
	}
	defer wdb.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var altered, stopWriter bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	var writes int
	var werr error
	wg.Go(func() {
		conn, err := wdb.SQL().Conn(ctx)
		if err != nil {
			werr = err
			return
		}
		defer conn.Close()
		for i := 0; ; i++ {
			mu.Lock()
			alt, stop := altered, stopWriter
			mu.Unlock()
			if stop {
				return
			}
			r := rand.IntN(3000) + 1
			stmts := []string{"BEGIN",
				fmt.Sprintf("INSERT INTO shop.items (name, qty, price, at) VALUES ('w%d', %d, 1.5, NOW(6)), ('w%d-2', 1, NULL, NULL)", i, i, i),
				fmt.Sprintf("UPDATE shop.items SET qty = qty + 1, name = CONCAT(name, '+'), kind = 'c' WHERE id = %d", r),
				fmt.Sprintf("UPDATE shop.items SET pt = POINT(%d, 1.5), bits = b'10101', doc = JSON_ARRAY(%d), ratio = ratio * 1.1, dbl = dbl / 7, "+
					"dt = NOW(3), tm = '01:02:03.45', yr = 1999, big = big - 1, tiny = 200, flags = 'y', bin = X'FF00' WHERE id = %d", i, i, rand.IntN(3000)+1),
				fmt.Sprintf("DELETE FROM shop.items WHERE id = %d", rand.IntN(3000)+1),
				fmt.Sprintf("DELETE FROM shop.lines WHERE order_id = %d", rand.IntN(400)),
				fmt.Sprintf("INSERT INTO shop.lines VALUES (%d, 9, 'new', %d) ON DUPLICATE KEY UPDATE n = n + 1", 1000+i%50, i),
				fmt.Sprintf("REPLACE INTO shop.kv VALUES ('key-%d', 'w%d')", rand.IntN(600), i),
				"UPDATE other.t SET id = id WHERE id = 1",
			}
			if alt {
				stmts = append(stmts, fmt.Sprintf("INSERT INTO shop.items (name, qty, extra) VALUES ('after-alter', 1, %d)", 100+i))
			}
			stmts = append(stmts, "COMMIT")
			for _, s := range stmts {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
					if strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "read_only") || ctx.Err() != nil {
						return
					}
					werr = fmt.Errorf("writer: %s: %w", s, err)
					return
				}
			}
			mu.Lock()
			writes++
			mu.Unlock()
		}
	})

	signal := make(chan struct{})
	bulkDone := make(chan string, 1)
	progress := &lockedBuffer{}
	opt := Options{
		Filter:        backup.Filter{Databases: []string{"shop"}},
		Rename:        map[string]string{"shop": "shop_v2"},
		Threads:       2,
		Cutover:       true,
		SetReadOnly:   true,
		CutoverSignal: signal,
		Heartbeat:     200 * time.Millisecond,
		OnBulkDone:    func(g string) { bulkDone <- g },
		Progress:      progress,
	}
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	// moreWrites waits for n more of the writer's transactions than it
	// has made now.
	moreWrites := func(n int, what string) {
		t.Helper()
		mu.Lock()
		from := writes
		mu.Unlock()
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("%d writes %s", n, what), func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return writes >= from+n, fmt.Sprintf("%d writes (the writer stops at its first error)", writes-from)
		})
	}
	moreWrites(10, "before the snapshot")
	go func() {
		res, err := Copy(ctx, a.key, a.opts, b.key, b.opts, opt)
		done <- out{res, err}
	}()
	select {
	case <-bulkDone:
	case o := <-done:
		t.Fatalf("copy ended before change capture: %v", o.err)
	}
	moreWrites(20, "during change capture")
	a.exec(t, "ALTER TABLE shop.items ADD COLUMN extra INT NOT NULL DEFAULT 7")
	mu.Lock()
	altered = true
	mu.Unlock()
	moreWrites(20, "after the ALTER")
	// Lag is measured once the copy has caught up with the bulk copy's
	// backlog (on a loaded machine that takes seconds): the cut-over
	// waits for it and for a heartbeat written after it.
	testutil.WaitFor(t, time.Minute, "the copy caught up", func() (bool, string) {
		return strings.Contains(progress.String(), "caught up after"), progress.String()
	})
	hb := a.value(t, "SELECT MAX(ts) FROM dbpilot.copy_heartbeat")
	testutil.WaitFor(t, 10*time.Second, "a heartbeat after the catch-up", func() (bool, string) {
		now := a.value(t, "SELECT MAX(ts) FROM dbpilot.copy_heartbeat")
		return now != hb, now
	})
	close(signal)
	var o out
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("copy did not cut over within 2 minutes")
	}
	mu.Lock()
	stopWriter = true
	mu.Unlock()
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	if o.err != nil {
		for _, tb := range []string{"items", "lines", "kv"} {
			diffRows(t, a, "shop."+tb, b, "shop_v2."+tb)
		}
		t.Fatalf("copy: %v", o.err)
	}
	res := o.res
	t.Logf("writes %d; apply %+v; ddl %v", writes, res.Apply, res.DDL)
	if writes < 20 {
		t.Fatalf("only %d writer transactions ran", writes)
	}
	final := a.value(t, "SELECT @@GLOBAL.gtid_binlog_pos")
	if res.Cutover == nil || res.Cutover.FinalGTID != final || res.GTID != final {
		t.Fatalf("final GTID: result %q / %+v, source gtid_binlog_pos %q", res.GTID, res.Cutover, final)
	}
	if len(res.Cutover.Checksums) != 3 || len(res.Cutover.Differ) > 0 {
		t.Fatalf("checksums: %+v", res.Cutover.Checksums)
	}
	for _, ck := range res.Cutover.Checksums {
		if !strings.HasPrefix(ck.Target, "shop_v2.") {
			t.Errorf("%s copied to %s, want shop_v2", ck.Table, ck.Target)
		}
	}
	if len(res.DDL) != 1 || !strings.Contains(res.DDL[0], "`shop_v2`.`items`") {
		t.Errorf("DDL applied: %q", res.DDL)
	}
	if n := b.value(t, "SELECT COUNT(*) FROM shop_v2.items WHERE name = 'after-alter' AND extra >= 100"); n == "0" {
		t.Error("no row written after the ALTER carries its column on the target")
	}
	if v := b.value(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('shop', 'other')"); v != "0" {
		t.Errorf("target has %s of the databases shop, other: filters or rename not honoured", v)
	}
	if v := b.value(t, "SELECT gtid FROM dbpilot.copy_position"); v != final {
		t.Errorf("recorded position %q, want %q", v, final)
	}
	if res.Apply.LagSource != "heartbeat" || res.Apply.LagSamples == 0 || res.Apply.Transactions == 0 {
		t.Errorf("apply statistics: %+v", res.Apply)
	}
}

// lockedBuffer is a bytes.Buffer safe for the copy's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCopyRefusals: a STATEMENT-format source is refused before anything
// is copied, a table without a key is refused by name, --include is
// honoured, and a statement that cannot be applied safely stops the copy
// naming it; --resume then continues from the recorded position.
func TestCopyRefusals(t *testing.T) {
	a, b := sandboxPair(t)
	ctx := context.Background()
	a.exec(t,
		"CREATE DATABASE app",
		"CREATE TABLE app.t1 (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.t1 SELECT seq, CONCAT('v', seq) FROM mysql.seq_1_to_100",
		"CREATE TABLE app.t2 (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.t2 SELECT seq, 'x' FROM mysql.seq_1_to_10",
		"CREATE TABLE app.skip (id INT PRIMARY KEY)",
		"CREATE TABLE app.nokey (v VARCHAR(20), n INT NULL, UNIQUE KEY (n))",
	)
	before := b.value(t, "SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) FROM information_schema.SCHEMATA")

	t.Run("statement format", func(t *testing.T) {
		a.exec(t, "SET GLOBAL binlog_format = STATEMENT")
		defer a.exec(t, "SET GLOBAL binlog_format = ROW")
		_, err := Copy(ctx, a.key, a.opts, b.key, b.opts, Options{Filter: backup.Filter{Include: []string{"app.t*"}}})
		if err == nil || !strings.Contains(err.Error(), "binlog_format=STATEMENT") {
			t.Fatalf("want a refusal naming binlog_format, got %v", err)
		}
		if after := b.value(t, "SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) FROM information_schema.SCHEMATA"); after != before {
			t.Fatalf("target changed: databases %q, before %q", after, before)
		}
	})

	t.Run("no key", func(t *testing.T) {
		_, err := Copy(ctx, a.key, a.opts, b.key, b.opts, Options{Filter: backup.Filter{Databases: []string{"app"}}})
		if err == nil || !strings.Contains(err.Error(), "app.nokey") || strings.Contains(err.Error(), "app.t1") {
			t.Fatalf("want a refusal naming app.nokey, got %v", err)
		}
		if v := b.value(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'app'"); v != "0" {
			t.Fatal("target has app after the refusal")
		}
	})

	t.Run("unsupported DDL stops", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		bulk := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := Copy(cctx, a.key, a.opts, b.key, b.opts, Options{Filter: backup.Filter{Include: []string{"app.t*"}},
				OnBulkDone: func(g string) { bulk <- g }})
			done <- err
		}()
		select {
		case <-bulk:
		case err := <-done:
			t.Fatalf("copy ended early: %v", err)
		}
		a.exec(t, "INSERT INTO app.t1 VALUES (1000, 'before')", "INSERT INTO app.skip VALUES (1)",
			"RENAME TABLE app.t2 TO app.moved")
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatal("copy did not stop on RENAME TABLE")
		}
		if err == nil || !strings.Contains(err.Error(), "RENAME TABLE app.t2 TO app.moved") {
			t.Fatalf("want a stop naming the RENAME, got %v", err)
		}
		if v := b.value(t, "SELECT v FROM app.t1 WHERE id = 1000"); v != "before" {
			t.Errorf("row before the RENAME not applied: %q", v)
		}
		if v := b.value(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME IN ('skip', 'nokey')"); v != "0" {
			t.Errorf("--include not honoured: %s excluded tables on the target", v)
		}
		// The recorded position is just before the RENAME: --resume stops
		// on it again rather than skipping it.
		_, err = Copy(ctx, a.key, a.opts, b.key, b.opts, Options{Filter: backup.Filter{Include: []string{"app.t*"}}, Resume: true})
		if err == nil || !strings.Contains(err.Error(), "RENAME TABLE") {
			t.Fatalf("--resume: want the same stop, got %v", err)
		}
	})
}

// diffRows logs the first rows that differ between two tables.
func diffRows(t *testing.T, a end, at string, b end, bt string) {
	t.Helper()
	read := func(e end, name string) map[string]string {
		rows, err := e.db.Query("SELECT * FROM " + name)
		if err != nil {
			t.Logf("%s: %v", name, err)
			return nil
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		out := map[string]string{}
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Logf("%s: %v", name, err)
				return nil
			}
			var sb strings.Builder
			for i, v := range vals {
				if i > 0 {
					sb.WriteString("|")
				}
				if v.Valid {
					sb.WriteString(v.String)
				} else {
					sb.WriteString("NULL")
				}
			}
			out[vals[0].String+"/"+vals[1].String] = sb.String()
		}
		return out
	}
	ra, rb := read(a, at), read(b, bt)
	n := 0
	for k, va := range ra {
		if vb := rb[k]; vb != va && n < 5 {
			t.Logf("%s %s: source %q, target %q", at, k, va, vb)
			n++
		}
	}
	for k, vb := range rb {
		if _, ok := ra[k]; !ok && n < 8 {
			t.Logf("%s %s: only on the target: %q", bt, k, vb)
			n++
		}
	}
	t.Logf("%s: %d rows, %s: %d rows", at, len(ra), bt, len(rb))
}

// TestCopyRenameForeignKeys: with --rename-database, a foreign key to a
// table of another renamed database follows it, in the bulk copy and in an
// ALTER during change capture; one within the database stays; they are
// enforced on the target.
func TestCopyRenameForeignKeys(t *testing.T) {
	a, b := sandboxPair(t)
	ctx := context.Background()
	a.exec(t,
		"CREATE DATABASE billing",
		"CREATE TABLE billing.accounts (id INT PRIMARY KEY, owner VARCHAR(20))",
		"INSERT INTO billing.accounts SELECT seq, CONCAT('o', seq) FROM mysql.seq_1_to_20",
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY)",
		"INSERT INTO shop.customers SELECT seq FROM mysql.seq_1_to_20",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, acct INT, cust INT,"+
			" CONSTRAINT fk_acct FOREIGN KEY (acct) REFERENCES billing.accounts (id),"+
			" CONSTRAINT fk_cust FOREIGN KEY (cust) REFERENCES customers (id) ON DELETE CASCADE)",
		"INSERT INTO shop.orders SELECT seq, seq MOD 20 + 1, seq MOD 20 + 1 FROM mysql.seq_1_to_100",
	)
	signal := make(chan struct{})
	opt := Options{
		Filter:        backup.Filter{Databases: []string{"shop", "billing"}},
		Rename:        map[string]string{"shop": "shop_v2", "billing": "billing_v2"},
		Threads:       2,
		Cutover:       true,
		SetReadOnly:   true,
		CutoverSignal: signal,
		OnBulkDone: func(string) {
			// During change capture: a foreign key added to another database.
			a.exec(t, "ALTER TABLE shop.orders ADD COLUMN acct2 INT, ADD CONSTRAINT fk_acct2 FOREIGN KEY (acct2) REFERENCES billing.accounts (id)")
			close(signal)
		},
	}
	res, err := Copy(ctx, a.key, a.opts, b.key, b.opts, opt)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if res.Cutover == nil || len(res.Cutover.Differ) > 0 {
		t.Fatalf("cut-over: %+v", res.Cutover)
	}
	refs := b.value(t, "SELECT GROUP_CONCAT(CONSTRAINT_NAME, '->', REFERENCED_TABLE_SCHEMA, '.', REFERENCED_TABLE_NAME ORDER BY CONSTRAINT_NAME)"+
		" FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'shop_v2' AND TABLE_NAME = 'orders' AND REFERENCED_TABLE_NAME IS NOT NULL")
	if refs != "fk_acct->billing_v2.accounts,fk_acct2->billing_v2.accounts,fk_cust->shop_v2.customers" {
		t.Fatalf("foreign keys on the target: %q", refs)
	}
	// Enforced: an order of a missing account is refused.
	if _, err := b.db.ExecContext(ctx, "INSERT INTO shop_v2.orders VALUES (1000, 999, 1)"); err == nil {
		t.Error("an order of a missing account was accepted on the target")
	}
}
