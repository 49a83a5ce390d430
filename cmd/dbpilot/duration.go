package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// durationValue is the value of every duration flag: a Go duration ("1s",
// "500ms", "1m30s") or a bare number, which is seconds ("1" is 1s, "0.5"
// is 500ms).
type durationValue time.Duration

// durationFlag sets *p to def and returns the flag value that writes *p:
// f.Var(durationFlag(&x, time.Second), "name", "usage").
func durationFlag(p *time.Duration, def time.Duration) *durationValue {
	*p = def
	return (*durationValue)(p)
}

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) Type() string { return "duration" }

// String is the duration as Go prints it; zero is "0" (so that help leaves
// out a zero default, as for pflag's own durations).
func (d *durationValue) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

// parseDuration reads a duration flag's value (see durationValue).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP") {
		secs := f * float64(time.Second)
		if math.IsNaN(f) || math.IsInf(f, 0) || secs > math.MaxInt64 || secs < math.MinInt64 {
			return 0, fmt.Errorf("%q is out of range for a duration", s)
		}
		return time.Duration(math.Round(secs)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: give seconds (2, 0.5) or a number with a unit (2s, 500ms, 1m30s)", s)
	}
	return d, nil
}
