package collector

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
)

// runnerFakeDialer connects to nothing: its connections answer the version
// query and record statements.
type runnerFakeDialer struct {
	fail    atomic.Bool  // dials fail, as to a dead server
	delay   atomic.Int64 // each dial takes this long (a time.Duration) before it answers
	version string       // @@version; MariaDB by default

	mu      sync.Mutex
	dials   int
	execs   []string
	queries []string
	closed  int
	// breakNext makes the next query on any connection fail as a broken
	// connection would.
	breakNext bool
}

func (d *runnerFakeDialer) dial(ctx context.Context) (runnerConn, error) {
	if w := time.Duration(d.delay.Load()); w > 0 {
		select {
		case <-time.After(w):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials++
	if d.fail.Load() {
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, errors.New("connection refused"), "mysql: connect on fake:3306")
	}
	return &runnerFakeConn{d: d}, nil
}

func (d *runnerFakeDialer) reset()                       {}
func (d *runnerFakeDialer) retarget(dbpilot.InstanceKey) {}

func (d *runnerFakeDialer) statements() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.execs...)
}

// queried returns the queries run (Query), in order.
func (d *runnerFakeDialer) queried() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.queries...)
}

type runnerFakeConn struct{ d *runnerFakeDialer }

func (c *runnerFakeConn) Query(ctx context.Context, q string, _ ...any) (*mysql.Rows, error) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.d.breakNext {
		c.d.breakNext = false
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, errors.New("broken pipe"), "mysql: query on fake:3306")
	}
	c.d.queries = append(c.d.queries, q)
	if q == runnerVersionSQL {
		v := c.d.version
		if v == "" {
			v = "10.11.19-MariaDB-log"
		}
		return gsRows([]string{"v", "c"}, []string{v, "fake"}), nil
	}
	return gsRows([]string{"x"}, []string{"1"}), nil
}

func (c *runnerFakeConn) Exec(ctx context.Context, stmts ...string) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.d.execs = append(c.d.execs, stmts...)
	return nil
}

func (c *runnerFakeConn) Close() error {
	c.d.mu.Lock()
	c.d.closed++
	c.d.mu.Unlock()
	return nil
}

// runnerSink keeps the batches written to it.
type runnerSink struct {
	mu      sync.Mutex
	batches []dbpilot.Batch
}

func (s *runnerSink) Write(_ context.Context, b dbpilot.Batch) error {
	s.mu.Lock()
	s.batches = append(s.batches, b)
	s.mu.Unlock()
	return nil
}

// of returns the batches of one collector.
func (s *runnerSink) of(collector string) []dbpilot.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []dbpilot.Batch
	for _, b := range s.batches {
		if b.Collector == collector {
			out = append(out, b)
		}
	}
	return out
}

// runnerFunc is a collector made of a function.
type runnerFunc struct {
	name     string
	interval time.Duration
	f        func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error)
}

func (c runnerFunc) Name() string                   { return c.name }
func (c runnerFunc) DefaultInterval() time.Duration { return c.interval }
func (c runnerFunc) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	return c.f(ctx, q, t)
}

// runnerQuery is a collector body that runs one query.
func runnerQuery(ctx context.Context, q Querier, _ Target) ([]dbpilot.Sample, error) {
	if _, err := q.Query(ctx, "SELECT 1"); err != nil {
		return nil, err
	}
	return []dbpilot.Sample{{Name: "x", Value: 1}}, nil
}

var runnerTestKey = dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}

func newTestRunner(t *testing.T, d *runnerFakeDialer, cfg Config, cs ...Collector) (*Runner, *runnerSink) {
	t.Helper()
	sink := &runnerSink{}
	r := NewRunner(Target{Key: runnerTestKey, Role: "primary"}, mysql.Options{}, cs, cfg, sink,
		dbpilot.Batch{Cluster: "c1"}, nil)
	r.pool.dialer = d
	t.Cleanup(r.Stop)
	return r, sink
}

func runnerWait(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, timeout, what, func() (bool, string) { return cond(), "" })
}

func runnerSample(b dbpilot.Batch, name string) (dbpilot.Sample, bool) {
	for _, s := range b.Samples {
		if s.Name == name {
			return s, true
		}
	}
	return dbpilot.Sample{}, false
}

func TestRunnerBatchesAndSelfMetrics(t *testing.T) {
	d := &runnerFakeDialer{}
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"global_status": 30 * time.Millisecond, "other": 30 * time.Millisecond}, WriteIdleCounters: true},
		runnerFunc{"other", time.Second, runnerQuery},
		runnerFunc{"global_status", time.Second, runnerQuery},
	)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "three batches each", func() bool {
		return len(sink.of("global_status")) >= 3 && len(sink.of("other")) >= 3
	})
	r.Stop()
	for _, name := range []string{"global_status", "other"} {
		for _, b := range sink.of(name) {
			if b.Instance != runnerTestKey || b.Cluster != "c1" || b.Role != "primary" || b.Collector != name || b.Time.IsZero() || b.Took <= 0 {
				t.Fatalf("batch header = %+v", b)
			}
			idx := gsIndex(t, b.Samples)
			lbl := `{collector="` + name + `"}`
			for _, k := range []string{"x", MetricCollectorDuration + lbl, MetricCollectorErrors + lbl, MetricCollectorSkipped + lbl, MetricCollectorSlow + lbl} {
				if _, ok := idx[k]; !ok {
					t.Errorf("%s batch lacks %s: %v", name, k, b.Samples)
				}
			}
			if idx[MetricCollectorDuration+lbl].Type != dbpilot.Gauge || idx[MetricCollectorErrors+lbl].Type != dbpilot.Counter {
				t.Errorf("self-metric types wrong: %v", b.Samples)
			}
			up, ok := idx[MetricUp]
			if name == "global_status" && (!ok || up.Value != 1) {
				t.Errorf("global_status batch: mysql_up = %v, %v", up, ok)
			}
			if name == "other" && ok {
				t.Errorf("other batch carries mysql_up")
			}
		}
	}
	// One dial serves both collectors (sessions are reused), with the
	// session settings; MariaDB's statement limit at 80% of 30 ms goes
	// with each query, not in a SET of its own.
	if n := r.pool.dialCount(); n > RunnerSessions {
		t.Errorf("dials = %d, want at most %d", n, RunnerSessions)
	}
	stmts := strings.Join(d.statements(), "\n")
	for _, want := range []string{"SET SESSION lock_wait_timeout = 1", "SET SESSION innodb_lock_wait_timeout = 1"} {
		if !strings.Contains(stmts, want) {
			t.Errorf("statements lack %q:\n%s", want, stmts)
		}
	}
	if strings.Contains(stmts, "max_statement_time") {
		t.Errorf("a SET of the statement limit on MariaDB:\n%s", stmts)
	}
	for _, q := range d.queried() {
		if q != runnerVersionSQL && !strings.HasPrefix(q, "SET STATEMENT max_statement_time=0.024 FOR ") {
			t.Errorf("query without the run's limit: %q", q)
		}
	}
	for _, st := range r.Stats() {
		if st.Runs < 3 || st.Errors != 0 || st.LastError != "" || st.LastRun.IsZero() || st.Interval != 30*time.Millisecond {
			t.Errorf("stat = %+v", st)
		}
	}
}

func TestRunnerMySQLStatementTimeout(t *testing.T) {
	d := &runnerFakeDialer{version: "8.4.0"}
	r, sink := newTestRunner(t, d, Config{Timeout: 700 * time.Millisecond}, runnerFunc{"c", time.Hour, runnerQuery})
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("c")) == 1 })
	if stmts := strings.Join(d.statements(), "\n"); !strings.Contains(stmts, "SET SESSION max_execution_time = 700") {
		t.Errorf("statements:\n%s", stmts)
	}
}

// A collector still running at its next tick is skipped and counted, never
// queued; its batch, once it ends, is marked slow.
func TestRunnerSkipsBusyCollector(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	blocker := runnerFunc{"blocker", time.Second, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	}}
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"blocker": 20 * time.Millisecond}, Timeout: 10 * time.Second}, blocker)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "skips", func() bool { return r.Stats()[0].Skipped >= 5 })
	if n := started.Load(); n != 1 {
		t.Fatalf("%d runs started while the first was going", n)
	}
	close(release)
	runnerWait(t, 5*time.Second, "the slow batch", func() bool { return len(sink.of("blocker")) >= 1 })
	b := sink.of("blocker")[0]
	if !b.Slow || b.Took < 100*time.Millisecond {
		t.Errorf("batch Slow = %v, Took = %v", b.Slow, b.Took)
	}
	s, _ := runnerSample(b, MetricCollectorSkipped)
	if s.Value < 5 {
		t.Errorf("skipped_total = %v", s.Value)
	}
	if s, _ := runnerSample(b, MetricCollectorSlow); s.Value != 1 {
		t.Errorf("slow_total = %v", s.Value)
	}
	st := r.Stats()[0]
	if st.Slow != 1 || st.Runs < 1 {
		t.Errorf("stat = %+v", st)
	}
}

// Each run has the timeout: 80% of the interval by default.
func TestRunnerTimeout(t *testing.T) {
	var deadline atomic.Int64
	c := runnerFunc{"c", time.Second, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		dl, _ := ctx.Deadline()
		deadline.Store(int64(time.Until(dl)))
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"c": 100 * time.Millisecond}}, c)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("c")) >= 1 })
	if d := time.Duration(deadline.Load()); d > 80*time.Millisecond || d < 50*time.Millisecond {
		t.Errorf("run deadline in %v, want about 80ms", d)
	}
	st := r.Stats()[0]
	if st.Errors < 1 || !strings.Contains(st.LastError, "deadline") {
		t.Errorf("stat = %+v", st)
	}
	b := sink.of("c")[0]
	if s, _ := runnerSample(b, MetricCollectorErrors); s.Value < 1 {
		t.Errorf("errors_total = %v", s.Value)
	}
}

// While the instance is down, global_status batches say mysql_up 0 at every
// tick, but connections are tried with backoff; once it is back, mysql_up
// is 1 again and long-interval collectors run at once.
func TestRunnerBackoffAndRecovery(t *testing.T) {
	d := &runnerFakeDialer{}
	d.fail.Store(true)
	var slowRuns atomic.Int32
	slow := runnerFunc{"global_variables", time.Hour, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		if _, err := q.Query(ctx, "SELECT 1"); err != nil {
			return nil, err
		}
		slowRuns.Add(1)
		return nil, nil
	}}
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"global_status": 10 * time.Millisecond}},
		runnerFunc{"global_status", time.Second, runnerQuery}, slow)
	start := time.Now()
	r.Start(context.Background())
	// At least 30 ticks and 1.2 s down (a loaded machine may need longer
	// for the ticks: the attempts' bound below follows the time taken).
	runnerWait(t, 15*time.Second, "30 batches while down, over 1.2 s", func() bool {
		return len(sink.of("global_status")) >= 30 && time.Since(start) >= 1200*time.Millisecond
	})
	elapsed := time.Since(start)
	down := sink.of("global_status")
	for _, b := range down {
		if s, ok := runnerSample(b, MetricUp); !ok || s.Value != 0 {
			t.Fatalf("batch while down: mysql_up = %v, %v", s, ok)
		}
	}
	// Attempts at about 0, 0.1, 0.3, 0.7, 1.5, 3.1 s (doubling): not one
	// per tick. One more than were due by elapsed may have started since.
	due := 0
	for at := time.Duration(0); at <= elapsed; at = 2*at + 100*time.Millisecond {
		due++
	}
	if n := r.pool.dialCount(); n < 3 || n > due+1 {
		t.Errorf("%d connection attempts in %v (want 3 to %d)", n, elapsed, due+1)
	}
	st := r.Stats()[0]
	if st.Errors < 30 || !strings.Contains(st.LastError, "down") {
		t.Errorf("stat while down = %+v", st)
	}
	if slowRuns.Load() != 0 {
		t.Fatal("collector ran without a connection")
	}

	d.fail.Store(false)
	runnerWait(t, 5*time.Second, "mysql_up 1", func() bool {
		bs := sink.of("global_status")
		s, _ := runnerSample(bs[len(bs)-1], MetricUp)
		return s.Value == 1
	})
	// The hourly collector ran again at once after the reconnection.
	runnerWait(t, 10*time.Second, "the hourly collector's kick", func() bool { return slowRuns.Load() == 1 })
	if st := r.Stats()[0]; st.LastError != "" {
		t.Errorf("LastError after recovery = %q", st.LastError)
	}
}

// A broken connection is dropped and a new one dialled at once.
func TestRunnerRedialsBrokenConnection(t *testing.T) {
	d := &runnerFakeDialer{}
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"global_status": 20 * time.Millisecond}},
		runnerFunc{"global_status", time.Second, runnerQuery})
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("global_status")) >= 1 })
	d.mu.Lock()
	d.breakNext = true
	d.mu.Unlock()
	runnerWait(t, 5*time.Second, "an error", func() bool { return r.Stats()[0].Errors == 1 })
	runnerWait(t, 5*time.Second, "recovery", func() bool {
		bs := sink.of("global_status")
		s, _ := runnerSample(bs[len(bs)-1], MetricUp)
		return s.Value == 1 && r.pool.dialCount() == 2
	})
	var sawDown bool
	for _, b := range sink.of("global_status") {
		if s, _ := runnerSample(b, MetricUp); s.Value == 0 {
			sawDown = true
		}
	}
	if !sawDown {
		t.Error("the failed run did not write mysql_up 0")
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed < 1 {
		t.Error("the broken connection was not closed")
	}
}

func TestRunnerSetTarget(t *testing.T) {
	var role atomic.Value
	role.Store("")
	c := runnerFunc{"c", time.Second, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		role.Store(t.Role)
		if t.Flavor != dbpilot.FlavorMariaDB || t.Version.Major != 10 {
			return nil, errors.New("flavor not detected: " + string(t.Flavor))
		}
		return nil, nil
	}}
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"c": 10 * time.Millisecond}}, c)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("c")) >= 1 })
	r.SetTarget(Target{Key: runnerTestKey, Role: "replica"})
	runnerWait(t, 5*time.Second, "the new role", func() bool {
		bs := sink.of("c")
		return bs[len(bs)-1].Role == "replica" && role.Load() == "replica"
	})
	if st := r.Stats()[0]; st.Errors != 0 {
		t.Errorf("stat = %+v", st)
	}
}

func TestRunnerSurvivesPanic(t *testing.T) {
	var n atomic.Int32
	c := runnerFunc{"c", time.Second, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		if n.Add(1) == 1 {
			panic("boom")
		}
		return nil, nil
	}}
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"c": 10 * time.Millisecond}}, c)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "runs after the panic", func() bool { return len(sink.of("c")) >= 3 })
	if st := r.Stats()[0]; st.Errors != 1 {
		t.Errorf("stat = %+v", st)
	}
}

func TestRunnerStop(t *testing.T) {
	r, _ := newTestRunner(t, &runnerFakeDialer{}, Config{}, runnerFunc{"c", time.Hour, runnerQuery})
	r.Stop() // before Start: nothing to wait for
	r.Start(context.Background())
	r.Stop()
	r2, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"c": 10 * time.Millisecond}},
		runnerFunc{"c", time.Second, runnerQuery})
	r2.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("c")) >= 1 })
	r2.Stop()
	n := len(sink.of("c"))
	time.Sleep(50 * time.Millisecond) // the window (five ticks) in which nothing may come
	if len(sink.of("c")) != n {
		t.Error("batches after Stop")
	}
}

func TestRunnerConfig(t *testing.T) {
	c := runnerFunc{"c", 5 * time.Second, nil}
	if iv := (Config{}).interval(c); iv != 5*time.Second {
		t.Errorf("default interval = %v", iv)
	}
	if iv := (Config{Interval: map[string]time.Duration{"c": 2 * time.Second}}).interval(c); iv != 2*time.Second {
		t.Errorf("configured interval = %v", iv)
	}
	if to := (Config{}).timeout(time.Second); to != 800*time.Millisecond {
		t.Errorf("default timeout = %v", to)
	}
	if to := (Config{Timeout: 3 * time.Second}).timeout(time.Second); to != 3*time.Second {
		t.Errorf("configured timeout = %v", to)
	}
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Interval: map[string]time.Duration{"c": time.Second}, Timeout: time.Second}, true},
		{Config{Interval: map[string]time.Duration{"c": time.Millisecond}}, false},
		{Config{Timeout: -time.Second}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v", tc.cfg, err)
		}
	}
}

func TestRunnerSetUp(t *testing.T) {
	s := runnerSetUp(nil, true)
	if len(s) != 1 || s[0].Name != MetricUp || s[0].Value != 1 {
		t.Errorf("connected: %v", s)
	}
	s = runnerSetUp([]dbpilot.Sample{runnerUpSample(1)}, false)
	if len(s) != 1 || s[0].Value != 0 {
		t.Errorf("collector said up, connection broke: %v", s)
	}
}

// A new Key (the instance moved) drops the connections and dials again.
func TestRunnerRetarget(t *testing.T) {
	d := &runnerFakeDialer{}
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"c": 10 * time.Millisecond}},
		runnerFunc{"c", time.Second, runnerQuery})
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "a batch", func() bool { return len(sink.of("c")) >= 1 })
	dials := r.pool.dialCount()
	moved := dbpilot.InstanceKey{Host: "127.0.0.2", Port: 3307}
	r.SetTarget(Target{Key: moved, Role: "primary"})
	runnerWait(t, 5*time.Second, "batches of the new key", func() bool {
		bs := sink.of("c")
		return bs[len(bs)-1].Instance == moved && r.pool.dialCount() > dials
	})
}

// TestRunnerSampleTime: runs that start near a tick carry the tick's time
// (whole intervals apart, for the TSDB's timestamp compression); a run far
// from any tick keeps its start; times always increase.
func TestRunnerSampleTime(t *testing.T) {
	origin := time.Date(2026, 11, 25, 10, 0, 0, 123_456_789, time.UTC)
	s := &runnerSlot{interval: time.Second, origin: origin}
	var got []time.Duration
	for _, late := range []time.Duration{2 * time.Millisecond, 1*time.Second + 37*time.Millisecond, 2*time.Second - 20*time.Millisecond,
		2*time.Second + 400*time.Millisecond, 2*time.Second + 401*time.Millisecond, 3 * time.Second} {
		got = append(got, s.sampleTime(origin.Add(late)).Sub(origin.Truncate(time.Millisecond)))
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 2*time.Second + 400*time.Millisecond, 2*time.Second + 401*time.Millisecond, 3 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample times %v, want %v", got, want)
		}
	}
	// A kicked run on a tick already used, then the tick's own run.
	s2 := &runnerSlot{interval: time.Second, origin: origin}
	a := s2.sampleTime(origin.Add(time.Second))
	b := s2.sampleTime(origin.Add(time.Second + 5*time.Millisecond))
	if !b.After(a) {
		t.Errorf("two runs of one tick: %v then %v", a, b)
	}
}

// TestRunnerIdleCounters: by default an unlabelled counter and the
// collector's own error counter are left out while they read 0, then
// written from their first move on, that first sample marked FromZero.
func TestRunnerIdleCounters(t *testing.T) {
	d := &runnerFakeDialer{}
	var mu sync.Mutex
	run := 0
	c := runnerFunc{"other", time.Second, func(ctx context.Context, q Querier, _ Target) ([]dbpilot.Sample, error) {
		mu.Lock()
		defer mu.Unlock()
		run++
		if run == 3 {
			return nil, errors.New("broken run")
		}
		moved := 0.0
		if run >= 4 {
			moved = 5
		}
		return []dbpilot.Sample{{Name: "idle_total", Type: dbpilot.Counter}, {Name: "moves_total", Type: dbpilot.Counter, Value: moved},
			{Name: "level", Type: dbpilot.Gauge}, {Name: "by_kind_total", Type: dbpilot.Counter, Labels: []dbpilot.Label{{Name: "kind", Value: "a"}}}}, nil
	}}
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"other": 20 * time.Millisecond}}, c)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "five batches", func() bool { return len(sink.of("other")) >= 5 })
	r.Stop()
	bs := sink.of("other")
	has := func(b dbpilot.Batch, key string) (dbpilot.Sample, bool) {
		s, ok := gsIndex(t, b.Samples)[key]
		return s, ok
	}
	errs := MetricCollectorErrors + `{collector="other"}`
	for i, b := range bs[:5] {
		if _, ok := has(b, "idle_total"); ok {
			t.Errorf("batch %d writes a counter that never moved", i)
		}
		if _, ok := has(b, "level"); !ok && i != 2 {
			t.Errorf("batch %d lacks a gauge at 0", i)
		}
		if _, ok := has(b, `by_kind_total{kind="a"}`); !ok && i != 2 {
			t.Errorf("batch %d lacks a labelled counter (left to the collector)", i)
		}
		m, ok := has(b, "moves_total")
		switch {
		case i < 3 && ok:
			t.Errorf("batch %d writes moves_total at 0", i)
		case i == 3 && (!ok || m.Value != 5 || !m.FromZero):
			t.Errorf("batch 3: moves_total %+v (written %v), want 5 FromZero", m, ok)
		case i == 4 && (!ok || m.FromZero):
			t.Errorf("batch 4: moves_total %+v (written %v)", m, ok)
		}
		e, ok := has(b, errs)
		switch {
		case i < 2 && ok:
			t.Errorf("batch %d writes %s at 0", i, errs)
		case i == 2 && (!ok || e.Value != 1 || !e.FromZero):
			t.Errorf("batch 2 (failed): %s = %+v (written %v), want 1 FromZero", errs, e, ok)
		case i > 2 && (!ok || e.FromZero):
			t.Errorf("batch %d: %s = %+v (written %v)", i, errs, e, ok)
		}
	}
}

// A run that cannot get a session because other runs of the instance hold
// both is serve's own backlog: no mysql_up 0 (MySQLDown would fire for a
// server nobody asked), a partial batch that keeps the series, and
// dbpilot_collection_lagging 1; once it runs again, mysql_up 1 and lagging 0.
func TestRunnerLaggingIsNotDown(t *testing.T) {
	release := make(chan struct{})
	var held atomic.Int32
	block := func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		held.Add(1)
		defer held.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	}
	lagged0 := Lagged()
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"global_status": 50 * time.Millisecond}},
		runnerFunc{"global_status", time.Second, runnerQuery},
		runnerFunc{"b1", 10 * time.Second, block}, runnerFunc{"b2", 10 * time.Second, block})
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "both sessions held", func() bool { return held.Load() == RunnerSessions })
	var lag dbpilot.Batch
	runnerWait(t, 5*time.Second, "a lagging batch", func() bool {
		for _, b := range sink.of("global_status") {
			if s, ok := runnerSample(b, MetricCollectionLagging); ok && s.Value == 1 {
				lag = b
				return true
			}
		}
		return false
	})
	if s, ok := runnerSample(lag, MetricUp); ok {
		t.Errorf("a lagging run wrote mysql_up %v", s.Value)
	}
	if !lag.Partial {
		t.Error("a lagging batch is complete: it would end the instance's series")
	}
	if Lagged() <= lagged0 {
		t.Errorf("Lagged() = %d, was %d", Lagged(), lagged0)
	}
	if st := r.Stats()[0]; !strings.Contains(st.LastError, "serve's collection is behind") {
		t.Errorf("last error %q does not say serve is behind", st.LastError)
	}
	close(release)
	n := len(sink.of("global_status"))
	runnerWait(t, 5*time.Second, "mysql_up 1 again", func() bool {
		bs := sink.of("global_status")
		for _, b := range bs[n:] {
			up, okUp := runnerSample(b, MetricUp)
			lg, okLag := runnerSample(b, MetricCollectionLagging)
			if okUp && up.Value == 1 && okLag && lg.Value == 0 && !b.Partial {
				return true
			}
		}
		return false
	})
	runnerWait(t, 5*time.Second, "no backlog", func() bool { return Backlog() == 0 })
}

// A run that times out on a server that does not answer writes mysql_up 0;
// one that times out because the process could not run (stopped here for
// a second, as a machine whose cores are taken does to serve) is lagging:
// no mysql_up 0, dbpilot_collection_lagging 1.
func TestRunnerStalledTimeoutIsLagging(t *testing.T) {
	started := make(chan struct{}, 64)
	silent := runnerFunc{"global_status", time.Second, func(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
		started <- struct{}{}
		<-ctx.Done() // a server that never answers
		return nil, ctx.Err()
	}}
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"global_status": time.Second}}, silent)
	r.Start(context.Background())
	var first dbpilot.Batch
	runnerWait(t, 10*time.Second, "a run that timed out", func() bool {
		if bs := sink.of("global_status"); len(bs) > 0 {
			first = bs[0]
			return true
		}
		return false
	})
	if up, ok := runnerSample(first, MetricUp); !ok || up.Value != 0 {
		t.Fatalf("a silent server: mysql_up %v (written %v), want 0", up.Value, ok)
	}
	// The next run: stop the whole test process for a second while it
	// waits.
	for len(started) > 0 {
		<-started
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no second run")
	}
	n := len(sink.of("global_status"))
	stop := exec.Command("sh", "-c", `kill -STOP "$1"; sleep 1; kill -CONT "$1"`, "sh", strconv.Itoa(os.Getpid()))
	if err := stop.Run(); err != nil {
		t.Fatal(err)
	}
	var b dbpilot.Batch
	runnerWait(t, 10*time.Second, "the stalled run's batch", func() bool {
		if bs := sink.of("global_status"); len(bs) > n {
			b = bs[n]
			return true
		}
		return false
	})
	if up, ok := runnerSample(b, MetricUp); ok {
		t.Errorf("a run that timed out while the process was stopped wrote mysql_up %v", up.Value)
	}
	if lg, ok := runnerSample(b, MetricCollectionLagging); !ok || lg.Value != 1 {
		t.Errorf("dbpilot_collection_lagging %v (written %v), want 1", lg.Value, ok)
	}
	if !b.Partial {
		t.Error("the stalled run's batch ends the instance's series")
	}
}

// A connection attempt slower than a run's deadline but within its own
// (the connect timeout) is not the server down: the runs that wait for it
// are lagging, and the attempt goes on for the next run, which reads
// mysql_up 1. An attempt that fails after as long marks the server down.
func TestRunnerSlowConnectIsLagging(t *testing.T) {
	d := &runnerFakeDialer{}
	d.delay.Store(int64(400 * time.Millisecond))
	r, sink := newTestRunner(t, d, Config{Interval: map[string]time.Duration{"global_status": 100 * time.Millisecond}},
		runnerFunc{"global_status", time.Second, runnerQuery})
	r.Start(context.Background())
	runnerWait(t, 10*time.Second, "mysql_up 1", func() bool {
		for _, b := range sink.of("global_status") {
			if up, ok := runnerSample(b, MetricUp); ok && up.Value == 1 {
				return true
			}
		}
		return false
	})
	lagging := 0
	for _, b := range sink.of("global_status") {
		if up, ok := runnerSample(b, MetricUp); ok && up.Value == 0 {
			t.Fatalf("mysql_up 0 while the connection was being made: %+v", b.Samples)
		}
		if lg, ok := runnerSample(b, MetricCollectionLagging); ok && lg.Value == 1 {
			lagging++
		}
	}
	if lagging == 0 {
		t.Error("no run read as lagging while it waited for the connection")
	}
	if n := r.pool.dialCount(); n != 1 {
		t.Errorf("%d connection attempts: the waiting runs started their own", n)
	}

	// The same slow attempt, failing: down.
	d2 := &runnerFakeDialer{}
	d2.delay.Store(int64(300 * time.Millisecond))
	d2.fail.Store(true)
	r2, sink2 := newTestRunner(t, d2, Config{Interval: map[string]time.Duration{"global_status": 100 * time.Millisecond}},
		runnerFunc{"global_status", time.Second, runnerQuery})
	r2.Start(context.Background())
	runnerWait(t, 10*time.Second, "mysql_up 0 after the failed attempt", func() bool {
		for _, b := range sink2.of("global_status") {
			if up, ok := runnerSample(b, MetricUp); ok && up.Value == 0 {
				return true
			}
		}
		return false
	})
}
