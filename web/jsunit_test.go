package web_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/browser"
)

// TestJSUnit runs the page's JavaScript unit tests (web/jstest/*.test.js)
// in headless Chromium: web/ is served as it is on disk, so that
// /jstest/index.html imports /static/js/*.js as native modules. No Node.js
// and no network are needed. The runner page sets
// window.__jstest = {done, passed, failed: [{name, error}]}.
func TestJSUnit(t *testing.T) {
	runner, err := os.ReadFile("jstest/index.html")
	if err != nil {
		t.Fatalf("the JavaScript test runner page is missing: %v", err)
	}
	// The runner imports a list of files: a test file left off it would
	// never run.
	files, _ := filepath.Glob("jstest/*.test.js")
	for _, f := range files {
		if name := "'./" + filepath.Base(f) + "'"; !strings.Contains(string(runner), name) {
			t.Errorf("jstest/index.html does not run %s: add %s to its files", f, name)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(".")))
	t.Cleanup(srv.Close)
	p := browser.New(t)
	p.Navigate(srv.URL + "/jstest/index.html")
	p.WaitJS("window.__jstest && window.__jstest.done", 60*time.Second)
	var res struct {
		Done   bool `json:"done"`
		Passed int  `json:"passed"`
		Failed []struct {
			Name  string `json:"name"`
			Error string `json:"error"`
		} `json:"failed"`
	}
	p.Eval("window.__jstest", &res)
	for _, f := range res.Failed {
		t.Errorf("%s: %s", f.Name, f.Error)
	}
	if res.Passed == 0 {
		t.Errorf("no JavaScript test passed (%d failed): the runner found no tests", len(res.Failed))
	}
	t.Logf("%d JavaScript tests passed, %d failed", res.Passed, len(res.Failed))
	if c := p.Tab.Console(); t.Failed() && len(c) > 0 {
		t.Logf("console:\n  %s", strings.Join(c, "\n  "))
	}
}
