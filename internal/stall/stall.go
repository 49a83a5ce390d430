// Package stall measures how late the process' goroutines run: a timeout
// proves a server silent only if the process was running while it waited.
package stall

import (
	"sync"
	"time"
)

// A timeout proves a server silent only if serve itself was running while
// it waited. On a machine whose cores are taken (serve's own collection at
// its limit, other processes), serve's goroutines wait to run: a handshake
// or a statement that the server answered in a millisecond is read after
// the deadline, and a run that says "timed out" then says nothing of the
// server. The stall meter measures that wait: a goroutine asks to wake
// every stallTick and notes how late it ran. Work that timed out while the
// process was stalled for a good part of its time (Stalled) says nothing
// of the server: a collector run counts as lagging, an inspection of the
// crawl as not made.
const (
	stallTick = 50 * time.Millisecond
	// stallKeep is how much history the meter keeps (ring of stallTick
	// wake-ups).
	stallKeep = 256
)

// stallMeter notes how late its wake-ups run. It runs while it has users
// (Acquire, Release), so that a process that does not watch servers has no
// such goroutine.
type stallMeter struct {
	mu    sync.Mutex
	users int
	stop  chan struct{}
	done  chan struct{}
	// ring of wake-ups: when each was due, and how late it ran; next is
	// when the pending one is due.
	next time.Time
	due  [stallKeep]time.Time
	late [stallKeep]time.Duration
	n    int
}

var stalls = &stallMeter{}

// acquire starts the meter for one more user.
func (m *stallMeter) acquire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users++
	if m.users == 1 {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.run(m.stop, m.done)
	}
}

// release stops the meter after its last user.
func (m *stallMeter) release() {
	m.mu.Lock()
	m.users--
	var stop, done chan struct{}
	if m.users == 0 {
		stop, done = m.stop, m.done
	}
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (m *stallMeter) run(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(stallTick)
	defer t.Stop()
	m.setNext(time.Now().Add(stallTick))
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		m.note(time.Now())
		t.Reset(stallTick)
	}
}

func (m *stallMeter) setNext(at time.Time) {
	m.mu.Lock()
	m.next = at
	m.mu.Unlock()
}

// note records the wake-up that was due at m.next and ran at now.
func (m *stallMeter) note(now time.Time) {
	m.mu.Lock()
	i := m.n % stallKeep
	m.due[i], m.late[i] = m.next, max(now.Sub(m.next), 0)
	m.n++
	m.next = now.Add(stallTick)
	m.mu.Unlock()
}

// stalledDuring reports how long serve could not run, at most, during
// [from, to]: how late the wake-ups that ran in the span ran, and how
// late the one pending is at to. A wake-up late by d means the process,
// or the machine, ran nothing of serve's for about d.
func (m *stallMeter) StalledDuring(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users == 0 || m.next.IsZero() {
		return 0
	}
	worst := max(to.Sub(m.next), 0) // the wake-up pending now
	for k := 0; k < min(m.n, stallKeep); k++ {
		i := (m.n - 1 - k) % stallKeep
		ran := m.due[i].Add(m.late[i])
		if ran.Before(from) {
			break // the older ones ran before the span too
		}
		if m.due[i].Before(to) {
			worst = max(worst, m.late[i])
		}
	}
	return worst
}

// stalledShare: work must have been stalled for 1/stalledShare of its
// timeout for the timeout to count as the process' own, not the server's.
const stalledShare = 4

// Stalled reports whether work that started at start and timed out after
// timeout did so while the process was stalled for a quarter of the
// timeout or more: then the timeout says nothing of the server. False
// while no one runs the meter (Acquire).
func Stalled(start time.Time, timeout time.Duration) bool {
	return stalls.StalledDuring(start, time.Now()) >= timeout/stalledShare
}

// Acquire starts the process' stall meter for one more user (a Runner, a
// serve); Release stops it after the last.
func Acquire() { stalls.acquire() }

// Release undoes one Acquire.
func Release() { stalls.release() }
