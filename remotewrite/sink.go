// Package remotewrite sends the samples dbpilot collects to Prometheus
// remote-write receivers (Prometheus with --web.enable-remote-write-receiver,
// VictoriaMetrics' /api/v1/write, Mimir, Thanos receive...) with protocol
// 1.0: WriteRequest messages (wire.go), snappy-compressed. Each target has a
// bounded in-memory queue: Write never waits for the receiver, and when the
// queue is full the oldest samples are dropped and counted. A sender per
// target batches the queue, retries 5xx, 429 and network errors with
// exponential backoff, and counts what it sent, what the receiver refused
// and what was dropped.
//
// The package also reads the samples back where serve keeps no local store:
// Querier answers dbpilot's PromQL queries (alerts, the console's charts)
// from a Prometheus-compatible HTTP API.
package remotewrite

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"

	"github.com/dbpilot/dbpilot"
)

// Defaults of Options.
const (
	DefaultTimeout           = 10 * time.Second
	DefaultCapacity          = 500_000
	DefaultMaxSamplesPerSend = 2000
	DefaultBatchSendDeadline = time.Second
	DefaultMinBackoff        = 30 * time.Millisecond
	DefaultMaxBackoff        = 5 * time.Second
	// DefaultFlushTimeout bounds Close's last sends.
	DefaultFlushTimeout = 5 * time.Second
)

// Options configure a Sink. Only URL is required.
type Options struct {
	// URL is the receiver's endpoint, e.g. http://vm:8428/api/v1/write. A
	// user and password in it are sent as basic authentication and never
	// shown (logs and metric labels use Redacted).
	URL string
	// Headers are sent with every request; their values are never logged.
	Headers map[string]string
	// Username and Password (basic authentication), or BearerToken,
	// authenticate the requests.
	Username, Password string
	BearerToken        string
	// Timeout bounds one request (default 10s).
	Timeout time.Duration
	// Capacity is the queue's size in samples (default 500000, about 24
	// bytes each plus their series' labels, shared); when full, the oldest
	// are dropped. The batch being sent is not counted in it.
	Capacity int
	// MaxSamplesPerSend caps a request (default 2000); BatchSendDeadline is
	// how long a partial batch waits (default 1s).
	MaxSamplesPerSend int
	BatchSendDeadline time.Duration
	// MinBackoff and MaxBackoff bound the wait between retries (30ms, 5s),
	// doubled after each failure; a Retry-After of a 429 or 503 is
	// honoured up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// FlushTimeout bounds Close's sending of what is still queued (5s);
	// what remains is dropped.
	FlushTimeout time.Duration
	// Client sends the requests (nil: one of the Sink's own, which never
	// follows redirects, so credentials stay with URL's host).
	Client *http.Client
	// Logger receives send errors, at most one line a minute per kind; nil
	// discards.
	Logger *slog.Logger
	// UserAgent is sent with every request (default "dbpilot").
	UserAgent string
}

// Sink is a remote-write target. It implements dbpilot.MetricSink and
// prometheus.Collector (its dbpilot_remote_write_* metrics). Its methods
// are safe for concurrent use.
type Sink struct {
	opt      Options
	endpoint *url.URL // without user info
	label    string   // endpoint, redacted: the url label and the logs' url
	client   *http.Client
	log      *slog.Logger
	batch    int // samples per request: min(MaxSamplesPerSend, Capacity)

	mu      sync.Mutex
	q       *queue
	sources map[sourceKey]*source
	closed  bool

	ready    chan struct{}   // a full batch is queued (cap 1)
	flush    chan struct{}   // closed by Close: send what is queued, then stop
	stop     context.Context // ended when FlushTimeout passes: stop now
	stopNow  context.CancelFunc
	done     chan struct{} // closed when the sender stopped
	inFlight atomic.Int64  // samples of the batch being sent

	st     stats
	logMu  sync.Mutex
	logged map[string]time.Time // last log line by kind
}

// New validates opt, applies defaults and starts the target's sender. Close
// stops it.
func New(opt Options) (*Sink, error) {
	u, err := ParseURL(opt.URL)
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		if opt.Username != "" || opt.BearerToken != "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "remote write %s: credentials both in the URL and in the options", Redacted(u))
		}
		opt.Username = u.User.Username()
		opt.Password, _ = u.User.Password()
		u.User = nil
	}
	if opt.Username != "" && opt.BearerToken != "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "remote write %s: give basic auth or a bearer token, not both", Redacted(u))
	}
	for name := range opt.Headers {
		if err := CheckHeader(name); err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "remote write %s: %v", Redacted(u), err)
		}
	}
	if opt.Capacity < 0 || opt.MaxSamplesPerSend < 0 || opt.Timeout < 0 || opt.BatchSendDeadline < 0 ||
		opt.MinBackoff < 0 || opt.MaxBackoff < 0 || opt.FlushTimeout < 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "remote write %s: negative capacity, batch size, timeout or backoff", Redacted(u))
	}
	setDefault(&opt.Timeout, DefaultTimeout)
	setDefault(&opt.Capacity, DefaultCapacity)
	setDefault(&opt.MaxSamplesPerSend, DefaultMaxSamplesPerSend)
	setDefault(&opt.BatchSendDeadline, DefaultBatchSendDeadline)
	setDefault(&opt.MinBackoff, DefaultMinBackoff)
	setDefault(&opt.MaxBackoff, DefaultMaxBackoff)
	setDefault(&opt.FlushTimeout, DefaultFlushTimeout)
	setDefault(&opt.UserAgent, "dbpilot")
	opt.MaxBackoff = max(opt.MaxBackoff, opt.MinBackoff)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sink{
		opt:      opt,
		endpoint: u,
		label:    Redacted(u),
		client:   opt.Client,
		batch:    min(opt.MaxSamplesPerSend, opt.Capacity),
		q:        newQueue(opt.Capacity),
		sources:  map[sourceKey]*source{},
		ready:    make(chan struct{}, 1),
		flush:    make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.stop, s.stopNow = context.WithCancel(context.Background())
	s.log = opt.Logger.With("url", s.label)
	if s.client == nil {
		s.client = newHTTPClient()
	}
	go s.run()
	return s, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// URL returns the target's endpoint without credentials (the url label of
// its metrics).
func (s *Sink) URL() string { return s.label }

// Write queues the batch's samples and returns at once: it never waits for
// the receiver. Samples get the labels the embedded store gives them
// (__name__, instance, cluster, role and their own); series that the
// previous batch of the same (instance, collector) had and this one lacks
// get a staleness marker. Samples that cannot be sent (an invalid name, a
// time not after their series' last) are counted as failed, and the error
// names the first.
func (s *Sink) Write(ctx context.Context, b dbpilot.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := timestamp.FromTime(b.Time)
	if b.Time.IsZero() {
		t = timestamp.FromTime(time.Now())
	}
	instance := b.Instance.String()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "remote write %s is closed", s.label)
	}
	src := s.sources[sourceKey{b.Instance, b.Collector}]
	if src == nil {
		src = &source{series: map[string]*series{}}
		s.sources[sourceKey{b.Instance, b.Collector}] = src
	}
	// New cluster or role labels start new series: end the old ones.
	var (
		n        pushCount
		key      []byte
		scratch  []dbpilot.Label
		bad      int
		firstBad string
	)
	if src.cluster != b.Cluster || src.role != b.Role {
		for k, se := range src.series {
			s.pushStale(&n, se, t)
			delete(src.series, k)
		}
		src.cluster, src.role = b.Cluster, b.Role
	}
	src.gen++
	for i := range b.Samples {
		smp := &b.Samples[i]
		scratch = sortedLabels(scratch[:0], smp.Labels)
		key = dbpilot.AppendSeriesKey(key[:0], smp.Name, scratch)
		se := src.series[string(key)]
		if se == nil {
			ls, err := buildLabels(smp.Name, scratch, instance, b.Cluster, b.Role)
			if err != nil {
				bad++
				if firstBad == "" {
					firstBad = err.Error()
				}
				continue
			}
			se = &series{labels: ls, lastT: math.MinInt64}
			src.series[string(key)] = se
		}
		if se.gen == src.gen {
			continue // the same series twice in one batch: the first wins
		}
		se.gen = src.gen
		if t <= se.lastT {
			bad++
			if firstBad == "" {
				firstBad = fmt.Sprintf("%s: time %d not after the series' last %d", smp.Name, t, se.lastT)
			}
			continue
		}
		if smp.FromZero && se.lastT == math.MinInt64 && src.lastT > 0 && src.lastT < t {
			// An idle counter's first move: its 0 at the previous write.
			s.push(&n, entry{s: se, t: src.lastT, v: 0})
		}
		se.lastT = t
		s.push(&n, entry{s: se, t: t, v: smp.Value})
	}
	src.lastT = t
	for k, se := range src.series {
		if se.gen != src.gen && !b.Partial { // a partial batch keeps the others
			s.pushStale(&n, se, t)
			delete(src.series, k)
		}
	}
	full := s.q.len() >= s.batch
	s.mu.Unlock()

	n.queued += int64(bad) // given, and failed at once
	s.st.add(n)
	s.st.failed.Add(int64(bad))
	if full {
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
	if bad > 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "remote write %s: %d of %d samples of %s (%s) not sent; first: %s",
			s.label, bad, len(b.Samples), instance, b.Collector, firstBad)
	}
	return nil
}

// pushCount counts what a Write or Forget queued and dropped.
type pushCount struct{ queued, dropped int64 }

// push queues e. The caller holds s.mu.
func (s *Sink) push(n *pushCount, e entry) {
	n.queued++
	if s.q.push(e) {
		n.dropped++
	}
}

// pushStale queues a staleness marker ending se at t, when t is after its
// last sample. The caller holds s.mu.
func (s *Sink) pushStale(n *pushCount, se *series, t int64) {
	if t <= se.lastT {
		return
	}
	se.lastT = t
	s.push(n, entry{s: se, t: t, v: math.Float64frombits(value.StaleNaN)})
}

// Forget ends the series of an instance (under any spelling of its
// address) with staleness markers, so queries on the receiver stop
// returning them at once, and drops what the Sink keeps of it.
func (s *Sink) Forget(instance dbpilot.InstanceKey) {
	want := instance.Normalized()
	t := timestamp.FromTime(time.Now())
	var n pushCount
	s.mu.Lock()
	for k, src := range s.sources {
		if k.instance.Normalized() != want {
			continue
		}
		if !s.closed {
			for _, se := range src.series {
				s.pushStale(&n, se, max(t, se.lastT+1))
			}
		}
		delete(s.sources, k)
	}
	s.mu.Unlock()
	s.st.add(n)
}

// Close stops accepting samples, sends what is queued for up to
// FlushTimeout, drops (and counts) the rest, and waits for the sender.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.flush)
	t := time.NewTimer(s.opt.FlushTimeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.stopNow()
		<-s.done
	}
	s.stopNow()
	s.mu.Lock()
	left := s.q.len()
	s.q.pop(nil, left)
	s.mu.Unlock()
	if left > 0 {
		s.st.dropped.Add(int64(left))
		s.log.Warn("remote write: samples dropped at shutdown: the receiver did not take them in time", "samples", left)
	}
	return nil
}
