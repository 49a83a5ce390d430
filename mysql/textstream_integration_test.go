package mysql_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestStreamText reads results with the dump's in-place text-protocol
// reader against a real server: values byte for byte as the server sends
// them (NULL, empty, binary, numbers, a 20 MB value split over two
// packets), column names, a stop after the first row, a server error and
// a callback error, and statements after each on the same connection.
func TestStreamText(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		"SET GLOBAL max_allowed_packet = 64 * 1024 * 1024",
		"CREATE DATABASE st",
		"CREATE TABLE st.t (id INT PRIMARY KEY, v VARBINARY(100) NULL, f DOUBLE, d DATETIME(3), b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO st.t VALUES (1, 'a', 0.5, '2024-01-02 03:04:05.678', NULL), (2, '', -1e300, NULL, ''), (3, NULL, 1, '1970-01-01 00:00:00', 0x00090A5C)",
		"INSERT INTO st.t SELECT 4, 'big', 0, NULL, REPEAT('0123456789', 2 * 1024 * 1024)",
	} {
		if _, err := sandbox.Exec(ctx, d, "node1", q); err != nil {
			t.Fatal(err)
		}
	}
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			opts := d.AdminOptions()
			opts.BlockingIO = blocking
			c, err := mysql.DialWire(ctx, n.Key(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if _, err := c.Exec(ctx, "SET SESSION character_set_results = binary"); err != nil {
				t.Fatal(err)
			}
			var got [][]*string
			collect := func(vals [][]byte) (bool, error) {
				r := make([]*string, len(vals))
				for i, v := range vals {
					if v != nil {
						s := string(v)
						r[i] = &s
					}
				}
				got = append(got, r)
				return true, nil
			}
			cols, err := c.StreamText(ctx, "SELECT id, v, f, d, b AS `blob col` FROM st.t ORDER BY id", collect)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(cols, ",") != "id,v,f,d,blob col" {
				t.Errorf("columns %q", cols)
			}
			show := func(p *string) string {
				if p == nil {
					return "NULL"
				}
				if len(*p) > 40 {
					return fmt.Sprintf("%d bytes", len(*p))
				}
				return fmt.Sprintf("%q", *p)
			}
			var lines []string
			for _, r := range got {
				var f []string
				for _, v := range r {
					f = append(f, show(v))
				}
				lines = append(lines, strings.Join(f, " "))
			}
			want := []string{
				`"1" "a" "0.5" "2024-01-02 03:04:05.678" NULL`,
				`"2" "" "-1e300" NULL ""`,
				`"3" NULL "1" "1970-01-01 00:00:00.000" "\x00\t\n\\"`,
				`"4" "big" "0" NULL 20971520 bytes`,
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			if len(got) == 4 && !bytes.Equal([]byte(*got[3][4]), bytes.Repeat([]byte("0123456789"), 2*1024*1024)) {
				t.Error("the 20 MB value differs")
			}

			// Stop after the first row: the rest is drained, the
			// connection goes on.
			calls := 0
			if _, err := c.StreamText(ctx, "SELECT id FROM st.t ORDER BY id", func([][]byte) (bool, error) { calls++; return false, nil }); err != nil || calls != 1 {
				t.Fatalf("stopped stream: %d calls, %v", calls, err)
			}
			// A statement without a result set.
			if cols, err := c.StreamText(ctx, "DO 1", collect); err != nil || cols != nil {
				t.Fatalf("DO 1: %q, %v", cols, err)
			}
			// A server error is the driver's, and the connection goes on.
			_, err = c.StreamText(ctx, "SELECT * FROM st.missing", collect)
			var me *driver.MySQLError
			if !errors.As(err, &me) || me.Number != 1146 {
				t.Fatalf("missing table: %v, want MySQLError 1146", err)
			}
			got = nil
			if _, err := c.StreamText(ctx, "SELECT COUNT(*) FROM st.t", collect); err != nil || len(got) != 1 || *got[0][0] != "4" {
				t.Fatalf("after a server error: %v %v", got, err)
			}
			// An error of the row function comes back as it is and
			// closes the connection.
			boom := errors.New("disk full")
			if _, err := c.StreamText(ctx, "SELECT id FROM st.t", func([][]byte) (bool, error) { return false, boom }); err != boom {
				t.Fatalf("row error: %v, want it as it is", err)
			}
			if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
				t.Error("the connection a row error closed still answers")
			}
		})
	}

	// Cancelling the context ends a stream blocked on the server.
	c, err := mysql.DialWire(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.StreamText(cctx, "SELECT SLEEP(10)", func([][]byte) (bool, error) { return true, nil })
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled stream: %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}
