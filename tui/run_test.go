package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// fakeSource returns directFrame, the first one as a warmup, and counts polls.
type fakeSource struct {
	mu     sync.Mutex
	polls  int
	err    func(n int) error // error of poll n (1-based), nil: none
	panics bool
	rows   []Row
}

func (s *fakeSource) Describe() string { return "fake" }
func (s *fakeSource) Close() error     { return nil }
func (s *fakeSource) Poll(ctx context.Context) (*Frame, error) {
	s.mu.Lock()
	s.polls++
	n := s.polls
	s.mu.Unlock()
	if s.panics {
		panic("source bug")
	}
	if s.err != nil {
		if err := s.err(n); err != nil {
			return nil, err
		}
	}
	f := directFrame()
	if s.rows != nil {
		f.Rows = s.rows
	}
	f.Time = fixedTime.Add(time.Duration(n) * time.Second)
	f.Warmup = n == 1
	return f, nil
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestRunLinesCount(t *testing.T) {
	var out bytes.Buffer
	src := &fakeSource{}
	err := Run(context.Background(), src, Options{Interval: 10 * time.Millisecond, Count: 2, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2*4 {
		t.Fatalf("%d lines, want 8 (2 refreshes × 4 instances, the warmup read not printed):\n%s", len(lines), out.String())
	}
	if src.polls != 3 {
		t.Errorf("%d polls, want 3", src.polls)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("ANSI escapes in line output")
	}
	if !strings.HasPrefix(lines[0], "2026-11-21T09:48:22.000Z instance=127.0.0.1:16501 role=primary qps=152.4") ||
		!strings.HasPrefix(lines[4], "2026-11-21T09:48:23.000Z instance=127.0.0.1:16501") {
		t.Errorf("lines:\n%s", out.String())
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, &fakeSource{}, Options{Interval: 10 * time.Millisecond, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n < 4 || n%4 != 0 {
		t.Errorf("%d lines after an interrupt", n)
	}
}

func TestRunFirstReadFails(t *testing.T) {
	src := &fakeSource{err: func(int) error { return dbpilot.Errorf(dbpilot.EUNAVAIL, "top: GET /api/clusters: connection refused") }}
	err := Run(context.Background(), src, Options{Interval: 10 * time.Millisecond, Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
	src = &fakeSource{rows: []Row{{Instance: "h:1", Err: "mysql: connect on h:1: connection refused"}}}
	err = Run(context.Background(), src, Options{Interval: 10 * time.Millisecond, Out: io.Discard})
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "connect on h:1") {
		t.Fatalf("all instances down: err = %v", err)
	}
}

func TestRunLaterFailureGoesOn(t *testing.T) {
	var out bytes.Buffer
	src := &fakeSource{err: func(n int) error {
		if n == 2 {
			return errors.New("GET /api/clusters: timed out")
		}
		return nil
	}}
	if err := Run(context.Background(), src, Options{Interval: 10 * time.Millisecond, Count: 1, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `error="GET /api/clusters: timed out"`) || strings.Count(out.String(), "instance=") != 4 {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestRunPanicInSourceIsAnError(t *testing.T) {
	err := Run(context.Background(), &fakeSource{panics: true}, Options{Interval: 10 * time.Millisecond, Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "panic: source bug") {
		t.Fatalf("err = %v", err)
	}
}

// TestRunInteractiveKeys drives the interactive loop with key presses and
// checks the screens drawn.
func TestRunInteractiveKeys(t *testing.T) {
	keysR, keysW := io.Pipe()
	out := &syncBuffer{}
	done := make(chan error, 1)
	resize := make(chan struct{})
	width := 200
	var wmu sync.Mutex
	go func() {
		done <- Run(context.Background(), &fakeSource{}, Options{
			Interval: 20 * time.Millisecond, Out: out, Interactive: true, Keys: keysR, Resize: resize,
			Size: func() (int, int) { wmu.Lock(); defer wmu.Unlock(); return width, 40 },
		})
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				s := out.String()
				t.Fatalf("no %q on screen; last output:\n%q", what, s[max(0, len(s)-1500):])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("ROWS_W/s")
	if !strings.HasPrefix(out.String(), "\x1b[H") || !strings.Contains(out.String(), "\x1b[K\r\n") {
		t.Errorf("screen not drawn with home and line clears: %q", out.String()[:40])
	}
	keysW.Write([]byte("i"))
	waitFor("PEND_FSYNC")
	keysW.Write([]byte("r"))
	waitFor("RELAY_SPACE")
	keysW.Write([]byte("w"))
	waitFor("WSREP_STATE")
	wmu.Lock()
	width = 30
	wmu.Unlock()
	resize <- struct{}{}
	waitFor("\x1b[Hdbpilot top   o:overview   i:i\x1b[K") // cut to the new width
	keysW.Write([]byte("x"))                              // ignored
	keysW.Write([]byte("q"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not quit")
	}
	keysW.Close()
}

func TestRunInteractiveCtrlC(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), &fakeSource{}, Options{Interval: time.Hour, Out: io.Discard, Interactive: true,
			Keys: strings.NewReader("\x03")})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C did not quit")
	}
}
