package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	r := resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerRoutes(t *testing.T) {
	index := `<!doctype html><script type="importmap">{"imports":{}}</script><script type="module" src="/assets/js/app.js"></script>`
	js := strings.Repeat("export const x = 1;\n", 200)
	h, err := newHandler(fstest.MapFS{
		"index.html": {Data: []byte(index)},
		"js/app.js":  {Data: []byte(js)},
		"logo.png":   {Data: []byte("\x89PNG....")},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Every page address answers the page; anything else too, with 404,
	// so that the page itself says what was not found.
	for path, status := range map[string]int{
		"/": 200, "/clusters/main": 200, "/instances/127.0.0.1:3306": 200, "/recoveries/7": 200,
		"/clusters/%3Cscript%3E": 200, "/nope": 404, "/clusters": 404,
	} {
		resp := get(t, h, path)
		if resp.StatusCode != status || body(t, resp) != index {
			t.Errorf("GET %s: %d, want %d and the page", path, resp.StatusCode, status)
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
	}

	// The CSP allows this origin's scripts and the page's inline import map
	// by its hash, and nothing else.
	csp := get(t, h, "/").Header.Get("Content-Security-Policy")
	if !regexp.MustCompile(`script-src 'self' 'sha256-[A-Za-z0-9+/]+=*';`).MatchString(csp) || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}

	// Assets: gzip when accepted and worth it, revalidated by ETag.
	resp := get(t, h, "/assets/js/app.js", "Accept-Encoding", "br, gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || body(t, resp) != js || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %v", resp.Header)
	}
	etag := resp.Header.Get("ETag")
	if resp := get(t, h, "/assets/js/app.js", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %d", resp.StatusCode)
	}
	if resp := get(t, h, "/assets/js/app.js", "Accept-Encoding", "gzip;q=0"); resp.Header.Get("Content-Encoding") != "" || body(t, resp) != js {
		t.Errorf("gzip;q=0 still compressed: %v", resp.Header)
	}
	if resp := get(t, h, "/assets/logo.png", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("png: %v", resp.Header)
	}
	if resp := get(t, h, "/assets/index.html"); resp.StatusCode != 404 {
		t.Errorf("index.html as an asset: %d", resp.StatusCode)
	}
	if resp := get(t, h, "/assets/nope.js"); resp.StatusCode != 404 {
		t.Errorf("missing asset: %d", resp.StatusCode)
	}
	req := httptest.NewRequest("POST", "/", bytes.NewReader(nil))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", rec.Code)
	}
}

// The embedded page loads: every asset index.html names is embedded, and
// what is shipped stays under the page's budget of 500 KB gzip.
func TestEmbeddedPage(t *testing.T) {
	h, err := NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, get(t, h, "/"))
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"?]+)`).FindAllStringSubmatch(page, -1)
	if len(refs) == 0 {
		t.Fatalf("index.html names no assets:\n%s", page)
	}
	for _, m := range refs {
		if resp := get(t, h, m[1]); resp.StatusCode != 200 {
			t.Errorf("index.html names %s: %d", m[1], resp.StatusCode)
		}
	}
	total := 0
	for name, a := range h.assets {
		if a.gz != nil {
			total += len(a.gz)
		} else {
			total += len(a.body)
		}
		if strings.HasSuffix(name, ".map") {
			t.Errorf("source map %s shipped", name)
		}
	}
	if total > 500<<10 {
		t.Errorf("assets are %d bytes compressed; the budget is 500 KB", total)
	}
	t.Logf("%d assets, %d bytes as sent", len(h.assets), total)
}
