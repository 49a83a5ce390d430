package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// trivialWorkload is a test-only workload: reads are SELECT 1, writes an
// INSERT into a scratch table. writeEvery: every n-th transaction of a
// client writes (1: all).
type trivialWorkload struct {
	table      string
	writeEvery int
}

func (w *trivialWorkload) Name() string  { return "trivial" }
func (w *trivialWorkload) Ops() []string { return []string{"select_1", "insert"} }
func (w *trivialWorkload) Prepare(context.Context, *sql.DB, PrepareOptions) error {
	return nil
}
func (w *trivialWorkload) Cleanup(context.Context, *sql.DB) error { return nil }
func (w *trivialWorkload) NewClient(int64) Client                 { return &trivialClient{w: w} }

type trivialClient struct {
	w *trivialWorkload
	k int
}

func (c *trivialClient) Next() (int, bool) {
	c.k++
	if c.k%c.w.writeEvery == 0 {
		return 1, true
	}
	return 0, false
}

func (c *trivialClient) Run(ctx context.Context, conn Conn, op int, _ *Ledger) error {
	if op == 1 {
		_, err := conn.Exec(ctx, "INSERT INTO "+c.w.table+" (v) VALUES (?)", c.k)
		return err
	}
	rows := 0
	if err := conn.Query(ctx, "SELECT 1", func([]any) error { rows++; return nil }); err != nil {
		return err
	}
	if rows != 1 {
		return fmt.Errorf("SELECT 1 returned %d rows", rows)
	}
	return nil
}

// TestIntegrationRunOpenLoop runs the open loop against a real MariaDB:
// the achieved rate, and a FLUSH TABLES WITH READ LOCK stall showing in
// the latency and the backlog.
func TestIntegrationRunOpenLoop(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := d.AdminOptions()
	opts.MaxConns = DefaultMaxConcurrency + 8
	opts.QueryTimeout = 30 * time.Second
	db, err := mysql.Open(ctx, n.Key(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exec(ctx, "CREATE DATABASE lgrun",
		"CREATE TABLE lgrun.scratch (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	// The bench's connections: the wire protocol, sockets read with
	// blocking system calls (--io blocking).
	wopts := opts
	wopts.BlockingIO = true
	connect := func(ctx context.Context) (Conn, error) { return mysql.DialWire(ctx, n.Key(), wopts) }
	rows := func() int64 {
		t.Helper()
		v, _, err := db.QueryValue(ctx, "SELECT COUNT(*) FROM lgrun.scratch")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("200 tx/s for 3 s", func(t *testing.T) {
		before := rows()
		s := Schedule{Steps: []Step{{Rate: 200}}}
		res, err := Run(ctx, RunOptions{Workload: &trivialWorkload{table: "lgrun.scratch", writeEvery: 2}, Connect: connect,
			Rate: &s, Duration: 3 * time.Second, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		sum := res.Summary
		t.Logf("\n%s", FormatSummary(sum))
		if math.Abs(sum.RateAchieved-200)/200 > 0.02 || sum.RateTarget != 200 {
			t.Errorf("rate %.1f/%.1f tx/s, want within 2%% of 200", sum.RateAchieved, sum.RateTarget)
		}
		if sum.Errors != 0 {
			t.Errorf("%d errors: %v", sum.Errors, sum.ErrorsBy)
		}
		var writes int64
		for _, o := range sum.Ops {
			if o.Op == "insert" {
				writes = o.Count
			}
		}
		if got := rows() - before; got != writes || writes == 0 {
			t.Errorf("%d rows inserted, the run counted %d writes", got, writes)
		}
		if len(res.Intervals) != 3 {
			t.Errorf("%d intervals, want 3", len(res.Intervals))
		}
	})

	t.Run("FLUSH TABLES WITH READ LOCK stall", func(t *testing.T) {
		lock, err := db.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		var wg sync.WaitGroup
		defer wg.Wait()
		lockErr := make(chan error, 1)
		var held time.Duration
		wg.Go(func() {
			time.Sleep(750 * time.Millisecond)
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if _, err := lock.ExecContext(lctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
				lockErr <- err
				return
			}
			from := time.Now()
			time.Sleep(1500 * time.Millisecond)
			_, err := lock.ExecContext(lctx, "UNLOCK TABLES")
			held = time.Since(from)
			lockErr <- err
		})
		s := Schedule{Steps: []Step{{Rate: 200}}}
		res, err := Run(ctx, RunOptions{Workload: &trivialWorkload{table: "lgrun.scratch", writeEvery: 1}, Connect: connect,
			Rate: &s, Duration: 3 * time.Second, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-lockErr; err != nil {
			t.Fatalf("read lock: %v", err)
		}
		sum := res.Summary
		t.Logf("read lock held %s\n%s", held.Round(time.Millisecond), FormatSummary(sum))
		for _, iv := range res.Intervals {
			t.Logf("%s", FormatLineAt(iv.Start.Add(time.Duration(iv.Seconds*float64(time.Second))).Sub(res.Intervals[0].Start), iv))
		}
		// The write due when the lock was taken waited for all of it.
		if sum.Max < 1300 {
			t.Errorf("max latency %.1f ms, want at least 1300 (the 1.5 s read lock)", sum.Max)
		}
		if sum.MaxBacklog <= 0 {
			t.Errorf("backlog max %d, want > 0: 300 writes fell due during the lock with %d connections", sum.MaxBacklog, DefaultMaxConcurrency)
		}
		if sum.Errors != 0 {
			t.Errorf("%d errors: %v", sum.Errors, sum.ErrorsBy)
		}
	})
}
