package stall

import (
	"testing"
	"time"
)

// The meter answers how long serve could not run during a span: the
// lateness of the wake-ups that ran in it, and of the one pending at its
// end.
func TestStallMeter(t *testing.T) {
	m := &stallMeter{users: 1}
	t0 := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	m.next = t0
	at := t0
	// Ten wake-ups on time, one 300 ms late, ten on time.
	for i := 0; i < 21; i++ {
		late := time.Duration(0)
		if i == 10 {
			late = 300 * time.Millisecond
		}
		at = m.next.Add(late)
		m.note(at)
	}
	stallAt := t0.Add(10 * stallTick)
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     time.Duration
	}{
		{"before the stall", t0, t0.Add(5 * stallTick), 0},
		{"over the stall", stallAt.Add(-stallTick), stallAt.Add(400 * time.Millisecond), 300 * time.Millisecond},
		{"after the stall", at.Add(-3 * stallTick), at, 0},
		{"pending wake-up 200 ms late", at, m.next.Add(200 * time.Millisecond), 200 * time.Millisecond},
	} {
		if got := m.StalledDuring(c.from, c.to); got != c.want {
			t.Errorf("%s: stalled %v, want %v", c.name, got, c.want)
		}
	}
	if got := (&stallMeter{}).StalledDuring(t0, t0.Add(time.Hour)); got != 0 {
		t.Errorf("a meter nobody runs says stalled %v", got)
	}
}

// A live meter sees a process that does not run: here the test holds the
// meter's lock, which its goroutine needs to note a wake-up, for 300 ms.
func TestStallMeterLive(t *testing.T) {
	stalls.acquire()
	defer stalls.release()
	time.Sleep(3 * stallTick)
	from := time.Now()
	stalls.mu.Lock()
	time.Sleep(300 * time.Millisecond)
	stalls.mu.Unlock()
	time.Sleep(2 * stallTick)
	if got := stalls.StalledDuring(from, time.Now()); got < 150*time.Millisecond {
		t.Errorf("stalled %v over a 300 ms stall", got)
	}
	if !Stalled(from, 400*time.Millisecond) {
		t.Error("a 300 ms stall during a 400 ms timeout does not count as stalled")
	}
}
