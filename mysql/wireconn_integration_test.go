package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestWireConn runs the bench's connection against a real server, with
// blocking sockets and with Go's poller: statements with and without
// arguments, rows scanned and discarded, server errors in the driver's
// vocabulary, a context's cancellation ending a statement blocked on the
// server, and a deadline.
func TestWireConn(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"CREATE DATABASE wire",
		"CREATE TABLE wire.t (id INT PRIMARY KEY, v VARCHAR(20), f DOUBLE, n INT NULL) ENGINE=InnoDB"} {
		if _, err := sandbox.Exec(ctx, d, "node1", q); err != nil {
			t.Fatal(err)
		}
	}
	for _, blocking := range []bool{true, false} {
		name := "poll"
		if blocking {
			name = "blocking"
		}
		t.Run(name, func(t *testing.T) {
			opts := d.AdminOptions()
			opts.Database = "wire"
			opts.BlockingIO = blocking
			c, err := mysql.DialWire(ctx, n.Key(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if _, err := c.Exec(ctx, "DELETE FROM t"); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 3; i++ {
				if n, err := c.Exec(ctx, "INSERT INTO t (id, v, f) VALUES (?, ?, ?)", i, "row", float64(i)/2); err != nil || n != 1 {
					t.Fatalf("insert %d: %d rows, %v", i, n, err)
				}
			}
			if n, err := c.Exec(ctx, "UPDATE t SET v = ? WHERE id >= ?", "upd", 2); err != nil || n != 2 {
				t.Fatalf("update: %d rows, %v", n, err)
			}
			var got [][]any
			scan := func(v []any) error {
				row := make([]any, len(v))
				for i, x := range v {
					if b, ok := x.([]byte); ok {
						x = string(b) // valid during the call only
					}
					row[i] = x
				}
				got = append(got, row)
				return nil
			}
			// Prepared (with args), twice: the statement is reused.
			for range 2 {
				got = nil
				if err := c.Query(ctx, "SELECT id, v, f, n FROM t WHERE id >= ? ORDER BY id", scan, 2); err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || got[0][0] != int64(2) || got[0][1] != "upd" || got[1][2] != 1.5 || got[1][3] != nil {
					t.Fatalf("prepared rows = %v", got)
				}
			}
			// Text protocol (no args): numbers are decoded too.
			got = nil
			if err := c.Query(ctx, "SELECT COUNT(*) FROM t", scan); err != nil || len(got) != 1 || got[0][0] != int64(3) {
				t.Fatalf("text rows = %v, %v", got, err)
			}
			// Discarded rows.
			if err := c.Query(ctx, "SELECT * FROM t", nil); err != nil {
				t.Fatal(err)
			}
			// A server error is the driver's MySQLError, and the
			// connection goes on.
			_, err = c.Exec(ctx, "INSERT INTO t (id, v) VALUES (?, ?)", 1, "dup")
			var me *driver.MySQLError
			if !errors.As(err, &me) || me.Number != 1062 {
				t.Fatalf("duplicate insert: %v, want MySQLError 1062", err)
			}
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatalf("after a server error: %v", err)
			}
			// A transaction's context ending after it leaves the
			// connection usable.
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := c.Exec(tctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(tctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			cancel()
			time.Sleep(20 * time.Millisecond) // the context's watcher runs
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatalf("after a finished transaction's context ended: %v", err)
			}
			// A deadline bounds the wait for the server.
			dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			start := time.Now()
			err = c.Query(dctx, "SELECT SLEEP(10)", nil)
			cancel()
			if err == nil || time.Since(start) > 5*time.Second {
				t.Fatalf("SLEEP(10) with a 300 ms deadline: %v after %v", err, time.Since(start))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("deadline error %v is not context.DeadlineExceeded", err)
			}
		})
	}

	// Cancelling the context wakes a statement blocked on the server.
	opts := d.AdminOptions()
	opts.BlockingIO = true
	c, err := mysql.DialWire(ctx, n.Key(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	err = c.Query(cctx, "SELECT SLEEP(10)", nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled SLEEP(10): %v after %v, want context.Canceled at once", err, time.Since(start))
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("the connection a cancellation closed still answers")
	}

	// A connection the server killed: the driver's ErrInvalidConn.
	k, err := mysql.DialWire(ctx, n.Key(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	var id int64
	if err := k.Query(ctx, "SELECT CONNECTION_ID()", func(v []any) error { u, _ := v[0].(uint64); id = int64(u); return nil }); err != nil || id == 0 {
		t.Fatalf("connection id %d: %v", id, err)
	}
	if _, err := sandbox.Exec(ctx, d, "node1", fmt.Sprintf("KILL %d", id)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Exec(ctx, "SELECT 1"); !errors.Is(err, driver.ErrInvalidConn) {
		t.Errorf("statement on a killed connection: %v, want driver.ErrInvalidConn", err)
	}

	// Bad credentials: one error naming the server.
	bad := d.AdminOptions()
	bad.Password = "wrong"
	if _, err := mysql.DialWire(ctx, n.Key(), bad); err == nil {
		t.Error("wrong password connected")
	} else {
		var me *driver.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Errorf("wrong password: %v, want MySQLError 1045", err)
		}
	}
}
