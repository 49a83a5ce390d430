package loadgen

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Schedule
		err  string
	}{
		{in: "1000", want: Schedule{Steps: []Step{{Rate: 1000}}}},
		{in: "0.5", want: Schedule{Steps: []Step{{Rate: 0.5}}}},
		{in: " 1000:60s , 5000:60s ", want: Schedule{Steps: []Step{{Rate: 1000, For: time.Minute}, {Rate: 5000, For: time.Minute}}}},
		{in: "1000:60s,5000", want: Schedule{Steps: []Step{{Rate: 1000, For: time.Minute}, {Rate: 5000}}}},
		{in: "100..1000:30s,1000:1m", want: Schedule{Steps: []Step{{Rate: 100, RampTo: 1000, For: 30 * time.Second}, {Rate: 1000, For: time.Minute}}}},
		{in: "1000:x", err: `bench: --rate "1000:x": "x" is not a duration`},
		{in: "1000:", err: `bench: --rate "1000:": "" is not a duration`},
		{in: "1000:0s", err: `bench: --rate "1000:0s": duration "0s" must be above 0`},
		{in: "1000:-5s", err: `bench: --rate "1000:-5s": duration "-5s" must be above 0`},
		{in: "abc", err: `bench: --rate "abc": "abc" is not a rate (transactions per second)`},
		{in: "NaN", err: `bench: --rate "NaN": "NaN" is not a rate (transactions per second)`},
		{in: "Inf", err: `bench: --rate "Inf": "Inf" is not a rate (transactions per second)`},
		{in: "0", err: `bench: --rate "0": rate "0" must be above 0`},
		{in: "-10:5s", err: `bench: --rate "-10:5s": rate "-10" must be above 0`},
		{in: "", err: `bench: --rate "": no rate given (RATE or RATE:DURATION,..., e.g. 1000 or 1000:60s,5000:60s)`},
		{in: "1000:60s,,5000:60s", err: `bench: --rate "1000:60s,,5000:60s": step 2 is empty`},
		{in: "1000:60s,", err: `bench: --rate "1000:60s,": step 2 is empty`},
		{in: ":60s", err: `bench: --rate ":60s": a rate is missing`},
		{in: "1000,5000:60s", err: `bench: --rate "1000,5000:60s": step "1000" needs a duration (RATE:DURATION); only the last step may run until the end`},
		{in: "100..1000", err: `bench: --rate "100..1000": ramp "100..1000" needs a duration (FROM..TO:DURATION)`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ParseRate(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRate(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseRate(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseRamp(t *testing.T) {
	tests := []struct {
		in   string
		want Schedule
		err  string
	}{
		{in: "100..10000:5m", want: Schedule{Steps: []Step{{Rate: 100, RampTo: 10000, For: 5 * time.Minute}}}},
		{in: "10000..100:1m,100..200:10s", want: Schedule{Steps: []Step{{Rate: 10000, RampTo: 100, For: time.Minute}, {Rate: 100, RampTo: 200, For: 10 * time.Second}}}},
		{in: "100..10000", err: `bench: --ramp "100..10000": ramp "100..10000" needs a duration (FROM..TO:DURATION)`},
		{in: "100-10000:5m", err: `bench: --ramp "100-10000:5m": "100-10000:5m" is not a ramp (FROM..TO:DURATION)`},
		{in: "1000:5m", err: `bench: --ramp "1000:5m": "1000:5m" is not a ramp (FROM..TO:DURATION)`},
		{in: "100..x:5m", err: `bench: --ramp "100..x:5m": "x" is not a rate (transactions per second)`},
		{in: "..100:5m", err: `bench: --ramp "..100:5m": a rate is missing`},
		{in: "0..100:5m", err: `bench: --ramp "0..100:5m": rate "0" must be above 0`},
		{in: "100..NaN:5m", err: `bench: --ramp "100..NaN:5m": "NaN" is not a rate (transactions per second)`},
		{in: "100..200:5", err: `bench: --ramp "100..200:5": "5" is not a duration`},
		{in: "100..200:0s", err: `bench: --ramp "100..200:0s": duration "0s" must be above 0`},
		{in: "", err: `bench: --ramp "": no ramp given (FROM..TO:DURATION, e.g. 100..10000:5m)`},
		{in: "100..200:5s,", err: `bench: --ramp "100..200:5s,": step 2 is empty`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRamp(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ParseRamp(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRamp(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseRamp(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func mustRate(t testing.TB, s string) Schedule {
	t.Helper()
	sch, err := ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func TestScheduleRateAtDurationMean(t *testing.T) {
	tests := []struct {
		sched    string
		at       []time.Duration
		rates    []float64
		duration time.Duration
		mean     float64 // over mean's total
		total    time.Duration
	}{
		{sched: "1000", at: []time.Duration{0, time.Hour}, rates: []float64{1000, 1000}, duration: 0, mean: 1000, total: 0},
		{sched: "1000:60s,5000:60s", at: []time.Duration{0, 59 * time.Second, 60 * time.Second, 119 * time.Second, 10 * time.Minute},
			rates: []float64{1000, 1000, 5000, 5000, 5000}, duration: 2 * time.Minute, mean: 3000, total: 0},
		{sched: "1000:60s,5000", at: []time.Duration{30 * time.Second, 90 * time.Second}, rates: []float64{1000, 5000},
			duration: 0, mean: 3000, total: 2 * time.Minute},
		{sched: "100..10000:5m", at: []time.Duration{0, 150 * time.Second, 5 * time.Minute, time.Hour},
			rates: []float64{100, 5050, 10000, 10000}, duration: 5 * time.Minute, mean: 5050, total: 0},
		{sched: "1000..0.5:10s", at: []time.Duration{5 * time.Second}, rates: []float64{500.25}, duration: 10 * time.Second, mean: 500.25},
		// Longer than the schedule: the last rate holds.
		{sched: "100:10s", at: []time.Duration{20 * time.Second}, rates: []float64{100}, duration: 10 * time.Second, mean: 100, total: 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.sched, func(t *testing.T) {
			s := mustRate(t, tc.sched)
			for i, at := range tc.at {
				if got := s.RateAt(at); math.Abs(got-tc.rates[i]) > 1e-9 {
					t.Errorf("RateAt(%s) = %v, want %v", at, got, tc.rates[i])
				}
			}
			if got := s.Duration(); got != tc.duration {
				t.Errorf("Duration() = %s, want %s", got, tc.duration)
			}
			if got := s.Mean(tc.total); math.Abs(got-tc.mean) > 1e-6 {
				t.Errorf("Mean(%s) = %v, want %v", tc.total, got, tc.mean)
			}
			if got, err := ParseRate(s.String()); err != nil || !reflect.DeepEqual(got, s) {
				t.Errorf("ParseRate(String()) = %+v, %v; want %+v", got, err, s)
			}
		})
	}
}

// countArrivals counts a generator's arrivals in [from, to) after start.
func countArrivals(g *arrivals, start time.Time, from, to time.Duration) int {
	n := 0
	for {
		at := g.next().Sub(start)
		if at >= to {
			return n
		}
		if at >= from {
			n++
		}
	}
}

func TestArrivalsFollowTheIntegral(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		sched    string
		from, to time.Duration
	}{
		{"1000", 0, 10 * time.Second},
		{"1000", 3 * time.Second, 7 * time.Second},
		{"333.3", 0, 30 * time.Second},
		{"100:2s,1000:3s,50:5s", 0, 10 * time.Second},
		{"100:2s,1000:3s,50:5s", time.Second, 3 * time.Second},
		// A step up right after a slow one starts at once, not one slow gap
		// later.
		{"1:10s,1000:10s", 10 * time.Second, 11 * time.Second},
		{"100..10000:5m", 0, 5 * time.Minute},
		{"100..10000:5m", time.Minute, 2 * time.Minute},
		{"5000..50:20s", 0, 20 * time.Second},
		{"5000..50:20s", 15 * time.Second, 20 * time.Second},
		{"200..2000:10s,2000", 5 * time.Second, 15 * time.Second},
	}
	for _, tc := range tests {
		for _, kind := range []Arrival{ArrivalConstant, ArrivalPoisson} {
			t.Run(tc.sched+"/"+tc.from.String()+"-"+tc.to.String()+"/"+string(kind), func(t *testing.T) {
				s := mustRate(t, tc.sched)
				want := s.Count(tc.from, tc.to)
				got := float64(countArrivals(newArrivals(s, kind, start, 42), start, tc.from, tc.to))
				tol := 0.01
				if kind == ArrivalPoisson {
					tol = 0.03
				}
				// One arrival of slack for the window's edges.
				if math.Abs(got-want) > math.Max(tol*want, 1) {
					t.Errorf("%d arrivals in [%s, %s), ∫rate = %.1f (off by %.2f%%)", int(got), tc.from, tc.to, want, 100*(got-want)/want)
				}
			})
		}
	}
}

func TestArrivalsConstantSpacing(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newArrivals(mustRate(t, "1000:1s,250"), ArrivalConstant, start, 1)
	var prev time.Time
	for i := range 2000 {
		at := g.next()
		switch {
		case i == 0:
			if !at.Equal(start) {
				t.Fatalf("first arrival at %s, want the start", at.Sub(start))
			}
		case at.Sub(start) <= time.Second:
			if d := at.Sub(prev); d != time.Millisecond {
				t.Fatalf("arrival %d: gap %s at 1000/s", i, d)
			}
		case at.Sub(start) > time.Second+4*time.Millisecond:
			if d := at.Sub(prev); d != 4*time.Millisecond {
				t.Fatalf("arrival %d: gap %s at 250/s", i, d)
			}
		}
		prev = at
	}
}

func TestArrivalsSameSeedSameTimes(t *testing.T) {
	start := time.Now()
	s := mustRate(t, "100..900:10s")
	a, b := newArrivals(s, ArrivalPoisson, start, 7), newArrivals(s, ArrivalPoisson, start, 7)
	c := newArrivals(s, ArrivalPoisson, start, 8)
	differ := false
	for range 1000 {
		x, y, z := a.next(), b.next(), c.next()
		if !x.Equal(y) {
			t.Fatalf("same seed, different arrivals: %s, %s", x, y)
		}
		differ = differ || !x.Equal(z)
	}
	if !differ {
		t.Fatal("seeds 7 and 8 gave the same arrivals")
	}
}
