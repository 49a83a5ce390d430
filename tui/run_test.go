package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
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
	wmu.Lock()
	width = 200
	wmu.Unlock()
	keysW.Write([]byte("q")) // the queries view, not quit: this source has no digests
	waitFor("[q:queries]")
	waitFor("waiting for the first digest read...")
	keysW.Write([]byte("\x04")) // Ctrl-D
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-D did not quit")
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

// viewSource is a fakeSource that implements ViewSetter: it records the
// views set and, in the queries view, returns digests read anew every
// second poll.
type viewSource struct {
	fakeSource
	vmu   sync.Mutex
	views []View
	rows  []int
}

func (s *viewSource) SetView(v View, rows int) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	s.views = append(s.views, v)
	s.rows = append(s.rows, rows)
}

func (s *viewSource) Poll(ctx context.Context) (*Frame, error) {
	f, err := s.fakeSource.Poll(ctx)
	if err != nil {
		return nil, err
	}
	s.vmu.Lock()
	inQueries := len(s.views) > 0 && s.views[len(s.views)-1] == ViewQueries
	s.vmu.Unlock()
	if inQueries {
		q := queriesFrame().Queries
		s.mu.Lock()
		n := s.polls
		s.mu.Unlock()
		q.At = fixedTime.Add(time.Duration(n/2) * time.Second) // new every second poll
		f.Queries = q
	}
	return f, nil
}

func (s *viewSource) seen() ([]View, []int) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	return append([]View(nil), s.views...), append([]int(nil), s.rows...)
}

// TestRunViewSwitch: Run tells the source the view before the first poll
// and on every switch (not on a key for the view shown), with the rows the
// screen has room for; the q view shows the digests.
func TestRunViewSwitch(t *testing.T) {
	keysR, keysW := io.Pipe()
	defer keysW.Close()
	out := &syncBuffer{}
	src := &viewSource{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), src, Options{
			Interval: 20 * time.Millisecond, Out: out, Interactive: true, Keys: keysR,
			Size: func() (int, int) { return 160, 40 },
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
	keysW.Write([]byte("q"))
	waitFor("[q:queries]")
	waitFor("TOP DIGESTS by load over the last 5.0s")
	waitFor("SELECT * FROM `orders` WHERE `id` = ?")
	keysW.Write([]byte("Q")) // the view shown: not set again
	keysW.Write([]byte("o"))
	waitFor("[o:overview]")
	keysW.Write([]byte("\x03"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C did not quit")
	}
	views, rows := src.seen()
	if want := []View{ViewOverview, ViewQueries, ViewOverview}; !slices.Equal(views, want) {
		t.Errorf("views set %v, want %v", views, want)
	}
	for _, r := range rows {
		if r != 34 {
			t.Errorf("rows %v, want 34 (40 lines less 6)", rows)
			break
		}
	}
}

// TestRunQueryLines: in the q view, output that is not a terminal is a
// line per digest at every new read of the digests, each a refresh.
func TestRunQueryLines(t *testing.T) {
	var out bytes.Buffer
	src := &viewSource{}
	if err := Run(context.Background(), src, Options{Interval: 10 * time.Millisecond, Count: 2, View: ViewQueries, Out: &out}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// Two new reads × (2 digest tables, 1 note, 4 digests, the instance
	// that does not answer); polls 2 and 4, the first a warmup.
	if len(lines) != 2*8 || strings.Count(out.String(), " calls_per_s=") != 8 || strings.Count(out.String(), "connection refused") != 2 ||
		strings.Contains(out.String(), " qps=") {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	if !strings.HasPrefix(lines[0], "2026-11-21T09:48:21.000Z instance=127.0.0.1:16501 digests=2000") ||
		!strings.HasPrefix(lines[8], "2026-11-21T09:48:22.000Z instance=127.0.0.1:16501 digests=2000") {
		t.Errorf("lines:\n%s", out.String())
	}
}
