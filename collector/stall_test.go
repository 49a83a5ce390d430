package collector

import (
	"context"
	"testing"
	"time"
)

// While a Hold is in force no run starts; ticks are skipped; after
// release, runs go on. A hold never released ends after its max.
func TestHold(t *testing.T) {
	r, sink := newTestRunner(t, &runnerFakeDialer{}, Config{Interval: map[string]time.Duration{"c": 20 * time.Millisecond}},
		runnerFunc{"c", time.Second, runnerQuery})
	release := Hold(time.Minute)
	r.Start(context.Background())
	runnerWait(t, 5*time.Second, "ticks skipped", func() bool { return r.Stats()[0].Skipped >= 3 })
	if n := len(sink.of("c")); n != 0 || r.Stats()[0].Runs != 0 {
		t.Fatalf("%d batches, %d runs during a hold", n, r.Stats()[0].Runs)
	}
	release()
	release() // twice is once
	runnerWait(t, 5*time.Second, "runs after the release", func() bool { return len(sink.of("c")) >= 2 })
	if held() {
		t.Fatal("held after release")
	}
	Hold(50 * time.Millisecond) // never released
	runnerWait(t, 5*time.Second, "the hold to end by itself", func() bool { return !held() })
}
