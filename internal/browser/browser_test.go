package browser_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/dbpilot/dbpilot/internal/browser"
)

const testPage = `<!doctype html><html><body style="margin:0">
<svg width="800" height="400">
  <g class="node" id="a" transform="translate(50,50)"><rect width="120" height="40"/></g>
  <g class="node" id="b" transform="translate(400,250)"><rect width="120" height="40"/></g>
</svg>
<input id="in"><p id="out" data-x="1">hello &lt;b&gt;</p>
<script>
window.__events = [];
for (const type of ["pointerdown", "pointermove", "pointerup"]) {
  document.addEventListener(type, e => {
    const g = e.target.closest("g");
    if (type === "pointermove" && !window.__events.length) return; // hovering before the press
    if (type !== "pointermove" || window.__events.at(-1) !== "pointermove") window.__events.push(type);
    if (type === "pointerup") window.__drop = {down: window.__down, up: g?.id ?? null, buttons: e.buttons};
    if (type === "pointerdown") window.__down = g?.id ?? null;
  });
}
document.getElementById("in").addEventListener("keydown", e => { if (e.key === "Enter") window.__entered = e.target.value; });
</script></body></html>`

// TestHarness checks the harness itself against a static page: a mouse
// drag gives pointerdown, pointermove and pointerup on the right elements,
// typing and keys reach an input, the DOM readers and the screenshot work.
func TestHarness(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(testPage))
	}))
	t.Cleanup(srv.Close)
	shots := t.TempDir()
	t.Setenv("DBPILOT_SCREENSHOTS", shots)
	p := browser.New(t)
	p.Navigate(srv.URL)
	p.WaitSelector("g#b", 5*time.Second)

	var size []int
	p.Eval("[innerWidth, innerHeight]", &size)
	if len(size) != 2 || size[0] != browser.WindowWidth || size[1] > browser.WindowHeight || size[1] < browser.WindowHeight-200 {
		t.Errorf("viewport %v, want about %dx%d", size, browser.WindowWidth, browser.WindowHeight)
	}

	p.Drag("g#a", "g#b")
	var events []string
	p.Eval("window.__events", &events)
	if strings.Join(events, ",") != "pointerdown,pointermove,pointerup" {
		t.Errorf("pointer events %v, want pointerdown, pointermove, pointerup", events)
	}
	var drop struct {
		Down, Up string
		Buttons  int
	}
	p.Eval("window.__drop", &drop)
	if drop.Down != "a" || drop.Up != "b" || drop.Buttons != 0 {
		t.Errorf("drag from %q to %q (buttons %d), want from a to b", drop.Down, drop.Up, drop.Buttons)
	}

	p.Type("#in", "tok")
	p.Key(kb.Enter)
	p.WaitJS("window.__entered === 'tok'", 5*time.Second)

	if got := p.Text("#out"); got != "hello <b>" {
		t.Errorf("Text = %q", got)
	}
	if got := p.Attr("#out", "data-x"); got != "1" {
		t.Errorf("Attr = %q", got)
	}
	if got := p.Attr("#nosuch", "data-x"); got != "" {
		t.Errorf("Attr of a missing element = %q", got)
	}
	if n := p.Count("g.node"); n != 2 {
		t.Errorf("Count = %d", n)
	}
	if p.Has("#nosuch") || !p.Has("#in") {
		t.Error("Has is wrong")
	}
	if err := p.Tab.WaitJS("window.__never", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "__never") {
		t.Errorf("WaitJS on a false condition: %v", err)
	}

	path := p.Screenshot("harness test")
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || !strings.HasPrefix(path, shots) || !strings.HasSuffix(path, "harness_test.png") {
		t.Errorf("screenshot %s: %d bytes, %v", path, len(b), err)
	}

	tab := p.NewTab()
	tab.Navigate(srv.URL)
	if n := tab.Count("g.node"); n != 2 {
		t.Errorf("second tab: Count = %d", n)
	}
}
