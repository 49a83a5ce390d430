package browser

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// Page is a browser tab for a test: every helper fails the test on error.
type Page struct {
	T   testing.TB
	Tab *Tab
	b   *Browser
}

// New starts a headless Chromium for the test (window 1400x900, profile in
// a temporary directory; extra options after Options, e.g. a flag) and
// returns its first tab. The browser and every
// process it started are stopped when the test ends, also when it fails.
// Without chromium the test fails in CI (CI=true) and is skipped elsewhere;
// under -short it is skipped.
func New(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Page {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: needs chromium (skipped with -short)")
	}
	if _, err := ExecPath(); err != nil {
		if testutil.InCI() {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("%v", err)
	}
	dir := t.TempDir() // removed after the browser stops (cleanups run last-in first-out)
	b, err := Start(dir, extra...)
	if err != nil {
		// Chromium is installed but does not start: a defect to see, in
		// and out of CI.
		t.Fatalf("browser: %v", err)
	}
	t.Cleanup(b.Close)
	return &Page{T: t, Tab: b.Tab(), b: b}
}

// NewTab opens another tab in the same browser, closed when the test ends.
func (p *Page) NewTab() *Page {
	p.T.Helper()
	tab, err := p.b.NewTab()
	if err != nil {
		p.T.Fatalf("browser: new tab: %v", err)
	}
	p.T.Cleanup(tab.Close)
	return &Page{T: p.T, Tab: tab, b: p.b}
}

// With returns the page bound to another test (a subtest), so that its
// failures end that test and not the one that opened the page.
func (p *Page) With(t testing.TB) *Page { return &Page{T: t, Tab: p.Tab, b: p.b} }

// Browser is the browser the page belongs to.
func (p *Page) Browser() *Browser { return p.b }

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(url string) {
	p.T.Helper()
	if err := p.Tab.Navigate(url); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) into out.
func (p *Page) Eval(js string, out any) {
	p.T.Helper()
	if err := p.Tab.Eval(js, out); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// EvalString evaluates an expression whose value is a string ("" for null).
func (p *Page) EvalString(js string) string {
	p.T.Helper()
	var s *string
	p.Eval(js, &s)
	if s == nil {
		return ""
	}
	return *s
}

// WaitJS waits until the JavaScript expression is truthy.
func (p *Page) WaitJS(js string, timeout time.Duration) {
	p.T.Helper()
	if err := p.Tab.WaitJS(js, timeout); err != nil {
		p.T.Fatalf("browser: %v\n%s", err, p.state())
	}
}

// WaitSelector waits until an element matches the CSS selector.
func (p *Page) WaitSelector(sel string, timeout time.Duration) {
	p.T.Helper()
	if err := p.Tab.WaitJS("document.querySelector("+q(sel)+")", timeout); err != nil {
		p.T.Fatalf("browser: no element %s within %s\n%s", sel, timeout, p.state())
	}
}

// WaitGone waits until no element matches the CSS selector.
func (p *Page) WaitGone(sel string, timeout time.Duration) {
	p.T.Helper()
	if err := p.Tab.WaitJS("!document.querySelector("+q(sel)+")", timeout); err != nil {
		p.T.Fatalf("browser: %s still present after %s\n%s", sel, timeout, p.state())
	}
}

// Has reports whether an element matches the selector.
func (p *Page) Has(sel string) bool {
	p.T.Helper()
	var ok bool
	p.Eval("!!document.querySelector("+q(sel)+")", &ok)
	return ok
}

// Count is the number of elements matching the selector.
func (p *Page) Count(sel string) int {
	p.T.Helper()
	var n int
	p.Eval("document.querySelectorAll("+q(sel)+").length", &n)
	return n
}

// Attr is the attribute of the first element matching sel ("" when the
// element or the attribute is missing).
func (p *Page) Attr(sel, name string) string {
	p.T.Helper()
	return p.EvalString("document.querySelector(" + q(sel) + ")?.getAttribute(" + q(name) + ") ?? null")
}

// Attrs is the attribute of every element matching sel, in document order.
func (p *Page) Attrs(sel, name string) []string {
	p.T.Helper()
	var out []string
	p.Eval("Array.from(document.querySelectorAll("+q(sel)+"), e => e.getAttribute("+q(name)+") ?? '')", &out)
	return out
}

// Text is the textContent of the first element matching sel ("" when none).
func (p *Page) Text(sel string) string {
	p.T.Helper()
	return p.EvalString("document.querySelector(" + q(sel) + ")?.textContent ?? null")
}

// Click clicks the centre of the first element matching sel with the mouse.
func (p *Page) Click(sel string) {
	p.T.Helper()
	if err := p.Tab.Click(sel); err != nil {
		p.T.Fatalf("browser: click %s: %v", sel, err)
	}
}

// Type focuses the element matching sel and types text.
func (p *Page) Type(sel, text string) {
	p.T.Helper()
	if err := p.Tab.Type(sel, text); err != nil {
		p.T.Fatalf("browser: type into %s: %v", sel, err)
	}
}

// Key sends key events to the focused element.
func (p *Page) Key(keys string) {
	p.T.Helper()
	if err := p.Tab.Key(keys); err != nil {
		p.T.Fatalf("browser: key %q: %v", keys, err)
	}
}

// Drag drags the element matching from onto the element matching to with
// real mouse (hence pointer) events.
func (p *Page) Drag(from, to string) {
	p.T.Helper()
	if err := p.Tab.Drag(from, to); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// PreferDark switches the page's prefers-color-scheme to dark or light.
func (p *Page) PreferDark(dark bool) {
	p.T.Helper()
	if err := p.Tab.PreferDark(dark); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// Hover moves the mouse over the element matching sel, at the fraction x of
// its width.
func (p *Page) Hover(sel string, x float64) {
	p.T.Helper()
	if err := p.Tab.Hover(sel, x); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// DragAcross drags inside the element matching sel from the fraction x1 of
// its width to x2.
func (p *Page) DragAcross(sel string, x1, x2 float64) {
	p.T.Helper()
	if err := p.Tab.DragAcross(sel, x1, x2); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// EmulateMedia makes the page's CSS see the media type media ("print";
// "" ends the emulation).
func (p *Page) EmulateMedia(media string) {
	p.T.Helper()
	if err := p.Tab.EmulateMedia(media); err != nil {
		p.T.Fatalf("browser: %v", err)
	}
}

// RecordRequests records every request the page sends from now on; the
// function returned reports their addresses so far.
func (p *Page) RecordRequests() func() []string {
	p.T.Helper()
	f, err := p.Tab.RecordRequests()
	if err != nil {
		p.T.Fatalf("browser: %v", err)
	}
	return f
}

// ScreenshotDir is where screenshots go: $DBPILOT_SCREENSHOTS, else
// build/screenshots/ in the repository (the directory holding go.mod).
func ScreenshotDir() (string, error) {
	dir := os.Getenv("DBPILOT_SCREENSHOTS")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "build", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s: set $DBPILOT_SCREENSHOTS", dir)
		}
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot writes a PNG of the whole page to ScreenshotDir()/name.png
// and logs its path.
func (p *Page) Screenshot(name string) string {
	p.T.Helper()
	path, err := p.TryScreenshot(name)
	if err != nil {
		p.T.Fatalf("browser: %v", err)
	}
	p.T.Logf("screenshot %s", path)
	return path
}

// TryScreenshot is Screenshot returning its error (for a failure path).
func (p *Page) TryScreenshot(name string) (string, error) {
	dir, err := ScreenshotDir()
	if err != nil {
		return "", fmt.Errorf("screenshot %s: %w", name, err)
	}
	png, err := p.Tab.Screenshot()
	if err != nil {
		return "", fmt.Errorf("screenshot %s: %w", name, err)
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(name, "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "", fmt.Errorf("screenshot %s: %w", name, err)
	}
	return path, nil
}

// State describes the page for a failure message: its URL, connection
// state, notice, the start of its text and its console.
func (p *Page) State() string { return p.state() }

// state describes the page for a failure message: its URL, connection
// state, notice and the start of its body text.
func (p *Page) state() string {
	var s struct {
		URL, Conn, Notice, Body string
	}
	err := p.Tab.Eval(`({URL: location.href,
		Conn: document.querySelector("#conn")?.getAttribute("data-state") ?? "",
		Notice: document.querySelector("#notice")?.textContent ?? "",
		Body: (document.body?.innerText ?? "").slice(0, 600)})`, &s)
	if err != nil {
		return "page state unknown: " + err.Error()
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	out := "page: " + string(b)
	if c := p.Tab.Console(); len(c) > 0 {
		out += "\nconsole:\n  " + strings.Join(c, "\n  ")
	}
	return out
}
