// Package browser drives a headless Chromium (Debian's chromium package,
// never a downloaded browser) through the DevTools protocol for the web
// console's tests and benchmark: start it with cleanup, navigate, wait for
// a condition, read the DOM, evaluate JavaScript, drag with real mouse
// events and take screenshots a person can look at.
//
// Tab has methods that return errors (for programs such as the benchmark);
// Page wraps a Tab for tests and fails the test instead.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Window is the browser window size.
const (
	WindowWidth  = 1400
	WindowHeight = 900
)

// ExecPath returns the path of the chromium binary ($DBPILOT_CHROMIUM, else
// chromium, chromium-browser or headless-shell on $PATH).
func ExecPath() (string, error) {
	if p := os.Getenv("DBPILOT_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range []string{"chromium", "chromium-browser", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on $PATH (Debian package chromium; 'make test-deps' installs it)")
}

// Options are the allocator options: headless, no sandbox, no GPU, and no
// background networking (the closed network refuses those connections),
// with the profile in userDataDir.
func Options(execPath, userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(execPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		// Background tabs (the benchmark keeps several open) keep running
		// their timers at full rate, as a person's visible tabs would.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.WindowSize(WindowWidth, WindowHeight),
		chromedp.UserDataDir(userDataDir),
	}
}

// Browser is a running headless Chromium.
type Browser struct {
	ctx    context.Context // the first tab's context
	cancel func()
	pgid   int
	out    *lockedBuffer
	first  sync.Once
	tab    *Tab
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts a headless Chromium with its profile in userDataDir (which
// must exist and stay until Close), with Options and then extra, and opens
// its first tab. Chromium runs
// in its own process group, killed by Close and, should this process die,
// by the kernel (Pdeathsig).
func Start(userDataDir string, extra ...chromedp.ExecAllocatorOption) (*Browser, error) {
	path, err := ExecPath()
	if err != nil {
		return nil, err
	}
	b := &Browser{out: &lockedBuffer{}}
	var mu sync.Mutex
	opts := append(append(Options(path, userDataDir), extra...),
		chromedp.CombinedOutput(b.out),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b.ctx = ctx
	b.cancel = func() {
		cancel()
		acancel()
		mu.Lock()
		defer mu.Unlock()
		if b.pgid > 0 {
			// Renderer and utility processes that outlived the browser.
			syscall.Kill(-b.pgid, syscall.SIGKILL)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	// The first Do starts the browser; its lifetime is bound to ctx, not to
	// the timeout (the timeout only bounds this start).
	start := make(chan error, 1)
	go func() { start <- chromedp.Do(ctx) }()
	select {
	case err = <-start:
	case <-sctx.Done():
		err = fmt.Errorf("chromium did not start within 60 s")
	}
	if err != nil {
		b.cancel()
		return nil, fmt.Errorf("start %s: %w; output: %s", path, err, strings.TrimSpace(b.out.String()))
	}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil {
		if p := c.Browser.Process(); p != nil {
			mu.Lock()
			b.pgid = p.Pid
			mu.Unlock()
		}
	}
	return b, nil
}

// Tab returns the browser's first tab.
func (b *Browser) Tab() *Tab {
	b.first.Do(func() { b.tab = newTab(b.ctx, nil) })
	return b.tab
}

// NewTab opens another tab in the same browser; Close closes it.
func (b *Browser) NewTab() (*Tab, error) {
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, err
	}
	return newTab(ctx, cancel), nil
}

func newTab(ctx context.Context, cancel func()) *Tab {
	t := &Tab{ctx: ctx, cancel: cancel, Timeout: 15 * time.Second}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.mu.Lock()
			if len(t.console) >= 200 {
				t.console = t.console[1:]
			}
			t.console = append(t.console, m.String())
			t.mu.Unlock()
		}
	}()
	return t
}

// Console is what the page wrote to its console (and its uncaught
// exceptions), the last 200 messages.
func (t *Tab) Console() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.console...)
}

// Output is what Chromium printed (for a failure message).
func (b *Browser) Output() string { return b.out.String() }

// PID is the browser process's id.
func (b *Browser) PID() int { return b.pgid }

// Close stops the browser and every process of its group.
func (b *Browser) Close() { b.cancel() }

// Tab is one browser tab. Its methods bound each action by Timeout.
type Tab struct {
	ctx     context.Context
	cancel  func()
	Timeout time.Duration

	mu      sync.Mutex
	console []string
}

// Context is the tab's chromedp context (for actions this package lacks).
func (t *Tab) Context() context.Context { return t.ctx }

// Close closes a tab opened by NewTab.
func (t *Tab) Close() {
	if t.cancel != nil {
		t.cancel()
	}
}

func (t *Tab) do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(t.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Navigate loads url and waits for its load event.
func (t *Tab) Navigate(url string) error {
	if err := t.do(t.Timeout, chromedp.Navigate(url)); err != nil {
		return fmt.Errorf("navigate to %s: %w", url, err)
	}
	return nil
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its JSON value into out (nil: ignore it). undefined decodes as null.
func (t *Tab) Eval(js string, out any) error {
	ctx, cancel := context.WithTimeout(t.ctx, t.Timeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Errorf("evaluate %q: %w", short(js), err)
	}
	if out == nil {
		return nil
	}
	if len(raw) == 0 {
		raw = []byte("null")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("evaluate %q: decode %s: %w", short(js), raw, err)
	}
	return nil
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// WaitJS polls the expression every 50 ms until it is truthy, and returns
// an error naming it when timeout passes first.
func (t *Tab) WaitJS(js string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var ok bool
		err := t.Eval("!!("+js+")", &ok)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("not true within %s: %s (last error: %v)", timeout, short(js), last)
			}
			return fmt.Errorf("not true within %s: %s", timeout, short(js))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// q quotes a CSS selector as a JavaScript string literal.
func q(sel string) string {
	b, _ := json.Marshal(sel)
	return string(b)
}

// Rect is an element's bounding box in CSS pixels of the viewport.
type Rect struct{ X, Y, Width, Height float64 }

// Center is the middle of the box.
func (r Rect) Center() (float64, float64) { return r.X + r.Width/2, r.Y + r.Height/2 }

// Rect scrolls the first element matching sel into view and returns its box.
func (t *Tab) Rect(sel string) (Rect, error) {
	var r *Rect
	err := t.Eval(`(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return null;
		e.scrollIntoView({block: "nearest", inline: "nearest"});
		const r = e.getBoundingClientRect(); return {X: r.x, Y: r.y, Width: r.width, Height: r.height}; })()`, &r)
	if err != nil {
		return Rect{}, err
	}
	if r == nil {
		return Rect{}, fmt.Errorf("no element matches %s", sel)
	}
	return *r, nil
}

// Click presses and releases the left mouse button at the centre of the
// first element matching sel (a real click, as a person's).
func (t *Tab) Click(sel string) error {
	r, err := t.Rect(sel)
	if err != nil {
		return err
	}
	x, y := r.Center()
	return t.do(t.Timeout,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y),
		chromedp.MouseClickXY(x, y))
}

// Type focuses the element matching sel and types text with key events.
func (t *Tab) Type(sel, text string) error {
	if err := t.Eval(`(() => { const e = document.querySelector(`+q(sel)+`); if (!e) throw new Error("no element matches "+`+q(sel)+`); e.focus(); })()`, nil); err != nil {
		return err
	}
	return t.do(t.Timeout, chromedp.KeyEvent(text))
}

// Key sends key events (a character, or a kb constant such as kb.Enter) to
// the focused element.
func (t *Tab) Key(keys string) error { return t.do(t.Timeout, chromedp.KeyEvent(keys)) }

// Drag drags the element matching from onto the element matching to with
// real mouse events: pressed at from's centre, moved in steps, released at
// to's centre. Chromium derives pointerdown, pointermove and pointerup from
// them (and mousedown, mousemove, mouseup).
func (t *Tab) Drag(from, to string) error {
	if _, err := t.Rect(from); err != nil {
		return err
	}
	b, err := t.Rect(to)
	if err != nil {
		return err
	}
	// Scrolling the target into view can move the source.
	a, err := t.Rect(from)
	if err != nil {
		return err
	}
	fx, fy := a.Center()
	tx, ty := b.Center()
	if err := t.dragXY(fx, fy, tx, ty); err != nil {
		return fmt.Errorf("drag %s onto %s: %w", from, to, err)
	}
	return nil
}

// DragAcross drags inside the element matching sel, at half its height,
// from the fraction x1 of its width to the fraction x2 (a selection on a
// chart, say).
func (t *Tab) DragAcross(sel string, x1, x2 float64) error {
	r, err := t.Rect(sel)
	if err != nil {
		return err
	}
	y := r.Y + r.Height/2
	if err := t.dragXY(r.X+r.Width*x1, y, r.X+r.Width*x2, y); err != nil {
		return fmt.Errorf("drag across %s: %w", sel, err)
	}
	return nil
}

// PreferDark makes the page see prefers-color-scheme: dark (true) or
// light (false), as a system's theme setting would.
func (t *Tab) PreferDark(dark bool) error {
	v := "light"
	if dark {
		v = "dark"
	}
	return t.do(t.Timeout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	}))
}

// EmulateMedia makes the page's CSS see the media type media ("print",
// "screen"; "" ends the emulation).
func (t *Tab) EmulateMedia(media string) error {
	return t.do(t.Timeout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: media})
		return err
	}))
}

// RecordRequests records the address of every request the tab sends from
// now on (the network domain's requestWillBeSent events) and returns a
// function that reports them so far, in order.
func (t *Tab) RecordRequests() (func() []string, error) {
	var mu sync.Mutex
	var urls []string
	err := chromedp.Listen(t.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("record requests: %w", err)
	}
	err = t.do(t.Timeout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	}))
	if err != nil {
		return nil, fmt.Errorf("record requests: %w", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}, nil
}

// Hover moves the mouse, no button pressed, to half the height of the
// element matching sel at the fraction x of its width.
func (t *Tab) Hover(sel string, x float64) error {
	r, err := t.Rect(sel)
	if err != nil {
		return err
	}
	return t.do(t.Timeout, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width*x, r.Y+r.Height/2))
}

func (t *Tab) dragXY(fx, fy, tx, ty float64) error {
	const steps = 12
	actions := []chromedp.Action[chromedp.Void]{
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, fx, fy),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, fx, fy, chromedp.ButtonLeft, buttons(1), chromedp.ClickCount(1)),
	}
	for i := 1; i <= steps; i++ {
		x := fx + (tx-fx)*float64(i)/steps
		y := fy + (ty-fy)*float64(i)/steps
		actions = append(actions, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y, chromedp.ButtonLeft, buttons(1)),
			chromedp.Sleep(10*time.Millisecond))
	}
	actions = append(actions, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, tx, ty, chromedp.ButtonLeft, buttons(0), chromedp.ClickCount(1)))
	return t.do(t.Timeout, actions...)
}

func buttons(n int64) chromedp.MouseOption {
	return func(p *input.DispatchMouseEventParams) { p.Buttons = n }
}

// Screenshot returns a PNG of the whole page.
// It first waits (up to 2 s) for running CSS transitions and animations to
// end, so that a picture never shows boxes half-way to where they move.
func (t *Tab) Screenshot() ([]byte, error) {
	// A page that keeps animating is still pictured, as it is after 2 s.
	_ = t.WaitJS(`!document.getAnimations().some((a) => a.playState === "running")`, 2*time.Second)
	// The whole page from its top: scrolled, a sticky header would be
	// pictured in the middle.
	_ = t.Eval(`window.scrollTo(0, 0)`, nil)
	ctx, cancel := context.WithTimeout(t.ctx, t.Timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.FullScreenshot(100))
}
