package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestRelaxGC checks that dump's garbage collector settings apply, leave
// what GOGC and GOMEMLIMIT set alone, and are undone afterwards.
func TestRelaxGC(t *testing.T) {
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	memLimit := func() int64 { return debug.SetMemoryLimit(-1) }
	prevPercent, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})

	tests := []struct {
		name, gogc, gomemlimit string
		percent                int
		limit                  int64
	}{
		{"defaults", "", "", dumpGCPercent, dumpMemoryLimit},
		{"GOGC set", "200", "", 100, dumpMemoryLimit},
		{"GOMEMLIMIT set", "", "1GiB", dumpGCPercent, math.MaxInt64},
		{"both set", "off", "1GiB", 100, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			restore := relaxGC()
			if got := gcPercent(); got != tc.percent {
				t.Errorf("GC percent %d, want %d", got, tc.percent)
			}
			if got := memLimit(); got != tc.limit {
				t.Errorf("memory limit %d, want %d", got, tc.limit)
			}
			restore()
			if got, got2 := gcPercent(), memLimit(); got != 100 || got2 != math.MaxInt64 {
				t.Errorf("after restore: GC percent %d, memory limit %d; want 100, no limit", got, got2)
			}
		})
	}
}
