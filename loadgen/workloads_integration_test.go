package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	driver "github.com/go-sql-driver/mysql"
)

// wlDB starts one single-server sandbox for the workload tests and returns
// a pool on its database "bench", and a dialer of the bench's connections
// to it (the wire protocol, blocking sockets).
func wlDB(t *testing.T) (*sql.DB, func(context.Context) (Conn, error)) {
	t.Helper()
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Exec(ctx, "CREATE DATABASE bench"); err != nil {
		t.Fatal(err)
	}
	opts := d.AdminOptions()
	opts.Database = "bench"
	opts.MaxConns = 8
	opts.QueryTimeout = 60 * time.Second
	db, err := mysql.Open(ctx, n.Key(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	wopts := opts
	wopts.BlockingIO = true
	dial := func(ctx context.Context) (Conn, error) { return mysql.DialWire(ctx, n.Key(), wopts) }
	return db.SQL(), dial
}

func wlExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func wlInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var v sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.Int64
}

// wlTables lists the tables of the database.
func wlTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// wlChecksum is CHECKSUM TABLE of tables, summed.
func wlChecksum(t *testing.T, db *sql.DB, tables ...string) int64 {
	t.Helper()
	var sum int64
	for _, tb := range tables {
		var name string
		var v sql.NullInt64
		if err := db.QueryRow("CHECKSUM TABLE "+tb).Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		sum += v.Int64
	}
	return sum
}

// wlLinkCountsConsistent checks counttable against the visible links:
// for every (id, link_type) SUM(count) equals the number of visible links.
func wlLinkCountsConsistent(t *testing.T, db *sql.DB) {
	t.Helper()
	bad := wlInt(t, db, `SELECT COUNT(*) FROM
		(SELECT id1, link_type, COUNT(*) AS n FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l
		LEFT JOIN (SELECT id, link_type, SUM(count) AS s FROM counttable GROUP BY id, link_type) c
		ON c.id = l.id1 AND c.link_type = l.link_type
		WHERE COALESCE(c.s, 0) <> l.n`)
	bad += wlInt(t, db, `SELECT COUNT(*) FROM
		(SELECT id, link_type, SUM(count) AS s FROM counttable GROUP BY id, link_type HAVING s > 0) c
		LEFT JOIN (SELECT id1, link_type, COUNT(*) AS n FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l
		ON c.id = l.id1 AND c.link_type = l.link_type
		WHERE COALESCE(l.n, 0) <> c.s`)
	if bad != 0 {
		t.Errorf("%d (id, link_type) pairs whose counttable count differs from their visible links", bad)
	}
	if n := wlInt(t, db, "SELECT SUM(count) FROM counttable"); n != wlInt(t, db, "SELECT COUNT(*) FROM linktable WHERE visibility = 1") {
		t.Errorf("SUM(count) = %d, visible links %d", n, wlInt(t, db, "SELECT COUNT(*) FROM linktable WHERE visibility = 1"))
	}
}

// wlRun runs n transactions of c on conn and returns how many of each
// operation ran and how many wrote.
func wlRun(t *testing.T, conn Conn, c Client, nops, n int, ledger *Ledger) (ops []int, writes int) {
	t.Helper()
	ops = make([]int, nops)
	for i := range n {
		op, write := c.Next()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Run(ctx, conn, op, ledger)
		cancel()
		if err != nil {
			t.Fatalf("transaction %d (op %d): %v", i, op, err)
		}
		ops[op]++
		if write {
			writes++
		}
	}
	return ops, writes
}

// TestIntegrationWorkloads prepares, runs and cleans up every workload on
// one real server.
func TestIntegrationWorkloads(t *testing.T) {
	db, dial := wlDB(t)
	ctx := context.Background()
	// A table prepare did not create, with the name of one it would.
	wlExec(t, db, "CREATE TABLE sbtest9 (id INT PRIMARY KEY)", "INSERT INTO sbtest9 VALUES (1)", LedgerCreateSQL)

	for i, name := range Workloads() {
		t.Run(name, func(t *testing.T) {
			w, err := NewWorkload(name)
			if err != nil {
				t.Fatal(err)
			}
			wlExec(t, db, LedgerCreateSQL, "TRUNCATE TABLE "+LedgerTable)
			opt := PrepareOptions{Tables: 2, TableSize: 1000, Nodes: 5000, Parallel: 4}
			start := time.Now()
			if err := w.Prepare(ctx, db, opt); err != nil {
				t.Fatalf("prepare: %v", err)
			}
			t.Logf("prepare: %v", time.Since(start).Round(time.Millisecond))
			linkbench := name == "linkbench"
			created := []string{"sbtest1", "sbtest2"}
			if linkbench {
				created = []string{"counttable", "linktable", "nodetable"}
			}
			want := append(append([]string{}, created...), LedgerTable, MarkerTable, "sbtest9")
			if got := wlTables(t, db); !sameSet(got, want) {
				t.Fatalf("tables after prepare: %v, want %v", got, want)
			}
			if got := wlInt(t, db, "SELECT COUNT(*) FROM "+MarkerTable+" WHERE workload = ?", name); got != int64(len(created)) {
				t.Errorf("marker table lists %d tables for %s, want %d", got, name, len(created))
			}

			if linkbench {
				if n := wlInt(t, db, "SELECT COUNT(*) FROM nodetable"); n != 5000 {
					t.Errorf("nodes: %d, want 5000", n)
				}
				links := wlInt(t, db, "SELECT COUNT(*) FROM linktable")
				if links < 3*5000 || links > 5*5000 {
					t.Errorf("links: %d, want about 4 per node", links)
				}
				if n := wlInt(t, db, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'linktable' AND INDEX_NAME = 'id1_type'"); n != 7 {
					t.Errorf("id1_type has %d columns, want 7", n)
				}
				wlLinkCountsConsistent(t, db)
			} else {
				for i, tb := range created {
					if n := wlInt(t, db, "SELECT COUNT(*) FROM "+tb); n != 1000 {
						t.Errorf("%s: %d rows, want 1000", tb, n)
					}
					if n := wlInt(t, db, "SELECT COUNT(*) FROM "+tb+" WHERE k BETWEEN 1 AND 1000 AND LENGTH(c) = 119 AND LENGTH(pad) = 59"); n != 1000 {
						t.Errorf("%s: %d rows with sysbench's k, c and pad, want 1000", tb, n)
					}
					idx := fmt.Sprintf("k_%d", i+1)
					if n := wlInt(t, db, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ? AND COLUMN_NAME = 'k'", tb, idx); n != 1 {
						t.Errorf("%s: no index %s on k", tb, idx)
					}
				}
			}

			// A fresh workload finds the prepared size.
			fresh, _ := NewWorkload(name)
			size, err := fresh.(Configurer).Detect(ctx, db)
			wantSize := PrepareOptions{Tables: 2, TableSize: 1000}
			if linkbench {
				wantSize = PrepareOptions{Nodes: 5000}
			}
			if err != nil || size != wantSize {
				t.Errorf("Detect = %+v, %v; want %+v", size, err, wantSize)
			}

			before := wlChecksum(t, db, created...)
			var rowsBefore int64
			if !linkbench {
				rowsBefore = wlInt(t, db, "SELECT (SELECT COUNT(*) FROM sbtest1) + (SELECT COUNT(*) FROM sbtest2)")
			}
			conn, err := dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ledger := &Ledger{}
			n := 300
			if linkbench {
				n = 2000
			}
			ops, writes := wlRun(t, conn, w.NewClient(int64(100+i)), len(w.Ops()), n, ledger)
			// Some without a ledger too (oltp_insert then runs without BEGIN).
			_, writesNoLedger := wlRun(t, conn, w.NewClient(int64(200+i)), len(w.Ops()), 20, nil)

			after := wlChecksum(t, db, created...)
			switch name {
			case "oltp_point_select", "oltp_read_only":
				if after != before || writes != 0 {
					t.Errorf("read-only workload changed data (%d writes)", writes)
				}
			default:
				if after == before {
					t.Error("write transactions changed nothing")
				}
				if writes == 0 {
					t.Error("no write transactions")
				}
			}
			if name == "oltp_insert" {
				rows := wlInt(t, db, "SELECT (SELECT COUNT(*) FROM sbtest1) + (SELECT COUNT(*) FROM sbtest2)")
				if rows != rowsBefore+int64(n+20) {
					t.Errorf("rows after %d inserts: %d, want %d", n+20, rows, rowsBefore+int64(n+20))
				}
				if m := wlInt(t, db, "SELECT MAX(id) FROM sbtest1"); m <= 1000 && wlInt(t, db, "SELECT MAX(id) FROM sbtest2") <= 1000 {
					t.Error("inserts did not use new auto-increment ids")
				}
			}
			if name == "oltp_write_only" || name == "oltp_read_write" {
				rows := wlInt(t, db, "SELECT (SELECT COUNT(*) FROM sbtest1) + (SELECT COUNT(*) FROM sbtest2)")
				if rows != rowsBefore {
					t.Errorf("rows after delete+insert: %d, want %d", rows, rowsBefore)
				}
			}

			// The ledger: every write transaction's id is in the table.
			if got := ledger.Acked(); got != int64(writes) {
				t.Errorf("ledger acknowledged %d writes, %d ran", got, writes)
			}
			if got := wlInt(t, db, "SELECT COUNT(*) FROM "+LedgerTable); got != int64(writes) {
				t.Errorf("%s has %d rows, want %d (writes without a ledger: %d)", LedgerTable, got, writes, writesNoLedger)
			}
			lost, sample, err := ledger.Lost(ctx, db)
			if err != nil || lost != 0 {
				t.Errorf("Lost = %d %v, %v; want 0", lost, sample, err)
			}

			if linkbench {
				wlLinkCountsConsistent(t, db)
				if n := wlInt(t, db, "SELECT COUNT(*) FROM nodetable WHERE version > 1"); n == 0 {
					t.Error("update_node changed no node")
				}
				if n := wlInt(t, db, "SELECT COUNT(*) FROM nodetable WHERE id > 5000"); n == 0 {
					t.Error("add_node added no node")
				}
				total := 0
				for _, k := range ops {
					total += k
				}
				for op, k := range ops {
					got := 100 * float64(k) / float64(total)
					if math.Abs(got-LinkBenchMix[op]) > 2 {
						t.Errorf("%s: %.2f%% of %d transactions, want %.2f%% ±2", w.Ops()[op], got, total, LinkBenchMix[op])
					}
				}
				t.Logf("mix over %d: %v", total, ops)

				// Concurrent clients keep counttable consistent too; only
				// deadlocks and lock wait timeouts may fail.
				var wg sync.WaitGroup
				var failed atomic.Int64
				for g := range 4 {
					wg.Go(func() {
						conn, err := dial(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						defer conn.Close()
						c := w.NewClient(int64(1000 + g))
						for range 300 {
							op, _ := c.Next()
							if err := c.Run(ctx, conn, op, nil); err != nil {
								var me *driver.MySQLError
								if !errors.As(err, &me) || (me.Number != 1213 && me.Number != 1205) {
									t.Errorf("concurrent %s: %v", w.Ops()[op], err)
									return
								}
								failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				t.Logf("concurrent: %d of 1200 transactions deadlocked", failed.Load())
				wlLinkCountsConsistent(t, db)
			}

			// Prepare again is refused, naming the table and the database.
			err = w.Prepare(ctx, db, opt)
			first := "sbtest1"
			if linkbench {
				first = "linktable"
			}
			wantErr := fmt.Sprintf("bench prepare: table %s exists in bench; --force drops and recreates it", first)
			if err == nil || err.Error() != wantErr {
				t.Errorf("prepare again: %v, want %q", err, wantErr)
			}
			if name == "oltp_point_select" {
				// --force recreates the tables.
				if err := w.Prepare(ctx, db, PrepareOptions{Tables: 2, TableSize: 10, Force: true}); err != nil {
					t.Fatalf("prepare --force: %v", err)
				}
				if n := wlInt(t, db, "SELECT COUNT(*) FROM sbtest2"); n != 10 {
					t.Errorf("after --force sbtest2 has %d rows, want 10", n)
				}
			}
			if name == "oltp_write_only" {
				// A table a run records (the ledger) goes with the cleanup.
				if err := MarkTable(ctx, db, name, LedgerTable); err != nil {
					t.Fatal(err)
				}
				want = append(want[:0:0], "sbtest9")
			} else {
				want = []string{LedgerTable, "sbtest9"}
			}

			if err := w.Cleanup(ctx, db); err != nil {
				t.Fatalf("cleanup: %v", err)
			}
			if got := wlTables(t, db); !sameSet(got, want) {
				t.Errorf("tables after cleanup: %v, want %v", got, want)
			}
			if n := wlInt(t, db, "SELECT COUNT(*) FROM sbtest9"); n != 1 {
				t.Errorf("sbtest9 has %d rows after cleanup, want its 1", n)
			}
			// Cleanup again: nothing to do; a same-named table it did not
			// create stays.
			created0 := created[0]
			wlExec(t, db, "CREATE TABLE "+created0+" (x INT)")
			if err := w.Cleanup(ctx, db); err != nil {
				t.Fatalf("cleanup again: %v", err)
			}
			if got := wlTables(t, db); !sameSet(got, append(want, created0)) {
				t.Errorf("tables after a second cleanup: %v, want %v", got, append(want, created0))
			}
			wlExec(t, db, "DROP TABLE "+created0)
		})
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[strings.ToLower(s)]++
	}
	for _, s := range b {
		m[strings.ToLower(s)]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
