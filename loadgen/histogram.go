package loadgen

// Latency histograms: HdrHistogram (github.com/HdrHistogram/hdrhistogram-go)
// in microseconds from 1 µs to 1 hour with 3 significant digits, one per
// operation, reset each interval and merged into the run's. Memory is
// fixed per histogram (about 190 KB), whatever the number of transactions.

import (
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// hist is one latency distribution: an HDR histogram with the exact
// maximum, and the values above histMax recorded as histMax and counted.
type hist struct {
	h       *hdrhistogram.Histogram
	max     int64 // µs, exact (also above histMax)
	clamped int64 // values recorded as histMax
}

func newHist() *hist {
	return &hist{h: hdrhistogram.New(histMin, histMax, histSigFigs)}
}

// record adds one latency.
func (h *hist) record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.max = max(h.max, us)
	if us > histMax {
		us = histMax
		h.clamped++
	}
	// In range by construction: RecordValue cannot fail.
	_ = h.h.RecordValue(us)
}

// merge adds from's values.
func (h *hist) merge(from *hist) {
	if from == nil || from.h.TotalCount() == 0 {
		return
	}
	h.h.Merge(from.h)
	h.max = max(h.max, from.max)
	h.clamped += from.clamped
}

func (h *hist) reset() {
	h.h.Reset()
	h.max = 0
	h.clamped = 0
}

func (h *hist) count() int64 { return h.h.TotalCount() }

// percentile returns the latency at percentile p (0..100) in milliseconds,
// never above the exact maximum (an HDR bucket's upper end can be).
func (h *hist) percentile(p float64) float64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	v := h.h.ValueAtQuantile(p)
	return float64(min(v, h.max)) / 1000
}

// maxMS is the exact maximum in milliseconds.
func (h *hist) maxMS() float64 { return float64(h.max) / 1000 }

// latencies are the percentiles a report gives, in milliseconds.
type latencies struct {
	P50, P90, P99, P999, Max float64
}

func (h *hist) latencies() latencies {
	return latencies{P50: h.percentile(50), P90: h.percentile(90), P99: h.percentile(99), P999: h.percentile(99.9), Max: h.maxMS()}
}

// opStats is one operation's latencies and counts.
type opStats struct {
	lat    *hist
	errors int64
}

// opHists holds a histogram per operation (index into Workload.Ops),
// allocated when an operation first records. The runner keeps one for the
// current interval and one for the run, and merges the first into the
// second at each interval's end.
type opHists struct {
	ops []opStats
}

func newOpHists(n int) *opHists {
	return &opHists{ops: make([]opStats, n)}
}

// record adds one completed transaction of operation op.
func (o *opHists) record(op int, d time.Duration, failed bool) {
	for op >= len(o.ops) {
		o.ops = append(o.ops, opStats{})
	}
	s := &o.ops[op]
	if s.lat == nil {
		s.lat = newHist()
	}
	s.lat.record(d)
	if failed {
		s.errors++
	}
}

// merge adds from's operations.
func (o *opHists) merge(from *opHists) {
	for i := range from.ops {
		f := &from.ops[i]
		if f.lat == nil {
			continue
		}
		for i >= len(o.ops) {
			o.ops = append(o.ops, opStats{})
		}
		s := &o.ops[i]
		if s.lat == nil {
			s.lat = newHist()
		}
		s.lat.merge(f.lat)
		s.errors += f.errors
	}
}

// reset empties every operation, keeping the histograms' memory.
func (o *opHists) reset() {
	for i := range o.ops {
		if o.ops[i].lat != nil {
			o.ops[i].lat.reset()
		}
		o.ops[i].errors = 0
	}
}

// all merges every operation into into (reset first).
func (o *opHists) all(into *hist) {
	into.reset()
	for i := range o.ops {
		into.merge(o.ops[i].lat)
	}
}

// summaries returns an OpSummary per operation that ran, in operation
// order; names[i] names operation i ("op<i>" past the end of names).
func (o *opHists) summaries(names []string) []OpSummary {
	var out []OpSummary
	for i := range o.ops {
		s := &o.ops[i]
		if s.lat == nil || s.lat.count() == 0 {
			continue
		}
		out = append(out, opSummary(opName(names, i), s.lat, s.errors))
	}
	return out
}

func opName(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return "op" + strconv.Itoa(i)
}

// opSummary makes an OpSummary from a histogram.
func opSummary(name string, h *hist, errors int64) OpSummary {
	l := h.latencies()
	return OpSummary{Op: name, Count: h.count(), Errors: errors, P50: l.P50, P90: l.P90, P99: l.P99, P999: l.P999, Max: l.Max}
}
