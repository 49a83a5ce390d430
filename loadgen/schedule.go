package loadgen

// Rate schedules (--rate, --ramp) and the arrival generator that turns a
// schedule into intended start times.
//
// Arrivals follow the schedule's integral, not its instantaneous rate: the
// k-th constant arrival is where ∫rate reaches k, and Poisson arrivals are
// the same time warp applied to exponential gaps of mean 1 (an
// inhomogeneous Poisson process by time rescaling). So a step from 1/s to
// 1000/s starts at 1000/s on the step, not one second later, and a ramp
// yields ∫rate transactions.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Step is one part of a rate schedule: Rate transactions/s, or a linear
// ramp from Rate to RampTo, for For.
type Step struct {
	Rate   float64       // transactions/s (at the step's start, for a ramp)
	RampTo float64       // > 0: the rate at the step's end, linearly from Rate; 0: constant
	For    time.Duration // 0: until the end of the run (the last step only)
}

// Schedule is the rate of an open-loop run over time. After its last step
// the last rate holds (a run longer than its schedule goes on at the rate
// it reached).
type Schedule struct {
	Steps []Step
}

// ParseRate parses --rate: a rate ("1000": constant for the whole run) or
// steps "RATE:DURATION,..." ("1000:60s,5000:60s"); the last step may omit
// its duration to hold until the end of the run. A step may be a ramp
// FROM..TO:DURATION as in --ramp.
func ParseRate(s string) (Schedule, error) {
	return parseSchedule("--rate", s, false)
}

// ParseRamp parses --ramp: a linear ramp "FROM..TO:DURATION"
// ("100..10000:5m"), or several separated by commas.
func ParseRamp(s string) (Schedule, error) {
	return parseSchedule("--ramp", s, true)
}

func parseSchedule(flag, s string, ramp bool) (Schedule, error) {
	bad := func(format string, args ...any) (Schedule, error) {
		return Schedule{}, fmt.Errorf("bench: %s %q: %s", flag, s, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(s) == "" {
		if ramp {
			return bad("no ramp given (FROM..TO:DURATION, e.g. 100..10000:5m)")
		}
		return bad("no rate given (RATE or RATE:DURATION,..., e.g. 1000 or 1000:60s,5000:60s)")
	}
	parts := strings.Split(s, ",")
	var sched Schedule
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return bad("step %d is empty", i+1)
		}
		rates, dur, hasDur := strings.Cut(p, ":")
		var st Step
		from, to, isRamp := strings.Cut(rates, "..")
		switch {
		case ramp && !isRamp:
			return bad("%q is not a ramp (FROM..TO:DURATION)", p)
		case isRamp:
			var err error
			if st.Rate, err = parseRateValue(from); err != nil {
				return bad("%v", err)
			}
			if st.RampTo, err = parseRateValue(to); err != nil {
				return bad("%v", err)
			}
			if !hasDur {
				return bad("ramp %q needs a duration (FROM..TO:DURATION)", p)
			}
		default:
			var err error
			if st.Rate, err = parseRateValue(rates); err != nil {
				return bad("%v", err)
			}
			if !hasDur && i < len(parts)-1 {
				return bad("step %q needs a duration (RATE:DURATION); only the last step may run until the end", p)
			}
		}
		if hasDur {
			dur = strings.TrimSpace(dur)
			d, err := time.ParseDuration(dur)
			if err != nil {
				return bad("%q is not a duration", dur)
			}
			if d <= 0 {
				return bad("duration %q must be above 0", dur)
			}
			st.For = d
		}
		sched.Steps = append(sched.Steps, st)
	}
	return sched, nil
}

// parseRateValue parses one rate: a positive, finite number.
func parseRateValue(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("a rate is missing")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a rate (transactions per second)", s)
	}
	if v <= 0 {
		return 0, fmt.Errorf("rate %q must be above 0", s)
	}
	return v, nil
}

// endRate is the rate at the end of step st.
func (st Step) endRate() float64 {
	if st.RampTo > 0 && st.For > 0 {
		return st.RampTo
	}
	return st.Rate
}

// rateAt is the rate u seconds into the step.
func (st Step) rateAt(u float64) float64 {
	if st.RampTo <= 0 || st.For <= 0 {
		return st.Rate
	}
	return st.Rate + (st.RampTo-st.Rate)*u/st.For.Seconds()
}

// area is ∫rate over the step's first u seconds: the transactions due.
func (st Step) area(u float64) float64 {
	return (st.Rate + st.rateAt(u)) / 2 * u
}

// solve returns u ≥ 0 such that area(u) = w, for w within the step (or
// anywhere for a step that lasts until the end).
func (st Step) solve(w float64) float64 {
	r0 := st.Rate
	if w <= 0 {
		return 0
	}
	if st.RampTo <= 0 || st.For <= 0 || st.RampTo == st.Rate {
		if r0 <= 0 {
			return math.Inf(1)
		}
		return w / r0
	}
	k := (st.RampTo - st.Rate) / st.For.Seconds()
	// r0 u + k u²/2 = w, in the form that is stable for k near 0.
	disc := r0*r0 + 2*k*w
	if disc < 0 {
		disc = 0
	}
	return 2 * w / (r0 + math.Sqrt(disc))
}

// segments returns the steps with a final open-ended step holding the last
// rate (none when the last step already runs until the end).
func (s Schedule) segments() []Step {
	if len(s.Steps) == 0 {
		return []Step{{}}
	}
	last := s.Steps[len(s.Steps)-1]
	if last.For <= 0 {
		return s.Steps
	}
	segs := make([]Step, 0, len(s.Steps)+1)
	segs = append(segs, s.Steps...)
	return append(segs, Step{Rate: last.endRate()})
}

// RateAt is the scheduled rate (transactions/s) at elapsed time into the
// run.
func (s Schedule) RateAt(elapsed time.Duration) float64 {
	u := elapsed.Seconds()
	for _, st := range s.segments() {
		if st.For <= 0 || u < st.For.Seconds() {
			return st.rateAt(max(u, 0))
		}
		u -= st.For.Seconds()
	}
	return 0
}

// Duration is the sum of the steps, 0 when a step runs until the end of
// the run (the caller's --duration decides).
func (s Schedule) Duration() time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		if st.For <= 0 {
			return 0
		}
		d += st.For
	}
	return d
}

// Count is ∫rate over [from, to]: the transactions the schedule asks for
// in that window.
func (s Schedule) Count(from, to time.Duration) float64 {
	return s.integral(to.Seconds()) - s.integral(from.Seconds())
}

// integral is ∫rate over [0, t] seconds.
func (s Schedule) integral(t float64) float64 {
	if t <= 0 {
		return 0
	}
	var sum float64
	for _, st := range s.segments() {
		if st.For <= 0 || t < st.For.Seconds() {
			return sum + st.area(t)
		}
		sum += st.area(st.For.Seconds())
		t -= st.For.Seconds()
	}
	return sum
}

// Mean is the mean scheduled rate over a run of total (the schedule's own
// Duration when total is 0; the first rate when neither is known).
func (s Schedule) Mean(total time.Duration) float64 {
	if total <= 0 {
		total = s.Duration()
	}
	if total <= 0 {
		return s.RateAt(0)
	}
	return s.Count(0, total) / total.Seconds()
}

// String writes the schedule as --rate would take it.
func (s Schedule) String() string {
	var b strings.Builder
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(st.Rate, 'f', -1, 64))
		if st.RampTo > 0 {
			b.WriteString("..")
			b.WriteString(strconv.FormatFloat(st.RampTo, 'f', -1, 64))
		}
		if st.For > 0 {
			b.WriteByte(':')
			b.WriteString(st.For.String())
		}
	}
	return b.String()
}

// arrivals generates the intended start times of an open-loop run. Two
// generators made with the same arguments yield the same times: the runner
// keeps one for when transactions fall due and one for the order in which
// the backlog is started, so that the backlog is a count, not a queue.
type arrivals struct {
	segs    []Step
	start   time.Time
	poisson bool
	rng     *rand.Rand

	lambda    float64 // ∫rate at the last arrival
	seg       int     // the segment of the last arrival
	segStart  float64 // its start, seconds into the run
	segLambda float64 // ∫rate at its start
	first     bool
}

// farFuture is where arrivals go when the schedule's rate is 0 for ever.
const farFuture = 100 * 365 * 24 * time.Hour

// newArrivals returns the generator of intended start times for schedule s
// from start: constant arrivals (the first at start, then 1/rate apart) or
// Poisson arrivals (exponential gaps drawn from seed).
func newArrivals(s Schedule, a Arrival, start time.Time, seed int64) *arrivals {
	g := &arrivals{segs: s.segments(), start: start, poisson: a == ArrivalPoisson, first: true}
	if g.poisson {
		g.rng = rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	}
	return g
}

// next returns the next intended start time.
func (g *arrivals) next() time.Time {
	gap := 1.0
	if g.poisson {
		gap = g.rng.ExpFloat64()
	} else if g.first {
		gap = 0
	}
	g.first = false
	g.lambda += gap
	for g.seg < len(g.segs)-1 {
		st := g.segs[g.seg]
		if st.For <= 0 {
			break
		}
		area := st.area(st.For.Seconds())
		if g.segLambda+area > g.lambda {
			break
		}
		g.segLambda += area
		g.segStart += st.For.Seconds()
		g.seg++
	}
	u := g.segs[g.seg].solve(g.lambda - g.segLambda)
	at := g.segStart + u
	if math.IsInf(at, 1) || at > farFuture.Seconds() {
		return g.start.Add(farFuture)
	}
	return g.start.Add(time.Duration(math.Round(at * float64(time.Second))))
}
