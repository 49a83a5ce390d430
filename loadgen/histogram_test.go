package loadgen

import (
	"math"
	"testing"
	"time"
)

// near reports whether got is within 0.1% (3 significant digits) of want.
func approxEq(got, want float64) bool {
	return math.Abs(got-want) <= 0.001*math.Abs(want)+1e-9
}

func TestHistPercentiles(t *testing.T) {
	tests := []struct {
		name   string
		values func(record func(time.Duration))
		want   latencies
		count  int64
	}{
		{
			name: "1..1000 ms",
			values: func(rec func(time.Duration)) {
				for i := 1; i <= 1000; i++ {
					rec(time.Duration(i) * time.Millisecond)
				}
			},
			want:  latencies{P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000},
			count: 1000,
		},
		{
			name: "one value",
			values: func(rec func(time.Duration)) {
				rec(1234567 * time.Microsecond)
			},
			want:  latencies{P50: 1234.567, P90: 1234.567, P99: 1234.567, P999: 1234.567, Max: 1234.567},
			count: 1,
		},
		{
			name: "999 fast, one 2 s stall",
			values: func(rec func(time.Duration)) {
				for range 999 {
					rec(250 * time.Microsecond)
				}
				rec(2 * time.Second)
			},
			want:  latencies{P50: 0.25, P90: 0.25, P99: 0.25, P999: 0.25, Max: 2000},
			count: 1000,
		},
		{
			name: "sub-microsecond and negative count as 0",
			values: func(rec func(time.Duration)) {
				rec(300 * time.Nanosecond)
				rec(-time.Second)
			},
			want:  latencies{},
			count: 2,
		},
		{
			name:   "empty",
			values: func(func(time.Duration)) {},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			tc.values(h.record)
			got := h.latencies()
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"p50", got.P50, tc.want.P50}, {"p90", got.P90, tc.want.P90}, {"p99", got.P99, tc.want.P99},
				{"p99.9", got.P999, tc.want.P999}, {"max", got.Max, tc.want.Max}} {
				if !approxEq(c.got, c.want) {
					t.Errorf("%s = %v ms, want %v", c.name, c.got, c.want)
				}
			}
			if h.count() != tc.count {
				t.Errorf("count = %d, want %d", h.count(), tc.count)
			}
		})
	}
}

func TestHistMergeEqualsOne(t *testing.T) {
	a, b, both := newOpHists(2), newOpHists(2), newOpHists(2)
	for i := range 5000 {
		d := time.Duration(i*i%997+1) * 37 * time.Microsecond
		op := i % 2
		failed := i%13 == 0
		if i < 2500 {
			a.record(op, d, failed)
		} else {
			b.record(op, d, failed)
		}
		both.record(op, d, failed)
	}
	// An interval's histograms merged into the run's, twice (as the runner
	// does), equal one histogram of every value.
	total := newOpHists(2)
	total.merge(a)
	total.merge(b)
	names := []string{"read", "write"}
	got, want := total.summaries(names), both.summaries(names)
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("summaries: %d and %d ops, want 2", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("op %d: merged %+v, one histogram %+v", i, got[i], want[i])
		}
	}
	h1, h2 := newHist(), newHist()
	total.all(h1)
	both.all(h2)
	if !h1.h.Equals(h2.h) || h1.max != h2.max || h1.count() != 5000 {
		t.Errorf("all ops merged differ: %d values max %d vs %d values max %d", h1.count(), h1.max, h2.count(), h2.max)
	}
	// reset keeps nothing.
	total.reset()
	if n := len(total.summaries(names)); n != 0 {
		t.Errorf("after reset: %d ops", n)
	}
}

func TestHistClampsAboveMax(t *testing.T) {
	h := newHist()
	h.record(time.Millisecond)
	h.record(3 * time.Hour)
	h.record(time.Hour + time.Second)
	if h.count() != 3 {
		t.Fatalf("count = %d, want 3 (values above the maximum are kept)", h.count())
	}
	if h.clamped != 2 {
		t.Errorf("clamped = %d, want 2", h.clamped)
	}
	// The percentiles see the clamp; the maximum is exact.
	if p := h.percentile(99); !approxEq(p, float64(time.Hour/time.Millisecond)) {
		t.Errorf("p99 = %v ms, want one hour", p)
	}
	if m := h.maxMS(); m != float64(3*time.Hour/time.Millisecond) {
		t.Errorf("max = %v ms, want 3 h", m)
	}
	other := newHist()
	other.merge(h)
	if other.clamped != 2 || other.count() != 3 {
		t.Errorf("merged: clamped %d, count %d", other.clamped, other.count())
	}
}

func TestOpHistsNames(t *testing.T) {
	o := newOpHists(1)
	o.record(0, time.Millisecond, false)
	o.record(3, time.Millisecond, true)
	got := o.summaries([]string{"point_select"})
	if len(got) != 2 || got[0].Op != "point_select" || got[1].Op != "op3" || got[1].Errors != 1 || got[0].Errors != 0 {
		t.Fatalf("summaries = %+v", got)
	}
}
