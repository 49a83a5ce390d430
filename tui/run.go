package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// DefaultInterval is the refresh interval.
const DefaultInterval = time.Second

// Options configure Run.
type Options struct {
	// Interval between refreshes (DefaultInterval when zero).
	Interval time.Duration
	// Count stops after this many refreshes (0: until the context ends or
	// the user quits). A first read, whose rates are unknown, does not count.
	Count int
	// View is the view shown first.
	View View

	// Out receives the output.
	Out io.Writer
	// Interactive redraws the screen (ANSI) instead of printing lines.
	Interactive bool
	// Keys, when set with Interactive, is read for key presses: o i r w q
	// switch views; Ctrl-C and Ctrl-D quit. The goroutine reading it ends
	// when it returns an error (EOF).
	Keys io.Reader
	// Size returns the terminal's width and height (nil: unlimited).
	Size func() (width, height int)
	// Resize signals that the terminal changed size.
	Resize <-chan struct{}
	// Color highlights the active view.
	Color bool
}

// polled is one Poll's outcome.
type polled struct {
	f   *Frame
	err error
}

// Run polls src every interval and shows each refresh until ctx ends, the
// user quits or Count refreshes were shown. Without Interactive it prints
// Lines for every refresh after the first read (whose rates are unknown);
// in the queries view, QueryLines for every new read of the digests
// instead, each counting as a refresh.
//
// A src that implements ViewSetter is told the view before the first poll
// and on every change.
//
// It fails when the first read fails entirely: the API does not answer, or
// no instance could be read. Later failures are shown and polling goes on.
func Run(ctx context.Context, src Source, o Options) error {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	r := &runner{o: o, view: o.View, first: true}
	r.vs, r.viewSetter = src.(ViewSetter)
	r.setView()

	frames := make(chan polled)
	done := make(chan struct{})
	go func() {
		defer close(done)
		poller(ctx, src, o.Interval, frames)
	}()
	defer func() {
		cancel()
		<-done
	}()

	var keys chan byte
	if o.Interactive && o.Keys != nil {
		keys = make(chan byte, 16)
		go readKeys(ctx, o.Keys, keys)
	}

	if err := r.draw(); err != nil {
		return err
	}
	for {
		var end bool
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-o.Resize:
			r.setView()
			err = r.draw()
		case k, ok := <-keys:
			if !ok {
				keys = nil // input closed: keep showing, quit by signal
				continue
			}
			end, err = r.key(k)
		case p := <-frames:
			end, err = r.frame(p)
		}
		if end || err != nil {
			return err
		}
	}
}

// runner is the state of one Run: the view shown and the last frame.
type runner struct {
	o          Options
	vs         ViewSetter
	viewSetter bool // the source is a ViewSetter (vs)

	view      View
	last      *Frame
	errMsg    string
	shown     int       // refreshes shown, towards o.Count
	first     bool      // no frame read yet
	queriesAt time.Time // the digests read last printed (line output)
}

// setView tells a ViewSetter source the view and the rows it has room for.
func (r *runner) setView() {
	if !r.viewSetter {
		return
	}
	rows := 0
	if r.o.Interactive && r.o.Size != nil {
		// The screen less the header, notes and table title lines.
		if _, h := r.o.Size(); h > 0 {
			rows = max(h-6, 1)
		}
	}
	r.vs.SetView(r.view, rows)
}

// draw redraws the screen (interactive only).
func (r *runner) draw() error {
	if !r.o.Interactive {
		return nil
	}
	s := Screen{Frame: r.last, View: r.view, Color: r.o.Color, Err: r.errMsg}
	if r.o.Size != nil {
		s.Width, s.Height = r.o.Size()
	}
	return writeScreen(r.o.Out, Render(s))
}

// key acts on a key pressed: Ctrl-C and Ctrl-D end the run, a view's key
// shows that view.
func (r *runner) key(k byte) (end bool, err error) {
	switch k {
	case 3, 4: // Ctrl-C, Ctrl-D
		return true, nil
	}
	if v, ok := viewForKey(toLower(k)); ok {
		if v != r.view {
			r.view = v
			r.setView()
		}
		return false, r.draw()
	}
	return false, nil
}

// frame shows a poll's result; the run ends when the first read or a
// panic fails, or Count refreshes were shown.
func (r *runner) frame(p polled) (end bool, err error) {
	if p.err != nil {
		var perr *panicError
		if r.first || errors.As(p.err, &perr) {
			return true, p.err
		}
		r.errMsg = oneLine(p.err.Error())
		if !r.o.Interactive {
			fmt.Fprintf(r.o.Out, "%s error=%q\n", time.Now().Format("2006-01-02T15:04:05.000Z07:00"), r.errMsg)
		}
		return false, r.draw()
	}
	if r.first {
		if err := allFailed(p.f); err != nil {
			return true, err
		}
		r.first = false
	}
	r.last, r.errMsg = p.f, ""
	counts := !p.f.Warmup
	if !r.o.Interactive {
		var lines []string
		lines, counts = r.lines(p.f)
		for _, l := range lines {
			if _, err := fmt.Fprintln(r.o.Out, l); err != nil {
				return true, err
			}
		}
	}
	if err := r.draw(); err != nil {
		return true, err
	}
	if counts {
		r.shown++
		if r.o.Count > 0 && r.shown >= r.o.Count {
			return true, nil
		}
	}
	return false, nil
}

// lines are the line output of frame f, and whether it counts as a refresh
// shown.
func (r *runner) lines(f *Frame) ([]string, bool) {
	switch {
	case r.view == ViewQueries && r.viewSetter:
		// A line per digest when they were read again; the instance
		// lines of a refresh in between would repeat the same digests.
		q := f.Queries
		if q == nil || f.Warmup || !q.At.After(r.queriesAt) || q.Span <= 0 && len(q.Notes) == 0 {
			return nil, false
		}
		r.queriesAt = q.At
		lines := QueryLines(q)
		for _, row := range f.Rows {
			if row.Err != "" {
				lines = append(lines, Lines(&Frame{Time: f.Time, Rows: []Row{row}})...)
			}
		}
		return lines, true
	case !f.Warmup:
		return Lines(f), true
	}
	return nil, !f.Warmup
}

// allFailed returns the first row's error when no row could be read.
func allFailed(f *Frame) error {
	if len(f.Rows) == 0 {
		return nil
	}
	for _, r := range f.Rows {
		if r.Err == "" {
			return nil
		}
	}
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", f.Rows[0].Err)
}

// poller polls at once and then every interval, sending each outcome, until
// ctx ends. A poll is bounded by twice the interval (at least 2 s). A panic
// in the source is sent as an error, so that the terminal is restored by
// the goroutine that owns it.
func poller(ctx context.Context, src Source, interval time.Duration, out chan<- polled) {
	timeout := max(2*interval, 2*time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p := pollOnce(ctx, src, timeout)
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func pollOnce(ctx context.Context, src Source, timeout time.Duration) (p polled) {
	defer func() {
		if r := recover(); r != nil {
			p = polled{err: &panicError{value: r, stack: debug.Stack()}}
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f, err := src.Poll(pctx)
	return polled{f: f, err: err}
}

type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.value, e.stack) }

// readKeys sends the bytes read from r until r fails or ctx ends (a Read
// that blocks keeps it until the next byte or the end of the process).
func readKeys(ctx context.Context, r io.Reader, out chan<- byte) {
	defer close(out)
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
		}
		if err != nil || ctx.Err() != nil {
			return
		}
	}
}

func toLower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// writeScreen redraws: cursor home, every line cleared to its end, the rest
// of the screen cleared. Lines end in "\r\n" (raw mode does not add the
// carriage return) and the last one in none, so the screen never scrolls.
func writeScreen(w io.Writer, text string) error {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	b.WriteString("\x1b[H")
	for i, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K")
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	b.WriteString("\x1b[J")
	_, err := io.WriteString(w, b.String())
	return err
}
