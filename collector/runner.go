package collector

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/stall"
	"github.com/dbpilot/dbpilot/mysql"
)

// Runner defaults.
const (
	// RunnerTimeoutShare is the share of a collector's interval a run may take
	// when Config.Timeout is zero.
	RunnerTimeoutShare = 0.8
	// RunnerSlowShare: a run that takes longer than this share of its
	// interval marks its batch Slow.
	RunnerSlowShare = 0.1
	// RunnerSessions is how many connections a Runner keeps to its instance,
	// so that one slow collector does not hold up the others.
	RunnerSessions = 2
	// RunnerBackoffMin and RunnerBackoffMax bound the wait between connection
	// attempts to an instance that is down; the wait doubles after each
	// failed attempt.
	RunnerBackoffMin = 100 * time.Millisecond
	RunnerBackoffMax = 10 * time.Second
	// RunnerKickInterval: after a reconnection, collectors whose interval is
	// at least this long run at once instead of waiting for their next tick
	// (the server may have restarted with other variables).
	RunnerKickInterval = 10 * time.Second
)

// Self-metric names, written in every batch.
const (
	MetricUp                = "mysql_up"
	MetricCollectorDuration = "dbpilot_collector_duration_seconds"
	MetricCollectorErrors   = "dbpilot_collector_errors_total"
	MetricCollectorSkipped  = "dbpilot_collector_skipped_total"
	MetricCollectorSlow     = "dbpilot_collector_slow_total"
	MetricCollectionLagging = "dbpilot_collection_lagging"
)

// upCollector is the collector whose runs carry mysql_up.
const upCollector = "global_status"

// Config configures a Runner.
type Config struct {
	// Interval overrides collectors' DefaultInterval, by collector name.
	Interval map[string]time.Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
	// Timeout bounds every run; zero means 80% of the collector's interval.
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// WriteIdleCounters writes counters that have read 0 since the runner
	// started; by default they are left out until they move (see
	// runnerSlot.dropIdle), as global_status does with its own.
	WriteIdleCounters bool `json:"write_idle_counters,omitempty" yaml:"write_idle_counters,omitempty"`
}

// Validate checks the configuration.
func (c Config) Validate() error {
	for name, iv := range c.Interval {
		if iv < 10*time.Millisecond {
			return dbpilot.Errorf(dbpilot.EINVALID, "collector: interval of %q is %v: use at least 10ms", name, iv)
		}
	}
	if c.Timeout < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "collector: timeout %v is negative", c.Timeout)
	}
	return nil
}

// interval returns the interval of collector c.
func (c Config) interval(col Collector) time.Duration {
	if iv, ok := c.Interval[col.Name()]; ok && iv > 0 {
		return iv
	}
	if iv := col.DefaultInterval(); iv > 0 {
		return iv
	}
	return time.Second
}

// timeout returns the run timeout for a collector running every iv.
func (c Config) timeout(iv time.Duration) time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return time.Duration(float64(iv) * RunnerTimeoutShare)
}

// Stat is what a Runner counted for one collector.
type Stat struct {
	Collector string `json:"collector"`
	// Runs counts finished runs, failed ones included; Errors the runs that
	// failed; Skipped the ticks dropped because the previous run was still
	// going; Slow the runs that took more than 10% of the interval.
	Runs         uint64        `json:"runs"`
	Errors       uint64        `json:"errors"`
	Skipped      uint64        `json:"skipped"`
	Slow         uint64        `json:"slow"`
	Interval     time.Duration `json:"interval_ns"`
	LastDuration time.Duration `json:"last_duration_ns"`
	// LastError is the error of the last run; empty when it succeeded.
	LastError string    `json:"last_error,omitempty"`
	LastRun   time.Time `json:"last_run,omitzero"`
}

// Runner runs collectors against one instance on their own intervals and
// writes each run's batch to a sink.
//
// It keeps up to two connections (sessions) to the instance, opened lazily
// and shared by its collectors; each session has lock_wait_timeout=1,
// innodb_lock_wait_timeout=1 and a server-side statement time limit equal to
// the run's timeout (MariaDB max_statement_time, MySQL max_execution_time).
// When the instance cannot be reached, new connections are tried after
// 100 ms, doubling to 10 s, and the global_status collector's runs write
// mysql_up 0.
//
// A collector whose previous run is still going when its tick comes is
// skipped, never queued. Every batch carries the collector's self-metrics.
//
// Collectors may keep state between runs (binlog keeps the previous
// counters): give each Runner its own collector values.
type Runner struct {
	cfg   Config
	sink  dbpilot.MetricSink
	log   *slog.Logger
	slots []*runnerSlot
	pool  *runnerPool
	kick  chan struct{} // run the slow collectors now (kickSlow)

	mu     sync.Mutex
	target Target
	base   dbpilot.Batch

	obs atomic.Pointer[dbpilot.Instance] // the latest observation (Observe)

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// runnerSlot is one collector in a Runner.
type runnerSlot struct {
	c        Collector
	name     string
	interval time.Duration
	timeout  time.Duration
	up       bool // its batches carry mysql_up
	running  atomic.Bool

	mu       sync.Mutex
	stat     Stat
	sinkWarn time.Time // last time a sink error was logged
	origin   time.Time // the ticker's start: ticks are origin + k × interval
	lastT    time.Time // the time of the last batch
	// Idle counters: state of the collector's unlabelled counters by name
	// (nil: every sample written), and of the errors, skipped and slow
	// counters of the collector itself.
	idle map[string]uint8
	self [3]uint8
	lbl  []dbpilot.Label // the collector label of its own metrics
	// lagged: a run of the mysql_up collector lagged once (ErrBacklog);
	// its runs write dbpilot_collection_lagging from then on.
	lagged bool
	// usedObs is the time of the last observation an ObservingCollector's
	// run took its samples from.
	usedObs time.Time
}

// NewRunner runs collectors against one instance, sending each batch to
// sink. base holds the Cluster, Role and Instance every batch carries. The
// collector named "global_status" carries mysql_up; without it, the first
// collector does.
func NewRunner(t Target, opts mysql.Options, collectors []Collector, cfg Config, sink dbpilot.MetricSink, base dbpilot.Batch, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if base.Instance.IsZero() {
		base.Instance = t.Key
	}
	if t.Role != "" {
		base.Role = t.Role
	}
	r := &Runner{cfg: cfg, sink: sink, log: log.With("instance", t.Key.String()), target: t, base: base, kick: make(chan struct{}, 1)}
	upIndex := 0
	for i, c := range collectors {
		if c.Name() == upCollector {
			upIndex = i
		}
	}
	for i, c := range collectors {
		iv := cfg.interval(c)
		r.slots = append(r.slots, &runnerSlot{
			c: c, name: c.Name(), interval: iv, timeout: cfg.timeout(iv), up: i == upIndex,
			stat: Stat{Collector: c.Name(), Interval: iv},
			lbl:  []dbpilot.Label{{Name: "collector", Value: c.Name()}},
		})
		if _, own := c.(interface{ SetIdleCounters(bool) }); !own && !cfg.WriteIdleCounters {
			r.slots[len(r.slots)-1].idle = map[string]uint8{}
		}
	}
	r.pool = newRunnerPool(&runnerMySQLDialer{key: t.Key, opts: opts}, RunnerSessions, runnerDialBudget(opts))
	r.pool.onReconnect = func() {
		r.log.Info("instance reachable again")
		r.kickSlow()
	}
	r.pool.onDown = func(err error) {
		r.log.Warn("instance unreachable; retrying with backoff", "err", err)
	}
	return r
}

// Start starts the goroutine that runs the collectors, each first in its
// phase of the second, then on every tick. Stop ends it.
func (r *Runner) Start(ctx context.Context) {
	r.startOnce.Do(func() {
		ctx, r.cancel = context.WithCancel(ctx)
		stall.Acquire()
		r.wg.Add(1)
		go r.loop(ctx)
	})
}

// Stop stops the collectors, waits for running collections to return and
// closes the connections.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() {
		r.startOnce.Do(func() {}) // a Runner stopped before Start never starts
		if r.cancel != nil {
			r.cancel()
		}
		r.wg.Wait()
		r.pool.close()
		if r.cancel != nil {
			stall.Release()
		}
	})
}

// SetTarget replaces the target collectors see (role or primary changes
// from the topology) and the Role of later batches. A new Key reconnects
// (and becomes the batches' Instance); a zero Key keeps the current one.
func (r *Runner) SetTarget(t Target) {
	r.mu.Lock()
	old := r.target.Key
	if t.Key.IsZero() {
		t.Key = old
	}
	r.target = t
	r.base.Role = t.Role
	r.base.Instance = t.Key
	r.mu.Unlock()
	if t.Key != old {
		r.pool.retarget(t.Key)
	}
}

// Observe hands the runner serve's latest observation of its instance
// (reachable, with its replication channels and GTID positions), for the
// collectors that take their samples from it (ObservingCollector). The
// runner keeps it; the caller must not modify it afterwards.
func (r *Runner) Observe(inst *dbpilot.Instance) {
	if inst == nil || !inst.Reachable || inst.ObservedAt.IsZero() {
		return
	}
	r.obs.Store(inst)
}

// observation returns the observation s's run at now is to use: one that
// arrived since s's last such run and is at most an interval old, for an
// ObservingCollector; nil otherwise.
func (r *Runner) observation(s *runnerSlot, now time.Time) *dbpilot.Instance {
	if _, ok := s.c.(ObservingCollector); !ok {
		return nil
	}
	obs := r.obs.Load()
	if obs == nil || now.Sub(obs.ObservedAt) > s.interval || now.Before(obs.ObservedAt) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !obs.ObservedAt.After(s.usedObs) || !obs.ObservedAt.After(s.lastT) {
		return nil
	}
	s.usedObs = obs.ObservedAt
	return obs
}

// Stats returns the counts of every collector, in the order given to
// NewRunner.
func (r *Runner) Stats() []Stat {
	out := make([]Stat, len(r.slots))
	for i, s := range r.slots {
		s.mu.Lock()
		out[i] = s.stat
		s.mu.Unlock()
	}
	return out
}

// loop runs every collector of the instance on its schedule, in one
// goroutine (one per collector was nine stacks per instance: about 70 MB,
// and as many roots for the garbage collector to scan, at 1000 instances).
// Each (instance, collector) runs in one of a few phases of the second, on
// the wall clock: a fleet's collections do not all start on the same
// millisecond, yet those of a phase wake together (spreading every run
// over the second doubled serve's CPU: a wake-up per run). A collector's
// first run is not a tick; its ticks follow every interval from it, and a
// tick the loop was too late for is dropped, as a time.Ticker drops it.
func (r *Runner) loop(ctx context.Context) {
	defer r.wg.Done()
	now := time.Now()
	target, _ := r.current()
	next := make([]time.Time, len(r.slots))
	started := make([]bool, len(r.slots))
	for i, s := range r.slots {
		next[i] = now.Add(runnerPhase(target.Key, s.name, s.interval, now))
		s.mu.Lock()
		s.origin = next[i]
		s.mu.Unlock()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		soonest := next[0]
		for _, t := range next[1:] {
			if t.Before(soonest) {
				soonest = t
			}
		}
		timer.Reset(time.Until(soonest))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			now := time.Now()
			for i, s := range r.slots {
				if now.Before(next[i]) {
					continue
				}
				r.fire(ctx, s, started[i])
				started[i] = true
				for !next[i].After(now) {
					next[i] = next[i].Add(s.interval)
				}
			}
		case <-r.kick:
			for _, s := range r.slots {
				if s.interval >= RunnerKickInterval {
					r.fire(ctx, s, false)
				}
			}
		}
	}
}

// Idle-counter states (global_status keeps its own, by variable).
const (
	idleSeen  uint8 = 1 << iota // read 0 on every run so far, and left out
	idleMoved                   // written once: written from then on
)

// idleStep advances one counter's idle state for a reading that is zero
// or not; skip says idle counters are left out. It returns whether to
// write the reading, and whether it is the first after readings left out
// (dbpilot.Sample.FromZero).
func idleStep(st *uint8, zero, skip bool) (write, fromZero bool) {
	if !skip || *st&idleMoved != 0 {
		return true, false
	}
	if zero {
		*st |= idleSeen
		return false, false
	}
	fromZero = *st&idleSeen != 0
	*st |= idleMoved
	return true, fromZero
}

// runnerExtraSamples is how many samples a run adds to its collector's
// (mysql_up, the collector's duration and counters): collectors that size
// their output leave that much room, so it is not copied to grow.
const runnerExtraSamples = 5

// dropIdle leaves out the collector's unlabelled counters that have read
// 0 on every run so far (a server's INNODB_METRICS has dozens), as
// global_status does with its variables: a series costs the store about
// a kilobyte whether it moves or not. Only the runs of s call it.
func (s *runnerSlot) dropIdle(samples []dbpilot.Sample) []dbpilot.Sample {
	if s.idle == nil {
		return samples
	}
	out := samples[:0]
	for _, smp := range samples {
		if smp.Type == dbpilot.Counter && len(smp.Labels) == 0 {
			st := s.idle[smp.Name]
			write, fromZero := idleStep(&st, smp.Value == 0, true)
			s.idle[smp.Name] = st
			if !write {
				continue
			}
			smp.FromZero = smp.FromZero || fromZero
		}
		out = append(out, smp)
	}
	return out
}

// sampleTime is the time a batch of a run started at start carries: the
// tick it belongs to when it started within a tenth of the interval of one
// (as Prometheus stamps scrapes with their schedule), else start; always
// after the last batch's, in whole milliseconds. Samples one interval
// apart compress to a bit of timestamp each in the TSDB's chunks, where
// the scheduler's jitter cost a byte or two per sample.
func (s *runnerSlot) sampleTime(start time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := start
	if !s.origin.IsZero() && s.interval > 0 {
		k := (start.Sub(s.origin) + s.interval/2) / s.interval
		if tick := s.origin.Add(k * s.interval); tick.Sub(start).Abs() <= s.interval/10 {
			t = tick
		}
	}
	t = t.Truncate(time.Millisecond)
	if !t.After(s.lastT) {
		t = s.lastT.Add(time.Millisecond)
	}
	s.lastT = t
	return t
}

// stampAt is the time of a batch whose values were read at t (an
// observation's): t in whole milliseconds, after the last batch's.
func (s *runnerSlot) stampAt(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t = t.Truncate(time.Millisecond)
	if !t.After(s.lastT) {
		t = s.lastT.Add(time.Millisecond)
	}
	s.lastT = t
	return t
}

// runnerPhases is how many phases of the second collectors run in.
const runnerPhases = 4

// runnerPhase is the delay from now of the first run of a collector on an
// instance: to the next start of its phase (one of runnerPhases, from a
// hash of both) on the wall clock, the phases dividing min(interval, 1 s).
func runnerPhase(k dbpilot.InstanceKey, collector string, interval time.Duration, now time.Time) time.Duration {
	span := min(interval, time.Second)
	if span <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(k.String()))
	h.Write([]byte(collector))
	at := time.Duration(h.Sum64()%runnerPhases) * span / runnerPhases
	return (at - time.Duration(now.UnixNano())%span + span) % span
}

// fire starts a run of s unless one is going or collection is held
// (Hold); a tick that finds either counts as skipped.
func (r *Runner) fire(ctx context.Context, s *runnerSlot, tick bool) {
	if held() || !s.running.CompareAndSwap(false, true) {
		if tick {
			s.mu.Lock()
			s.stat.Skipped++
			s.mu.Unlock()
		}
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer s.running.Store(false)
		r.runOnce(ctx, s)
	}()
}

// kickSlow makes collectors with long intervals run now (after a reconnection).
func (r *Runner) kickSlow() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Runner) current() (Target, dbpilot.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target, r.base
}

// runOnce runs s's collector once and writes its batch.
func (r *Runner) runOnce(ctx context.Context, s *runnerSlot) {
	target, batch := r.current()
	start := time.Now()
	obs := r.observation(s, start)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	samples, connected, err := r.collect(rctx, s, target, obs)
	cancel()
	took := time.Since(start)
	if ctx.Err() != nil {
		return // stopping: the run was cut short on purpose
	}
	slow := took > time.Duration(float64(s.interval)*RunnerSlowShare)
	// A run that never reached the server because serve was behind (it
	// waited past its timeout for a session or a connection slot, or
	// timed out while serve could not run) says nothing of the server:
	// no mysql_up 0, and its batch is partial so that the series it lacks
	// are kept, not ended. It reads as lagging.
	lagging := errors.Is(err, ErrBacklog)
	if !lagging && !connected && mysql.IsTimeout(err) && stall.Stalled(start, s.timeout) {
		// Timed out while serve could not run for a good part of the
		// run: the server may have answered in time.
		lagging = true
		lagged.Add(1)
		err = dbpilot.WrapError(dbpilot.EUNAVAIL, fmt.Errorf("%w: %w", ErrBacklog, err), "collector: serve was stalled while %s ran", s.name)
	}

	s.mu.Lock()
	s.stat.Runs++
	s.stat.LastRun = start
	s.stat.LastDuration = took
	if err != nil {
		s.stat.Errors++
		s.stat.LastError = err.Error()
	} else {
		s.stat.LastError = ""
	}
	if slow {
		s.stat.Slow++
	}
	st := s.stat
	s.mu.Unlock()

	if err != nil {
		r.log.Debug("collector failed", "collector", s.name, "took", took, "err", err)
	}
	if s.up {
		if !lagging {
			samples = runnerSetUp(samples, connected)
		}
		if lagging || s.lagged {
			s.lagged = true
			samples = append(samples, runnerLaggingSample(lagging))
		}
	}
	samples = s.dropIdle(samples)
	samples = slices.Grow(samples, runnerExtraSamples)
	lbl := s.lbl // shared by every run: sinks do not modify labels
	samples = append(samples,
		dbpilot.Sample{Name: MetricCollectorDuration, Labels: lbl, Value: took.Seconds(), Type: dbpilot.Gauge, Help: "How long the collector's last run took."})
	for i, c := range [...]struct {
		name, help string
		v          uint64
	}{
		{MetricCollectorErrors, "Runs of the collector that failed.", st.Errors},
		{MetricCollectorSkipped, "Ticks skipped because the collector's previous run was still going.", st.Skipped},
		{MetricCollectorSlow, "Runs that took more than 10% of the collector's interval.", st.Slow},
	} {
		if write, fromZero := idleStep(&s.self[i], c.v == 0, !r.cfg.WriteIdleCounters); write {
			samples = append(samples, dbpilot.Sample{Name: c.name, Labels: lbl, Value: float64(c.v), Type: dbpilot.Counter, Help: c.help, FromZero: fromZero})
		}
	}
	batch.Collector = s.name
	if pc, ok := s.c.(PartialCollector); ok && err == nil {
		batch.Partial = pc.LastPartial()
	}
	if lagging {
		batch.Partial = true
	}
	if obs != nil {
		batch.Time = s.stampAt(obs.ObservedAt) // when the values were read
	} else {
		batch.Time = s.sampleTime(start)
	}
	batch.Took = took
	batch.Slow = slow
	batch.Samples = samples
	if r.sink == nil {
		return
	}
	// No deadline of its own: sinks do not wait on ctx (the store commits
	// in memory, remote write queues), and context.WithTimeout (a timer
	// each) was 9% of serve's CPU at 1000 instances, this one per run.
	werr := r.sink.Write(ctx, batch)
	if werr != nil && ctx.Err() == nil {
		s.mu.Lock()
		warn := time.Since(s.sinkWarn) >= time.Minute
		if warn {
			s.sinkWarn = time.Now()
		}
		s.mu.Unlock()
		if warn {
			r.log.Warn("metric sink refused a batch", "collector", s.name, "err", werr)
		}
	}
}

// collect gets a session and runs the collector on it. connected reports
// whether the server answered (a server error such as a missing privilege
// still counts as connected).
func (r *Runner) collect(ctx context.Context, s *runnerSlot, t Target, obs *dbpilot.Instance) (samples []dbpilot.Sample, connected bool, err error) {
	sess, err := r.pool.acquire(ctx, s.timeout)
	if err != nil {
		return nil, false, err
	}
	if t.Flavor == "" {
		t.Flavor, t.Version = sess.ident.Flavor, sess.ident.Version
	}
	if err := sess.setStatementTimeout(ctx, s.timeout); err != nil {
		r.pool.release(sess, err, ctx.Err() != nil)
		return nil, false, err
	}
	samples, err = r.safeCollect(ctx, s, sess, t, obs)
	failed := sess.failed()
	r.pool.release(sess, failed, ctx.Err() != nil)
	switch {
	case err == nil:
		return samples, true, nil
	case failed != nil:
		return samples, false, err // the connection broke or timed out
	case mysql.ServerErrorNumber(err) != 0:
		return samples, true, err // the server answered with an error
	default:
		// A timeout, or the collector's own failure on a good connection.
		return samples, ctx.Err() == nil, err
	}
}

var errRunnerPanic = errors.New("collector panicked")

// safeCollect runs Collect, turning a panic into an error: one broken
// collector must not take the daemon down.
func (r *Runner) safeCollect(ctx context.Context, s *runnerSlot, q Querier, t Target, obs *dbpilot.Instance) (samples []dbpilot.Sample, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("collector panicked", "collector", s.name, "panic", fmt.Sprint(p))
			samples, err = nil, fmt.Errorf("collector %s: %w: %v", s.name, errRunnerPanic, p)
		}
	}()
	if oc, ok := s.c.(ObservingCollector); ok && obs != nil {
		return oc.FromObservation(ctx, q, t, obs)
	}
	return s.c.Collect(ctx, q, t)
}

// runnerSetUp makes samples carry mysql_up: 1 when the server answered
// (unless the collector already said), 0 when it did not.
func runnerSetUp(samples []dbpilot.Sample, connected bool) []dbpilot.Sample {
	for i := range samples {
		if samples[i].Name == MetricUp {
			if !connected {
				samples[i].Value = 0
			}
			return samples
		}
	}
	v := 0.0
	if connected {
		v = 1
	}
	return append(samples, runnerUpSample(v))
}

// runnerLaggingSample is dbpilot_collection_lagging: 1 when the run could
// not reach the server because serve's collection was behind (ErrBacklog).
// It is written on the runs of the mysql_up collector from the first
// lagging run on (0 after), so that an instance that never lagged costs no
// series.
func runnerLaggingSample(lagging bool) dbpilot.Sample {
	v := 0.0
	if lagging {
		v = 1
	}
	return dbpilot.Sample{Name: MetricCollectionLagging, Value: v, Type: dbpilot.Gauge,
		Help: "Whether the instance's last status read could not start because serve's collection was behind (1): waiting for a session or a connection slot past the run's timeout. The server was not asked; mysql_up keeps its last value."}
}

func runnerUpSample(v float64) dbpilot.Sample {
	return dbpilot.Sample{Name: MetricUp, Value: v, Type: dbpilot.Gauge, Help: "Whether the server answered the last status read (1) or not (0)."}
}
