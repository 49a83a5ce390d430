package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestParseDuration: a duration flag takes a Go duration or a bare number
// of seconds.
func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"1", time.Second},
		{"1s", time.Second},
		{"0.5", 500 * time.Millisecond},
		{" 2 ", 2 * time.Second},
		{"0", 0},
		{"1m30s", 90 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"1.5h", 90 * time.Minute},
		{"1e1", 10 * time.Second},
	}
	for _, tt := range good {
		got, err := parseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "1x", "s", "NaN", "Inf", "0x10", "1e300", "1 s"} {
		if d, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %s, want an error", in, d)
		}
	}
}

// TestDurationFlags: every duration flag of every command takes a bare
// number as seconds (they all use durationValue, not pflag's own).
func TestDurationFlags(t *testing.T) {
	a := &app{}
	var n int
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			n++
			if _, ok := f.Value.(*durationValue); !ok {
				t.Errorf("%s --%s: %T, want *durationValue (a bare number is seconds)", c.CommandPath(), f.Name, f.Value)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
	if n < 20 {
		t.Errorf("found %d duration flags, expected the CLI's (at least 20)", n)
	}
	var d time.Duration
	v := durationFlag(&d, 5*time.Second)
	if d != 5*time.Second || v.String() != "5s" {
		t.Errorf("default: %s, %q", d, v.String())
	}
	if err := v.Set("1"); err != nil || d != time.Second {
		t.Errorf("Set(1): %s, %v", d, err)
	}
	if err := v.Set("1x"); err == nil || !strings.Contains(err.Error(), "give seconds") {
		t.Errorf("Set(1x): %v", err)
	}
	if (*durationValue)(new(time.Duration)).String() != "0" {
		t.Error("zero does not print as 0 (help would show a zero default)")
	}
}
