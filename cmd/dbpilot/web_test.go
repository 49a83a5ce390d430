package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// payload is put into an alert's summary: the page must show it as text
// and never run it.
const payload = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`

// ackComment is the ack's comment typed in the page, with markup that must
// stay text wherever the comment is shown.
const ackComment = `web test: failover checked <img src=x onerror="window.__pwned=5">`

// webRules are serve's alert rules for the web test: ReplicationIOStopped
// fires after 2 s (the built-in rule waits 10 s), with the payload in its
// summary.
const webRules = `groups:
  - name: web-test
    rules:
      - alert: ReplicationIOStopped
        expr: mysql_slave_status_slave_io_running == 0
        for: 2s
        severity: critical
        summary: 'replication IO thread stopped on {{ $labels.instance }} ` + payload + `'
      - alert: MySQLDown
        expr: mysql_up == 0
        for: 1s
        severity: critical
        summary: "{{ $labels.instance }} is down"
`

// webServe is a `dbpilot serve` running in this process on a fixed port,
// restartable on the same port.
type webServe struct {
	t      *testing.T
	args   []string
	URL    string
	Token  string
	cancel context.CancelFunc
	done   chan int
	out    *syncBuffer
	errOut *syncBuffer
	// client reads the API (http.DefaultClient, or one trusting the
	// test CA over HTTPS).
	client *http.Client
}

func (s *webServe) start() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan int, 1)
	s.out, s.errOut = &syncBuffer{}, &syncBuffer{}
	go func() { s.done <- run(ctx, s.args, s.out, s.errOut) }()
	testutil.WaitFor(s.t, 20*time.Second, "serve answers /api/health", func() (bool, string) {
		select {
		case code := <-s.done:
			s.done <- code
			return false, fmt.Sprintf("serve exited %d: %s %s", code, s.out.String(), s.errOut.String())
		default:
		}
		code, body := s.get("/api/health")
		return code == 200, body
	})
}

func (s *webServe) stop() {
	s.t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Error("serve did not stop within 30 s")
	}
}

// startWebServe starts a serve for the test on a free port with a fresh
// state, a random token, the sandbox's accounts and the YAML in more
// (clusters and the rest), stopped when the test ends.
func startWebServe(t *testing.T, d *sandbox.Descriptor, more string) *webServe {
	t.Helper()
	return startWebServeTLS(t, d, more, nil)
}

// startWebServeTLS is startWebServe, over HTTPS when ca is set: more then
// holds http_tls, and the client trusts ca.
func startWebServeTLS(t *testing.T, d *sandbox.Descriptor, more string, ca *x509.CertPool) *webServe {
	t.Helper()
	dir := t.TempDir()
	tok := make([]byte, 16)
	rand.Read(tok)
	s := &webServe{t: t, Token: hex.EncodeToString(tok), client: http.DefaultClient}
	scheme := "http"
	if ca != nil {
		scheme = "https"
		s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca}}}
	}
	cfg := fmt.Sprintf("state: %s\ntoken: %s\ncredentials: {user: %q, password: %q}\nreplication: {user: %q, password: %q}\n",
		filepath.Join(dir, "state.db"), s.Token, d.Admin.User, d.Admin.Password, d.Repl.User, d.Repl.Password) + more
	cfgPath := filepath.Join(dir, "dbpilot.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := closedPort(t)
	s.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
	s.args = []string{"serve", "--config", cfgPath, "--listen", fmt.Sprintf("127.0.0.1:%d", port)}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// get reads the API with the token.
func (s *webServe) get(path string) (int, string) {
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// webCluster is what the web test reads of GET /api/clusters/{name}.
type webCluster struct {
	State   string `json:"state"`
	Primary struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"primary"`
}

func (s *webServe) cluster(name string) (webCluster, string) {
	var c webCluster
	_, body := s.get("/api/clusters/" + name)
	json.Unmarshal([]byte(body), &c)
	return c, body
}

// sourcePort is the Master_Port of node's replication (0: not a replica).
func sourcePort(t *testing.T, d *sandbox.Descriptor, node string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := sandbox.Exec(ctx, d, node, "SHOW SLAVE STATUS")
	if err != nil {
		t.Fatalf("SHOW SLAVE STATUS on %s: %v", node, err)
	}
	m := rows.Maps()
	if len(m) == 0 {
		return 0
	}
	p, _ := strconv.Atoi(m[0]["Master_Port"])
	return p
}

func nodeSel(key string) string { return fmt.Sprintf(`g.node[data-key=%q]`, key) }

// TestWebConsole drives the web console in headless Chromium against a real
// serve watching a real 3-node semi-sync sandbox, as a person would: the
// overview, a page that is not found, the topology picture, charts (hover,
// shared cursor, range picker, zoom), alerts (and a script in an alert
// summary that must not run), a write without a token and with a wrong one,
// a drag-and-drop relocation and a refused one, a switchover, a serve
// restart under the open page, a real kill of the primary seen live (the
// status is pushed by serve's event stream), the ack of the blocked
// cluster, and the recovery and instance pages. One sandbox, one serve and
// one browser for all the steps, which run in order; each later step relies
// on the ones before. Screenshots go to build/screenshots/ (or
// $DBPILOT_SCREENSHOTS).
func TestWebConsole(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	page := browser.New(t)
	n1, n2, n3 := d.Nodes[0].Key().String(), d.Nodes[1].Key().String(), d.Nodes[2].Key().String()

	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(webRules), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startWebServe(t, d, fmt.Sprintf(`alerts: {rules: %s}
clusters:
  - name: %s
    seeds: [%s, %s, %s]
    auto_failover: true
    semi_sync: true
  # A cluster whose only seed does not answer: the overview shows it first.
  - name: zz-offline
    seeds: [127.0.0.1:%d]
`, rules, d.Name, n1, n2, n3, closedPort(t)))
	testutil.WaitFor(t, 15*time.Second, "serve sees the cluster ok with node1 primary", func() (bool, string) {
		c, body := s.cluster(d.Name)
		return c.State == "ok" && c.Primary.Port == d.Nodes[0].Port, body
	})
	started := time.Now()
	clusterURL := s.URL + "/clusters/" + d.Name
	// step runs one check as a subtest with the page bound to it; a failed
	// step leaves a screenshot FAILED-name and ends the test, as later
	// steps build on it.
	var p *browser.Page
	step := func(name string, f func(t *testing.T)) {
		ok := t.Run(name, func(t *testing.T) {
			p = page.With(t)
			defer func() {
				if t.Failed() {
					path, err := page.TryScreenshot("FAILED-" + name)
					t.Logf("screenshot of the failure: %s %v", path, err)
				}
			}()
			f(t)
		})
		if !ok {
			t.FailNow()
		}
	}

	step("overview", func(t *testing.T) {
		p.Navigate(s.URL + "/")
		card := fmt.Sprintf(`.cluster-card[data-cluster=%q]`, d.Name)
		p.WaitSelector(card, 15*time.Second)
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-state") === "ok"`, card), 15*time.Second)
		if n := p.Count(".cluster-card"); n != 2 {
			t.Errorf("%d cluster cards, want 2", n)
		}
		// Trouble first: the cluster nobody answers for, though its name
		// sorts last.
		p.WaitJS(`document.querySelector(".cluster-card")?.getAttribute("data-cluster") === "zz-offline"`, 15*time.Second)
		if st := p.Attr(`.cluster-card[data-cluster="zz-offline"]`, "data-state"); st == "ok" {
			t.Errorf("the offline cluster's card says %q", st)
		}
		href := p.EvalString(fmt.Sprintf(`(document.querySelector(%q)?.closest("a") ?? document.querySelector(%q + " a"))?.getAttribute("href") ?? null`, card, card))
		if href != "/clusters/"+d.Name {
			t.Errorf("the card links to %q, want /clusters/%s", href, d.Name)
		}
		if p.Attr("#conn", "data-state") != "ok" {
			t.Errorf("#conn data-state %q, want ok", p.Attr("#conn", "data-state"))
		}
		p.Screenshot("overview")
		// The filter, kept in the address.
		p.Type("input#filter", d.Name)
		p.WaitJS(`document.querySelectorAll(".cluster-card").length === 1`, 5*time.Second)
		if q := p.EvalString("location.search"); q != "?q="+d.Name {
			t.Errorf("the filter is %q in the address", q)
		}
		if got := p.Attr(".cluster-card", "data-cluster"); got != d.Name {
			t.Errorf("the filter %q shows %q", d.Name, got)
		}
	})

	step("not found", func(t *testing.T) {
		p.Navigate(s.URL + "/clusters/nosuch")
		p.WaitSelector(".not-found", 15*time.Second)
		if txt := p.Text(".not-found"); !strings.Contains(txt, "nosuch") {
			t.Errorf(".not-found says %q, which does not name nosuch", txt)
		}
		p.Screenshot("not-found")
		// Markup in the address is shown as text, never run.
		p.Eval("delete window.__pwned", nil)
		p.Navigate(s.URL + "/clusters/" + url.PathEscape(`<img src=x onerror="window.__pwned=3"><script>window.__pwned=4</script>`))
		p.WaitSelector(".not-found", 15*time.Second)
		if txt := p.Text(".not-found"); !strings.Contains(txt, `<img src=x onerror="window.__pwned=3">`) {
			t.Errorf("the not-found page does not show the name as text: %q", txt)
		}
		if pwned := p.EvalString(`window.__pwned === undefined ? null : String(window.__pwned)`); pwned != "" {
			t.Errorf("a cluster name in the address ran as script: window.__pwned = %s", pwned)
		}
		if n := p.Count(`main img, main script`); n != 0 {
			t.Errorf("%d elements made from the address", n)
		}
		for path, name := range map[string]string{"/instances/10.255.255.1:1": "10.255.255.1:1", "/recoveries/999999": "999999", "/recoveries/abc": "abc", "/nosuch/page": "/nosuch/page"} {
			p.Navigate(s.URL + path)
			p.WaitSelector(".not-found", 15*time.Second)
			if txt := p.Text(".not-found"); !strings.Contains(txt, name) {
				t.Errorf("%s: .not-found says %q, which does not name %s", path, txt, name)
			}
		}
	})

	step("topology", func(t *testing.T) {
		p.Navigate(clusterURL)
		p.WaitJS(`document.querySelectorAll("svg#topology g.node").length === 3`, 15*time.Second)
		p.WaitJS(`document.querySelectorAll('g.node[data-role="replica"]').length === 2`, 15*time.Second)
		if r := p.Attr(nodeSel(n1), "data-role"); r != "primary" {
			t.Errorf("node1 %s has role %q, want primary", n1, r)
		}
		for _, k := range []string{n2, n3} {
			if r := p.Attr(nodeSel(k), "data-role"); r != "replica" {
				t.Errorf("%s has role %q, want replica", k, r)
			}
			if st := p.Attr(nodeSel(k), "data-state"); st != "ok" {
				t.Errorf("%s has state %q, want ok", k, st)
			}
			if !p.Has(fmt.Sprintf(`path.edge[data-from=%q][data-to=%q]`, n1, k)) {
				t.Errorf("no edge from %s to %s", n1, k)
			}
			if ti := p.Attr(nodeSel(k), "tabindex"); ti != "0" {
				t.Errorf("%s tabindex %q, want 0", k, ti)
			}
		}
		// Each box says what orchestrator's does.
		for k, wants := range map[string][]string{
			n1: {"primary", "10.", "RW", "ROW", "GTID", "semi-sync primary", "2 replica(s)"},
			n2: {"replica", "10.", "ro", "ROW", "GTID", "semi-sync replica", "IO ✔ SQL ✔", "lag"},
		} {
			txt := p.Text(nodeSel(k))
			for _, w := range wants {
				if !strings.Contains(txt, w) {
					t.Errorf("the box of %s does not say %q: %q", k, w, txt)
				}
			}
		}
		p.Screenshot("topology")
	})

	step("charts", func(t *testing.T) {
		// serve collects every second; the page charts the last minutes.
		if wait := 10*time.Second - time.Since(started); wait > 0 {
			time.Sleep(wait)
		}
		p.Navigate(clusterURL)
		p.WaitSelector(`.chart[data-chart="qps"]`, 15*time.Second)
		// data-points counts the points of the range; "no data in this
		// range" (.nodata) says none has a value.
		testutil.WaitFor(t, 30*time.Second, "qps chart has data points", func() (bool, string) {
			v := p.Attr(`.chart[data-chart="qps"]`, "data-points")
			n, _ := strconv.Atoi(v)
			nodata := p.Has(`.chart[data-chart="qps"] .nodata`)
			if n > 0 && !nodata {
				return true, ""
			}
			// What serve stored, for the failure message: none, or data the
			// page did not draw.
			return false, fmt.Sprintf("data-points=%s, no-data notice %v; serve's own query: %s", v, nodata,
				webStored(s.URL, fmt.Sprintf(`count(mysql_global_status_questions{cluster=%q})`, d.Name)))
		})
		if !p.Has(`.chart[data-chart="qps"] canvas`) {
			t.Error("the qps chart has no canvas")
		}
		// Hovering one chart shows values in its legend and moves the
		// cursor of the others (one shared time cursor).
		qps := `.chart[data-chart="qps"]`
		p.Hover(qps+" .u-over", 0.97)
		legendTime := func(chart string) string {
			return p.EvalString(fmt.Sprintf(`document.querySelector('.chart[data-chart=%q] .u-legend .u-series:first-child .u-value')?.textContent ?? null`, chart))
		}
		p.WaitJS(`document.querySelector('.chart[data-chart="qps"] .u-legend .u-series:first-child .u-value')?.textContent.trim().length > 1`, 5*time.Second)
		if a, b := legendTime("qps"), legendTime("threads"); a != b || len(a) < 2 {
			t.Errorf("the cursor over qps shows time %q, the threads chart %q: want the same time", a, b)
		}
		// The range picker: 5 m, kept in the address and on reload.
		p.Type("select#range", kb.ArrowUp)
		p.WaitJS(`location.search === "?range=5m"`, 5*time.Second)
		p.Navigate(clusterURL + "?range=5m")
		p.WaitJS(`document.querySelector("select#range")?.value === "5m"`, 10*time.Second)
		testutil.WaitFor(t, 15*time.Second, "qps chart has data points at 5m", func() (bool, string) {
			n, _ := strconv.Atoi(p.Attr(qps, "data-points"))
			return n > 0 && !p.Has(qps+" .nodata"), fmt.Sprint("data-points ", n)
		})
		// Zoom by selection: a fixed window in the address, then back.
		p.DragAcross(qps+" .u-over", 0.5, 0.95)
		p.WaitJS(`/^\?from=\d+&to=\d+$/.test(location.search)`, 5*time.Second)
		p.WaitSelector("button.reset-zoom", 5*time.Second)
		p.Screenshot("charts-zoomed")
		p.Click("button.reset-zoom")
		p.WaitJS(`location.search === "?range=5m"`, 5*time.Second)
		p.Hover(qps+" .u-over", 0.9)
		p.Screenshot("charts")
	})

	step("bench load charts", func(t *testing.T) {
		// A real `dbpilot bench run --server` writes its intervals to this
		// serve; the cluster's page then charts the load beside the
		// servers' metrics.
		prep := []string{"--sandbox", d.Name, "--workload", "oltp_point_select", "--tables", "1", "--table-size", "1000"}
		if code, _, errOut := runCLI(t, append([]string{"bench", "prepare"}, prep...)...); code != 0 {
			t.Fatalf("bench prepare: exit %d: %s", code, errOut)
		}
		t.Cleanup(func() { runCLI(t, "bench", "cleanup", "--sandbox", d.Name, "--workload", "oltp_point_select") })
		if code, _, errOut := runCLI(t, append([]string{"bench", "run", "--server", s.URL, "--cluster", d.Name, "--token", s.Token,
			"--rate", "200", "--duration", "4s", "--json"}, prep...)...); code != 0 {
			t.Fatalf("bench run --server: exit %d: %s", code, errOut)
		}
		p.Navigate(clusterURL + "?range=5m")
		for _, id := range []string{"bench-rate", "bench-latency"} {
			sel := fmt.Sprintf(`.chart[data-chart=%q]`, id)
			p.WaitSelector(sel, 15*time.Second)
			testutil.WaitFor(t, 20*time.Second, id+" chart has data points", func() (bool, string) {
				n, _ := strconv.Atoi(p.Attr(sel, "data-points"))
				return n > 0 && !p.Has(sel+" .nodata"), fmt.Sprintf("data-points %d; serve's own query: %s", n,
					webStored(s.URL, fmt.Sprintf(`count(dbpilot_bench_rate{cluster=%q})`, d.Name)))
			})
		}
		p.Eval(`document.querySelector('.chart[data-chart="bench-rate"]').scrollIntoView()`, nil)
		p.Screenshot("charts-bench")
	})

	step("alert and script injection", func(t *testing.T) {
		p.Eval("delete window.__pwned", nil)
		if _, err := sandbox.Exec(context.Background(), d, "node3", "STOP SLAVE IO_THREAD"); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				sandbox.Exec(context.Background(), d, "node3", "START SLAVE IO_THREAD")
			}
		}()
		row := `.alert-row[data-alertname="ReplicationIOStopped"][data-state="firing"]`
		p.WaitSelector(row, 30*time.Second)
		txt := p.Text(row)
		if !strings.Contains(txt, n3) || !strings.Contains(txt, `<img src=x onerror="window.__pwned=1">`) || !strings.Contains(txt, "<script>") {
			t.Errorf("the alert row does not show the summary literally: %q", txt)
		}
		var pwned any
		p.Eval("window.__pwned", &pwned)
		if pwned != nil {
			t.Errorf("the alert summary ran as script: window.__pwned = %v", pwned)
		}
		var injected int
		p.Eval(`document.querySelectorAll("main img[src='x'], body script:not([src])").length`, &injected)
		if injected != 0 {
			t.Errorf("%d elements from the alert summary in the DOM", injected)
		}
		p.Screenshot("alerts")
		if _, err := sandbox.Exec(context.Background(), d, "node3", "START SLAVE IO_THREAD"); err != nil {
			t.Fatal(err)
		}
		restarted = true
		p.WaitGone(row, 30*time.Second)
	})

	step("write without a token", func(t *testing.T) {
		// From here on the charts show the last 5 minutes (the
		// screenshots' window), as a shared link would.
		p.Navigate(clusterURL + "?range=5m")
		p.WaitJS(`document.querySelectorAll("g.node").length === 3`, 15*time.Second)
		p.Eval("sessionStorage.clear()", nil)
		p.Drag(nodeSel(n3), nodeSel(n2))
		p.WaitJS(`document.querySelector("dialog#token")?.open`, 10*time.Second)
		p.Screenshot("token-dialog")
		if p.Has(`dialog#token button[data-action="cancel"]`) {
			p.Click(`dialog#token button[data-action="cancel"]`)
		} else {
			p.Key(kb.Escape)
		}
		p.WaitJS(`!document.querySelector("dialog#token")?.open`, 10*time.Second)
		p.WaitJS(`/token/i.test(document.querySelector("#notice")?.textContent ?? "")`, 10*time.Second)
		t.Logf("#notice: %s", p.Text("#notice"))
		p.Screenshot("token-refused")
		if got := sourcePort(t, d, "node3"); got != d.Nodes[0].Port {
			t.Errorf("node3 replicates from port %d after a refused relocation, want %d", got, d.Nodes[0].Port)
		}
	})

	step("wrong token", func(t *testing.T) {
		p.Drag(nodeSel(n3), nodeSel(n2))
		p.WaitJS(`document.querySelector("dialog#token")?.open`, 10*time.Second)
		p.Type("#token-input", "not-the-token")
		p.Click(`dialog#token button[data-action="save-token"]`)
		// The dry run is refused by serve; the page says so and forgets
		// the token.
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .refused")`, 15*time.Second)
		if msg := p.Text("dialog#confirm .refused"); !strings.Contains(msg, "wrong API token") || !strings.Contains(msg, "removed") {
			t.Errorf("the refusal of a wrong token says %q", msg)
		}
		if tok := p.EvalString(`sessionStorage.getItem("dbpilot.token")`); tok != "" {
			t.Errorf("the wrong token is still stored: %q", tok)
		}
		p.Screenshot("token-wrong")
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		p.WaitJS(`!document.querySelector("dialog#confirm")?.open`, 10*time.Second)
		if got := sourcePort(t, d, "node3"); got != d.Nodes[0].Port {
			t.Errorf("node3 replicates from port %d after a wrong token, want %d", got, d.Nodes[0].Port)
		}
	})

	step("relocate by drag and drop", func(t *testing.T) {
		p.Drag(nodeSel(n3), nodeSel(n2))
		p.WaitJS(`document.querySelector("dialog#token")?.open`, 10*time.Second)
		p.Type("#token-input", s.Token)
		p.Click(`dialog#token button[data-action="save-token"]`)
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .plan")`, 15*time.Second)
		plan := p.Text("dialog#confirm .plan")
		if !strings.Contains(plan, n3) {
			t.Errorf("the plan does not name %s: %q", n3, plan)
		}
		p.Screenshot("relocate-confirm")
		if got := sourcePort(t, d, "node3"); got != d.Nodes[0].Port {
			t.Fatalf("node3 moved before confirming (source port %d)", got)
		}
		p.Click(`dialog#confirm button[data-action="confirm"]`)
		p.WaitSelector("dialog#confirm .result", 30*time.Second)
		t.Logf("result: %s", p.Text("dialog#confirm .result"))
		testutil.WaitFor(t, 30*time.Second, "node3 replicates from node2 (SHOW SLAVE STATUS)", func() (bool, string) {
			got := sourcePort(t, d, "node3")
			return got == d.Nodes[1].Port, fmt.Sprint("Master_Port ", got)
		})
		p.WaitSelector(fmt.Sprintf(`path.edge[data-from=%q][data-to=%q]`, n2, n3), 15*time.Second)
		if r := p.Attr(nodeSel(n2), "data-role"); r != "intermediate" {
			t.Errorf("node2 has role %q after the relocation, want intermediate", r)
		}
		p.Screenshot("relocate-done")
		// The daemon audits the page's operation with detail.source=web.
		_, body := s.get("/api/audit")
		var audit []struct {
			Event  string            `json:"event"`
			Detail map[string]string `json:"detail"`
		}
		json.Unmarshal([]byte(body), &audit)
		web := 0
		for _, e := range audit {
			if e.Detail["source"] == "web" {
				web++
			}
		}
		if web == 0 {
			t.Errorf("no audit event with detail.source=web after a relocation from the page: %.2000s", body)
		}
		if p.EvalString(`document.querySelector("dialog#confirm")?.open ? "open" : null`) == "open" {
			p.Click(`dialog#confirm button[data-action="cancel"]`)
		}
	})

	step("relocate refused", func(t *testing.T) {
		p.WaitJS(`!document.querySelector("dialog#confirm")?.open`, 10*time.Second)
		// The primary below its own descendant: a cycle, refused by the API.
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-role") === "intermediate"`, nodeSel(n2)), 10*time.Second)
		p.Drag(nodeSel(n1), nodeSel(n3))
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .refused")`, 15*time.Second)
		msg := p.Text("dialog#confirm .refused")
		if strings.TrimSpace(msg) == "" {
			t.Error("the refusal is empty")
		}
		t.Logf("refused: %s", msg)
		p.Screenshot("relocate-refused")
		if p.Has(`dialog#confirm button[data-action="confirm"]:not([disabled])`) {
			t.Error("a refused relocation can still be confirmed")
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		p.WaitJS(`!document.querySelector("dialog#confirm")?.open`, 10*time.Second)
		if got := sourcePort(t, d, "node1"); got != 0 {
			t.Errorf("node1 replicates from port %d after a refused relocation", got)
		}
		if got := sourcePort(t, d, "node3"); got != d.Nodes[1].Port {
			t.Errorf("node3 replicates from port %d, want node2's %d", got, d.Nodes[1].Port)
		}
	})

	step("relocate by keyboard", func(t *testing.T) {
		// Focus a box, m, focus the new source, Enter: the same dry run.
		p.Eval(fmt.Sprintf(`document.querySelector(%q).focus()`, nodeSel(n3)), nil)
		p.Key("m")
		p.WaitJS(`/moving/.test(document.querySelector("#notice")?.textContent ?? "")`, 5*time.Second)
		p.Eval(fmt.Sprintf(`document.querySelector(%q).focus()`, nodeSel(n1)), nil)
		p.Key(kb.Enter)
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .plan")`, 15*time.Second)
		if title := p.Text("dialog#confirm h2"); !strings.Contains(title, n3) || !strings.Contains(title, n1) {
			t.Errorf("the keyboard relocation's dialog says %q", title)
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		p.WaitJS(`!document.querySelector("dialog#confirm")?.open`, 10*time.Second)
		if got := sourcePort(t, d, "node3"); got != d.Nodes[1].Port {
			t.Errorf("node3 replicates from port %d after a cancelled relocation, want node2's %d", got, d.Nodes[1].Port)
		}
	})

	step("relocate replicas by the handle", func(t *testing.T) {
		// node2's handle (its replicas: node3) dropped on node1.
		handle := nodeSel(n2) + " g.handle"
		p.WaitSelector(handle, 10*time.Second)
		p.Drag(handle, nodeSel(n1))
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .plan")`, 15*time.Second)
		if title := p.Text("dialog#confirm h2"); !strings.Contains(title, "replica(s) of "+n2) {
			t.Errorf("the dialog of a subtree move says %q", title)
		}
		if plan := p.Text("dialog#confirm .plan"); !strings.Contains(plan, n3) {
			t.Errorf("the plan does not name %s: %q", n3, plan)
		}
		p.Screenshot("relocate-replicas-confirm")
		p.Click(`dialog#confirm button[data-action="confirm"]`)
		p.WaitSelector("dialog#confirm .result", 30*time.Second)
		if res := p.Text("dialog#confirm .result"); !strings.Contains(res, "success") {
			t.Fatalf("relocate-replicas result: %q", res)
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		testutil.WaitFor(t, 30*time.Second, "node3 replicates from node1 again", func() (bool, string) {
			got := sourcePort(t, d, "node3")
			return got == d.Nodes[0].Port, fmt.Sprint("Master_Port ", got)
		})
		p.WaitSelector(fmt.Sprintf(`path.edge[data-from=%q][data-to=%q]`, n1, n3), 15*time.Second)
	})

	step("switchover", func(t *testing.T) {
		// Choose node2 in the select with the keyboard, as a person would.
		p.WaitJS(fmt.Sprintf(`Array.from(document.querySelectorAll("#switchover-to option"), (o) => o.value).includes(%q)`, n2), 15*time.Second)
		for i := 0; i < 3 && p.EvalString(`document.querySelector("#switchover-to").value`) != n2; i++ {
			p.Type("#switchover-to", kb.ArrowDown)
		}
		if v := p.EvalString(`document.querySelector("#switchover-to").value`); v != n2 {
			t.Fatalf("the switchover select holds %q, want %s", v, n2)
		}
		p.Click(`button[data-action="switchover"]`)
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm .plan")`, 15*time.Second)
		if plan := p.Text("dialog#confirm .plan"); !strings.Contains(plan, n2) {
			t.Errorf("the switchover plan does not name %s: %q", n2, plan)
		}
		p.Screenshot("switchover-confirm")
		if got := sourcePort(t, d, "node2"); got != d.Nodes[0].Port {
			t.Fatalf("node2 changed before confirming (source port %d)", got)
		}
		p.Click(`dialog#confirm button[data-action="confirm"]`)
		p.WaitSelector("dialog#confirm .result", 60*time.Second)
		if res := p.Text("dialog#confirm .result"); !strings.Contains(res, "success") {
			t.Fatalf("switchover result: %q", res)
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		if got := sourcePort(t, d, "node2"); got != 0 {
			t.Errorf("node2 replicates from port %d after the switchover to it", got)
		}
		for _, node := range []string{"node1", "node3"} {
			if got := sourcePort(t, d, node); got != d.Nodes[1].Port {
				t.Errorf("%s replicates from port %d after the switchover, want node2's %d", node, got, d.Nodes[1].Port)
			}
		}
		// The demoted primary applies what the new one writes (serve's
		// heartbeats at least): nothing was written on it after its final
		// position, which would stop its replication (error 1950). A write
		// on node2 after this point is awaited, not assumed from a sleep.
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		before, err := testutil.Value(d, "node2", "SELECT @@global.gtid_binlog_pos")
		if err != nil {
			t.Fatalf("gtid_binlog_pos of node2: %v", err)
		}
		pos := before
		testutil.WaitFor(t, 20*time.Second, "a write on node2 after the switchover", func() (bool, string) {
			pos, err = testutil.Value(d, "node2", "SELECT @@global.gtid_binlog_pos")
			return err == nil && pos != before, fmt.Sprint(pos, err)
		})
		for _, node := range []string{"node1", "node3"} {
			rows, err := sandbox.Exec(ctx, d, node, fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', 10) AS w", pos))
			if err != nil || len(rows.Maps()) != 1 {
				t.Fatalf("MASTER_GTID_WAIT on %s: %v", node, err)
			}
			if w := rows.Maps()[0]["w"]; w != "0" {
				st, _ := sandbox.Exec(ctx, d, node, "SHOW SLAVE STATUS")
				t.Errorf("%s did not apply node2's %s after the switchover (MASTER_GTID_WAIT %s): %v", node, pos, w, st.Maps())
			}
		}
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-role") === "primary"`, nodeSel(n2)), 15*time.Second)
		p.WaitSelector(fmt.Sprintf(`path.edge[data-from=%q][data-to=%q]`, n2, n1), 15*time.Second)
		p.Screenshot("switchover-done")
	})

	step("serve restart", func(t *testing.T) {
		p.Eval("window.__marker = 'restart'", nil)
		s.stop()
		p.WaitJS(`document.querySelector("#conn")?.getAttribute("data-state") === "reconnecting"`, 20*time.Second)
		if txt := p.Text("#conn"); !strings.Contains(txt, "reconnecting") {
			t.Errorf("#conn says %q while serve is down", txt)
		}
		p.Screenshot("reconnecting")
		s.start()
		p.WaitJS(`document.querySelector("#conn")?.getAttribute("data-state") === "ok"`, 30*time.Second)
		if m := p.EvalString("window.__marker ?? null"); m != "restart" {
			t.Error("the page reloaded to reconnect")
		}
		p.WaitJS(`document.querySelectorAll("g.node").length === 3`, 15*time.Second)
		// The charts came back without an error of their own.
		p.WaitJS(`document.querySelectorAll(".chart").length > 0 && !document.querySelector(".chart .error-line")`, 10*time.Second)
	})

	step("failover", func(t *testing.T) {
		testutil.WaitFor(t, 20*time.Second, "serve sees the cluster ok again", func() (bool, string) {
			c, body := s.cluster(d.Name)
			return c.State == "ok" && c.Primary.Port == d.Nodes[1].Port, body
		})
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-role") === "primary"`, nodeSel(n2)), 15*time.Second)
		p.Eval("window.__marker = 'failover'", nil)
		killed := time.Now()
		if err := sandbox.Kill(d, "node2"); err != nil {
			t.Fatal(err)
		}
		p.WaitJS(fmt.Sprintf(`["dead", "unreachable"].includes(document.querySelector(%q)?.getAttribute("data-state"))`, nodeSel(n2)), 30*time.Second)
		p.Screenshot("failover-during")
		newPrimary := fmt.Sprintf(`g.node[data-role="primary"]:not([data-key=%q])`, n2)
		p.WaitSelector(newPrimary, 30*time.Second)
		onPage := time.Since(killed)
		got := p.Attr(newPrimary, "data-key")
		c, body := s.cluster(d.Name)
		if want := fmt.Sprintf("%s:%d", c.Primary.Host, c.Primary.Port); got != want {
			t.Errorf("the page shows %s as the primary, serve %s (%s)", got, want, body)
		}
		if n := p.Count(`g.node[data-role="primary"]`); n != 1 {
			t.Errorf("%d primaries on the page after the failover", n)
		}
		if m := p.EvalString("window.__marker ?? null"); m != "failover" {
			t.Error("the page reloaded during the failover")
		}
		// The old primary stays on the picture, outside the cluster and dead.
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-role") === "detached"`, nodeSel(n2)), 10*time.Second)
		if st := p.Attr(nodeSel(n2), "data-state"); st != "dead" {
			t.Errorf("the old primary's state is %q after the failover, want dead", st)
		}
		if txt := p.Text(nodeSel(n2)); !strings.Contains(txt, "former primary") {
			t.Errorf("the old primary's box says %q, not that it is the former primary", txt)
		}
		t.Logf("new primary %s on the page %s after the kill (figure only; bench/webui.sh measures)", got, onPage.Round(10*time.Millisecond))
		p.Screenshot("failover-after")
	})
	step("ack", func(t *testing.T) {
		// The automatic failover blocks the next one until acknowledged.
		ack := `button[data-action="ack"]:not([disabled])`
		p.WaitSelector(ack, 30*time.Second)
		p.Click(ack)
		p.WaitJS(`document.querySelector("dialog#confirm")?.open && document.querySelector("dialog#confirm input[name=comment]")`, 10*time.Second)
		if p.Has(`dialog#confirm button[data-action="confirm"]:not([disabled])`) {
			t.Error("an ack without a comment can be confirmed")
		}
		// The comment carries markup: shown as text in the timeline, never run.
		p.Eval("delete window.__pwned", nil)
		p.Type("dialog#confirm input[name=comment]", ackComment)
		p.Click(`dialog#confirm button[data-action="confirm"]`)
		p.WaitSelector("dialog#confirm .result", 15*time.Second)
		if res := p.Text("dialog#confirm .result"); !strings.Contains(res, "acknowledged") {
			t.Errorf("ack result: %q", res)
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		_, body := s.get("/api/recoveries?cluster=" + d.Name)
		var recs []struct {
			Kind         string            `json:"kind"`
			Acked        bool              `json:"acked"`
			AckComment   string            `json:"ack_comment"`
			LostReplicas []json.RawMessage `json:"lost_replicas"`
		}
		if err := json.Unmarshal([]byte(body), &recs); err != nil || len(recs) == 0 {
			t.Fatalf("recoveries: %v %.500s", err, body)
		}
		if r := recs[0]; !r.Acked || r.AckComment != ackComment {
			t.Errorf("the last recovery (%s) after the ack from the page: acked %v, comment %q", r.Kind, r.Acked, r.AckComment)
		}
		if r := recs[0]; len(r.LostReplicas) != 0 {
			t.Errorf("the failover lost replicas: %s", r.LostReplicas)
		}
		p.WaitSelector(`button[data-action="ack"][disabled]`, 10*time.Second)
		p.WaitJS(`Array.from(document.querySelectorAll(".recovery-row")).some((r) => r.textContent.includes("<img src=x onerror="))`, 10*time.Second)
		if pwned := p.EvalString(`window.__pwned === undefined ? null : String(window.__pwned)`); pwned != "" {
			t.Errorf("the ack comment ran as script: window.__pwned = %s", pwned)
		}
		p.Screenshot("acked")
	})

	step("recovery page", func(t *testing.T) {
		row := `.recovery-row.ok a`
		p.WaitSelector(row, 10*time.Second)
		id := p.EvalString(`document.querySelector(".recovery-row.ok")?.getAttribute("data-id") ?? null`)
		p.Click(row)
		p.WaitJS(fmt.Sprintf(`location.pathname === "/recoveries/%s"`, id), 10*time.Second)
		p.WaitSelector(".audit-row", 15*time.Second)
		if n := p.Count(".audit-row"); n < 2 {
			t.Errorf("recovery %s shows %d audit steps", id, n)
		}
		p.Screenshot("recovery")
		// The address works on reload.
		p.Navigate(s.URL + "/recoveries/" + id)
		p.WaitSelector(".audit-row", 15*time.Second)
	})

	step("instance page", func(t *testing.T) {
		c, _ := s.cluster(d.Name)
		k := fmt.Sprintf("%s:%d", c.Primary.Host, c.Primary.Port)
		p.Navigate(s.URL + "/instances/" + k)
		p.WaitSelector("dl.inspect", 15*time.Second)
		txt := p.Text("main")
		for _, want := range []string{k, "primary", "gtid_binlog_pos", "semi_sync", "10."} {
			if !strings.Contains(txt, want) {
				t.Errorf("the instance page of %s does not show %q", k, want)
			}
		}
		p.WaitSelector(`.chart[data-chart="qps"]`, 15*time.Second)
		p.Screenshot("instance")
	})
	step("fenced old primary rejoins", func(t *testing.T) {
		// The killed primary comes back: serve fences it; the page shows it
		// fenced with no errant transactions, and rejoins it from its page.
		if err := sandbox.Start(context.Background(), d, "node2", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
			t.Fatal(err)
		}
		p.Navigate(clusterURL)
		fenced := fmt.Sprintf(`g.node[data-key=%q][data-fenced="true"][data-errant=""][data-state="ok"]`, n2)
		p.WaitSelector(fenced, 30*time.Second)
		if txt := p.Text(nodeSel(n2)); !strings.Contains(txt, "fenced · errant: none") || !strings.Contains(txt, "ro") {
			t.Errorf("the fenced old primary's box says %q", txt)
		}
		p.WaitJS(`Array.from(document.querySelectorAll("ul.problems li")).some((li) => li.textContent.includes("FencedOldPrimary"))`, 10*time.Second)
		p.Screenshot("fenced")
		p.Navigate(s.URL + "/instances/" + n2)
		p.WaitSelector(`p.fenced-line[data-errant=""]`, 15*time.Second)
		p.Click(`button[data-action="rejoin"]:not([disabled])`)
		p.WaitSelector("dialog#confirm .plan", 15*time.Second)
		if plan := p.Text("dialog#confirm .plan"); !strings.Contains(plan, "attach "+n2) {
			t.Errorf("the rejoin plan says %q", plan)
		}
		p.Click(`dialog#confirm button[data-action="confirm"]`)
		p.WaitSelector("dialog#confirm .result", 30*time.Second)
		if res := p.Text("dialog#confirm .result"); !strings.Contains(res, "success") || !strings.Contains(res, "rejoin") {
			t.Errorf("rejoin result: %q", res)
		}
		p.Click(`dialog#confirm button[data-action="cancel"]`)
		p.Navigate(clusterURL)
		p.WaitJS(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-role") === "replica" && !document.querySelector(%q)?.hasAttribute("data-fenced")`, nodeSel(n2), nodeSel(n2)), 15*time.Second)
		p.Screenshot("rejoined")
	})
	step("dark theme", func(t *testing.T) {
		// The system's dark preference: dark page, text still readable.
		p.PreferDark(true)
		defer p.PreferDark(false)
		p.Navigate(clusterURL + "?range=5m")
		p.WaitJS(`document.querySelectorAll("g.node").length >= 2`, 15*time.Second)
		var lum struct{ Bg, Fg float64 }
		p.Eval(`(() => { const l = (c) => { const [r, g, b] = c.match(/\d+(\.\d+)?/g).map(Number); return (0.2126*r + 0.7152*g + 0.0722*b) / 255; };
			const st = getComputedStyle(document.body); return {Bg: l(st.backgroundColor), Fg: l(st.color)}; })()`, &lum)
		if lum.Bg > 0.3 || lum.Fg < 0.6 {
			t.Errorf("dark theme: background luminance %.2f, text %.2f", lum.Bg, lum.Fg)
		}
		p.Screenshot("dark")
	})
}

// TestWebConsoleRingReadsNeedToken: a serve whose reads need the token
// (ui.read_requires_token, the default off-loopback) on a 3-node ring. The
// page itself loads without the token, asks for it when the API refuses a
// read, refuses a wrong one with a clear message and does not keep it, and
// with the right one draws the ring: every node, one channel into each, the
// edge that closes the cycle drawn as such.
func TestWebConsoleRingReadsNeedToken(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyRing, Nodes: 3})
	page := browser.New(t)
	keys := []string{d.Nodes[0].Key().String(), d.Nodes[1].Key().String(), d.Nodes[2].Key().String()}
	s := startWebServe(t, d, fmt.Sprintf(`ui: {read_requires_token: true}
clusters:
  - name: %s
    seeds: [%s]
`, d.Name, strings.Join(keys, ", ")))

	// The API refuses a read without the token.
	resp, err := http.Get(s.URL + "/api/clusters")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/clusters without the token: %d, want 401", resp.StatusCode)
	}

	p := page
	p.Navigate(s.URL + "/clusters/" + d.Name)
	p.WaitJS(`document.querySelector("dialog#token")?.open`, 15*time.Second)
	p.Screenshot("reads-token-dialog")
	p.Type("#token-input", "wrong")
	p.Click(`dialog#token button[data-action="save-token"]`)
	// The wrong token is refused and forgotten; the page asks again.
	p.WaitJS(`document.querySelector("dialog#token")?.open && /wrong/i.test(document.querySelector("#notice")?.textContent ?? "")`, 15*time.Second)
	if tok := p.EvalString(`sessionStorage.getItem("dbpilot.token")`); tok != "" {
		t.Errorf("the wrong token is kept: %q", tok)
	}
	p.Eval(`document.querySelector("#token-input").value = ""`, nil)
	p.Type("#token-input", s.Token)
	p.Click(`dialog#token button[data-action="save-token"]`)
	p.WaitJS(`document.querySelectorAll("svg#topology g.node").length === 3`, 30*time.Second)
	if txt := p.Text("#token-button"); !strings.Contains(txt, "token set") {
		t.Errorf("the header says %q once the token is set", txt)
	}

	// The ring: one channel into each node, from the one before it.
	for i, k := range keys {
		from := keys[(i+2)%3]
		p.WaitSelector(fmt.Sprintf(`path.edge[data-from=%q][data-to=%q]`, from, k), 15*time.Second)
	}
	if n := p.Count("path.edge"); n != 3 {
		t.Errorf("%d edges drawn for a ring of 3", n)
	}
	if n := p.Count(`path.edge[data-kind="back"]`); n != 1 {
		t.Errorf("%d edges drawn as closing the cycle, want 1", n)
	}
	p.Screenshot("ring")
}

// webStored runs an instant PromQL query on serve's metrics API and
// returns its answer, shortened (for failure messages).
func webStored(base, expr string) string {
	resp, err := http.Get(base + "/api/metrics/query?" + url.Values{"expr": {expr}}.Encode())
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}
