package remotewrite

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stats are a Sink's counters.
type stats struct {
	queued, sent, failed, dropped, retried, bytes atomic.Int64

	mu           sync.Mutex
	sends        map[string]int64 // requests by HTTP status, or "error"
	lastSuccess  time.Time
	lastDuration time.Duration
}

func (st *stats) add(n pushCount) {
	st.queued.Add(n.queued)
	st.dropped.Add(n.dropped)
}

// request records one request's outcome.
func (st *stats) request(code string, took time.Duration, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sends == nil {
		st.sends = map[string]int64{}
	}
	st.sends[code]++
	st.lastDuration = took
	if ok {
		st.lastSuccess = time.Now()
	}
}

// Stats are a Sink's counts, in samples unless named otherwise. Every
// sample counted in Samples ends up in exactly one of Sent, Failed and
// Dropped, or is still Pending.
type Stats struct {
	// Samples counts the samples given to Write, and the staleness markers
	// Write and Forget added.
	Samples int64
	// Sent counts the samples a receiver accepted (2xx).
	Sent int64
	// Failed counts the samples a receiver refused (4xx other than 429)
	// and those Write could not send.
	Failed int64
	// Dropped counts the samples pushed out of a full queue, and those
	// still queued when Close gave up.
	Dropped int64
	// Retried counts the samples of requests retried.
	Retried int64
	// Pending is what is queued or being sent now.
	Pending int64
	// Bytes counts the request bodies sent (compressed).
	Bytes int64
	// Sends counts requests by HTTP status ("200", "503") or "error".
	Sends map[string]int64
	// LastSuccess is when a request last succeeded; LastDuration how long
	// the last request took.
	LastSuccess  time.Time
	LastDuration time.Duration
}

// Stats returns the Sink's counts.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	pending := int64(s.q.len())
	s.mu.Unlock()
	st := Stats{
		Samples: s.st.queued.Load(),
		Sent:    s.st.sent.Load(),
		Failed:  s.st.failed.Load(),
		Dropped: s.st.dropped.Load(),
		Retried: s.st.retried.Load(),
		Pending: pending + s.inFlight.Load(),
		Bytes:   s.st.bytes.Load(),
	}
	s.st.mu.Lock()
	st.Sends = maps.Clone(s.st.sends)
	st.LastSuccess, st.LastDuration = s.st.lastSuccess, s.st.lastDuration
	s.st.mu.Unlock()
	if st.Sends == nil {
		st.Sends = map[string]int64{}
	}
	return st
}

var (
	descQueued   = desc("samples_total", "Samples given to the remote-write target: collected samples and staleness markers.")
	descSent     = desc("samples_sent_total", "Samples the remote-write target accepted.")
	descFailed   = desc("samples_failed_total", "Samples the remote-write target refused (4xx other than 429), or that could not be sent (invalid names, out of order).")
	descDropped  = desc("samples_dropped_total", "Samples dropped because the queue was full (the target was down or slow), or left at shutdown.")
	descRetried  = desc("samples_retried_total", "Samples of requests retried after a 5xx, 429 or network error.")
	descBytes    = desc("bytes_sent_total", "Bytes of request bodies sent (snappy-compressed protobuf).")
	descLength   = desc("queue_length", "Samples waiting to be sent: queued, and in the request being sent.")
	descCapacity = desc("queue_capacity", "The queue's capacity in samples.")
	descLastSend = desc("last_send_timestamp_seconds", "When a request last succeeded (Unix time; 0: never).")
	descLastTook = desc("last_send_duration_seconds", "How long the last request took.")
	descSends    = prometheus.NewDesc("dbpilot_remote_write_sends_total", "Requests sent to the remote-write target, by HTTP status code (\"error\": no answer).", []string{"url", "code"}, nil)
)

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("dbpilot_remote_write_"+name, help, []string{"url"}, nil)
}

// Describe implements prometheus.Collector.
func (s *Sink) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueued, descSent, descFailed, descDropped, descRetried, descBytes, descLength, descCapacity, descLastSend, descLastTook, descSends} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the dbpilot_remote_write_*
// metrics, labelled with the target's redacted URL.
func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	st := s.Stats()
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), s.label)
	}
	counter(descQueued, st.Samples)
	counter(descSent, st.Sent)
	counter(descFailed, st.Failed)
	counter(descDropped, st.Dropped)
	counter(descRetried, st.Retried)
	counter(descBytes, st.Bytes)
	ch <- prometheus.MustNewConstMetric(descLength, prometheus.GaugeValue, float64(st.Pending), s.label)
	ch <- prometheus.MustNewConstMetric(descCapacity, prometheus.GaugeValue, float64(s.opt.Capacity), s.label)
	last := 0.0
	if !st.LastSuccess.IsZero() {
		last = float64(st.LastSuccess.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(descLastSend, prometheus.GaugeValue, last, s.label)
	ch <- prometheus.MustNewConstMetric(descLastTook, prometheus.GaugeValue, st.LastDuration.Seconds(), s.label)
	for _, code := range slices.Sorted(maps.Keys(st.Sends)) {
		ch <- prometheus.MustNewConstMetric(descSends, prometheus.CounterValue, float64(st.Sends[code]), s.label, code)
	}
}
