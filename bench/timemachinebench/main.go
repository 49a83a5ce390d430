// Command timemachinebench measures the web console's time machine in
// headless Chromium against a running serve (bench/timemachine.sh starts
// everything): the time to redraw a past moment of a cluster, from the key
// press on the time bar to the frame that shows the tree of the new
// moment, over N presses of → (one second on each: a new moment, a new
// GET /api/clusters/NAME/at each) and of PageDown/PageUp (change to
// change), and the time of that API call alone (Go client, no browser), so
// that the page's share can be told from serve's. The page measures
// itself: the time bar notes performance.now() at the keydown, and the
// cluster view sets data-redraw-ms once the frame after the redraw
// (requestAnimationFrame) runs (web/CONTRACT.md). It prints a table; it
// is not a test.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/dbpilot/dbpilot/internal/browser"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:17180", "serve's address")
	token := flag.String("token", "", "the API token (when reads need it)")
	cluster := flag.String("cluster", "", "the cluster whose history is scrubbed")
	n := flag.Int("n", 20, "key presses of each kind")
	flag.Parse()
	if *cluster == "" {
		fail(fmt.Errorf("-cluster is required"))
	}
	dir, err := os.MkdirTemp("", "tmbench")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	b, err := browser.Start(dir)
	if err != nil {
		fail(err)
	}
	defer b.Close()
	t := b.Tab()
	page := *base + "/clusters/" + url.PathEscape(*cluster)
	must(t.Navigate(page))
	if *token != "" {
		must(t.Eval(`sessionStorage.setItem('dbpilot.token', `+strconv.Quote(*token)+`)`, nil))
		must(t.Navigate(page))
	}
	must(t.WaitJS(`!!document.querySelector('#timebar')?.dataset.start`, 30*time.Second))
	var bar struct {
		Start    string
		Failover string
		Changes  int
	}
	must(t.Eval(`({Start: document.querySelector('#timebar').dataset.start,
		Failover: document.querySelector('.tb-marker[data-kind="failover"]')?.dataset.t ?? '',
		Changes: document.querySelectorAll('.tb-marker').length})`, &bar))
	start, err := time.Parse(time.RFC3339Nano, bar.Start)
	must(err)
	// From a few seconds before the failover (when there is one), so that
	// the presses cross it: trees that change, not only the same one.
	from := time.Now().Add(-time.Duration(*n+5) * time.Second)
	if f, err := time.Parse(time.RFC3339Nano, bar.Failover); err == nil {
		from = f.Add(-time.Duration(*n/2) * time.Second)
	}
	if from.Before(start) {
		from = start
	}
	must(t.Navigate(page + "?at=" + from.UTC().Format("2006-01-02T15:04:05.000Z")))
	must(t.WaitJS(drawn, 30*time.Second))
	must(t.Eval(`(window.__tmlog = [], new MutationObserver((ms) => { for (const m of ms) window.__tmlog.push(performance.now().toFixed(0) + ' ' + m.attributeName + '=' + m.target.getAttribute(m.attributeName)); }).observe(document.querySelector('.view.cluster'), {attributes: true, attributeFilter: ['data-moment', 'data-drawn', 'data-redraw-at']}), 0)`, nil))
	fmt.Printf("history of %s since %s (%s), %d markers on the bar; from %s\n\n", *cluster, start.Format(time.RFC3339), time.Since(start).Round(time.Second), bar.Changes, from.Format("15:04:05.000"))
	fmt.Printf("%-44s %5s %9s %9s %9s\n", "redraw of a past moment", "n", "median", "p90", "max")
	row("→ (+1 s), key press to the tree on screen", press(t, kb.ArrowRight, "", *n))
	row("PageDown/PageUp (next/previous change)", press(t, kb.PageDown, kb.PageUp, *n))
	row("GET /at alone (Go client, same moments)", api(*base, *token, *cluster, from, *n))
}

// drawn: the view shows the moment it asks for.
const drawn = `(() => { const v = document.querySelector('.view.cluster'); return !!v && v.dataset.moment !== 'live' && v.dataset.drawn === v.dataset.moment; })()`

// press presses key n times on the time bar (alt instead when key no
// longer moves: the end of the history) and returns each redraw's time.
func press(t *browser.Tab, key, alt string, n int) []float64 {
	var out []float64
	for i := 0; i < n; i++ {
		var before string
		must(t.Eval(`(document.querySelector('#tb-track').focus(), document.querySelector('.view.cluster').dataset.moment)`, &before))
		must(t.Key(key))
		moved := fmt.Sprintf(`(() => { const v = document.querySelector('.view.cluster'); return v.dataset.moment !== %q && v.dataset.redrawAt === v.dataset.moment; })()`, before)
		if err := t.WaitJS(moved, 5*time.Second); err != nil {
			if alt == "" {
				var st string
				t.Eval(`JSON.stringify({href: location.href, ...document.querySelector('.view.cluster').dataset, bar: document.querySelector('#timebar').dataset.at, log: window.__tmlog})`, &st)
				fail(fmt.Errorf("press %d: %w\n%s", i, err, st))
			}
			key, alt = alt, key
			i--
			continue
		}
		var ms string
		must(t.Eval(`document.querySelector('.view.cluster').dataset.redrawMs`, &ms))
		v, err := strconv.ParseFloat(ms, 64)
		must(err)
		out = append(out, v)
	}
	return out
}

// api times GET /api/clusters/NAME/at for n moments a second apart from.
func api(base, token, cluster string, from time.Time, n int) []float64 {
	var out []float64
	for i := 0; i < n; i++ {
		at := from.Add(time.Duration(i) * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		req, _ := http.NewRequest("GET", base+"/api/clusters/"+url.PathEscape(cluster)+"/at?t="+at, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		must(err)
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		must(err)
		if resp.StatusCode != 200 {
			fail(fmt.Errorf("GET /at: HTTP %d", resp.StatusCode))
		}
		out = append(out, float64(time.Since(t0).Microseconds())/1000)
	}
	return out
}

func row(what string, v []float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	fmt.Printf("%-44s %5d %7.1fms %7.1fms %7.1fms   (%s)\n", what, len(s), q(0.5), q(0.9), s[len(s)-1], strings.Trim(fmt.Sprint(roundAll(v)), "[]"))
}

func roundAll(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + 0.5)
	}
	return out
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "timemachinebench:", err)
	os.Exit(1)
}
