package loadgen

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// recorded is the file format of testdata/*/result.json: a run's summary
// and its intervals.
type recorded struct {
	Summary   Summary    `json:"summary"`
	Intervals []Interval `json:"intervals"`
}

var runStart = time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)

func r3(v float64) float64 { return math.Round(v*1000) / 1000 }

// failoverRun is a 60 s open-loop linkbench run at 1000 tx/s whose primary
// is killed at 29.4 s: writes fail from 29.5 s, the server stalls for 2 s,
// the first write succeeds on the new primary at 31.513 s, the backlog
// drains by 33 s; two acknowledged writes are lost.
func failoverRun() recorded {
	rng := rand.New(rand.NewPCG(7, 11))
	var ivs []Interval
	for i := range 60 {
		iv := Interval{
			Start: runStart.Add(time.Duration(i) * time.Second), Seconds: 1, RateTarget: 1000,
			Completed: 992 + int64(rng.IntN(17)),
			P50:       r3(1.7 + 0.3*rng.Float64()), P90: r3(3 + 0.4*rng.Float64()),
			P99: r3(6 + 2*rng.Float64()), P999: r3(12 + 5*rng.Float64()), Max: r3(20 + 12*rng.Float64()),
			Busy: 2 + rng.IntN(3), BusyMax: 6 + rng.IntN(4), BacklogMax: int64(rng.IntN(2)),
		}
		switch i {
		case 29: // the kill at 29.4 s, writes fail from 29.5 s
			iv.Completed, iv.Errors, iv.ErrorsBy = 540, 40, map[string]int64{"connection": 40}
			iv.P99, iv.P999, iv.Max = 410, 480, 498.2
			iv.Busy, iv.BusyMax, iv.Backlog, iv.BacklogMax = 64, 64, 440, 440
		case 30: // nothing completes
			iv.Completed, iv.P50, iv.P90, iv.P99, iv.P999, iv.Max = 0, 0, 0, 0, 0, 0
			iv.Busy, iv.BusyMax, iv.Backlog, iv.BacklogMax = 64, 64, 1440, 1440
		case 31: // the new primary from 31.513 s
			iv.Completed, iv.Errors, iv.ErrorsBy = 700, 25, map[string]int64{"read_only": 25}
			iv.P50, iv.P90, iv.P99, iv.P999, iv.Max = 1480, 1890, 2010, 2040, 2046.3
			iv.Busy, iv.BusyMax, iv.Backlog, iv.BacklogMax, iv.Reconnects = 64, 64, 820, 1950, 64
		case 32: // the backlog drains
			iv.Completed = 1820
			iv.P50, iv.P90, iv.P99, iv.P999, iv.Max = 540, 980, 1150, 1190, 1204
			iv.Busy, iv.BusyMax, iv.BacklogMax = 40, 64, 820
		case 33:
			iv.P99, iv.P999, iv.Max = 48, 95, 130
		}
		iv.Rate = float64(iv.Completed) / iv.Seconds
		ivs = append(ivs, iv)
	}
	sum := Summary{
		Workload: "linkbench", Target: "127.0.0.1:19301", Mode: "open", Arrival: ArrivalPoisson,
		Seconds: 60, RateTarget: 1000, ErrorsBy: map[string]int64{},
		P50: 1.83, P90: 3.21, P99: 9.87, P999: 1480, Max: 2046.3,
		MaxBacklog: 1950, MaxBusy: 64, Reconnects: 64,
	}
	for _, iv := range ivs {
		sum.Transactions += iv.Completed
		sum.Errors += iv.Errors
		for c, n := range iv.ErrorsBy {
			sum.ErrorsBy[c] += n
		}
	}
	sum.RateAchieved = r3(float64(sum.Transactions) / sum.Seconds)
	getNode := sum.Transactions / 2
	addLink := sum.Transactions / 5
	sum.Ops = []OpSummary{
		{Op: "get_node", Count: getNode, Errors: 31, P50: 1.41, P90: 2.62, P99: 8.9, P999: 1402, Max: 2041.7},
		{Op: "add_link", Count: addLink, Errors: 21, P50: 2.95, P90: 4.4, P99: 12.6, P999: 1530, Max: 2046.3},
		{Op: "get_link_list", Count: sum.Transactions - getNode - addLink, Errors: 13, P50: 1.77, P90: 3.05, P99: 9.4, P999: 1466, Max: 2039.9},
	}
	sum.Event = &EventReport{
		Kind: "kill-primary", At: runStart.Add(29400 * time.Millisecond),
		UnavailableMS: 2013, FirstFailed: runStart.Add(29500 * time.Millisecond), FirstOK: runStart.Add(31513 * time.Millisecond),
		Failed:      65,
		Before:      OpSummary{Op: "all", Count: 29011, P50: 1.82, P90: 3.2, P99: 7.1, P999: 15.2, Max: 31.4},
		During:      OpSummary{Op: "all", Count: 1240, Errors: 65, P50: 610, P90: 1850, P99: 2008, P999: 2040, Max: 2046.3},
		After:       OpSummary{Op: "all", Count: 29660, P50: 1.86, P90: 3.3, P99: 160, P999: 1150, Max: 1204},
		AckedWrites: 17654, LostWrites: 2,
		OldPrimary: "127.0.0.1:19301", NewPrimary: "127.0.0.1:19302",
	}
	return recorded{sum, ivs}
}

// quietRun is a 5 s closed-loop oltp_read_only run without error or event.
func quietRun() recorded {
	var ivs []Interval
	var total int64
	for i := range 5 {
		iv := Interval{Start: runStart.Add(time.Duration(i) * time.Second), Seconds: 1,
			Completed: 2400 + int64(37*i), P50: 3.1 + 0.1*float64(i), P90: 4.9, P99: 7.4, P999: 11.2, Max: 14.5 + float64(i),
			Busy: 8, BusyMax: 8}
		iv.Rate = float64(iv.Completed)
		total += iv.Completed
		ivs = append(ivs, iv)
	}
	sum := Summary{Workload: "oltp_read_only", Target: "127.0.0.1:19401", Mode: "closed", Seconds: 5,
		RateAchieved: float64(total) / 5, Transactions: total,
		P50: 3.2, P90: 4.9, P99: 7.4, P999: 11.2, Max: 18.5, MaxBusy: 8,
		Ops: []OpSummary{{Op: "oltp_read_only", Count: total, P50: 3.2, P90: 4.9, P99: 7.4, P999: 11.2, Max: 18.5}}}
	return recorded{sum, ivs}
}

// loadRecorded checks testdata/<name>/result.json against the run (-update
// writes it) and returns what the file holds.
func loadRecorded(t *testing.T, name string, run recorded) recorded {
	t.Helper()
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name, "result.json")
	testutil.Golden(t, path, append(b, '\n'))
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// keep copies a rendered report to $DBPILOT_REPORT_KEEP/name, when set, for
// a person to look at its charts.
func keep(t *testing.T, name, dir string) {
	t.Helper()
	dst := os.Getenv("DBPILOT_REPORT_KEEP")
	if dst == "" {
		return
	}
	dst = filepath.Join(dst, name)
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	t.Logf("report kept in %s", dst)
}

var (
	dataScript   = regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`)
	moduleScript = regexp.MustCompile(`(?s)<script type="module">.*?</script>`)
	scriptTag    = regexp.MustCompile(`<script\b[^>]*>`)
	srcAttr      = regexp.MustCompile(`<[a-zA-Z]+\b[^>]*\s(src|href)=[^>]*>`)
)

// checkReport checks the files of a report: index.html alone, nothing
// fetched from elsewhere, the charts' data in the page (one chart per name
// of charts, in that order) and the chart library with it when there are
// charts. It returns the page with the library, its style and the data
// replaced by placeholders, and the data.
func checkReport(t *testing.T, dir, index string, charts []string) (string, reportData) {
	t.Helper()
	if index != filepath.Join(dir, "index.html") {
		t.Errorf("index = %s, want %s", index, filepath.Join(dir, "index.html"))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the report is %v, want index.html alone", names)
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	// The page's own markup and style (the library's license banner names
	// its home page): no element, style or script loads another file.
	own := moduleScript.ReplaceAllString(html, "")
	for _, ref := range []string{"<link", "@import", "<img", "<iframe", "https:", "http:"} {
		if strings.Contains(own, ref) {
			t.Errorf("index.html contains %q: the page must need no other file", ref)
		}
	}
	if tag := srcAttr.FindString(html); tag != "" {
		t.Errorf("index.html has %s: the page must need no other file", tag)
	}
	for _, call := range []string{"fetch(", "XMLHttpRequest", "import("} {
		if strings.Contains(html, call) {
			t.Errorf("index.html's script calls %s: the page must need no other file", call)
		}
	}
	if n, data := strings.Count(html, "url("), strings.Count(html, "url(data:"); n != data {
		t.Errorf("index.html has %d url() not data: the page must need no other file", n-data)
	}
	tags := scriptTag.FindAllString(html, -1)
	var d reportData
	if len(charts) == 0 {
		if len(tags) != 0 {
			t.Errorf("a report without charts has scripts %v", tags)
		}
		return html, d
	}
	if want := []string{`<script type="application/json" id="report-data">`, `<script type="module">`}; strings.Join(tags, " ") != strings.Join(want, " ") {
		t.Errorf("index.html's scripts are %v, want %v", tags, want)
	}
	m := dataScript.FindStringSubmatch(html)
	if m == nil {
		t.Fatal("index.html has no chart data")
	}
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("the chart data does not parse: %v", err)
	}
	var names []string
	for _, c := range d.Charts {
		names = append(names, c.Name)
		if len(c.Panels) == 0 {
			t.Errorf("chart %s has no panel", c.Name)
		}
		for _, p := range c.Panels {
			for _, s := range p.Series {
				if len(s.Y) != len(c.X) {
					t.Errorf("chart %s, series %s: %d values for %d points", c.Name, s.Label, len(s.Y), len(c.X))
				}
			}
		}
		if !strings.Contains(html, `<figure id="chart-`+c.Name+`">`) {
			t.Errorf("index.html has no figure for chart %s", c.Name)
		}
	}
	if strings.Join(names, " ") != strings.Join(charts, " ") {
		t.Errorf("the page's charts are %v, want %v", names, charts)
	}
	lib, err := chartLib()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html, string(lib.js)) || !strings.Contains(html, string(lib.css)) {
		t.Error("index.html does not carry the chart library and its style")
	}
	html = strings.Replace(html, string(lib.css), "/* uPlot.min.css */", 1)
	html = dataScript.ReplaceAllString(html, `<script type="application/json" id="report-data">/* chart data */</script>`)
	html = moduleScript.ReplaceAllString(html, `<script type="module">/* uPlot and reportJS */</script>`)
	return html, d
}

// chartByName is the chart of d named name.
func chartByName(t *testing.T, d reportData, name string) chartJSON {
	t.Helper()
	for _, c := range d.Charts {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no chart %s", name)
	return chartJSON{}
}

// labels are the labels of a panel's series.
func labels(p panelJSON) []string {
	var ls []string
	for _, s := range p.Series {
		ls = append(ls, s.Label)
	}
	return ls
}

// UnmarshalJSON reads what MarshalJSON writes: null is NaN.
func (ns *nums) UnmarshalJSON(b []byte) error {
	var vs []*float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return err
	}
	if vs == nil {
		*ns = nil
		return nil
	}
	*ns = make(nums, len(vs))
	for i, v := range vs {
		(*ns)[i] = math.NaN()
		if v != nil {
			(*ns)[i] = *v
		}
	}
	return nil
}

// TestReportGolden renders the recorded failover run, compares the page
// (chart library and data replaced by placeholders) with
// testdata/report/index.html and checks the charts' data.
func TestReportGolden(t *testing.T) {
	run := loadRecorded(t, "report", failoverRun())
	dir := filepath.Join(t.TempDir(), "report")
	index, err := WriteReport(dir, run.Summary, run.Intervals)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, "failover", dir)
	html, d := checkReport(t, dir, index, []string{"rate", "latency", "concurrency", "errors"})
	testutil.Golden(t, filepath.Join("testdata", "report", "index.html"), []byte(html))

	// The series, their axes and values: a point per 1 s interval, at its
	// middle.
	for _, want := range []struct {
		chart  string
		panel  int
		ylabel string
		log    bool
		series []string
	}{
		{"rate", 0, "transactions/s", false, []string{"target", "achieved"}},
		{"latency", 0, "latency (ms, log scale)", true, []string{"p50", "p99", "p99.9", "max"}},
		{"concurrency", 0, "busy connections", false, []string{"busy (max)", "busy (at end)"}},
		{"concurrency", 1, "backlog (transactions)", false, []string{"backlog (max)", "backlog (at end)"}},
		{"errors", 0, "errors per interval", false, []string{"all", "connection", "read_only"}},
	} {
		c := chartByName(t, d, want.chart)
		if len(c.X) != 60 || c.X[0] != 0.5 || c.X[59] != 59.5 || c.End != 60 {
			t.Errorf("chart %s: %d points from %v to %v, axis to %v; want 60 from 0.5 to 59.5, axis to 60", c.Name, len(c.X), c.X[0], c.X[len(c.X)-1], c.End)
		}
		p := c.Panels[want.panel]
		if p.YLabel != want.ylabel || p.Log != want.log || strings.Join(labels(p), ",") != strings.Join(want.series, ",") {
			t.Errorf("chart %s panel %d: %q log=%v %v, want %q log=%v %v", c.Name, want.panel, p.YLabel, p.Log, labels(p), want.ylabel, want.log, want.series)
		}
		// The event on every chart: its line at 29.4 s, the window shaded
		// from the first failed write to the first successful one.
		if e := c.Event; e == nil || e.Kind != "kill-primary" || e.Label != "kill-primary at 29.4 s" || r3(e.At) != 29.4 ||
			!e.Band || r3(e.From) != 29.5 || r3(e.To) != 31.513 || e.BandLabel != "write unavailable" {
			t.Errorf("chart %s marks the event as %+v", c.Name, e)
		}
	}
	rate := chartByName(t, d, "rate").Panels[0]
	if got := rate.Series[1].Y; got[28] != float64(run.Intervals[28].Completed) || got[29] != 540 || got[30] != 0 || got[31] != 700 {
		t.Errorf("achieved rate at 28..31 s = %v %v %v %v, want %d 540 0 700", got[28], got[29], got[30], got[31], run.Intervals[28].Completed)
	}
	if got := rate.Series[0].Y; got[0] != 1000 || got[59] != 1000 || rate.Series[0].Dash == nil {
		t.Errorf("target rate = %v..%v (dash %v), want a dashed line at 1000", got[0], got[59], rate.Series[0].Dash)
	}
	if rate.YMin != 0 || rate.YMax != 1820*1.15 {
		t.Errorf("rate axis %v..%v, want 0..%v", rate.YMin, rate.YMax, 1820*1.15)
	}
	lat := chartByName(t, d, "latency").Panels[0]
	if p50 := lat.Series[0].Y; !math.IsNaN(p50[30]) || p50[31] != 1480 || p50[32] != 540 {
		t.Errorf("p50 at 30..32 s = %v %v %v, want none (nothing completed), 1480, 540", p50[30], p50[31], p50[32])
	}
	if max := lat.Series[3].Y; max[31] != 2046.3 {
		t.Errorf("max latency at 31 s = %v, want 2046.3", max[31])
	}
	if lat.YMin != 1 || lat.YMax != 10000 {
		t.Errorf("latency axis %v..%v, want 1..10000 (decades around 1.7..2046.3 ms)", lat.YMin, lat.YMax)
	}
	if backlog := chartByName(t, d, "concurrency").Panels[1].Series[0].Y; backlog[31] != 1950 {
		t.Errorf("backlog (max) at 31 s = %v, want 1950", backlog[31])
	}
	errs := chartByName(t, d, "errors").Panels[0]
	if all, conn, ro := errs.Series[0].Y, errs.Series[1].Y, errs.Series[2].Y; all[29] != 40 || conn[29] != 40 || ro[31] != 25 || ro[29] != 0 || all[0] != 0 {
		t.Errorf("errors at 29 s: all %v connection %v read_only %v; at 31 s read_only %v", all[29], conn[29], ro[29], ro[31])
	}
	if !strings.Contains(html, `<div class="chart-title">Rate: linkbench on 127.0.0.1:19301</div>`) {
		t.Error("the rate chart lacks its title")
	}
}

// TestReportQuiet renders a run without event or error: no errors chart,
// no event block, no marking on the charts.
func TestReportQuiet(t *testing.T) {
	run := loadRecorded(t, "report-quiet", quietRun())
	dir := t.TempDir()
	index, err := WriteReport(dir, run.Summary, run.Intervals)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, "quiet", dir)
	html, d := checkReport(t, dir, index, []string{"rate", "latency", "concurrency"})
	testutil.Golden(t, filepath.Join("testdata", "report-quiet", "index.html"), []byte(html))
	for _, unwanted := range []string{`id="event"`, `id="lost-writes"`, "write-unavailability", `id="chart-errors"`} {
		if strings.Contains(html, unwanted) {
			t.Errorf("index.html contains %s", unwanted)
		}
	}
	for _, c := range d.Charts {
		if c.Event != nil {
			t.Errorf("chart %s marks an event the run did not have: %+v", c.Name, c.Event)
		}
		if !c.Dots {
			t.Errorf("chart %s of 5 points draws no dots", c.Name)
		}
	}
	// Closed loop: no target line.
	if got := labels(chartByName(t, d, "rate").Panels[0]); strings.Join(got, ",") != "achieved" {
		t.Errorf("the closed-loop rate chart has %v, want achieved alone", got)
	}
	if got := chartByName(t, d, "rate").Panels[0].Series[0].Y; len(got) != 5 || got[0] != 2400 || got[4] != 2548 {
		t.Errorf("achieved rate = %v, want 2400 .. 2548", got)
	}
}

// TestReportEscapes checks that names from the command line and the
// server are text on the page and in the charts, never markup (and that
// long ones are shortened in the charts).
func TestReportEscapes(t *testing.T) {
	run := quietRun()
	evil := `<script>window.__pwned=1</script>`
	run.Summary.Workload = "oltp" + evil
	run.Summary.Ops[0].Op = `<img src=x onerror="window.__pwned=2">`
	run.Summary.Errors, run.Summary.ErrorsBy = 1, map[string]int64{evil: 1}
	run.Intervals[2].Errors, run.Intervals[2].ErrorsBy = 1, map[string]int64{evil: 1}
	run.Summary.Event = &EventReport{Kind: evil, At: runStart.Add(2 * time.Second), OldPrimary: evil}
	run.Summary.Target = strings.Repeat("a-very-long-host-name.example.com:3306,", 6)
	dir := t.TempDir()
	index, err := WriteReport(dir, run.Summary, run.Intervals)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, "escapes", dir)
	b, _ := os.ReadFile(index)
	for _, bad := range []string{"<script>", "<img"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("index.html contains %s: a name was written as markup", bad)
		}
	}
	if !bytes.Contains(b, []byte("&lt;script&gt;window.__pwned=1&lt;/script&gt;")) {
		t.Error("index.html lacks the escaped workload name")
	}
	// In the charts' data the names are JSON strings with < and >
	// escaped, shortened; the script sets them as text.
	_, d := checkReport(t, dir, index, []string{"rate", "latency", "concurrency", "errors"})
	if e := chartByName(t, d, "rate").Event; e == nil || e.Kind != shorten(evil, 32) {
		t.Errorf("the event's kind in the chart data = %+v, want %q", e, shorten(evil, 32))
	}
	if got := labels(chartByName(t, d, "errors").Panels[0]); len(got) != 1 || got[0] != shorten(evil, 32) {
		t.Errorf("the error classes in the chart data = %q, want %q", got, shorten(evil, 32))
	}
}

// TestReportLong renders a one-hour run (3600 intervals: a point per 10 s),
// a run of one interval, and an interrupted run without any.
func TestReportLong(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ivs []Interval
	for i := range 3600 {
		iv := Interval{Start: runStart.Add(time.Duration(i) * time.Second), Seconds: 1, RateTarget: 5000,
			Completed: 4900 + int64(rng.IntN(200)), P50: 2 + rng.Float64(), P90: 4 + rng.Float64(),
			P99: 8 + 4*rng.Float64(), P999: 20 + 20*rng.Float64(), Max: 40 + 80*rng.Float64(),
			Busy: rng.IntN(20), BusyMax: 10 + rng.IntN(20), BacklogMax: int64(rng.IntN(5))}
		if i%600 == 300 {
			iv.Errors, iv.ErrorsBy = 3, map[string]int64{"deadlock": 2, "lock_wait_timeout": 1}
		}
		iv.Rate = float64(iv.Completed)
		ivs = append(ivs, iv)
	}
	sum := Summary{Workload: "oltp_read_write", Target: "127.0.0.1:3306", Mode: "open", Seconds: 3600,
		RateTarget: 5000, RateAchieved: 5000, Transactions: 18000000, Errors: 18,
		ErrorsBy: map[string]int64{"deadlock": 12, "lock_wait_timeout": 6},
		Event: &EventReport{Kind: "switchover", At: runStart.Add(1800 * time.Second), FirstFailed: runStart.Add(1800200 * time.Millisecond),
			FirstOK: runStart.Add(1800900 * time.Millisecond), UnavailableMS: 700}}
	dir := filepath.Join(t.TempDir(), "long")
	start := time.Now()
	index, err := WriteReport(dir, sum, ivs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3600 intervals rendered in %s", time.Since(start).Round(time.Millisecond))
	_, d := checkReport(t, dir, index, []string{"rate", "latency", "concurrency", "errors"})
	keep(t, "long", dir)
	// A point per 10 s, the mean rate with its intervals' range.
	c := chartByName(t, d, "rate")
	if len(c.X) != 360 || c.X[0] != 5 || c.Dots {
		t.Errorf("the long rate chart has %d points from %v (dots %v), want 360 from 5 s without dots", len(c.X), c.X[0], c.Dots)
	}
	if s := c.Panels[0].Series[1]; s.Label != "achieved (mean)" || s.RangeLabel != "achieved (range)" || len(s.Lo) != 360 || len(s.Hi) != 360 ||
		s.Lo[0] > s.Y[0] || s.Hi[0] < s.Y[0] || s.Lo[0] < 4900 || s.Hi[0] >= 5100 {
		t.Errorf("the long run's achieved series: %s / %s, first point %v in [%v, %v]", s.Label, s.RangeLabel, s.Y[0], s.Lo[0], s.Hi[0])
	}
	if e := chartByName(t, d, "errors").Panels[0]; e.YLabel != "errors per 10 s" || e.Series[0].Y[30] != 3 {
		t.Errorf("the long run's errors: %q, all at 300 s = %v, want errors per 10 s and 3", e.YLabel, e.Series[0].Y[30])
	}
	if !strings.Contains(c.Panels[0].Series[1].Label, "mean") || chartByName(t, d, "latency").Event.Label != "switchover at 1800 s" {
		t.Errorf("the long run's event: %+v", chartByName(t, d, "latency").Event)
	}

	one := quietRun()
	one.Intervals = one.Intervals[:1]
	dir = t.TempDir()
	if index, err = WriteReport(dir, one.Summary, one.Intervals); err != nil {
		t.Fatal(err)
	}
	checkReport(t, dir, index, []string{"rate", "latency", "concurrency"})

	// Interrupted before the first interval ended.
	one.Summary.Interrupted = true
	dir = t.TempDir()
	if index, err = WriteReport(dir, one.Summary, nil); err != nil {
		t.Fatal(err)
	}
	html, _ := checkReport(t, dir, index, nil)
	if !strings.Contains(html, "No interval was recorded.") {
		t.Error("a run without intervals does not say so")
	}
	if !strings.Contains(html, `id="interrupted"`) {
		t.Error("an interrupted run does not say so")
	}
}

// TestReportBrowser opens the rendered reports in headless Chromium: the
// charts are drawn with a size, the figures are on the page, the lost
// writes are highlighted, and no script ran. The failover report's
// screenshot is build/screenshots/bench-report.png.
func TestReportBrowser(t *testing.T) {
	p := browser.New(t)

	run := loadRecorded(t, "report", failoverRun())
	dir := t.TempDir()
	index, err := WriteReport(dir, run.Summary, run.Intervals)
	if err != nil {
		t.Fatal(err)
	}
	p.Navigate("file://" + index)
	p.WaitSelector(`#charts figure:last-of-type[data-drawn="true"]`, 10*time.Second)
	checkCharts(t, p, []string{"chart-rate", "chart-latency", "chart-concurrency", "chart-errors"})
	// The legends: every series, the event's line and window.
	if got := p.Text("#chart-latency .u-legend"); !strings.Contains(got, "p99.9") || !strings.Contains(got, "max") {
		t.Errorf("the latency chart's legend reads %q", got)
	}
	for _, id := range []string{"chart-rate", "chart-latency", "chart-concurrency", "chart-errors"} {
		if got := p.Text("#" + id + " .marks"); !strings.Contains(got, "kill-primary at 29.4 s") || !strings.Contains(got, "write unavailable") {
			t.Errorf("%s marks the event as %q", id, got)
		}
	}
	text := p.EvalString("document.body.innerText")
	for _, want := range []string{
		"dbpilot bench: linkbench on 127.0.0.1:19301",
		"open loop at 1,000.0 tx/s, poisson arrivals",
		"2025-03-14 10:00:00 UTC",
		"1,000.0 tx/s",            // target
		"984.5 tx/s",              // achieved
		"59,067",                  // transactions
		"65 (0.11%)",              // errors
		"connection", "read_only", // by class
		"1.83", "3.21", "9.87", "1,480", "2,046", // p50 p90 p99 p99.9 max
		"1,950", // max backlog
		"get_node", "add_link", "get_link_list",
		"kill-primary", "127.0.0.1:19301 → 127.0.0.1:19302",
		"2,013 ms", "29.5 s → 31.513 s", "17,654",
		"behind a stalled server", // the note on measurement
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
	if got := p.Text("#lost-writes"); got != "2" {
		t.Errorf("lost writes cell = %q, want 2", got)
	}
	if got := p.Attr("#lost-writes", "class"); got != "lost" {
		t.Errorf("lost writes cell class = %q, want lost", got)
	}
	if bg := p.EvalString(`getComputedStyle(document.querySelector("#lost-writes")).backgroundColor`); bg != "rgb(180, 20, 40)" {
		t.Errorf("lost writes cell background %s, want the red rgb(180, 20, 40)", bg)
	}
	p.Screenshot("bench-report")

	quiet := quietRun()
	dir = t.TempDir()
	if index, err = WriteReport(dir, quiet.Summary, quiet.Intervals); err != nil {
		t.Fatal(err)
	}
	p.Navigate("file://" + index)
	p.WaitSelector(`#charts figure:last-of-type[data-drawn="true"]`, 10*time.Second)
	checkCharts(t, p, []string{"chart-rate", "chart-latency", "chart-concurrency"})
	if p.Has("#event") || p.Has("#lost-writes") {
		t.Error("the quiet run's page has an event block")
	}
	text = p.EvalString("document.body.innerText")
	for _, want := range []string{"closed loop", "none (closed loop)", "12,370", "Closed loop:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the quiet page's text lacks %q", want)
		}
	}
	p.Screenshot("bench-report-quiet")
}

// checkCharts checks that the page's figures are ids, each drawn by uPlot
// at a width of at least 600 CSS pixels and a proportionate height
// (concurrency: two plots), its canvases painted, and that no script of
// the data ran.
func checkCharts(t *testing.T, p *browser.Page, ids []string) {
	t.Helper()
	var charts []struct {
		ID            string
		Plots         int
		Width, Height float64
		Painted       int
	}
	p.Eval(`Array.from(document.querySelectorAll("#charts figure"), f => {
		const cs = Array.from(f.querySelectorAll(".plots canvas"));
		let painted = 0;
		for (const c of cs) {
			const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			for (let i = 3; i < px.length; i += 4 * 7) if (px[i] > 0) painted++;
		}
		const r = f.querySelector(".plots").getBoundingClientRect();
		return {ID: f.id, Plots: cs.length, Width: cs.length ? cs[0].getBoundingClientRect().width : 0,
			Height: cs.reduce((h, c) => h + c.getBoundingClientRect().height, 0), Painted: painted};
	})`, &charts)
	if len(charts) != len(ids) {
		t.Fatalf("the page has %d charts (%+v), want %v", len(charts), charts, ids)
	}
	for i, c := range charts {
		if c.ID != ids[i] {
			t.Errorf("chart %d is %s, want %s", i+1, c.ID, ids[i])
		}
		want := 1
		if c.ID == "chart-concurrency" {
			want = 2
		}
		if c.Plots != want {
			t.Errorf("chart %s has %d plots, want %d", c.ID, c.Plots, want)
		}
		if c.Width < 600 || c.Height < c.Width/4 || c.Height > c.Width {
			t.Errorf("chart %s drawn at %.0fx%.0f px", c.ID, c.Width, c.Height)
		}
		if c.Painted < 1000 {
			t.Errorf("chart %s: %d painted pixels sampled, want its axes, grid and lines", c.ID, c.Painted)
		}
	}
	var pwned any
	p.Eval("window.__pwned ?? null", &pwned)
	if pwned != nil {
		t.Errorf("a script ran: window.__pwned = %v", pwned)
	}
}
