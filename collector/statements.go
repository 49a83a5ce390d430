package collector

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Statements defaults.
const (
	DefaultStatementsInterval = 10 * time.Second
	DefaultStatementsTop      = 200
	// statementsTextLimit is the length of the digest_text label, as
	// mysqld_exporter's digest_text_limit.
	statementsTextLimit = 120
	// statementsMinHold is how many runs a digest keeps its series before a
	// costlier one may take its place, so that series do not churn.
	statementsMinHold = 6
	// statementsRecordTimeout bounds the store's write of one interval.
	statementsRecordTimeout = 5 * time.Second
)

// StatementsOptions configure the statements collector of one instance.
type StatementsOptions struct {
	Interval time.Duration // default DefaultStatementsInterval
	// Top is the most digests with their own series (bounded cardinality);
	// default DefaultStatementsTop.
	Top int
	// Examples keeps the literals of example statements.
	Examples bool
	// Cluster names the instance's cluster in what is recorded.
	Cluster string
	// Recorder stores every interval's digests (nil: none are stored).
	Recorder dbpilot.QueryRecorder
	Log      *slog.Logger
}

// Per-digest series of the statements collector, for the digests it
// tracks (at most Top per instance), labelled schema, digest and
// digest_text (the first 120 characters). They are the server's
// cumulative counters (performance_schema), or the slow log reader's since
// it started, as mysqld_exporter's perf_schema.eventsstatements collector
// writes them under mysql_perf_schema_events_statements_*.
const (
	MetricQueryCalls        = "dbpilot_query_calls_total"
	MetricQueryLatency      = "dbpilot_query_latency_seconds_total"
	MetricQueryRowsExamined = "dbpilot_query_rows_examined_total"
	MetricQueryErrors       = "dbpilot_query_errors_total"
	// MetricQueryDigests is the number of rows in the digest table and
	// MetricQueryDigestsCapacity its size (performance_schema_digests_size);
	// when they are equal new digests are lost.
	MetricQueryDigests         = "dbpilot_query_digests"
	MetricQueryDigestsCapacity = "dbpilot_query_digests_capacity"
	// MetricQuerySource is 1 for the source statistics come from (label
	// source: performance_schema, slow_log_table, slow_log_file, none).
	MetricQuerySource = "dbpilot_query_source"
)

// NewStatements returns the "statements" collector of one instance (every
// 10 s by default): it reads performance_schema's digest table (or the
// slow query log when performance_schema is off), computes what ran since
// its previous run (the table is never truncated: other tools read it
// too), stores that with Recorder, and writes per-digest series for the
// costliest Top digests. Unlike the other collectors it keeps state, so
// each instance needs its own.
func NewStatements(o StatementsOptions) *Statements {
	if o.Interval <= 0 {
		o.Interval = DefaultStatementsInterval
	}
	if o.Top <= 0 {
		o.Top = DefaultStatementsTop
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Statements{o: o, tracked: map[string]*trackedDigest{}}
}

// Statements is the statements collector of one instance.
type Statements struct {
	o StatementsOptions

	mu      sync.Mutex
	src     *statementSource
	prev    *mysql.DigestSnapshot
	tracked map[string]*trackedDigest
	run     int
	lastErr string // the last source error logged, so that it is logged once
}

// trackedDigest is a digest with its own series.
type trackedDigest struct {
	since   int     // the run it was added in
	cost    float64 // moving average of its latency per run, ps
	written bool
}

func (s *Statements) Name() string                   { return "statements" }
func (s *Statements) DefaultInterval() time.Duration { return s.o.Interval }

func digestKey(schema, digest string) string { return schema + "\x00" + digest }

// Collect reads the source, records the interval since the previous run
// and returns the tracked digests' series.
func (s *Statements) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run++
	if s.src == nil || s.src.stale(s.run) {
		src, err := detectStatementSource(ctx, q, t.Key, s.o.Examples, s.run)
		if err != nil {
			return nil, err
		}
		switch {
		case s.src != nil && src.name() == s.src.name() && src.detail() == s.src.detail() && s.src.reader != nil:
			// The same source: keep its reader, whose counters continue.
			s.src.at = src.at
		default:
			if s.src == nil || src.name() != s.src.name() {
				s.o.Log.Info("statements: source", "source", src.name(), "detail", src.detail(), "reason", src.src.Reason)
			}
			s.prev = nil // counters of another reader do not compare
			s.src = src
		}
	}
	source := dbpilot.QuerySource{Instance: t.Key.String(), Cluster: s.o.Cluster, Source: s.src.name(), Detail: s.src.detail()}
	if s.src.reader == nil {
		source.Error, source.At = s.src.src.Reason, time.Now()
		s.record(ctx, dbpilot.QueryInterval{End: source.At, Source: source})
		s.logOnce(source.Error)
		return s.selfSamples(source, nil), nil
	}
	cur, err := s.src.reader.Snapshot(ctx, q)
	if err != nil {
		// The server may have changed (performance_schema, log_output):
		// detect again next run; the same source keeps its reader.
		s.src.at = s.run - statementsRedetect
		return nil, err
	}
	if !cur.Enabled {
		s.src, s.prev = nil, nil
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "statements: %s: performance_schema was turned off", t.Key)
	}
	if len(cur.ConsumerOff) > 0 {
		source.Detail = "consumers off: " + strings.Join(cur.ConsumerOff, ", ")
	}
	source.Capacity, source.Digests, source.LostDigests, source.At = cur.Capacity, len(cur.Digests), cur.Lost, cur.At
	source.Full = cur.Capacity > 0 && int64(len(cur.Digests)) >= cur.Capacity
	prev := s.prev
	s.prev = cur
	s.logOnce("")
	if prev == nil {
		// The first read is the baseline: what ran before it has no interval.
		s.record(ctx, dbpilot.QueryInterval{End: cur.At, Source: source})
		return s.selfSamples(source, s.track(nil, nil, cur)), nil
	}
	if cur.Lost >= prev.Lost {
		source.LostInSpan = cur.Lost - prev.Lost
	}
	deltas := mysql.DigestDeltas(prev, cur)
	iv := dbpilot.QueryInterval{Start: prev.At, End: cur.At, Source: source, Stats: make([]dbpilot.QueryStat, 0, len(deltas))}
	for _, d := range deltas {
		iv.Stats = append(iv.Stats, QueryStat(t.Key.String(), s.o.Cluster, d))
	}
	s.record(ctx, iv)
	before := make(map[string]bool, len(prev.Digests))
	for _, d := range prev.Digests {
		before[digestKey(d.Schema, d.Digest)] = true
	}
	return s.selfSamples(source, s.track(before, deltas, cur)), nil
}

// QueryStat converts a digest (a delta or a cumulative row) for a report.
func QueryStat(instance, cluster string, d mysql.Digest) dbpilot.QueryStat {
	st := dbpilot.QueryStat{
		Instance: instance, Cluster: cluster, Schema: d.Schema, Digest: d.Digest, DigestText: d.Text, Example: d.Sample,
		Count: d.Count, TotalMS: float64(d.TotalWait) / 1e9, MaxMS: float64(d.MaxWait) / 1e9,
		RowsExamined: d.RowsExamined, RowsSent: d.RowsSent, Errors: d.Errors, Warnings: d.Warnings,
		NoIndexUsed: d.NoIndexUsed, TmpDiskTables: d.TmpDiskTables, SortMergePasses: d.SortMergePasses,
		FirstSeen: d.FirstSeen, LastSeen: d.LastSeen,
	}
	if d.Digest == "" && st.DigestText == "" {
		st.DigestText = "(statements that found the digest table full)"
	}
	if st.Count > 0 {
		st.AvgMS = st.TotalMS / float64(st.Count)
	}
	return st
}

// record stores an interval; a store that fails is logged, not fatal to
// the collection.
func (s *Statements) record(ctx context.Context, iv dbpilot.QueryInterval) {
	if s.o.Recorder == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementsRecordTimeout)
	defer cancel()
	if err := s.o.Recorder.RecordQueries(rctx, iv); err != nil {
		s.o.Log.Warn("statements: store the interval", "err", err)
	}
}

// logOnce logs a source problem when it changes.
func (s *Statements) logOnce(msg string) {
	if msg != "" && msg != s.lastErr {
		s.o.Log.Warn("statements: no query statistics", "reason", msg)
	}
	s.lastErr = msg
}

// track updates the set of digests with their own series from the
// interval's deltas and returns their samples from cur's cumulative
// counters; prev holds the digests of the previous read (nil on the
// first). The set holds at most Top digests: a digest that ran joins
// while there is room; when the set is full it takes the place of the
// cheapest tracked digest (by a moving average of latency per run) when it
// cost more than twice that in this interval and the other has had its
// series for statementsMinHold runs.
func (s *Statements) track(prev map[string]bool, deltas []mysql.Digest, cur *mysql.DigestSnapshot) []dbpilot.Sample {
	cost := make(map[string]float64, len(deltas))
	for _, d := range deltas {
		cost[digestKey(d.Schema, d.Digest)] = float64(d.TotalWait)
	}
	for k, td := range s.tracked {
		td.cost = 0.7*td.cost + 0.3*cost[k]
	}
	var cands []mysql.Digest
	for _, d := range deltas {
		if _, ok := s.tracked[digestKey(d.Schema, d.Digest)]; !ok && d.Count > 0 {
			cands = append(cands, d)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].TotalWait > cands[j].TotalWait })
	for _, d := range cands {
		k := digestKey(d.Schema, d.Digest)
		if len(s.tracked) >= s.o.Top {
			victim, vcost := "", 0.0
			for vk, td := range s.tracked {
				if s.run-td.since < statementsMinHold {
					continue
				}
				if victim == "" || td.cost < vcost || td.cost == vcost && vk < victim {
					victim, vcost = vk, td.cost
				}
			}
			if victim == "" || float64(d.TotalWait) <= 2*vcost {
				break // candidates are sorted: no later one costs more
			}
			delete(s.tracked, victim)
		}
		s.tracked[k] = &trackedDigest{since: s.run, cost: float64(d.TotalWait)}
	}
	if len(s.tracked) == 0 {
		return nil
	}
	out := make([]dbpilot.Sample, 0, 4*len(s.tracked))
	for _, d := range cur.Digests {
		td, ok := s.tracked[digestKey(d.Schema, d.Digest)]
		if !ok {
			continue
		}
		// A digest new since the previous read counts from zero.
		first := !td.written && prev != nil && !prev[digestKey(d.Schema, d.Digest)]
		td.written = true
		text := d.Text
		if d.Digest == "" && text == "" {
			text = "(statements that found the digest table full)"
		}
		if r := []rune(text); len(r) > statementsTextLimit {
			text = string(r[:statementsTextLimit])
		}
		labels := []dbpilot.Label{{Name: "schema", Value: d.Schema}, {Name: "digest", Value: d.Digest}, {Name: "digest_text", Value: text}}
		out = append(out,
			dbpilot.Sample{Name: MetricQueryCalls, Type: dbpilot.Counter, Labels: labels, Value: float64(d.Count), FromZero: first,
				Help: "Statements of a digest run (the costliest digests only)."},
			dbpilot.Sample{Name: MetricQueryLatency, Type: dbpilot.Counter, Labels: labels, Value: float64(d.TotalWait) / 1e12, FromZero: first,
				Help: "Total latency of a digest's statements, seconds."},
			dbpilot.Sample{Name: MetricQueryRowsExamined, Type: dbpilot.Counter, Labels: labels, Value: float64(d.RowsExamined), FromZero: first,
				Help: "Rows examined by a digest's statements."},
			dbpilot.Sample{Name: MetricQueryErrors, Type: dbpilot.Counter, Labels: labels, Value: float64(d.Errors), FromZero: first,
				Help: "Statements of a digest that ended in an error."},
		)
	}
	return out
}

// selfSamples adds the source's gauges to the digests' samples.
func (s *Statements) selfSamples(src dbpilot.QuerySource, out []dbpilot.Sample) []dbpilot.Sample {
	out = append(out, dbpilot.Sample{Name: MetricQuerySource, Type: dbpilot.Gauge, Value: 1,
		Labels: []dbpilot.Label{{Name: "source", Value: src.Source}},
		Help:   "Where the instance's query statistics come from (1 for the source in use)."})
	if src.Source == dbpilot.QuerySourcePerformanceSchema {
		out = append(out,
			dbpilot.Sample{Name: MetricQueryDigests, Type: dbpilot.Gauge, Value: float64(src.Digests),
				Help: "Rows in performance_schema's digest table."},
			dbpilot.Sample{Name: MetricQueryDigestsCapacity, Type: dbpilot.Gauge, Value: float64(src.Capacity),
				Help: "performance_schema_digests_size: rows the digest table holds at most (-1 autosized)."})
	}
	return out
}
