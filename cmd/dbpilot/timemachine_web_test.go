package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// tmRules: an alert on a stopped SQL thread that fires after 1 s, and
// MySQLDown after 1 s (the built-in rule waits 5 s).
const tmRules = `groups:
  - name: timemachine-test
    rules:
      - alert: SQLThreadStopped
        expr: mysql_slave_status_slave_sql_running == 0
        for: 1s
        severity: warning
        summary: "SQL thread stopped on {{ $labels.instance }}"
      - alert: MySQLDown
        expr: mysql_up == 0
        for: 1s
        severity: critical
        summary: "{{ $labels.instance }} is down"
`

// tmAlert is what the test reads of an alert.
type tmAlert struct {
	Rule   string            `json:"rule"`
	State  string            `json:"state"`
	Labels map[string]string `json:"labels"`
}

// tmRecovery is what the test reads of a recovery.
type tmRecovery struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	DetectedAt time.Time `json:"detected_at"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	Success    bool      `json:"success"`
	NewPrimary struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"new_primary"`
}

// tmNode is one box of the tree as the page draws it.
type tmNode struct{ Key, Role, State string }

// TestWebConsoleTimeMachine drives the cluster page's time bar in headless
// Chromium against a real serve on a real 3-node sandbox whose primary is
// killed and failed over by serve: with the keyboard and the mouse to
// before the failover (the old primary is the primary), to its moment (the
// dead primary, its problem and its alert), to after it (the new primary);
// a ?at= link opened in another tab shows the same tree; compare mode
// highlights what the failover changed; Live returns to the present.
// Screenshots (timemachine-before, -during, -after, -compare) go to
// build/screenshots/ (or $DBPILOT_SCREENSHOTS). The redraw times of the key
// presses are logged (bench/timemachine.sh measures them).
func TestWebConsoleTimeMachine(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	page := browser.New(t)
	n1, n2, n3 := d.Nodes[0].Key().String(), d.Nodes[1].Key().String(), d.Nodes[2].Key().String()
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(tmRules), 0o600); err != nil {
		t.Fatal(err)
	}
	// The pre-failover hook holds the recovery 2 s: serve's history records
	// what its observations see, and a failover done within one
	// observation (0.3 s here) leaves no record of its dead primary.
	s := startWebServe(t, d, fmt.Sprintf(`alerts: {rules: %s}
hooks: {pre_failover: ["sleep 2"]}
clusters:
  - name: %s
    seeds: [%s, %s, %s]
    auto_failover: true
`, rules, d.Name, n1, n2, n3))
	testutil.WaitFor(t, 20*time.Second, "serve sees the cluster ok with node1 primary", func() (bool, string) {
		c, body := s.cluster(d.Name)
		return c.State == "ok" && c.Primary.Port == d.Nodes[0].Port, body
	})
	// The history before the failover: a healthy cluster, node3's SQL
	// thread stopped until its alert fires, started again, then the kill.
	time.Sleep(2 * time.Second)
	sqlThread := func(verb string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := sandbox.Exec(ctx, d, "node3", verb+" SLAVE SQL_THREAD"); err != nil {
			t.Fatalf("%s SLAVE SQL_THREAD on node3: %v", verb, err)
		}
	}
	alertIs := func(state string) func() (bool, string) {
		return func() (bool, string) {
			var as []tmAlert
			_, body := s.get("/api/alerts?cluster=" + url.QueryEscape(d.Name))
			json.Unmarshal([]byte(body), &as)
			for _, a := range as {
				if a.Rule == "SQLThreadStopped" && a.Labels["instance"] == n3 && a.State == state {
					return true, body
				}
			}
			return false, body
		}
	}
	sqlThread("STOP")
	testutil.WaitFor(t, 20*time.Second, "SQLThreadStopped fires for node3", alertIs("firing"))
	sqlThread("START")
	testutil.WaitFor(t, 20*time.Second, "SQLThreadStopped resolves", alertIs("resolved"))
	time.Sleep(2 * time.Second)
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	var newPrimary string
	testutil.WaitFor(t, 45*time.Second, "serve fails over to a new primary", func() (bool, string) {
		c, body := s.cluster(d.Name)
		newPrimary = fmt.Sprintf("%s:%d", c.Primary.Host, c.Primary.Port)
		return c.State == "ok" && c.Primary.Port != 0 && c.Primary.Port != d.Nodes[0].Port, body
	})
	var rec tmRecovery
	testutil.WaitFor(t, 20*time.Second, "the failover is recorded, ended", func() (bool, string) {
		var recs []tmRecovery
		_, body := s.get("/api/recoveries?cluster=" + url.QueryEscape(d.Name))
		json.Unmarshal([]byte(body), &recs)
		for _, r := range recs {
			if strings.HasPrefix(r.Kind, "failover") && r.Success && !r.Ended.IsZero() {
				rec = r
				return true, body
			}
		}
		return false, body
	})
	if got := fmt.Sprintf("%s:%d", rec.NewPrimary.Host, rec.NewPrimary.Port); got != newPrimary {
		t.Fatalf("recovery %d promoted %s, serve says the primary is %s", rec.ID, got, newPrimary)
	}
	failedAt := rec.DetectedAt
	if failedAt.IsZero() {
		failedAt = rec.Started
	}
	// The history has the new primary (a change after the recovery's end).
	testutil.WaitFor(t, 15*time.Second, "the history records the new primary", func() (bool, string) {
		_, body := s.get("/api/clusters/" + url.PathEscape(d.Name) + "/at?t=" + url.QueryEscape(time.Now().UTC().Format(time.RFC3339Nano)))
		var at struct {
			Primary struct {
				Host string `json:"host"`
				Port int    `json:"port"`
			} `json:"primary"`
		}
		json.Unmarshal([]byte(body), &at)
		return fmt.Sprintf("%s:%d", at.Primary.Host, at.Primary.Port) == newPrimary, body
	})
	time.Sleep(1500 * time.Millisecond) // a moment after the failover, before now

	clusterURL := s.URL + "/clusters/" + d.Name
	var p *browser.Page
	step := func(name string, f func(t *testing.T)) {
		ok := t.Run(name, func(t *testing.T) {
			p = page.With(t)
			defer func() {
				if t.Failed() {
					path, err := page.TryScreenshot("FAILED-timemachine-" + name)
					t.Logf("screenshot of the failure: %s %v\n%s", path, err, page.State())
					_, changes := s.get("/api/clusters/" + url.PathEscape(d.Name) + "/changes")
					_, alerts := s.get("/api/alerts")
					t.Logf("the recovery: %+v\nchanges: %s\nalerts: %s", rec, summaries(changes), alerts)
				}
			}()
			f(t)
		})
		if !ok {
			t.FailNow()
		}
	}
	// drawn waits until the view shows the moment it asks for.
	drawn := func(p *browser.Page) {
		p.T.Helper()
		p.WaitJS(`(() => { const v = document.querySelector(".view.cluster"); return !!v && v.dataset.moment !== "live" && v.dataset.drawn === v.dataset.moment; })()`, 15*time.Second)
	}
	moment := func(p *browser.Page) time.Time {
		p.T.Helper()
		m := p.Attr(".view.cluster", "data-moment")
		tm, err := time.Parse(time.RFC3339Nano, m)
		if err != nil {
			p.T.Fatalf("the view's data-moment %q: %v", m, err)
		}
		return tm
	}
	nodes := func(p *browser.Page, svg string) []tmNode {
		p.T.Helper()
		var out []tmNode
		p.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll("svg#%s g.node")).map((g) => ({Key: g.dataset.key, Role: g.dataset.role, State: g.dataset.state}))`, svg), &out)
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out
	}
	role := func(ns []tmNode, key string) (string, string) {
		for _, n := range ns {
			if n.Key == key {
				return n.Role, n.State
			}
		}
		return "", ""
	}
	var redraws []float64
	redraw := func(p *browser.Page) {
		if v := p.EvalString(`(() => { const v = document.querySelector(".view.cluster"); return v && v.dataset.redrawAt === v.dataset.moment ? v.dataset.redrawMs : null; })()`); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil {
				redraws = append(redraws, ms)
			}
		}
	}
	press := func(p *browser.Page, key string) {
		p.T.Helper()
		before := p.Attr(".view.cluster", "data-moment")
		p.Eval(`document.querySelector("#tb-track").focus()`, nil)
		p.Key(key)
		p.WaitJS(fmt.Sprintf(`document.querySelector(".view.cluster")?.dataset.moment !== %q`, before), 5*time.Second)
		drawn(p)
		redraw(p)
	}
	var beforeURL string
	var beforeTree []tmNode
	var beforeAt, afterAt time.Time

	step("live", func(t *testing.T) {
		p.Navigate(clusterURL)
		p.WaitSelector(`#timebar[data-mode="live"]`, 15*time.Second)
		p.WaitJS(`!!document.querySelector("#timebar")?.dataset.start`, 15*time.Second)
		p.WaitSelector(`.tb-marker[data-kind="failover"]`, 15*time.Second)
		p.WaitSelector(`.tb-marker[data-kind="alert"]`, 15*time.Second)
		p.WaitSelector(`.tb-marker[data-kind="thread-stop"]`, 15*time.Second)
		p.WaitSelector(`.tb-marker[data-kind="thread-start"]`, 15*time.Second)
		if p.Attr(".view.cluster", "data-moment") != "live" || !p.Has(`button[data-action="switchover"]`) {
			t.Errorf("the page opened without ?at= is not the live page")
		}
		if p.Has(`#tb-live:not([disabled])`) {
			t.Error("the Live button is enabled while live")
		}
		// The failover's marker: at its detection, or where the history
		// recorded the dead primary (a few ms after).
		mt := p.Attr(`.tb-marker[data-kind="failover"]`, "data-t")
		if got, err := time.Parse(time.RFC3339Nano, mt); err != nil || got.Before(failedAt.Add(-time.Millisecond)) || got.After(failedAt.Add(5*time.Second)) {
			t.Errorf("the failover marker is at %q, the recovery was detected at %s", mt, failedAt.UTC().Format(time.RFC3339Nano))
		}
	})

	step("keyboard to before", func(t *testing.T) {
		// PageUp steps back from change to change until the old primary is
		// the primary again, up and running.
		for i := 0; i < 40; i++ {
			press(p, kb.PageUp)
			if r, st := role(nodes(p, "topology"), n1); r == "primary" && st == "ok" {
				break
			}
		}
		tree := nodes(p, "topology")
		if r, st := role(tree, n1); r != "primary" || st != "ok" {
			t.Fatalf("stepping back through the changes never showed %s as the primary: %v", n1, tree)
		}
		if m := moment(p); !m.Before(failedAt) {
			t.Errorf("the old primary is drawn up at %s, after the failover's detection %s", m, failedAt)
		}
		for _, k := range []string{n2, n3} {
			if r, _ := role(tree, k); r != "replica" {
				t.Errorf("%s is %q before the failover, want replica", k, r)
			}
			if !p.Has(fmt.Sprintf(`svg#topology path.edge[data-from=%q][data-to=%q]`, n1, k)) {
				t.Errorf("no edge %s → %s before the failover", n1, k)
			}
		}
		// ±1 s and ±1 min.
		m0 := moment(p)
		press(p, kb.ArrowLeft)
		if got := moment(p); m0.Sub(got) != time.Second {
			t.Errorf("← moved from %s to %s, want 1 s back", m0, got)
		}
		press(p, kb.ArrowRight)
		if got := moment(p); !got.Equal(m0) {
			t.Errorf("→ moved to %s, want %s", got, m0)
		}
		// The address keeps the moment; actions are off.
		q, _ := url.ParseQuery(strings.TrimPrefix(p.EvalString("location.search"), "?"))
		if q.Get("at") != m0.UTC().Format("2006-01-02T15:04:05.000Z") {
			t.Errorf("?at=%q for the moment %s", q.Get("at"), m0)
		}
		if p.Attr("#timebar", "data-mode") != "past" || !p.Has("#past-note") || p.Has(`button[data-action="switchover"]`) || p.Has(`button[data-action="failover"]`) {
			t.Error("a past moment shows the actions or no note that they are off")
		}
		if p.Attr("svg#topology", "data-readonly") != "true" {
			t.Error("the tree of a past moment can be dragged")
		}
		p.WaitJS(fmt.Sprintf(`document.querySelector('.chart[data-chart="qps"]')?.dataset.cursor === %q`, q.Get("at")), 10*time.Second)
		if p.Attr(`.chart[data-chart="qps"]`, "data-cursor-shown") != "true" {
			t.Error("the qps chart's window does not contain the moment")
		}
		beforeURL, beforeTree, beforeAt = p.EvalString("location.href"), tree, m0
		p.Screenshot("timemachine-before")
	})

	step("mouse to during", func(t *testing.T) {
		// The failover's marker, clicked: the moment it was detected.
		p.Click(`.tb-marker[data-kind="failover"]`)
		p.WaitJS(fmt.Sprintf(`document.querySelector(".view.cluster")?.dataset.moment === %q`, p.Attr(`.tb-marker[data-kind="failover"]`, "data-t")), 5*time.Second)
		drawn(p)
		tree := nodes(p, "topology")
		if r, st := role(tree, n1); r != "primary" || (st != "dead" && st != "unreachable") {
			t.Errorf("at the failover's detection %s is %s/%s, want the primary, dead", n1, r, st)
		}
		if !p.Has(`ul.problems li[data-code="DeadPrimary"], ul.problems li[data-code="UnreachablePrimary"]`) {
			t.Errorf("no dead primary problem at the failover's detection: %q", p.Text("main"))
		}
		p.Screenshot("timemachine-during")
		// The alerts firing then: the old primary's MySQLDown when serve
		// fired it before the failover took it out of the cluster.
		if p.Has(`.tb-marker[data-kind="alert"][title*="MySQLDown"]`) {
			t.Logf("MySQLDown of %s is in the history", n1)
		}
		// An alert's marker (the stopped SQL thread's): firing then, and
		// its thread drawn stopped.
		sel := fmt.Sprintf(`.tb-marker[data-kind="alert"][title*="SQLThreadStopped"][title*=%q]`, n3)
		p.Click(sel)
		p.WaitJS(fmt.Sprintf(`document.querySelector(".view.cluster")?.dataset.moment === %q`, p.Attr(sel, "data-t")), 5*time.Second)
		drawn(p)
		p.WaitSelector(`.alert-row[data-alertname="SQLThreadStopped"][data-state="firing"]`, 5*time.Second)
		if txt := p.Text(`.alert-row[data-alertname="SQLThreadStopped"]`); !strings.Contains(txt, n3) {
			t.Errorf("the alert firing then is not node3's: %q", txt)
		}
		if _, st := role(nodes(p, "topology"), n3); st != "stopped" {
			t.Errorf("when its SQL thread's alert fired %s is drawn %q, want stopped", n3, st)
		}
		// Dragging the handle back before the failover: the old primary again.
		start, err := time.Parse(time.RFC3339Nano, p.Attr("#timebar", "data-start"))
		if err != nil {
			t.Fatal(err)
		}
		target := start.Add(failedAt.Sub(start) / 2)
		f := float64(target.Sub(start)) / float64(time.Since(start))
		p.DragAcross("#tb-track", 0.98, f)
		drawn(p)
		if m := moment(p); !m.Before(failedAt) {
			t.Fatalf("the drag to %.3f of the bar landed at %s, after the failover's detection %s", f, m, failedAt)
		}
		if r, st := role(nodes(p, "topology"), n1); r != "primary" || st != "ok" {
			t.Errorf("dragged to %s: %s is %s/%s, want the primary, ok", moment(p), n1, r, st)
		}
	})

	step("keyboard to after", func(t *testing.T) {
		for i := 0; i < 40; i++ {
			press(p, kb.PageDown)
			if r, _ := role(nodes(p, "topology"), newPrimary); r == "primary" {
				break
			}
		}
		tree := nodes(p, "topology")
		if r, st := role(tree, newPrimary); r != "primary" || st != "ok" {
			t.Fatalf("stepping on through the changes never showed %s as the primary: %v", newPrimary, tree)
		}
		// The old primary left the cluster (the history records it gone
		// until it rejoins): not drawn, or drawn apart.
		if r, _ := role(tree, n1); r != "" && r != "detached" {
			t.Errorf("after the failover the old primary %s is %q, want gone or detached", n1, r)
		}
		afterAt = moment(p)
		if !afterAt.After(failedAt) {
			t.Errorf("the new primary is drawn at %s, before the failover's detection %s", afterAt, failedAt)
		}
		p.Screenshot("timemachine-after")
	})

	step("link in a new tab", func(t *testing.T) {
		p2 := page.NewTab().With(t)
		p2.Navigate(beforeURL)
		drawn(p2)
		if got := moment(p2); !got.Equal(beforeAt) {
			t.Errorf("the link %s opens at %s, want %s", beforeURL, got, beforeAt)
		}
		if got := nodes(p2, "topology"); fmt.Sprint(got) != fmt.Sprint(beforeTree) {
			t.Errorf("the link shows %v, the page showed %v", got, beforeTree)
		}
		if p2.Attr("#timebar", "data-at") != p2.Attr(".view.cluster", "data-moment") {
			t.Errorf("the time bar is at %q, the view at %q", p2.Attr("#timebar", "data-at"), p2.Attr(".view.cluster", "data-moment"))
		}
		p2.Tab.Close()
	})

	step("compare", func(t *testing.T) {
		// Back to before (the browser's history), pin it as A, then B after.
		p.Navigate(beforeURL)
		drawn(p)
		p.Click("#tb-compare")
		p.WaitSelector(`#timebar[data-mode="compare"]`, 5*time.Second)
		for i := 0; i < 40; i++ {
			press(p, kb.PageDown)
			if moment(p).Equal(afterAt) || moment(p).After(afterAt) {
				break
			}
		}
		p.WaitJS(`document.querySelectorAll(".compare-side").length === 2 && Array.from(document.querySelectorAll(".compare-side")).every((s) => s.dataset.drawn === s.dataset.at)`, 15*time.Second)
		q, _ := url.ParseQuery(strings.TrimPrefix(p.EvalString("location.search"), "?"))
		if q.Get("at") != beforeAt.UTC().Format("2006-01-02T15:04:05.000Z") || q.Get("compare") == "" {
			t.Errorf("compare's address: %s", p.EvalString("location.search"))
		}
		// The new primary changed on both sides; the old one in A (in B it
		// is gone, or drawn apart and highlighted too).
		for _, side := range []string{"a", "b"} {
			if !p.Has(fmt.Sprintf(`svg#topology-%s g.node.changed[data-changed="true"][data-key=%q]`, side, newPrimary)) {
				t.Errorf("the new primary %s is not highlighted in %s", newPrimary, side)
			}
		}
		if !p.Has(fmt.Sprintf(`svg#topology-a g.node.changed[data-key=%q]`, n1)) || p.Has(fmt.Sprintf(`svg#topology-b g.node[data-key=%q]:not(.changed)`, n1)) {
			t.Errorf("the old primary %s is not highlighted", n1)
		}
		if !p.Has(fmt.Sprintf(`svg#topology-a path.edge[data-changed="removed"][data-from=%q]`, n1)) {
			t.Error("A's tree does not mark the edges from the old primary as gone")
		}
		if !p.Has(fmt.Sprintf(`svg#topology-b path.edge[data-changed="added"][data-from=%q]`, newPrimary)) {
			t.Error("B's tree does not mark the edges from the new primary as new")
		}
		if txt := p.Text("#compare-diff"); !strings.Contains(txt, fmt.Sprintf("primary %s → %s", n1, newPrimary)) {
			t.Errorf("the differences say %q", txt)
		}
		p.Screenshot("timemachine-compare")
	})

	step("live returns", func(t *testing.T) {
		p.Eval(`document.querySelector("#tb-track").focus()`, nil)
		p.Key(kb.Escape)
		p.WaitJS(`document.querySelector(".view.cluster")?.dataset.moment === "live"`, 5*time.Second)
		if s := p.EvalString("location.search"); strings.Contains(s, "at=") || strings.Contains(s, "compare=") {
			t.Errorf("live keeps a moment in the address: %q", s)
		}
		p.WaitSelector(`button[data-action="switchover"]`, 10*time.Second)
		p.WaitJS(fmt.Sprintf(`document.querySelector('svg#topology g.node[data-key=%q]')?.getAttribute("data-role") === "primary"`, newPrimary), 10*time.Second)
		if p.Has("#past-note") || p.Has(".chart[data-cursor]") {
			t.Error("the live page keeps the past's note or chart cursors")
		}
	})
	sort.Float64s(redraws)
	if len(redraws) > 0 {
		t.Logf("redraw of a past moment after a key press: %d presses, median %.0f ms, max %.0f ms (figures only; bench/timemachine.sh measures)", len(redraws), redraws[len(redraws)/2], redraws[len(redraws)-1])
	}
}

// summaries shortens an answer of /changes to the time, kind and summary
// of each change (for failure messages).
func summaries(body string) string {
	var cs []struct {
		Time    time.Time `json:"time"`
		Kind    string    `json:"kind"`
		Summary string    `json:"summary"`
	}
	if err := json.Unmarshal([]byte(body), &cs); err != nil {
		return body
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s %-8s %s", c.Time.UTC().Format("15:04:05.000000"), c.Kind, c.Summary)
	}
	return b.String()
}
