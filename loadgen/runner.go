package loadgen

// The run. Open loop (a rate schedule): one scheduler goroutine marks each
// transaction due at its intended start and hands it to an idle worker; a
// transaction due while every worker is busy waits in the backlog and is
// started by the next worker that frees up, late, with its wait in its
// latency. Closed loop (no rate): Threads workers run transactions back to
// back, each timed from its actual start, as sysbench does.
//
// Latency is completion minus intended start. A stalled server therefore
// shows as the stall in the percentiles, not as one slow transaction per
// connection (coordinated omission: a closed-loop client stops sending
// while it waits, and so never measures the transactions that would have
// queued behind the stall).
//
// The backlog is a count: transactions fall due in the order an arrival
// generator gives, and a second generator with the same seed gives the
// order in which they start, so memory stays flat however long the server
// stalls.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// Defaults of RunOptions.
const (
	DefaultMaxConcurrency = 64
	DefaultInterval       = time.Second
	// DrainGrace is how long in-flight transactions may finish when the
	// run ends (duration elapsed or Ctrl-C) before they are cancelled.
	DrainGrace = 2 * time.Second
)

// closedLoopBackoff is the pause of a closed-loop worker after its
// connection failed, so that a dead server is not hammered in a tight
// loop.
const closedLoopBackoff = 10 * time.Millisecond

// ErrorAborted is the class of transactions cancelled by the run itself:
// still running DrainGrace after the run ended.
const ErrorAborted = "aborted"

// RunOptions configure a run.
type RunOptions struct {
	Workload Workload
	// Connect opens a new connection to the writer (the caller makes it
	// follow the primary).
	Connect func(ctx context.Context) (Conn, error)
	// ConnectRead opens a connection for read-only transactions (Client.Next
	// says write=false); nil: Connect.
	ConnectRead func(ctx context.Context) (Conn, error)
	// OnReconnect, when set, is called when a worker drops its connection
	// after a connection, timeout or read-only error (a demoted primary),
	// before it connects again: the caller finds the primary again. It is
	// called from the workers, concurrently.
	OnReconnect func()
	// Rate is the open loop's schedule; nil: closed loop.
	Rate *Schedule
	// Threads is the closed loop's number of connections (default 1).
	Threads int
	// MaxConcurrency bounds the open loop's connections and transactions
	// in flight (default DefaultMaxConcurrency).
	MaxConcurrency int
	// Arrival spaces the open loop's intended starts (default constant).
	Arrival Arrival
	// Duration is the run time; 0 takes the schedule's own duration, and
	// when that is unbounded too the run lasts until ctx is cancelled.
	Duration time.Duration
	// Interval is the reporting interval (default DefaultInterval).
	Interval time.Duration
	// Timeout, when > 0, bounds each transaction, its connect included
	// (0: only the connections' own timeouts).
	Timeout time.Duration
	Seed    int64
	// Clock is the time source; nil: the wall clock.
	Clock Clock
	// Ledger is passed to Client.Run during an event run.
	Ledger *Ledger
	// EventAt > 0: the caller changes the topology this long after the
	// start, and Summary.Event gets what the clients saw (Kind, the
	// primaries and lost writes are the caller's to fill).
	EventAt time.Duration
	// OnInterval is called after each interval (from one goroutine at a
	// time, in order).
	OnInterval func(Interval)
}

// Result is a run: its summary and its intervals.
type Result struct {
	Summary   Summary    `json:"summary"`
	Intervals []Interval `json:"intervals"`
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// WallClock returns the real-time Clock (the default of RunOptions.Clock).
func WallClock() Clock { return wallClock{} }

// ClassifyError names the class of a failed transaction's error:
// "connection" (the connection is gone or cannot be made), "timeout",
// "read_only" (MySQL errors 1290 and 1836: a read-only or demoted server),
// "deadlock" (1213), "lock_wait_timeout" (1205), "duplicate_key" (1062),
// "server_<number>" for another server error, "other" otherwise ("" for
// nil).
func ClassifyError(err error) string {
	if err == nil {
		return ""
	}
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1290, 1836:
			return "read_only"
		case 1213:
			return "deadlock"
		case 1205:
			return "lock_wait_timeout"
		case 1062:
			return "duplicate_key"
		}
		return fmt.Sprintf("server_%d", me.Number)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timeout"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var oe *net.OpError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysqldrv.ErrInvalidConn),
		errors.Is(err, sql.ErrConnDone), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.As(err, &oe):
		return "connection"
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "i/o timeout"):
		return "timeout"
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "connection reset"),
		strings.Contains(msg, "broken pipe"), strings.Contains(msg, "bad connection"),
		strings.Contains(msg, "invalid connection"), strings.Contains(msg, "no such host"):
		return "connection"
	}
	return "other"
}

// dropsConn reports whether a transaction that failed with class and err
// leaves its connection unusable or pointing at the wrong server: the
// worker then connects again (and the caller finds the primary again).
func dropsConn(class string, err error) bool {
	switch class {
	case "connection", "timeout", "read_only", ErrorAborted:
		return true
	}
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, // server shutdown in progress
			1927, // connection killed (MariaDB)
			4031: // disconnected for inactivity (MySQL)
			return true
		}
	}
	return false
}

// Run runs the workload as opt says and returns its result. It returns an
// error only for invalid options: failed transactions are counted, a
// server gone mid-run does not stop the run. When ctx is cancelled
// (Ctrl-C) the run stops scheduling, gives transactions in flight
// DrainGrace to finish, and returns the result so far with
// Summary.Interrupted set; at the end of the duration it does the same
// without Interrupted. Transactions still in the backlog then are not
// started: the last interval's Backlog counts them. Those in flight
// complete into the last interval; the ones cancelled after DrainGrace
// count as errors of class ErrorAborted.
//
// Latency is recorded for every completed transaction, failed ones
// included (the time until the client knew), in microseconds.
func Run(ctx context.Context, opt RunOptions) (*Result, error) {
	r, err := newRunner(opt)
	if err != nil {
		return nil, err
	}
	return r.run(ctx), nil
}

// runner is one run's state.
type runner struct {
	opt    RunOptions
	clock  Clock
	names  []string
	open   bool
	start  time.Time
	end    time.Time // zero: until ctx ends
	event  time.Time // zero: no event
	stopCh chan struct{}

	workCtx    context.Context // transactions: cancelled DrainGrace after the end
	cancelWork context.CancelFunc

	mu         sync.Mutex
	cur        *opHists // this interval's transactions
	ivStart    time.Time
	ivErrors   int64
	ivErrorsBy map[string]int64
	ivReconn   int64
	ivStall    time.Duration // the longest stall of acknowledged writes ended in this interval
	lastAck    time.Time     // the newest acknowledged write (the run's start before the first)
	wrote      bool          // a write transaction completed (acknowledged or not)
	busy       int
	busyMax    int // this interval
	backlog    int64
	backlogMax int64 // this interval
	idle       []*worker
	queue      *arrivals // the order in which due transactions start
	stopping   bool
	ev         eventState

	// Owned by the interval cutter (the reporter, then Run after it).
	spare     *opHists
	total     *opHists
	scratch   *hist
	totals    totals
	intervals []Interval
}

// totals add up the intervals.
type totals struct {
	errors     int64
	errorsBy   map[string]int64
	reconnects int64
	busyMax    int
	backlogMax int64
	stall      float64 // ms
}

func newRunner(opt RunOptions) (*runner, error) {
	if opt.Workload == nil {
		return nil, errors.New("bench: no workload")
	}
	if opt.Connect == nil {
		return nil, errors.New("bench: no way to connect (RunOptions.Connect)")
	}
	if opt.Duration < 0 {
		return nil, fmt.Errorf("bench: duration %s must not be negative", opt.Duration)
	}
	if opt.Interval < 0 || opt.EventAt < 0 || opt.Timeout < 0 {
		return nil, errors.New("bench: interval, event time and timeout must not be negative")
	}
	if opt.Interval == 0 {
		opt.Interval = DefaultInterval
	}
	if opt.Clock == nil {
		opt.Clock = wallClock{}
	}
	if opt.Rate != nil {
		if len(opt.Rate.Steps) == 0 {
			return nil, errors.New("bench: empty rate schedule")
		}
		for _, st := range opt.Rate.Steps {
			if !(st.Rate > 0) || st.RampTo < 0 || st.For < 0 {
				return nil, fmt.Errorf("bench: rate schedule %s: rates must be above 0 and durations not negative", opt.Rate)
			}
		}
		if opt.Duration == 0 {
			opt.Duration = opt.Rate.Duration()
		}
		if opt.Arrival == "" {
			opt.Arrival = ArrivalConstant
		}
		if opt.Arrival != ArrivalConstant && opt.Arrival != ArrivalPoisson {
			return nil, fmt.Errorf("bench: arrival %q: want constant or poisson", opt.Arrival)
		}
		if opt.MaxConcurrency <= 0 {
			opt.MaxConcurrency = DefaultMaxConcurrency
		}
	} else if opt.Threads <= 0 {
		opt.Threads = 1
	}
	names := opt.Workload.Ops()
	if len(names) == 0 {
		names = []string{opt.Workload.Name()}
	}
	r := &runner{
		opt:     opt,
		clock:   opt.Clock,
		names:   names,
		open:    opt.Rate != nil,
		stopCh:  make(chan struct{}),
		cur:     newOpHists(len(names)),
		spare:   newOpHists(len(names)),
		total:   newOpHists(len(names)),
		scratch: newHist(),
	}
	return r, nil
}

// worker is one connection's state.
type worker struct {
	client Client
	conns  [2]Conn // the writer's, the reader's (with ConnectRead)
	lost   [2]bool // dropped after an error: the next connect is a reconnect
	work   chan time.Time
}

func (r *runner) newWorker(i int) *worker {
	return &worker{client: r.opt.Workload.NewClient(r.opt.Seed + int64(i)), work: make(chan time.Time, 1)}
}

// run runs the load until the end or ctx, then drains and summarizes.
func (r *runner) run(ctx context.Context) *Result {
	r.start = r.clock.Now()
	r.ivStart, r.lastAck = r.start, r.start
	if r.opt.Duration > 0 {
		r.end = r.start.Add(r.opt.Duration)
	}
	if r.opt.EventAt > 0 {
		r.event = r.start.Add(r.opt.EventAt)
		r.ev = eventState{at: r.event, before: newHist(), during: newHist(), after: newHist()}
	}
	r.workCtx, r.cancelWork = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelWork()

	rctx, stopReporter := context.WithCancel(ctx)
	var reporter sync.WaitGroup
	reporter.Go(func() { r.report(rctx) })

	var workers, scheduler sync.WaitGroup
	if r.open {
		r.queue = newArrivals(*r.opt.Rate, r.opt.Arrival, r.start, r.opt.Seed)
		ws := make([]*worker, r.opt.MaxConcurrency)
		for i := range ws {
			ws[i] = r.newWorker(i)
		}
		// The idle stack pops worker 0 first, and a worker that just
		// finished next: as few connections as the load needs.
		for i := len(ws) - 1; i >= 0; i-- {
			r.idle = append(r.idle, ws[i])
		}
		for _, w := range ws {
			workers.Go(func() { r.openWorker(w) })
		}
		due := newArrivals(*r.opt.Rate, r.opt.Arrival, r.start, r.opt.Seed)
		scheduler.Go(func() { r.schedule(ctx, due) })
	} else {
		for i := range r.opt.Threads {
			w := r.newWorker(i)
			workers.Go(func() { r.closedWorker(ctx, w) })
		}
	}

	// Wait for the end of the run, or Ctrl-C.
	var interrupted bool
	if r.end.IsZero() {
		<-ctx.Done()
		interrupted = true
	} else if err := r.clock.SleepUntil(ctx, r.end); err != nil {
		interrupted = true
	}
	stopAt := r.clock.Now()
	if !interrupted || stopAt.After(r.end) && !r.end.IsZero() {
		stopAt = r.end
	}
	stopReporter()
	reporter.Wait()
	scheduler.Wait()
	// Boundaries the reporter missed (it stops as soon as the run does).
	for b := r.ivStart.Add(r.opt.Interval); b.Before(stopAt); b = b.Add(r.opt.Interval) {
		r.emit(r.cut(b))
	}
	if stopAt.Before(r.ivStart) {
		stopAt = r.ivStart
	}

	r.mu.Lock()
	r.stopping = true
	busyAtEnd, backlogAtEnd := r.busy, r.backlog
	r.mu.Unlock()
	close(r.stopCh)

	r.drain(&workers)

	// The last interval: to the end of the run, with the transactions that
	// completed while draining.
	iv := r.cut(stopAt)
	iv.Busy, iv.Backlog = busyAtEnd, backlogAtEnd
	if iv.Seconds > 0 || iv.Completed > 0 || len(r.intervals) == 0 {
		r.emit(iv)
	}
	return &Result{Summary: r.summary(stopAt, interrupted), Intervals: r.intervals}
}

// drain waits for the workers, cancelling their transactions after
// DrainGrace.
func (r *runner) drain(workers *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	gctx, cancel := context.WithCancel(context.Background())
	var grace sync.WaitGroup
	grace.Go(func() {
		if r.clock.SleepUntil(gctx, r.clock.Now().Add(DrainGrace)) == nil {
			r.cancelWork()
		}
	})
	<-done
	cancel()
	grace.Wait()
}

// schedule marks transactions due at their intended starts until the end.
func (r *runner) schedule(ctx context.Context, due *arrivals) {
	for {
		t := due.next()
		if !r.end.IsZero() && !t.Before(r.end) {
			return
		}
		if ctx.Err() != nil || r.clock.SleepUntil(ctx, t) != nil {
			return
		}
		r.mu.Lock()
		if n := len(r.idle); n > 0 {
			w := r.idle[n-1]
			r.idle = r.idle[:n-1]
			r.busy++
			r.busyMax = max(r.busyMax, r.busy)
			w.work <- r.queue.next()
		} else {
			r.backlog++
			r.backlogMax = max(r.backlogMax, r.backlog)
		}
		r.mu.Unlock()
	}
}

// openWorker runs the transactions handed to it, then the backlog's, until
// the run stops.
func (r *runner) openWorker(w *worker) {
	defer w.closeConns()
	for {
		var t time.Time
		select {
		case t = <-w.work:
		case <-r.stopCh:
			select {
			case t = <-w.work: // handed just before the end: run it
			default:
				return
			}
		}
		for {
			r.runOne(w, t)
			r.mu.Lock()
			if r.stopping || r.backlog == 0 {
				r.busy--
				if r.stopping {
					r.mu.Unlock()
					return
				}
				r.idle = append(r.idle, w)
				r.mu.Unlock()
				break
			}
			r.backlog--
			t = r.queue.next()
			r.mu.Unlock()
		}
	}
}

// closedWorker runs transactions back to back until the run stops.
func (r *runner) closedWorker(ctx context.Context, w *worker) {
	defer w.closeConns()
	for {
		select {
		case <-r.stopCh:
			return
		default:
		}
		now := r.clock.Now()
		if ctx.Err() != nil || (!r.end.IsZero() && !now.Before(r.end)) {
			return
		}
		r.mu.Lock()
		r.busy++
		r.busyMax = max(r.busyMax, r.busy)
		r.mu.Unlock()
		connected := r.runOne(w, now)
		r.mu.Lock()
		r.busy--
		r.mu.Unlock()
		if !connected {
			_ = r.clock.SleepUntil(ctx, r.clock.Now().Add(closedLoopBackoff))
		}
	}
}

// runOne runs one transaction intended to start at intended and records
// it. It returns false when no connection could be made.
func (r *runner) runOne(w *worker, intended time.Time) (connected bool) {
	op, write := w.client.Next()
	if op < 0 {
		op = len(r.names)
	}
	idx := 0
	if !write && r.opt.ConnectRead != nil {
		idx = 1
	}
	ctx := r.workCtx
	if r.opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opt.Timeout)
		defer cancel()
	}
	class := ""
	conn, err := r.conn(ctx, w, idx)
	if err != nil {
		class = "connection"
		if r.workCtx.Err() != nil {
			class = ErrorAborted
		}
	} else {
		connected = true
		if err = w.client.Run(ctx, conn, op, r.opt.Ledger); err != nil {
			class = ClassifyError(err)
			if r.workCtx.Err() != nil {
				class = ErrorAborted
			}
			if dropsConn(class, err) {
				w.drop(idx)
				if r.opt.OnReconnect != nil {
					r.opt.OnReconnect()
				}
			}
		}
	}
	r.record(op, write, intended, r.clock.Now(), class)
	return connected
}

// conn returns the worker's connection idx, connecting when it has none.
func (r *runner) conn(ctx context.Context, w *worker, idx int) (Conn, error) {
	if c := w.conns[idx]; c != nil {
		return c, nil
	}
	connect := r.opt.Connect
	if idx == 1 {
		connect = r.opt.ConnectRead
	}
	c, err := connect(ctx)
	if err == nil && c == nil {
		err = errors.New("bench: connect returned no connection")
	}
	if err != nil {
		return nil, err
	}
	w.conns[idx] = c
	if w.lost[idx] {
		w.lost[idx] = false
		r.mu.Lock()
		r.ivReconn++
		r.mu.Unlock()
	}
	return c, nil
}

// drop closes connection idx: the next transaction connects again.
func (w *worker) drop(idx int) {
	c := w.conns[idx]
	if c == nil {
		return
	}
	w.conns[idx], w.lost[idx] = nil, true
	_ = c.Close()
}

func (w *worker) closeConns() {
	for i, c := range w.conns {
		if c != nil {
			_ = c.Close()
			w.conns[i] = nil
		}
	}
}

// record adds one completed transaction.
func (r *runner) record(op int, write bool, intended, done time.Time, class string) {
	lat := done.Sub(intended)
	failed := class != ""
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.record(op, lat, failed)
	if failed {
		r.ivErrors++
		if r.ivErrorsBy == nil {
			r.ivErrorsBy = map[string]int64{}
		}
		r.ivErrorsBy[class]++
	}
	if write {
		r.wrote = true
		// Completions may be recorded slightly out of order: a stall is
		// measured from the newest acknowledgement before it.
		if !failed && done.After(r.lastAck) {
			r.ivStall = max(r.ivStall, done.Sub(r.lastAck))
			r.lastAck = done
		}
	}
	if !r.event.IsZero() {
		r.ev.observe(write, intended, done, lat, failed)
	}
}

// eventState follows the writes around a topology change.
type eventState struct {
	at                    time.Time
	firstFailed, firstOK  time.Time
	failed                int64
	before, during, after *hist
	errBefore, errDuring  int64
	errAfter              int64
}

// observe adds one transaction. The first failed write is the earliest
// intended start (not before the event) of a write that failed at or
// after the event; the first successful write is the first write intended
// at or after it that succeeded, at its completion. The phases split
// transactions by intended start: before the event, from the event to
// the first successful write, after it.
func (e *eventState) observe(write bool, intended, done time.Time, lat time.Duration, failed bool) {
	recovered := !e.firstOK.IsZero()
	switch {
	case intended.Before(e.at):
		e.before.record(lat)
		if failed {
			e.errBefore++
		}
	case recovered && intended.After(e.firstOK):
		e.after.record(lat)
		if failed {
			e.errAfter++
		}
	default:
		e.during.record(lat)
		if failed {
			e.errDuring++
		}
	}
	if recovered || done.Before(e.at) {
		return
	}
	if failed {
		e.failed++
	}
	if !write {
		return
	}
	switch {
	case failed:
		t := intended
		if t.Before(e.at) {
			t = e.at
		}
		if e.firstFailed.IsZero() || t.Before(e.firstFailed) {
			e.firstFailed = t
		}
	case !e.firstFailed.IsZero() && !intended.Before(e.firstFailed):
		e.firstOK = done
	}
}

// report cuts an interval at each interval boundary until ctx ends or the
// next boundary is the run's end (Run cuts the last one).
func (r *runner) report(ctx context.Context) {
	for k := 1; ; k++ {
		b := r.start.Add(time.Duration(k) * r.opt.Interval)
		if !r.end.IsZero() && !b.Before(r.end) {
			return
		}
		if r.clock.SleepUntil(ctx, b) != nil {
			return
		}
		r.emit(r.cut(b))
	}
}

// cut closes the current interval at end and returns it, and adds it to
// the run's totals.
func (r *runner) cut(end time.Time) Interval {
	r.mu.Lock()
	h := r.cur
	r.cur, r.spare = r.spare, nil
	iv := Interval{
		Start: r.ivStart, Seconds: end.Sub(r.ivStart).Seconds(),
		Errors: r.ivErrors, ErrorsBy: r.ivErrorsBy, Reconnects: r.ivReconn,
		Busy: r.busy, BusyMax: r.busyMax, Backlog: r.backlog, BacklogMax: r.backlogMax,
	}
	if r.wrote {
		// The stall still going at the interval's end counts up to it.
		stall := max(r.ivStall, end.Sub(r.lastAck))
		iv.WriteStallMS = float64(stall) / float64(time.Millisecond)
	}
	r.ivStart = end
	r.ivErrors, r.ivErrorsBy, r.ivReconn, r.ivStall = 0, nil, 0, 0
	r.busyMax, r.backlogMax = r.busy, r.backlog
	r.mu.Unlock()

	h.all(r.scratch)
	l := r.scratch.latencies()
	iv.P50, iv.P90, iv.P99, iv.P999, iv.Max = l.P50, l.P90, l.P99, l.P999, l.Max
	iv.Completed = r.scratch.count()
	if iv.Seconds > 0 {
		iv.Rate = float64(iv.Completed) / iv.Seconds
		if r.open {
			from, to := iv.Start.Sub(r.start), end.Sub(r.start)
			iv.RateTarget = r.opt.Rate.Count(from, to) / iv.Seconds
		}
	}
	r.total.merge(h)
	h.reset()
	r.mu.Lock()
	r.spare = h
	r.mu.Unlock()

	t := &r.totals
	t.errors += iv.Errors
	for c, n := range iv.ErrorsBy {
		if t.errorsBy == nil {
			t.errorsBy = map[string]int64{}
		}
		t.errorsBy[c] += n
	}
	t.reconnects += iv.Reconnects
	t.stall = max(t.stall, iv.WriteStallMS)
	t.busyMax = max(t.busyMax, iv.BusyMax)
	t.backlogMax = max(t.backlogMax, iv.BacklogMax)
	return iv
}

func (r *runner) emit(iv Interval) {
	r.intervals = append(r.intervals, iv)
	if r.opt.OnInterval != nil {
		r.opt.OnInterval(iv)
	}
}

// summary sums the run up (after the last interval).
func (r *runner) summary(stopAt time.Time, interrupted bool) Summary {
	secs := stopAt.Sub(r.start).Seconds()
	r.total.all(r.scratch)
	l := r.scratch.latencies()
	s := Summary{
		Workload:     r.opt.Workload.Name(),
		Mode:         "closed",
		Seconds:      secs,
		Transactions: r.scratch.count(),
		Errors:       r.totals.errors,
		ErrorsBy:     r.totals.errorsBy,
		P50:          l.P50, P90: l.P90, P99: l.P99, P999: l.P999, Max: l.Max,
		MaxBacklog:   r.totals.backlogMax,
		MaxBusy:      r.totals.busyMax,
		Reconnects:   r.totals.reconnects,
		WriteStallMS: r.totals.stall,
		Ops:          r.total.summaries(r.names),
		Interrupted:  interrupted,
	}
	if r.open {
		s.Mode, s.Arrival = "open", r.opt.Arrival
		if secs > 0 {
			s.RateTarget = r.opt.Rate.Count(0, stopAt.Sub(r.start)) / secs
		}
	}
	if secs > 0 {
		s.RateAchieved = float64(s.Transactions) / secs
	}
	if !r.event.IsZero() {
		r.mu.Lock()
		e := r.ev
		r.mu.Unlock()
		ev := &EventReport{
			At: e.at, FirstFailed: e.firstFailed, FirstOK: e.firstOK, Failed: e.failed,
			Before:      opSummary("before", e.before, e.errBefore),
			During:      opSummary("during", e.during, e.errDuring),
			After:       opSummary("after", e.after, e.errAfter),
			AckedWrites: r.opt.Ledger.Acked(),
		}
		switch {
		case !e.firstFailed.IsZero() && !e.firstOK.IsZero():
			ev.UnavailableMS = msBetween(e.firstFailed, e.firstOK)
		case !e.firstFailed.IsZero():
			// No write succeeded after: unavailable at least to the end.
			ev.UnavailableMS = msBetween(e.firstFailed, stopAt)
		}
		s.Event = ev
	}
	return s
}

func msBetween(a, b time.Time) float64 {
	return float64(b.Sub(a)) / float64(time.Millisecond)
}
