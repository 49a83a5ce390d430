// Command webuibench measures dbpilot's web console in headless Chromium
// against a running serve (bench/webui.sh starts everything): page load and
// first paint of the overview and of a cluster page, chart render time over
// 1 h and 24 h for two clusters, bytes transferred, the PromQL query time
// on serve for the same ranges, and serve's CPU while tabs stay open versus
// idle. It prints a table; it is not a test.
//
// Chart render time is measured from the page's side without help from the
// page: a script installed before the page's own (Page.addScriptToEvaluateOnNewDocument)
// counts the /api/metrics/query_range requests, notes when each response
// body has been read, and waits two animation frames (the charts draw
// synchronously after the body is parsed, the frames put it on screen). If
// the page sets performance measures named "chart:ID", they are printed too.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/dbpilot/dbpilot/internal/browser"
)

const probe = `(() => {
  if (window.__bench) return;
  const st = window.__bench = {started: 0, done: 0, last: 0, seen: {}};
  const wrap = (r, q) => {
    if (!q) return r;
    for (const m of ['text', 'json']) {
      const orig = r[m].bind(r);
      r[m] = () => orig().finally(() => { st.done++; requestAnimationFrame(() => requestAnimationFrame(() => { st.last = performance.now(); })); });
    }
    return r;
  };
  const of = window.fetch;
  window.fetch = function (input, init) {
    const u = String((input && input.url) || input);
    const q = u.includes('/api/metrics/query_range');
    if (q) st.started++;
    return of.call(this, input, init).then((r) => wrap(r, q), (e) => { if (q) { st.done++; st.last = performance.now(); } throw e; });
  };
  const sels = ['.cluster-card', 'g.node', '.chart'];
  const look = () => { for (const s of sels) if (!st.seen[s] && document.querySelector(s)) st.seen[s] = performance.now(); };
  new MutationObserver(look).observe(document, {subtree: true, childList: true, attributes: true});
})()`

func main() {
	base := flag.String("url", "http://127.0.0.1:17080", "serve's address")
	token := flag.String("token", "", "the API token")
	small := flag.String("small", "", "the cluster with few instances")
	big := flag.String("big", "", "the cluster with many instances")
	pid := flag.Int("pid", 0, "serve's process id (for its CPU)")
	tabs := flag.Int("tabs", 5, "tabs kept open for the CPU figure")
	secs := flag.Int("secs", 60, "seconds of each CPU window")
	runs := flag.Int("runs", 5, "repetitions of each load")
	prom := flag.String("prom", "", "a Prometheus server holding the same samples (side-by-side figures)")
	kill := flag.String("kill", "", "a shell command that kills the small cluster's primary (last: the failover seen on the page)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "webuibench")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	b, err := browser.Start(dir)
	if err != nil {
		fail(err)
	}
	defer b.Close()
	m := &bench{base: *base, token: *token, b: b, runs: *runs}

	fmt.Printf("\n== page load (median of %d; a new tab each, cache warm after the first)\n", *runs)
	fmt.Printf("%-22s %9s %9s %9s %9s %9s %10s %10s\n", "page", "ttfb", "FCP", "DCL", "load", "ready", "bytes", "requests")
	m.load("overview", "/", ".cluster-card")
	m.load("cluster "+*small, "/clusters/"+*small, "g.node")
	if *big != "" {
		m.load("cluster "+*big, "/clusters/"+*big, "g.node")
	}

	fmt.Printf("\n== charts: from choosing the range to every chart drawn (median of %d)\n", *runs)
	fmt.Printf("%-22s %6s %9s %9s %8s %8s %11s %12s\n", "cluster", "range", "render", "slowest", "charts", "points", "series(qps)", "query bytes")
	for _, c := range []string{*small, *big} {
		if c == "" {
			continue
		}
		for _, r := range []string{"1h", "24h"} {
			m.chart(c, r)
		}
	}

	fmt.Printf("\n== a cluster page opened at ?range=24h: from navigation to every chart drawn (median of %d)\n", *runs)
	fmt.Printf("%-22s %9s %9s %8s\n", "page", "drawn", "bytes", "charts")
	for _, c := range []string{*small, *big} {
		if c != "" {
			m.open24h(c)
		}
	}
	if *prom != "" {
		fmt.Printf("%-22s %9s %9s %8s   (Prometheus %s, the same samples; its classic graph page, one chart)\n", "", "", "", "", *prom)
		for _, c := range []string{*small, *big} {
			if c != "" {
				m.promGraph(*prom, c)
			}
		}
	}

	fmt.Printf("\n== PromQL time for the qps chart's query, 600 points (median of %d; Go client, no browser)\n", *runs)
	fmt.Printf("%-22s %6s %12s %12s %8s %s\n", "cluster", "range", "dbpilot", "prometheus", "ratio", "(prometheus/dbpilot; > 1: dbpilot faster)")
	for _, c := range []string{*small, *big} {
		if c == "" {
			continue
		}
		for _, r := range []time.Duration{time.Hour, 24 * time.Hour} {
			d := m.query(m.base+"/api/metrics/query_range", c, r)
			if *prom == "" {
				fmt.Printf("%-22s %6s %10.1fms\n", c, r, d)
				continue
			}
			p := m.query(strings.TrimRight(*prom, "/")+"/api/v1/query_range", c, r)
			fmt.Printf("%-22s %6s %10.1fms %10.1fms %7.2fx\n", c, r, d, p, p/d)
		}
	}

	if *pid > 0 {
		fmt.Printf("\n== serve's CPU (utime+stime from /proc/%d/stat) over %d s\n", *pid, *secs)
		idle := cpu(*pid, *secs)
		fmt.Printf("%-34s %7.2f%% of a core\n", "idle (no page open)", idle)
		var open []*browser.Tab
		for i := 0; i < *tabs; i++ {
			t, err := b.NewTab()
			if err != nil {
				fail(err)
			}
			open = append(open, t)
			if err := t.Navigate(*base + "/clusters/" + *small); err != nil {
				fail(err)
			}
			if err := t.Eval(`sessionStorage.setItem('dbpilot.token', `+strconv.Quote(*token)+`)`, nil); err != nil {
				fail(err)
			}
		}
		busy := cpu(*pid, *secs)
		fmt.Printf("%-34s %7.2f%% of a core (+%.2f)\n", fmt.Sprintf("%d tabs on /clusters/%s (1h)", *tabs, *small), busy, busy-idle)
		for _, t := range open {
			t.Close()
		}
	}

	if *kill != "" {
		m.failover(*small, *kill)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "webuibench:", err)
	os.Exit(1)
}

type bench struct {
	base, token string
	b           *browser.Browser
	runs        int
}

// tab opens a tab with the probe installed before the page's scripts.
func (m *bench) tab() *browser.Tab {
	t, err := m.b.NewTab()
	if err != nil {
		fail(err)
	}
	add := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe})
		return err
	})
	if err := chromedp.Do(t.Context(), add); err != nil {
		fail(err)
	}
	return t
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func (m *bench) load(name, path, ready string) {
	var ttfb, fcp, dcl, load, rdy, bytes, reqs []float64
	for i := 0; i < m.runs; i++ {
		t := m.tab()
		if err := t.Navigate(m.base + path); err != nil {
			fail(err)
		}
		if err := t.WaitJS(`window.__bench && window.__bench.seen[`+strconv.Quote(ready)+`]`, 30*time.Second); err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		// Let the first data requests finish before counting bytes.
		time.Sleep(500 * time.Millisecond)
		var r struct {
			TTFB, FCP, DCL, Load, Ready, Bytes, Requests float64
		}
		err := t.Eval(`(() => {
			const n = performance.getEntriesByType('navigation')[0];
			const p = performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint');
			const res = performance.getEntriesByType('resource');
			const size = (e) => e.transferSize || e.encodedBodySize || 0;
			return {TTFB: n.responseStart, FCP: p ? p.startTime : 0, DCL: n.domContentLoadedEventEnd, Load: n.loadEventEnd,
				Ready: window.__bench.seen[`+strconv.Quote(ready)+`],
				Bytes: size(n) + res.reduce((a, e) => a + size(e), 0), Requests: 1 + res.length};
		})()`, &r)
		if err != nil {
			fail(err)
		}
		ttfb, fcp, dcl, load = append(ttfb, r.TTFB), append(fcp, r.FCP), append(dcl, r.DCL), append(load, r.Load)
		rdy, bytes, reqs = append(rdy, r.Ready), append(bytes, r.Bytes), append(reqs, r.Requests)
		t.Close()
	}
	fmt.Printf("%-22s %7.0fms %7.0fms %7.0fms %7.0fms %7.0fms %10.0f %10.0f   (first: FCP %.0fms, ready %.0fms, %.0f bytes)\n",
		name, median(ttfb), median(fcp), median(dcl), median(load), median(rdy), median(bytes), median(reqs), fcp[0], rdy[0], bytes[0])
}

// settled: every chart of the page has points, its range queries are all
// answered and drawn, and nothing was drawn for 400 ms.
const settled = `(() => { const b = window.__bench; const charts = document.querySelectorAll('.chart');
	return charts.length > 0 && b.started > 0 && b.started === b.done && b.last > 0 && performance.now() - b.last > 400 &&
		Array.from(charts).every((c) => +c.dataset.points > 0); })()`

// chart opens the cluster page, waits for its charts, then chooses the
// range (through 5m when the range is already shown) and times the redraw.
func (m *bench) chart(cluster, rng string) {
	t := m.tab()
	defer t.Close()
	if err := t.Navigate(m.base + "/clusters/" + cluster); err != nil {
		fail(err)
	}
	if err := t.WaitJS(settled, 60*time.Second); err != nil {
		fail(fmt.Errorf("%s: %w", cluster, err))
	}
	var render, slowest, bytes []float64
	var charts, points, series int
	for i := 0; i < m.runs; i++ {
		for _, r := range []string{"5m", rng} {
			if r == "5m" && rng == "5m" {
				continue
			}
			var r0 struct{ Mark, Res float64 }
			err := t.Eval(`(() => { const b = window.__bench; b.started = 0; b.done = 0; b.last = 0;
				performance.clearResourceTimings();
				const s = document.querySelector('select#range'); const mark = performance.now();
				s.value = `+strconv.Quote(r)+`; s.dispatchEvent(new Event('change', {bubbles: true}));
				return {Mark: mark, Res: 0}; })()`, &r0)
			if err != nil {
				fail(err)
			}
			if err := t.WaitJS(settled, 120*time.Second); err != nil {
				fail(fmt.Errorf("%s %s: %w", cluster, r, err))
			}
			if r != rng {
				continue
			}
			var res struct {
				Last, Slowest, Bytes float64
				Charts, Points       int
				Series               int
			}
			err = t.Eval(`(() => { const b = window.__bench;
				const q = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/metrics/query_range'));
				const qps = document.querySelector('.chart[data-chart="qps"]');
				return {Last: b.last, Slowest: Math.max(0, ...q.map((e) => e.responseEnd - e.startTime)),
					Bytes: q.reduce((a, e) => a + (e.transferSize || e.encodedBodySize || 0), 0),
					Charts: document.querySelectorAll('.chart').length, Points: qps ? +qps.dataset.points : 0,
					Series: qps ? Math.max(0, qps.querySelectorAll('.u-legend .u-series').length - 1) : 0}; })()`, &res)
			if err != nil {
				fail(err)
			}
			render = append(render, res.Last-r0.Mark)
			slowest = append(slowest, res.Slowest)
			bytes = append(bytes, res.Bytes)
			charts, points, series = res.Charts, res.Points, res.Series
		}
	}
	fmt.Printf("%-22s %6s %7.0fms %7.0fms %8d %8d %11d %12.0f\n", cluster, rng, median(render), median(slowest), charts, points, series, median(bytes))
	var marks []struct {
		Name     string
		Duration float64
	}
	if err := t.Eval(`performance.getEntriesByType('measure').filter((e) => e.name.startsWith('chart:')).map((e) => ({Name: e.name, Duration: e.duration}))`, &marks); err == nil && len(marks) > 0 {
		last := map[string]float64{}
		for _, mk := range marks {
			last[mk.Name] = mk.Duration
		}
		var parts []string
		for n, d := range last {
			parts = append(parts, fmt.Sprintf("%s %.0fms", n, d))
		}
		sort.Strings(parts)
		fmt.Printf("%-22s %6s page measures: %s\n", "", "", strings.Join(parts, ", "))
	}
}

// query times the qps chart's PromQL at endpoint (serve's or Prometheus'
// query_range) without a browser, and returns the median in ms.
func (m *bench) query(endpoint, cluster string, span time.Duration) float64 {
	step := int(span.Seconds()) / 599
	if step < 1 {
		step = 1
	}
	w := step
	if w < 2 {
		w = 2
	}
	expr := fmt.Sprintf(`sum by (instance) (rate(mysql_global_status_questions{cluster=%q}[%ds]))`, cluster, w)
	var took []float64
	for i := 0; i < m.runs; i++ {
		end := time.Now().Unix() / int64(step) * int64(step)
		// serve's API names the expression expr, Prometheus' query.
		param := "expr"
		if strings.Contains(endpoint, "/api/v1/") {
			param = "query"
		}
		u := fmt.Sprintf("%s?%s", endpoint, url.Values{param: {expr}, "start": {fmt.Sprint(end - int64(span.Seconds()))}, "end": {fmt.Sprint(end)}, "step": {fmt.Sprint(step)}}.Encode())
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+m.token)
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fail(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took = append(took, float64(time.Since(began).Microseconds())/1000)
		var d struct {
			Status string
			Data   struct{ Result []json.RawMessage }
		}
		json.Unmarshal(body, &d)
		if resp.StatusCode != 200 || d.Status != "success" || len(d.Data.Result) == 0 {
			fail(fmt.Errorf("query_range %s at %s: %d %.200s", cluster, endpoint, resp.StatusCode, body))
		}
	}
	return median(took)
}

// open24h opens a cluster page at ?range=24h and times it from navigation
// to every chart drawn (each chart's range query answered and painted).
func (m *bench) open24h(cluster string) {
	var drawn, bytes []float64
	charts := 0
	for i := 0; i < m.runs; i++ {
		t := m.tab()
		if err := t.Navigate(m.base + "/clusters/" + cluster + "?range=24h"); err != nil {
			fail(err)
		}
		if err := t.WaitJS(settled, 120*time.Second); err != nil {
			fail(fmt.Errorf("%s 24h: %w", cluster, err))
		}
		var r struct{ Last, Bytes float64 }
		if err := t.Eval(`(() => { const res = performance.getEntriesByType('resource'); const n = performance.getEntriesByType('navigation')[0];
			const size = (e) => e.transferSize || e.encodedBodySize || 0;
			return {Last: window.__bench.last, Bytes: size(n) + res.reduce((a, e) => a + size(e), 0)}; })()`, &r); err != nil {
			fail(err)
		}
		t.Eval(`document.querySelectorAll('.chart').length`, &charts)
		drawn, bytes = append(drawn, r.Last), append(bytes, r.Bytes)
		t.Close()
	}
	fmt.Printf("%-22s %7.0fms %9.0f %8d\n", "dbpilot "+cluster, median(drawn), median(bytes), charts)
}

// promGraph opens Prometheus' own graph page (the classic UI Debian ships:
// Rickshaw/d3 SVG) on the qps chart's expression over 24 h, with the same
// step as the console, and times it from navigation to the lines drawn.
func (m *bench) promGraph(prom, cluster string) {
	const span = 24 * 3600
	step := span / 599
	expr := fmt.Sprintf(`sum by (instance) (rate(mysql_global_status_questions{cluster=%q}[%ds]))`, cluster, step)
	u := strings.TrimRight(prom, "/") + "/graph?" + url.Values{"g0.expr": {expr}, "g0.tab": {"0"}, "g0.range_input": {"1d"}, "g0.step_input": {fmt.Sprint(step)}}.Encode()
	var drawn, bytes []float64
	for i := 0; i < m.runs; i++ {
		t := m.tab()
		if err := t.Navigate(u); err != nil {
			fail(err)
		}
		// The lines are SVG paths under .graph_area once the query answered.
		if err := t.WaitJS(`document.querySelectorAll('.graph_area svg path').length > 0`, 120*time.Second); err != nil {
			fail(fmt.Errorf("prometheus graph %s: %w", cluster, err))
		}
		var r struct{ Drawn, Bytes float64 }
		if err := t.Eval(`new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => {
			const res = performance.getEntriesByType('resource'); const n = performance.getEntriesByType('navigation')[0];
			const size = (e) => e.transferSize || e.encodedBodySize || 0;
			ok({Drawn: performance.now(), Bytes: size(n) + res.reduce((a, e) => a + size(e), 0)}); })))`, &r); err != nil {
			fail(err)
		}
		drawn, bytes = append(drawn, r.Drawn), append(bytes, r.Bytes)
		t.Close()
	}
	fmt.Printf("%-22s %7.0fms %9.0f %8d\n", "prometheus "+cluster, median(drawn), median(bytes), 1)
}

// failover keeps a tab on the cluster page, runs kill (which kills the
// primary) and reports when serve's API, then the page, showed the dead
// primary and the new one, counted from the kill. The page holds a dead
// primary on screen for 1 s on purpose (live.js HOLD_MS).
func (m *bench) failover(cluster, kill string) {
	fmt.Printf("\n== failover seen on the page: %s\n", kill)
	t := m.tab()
	defer t.Close()
	if err := t.Navigate(m.base + "/clusters/" + cluster); err != nil {
		fail(err)
	}
	if err := t.WaitJS(`document.querySelector('g.node[data-role="primary"][data-state="ok"]')`, 30*time.Second); err != nil {
		fail(err)
	}
	var old string
	t.Eval(`document.querySelector('g.node[data-role="primary"]').getAttribute('data-key')`, &old)
	// The page notes the first moment each thing is drawn (Date.now()).
	watch := `(() => { const old = ` + strconv.Quote(old) + `; const seen = window.__fo = {};
		const look = () => {
			const o = document.querySelector('g.node[data-key="' + old + '"]');
			if (!seen.dead && o && ['dead', 'unreachable'].includes(o.getAttribute('data-state'))) seen.dead = Date.now();
			const p = document.querySelector('g.node[data-role="primary"]:not([data-key="' + old + '"])');
			if (!seen.primary && p) { seen.primary = Date.now(); seen.key = p.getAttribute('data-key'); }
		};
		new MutationObserver(look).observe(document.body, {subtree: true, childList: true, attributes: true}); })()`
	if err := t.Eval(watch, nil); err != nil {
		fail(err)
	}
	// serve's API, polled every 5 ms, for when serve itself knew.
	apiSaw := make(chan time.Time, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest("GET", m.base+"/api/clusters/"+url.PathEscape(cluster), nil)
			req.Header.Set("Authorization", "Bearer "+m.token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				var st struct {
					Primary struct {
						Host string
						Port int
					}
				}
				json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if k := fmt.Sprintf("%s:%d", st.Primary.Host, st.Primary.Port); st.Primary.Port != 0 && k != old {
					apiSaw <- time.Now()
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	killed := time.Now()
	if out, err := exec.Command("sh", "-c", kill).CombinedOutput(); err != nil {
		fail(fmt.Errorf("%s: %v: %s", kill, err, out))
	}
	if err := t.WaitJS(`window.__fo.primary`, 60*time.Second); err != nil {
		fail(err)
	}
	var seen struct {
		Dead, Primary int64
		Key           string
	}
	t.Eval(`window.__fo`, &seen)
	var api time.Duration
	select {
	case at := <-apiSaw:
		api = at.Sub(killed)
	case <-time.After(5 * time.Second):
	}
	close(stop)
	ms := func(unixMs int64) string {
		if unixMs == 0 {
			return "never"
		}
		return fmt.Sprintf("%dms", unixMs-killed.UnixMilli())
	}
	fmt.Printf("old primary %s, new primary %s; from the kill:\n", old, seen.Key)
	fmt.Printf("  serve's API reports the new primary  %6dms\n", api.Milliseconds())
	fmt.Printf("  the page draws the old primary dead  %8s\n", ms(seen.Dead))
	fmt.Printf("  the page draws the new primary       %8s   (the dead primary is held on screen >= 1 s)\n", ms(seen.Primary))
}

// cpu is a process's CPU use over secs seconds, in percent of one core.
func cpu(pid, secs int) float64 {
	read := func() float64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			fail(err)
		}
		// The command name may hold spaces: fields count from after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		return ut + st
	}
	const hz = 100 // CLK_TCK on Linux
	a, t0 := read(), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	c, t1 := read(), time.Now()
	return (c - a) / hz / t1.Sub(t0).Seconds() * 100
}
