package loadgen

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
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
	inlineSVG    = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)
	embeddedFont = regexp.MustCompile(`(url\(data:font/ttf;base64,)[A-Za-z0-9+/=]{1000,}\)`)
)

// checkReport checks the files of a report: index.html with charts inline
// (each the same as the chart's SVG file) and nothing fetched from
// elsewhere, every PNG decodes with the chart's size, every SVG parses.
// It returns the page with the SVG bodies replaced by a placeholder.
func checkReport(t *testing.T, dir, index string, charts []string) string {
	t.Helper()
	if index != filepath.Join(dir, "index.html") {
		t.Errorf("index = %s, want %s", index, filepath.Join(dir, "index.html"))
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, ref := range []string{"<link", "<script", "src=", "@import", "<img", "https:"} {
		if strings.Contains(html, ref) {
			t.Errorf("index.html contains %q: the page must need no other file", ref)
		}
	}
	if n, data := strings.Count(html, "url("), strings.Count(html, "url(data:"); n != data {
		t.Errorf("index.html has %d url() not data: the page must need no other file", n-data)
	}
	if fonts := embeddedFont.FindAllString(html, -1); len(charts) > 0 && len(fonts) != 1 {
		t.Errorf("index.html embeds %d fonts, want the charts' one", len(fonts))
	}
	svgs := inlineSVG.FindAllString(html, -1)
	if len(svgs) != len(charts) {
		t.Fatalf("index.html has %d inline SVG, want %d (%v)", len(svgs), len(charts), charts)
	}
	for _, name := range []string{"rate", "latency", "concurrency", "errors"} {
		want := containsStr(charts, name)
		for _, ext := range []string{".png", ".svg"} {
			_, err := os.Stat(filepath.Join(dir, name+ext))
			if want && err != nil {
				t.Errorf("%s%s: %v", name, ext, err)
			}
			if !want && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s%s written (%v), want none", name, ext, err)
			}
		}
	}
	for i, name := range charts {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err == nil {
			_, err = png.Decode(f)
		}
		f.Close()
		if err != nil {
			t.Errorf("%s.png: %v", name, err)
		}
		// 10 in x 4 in (concurrency: 5 in) at 144 dpi.
		wantW, wantH := 1440, 576
		if name == "concurrency" {
			wantH = 720
		}
		if cfg.Width != wantW || cfg.Height != wantH {
			t.Errorf("%s.png is %dx%d, want %dx%d", name, cfg.Width, cfg.Height, wantW, wantH)
		}

		b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		checkXML(t, name+".svg", b)
		if !bytes.Contains(b, []byte("font-family:'Liberation Sans',Arial,")) {
			t.Errorf("%s.svg names no fallback for Liberation Sans", name)
		}
		checkXML(t, "inline "+name, []byte(svgs[i]))
		if !strings.HasSuffix(string(b), svgs[i]+"\n") {
			t.Errorf("the page's chart %d is not %s.svg", i+1, name)
		}
	}
	html = inlineSVG.ReplaceAllString(html, "<svg><!-- chart --></svg>")
	return embeddedFont.ReplaceAllString(html, "${1}...)")
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// checkXML parses b as XML whose root is an svg element.
func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s does not parse as XML: %v", name, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", name, root)
	}
}

// TestReportGolden renders the recorded failover run and compares the page
// (charts replaced by a placeholder) with testdata/report/index.html.
func TestReportGolden(t *testing.T) {
	run := loadRecorded(t, "report", failoverRun())
	dir := filepath.Join(t.TempDir(), "report")
	index, err := WriteReport(dir, run.Summary, run.Intervals)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, "failover", dir)
	html := checkReport(t, dir, index, []string{"rate", "latency", "concurrency", "errors"})
	testutil.Golden(t, filepath.Join("testdata", "report", "index.html"), []byte(html))

	// The event is marked on every chart: its kind by the line (and in the
	// legend) and the unavailability window in the legend.
	for _, name := range []string{"rate", "latency", "concurrency", "errors"} {
		b, _ := os.ReadFile(filepath.Join(dir, name+".svg"))
		for _, want := range []string{">kill-primary<", ">kill-primary at 29.4 s<", ">write unavailable<"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("%s.svg lacks %s", name, want)
			}
		}
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
	html := checkReport(t, dir, index, []string{"rate", "latency", "concurrency"})
	testutil.Golden(t, filepath.Join("testdata", "report-quiet", "index.html"), []byte(html))
	for _, unwanted := range []string{`id="event"`, `id="lost-writes"`, "write-unavailability", `id="chart-errors"`} {
		if strings.Contains(html, unwanted) {
			t.Errorf("index.html contains %s", unwanted)
		}
	}
	for _, name := range []string{"rate", "latency", "concurrency"} {
		b, _ := os.ReadFile(filepath.Join(dir, name+".svg"))
		if bytes.Contains(b, []byte("write unavailable")) || bytes.Contains(b, []byte(" at ")) {
			t.Errorf("%s.svg marks an event the run did not have", name)
		}
		// Closed loop: no target line.
		if bytes.Contains(b, []byte(">target<")) {
			t.Errorf("%s.svg has a target line in a closed-loop run", name)
		}
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
	checkReport(t, dir, index, []string{"rate", "latency", "concurrency", "errors"})
	keep(t, "long", dir)

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
	html := checkReport(t, dir, index, nil)
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
	p.WaitSelector("#charts figure svg", 10*time.Second)
	checkCharts(t, p, []string{"chart-rate", "chart-latency", "chart-concurrency", "chart-errors"})
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
	p.WaitSelector("#charts figure svg", 10*time.Second)
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

// checkCharts checks that the page's figures are ids, each with one svg
// drawn at a width of at least 600 CSS pixels and a proportionate height.
func checkCharts(t *testing.T, p *browser.Page, ids []string) {
	t.Helper()
	var charts []struct {
		ID            string
		Width, Height float64
	}
	p.Eval(`Array.from(document.querySelectorAll("#charts figure"), f => {
		const r = f.querySelector("svg")?.getBoundingClientRect();
		return {ID: f.id, Width: r?.width ?? 0, Height: r?.height ?? 0};
	})`, &charts)
	if len(charts) != len(ids) {
		t.Fatalf("the page has %d charts (%+v), want %v", len(charts), charts, ids)
	}
	for i, c := range charts {
		if c.ID != ids[i] {
			t.Errorf("chart %d is %s, want %s", i+1, c.ID, ids[i])
		}
		if c.Width < 600 || c.Height < c.Width/4 || c.Height > c.Width {
			t.Errorf("chart %s drawn at %.0fx%.0f px", c.ID, c.Width, c.Height)
		}
	}
	if n := p.Count("svg"); n != len(ids) {
		t.Errorf("the page has %d svg elements, want %d", n, len(ids))
	}
	var pwned any
	p.Eval("window.__pwned ?? null", &pwned)
	if pwned != nil {
		t.Errorf("a script ran: window.__pwned = %v", pwned)
	}
}
