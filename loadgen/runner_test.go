package loadgen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// The runner's tests run in a synctest bubble: time is virtual and moves
// only when every goroutine of the run waits, so a 10 s run with a 2 s
// stall takes milliseconds and its figures are exact. The Clock they pass
// is the bubble's time shifted to 2026, so that any use of time.Now by
// the runner instead of its Clock would show as a latency of 26 years.

// testClock is the fake clock: the bubble's virtual time, shifted.
type testClock struct{}

var testEpochShift = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))

func (testClock) Now() time.Time { return time.Now().Add(testEpochShift) }

// SleepUntil is the wall clock's, on the bubble's unshifted time.
func (testClock) SleepUntil(ctx context.Context, t time.Time) error {
	return wallClock{}.SleepUntil(ctx, t.Add(-testEpochShift))
}

// fakeConn is a connection that sends nothing: the fake workload's
// transactions take scripted time, but the runner's path (Connect → Conn
// → Client.Run → Close) is the production one.
type fakeConn struct {
	db     *fakeDB
	closed atomic.Bool
}

func (c *fakeConn) Exec(ctx context.Context, _ string, _ ...any) (int64, error) {
	return 0, c.ping(ctx)
}

func (c *fakeConn) Query(ctx context.Context, _ string, _ func([]any) error, _ ...any) error {
	return c.ping(ctx)
}

// ping fails on a closed connection, as a real one does.
func (c *fakeConn) ping(ctx context.Context) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	return ctx.Err()
}

func (c *fakeConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.db.closed.Add(1)
	}
	return nil
}

// fakeDB makes fake connections, with a switch to refuse them.
type fakeDB struct {
	refuse          atomic.Bool
	connect, closed atomic.Int64
}

func newFakeDB(*testing.T) *fakeDB { return &fakeDB{} }

func (f *fakeDB) Connect(ctx context.Context) (Conn, error) {
	f.connect.Add(1)
	if f.refuse.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &fakeConn{db: f}, nil
}

// fakeWorkload's transactions take a scripted service time on the fake
// clock and may fail as scripted.
type fakeWorkload struct {
	ops   []string
	clock Clock
	// service returns how long a transaction started now takes and its
	// error; n counts transactions from 1 across clients.
	service func(now time.Time, n int64, op int, write bool) (time.Duration, error)
	// next picks a client's k-th transaction's operation (k from 1);
	// nil: op 0, a write.
	next func(k int) (int, bool)

	n        atomic.Int64
	keepRuns bool
	mu       sync.Mutex
	runs     []time.Duration // with keepRuns, every Run's own duration
}

func (w *fakeWorkload) Name() string  { return "fake" }
func (w *fakeWorkload) Ops() []string { return w.ops }
func (w *fakeWorkload) Prepare(context.Context, *sql.DB, PrepareOptions) error {
	return nil
}
func (w *fakeWorkload) Cleanup(context.Context, *sql.DB) error { return nil }
func (w *fakeWorkload) NewClient(int64) Client                 { return &fakeClient{w: w} }

type fakeClient struct {
	w     *fakeWorkload
	k     int
	write bool // the last Next's
}

func (c *fakeClient) Next() (int, bool) {
	c.k++
	op, write := 0, true
	if c.w.next != nil {
		op, write = c.w.next(c.k)
	}
	c.write = write
	return op, write
}

func (c *fakeClient) Run(ctx context.Context, conn Conn, op int, ledger *Ledger) error {
	if conn == nil {
		return errors.New("no connection")
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		return err
	}
	now := c.w.clock.Now()
	d, err := c.w.service(now, c.w.n.Add(1), op, c.write)
	if serr := c.w.clock.SleepUntil(ctx, now.Add(d)); serr != nil {
		err = serr
	}
	if c.w.keepRuns {
		c.w.mu.Lock()
		c.w.runs = append(c.w.runs, c.w.clock.Now().Sub(now))
		c.w.mu.Unlock()
	}
	if err == nil && c.write {
		ledger.Ack(ledger.Next())
	}
	return err
}

// slowRuns counts the Runs that took longer than d.
func (w *fakeWorkload) slowRuns(d time.Duration) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.runs {
		if r > d {
			n++
		}
	}
	return n
}

// stallService takes 1 ms, except that a transaction started in
// [from, to) completes at to (a server frozen by a lock).
func stallService(start time.Time, from, to time.Duration) func(time.Time, int64, int, bool) (time.Duration, error) {
	return func(now time.Time, _ int64, _ int, _ bool) (time.Duration, error) {
		at := now.Sub(start)
		if at >= from && at < to {
			return to - at, nil
		}
		return time.Millisecond, nil
	}
}

func TestRunCoordinatedOmission(t *testing.T) {
	tests := []struct {
		name string
		open bool
	}{
		{"open loop shows the stall", true},
		{"closed loop hides it", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				start := clock.Now()
				db := newFakeDB(t)
				w := &fakeWorkload{ops: []string{"tx"}, clock: clock, keepRuns: true,
					service: stallService(start, 3000500*time.Microsecond, 5000500*time.Microsecond)}
				opt := RunOptions{Workload: w, Connect: db.Connect, Duration: 10 * time.Second, Clock: clock}
				const threads = 4
				if tc.open {
					s := mustRate(t, "100")
					opt.Rate = &s
				} else {
					opt.Threads = threads
				}
				var seen []Interval
				opt.OnInterval = func(iv Interval) { seen = append(seen, iv) }
				res, err := Run(context.Background(), opt)
				if err != nil {
					t.Fatal(err)
				}
				s := res.Summary
				t.Logf("%s", FormatSummary(s))
				for _, iv := range res.Intervals {
					t.Logf("%s", FormatLineAt(iv.Start.Add(time.Duration(iv.Seconds*1e9)).Sub(start), iv))
				}
				if len(res.Intervals) != 10 || len(seen) != 10 {
					t.Fatalf("%d intervals (%d seen by OnInterval), want 10", len(res.Intervals), len(seen))
				}
				if !res.Intervals[0].Start.Equal(start) || s.Seconds != 10 || s.Errors != 0 || s.Interrupted {
					t.Fatalf("first interval at %s (start %s), %v s, %d errors, interrupted %v", res.Intervals[0].Start, start, s.Seconds, s.Errors, s.Interrupted)
				}
				if tc.open {
					// Every scheduled transaction ran (none dropped), and
					// the stall is in the percentiles.
					if s.Transactions != 1000 || s.RateTarget != 100 || s.RateAchieved != 100 || s.Mode != "open" || s.Arrival != ArrivalConstant {
						t.Errorf("transactions %d, rate %v/%v, mode %s %s; want 1000 at 100/100, open constant", s.Transactions, s.RateAchieved, s.RateTarget, s.Mode, s.Arrival)
					}
					// The transaction due at 3.01 s completed at 5.0005 s.
					if s.Max != 1990.5 || s.P999 < 1900 || s.P99 < 1500 || s.P50 > 2 {
						t.Errorf("latency p50 %v p99 %v p99.9 %v max %v ms; want the 2 s stall in p99 and above", s.P50, s.P99, s.P999, s.Max)
					}
					// Due at 100/s for 2 s with 64 connections: 136 wait.
					if s.MaxBacklog != 200-64 || s.MaxBusy != 64 {
						t.Errorf("backlog max %d, busy max %d; want 136 and 64", s.MaxBacklog, s.MaxBusy)
					}
					iv := res.Intervals[4] // [4 s, 5 s): backlog rising
					// (The transaction due at 5 s may fall due just before or
					// after the cut at 5 s.)
					if iv.Backlog < 135 || iv.Backlog > 136 || iv.BacklogMax != iv.Backlog || iv.Busy != 64 || iv.Completed != 0 {
						t.Errorf("interval 4: backlog %d (max %d), busy %d, %d completed", iv.Backlog, iv.BacklogMax, iv.Busy, iv.Completed)
					}
					iv = res.Intervals[5] // the stall's end: everything completes
					if iv.Completed != 299 || iv.Backlog != 0 || iv.Max != 1990.5 {
						t.Errorf("interval 5: %d completed, backlog %d, max %v", iv.Completed, iv.Backlog, iv.Max)
					}
					if iv := res.Intervals[0]; iv.RateTarget != 100 || iv.Rate != 100 || iv.BusyMax != 1 {
						t.Errorf("interval 0: rate %v/%v busy max %d", iv.Rate, iv.RateTarget, iv.BusyMax)
					}
				} else {
					// Each thread saw the stall once; the percentiles
					// barely move.
					if n := w.slowRuns(time.Second); n != threads {
						t.Errorf("%d slow transactions, want one per thread (%d)", n, threads)
					}
					// The transaction started at 3.001 s completed at 5.0005 s.
					if s.Max != 1999.5 || s.P999 > 2 || s.P99 > 2 {
						t.Errorf("latency p99 %v p99.9 %v max %v ms; want the stall only in max", s.P99, s.P999, s.Max)
					}
					if s.Mode != "closed" || s.RateTarget != 0 || s.MaxBacklog != 0 || s.MaxBusy != threads {
						t.Errorf("mode %s, target %v, backlog %d, busy %d", s.Mode, s.RateTarget, s.MaxBacklog, s.MaxBusy)
					}
					// 8 s of 1 ms transactions on 4 threads, 2 s lost.
					if s.Transactions < 31900 || s.Transactions > 32010 {
						t.Errorf("%d transactions, want about 32000", s.Transactions)
					}
				}
				if len(s.Ops) != 1 || s.Ops[0].Op != "tx" || s.Ops[0].Count != s.Transactions {
					t.Errorf("ops = %+v", s.Ops)
				}
				if s.Reconnects != 0 {
					t.Errorf("%d reconnects", s.Reconnects)
				}
			})
		})
	}
}

func TestClassifyError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{driver.ErrBadConn, "connection"},
		{fmt.Errorf("SELECT: %w", mysqldrv.ErrInvalidConn), "connection"},
		{io.EOF, "connection"},
		{io.ErrUnexpectedEOF, "connection"},
		{sql.ErrConnDone, "connection"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, "connection"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "connection"},
		{errors.New("dial tcp 127.0.0.1:3306: connect: connection refused"), "connection"},
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("bench: %w", context.DeadlineExceeded), "timeout"},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, "timeout"},
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"), "timeout"},
		{&mysqldrv.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option"}, "read_only"},
		{fmt.Errorf("INSERT: %w", &mysqldrv.MySQLError{Number: 1836}), "read_only"},
		{&mysqldrv.MySQLError{Number: 1213}, "deadlock"},
		{&mysqldrv.MySQLError{Number: 1205}, "lock_wait_timeout"},
		{&mysqldrv.MySQLError{Number: 1062}, "duplicate_key"},
		{&mysqldrv.MySQLError{Number: 1146}, "server_1146"},
		{errors.New("something else"), "other"},
		{context.Canceled, "other"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			if got := ClassifyError(tc.err); got != tc.want {
				t.Errorf("ClassifyError(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRunCountsErrorsByClass(t *testing.T) {
	scripted := []error{
		nil,
		&mysqldrv.MySQLError{Number: 1213},
		&mysqldrv.MySQLError{Number: 1062},
		&mysqldrv.MySQLError{Number: 1290}, // drops the connection: reconnect
		driver.ErrBadConn,                  // idem
		context.DeadlineExceeded,           // idem
		&mysqldrv.MySQLError{Number: 1146},
		errors.New("boom"),
		&mysqldrv.MySQLError{Number: 1205},
		nil,
	}
	for _, open := range []bool{true, false} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				db := newFakeDB(t)
				w := &fakeWorkload{ops: []string{"read", "write"}, clock: clock,
					next: func(k int) (int, bool) { return k % 2, k%2 == 1 },
					service: func(_ time.Time, n int64, _ int, _ bool) (time.Duration, error) {
						return time.Millisecond, scripted[(n-1)%int64(len(scripted))]
					}}
				var reroutes atomic.Int64
				opt := RunOptions{Workload: w, Connect: db.Connect, Duration: 2 * time.Second, Clock: clock,
					OnReconnect: func() { reroutes.Add(1) }}
				if open {
					s := mustRate(t, "100")
					opt.Rate = &s
				} else {
					opt.Threads = 1
				}
				res, err := Run(context.Background(), opt)
				if err != nil {
					t.Fatal(err)
				}
				s := res.Summary
				rounds := s.Transactions / int64(len(scripted))
				if open && (s.Transactions != 200 || rounds != 20) {
					t.Fatalf("%d transactions, want 200", s.Transactions)
				}
				if s.Transactions%int64(len(scripted)) != 0 {
					// Closed loop: compare whole rounds only.
					t.Logf("closed loop: %d transactions", s.Transactions)
				}
				want := map[string]int64{"deadlock": rounds, "duplicate_key": rounds, "read_only": rounds, "connection": rounds,
					"timeout": rounds, "server_1146": rounds, "other": rounds, "lock_wait_timeout": rounds}
				extra := s.Transactions % int64(len(scripted))
				for i := int64(0); i < extra; i++ {
					if e := scripted[i]; e != nil {
						want[ClassifyError(e)]++
					}
				}
				var sum int64
				for c, n := range want {
					sum += n
					if s.ErrorsBy[c] != n {
						t.Errorf("errors_by_class[%s] = %d, want %d (all: %v)", c, s.ErrorsBy[c], n, s.ErrorsBy)
					}
				}
				if s.Errors != sum || len(s.ErrorsBy) != len(want) {
					t.Errorf("errors = %d %v, want %d", s.Errors, s.ErrorsBy, sum)
				}
				// read_only, connection and timeout drop the connection; the
				// next transaction connects again.
				drops := want["read_only"] + want["connection"] + want["timeout"]
				if reroutes.Load() != drops {
					t.Errorf("OnReconnect called %d times, want %d", reroutes.Load(), drops)
				}
				wantReconn := drops
				if last := scripted[(s.Transactions-1)%int64(len(scripted))]; last != nil && dropsConn(ClassifyError(last), last) {
					wantReconn-- // the run ended before reconnecting
				}
				if s.Reconnects != wantReconn {
					t.Errorf("reconnects = %d, want %d", s.Reconnects, wantReconn)
				}
				// Dropped connections are closed.
				if got := db.closed.Load(); got < drops {
					t.Errorf("%d connections closed, want at least %d", got, drops)
				}
				var ivErrors, ivReconn int64
				for _, iv := range res.Intervals {
					ivErrors += iv.Errors
					ivReconn += iv.Reconnects
				}
				if ivErrors != s.Errors || ivReconn != s.Reconnects {
					t.Errorf("intervals add up to %d errors, %d reconnects; summary %d, %d", ivErrors, ivReconn, s.Errors, s.Reconnects)
				}
				if len(s.Ops) != 2 || s.Ops[0].Errors+s.Ops[1].Errors != s.Errors || s.Ops[0].Count+s.Ops[1].Count != s.Transactions {
					t.Errorf("ops = %+v", s.Ops)
				}
			})
		})
	}
}

func TestRunServerGoneMidRun(t *testing.T) {
	for _, open := range []bool{true, false} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				start := clock.Now()
				db := newFakeDB(t)
				// The server dies at 1 s and is back at 2 s: transactions
				// fail with a bad connection, connects are refused.
				down := func(now time.Time) bool { at := now.Sub(start); return at >= time.Second && at < 2*time.Second }
				w := &fakeWorkload{ops: []string{"tx"}, clock: clock,
					service: func(now time.Time, _ int64, _ int, _ bool) (time.Duration, error) {
						if down(now) {
							return 0, driver.ErrBadConn
						}
						return time.Millisecond, nil
					}}
				connect := func(ctx context.Context) (Conn, error) {
					db.refuse.Store(down(clock.Now()))
					return db.Connect(ctx)
				}
				opt := RunOptions{Workload: w, Connect: connect, Duration: 3 * time.Second, Clock: clock, Threads: 2}
				if open {
					s := mustRate(t, "100")
					opt.Rate = &s
				}
				res, err := Run(context.Background(), opt)
				if err != nil {
					t.Fatal(err)
				}
				s := res.Summary
				t.Logf("%s", FormatSummary(s))
				if s.Errors == 0 || s.ErrorsBy["connection"] != s.Errors {
					t.Fatalf("errors %d %v, want connection errors only", s.Errors, s.ErrorsBy)
				}
				if s.Reconnects < 1 {
					t.Errorf("reconnects = %d, want the workers back after the outage", s.Reconnects)
				}
				if last := res.Intervals[2]; last.Errors != 0 || last.Completed == 0 {
					t.Errorf("after the outage: %d errors, %d transactions", last.Errors, last.Completed)
				}
				if open && (s.Transactions != 300 || s.Errors != 100) {
					t.Errorf("open loop: %d transactions, %d errors; want 300, 100 (each due transaction counted)", s.Transactions, s.Errors)
				}
			})
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	tests := []struct {
		name      string
		open      bool
		stallFrom time.Duration // a transaction started from here runs 10 s
		wantAbort bool
	}{
		{name: "open loop", open: true, stallFrom: time.Hour},
		{name: "closed loop", open: false, stallFrom: time.Hour},
		{name: "open loop, stuck transactions cancelled after the grace", open: true, stallFrom: 2 * time.Second, wantAbort: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				start := clock.Now()
				db := newFakeDB(t)
				w := &fakeWorkload{ops: []string{"tx"}, clock: clock,
					service: func(now time.Time, _ int64, _ int, _ bool) (time.Duration, error) {
						if now.Sub(start) >= tc.stallFrom {
							return 10 * time.Second, nil
						}
						return time.Millisecond, nil
					}}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				opt := RunOptions{Workload: w, Connect: db.Connect, Duration: 10 * time.Second, Clock: clock, Threads: 2}
				if tc.open {
					s := mustRate(t, "100")
					opt.Rate = &s
				}
				go func() {
					_ = clock.SleepUntil(ctx, start.Add(2505*time.Millisecond))
					cancel()
				}()
				res, err := Run(ctx, opt)
				if err != nil {
					t.Fatalf("Run returned %v, want the partial result and no error", err)
				}
				s := res.Summary
				t.Logf("%s", FormatSummary(s))
				if !s.Interrupted || !approxEq(s.Seconds, 2.505) {
					t.Fatalf("interrupted %v after %v s, want true after 2.505 s", s.Interrupted, s.Seconds)
				}
				if len(res.Intervals) != 3 || !approxEq(res.Intervals[2].Seconds, 0.505) {
					t.Fatalf("%d intervals, want 3 (the last one 0.505 s)", len(res.Intervals))
				}
				took := clock.Now().Sub(start)
				if tc.wantAbort {
					// 51 transactions (2.00 s to 2.50 s) stuck for 10 s:
					// cancelled 2 s after Ctrl-C and counted.
					if took != 4505*time.Millisecond {
						t.Errorf("Run returned %s after the start, want 4.505 s (2 s of grace)", took)
					}
					if s.ErrorsBy[ErrorAborted] != 51 || s.Errors != 51 || s.Transactions != 251 {
						t.Errorf("%d transactions, errors %v; want 251 with 51 aborted", s.Transactions, s.ErrorsBy)
					}
				} else {
					if took > 2506*time.Millisecond {
						t.Errorf("Run returned %s after the start, want right after Ctrl-C", took)
					}
					if s.Errors != 0 {
						t.Errorf("errors %v", s.ErrorsBy)
					}
					if tc.open && s.Transactions != 251 {
						t.Errorf("%d transactions, want 251", s.Transactions)
					}
				}
			})
		})
	}
}

func TestRunEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testClock{}
		start := clock.Now()
		db := newFakeDB(t)
		// Reads and writes alternate at 100/s (writes every 20 ms from 0);
		// writes started in [5.2 s, 7.2 s) fail: the primary is read-only
		// until the new one takes over.
		w := &fakeWorkload{ops: []string{"read", "write"}, clock: clock,
			next: func(k int) (int, bool) { return k % 2, k%2 == 1 },
			service: func(now time.Time, n int64, op int, _ bool) (time.Duration, error) {
				at := now.Sub(start)
				if op == 1 && at >= 5200*time.Millisecond && at < 7200*time.Millisecond {
					return 0, &mysqldrv.MySQLError{Number: 1290, Message: "read only"}
				}
				return time.Millisecond, nil
			}}
		s := mustRate(t, "100")
		ledger := &Ledger{}
		res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Duration: 10 * time.Second,
			Clock: clock, EventAt: 5 * time.Second, Ledger: ledger})
		if err != nil {
			t.Fatal(err)
		}
		e := res.Summary.Event
		if e == nil {
			t.Fatal("no event report")
		}
		t.Logf("%s", FormatSummary(res.Summary))
		ms := func(t time.Time) float64 { return float64(t.Sub(start)) / 1e6 }
		if !e.At.Equal(start.Add(5*time.Second)) || ms(e.FirstFailed) != 5200 || ms(e.FirstOK) != 7201 || e.UnavailableMS != 2001 {
			t.Errorf("event at %v ms, first failed %v ms, first ok %v ms, unavailable %v ms; want 5000, 5200, 7201, 2001",
				ms(e.At), ms(e.FirstFailed), ms(e.FirstOK), e.UnavailableMS)
		}
		if e.Failed != 100 || res.Summary.Errors != 100 || res.Summary.ErrorsBy["read_only"] != 100 {
			t.Errorf("failed %d, errors %v; want 100 read_only", e.Failed, res.Summary.ErrorsBy)
		}
		// Phases by intended start: [0, 5 s), [5 s, 7.201 s], after.
		if e.Before.Count != 500 || e.During.Count != 221 || e.After.Count != 279 || e.During.Errors != 100 || e.Before.Errors != 0 || e.After.Errors != 0 {
			t.Errorf("before %+v\nduring %+v\nafter %+v", e.Before, e.During, e.After)
		}
		if e.AckedWrites != 400 || ledger.Acked() != 400 {
			t.Errorf("acknowledged writes %d, want 400", e.AckedWrites)
		}
		if res.Summary.Reconnects != 100 {
			t.Errorf("reconnects %d, want 100 (read-only drops the connection)", res.Summary.Reconnects)
		}
		// Writes are acknowledged every 20 ms (1 ms after their start at
		// 0, 20, 40 ms, ...). The last before the failures is acknowledged
		// at 5.181 s, the first after at 7.201 s: a stall of 2020 ms,
		// counted up to the end of the intervals it spans and whole in
		// the one where it ends.
		want := []float64{20, 20, 20, 20, 20, 819, 1819, 2020, 20, 20}
		if len(res.Intervals) != len(want) {
			t.Fatalf("%d intervals, want %d", len(res.Intervals), len(want))
		}
		for i, iv := range res.Intervals {
			if !approxEq(iv.WriteStallMS, want[i]) {
				t.Errorf("interval %d: write stall %v ms, want %v", i, iv.WriteStallMS, want[i])
			}
		}
		if res.Summary.WriteStallMS != 2020 {
			t.Errorf("longest write stall %v ms, want 2020", res.Summary.WriteStallMS)
		}
	})
}

// A read-only run has no write stall: it attempted no write.
func TestRunNoWritesNoStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testClock{}
		db := newFakeDB(t)
		w := &fakeWorkload{ops: []string{"read"}, clock: clock, next: func(int) (int, bool) { return 0, false },
			service: func(time.Time, int64, int, bool) (time.Duration, error) { return time.Millisecond, nil }}
		s := mustRate(t, "50")
		res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Duration: 2 * time.Second, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Transactions != 100 || res.Summary.WriteStallMS != 0 || res.Intervals[0].WriteStallMS != 0 || res.Intervals[1].WriteStallMS != 0 {
			t.Errorf("%d transactions, longest write stall %v ms, intervals %+v; want 100 and no stall", res.Summary.Transactions, res.Summary.WriteStallMS, res.Intervals)
		}
	})
}

func TestRunEventNoFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testClock{}
		db := newFakeDB(t)
		w := &fakeWorkload{ops: []string{"tx"}, clock: clock,
			service: func(time.Time, int64, int, bool) (time.Duration, error) { return time.Millisecond, nil }}
		s := mustRate(t, "50")
		res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Duration: 4 * time.Second,
			Clock: clock, EventAt: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		e := res.Summary.Event
		if e == nil || !e.FirstFailed.IsZero() || !e.FirstOK.IsZero() || e.UnavailableMS != 0 || e.Failed != 0 ||
			e.Before.Count != 100 || e.During.Count != 100 || e.After.Count != 0 {
			t.Fatalf("event = %+v", e)
		}
	})
}

func TestRunRampAndPoisson(t *testing.T) {
	for _, arr := range []Arrival{ArrivalConstant, ArrivalPoisson} {
		t.Run(string(arr), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				db := newFakeDB(t)
				w := &fakeWorkload{ops: []string{"tx"}, clock: clock,
					service: func(time.Time, int64, int, bool) (time.Duration, error) { return 2 * time.Millisecond, nil }}
				s, err := ParseRamp("100..900:8s")
				if err != nil {
					t.Fatal(err)
				}
				// Duration 0: the ramp's own.
				res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Arrival: arr, Clock: clock, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				sum := res.Summary
				tol := 0.01
				if arr == ArrivalPoisson {
					tol = 0.03
				}
				if sum.Seconds != 8 || sum.RateTarget != 500 || math.Abs(float64(sum.Transactions)-4000) > tol*4000 {
					t.Errorf("%v s, target %v, %d transactions; want 8 s, 500/s, about 4000", sum.Seconds, sum.RateTarget, sum.Transactions)
				}
				for i, iv := range res.Intervals {
					want := 150 + 100*float64(i)
					if math.Abs(iv.RateTarget-want) > 1e-9 {
						t.Errorf("interval %d: target %v, want %v", i, iv.RateTarget, want)
					}
				}
			})
		})
	}
}

func TestRunOptionsInvalid(t *testing.T) {
	db := &fakeDB{}
	w := &fakeWorkload{}
	tests := []struct {
		name string
		opt  RunOptions
		want string
	}{
		{"no workload", RunOptions{Connect: db.Connect}, "bench: no workload"},
		{"no connect", RunOptions{Workload: w}, "bench: no way to connect"},
		{"negative duration", RunOptions{Workload: w, Connect: db.Connect, Duration: -time.Second}, "must not be negative"},
		{"empty schedule", RunOptions{Workload: w, Connect: db.Connect, Rate: &Schedule{}}, "empty rate schedule"},
		{"zero rate", RunOptions{Workload: w, Connect: db.Connect, Rate: &Schedule{Steps: []Step{{Rate: 0}}}}, "rates must be above 0"},
		{"bad arrival", RunOptions{Workload: w, Connect: db.Connect, Rate: &Schedule{Steps: []Step{{Rate: 1}}}, Arrival: "uniform"}, `arrival "uniform"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunConnections(t *testing.T) {
	tests := []struct {
		name             string
		open             bool
		threads          int
		writers, readers int64 // connections opened
	}{
		// Open loop: the worker that just finished takes the next
		// transaction, so a light load needs one connection of each.
		{name: "open loop", open: true, writers: 1, readers: 1},
		{name: "closed loop", threads: 3, writers: 3, readers: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := testClock{}
				writer, reader := newFakeDB(t), newFakeDB(t)
				var reads, writes atomic.Int64
				w := &fakeWorkload{ops: []string{"read", "write"}, clock: clock,
					next: func(k int) (int, bool) { return k % 2, k%2 == 1 },
					service: func(_ time.Time, _ int64, _ int, write bool) (time.Duration, error) {
						if write {
							writes.Add(1)
						} else {
							reads.Add(1)
						}
						return time.Millisecond, nil
					}}
				opt := RunOptions{Workload: w, Connect: writer.Connect, ConnectRead: reader.Connect, Duration: 2 * time.Second,
					Clock: clock, Threads: tc.threads}
				if tc.open {
					s := mustRate(t, "100")
					opt.Rate = &s
				}
				res, err := Run(context.Background(), opt)
				if err != nil {
					t.Fatal(err)
				}
				if writer.connect.Load() != tc.writers || reader.connect.Load() != tc.readers {
					t.Errorf("connections: %d to the writer, %d to readers; want %d, %d", writer.connect.Load(), reader.connect.Load(), tc.writers, tc.readers)
				}
				if reads.Load() == 0 || writes.Load() == 0 || reads.Load()+writes.Load() != res.Summary.Transactions {
					t.Errorf("%d reads, %d writes, %d transactions", reads.Load(), writes.Load(), res.Summary.Transactions)
				}
				// Every connection was closed at the end.
				for _, db := range []*fakeDB{writer, reader} {
					if open := db.connect.Load() - db.closed.Load(); open != 0 {
						t.Errorf("%d connections left open", open)
					}
				}
			})
		})
	}
}

// TestRunMemoryFlat runs 10 minutes at 1000 tx/s (600,000 transactions)
// and checks that the heap does not grow with them: histograms and
// interval records, nothing per transaction.
func TestRunMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("600,000 fake transactions")
	}
	synctest.Test(t, func(t *testing.T) {
		clock := testClock{}
		db := newFakeDB(t)
		w := &fakeWorkload{ops: []string{"tx"}, clock: clock,
			service: func(time.Time, int64, int, bool) (time.Duration, error) { return 3 * time.Millisecond, nil }}
		s := mustRate(t, "1000")
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		var at60, at590 uint64
		n := 0
		res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Duration: 10 * time.Minute, Clock: clock,
			OnInterval: func(Interval) {
				n++
				switch n {
				case 60:
					at60 = heap()
				case 590:
					at590 = heap()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Transactions != 600000 || len(res.Intervals) != 600 {
			t.Fatalf("%d transactions, %d intervals", res.Summary.Transactions, len(res.Intervals))
		}
		grew := int64(at590) - int64(at60)
		t.Logf("heap after 1 min %d KB, after 9 min 50 s %d KB", at60/1024, at590/1024)
		// 530 more intervals of about 200 bytes; a record per transaction
		// would be 530,000 of them.
		if grew > 1<<20 {
			t.Errorf("heap grew by %d KB from minute 1 to minute 9:50", grew/1024)
		}
	})
}

// TestRunWallClock runs briefly on the real clock (Clock nil), outside a
// bubble.
func TestRunWallClock(t *testing.T) {
	db := newFakeDB(t)
	w := &fakeWorkload{ops: []string{"tx"}, clock: WallClock(),
		service: func(time.Time, int64, int, bool) (time.Duration, error) { return time.Millisecond, nil }}
	s := mustRate(t, "500")
	res, err := Run(context.Background(), RunOptions{Workload: w, Connect: db.Connect, Rate: &s, Duration: 600 * time.Millisecond,
		Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	if sum.Transactions != 300 || sum.Errors != 0 || len(res.Intervals) != 3 || sum.Max > 500 || sum.Max < 1 {
		t.Fatalf("%d transactions, %d errors, %d intervals, max %v ms; want 300, 0, 3", sum.Transactions, sum.Errors, len(res.Intervals), sum.Max)
	}
}
