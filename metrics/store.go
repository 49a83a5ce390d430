// Package metrics is dbpilot's embedded time-series store: collected batches
// go into a Prometheus TSDB on local disk and are read back with the PromQL
// engine (rates are computed at query time, counters stay counters). The
// latest batch of every (instance, collector) is also kept in memory and
// exposed on /metrics in Prometheus' text format with mysqld_exporter's
// names, so that an existing Prometheus can scrape dbpilot instead of one
// mysqld_exporter per server.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/compression"

	"github.com/dbpilot/dbpilot"
)

// Defaults and limits.
const (
	// DefaultRetention is how long samples are kept unless configured.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultLookbackDelta is how far back an instant selector looks for a
	// series' last sample: Prometheus' default. It covers collectors run
	// every few minutes; series that vanish from a collector's batch, or
	// whose instance is forgotten, end at once with a staleness marker, so
	// one-second series do not linger for the whole delta.
	DefaultLookbackDelta = 5 * time.Minute
	// DefaultMinFreeBytes is the free space below which Write refuses to
	// write to disk (see Options.MinFreeBytes).
	DefaultMinFreeBytes = 256 << 20

	queryTimeout       = 30 * time.Second
	maxQuerySamples    = 50_000_000
	maxPointsPerSeries = 11_000 // as Prometheus' HTTP API
	maxConcurrentQuery = 8
	// samplesPerChunk is the TSDB head's target number of samples per
	// chunk (TSDB default 120, two minutes at 1 s). Every full chunk costs
	// ~56 bytes of heap for as long as it stays in the head (up to 3 h), so
	// at 1 s the default would spend ~5 KB per series on chunk references
	// alone; 480 (8 minutes at 1 s) cuts that by four. Busy series are
	// still cut at 1 KB per chunk by the TSDB.
	samplesPerChunk = 480
	// headBlockDuration is the TSDB's smallest block (default 2 h).
	headBlockDuration = time.Hour
	// stripeSize is the TSDB series hash map's stripe count (default
	// 16384, sized for millions of series); dbpilot has tens of thousands.
	stripeSize = 1024
	// chunkWriteBuffer is the head chunk writer's buffer (default 4 MiB).
	chunkWriteBuffer = 1 << 20
	// errorLogEvery limits write-error log lines.
	errorLogEvery = time.Minute
	// UnchangedEvery is how often a gauge whose value has not changed is
	// written: a changed value is written at once, an unchanged one every
	// 15 s (settings, versions, sizes, states: most of a server's gauges).
	// Queries see no difference: an instant selector looks back 5 minutes
	// for the last sample, and range functions over gauges (deriv,
	// avg_over_time) have at least two samples in any window of 30 s or
	// more. Counters are written every batch (rate over a few seconds), and
	// so is mysql_up (everySample).
	UnchangedEvery = 15 * time.Second
)

// Options configure a Store.
type Options struct {
	// Dir holds the TSDB; created 0700 if missing.
	Dir string
	// Retention is how long samples are kept; 0: 7 days.
	Retention time.Duration
	// Logger receives TSDB and write-error lines; nil discards.
	Logger *slog.Logger
	// LookbackDelta is PromQL's lookback; 0: DefaultLookbackDelta.
	LookbackDelta time.Duration
	// MinFreeBytes is the free space the file system holding Dir must keep:
	// below it Write stores nothing on disk and returns an error wrapping
	// syscall.ENOSPC (the latest values still reach /metrics). The TSDB
	// panics in a background goroutine when it cannot write a head chunk,
	// so dbpilot stops well before the disk is full. 0: 256 MiB; negative:
	// no check.
	MinFreeBytes int64
}

// Store is the embedded time-series store. It implements dbpilot.MetricSink
// and dbpilot.MetricsQuerier. Its methods are safe for concurrent use.
type Store struct {
	opt    Options
	log    *slog.Logger
	db     *tsdb.DB
	engine *promql.Engine
	parser parser.Parser
	qsem   chan struct{}

	life   sync.RWMutex // Write and Forget hold it for reading, Close for writing
	closed bool

	gmu        sync.Mutex   // guards pending and committing (commit)
	pending    []*appendJob // Writes waiting for a commit
	committing bool         // a Write is committing the pending ones

	mu      sync.RWMutex
	sources map[sourceKey]*source

	reg         *prometheus.Registry
	appended    prometheus.Counter
	rejected    prometheus.Counter
	writeErrors prometheus.Counter

	// freeSpace returns the bytes available to dbpilot on the file system
	// of dir; tests replace it to simulate a full disk.
	freeSpace func(dir string) (uint64, error)
	freeMu    sync.Mutex
	freeAt    time.Time
	free      uint64
	freeErr   error

	errMu      sync.Mutex
	errLogged  time.Time
	errPending int // errors since the last line
}

// sourceKey names the producer of a batch.
type sourceKey struct {
	instance  dbpilot.InstanceKey
	collector string
}

// source holds the series of one (instance, collector): TSDB references
// and the latest values, for /metrics.
type source struct {
	mu      sync.Mutex
	cluster string
	role    string
	gen     uint32
	lastT   int64
	entries map[string]*entry // by seriesKey of name and sample labels
	// Buffers of Write, kept between batches.
	key  []byte
	live []*entry
	job  appendJob
}

// entry is one series of a source.
type entry struct {
	ref  storage.SeriesRef
	lset labels.Labels // __name__, instance, cluster, role and the sample's labels
	name string
	help string
	v    float64
	typ  dbpilot.MetricType
	gen  uint32
	// wv and wt are the value and time (ms) last appended; wt 0: none.
	wv float64
	wt int64
	// fromZero: the series' first sample is an idle counter's first move
	// (dbpilot.Sample.FromZero), preceded by a 0.
	fromZero bool
}

// Open opens the store in opt.Dir, creating it if needed, and replays its
// write-ahead log (which may take a while after a crash).
func Open(opt Options) (*Store, error) {
	return open(opt, nil)
}

// open is Open with a hook to adjust the TSDB options (tests).
func open(opt Options, tune func(*tsdb.Options)) (*Store, error) {
	if opt.Dir == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics store: no directory configured")
	}
	if opt.Retention < 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics store: negative retention %s", opt.Retention)
	}
	if opt.Retention == 0 {
		opt.Retention = DefaultRetention
	}
	if opt.LookbackDelta <= 0 {
		opt.LookbackDelta = DefaultLookbackDelta
	}
	if opt.MinFreeBytes == 0 {
		opt.MinFreeBytes = DefaultMinFreeBytes
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "metrics store: create %s", opt.Dir)
	}

	topts := tsdbOptions(opt.Retention)
	if tune != nil {
		tune(topts)
	}
	db, err := tsdb.Open(opt.Dir, opt.Logger.With("component", "tsdb"), nil, topts, nil)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "metrics store: %s is in use by another process (another dbpilot serve?)", opt.Dir)
		}
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "metrics store: open %s", opt.Dir)
	}

	p := parser.NewParser(parser.Options{})
	s := &Store{
		opt:     opt,
		log:     opt.Logger,
		db:      db,
		parser:  p,
		qsem:    make(chan struct{}, maxConcurrentQuery),
		sources: map[sourceKey]*source{},
		engine: promql.NewEngine(promql.EngineOpts{
			Logger:               opt.Logger.With("component", "promql"),
			MaxSamples:           maxQuerySamples,
			Timeout:              queryTimeout,
			LookbackDelta:        opt.LookbackDelta,
			EnableAtModifier:     true,
			EnableNegativeOffset: true,
			// The step of a subquery written without one, [30m:].
			NoStepSubqueryIntervalFn: func(int64) int64 { return (15 * time.Second).Milliseconds() },
			Parser:                   p,
		}),
		freeSpace: freeSpace,
	}
	s.initSelfMetrics()
	return s, nil
}

// tsdbOptions are the TSDB options: modest on memory for tens of thousands
// of series sampled every second.
func tsdbOptions(retention time.Duration) *tsdb.Options {
	o := tsdb.DefaultOptions()
	o.RetentionDuration = retention.Milliseconds()
	// The head (in memory, with m-mapped chunks) is cut into a block when
	// it spans 1.5 block durations. Blocks of 1 h instead of 2 h halve what
	// it holds (the heap spent on 1 s samples grows with its span) and the
	// memory a head compaction takes.
	o.MinBlockDuration = headBlockDuration.Milliseconds()
	// Blocks are compacted (1 h, 3 h, 9 h, ...) up to a tenth of the
	// retention, at most 31 days, as the Prometheus server does; the TSDB
	// package's default stops at the first size (168 blocks for 7 days).
	maxBlock := min(retention/10, 31*24*time.Hour).Milliseconds()
	o.MaxBlockDuration = max(maxBlock, o.MinBlockDuration)
	o.SamplesPerChunk = samplesPerChunk
	o.StripeSize = stripeSize
	o.HeadChunksWriteBufferSize = chunkWriteBuffer
	// Snappy: a third to half of the WAL's size for little CPU, as
	// Prometheus does by default.
	o.WALCompression = compression.Snappy
	// A restart loads the head from a snapshot instead of replaying up to
	// 3 h of one-second samples from the WAL.
	o.EnableMemorySnapshotOnShutdown = true
	// Queries may see part of a batch being committed; isolation would cost
	// memory per series and a lock per append.
	o.IsolationDisabled = true
	return o
}

func (s *Store) initSelfMetrics() {
	s.reg = prometheus.NewRegistry()
	s.appended = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dbpilot_tsdb_samples_appended_total",
		Help: "Samples written to the embedded time-series store.",
	})
	s.rejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dbpilot_tsdb_samples_rejected_total",
		Help: "Samples not stored: invalid names or labels, out of order or duplicate timestamps.",
	})
	s.writeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dbpilot_tsdb_write_errors_total",
		Help: "Batches that could not be written to the embedded time-series store (disk full, I/O errors).",
	})
	s.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.appended, s.rejected, s.writeErrors,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dbpilot_tsdb_head_series",
			Help: "Series in the head (in-memory) block of the embedded time-series store.",
		}, func() float64 { return float64(s.db.Head().NumSeries()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dbpilot_tsdb_blocks_loaded",
			Help: "Persisted blocks of the embedded time-series store.",
		}, func() float64 { return float64(len(s.db.Blocks())) }),
	)
}

// Close flushes and closes the TSDB. Later writes fail; /metrics keeps
// answering from memory.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "metrics store: close %s", s.opt.Dir)
	}
	return nil
}

// Write stores a batch: every sample at b.Time, labelled with __name__,
// instance, cluster and role (a sample label of one of those names is kept
// as exported_<name>, as Prometheus does) and the sample's labels. Series
// that the previous batch of the same (instance, collector) had and this
// one lacks get a staleness marker. The latest values are kept in memory
// for /metrics even when the disk write fails.
func (s *Store) Write(ctx context.Context, b dbpilot.Batch) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "metrics store %s is closed", s.opt.Dir)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := timestamp.FromTime(b.Time)
	if b.Time.IsZero() {
		t = timestamp.FromTime(time.Now())
	}
	src := s.source(sourceKey{b.Instance, b.Collector})
	src.mu.Lock()
	defer src.mu.Unlock()

	// New cluster or role labels start new series: end the old ones.
	var ended []*entry
	if src.cluster != b.Cluster || src.role != b.Role {
		for _, e := range src.entries {
			ended = append(ended, e)
		}
		clear(src.entries)
		src.cluster, src.role = b.Cluster, b.Role
	}
	src.gen++
	var (
		key      = src.key[:0]
		scratch  []dbpilot.Label
		invalid  int
		firstBad string
		live     = src.live[:0]
		instance = b.Instance.String()
	)
	for i := range b.Samples {
		smp := &b.Samples[i]
		scratch = sortedLabels(scratch[:0], smp.Labels)
		key = dbpilot.AppendSeriesKey(key[:0], smp.Name, scratch)
		e := src.entries[string(key)]
		if e == nil {
			lset, err := buildLabels(smp.Name, scratch, instance, b.Cluster, b.Role)
			if err != nil {
				invalid++
				if firstBad == "" {
					firstBad = err.Error()
				}
				continue
			}
			e = &entry{lset: lset, name: smp.Name, fromZero: smp.FromZero}
			src.entries[string(key)] = e
		}
		if e.gen == src.gen {
			continue // the same series twice in one batch: the first wins
		}
		e.gen, e.v, e.typ, e.help = src.gen, smp.Value, smp.Type, smp.Help
		live = append(live, e)
	}
	for k, e := range src.entries {
		if e.gen != src.gen && !b.Partial {
			ended = append(ended, e)
			delete(src.entries, k)
		}
	}
	if invalid > 0 {
		s.rejected.Add(float64(invalid))
	}

	if err := s.checkFreeSpace(); err != nil {
		return s.writeFailed(dbpilot.WrapError(dbpilot.EUNAVAIL, err, "metrics of %s (%s) not stored", instance, b.Collector))
	}
	// The appends are committed with those of every Write waiting (one
	// TSDB transaction); src.mu stays held until they are done with this
	// source's entries.
	src.key, src.live = key, live // reused by the next batch
	// The source's job is reused: src.mu allows one Write of it at a time.
	job := &src.job
	if job.wake == nil {
		job.wake = make(chan wake, 1)
	}
	job.t, job.prevT, job.ended, job.live = t, src.lastT, ended, live
	job.appended, job.outOfOrder, job.firstBad, job.err = 0, 0, "", nil
	s.commit(job)
	job.ended, job.live = nil, nil
	if job.err != nil {
		return s.writeFailed(dbpilot.WrapError(dbpilot.EUNAVAIL, job.err, "metrics of %s (%s) not stored", instance, b.Collector))
	}
	appended, outOfOrder := job.appended, job.outOfOrder
	if firstBad == "" {
		firstBad = job.firstBad
	}
	src.lastT = t
	s.appended.Add(float64(appended))
	if outOfOrder > 0 {
		s.rejected.Add(float64(outOfOrder))
	}
	if invalid+outOfOrder > 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "metrics of %s (%s): %d of %d samples not stored; first: %s",
			instance, b.Collector, invalid+outOfOrder, len(b.Samples), firstBad)
	}
	return nil
}

// appendJob is the appends of one Write, done by the committer.
type appendJob struct {
	t, prevT    int64 // the batch's time, the source's previous write
	ended, live []*entry
	// wake receives wakeDone when another Write committed the job, or
	// wakeTurn when its own Write is to commit the next group; exactly one
	// of them per commit (buffered: the sender never waits).
	wake chan wake
	// Results.
	appended, outOfOrder int
	firstBad             string
	err                  error // nothing of the job was stored
}

type wake uint8

const (
	wakeDone wake = iota + 1
	wakeTurn
)

// Group commit limits: one TSDB transaction takes the jobs waiting, up to
// these.
const (
	maxGroupJobs    = 256
	maxGroupSamples = 50_000
)

// commit returns once job is committed. The Writes of many instances'
// collectors arrive together: the first to find no commit going becomes
// the committer and commits every job waiting (its own first) in one TSDB
// transaction, then hands the turn to the first job that arrived meanwhile,
// whose Write commits the next group (flat combining). A fleet's second
// costs a few WAL writes and one set of appender buffers instead of one of
// each per batch; a lone Write commits in its own goroutine at once; no
// Write commits more than one group of others.
func (s *Store) commit(job *appendJob) {
	s.gmu.Lock()
	s.pending = append(s.pending, job)
	if s.committing {
		s.gmu.Unlock()
		if <-job.wake == wakeDone {
			return
		}
		s.gmu.Lock()
	}
	s.committing = true
	n, samples := 0, 0
	for n < len(s.pending) && n < maxGroupJobs && samples < maxGroupSamples {
		samples += len(s.pending[n].live) + len(s.pending[n].ended)
		n++
	}
	group := slices.Clone(s.pending[:n])
	s.pending = append(s.pending[:0], s.pending[n:]...)
	s.gmu.Unlock()
	s.commitGroup(group)
	s.gmu.Lock()
	if len(s.pending) > 0 {
		s.pending[0].wake <- wakeTurn // the committing flag passes to it
	} else {
		s.committing = false
	}
	s.gmu.Unlock()
}

// commitGroup appends and commits the jobs of group together; an error of
// the store (not of one sample) fails them all.
func (s *Store) commitGroup(group []*appendJob) {
	app := s.db.AppenderV2(context.Background())
	var err error
	for _, j := range group {
		if err = j.append(app); err != nil {
			break
		}
	}
	if err != nil {
		_ = app.Rollback()
	} else {
		err = app.Commit()
	}
	for i, j := range group {
		if err != nil {
			j.err = err
		}
		if i > 0 { // the first is the committer's own
			j.wake <- wakeDone
		}
	}
}

// append adds j's staleness markers and samples to app.
func (j *appendJob) append(app storage.AppenderV2) error {
	for _, e := range j.ended {
		// Best effort: a marker refused (out of order) changes nothing.
		if _, err := app.Append(e.ref, e.lset, 0, j.t, math.Float64frombits(value.StaleNaN), nil, nil, storage.AppendV2Options{}); err != nil && !isSampleError(err) {
			return err
		}
	}
	for _, e := range j.live {
		if e.fromZero {
			// An idle counter's first move: its 0 at the source's previous
			// write, so that rate() and increase() count the first events.
			e.fromZero = false
			if j.prevT > 0 && j.prevT < j.t {
				if ref, err := app.Append(e.ref, e.lset, 0, j.prevT, 0, nil, nil, storage.AppendV2Options{MetricFamilyName: e.name}); err == nil {
					e.ref = ref
				}
			}
		}
		if e.typ == dbpilot.Gauge && e.wt > 0 && j.t-e.wt < unchangedEveryMs && math.Float64bits(e.v) == math.Float64bits(e.wv) && !everySample[e.name] {
			continue // unchanged: written again at UnchangedEvery
		}
		ref, err := app.Append(e.ref, e.lset, 0, j.t, e.v, nil, nil, storage.AppendV2Options{MetricFamilyName: e.name})
		switch {
		case err == nil:
			e.ref, e.wv, e.wt = ref, e.v, j.t
			j.appended++
		case isSampleError(err):
			j.outOfOrder++
			if j.firstBad == "" {
				j.firstBad = fmt.Sprintf("%s: %v", e.name, err)
			}
		default:
			return err
		}
	}
	return nil
}

const unchangedEveryMs = int64(UnchangedEvery / time.Millisecond)

// everySample are the gauges written at every batch though unchanged:
// mysql_up says that the server was read at that second, and a gap in it
// (count_over_time over a few seconds, a chart of availability) must mean
// that it was not.
var everySample = map[string]bool{"mysql_up": true}

// isSampleError reports whether err refuses one sample (the others of the
// batch can still be stored).
func isSampleError(err error) bool {
	return errors.Is(err, storage.ErrOutOfOrderSample) || errors.Is(err, storage.ErrOutOfBounds) ||
		errors.Is(err, storage.ErrTooOldSample) || errors.Is(err, storage.ErrDuplicateSampleForTimestamp)
}

// writeFailed counts and logs (once a minute at most) a failed write and
// returns err.
func (s *Store) writeFailed(err error) error {
	s.writeErrors.Inc()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.errPending++
	if now := time.Now(); now.Sub(s.errLogged) >= errorLogEvery {
		s.log.Error("metrics store write failed", "dir", s.opt.Dir, "error", err, "errors_since_last_log", s.errPending)
		s.errLogged, s.errPending = now, 0
	}
	return err
}

// checkFreeSpace returns an error wrapping syscall.ENOSPC when the file
// system of Dir has less than MinFreeBytes available. The figure is read
// at most once a second.
func (s *Store) checkFreeSpace() error {
	if s.opt.MinFreeBytes < 0 {
		return nil
	}
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if now := time.Now(); now.Sub(s.freeAt) >= time.Second {
		s.free, s.freeErr = s.freeSpace(s.opt.Dir)
		s.freeAt = now
	}
	if s.freeErr != nil { // cannot tell: let the TSDB try
		return nil
	}
	if s.free < uint64(s.opt.MinFreeBytes) {
		return fmt.Errorf("%s has %d MiB free, below the %d MiB dbpilot keeps free; free some space: %w",
			s.opt.Dir, s.free>>20, s.opt.MinFreeBytes>>20, syscall.ENOSPC)
	}
	return nil
}

// source returns the source of key, creating it.
func (s *Store) source(key sourceKey) *source {
	s.mu.RLock()
	src := s.sources[key]
	s.mu.RUnlock()
	if src != nil {
		return src
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if src = s.sources[key]; src == nil {
		src = &source{entries: map[string]*entry{}}
		s.sources[key] = src
	}
	return src
}

// Forget drops the latest values of instance (under any spelling of its
// address) so that /metrics stops exposing it, and ends its series in the
// TSDB with staleness markers so queries stop returning them at once.
func (s *Store) Forget(instance dbpilot.InstanceKey) {
	want := instance.Normalized()
	s.mu.Lock()
	var gone []*source
	for k, src := range s.sources {
		if k.instance.Normalized() == want {
			gone = append(gone, src)
			delete(s.sources, k)
		}
	}
	s.mu.Unlock()
	if len(gone) == 0 {
		return
	}

	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed || s.checkFreeSpace() != nil {
		return
	}
	app := s.db.AppenderV2(context.Background())
	stale := math.Float64frombits(value.StaleNaN)
	for _, src := range gone {
		src.mu.Lock()
		t := max(timestamp.FromTime(time.Now()), src.lastT+1)
		for _, e := range src.entries {
			_, _ = app.Append(e.ref, e.lset, 0, t, stale, nil, nil, storage.AppendV2Options{})
		}
		clear(src.entries)
		src.mu.Unlock()
	}
	if err := app.Commit(); err != nil {
		s.log.Warn("metrics store: staleness markers of a forgotten instance not written", "instance", instance.String(), "error", err)
	}
}

// sortedLabels returns ls sorted by name: in dst if ls is not sorted
// already, else ls itself.
func sortedLabels(dst, ls []dbpilot.Label) []dbpilot.Label {
	if slices.IsSortedFunc(ls, cmpLabel) {
		return ls
	}
	dst = append(dst, ls...)
	slices.SortStableFunc(dst, cmpLabel)
	return dst
}

func cmpLabel(a, b dbpilot.Label) int { return strings.Compare(a.Name, b.Name) }

// reservedLabels are set by the pipeline.
var reservedLabels = [...]string{"instance", "cluster", "role"}

// buildLabels returns the series labels of a sample. Names must be
// Prometheus' classic ones (as mysqld_exporter's), so that every scraper
// and the text format take them unquoted.
func buildLabels(name string, ls []dbpilot.Label, instance, cluster, role string) (labels.Labels, error) {
	if !model.LegacyValidation.IsValidMetricName(name) {
		return labels.EmptyLabels(), fmt.Errorf("invalid metric name %q", name)
	}
	b := labels.NewScratchBuilder(len(ls) + 4)
	b.Add(model.MetricNameLabel, name)
	b.Add("instance", instance)
	if cluster != "" {
		b.Add("cluster", cluster)
	}
	if role != "" {
		b.Add("role", role)
	}
	seen := make(map[string]bool, len(ls))
	for _, l := range ls {
		n := l.Name
		if !model.LegacyValidation.IsValidLabelName(n) || strings.HasPrefix(n, "__") {
			return labels.EmptyLabels(), fmt.Errorf("%s: invalid label name %q", name, n)
		}
		if slices.Contains(reservedLabels[:], n) {
			n = "exported_" + n
		}
		if seen[n] {
			return labels.EmptyLabels(), fmt.Errorf("%s: label %q given twice", name, l.Name)
		}
		seen[n] = true
		if l.Value == "" { // an empty label is no label
			continue
		}
		b.Add(n, strings.ToValidUTF8(l.Value, "\uFFFD"))
	}
	b.Sort()
	return b.Labels(), nil
}
