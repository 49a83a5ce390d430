package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/loadgen"
	"github.com/dbpilot/dbpilot/report"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestIncidentReport: a real kill of the primary of a semi-sync sandbox
// under `bench run --server` (serve fails over on its own), then the
// incident report of that recovery through the CLI (serve found from the
// sandbox's state, and by --server): every section is there, the timeline
// holds the recovery's audit events in their order, the key times are the
// recovery's, and the clients' section says what the bench run said (its
// longest write stall, errors by class, latency of each second, ledger).
// Then Chromium shows the page, making no request but its own load, and
// the console's recovery page links to it (with a token too). Screenshots
// go to build/screenshots/ (or $DBPILOT_SCREENSHOTS); with
// $DBPILOT_REPORT_RECORD=DIR the report's data is written to DIR/input.json
// (report/testdata's recorded inputs come from there).
func TestIncidentReport(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	api, _, sErr := startServe(t, d.Name)
	get := func(path string) (int, string) {
		resp, err := http.Get(api + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testutil.WaitFor(t, 20*time.Second, "serve observes the cluster", func() (bool, string) {
		code, body := get("/api/clusters/" + d.Name)
		return code == 200 && strings.Contains(body, `"state":"ok"`), body
	})
	prep := []string{"--sandbox", d.Name, "--workload", "oltp_write_only", "--tables", "1", "--table-size", "1000"}
	if code, out, errOut := runCLI(t, append([]string{"bench", "prepare"}, prep...)...); code != 0 {
		t.Fatalf("bench prepare: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "bench", "run", "--sandbox", d.Name, "--server", api, "--workload", "oltp_write_only",
		"--rate", "100", "--duration", "8s", "--during", "kill-primary", "--at", "2s", "--json")
	if code != 0 {
		t.Fatalf("bench run --during kill-primary: exit %d\n%s\nserve:\n%s", code, errOut, sErr.String())
	}
	var run struct {
		Summary   loadgen.Summary    `json:"summary"`
		Intervals []loadgen.Interval `json:"intervals"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("bench run --json: %v\n%s", err, out)
	}
	ev := run.Summary.Event
	if ev == nil || ev.NewPrimary == "" || ev.NewPrimary == ev.OldPrimary || ev.AckedWrites < 100 {
		t.Fatalf("the kill under load: %+v\n%s", ev, errOut)
	}

	// The recovery serve made of it, once ended.
	var rec dbpilot.Recovery
	testutil.WaitFor(t, 30*time.Second, "serve's recovery of the kill ends", func() (bool, string) {
		_, body := get("/api/recoveries?cluster=" + d.Name)
		var rs []dbpilot.Recovery
		if err := json.Unmarshal([]byte(body), &rs); err != nil {
			return false, body
		}
		for _, r := range rs {
			if r.Kind == dbpilot.RecoveryFailoverAuto && r.OldPrimary.String() == ev.OldPrimary && !r.Ended.IsZero() {
				rec = r
				return true, ""
			}
		}
		return false, body
	})
	if !rec.Success || rec.NewPrimary.String() != ev.NewPrimary || rec.DetectedAt.IsZero() || rec.WritesOpen.IsZero() {
		t.Fatalf("recovery %+v; want a success to %s with its detection and writes open", rec, ev.NewPrimary)
	}
	var steps []dbpilot.AuditEvent
	_, body := get(fmt.Sprintf("/api/audit?recovery=%d&limit=1000", rec.ID))
	if err := json.Unmarshal([]byte(body), &steps); err != nil || len(steps) < 4 {
		t.Fatalf("the recovery's audit: %v %s", err, body)
	}

	// The run's ledger check is stamped an interval after its last one
	// (cmd/dbpilot/bench.go, pushLedger): the report is made once serve's
	// metrics have it.
	testutil.WaitFor(t, 10*time.Second, "the bench run's ledger check in serve's metrics", func() (bool, string) {
		_, body := get("/api/metrics/query?expr=dbpilot_bench_ledger_lost")
		return strings.Contains(body, `"dbpilot_bench_ledger_lost"`), body
	})

	// The report through the CLI: serve found from the sandbox's state.
	file := filepath.Join(t.TempDir(), "incident.html")
	id := strconv.FormatInt(rec.ID, 10)
	code, out, errOut = runCLI(t, "report", id, "--sandbox", d.Name, "--out", file)
	if code != 0 || !strings.Contains(out, file) {
		t.Fatalf("report --sandbox: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	t.Logf("the report of recovery %d: %d bytes (%.1f KiB)", rec.ID, len(page), float64(len(page))/1024)
	// The same through --server, and its data.
	code, viaServer, errOut := runCLI(t, "report", id, "--server", api, "--out", "-")
	if code != 0 || !strings.HasPrefix(viaServer, "<!DOCTYPE html>") {
		t.Fatalf("report --server --out -: exit %d\n%.300s\n%s", code, viaServer, errOut)
	}
	code, data, errOut := runCLI(t, "report", id, "--server", api, "--json")
	var in report.Input
	if code != 0 || json.Unmarshal([]byte(data), &in) != nil || in.Recovery.ID != rec.ID {
		t.Fatalf("report --json: exit %d\n%.300s\n%s", code, data, errOut)
	}
	if in.Bench == nil || !in.Bench.Ledger.HasLost {
		t.Errorf("the report's data has no ledger check: %+v", in.Bench)
	}
	if dir := os.Getenv("DBPILOT_REPORT_RECORD"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "input.json"), []byte(data), 0o644); err != nil {
			t.Error(err)
		}
	}

	checkSelfContained(t, page)
	for _, id := range []string{"key-times", "timeline", "decision", "topology", "charts", "alerts", "transactions", "impact"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no section #%s", id)
		}
	}
	// The timeline: the recovery's audit events, all, in order.
	var got []int64
	for _, m := range regexp.MustCompile(`<tr class="step" data-audit-id="(\d+)"`).FindAllStringSubmatch(page, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		got = append(got, n)
	}
	var want []int64
	for _, e := range steps {
		want = append(want, e.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("timeline steps %v, want the recovery's audit events %v", got, want)
	}
	// The detection carries the replicas' votes.
	if !regexp.MustCompile(`data-event="detect">(?s:.*?)replicas_lost_primary=</span>2<`).MatchString(page) {
		t.Error("the detect step does not show the replicas' votes (replicas_lost_primary=2)")
	}
	// Key times: the recovery's, to the nanosecond.
	for id, want := range map[string]time.Time{"detected": rec.DetectedAt, "writes-open": rec.WritesOpen, "started": rec.Started, "ended": rec.Ended} {
		m := regexp.MustCompile(`<tr id="` + id + `"><th>[^<]*</th><td><time datetime="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Errorf("no key time %s", id)
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || !at.Equal(want) {
			t.Errorf("key time %s is %s, want the recovery's %s", id, m[1], want.UTC().Format(time.RFC3339Nano))
		}
	}
	// The decision: the candidates considered, the new primary chosen.
	if !strings.Contains(page, `id="chosen">`+rec.NewPrimary.String()+`<`) || strings.Count(page, `<tr class="candidate`) != 2 {
		t.Errorf("the decision does not show 2 candidates and %s chosen", rec.NewPrimary)
	}
	// The topology before (the old primary over both replicas) and after
	// (the new primary over the other replica), from serve's history.
	for _, c := range []struct {
		id, primary string
		replicas    []string
	}{
		{"before", ev.OldPrimary, otherNodes(d, ev.OldPrimary)},
		{"after", ev.NewPrimary, otherNodes(d, ev.OldPrimary, ev.NewPrimary)},
	} {
		fig := regexp.MustCompile(`(?s)<figure class="topo" id="topo-` + c.id + `".*?</figure>`).FindString(page)
		if !strings.Contains(fig, fmt.Sprintf(`data-key="%s" data-role="primary"`, c.primary)) {
			t.Errorf("topology %s: no primary %s: %.400s", c.id, c.primary, fig)
		}
		for _, r := range c.replicas {
			if !strings.Contains(fig, fmt.Sprintf(`data-from="%s" data-to="%s"`, c.primary, r)) {
				t.Errorf("topology %s: no edge %s → %s: %.400s", c.id, c.primary, r, fig)
			}
		}
	}
	// The charts have the servers' metrics.
	for _, c := range []string{"qps", "threads-connected"} {
		m := regexp.MustCompile(`id="chart-` + c + `" data-points="(\d+)"`).FindStringSubmatch(page)
		if m == nil || m[1] == "0" {
			t.Errorf("chart %s: %v, want points", c, m)
		}
	}
	// Lost transactions: the replica followed; the new primary had what the
	// old one was last read with.
	for check, status := range map[string]string{"lost-replicas": report.NoneFound, "missing-transactions": report.NoneFound, "acknowledged-writes": report.NoneFound} {
		if !strings.Contains(page, `id="check-`+check+`" data-status="`+status+`"`) {
			m := regexp.MustCompile(`id="check-` + check + `"[^>]*>.*?</tr>`).FindString(page)
			t.Errorf("check %s: %s; want %q", check, m, status)
		}
	}

	// What clients saw is what the bench run said.
	wantStall := 0.0
	for _, iv := range run.Intervals {
		wantStall = math.Max(wantStall, iv.WriteStallMS)
	}
	if m := regexp.MustCompile(`id="impact-stall"><th>[^<]*</th><td><strong data-ms="([0-9.]+)"`).FindStringSubmatch(page); m == nil {
		t.Error("no longest write stall")
	} else if v, _ := strconv.ParseFloat(m[1], 64); math.Abs(v-wantStall) > 0.002 || wantStall != run.Summary.WriteStallMS || v <= 0 {
		t.Errorf("longest write stall %s ms; the bench run said %v ms (its intervals' largest), %v ms (its summary)", m[1], wantStall, run.Summary.WriteStallMS)
	}
	gotErrs := map[string]int64{}
	for _, m := range regexp.MustCompile(`data-class="([^"]+)" data-n="(\d+)"`).FindAllStringSubmatch(page, -1) {
		gotErrs[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
	}
	if len(gotErrs) != len(run.Summary.ErrorsBy) {
		t.Errorf("errors by class %v, the bench run said %v", gotErrs, run.Summary.ErrorsBy)
	}
	for c, n := range run.Summary.ErrorsBy {
		if gotErrs[c] != n {
			t.Errorf("errors by class %v, the bench run said %v", gotErrs, run.Summary.ErrorsBy)
			break
		}
	}
	if !strings.Contains(page, fmt.Sprintf(`id="impact-ledger" data-status="none found" data-acked="%d" data-lost="%d"`, ev.AckedWrites, ev.LostWrites)) {
		m := regexp.MustCompile(`<tr id="impact-ledger"[^>]*>`).FindString(page)
		t.Errorf("ledger %s; the bench run said %d acknowledged, %d lost", m, ev.AckedWrites, ev.LostWrites)
	}
	checkLatencyRows(t, page, in.Bench, run.Intervals)

	// Refusals: one line, exit 2.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "999999", "--server", api}, "has no recovery 999999"},
		{[]string{"report", "abc", "--server", api}, "invalid recovery id"},
		{[]string{"report", "1", "--server", fmt.Sprintf("http://127.0.0.1:%d", closedPort(t))}, "is dbpilot serve running"},
		{[]string{"report", "1"}, "give --server URL"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != exitError || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %.100q; want exit 2 and one line with %q", c.args, code, errOut, out, c.want)
		}
	}

	t.Run("browser", func(t *testing.T) { checkReportInBrowser(t, api, rec.ID) })
}

// otherNodes are the sandbox's nodes other than the keys given.
func otherNodes(d *sandbox.Descriptor, not ...string) []string {
	var out []string
	for _, n := range d.Nodes {
		if !slices.Contains(not, n.Key().String()) {
			out = append(out, n.Key().String())
		}
	}
	return out
}

// checkSelfContained: the page names nothing outside itself.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "src=", "url(", "@import", "<script", "<link", "<iframe", "<img"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the report holds %q: %q", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
}

// checkLatencyRows: each bench interval's p50, p99 and max are in the
// report's row of the second that shows it (the first second of the
// report's grid at or after the interval's end: the value the store
// has then).
func checkLatencyRows(t *testing.T, page string, b *report.BenchInput, intervals []loadgen.Interval) {
	t.Helper()
	if b == nil {
		t.Error("the report's data has no bench section")
		return
	}
	rows := map[int64][3]float64{}
	rowRE := regexp.MustCompile(`<tr class="second"><td class="mono"><time datetime="([^"]+)">.*?data-ms="([0-9.]+)".*?data-ms="([0-9.]+)".*?data-ms="([0-9.]+)"`)
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		var v [3]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(m[i+2], 64)
		}
		rows[at.UnixNano()] = v
	}
	// The metrics store's times are milliseconds: so is its grid.
	from := b.From.Truncate(time.Millisecond)
	checked := 0
	for _, iv := range intervals {
		end := iv.Start.Add(time.Duration(iv.Seconds * float64(time.Second)))
		if end.Before(b.From) || end.After(b.To) || iv.Completed == 0 {
			continue
		}
		k := math.Ceil(float64(end.Sub(from)) / float64(time.Second))
		at := from.Add(time.Duration(k) * time.Second)
		if at.After(b.To) {
			continue
		}
		v, ok := rows[at.UnixNano()]
		if !ok {
			t.Errorf("no row at %s for the interval ending %s", at.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano))
			continue
		}
		for i, want := range []float64{iv.P50, iv.P99, iv.Max} {
			if math.Abs(v[i]-want) > 0.002 {
				t.Errorf("row %s: %v ms; the interval ending %s had p50 %v, p99 %v, max %v", at.UTC().Format(time.RFC3339Nano), v, end.UTC().Format(time.RFC3339Nano), iv.P50, iv.P99, iv.Max)
				break
			}
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("only %d bench intervals found in the report's seconds (%d rows)", checked, len(rows))
	}
}

// checkReportInBrowser shows the report in Chromium: it renders its
// sections, requests nothing but itself, and keeps no content in a scroll
// box when printed; the console's recovery page links to it.
func checkReportInBrowser(t *testing.T, api string, id int64) {
	page := browser.New(t)
	requests := page.RecordRequests()
	url := fmt.Sprintf("%s/api/recoveries/%d/report", api, id)
	page.Navigate(url)
	page.WaitSelector("#impact", 15*time.Second)
	if n := page.Count("#timeline tr.step"); n < 4 {
		t.Errorf("%d steps in the rendered timeline", n)
	}
	if n := page.Count("svg.chart polyline"); n == 0 {
		t.Error("no chart line rendered")
	}
	page.Screenshot("incident-report")
	// Printed: nothing cut in a box that scrolls.
	page.EmulateMedia("print")
	clipped := page.EvalString(`[...document.querySelectorAll("body *")].filter((e) => {
		const s = getComputedStyle(e);
		return /(auto|scroll|hidden)/.test(s.overflowY) && e.scrollHeight > e.clientHeight + 1 && e.tagName !== "svg";
	}).map((e) => e.tagName + "#" + e.id).join(",")`)
	if clipped != "" {
		t.Errorf("printed, these clip their content: %s", clipped)
	}
	page.Screenshot("incident-report-print")
	page.EmulateMedia("")
	reqs := requests()
	if len(reqs) != 1 || reqs[0] != url {
		t.Errorf("the report page made requests %v; want only its own load %s", reqs, url)
	}

	// The console's recovery page links to it; with a token in the tab it
	// fetches the page with it and opens it as a blob.
	page.Navigate(fmt.Sprintf("%s/recoveries/%d", api, id))
	page.WaitSelector(`a.report-link[data-action="incident-report"]`, 15*time.Second)
	if href := page.Attr(`a.report-link`, "href"); href != fmt.Sprintf("/api/recoveries/%d/report", id) {
		t.Errorf("the console's link goes to %q", href)
	}
	// The tab opened and the blob made are caught (the console's own
	// Content-Security-Policy forbids it to fetch a blob: address).
	page.Eval(`sessionStorage.setItem("dbpilot.token", "not-needed-but-sent");
		window.open = () => { window.__opened = { location: {} }; return window.__opened; };
		const made = URL.createObjectURL;
		URL.createObjectURL = (b) => { window.__blob = b; return made.call(URL, b); }`, nil)
	page.Click(`a.report-link`)
	page.WaitJS(`!!(window.__opened && window.__opened.location.href)`, 15*time.Second)
	opened := page.EvalString(`window.__opened.location.href`)
	var text string
	page.Eval(`window.__blob.text()`, &text)
	if !strings.HasPrefix(opened, "blob:") || !strings.Contains(text, "Incident report: failover-auto #"+strconv.FormatInt(id, 10)) {
		t.Errorf("with a token the link opened %q holding %.200q; want a blob of the report", opened, text)
	}
}
