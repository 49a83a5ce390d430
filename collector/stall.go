package collector

import (
	"sync"
	"sync/atomic"
	"time"
)

// holds counts the holds in force (Hold).
var holds atomic.Int32

// Hold keeps collector runs of the process from starting until release is
// called, or for at most max: while a primary's failure is confirmed, its
// few statements do not wait for the cores behind a second's worth of
// collection. A tick that comes during a hold is skipped (counted in
// dbpilot_collector_skipped_total); runs going on finish.
func Hold(max time.Duration) (release func()) {
	holds.Add(1)
	var once sync.Once
	end := func() { once.Do(func() { holds.Add(-1) }) }
	t := time.AfterFunc(max, end)
	return func() {
		t.Stop()
		end()
	}
}

// held reports whether a Hold is in force.
func held() bool { return holds.Load() > 0 }
