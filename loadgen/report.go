package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot/web"
)

// WriteReport writes the report of a run into dir (created if needed):
// index.html, a page that needs nothing else. Its charts (rate, latency,
// concurrency and, when there were errors, errors) are drawn in the page by
// the web console's chart library (uPlot, embedded in the page with the
// charts' data as JSON); values are escaped by html/template. It returns
// index.html's path.
//
// The charts' time axis is seconds since the first interval's start; each
// interval is drawn at its middle, or, past 400 intervals, a point sums up
// a round number of them (an hour of 1 s intervals: a point per 10 s) so
// that lines stay lines. With sum.Event the event is marked on every chart:
// a line at its time labelled with its kind, and the write-unavailability
// window (first failed write to first successful one) shaded.
func WriteReport(dir string, sum Summary, intervals []Interval) (index string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: create %s: %w", dir, err)
	}
	tl := newTimeline(sum, intervals)
	var charts []chart
	if len(intervals) > 0 {
		charts = reportCharts(sum, intervals, tl)
	}
	page := newReportPage(sum, intervals, tl, charts)
	if len(charts) > 0 {
		lib, err := chartLib()
		if err != nil {
			return "", fmt.Errorf("report: %w", err)
		}
		page.ChartCSS, page.ChartJS = lib.css, lib.js
		data, err := json.Marshal(chartsJSON(charts, tl))
		if err != nil {
			return "", fmt.Errorf("report: chart data: %w", err)
		}
		// json.Marshal escapes <, > and &: the data cannot end its script
		// element.
		page.ChartData = template.JS(data)
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, page); err != nil {
		return "", fmt.Errorf("report: render index.html: %w", err)
	}
	index = filepath.Join(dir, "index.html")
	if err := os.WriteFile(index, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return index, nil
}

// timeline places instants on the charts' time axis: seconds since t0, the
// first interval's start.
type timeline struct {
	t0  time.Time
	end float64 // the last interval's end
}

func newTimeline(sum Summary, intervals []Interval) timeline {
	var tl timeline
	if len(intervals) == 0 {
		return tl
	}
	tl.t0 = intervals[0].Start
	for _, iv := range intervals {
		tl.end = math.Max(tl.end, tl.sec(iv.Start)+iv.Seconds)
	}
	if tl.end <= 0 {
		tl.end = math.Max(sum.Seconds, 1)
	}
	return tl
}

// sec is t in seconds since the start.
func (tl timeline) sec(t time.Time) float64 { return t.Sub(tl.t0).Seconds() }

// Colours of the charts (Okabe–Ito, readable by colour-blind readers), as
// CSS colours.
const (
	colBlue   = "rgb(0,114,178)"
	colOrange = "rgb(230,159,0)"
	colGreen  = "rgb(0,158,115)"
	colVermil = "rgb(213,94,0)"
	colPurple = "rgb(204,121,167)"
	colSky    = "rgb(86,180,233)"
	colGrey   = "rgb(110,110,110)"
	colBlack  = "rgb(30,30,30)"
)

var errPalette = []string{colVermil, colBlue, colOrange, colPurple, colGreen, colSky, colBlack}

// series is one line of a chart: a value per point, NaN where a point has
// none (no point is drawn, the line breaks); lo and hi, when set, are the
// range of the point's intervals, shaded.
type series struct {
	name   string
	color  string  // CSS colour
	width  float64 // CSS pixels
	dashes []float64
	ys     []float64
	lo, hi []float64
}

// panel is one plot area of a chart.
type panel struct {
	ylabel string
	log    bool // log Y axis: values <= 0 are not drawn
	series []series
}

// chart is one figure of the report.
type chart struct {
	name    string
	title   string
	caption string
	aspect  float64 // height / width
	panels  []panel
	xs      []float64 // the points' times: the middles of their intervals
	event   *EventReport
}

// Chart shapes: 10 wide by 4 high; concurrency, two panels (busy
// connections above, backlog below) on one time axis, 10 by 5.
const (
	chartAspect       = 0.4
	concurrencyAspect = 0.5
)

// maxPoints is the most points on a line: a longer run has a point per
// group of intervals (a round number of them), so that a line stays a line
// (an hour of 1 s intervals: a point per 10 s).
const maxPoints = 400

// points groups the intervals into the charts' points.
type points struct {
	xs     []float64
	groups [][]Interval
	per    int    // intervals per point
	span   string // time per point ("10 s"), when per > 1
}

func newPoints(intervals []Interval, tl timeline) points {
	n := len(intervals)
	per := 1
	for _, k := range []int{1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 300, 600} {
		per = k
		if (n+k-1)/k <= maxPoints {
			break
		}
	}
	if (n+per-1)/per > maxPoints {
		per = (n + maxPoints - 1) / maxPoints
	}
	ps := points{per: per}
	for i := 0; i < n; i += per {
		g := intervals[i:min(i+per, n)]
		last := g[len(g)-1]
		ps.groups = append(ps.groups, g)
		ps.xs = append(ps.xs, (tl.sec(g[0].Start)+tl.sec(last.Start)+last.Seconds)/2)
	}
	if per > 1 {
		ps.span = seconds(float64(per)*intervals[0].Seconds) + " s"
	}
	return ps
}

// agg is how a point sums up its intervals' values.
type agg int

const (
	aggMean agg = iota // weighted by the intervals' lengths
	aggMax
	aggSum
)

// value is an interval's value of a series; false: it has none.
type value func(Interval) (float64, bool)

func always(f func(Interval) float64) value {
	return func(iv Interval) (float64, bool) { return f(iv), true }
}

// ys is the series' value at each point (NaN: none of its intervals has
// one).
func (ps points) ys(f value, how agg) []float64 {
	ys := make([]float64, len(ps.groups))
	for i, g := range ps.groups {
		var sum, weighted, weight, top float64
		n := 0
		for _, iv := range g {
			v, ok := f(iv)
			if !ok {
				continue
			}
			w := iv.Seconds
			if w <= 0 {
				w = 1
			}
			if n == 0 || v > top {
				top = v
			}
			sum += v
			weighted += v * w
			weight += w
			n++
		}
		switch {
		case n == 0:
			ys[i] = math.NaN()
		case how == aggMax:
			ys[i] = top
		case how == aggSum:
			ys[i] = sum
		default:
			ys[i] = weighted / weight
		}
	}
	return ys
}

// envelope is the lowest and highest value of each point's intervals.
func (ps points) envelope(f value) (lo, hi []float64) {
	neg := func(iv Interval) (float64, bool) { v, ok := f(iv); return -v, ok }
	lo = ps.ys(neg, aggMax)
	for i := range lo {
		lo[i] = -lo[i]
	}
	return lo, ps.ys(f, aggMax)
}

func reportCharts(sum Summary, intervals []Interval, tl timeline) []chart {
	ps := newPoints(intervals, tl)
	latency := func(f func(Interval) float64) value {
		return func(iv Interval) (float64, bool) {
			v := f(iv)
			return v, iv.Completed > 0 && v > 0
		}
	}
	on := workloadOn(sum)
	suffix, pointNote := "", ""
	if ps.per > 1 {
		suffix = " (a point per " + ps.span + ")"
		pointNote = fmt.Sprintf(" Each point sums up %d intervals (%s): ", ps.per, ps.span)
	}
	var charts []chart

	rate := panel{ylabel: "transactions/s"}
	caption := "Transactions per second completed, per interval."
	if hasTarget(sum, intervals) {
		caption = "Transactions per second scheduled (target) and completed (achieved), per interval."
		rate.series = append(rate.series, series{name: "target", color: colGrey, width: 1.5, dashes: []float64{5, 3},
			ys: ps.ys(always(func(iv Interval) float64 { return iv.RateTarget }), aggMean)})
	}
	achieved := always(func(iv Interval) float64 { return iv.Rate })
	rs := series{name: "achieved", color: colBlue, width: 1.5, ys: ps.ys(achieved, aggMean)}
	if ps.per > 1 {
		rs.lo, rs.hi = ps.envelope(achieved)
		rs.name = "achieved (mean)"
		caption += pointNote + "the mean rate, with the range of its intervals' rates shaded."
	}
	rate.series = append(rate.series, rs)
	charts = append(charts, chart{name: "rate", title: "Rate: " + on + suffix, aspect: chartAspect, panels: []panel{rate},
		caption: caption})

	caption = "Latency percentiles of the transactions completed in each interval, from their intended start; an interval where none completed has no point."
	if ps.per > 1 {
		caption += pointNote + "the highest of its intervals' values."
	}
	charts = append(charts, chart{name: "latency", title: "Latency: " + on + suffix, aspect: chartAspect, panels: []panel{{
		ylabel: "latency (ms, log scale)", log: true,
		series: []series{
			{name: "p50", color: colGreen, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P50 }), aggMax)},
			{name: "p99", color: colOrange, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P99 }), aggMax)},
			{name: "p99.9", color: colVermil, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P999 }), aggMax)},
			{name: "max", color: colBlack, width: 1, dashes: []float64{2, 2}, ys: ps.ys(latency(func(iv Interval) float64 { return iv.Max }), aggMax)},
		}}},
		caption: caption})

	caption = "Connections running a transaction, and transactions due but not started (backlog), at each interval's end and at most during it."
	if ps.per > 1 {
		caption += pointNote + "the highest of its intervals' values."
	}
	charts = append(charts, chart{name: "concurrency", title: "Concurrency: " + on + suffix, aspect: concurrencyAspect, panels: []panel{
		{ylabel: "busy connections", series: []series{
			{name: "busy (max)", color: colSky, width: 1, ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.BusyMax) }), aggMax)},
			{name: "busy (at end)", color: colBlue, width: 1.5, ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.Busy) }), aggMax)},
		}},
		{ylabel: "backlog (transactions)", series: []series{
			{name: "backlog (max)", color: colOrange, width: 1, ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.BacklogMax) }), aggMax)},
			{name: "backlog (at end)", color: colVermil, width: 1.5, ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.Backlog) }), aggMax)},
		}},
	},
		caption: caption})

	if hasErrors(sum, intervals) {
		var es []series
		classes := errorClasses(intervals)
		if len(classes) > 1 {
			es = append(es, series{name: "all", color: colGrey, width: 1, dashes: []float64{4, 2},
				ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.Errors) }), aggSum)})
		}
		for i, class := range classes {
			es = append(es, series{name: class, color: errPalette[i%len(errPalette)], width: 1.5,
				ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.ErrorsBy[class]) }), aggSum)})
		}
		if len(classes) == 0 {
			es = append(es, series{name: "errors", color: colVermil, width: 1.5,
				ys: ps.ys(always(func(iv Interval) float64 { return float64(iv.Errors) }), aggSum)})
		}
		ylabel, caption := "errors per interval", "Failed transactions per interval, by error class."
		if ps.per > 1 {
			ylabel, caption = "errors per "+ps.span, "Failed transactions per "+ps.span+" ("+strconv.Itoa(ps.per)+" intervals), by error class."
		}
		charts = append(charts, chart{name: "errors", title: "Errors: " + on + suffix, aspect: chartAspect,
			panels:  []panel{{ylabel: ylabel, series: es}},
			caption: caption})
	}
	for i := range charts {
		charts[i].xs = ps.xs
		charts[i].event = sum.Event
	}
	return charts
}

func workloadOn(sum Summary) string {
	switch {
	case sum.Workload != "" && sum.Target != "":
		return sum.Workload + " on " + sum.Target
	case sum.Workload != "":
		return sum.Workload
	}
	return sum.Target
}

func hasTarget(sum Summary, intervals []Interval) bool {
	if sum.RateTarget > 0 {
		return true
	}
	for _, iv := range intervals {
		if iv.RateTarget > 0 {
			return true
		}
	}
	return false
}

func hasErrors(sum Summary, intervals []Interval) bool {
	if sum.Errors > 0 {
		return true
	}
	for _, iv := range intervals {
		if iv.Errors > 0 {
			return true
		}
	}
	return false
}

// errorClasses are the classes of the intervals' errors, the most frequent
// first.
func errorClasses(intervals []Interval) []string {
	total := map[string]int64{}
	for _, iv := range intervals {
		for c, n := range iv.ErrorsBy {
			total[c] += n
		}
	}
	return byCount(total)
}

func byCount(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k, n := range m {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// The charts in the page: their data as JSON, drawn by uPlot.

// nums is a series' values in JSON: NaN is null (no point).
type nums []float64

// MarshalJSON implements json.Marshaler.
func (ns nums) MarshalJSON() ([]byte, error) {
	if ns == nil {
		return []byte("null"), nil
	}
	b := []byte{'['}
	for i, v := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// seriesJSON is one line in the page's chart data.
type seriesJSON struct {
	Label string    `json:"label"`
	Color string    `json:"color"`
	Width float64   `json:"width"`
	Dash  []float64 `json:"dash,omitempty"`
	Y     nums      `json:"y"`
	// Lo and Hi are the range of the point's intervals, shaded and named
	// RangeLabel in the legend.
	Lo         nums   `json:"lo,omitempty"`
	Hi         nums   `json:"hi,omitempty"`
	RangeLabel string `json:"rangeLabel,omitempty"`
	RangeColor string `json:"rangeColor,omitempty"`
}

// panelJSON is one plot area.
type panelJSON struct {
	YLabel string       `json:"ylabel"`
	Log    bool         `json:"log"`
	YMin   float64      `json:"ymin"` // log: a power of ten
	YMax   float64      `json:"ymax"`
	Series []seriesJSON `json:"series"`
}

// eventJSON is where a chart marks the event.
type eventJSON struct {
	Kind  string  `json:"kind"`  // by the line on the top panel
	Label string  `json:"label"` // in the legend: "kill-primary at 29.4 s"
	At    float64 `json:"at"`
	// From and To are the write-unavailability window, when Band.
	Band      bool    `json:"band"`
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	BandLabel string  `json:"bandLabel,omitempty"`
}

// chartJSON is one chart in the page's data.
type chartJSON struct {
	Name   string      `json:"name"` // the figure is #chart-<name>
	Aspect float64     `json:"aspect"`
	XLabel string      `json:"xlabel"`
	End    float64     `json:"end"` // the time axis runs from 0 to End
	Dots   bool        `json:"dots"`
	X      nums        `json:"x"`
	Panels []panelJSON `json:"panels"`
	Event  *eventJSON  `json:"event,omitempty"`
}

// reportData is the page's chart data, read by its script.
type reportData struct {
	Charts []chartJSON `json:"charts"`
}

// Colours of the event's marks.
const (
	colEvent = "rgb(180,20,40)"
	colBand  = "rgba(220,40,60,0.18)"
)

func chartsJSON(charts []chart, tl timeline) reportData {
	var d reportData
	for _, c := range charts {
		cj := chartJSON{Name: c.name, Aspect: c.aspect, XLabel: "time since start (s)", End: tl.end,
			Dots: len(c.xs) <= 30, X: c.xs}
		for _, p := range c.panels {
			pj := panelJSON{YLabel: p.ylabel, Log: p.log}
			pj.YMin, pj.YMax = yRange(p)
			for _, s := range p.series {
				sj := seriesJSON{Label: shorten(s.name, 32), Color: s.color, Width: s.width, Dash: s.dashes, Y: s.ys}
				if s.lo != nil && !p.log {
					sj.Lo, sj.Hi = s.lo, s.hi
					sj.RangeLabel = s.name[:strings.IndexByte(s.name+" ", ' ')] + " (range)"
					sj.RangeColor = translucent(s.color)
				}
				pj.Series = append(pj.Series, sj)
			}
			cj.Panels = append(cj.Panels, pj)
		}
		if m := c.eventMarks(tl); m != nil {
			ej := &eventJSON{Kind: shorten(m.kind, 32), Label: shorten(m.kind, 20) + " at " + seconds(m.at) + " s", At: m.at}
			if m.band {
				ej.Band, ej.From, ej.To, ej.BandLabel = true, m.from, m.to, "write unavailable"
			}
			cj.Event = ej
		}
		d.Charts = append(d.Charts, cj)
	}
	return d
}

// yRange is a panel's Y axis: from 0 to 15% above the highest point
// (headroom for the event's label); on a log axis from the power of ten at
// or below the lowest point to the one at or above the highest.
func yRange(p panel) (lo, hi float64) {
	if p.log {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, s := range p.series {
			for _, y := range s.ys {
				if y > 0 {
					lo, hi = math.Min(lo, y), math.Max(hi, y)
				}
			}
		}
		if math.IsInf(lo, 0) {
			lo, hi = 1, 10 // no point at all
		}
		elo, ehi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if ehi <= elo {
			ehi = elo + 1
		}
		return math.Pow(10, elo), math.Pow(10, ehi)
	}
	for _, s := range p.series {
		for _, ys := range [][]float64{s.ys, s.hi} {
			for _, y := range ys {
				if !math.IsNaN(y) {
					hi = math.Max(hi, y)
				}
			}
		}
	}
	return 0, math.Max(hi*1.15, 1)
}

// translucent is the CSS colour rgb(r,g,b) with alpha 0.24.
func translucent(c string) string {
	return strings.Replace(strings.Replace(c, "rgb(", "rgba(", 1), ")", ",0.24)", 1)
}

// eventMarks is where the chart marks the event (nil: no event).
type eventMarks struct {
	kind     string
	at       float64
	band     bool
	from, to float64
}

func (c chart) eventMarks(tl timeline) *eventMarks {
	e := c.event
	if e == nil {
		return nil
	}
	m := &eventMarks{kind: e.Kind, at: tl.sec(e.At)}
	if m.kind == "" {
		m.kind = "event"
	}
	if !e.FirstFailed.IsZero() {
		m.band, m.from, m.to = true, tl.sec(e.FirstFailed), tl.end
		if !e.FirstOK.IsZero() {
			m.to = tl.sec(e.FirstOK)
		}
	}
	return m
}

// library is the chart library and the page's drawing script.
type library struct {
	css template.CSS
	js  template.JS
}

// chartLib is uPlot, as the web console embeds it (web/static/vendor), made
// a plain script, followed by reportJS.
var chartLib = sync.OnceValues(func() (library, error) {
	js, err := web.Asset("vendor/uplot/uPlot.esm.min.js")
	if err != nil {
		return library{}, err
	}
	css, err := web.Asset("vendor/uplot/uPlot.min.css")
	if err != nil {
		return library{}, err
	}
	const export = "export default uPlot;"
	if !bytes.Contains(js, []byte(export)) {
		return library{}, fmt.Errorf("the console's uPlot (web/static/vendor/uplot) does not end with %q: update report.go for it", export)
	}
	src := strings.Replace(string(js), export, "", 1)
	return library{css: template.CSS(css), js: template.JS(src + "\n" + reportJS)}, nil
})

// reportJS draws the charts of #report-data with uPlot: each panel of a
// chart a plot (panels of one chart share the time axis and the cursor),
// lines broken where a point has none, a dot for a point alone (every
// point when there are few), the range of a point's intervals shaded, the
// event's window shaded and its line drawn with its kind on the top panel.
// Names are set as text (uPlot's legend uses textContent), never as markup.
// Each figure gets data-drawn="true" once drawn.
const reportJS = `
(() => {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif';
  const lone = (ys) => {
    const out = [];
    for (let i = 0; i < ys.length; i++) {
      if (ys[i] == null) continue;
      if ((i === 0 || ys[i - 1] == null) && (i === ys.length - 1 || ys[i + 1] == null)) out.push(i);
    }
    return out;
  };
  const runs = (xs, lo, hi) => {
    const out = [];
    let cur = [];
    for (let i = 0; i < xs.length; i++) {
      if (lo[i] == null || hi[i] == null) { if (cur.length) out.push(cur); cur = []; continue; }
      cur.push(i);
    }
    if (cur.length) out.push(cur);
    return out;
  };
  function build(c, fig) {
    const box = fig.querySelector('.plots');
    box.textContent = '';
    const width = Math.max(box.clientWidth, 300);
    const height = Math.round(width * c.aspect / c.panels.length);
    c.panels.forEach((p, pi) => {
      const first = pi === 0, last = pi === c.panels.length - 1;
      const ys = p.series.map((s) => s.y.map((v) => (v == null || (p.log && v <= 0)) ? null : v));
      const el = document.createElement('div');
      box.appendChild(el);
      const hooks = {
        drawClear: [(u) => {
          const ctx = u.ctx, b = u.bbox;
          ctx.save();
          ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
          p.series.forEach((s) => {
            if (!s.lo) return;
            ctx.fillStyle = s.rangeColor;
            for (const r of runs(c.x, s.lo, s.hi)) {
              if (r.length < 2) continue;
              ctx.beginPath();
              r.forEach((i, k) => { const x = u.valToPos(c.x[i], 'x', true), y = u.valToPos(s.hi[i], 'y', true); k ? ctx.lineTo(x, y) : ctx.moveTo(x, y); });
              for (let k = r.length - 1; k >= 0; k--) ctx.lineTo(u.valToPos(c.x[r[k]], 'x', true), u.valToPos(s.lo[r[k]], 'y', true));
              ctx.closePath(); ctx.fill();
            }
          });
          const e = c.event;
          if (e && e.band) {
            let x0 = Math.max(u.valToPos(e.from, 'x', true), b.left), x1 = Math.min(u.valToPos(e.to, 'x', true), b.left + b.width);
            const w = 5 * devicePixelRatio;
            if (x1 - x0 < w) { const m = (x0 + x1) / 2; x0 = m - w / 2; x1 = m + w / 2; }
            ctx.fillStyle = '` + colBand + `';
            ctx.fillRect(x0, b.top, x1 - x0, b.height);
          }
          ctx.restore();
        }],
        draw: [(u) => {
          const e = c.event;
          if (!e) return;
          const ctx = u.ctx, b = u.bbox, r = devicePixelRatio;
          const x = u.valToPos(e.at, 'x', true);
          if (x < b.left || x > b.left + b.width) return;
          ctx.save();
          ctx.strokeStyle = '` + colEvent + `'; ctx.lineWidth = 1.5 * r; ctx.setLineDash([6 * r, 3 * r]);
          ctx.beginPath(); ctx.moveTo(x, b.top); ctx.lineTo(x, b.top + b.height); ctx.stroke();
          if (first) {
            ctx.setLineDash([]);
            ctx.font = FONT.replace('12px', (12 * r) + 'px');
            const w = ctx.measureText(e.kind).width, h = 14 * r, gap = 4 * r;
            let tx = x + gap;
            if (tx + w > b.left + b.width) tx = x - gap - w;
            const ty = b.top + 2 * r;
            ctx.fillStyle = 'rgba(255,255,255,0.82)'; ctx.fillRect(tx - 2 * r, ty, w + 4 * r, h + 2 * r);
            ctx.fillStyle = '` + colEvent + `'; ctx.textBaseline = 'top'; ctx.fillText(e.kind, tx, ty + r);
          }
          ctx.restore();
        }],
      };
      const logTicks = (u, splits) => splits.map((v) => {
        const m = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)));
        const dense = Math.log10(p.ymax / p.ymin) <= 2.01;
        return (m === 1 || (dense && (m === 2 || m === 5))) ? String(+v.toPrecision(3)) : '';
      });
      const opts = {
        width, height,
        cursor: { sync: { key: 'report-' + c.name }, drag: { x: false, y: false } },
        legend: { show: true, live: false },
        scales: {
          x: { time: false, range: [0, c.end] },
          y: p.log ? { distr: 3, log: 10, range: [p.ymin, p.ymax] } : { range: [p.ymin, p.ymax] },
        },
        axes: [
          { label: last ? c.xlabel : '', labelSize: last ? 24 : 0, font: FONT, labelFont: FONT, grid: { stroke: '#e1e1e1', width: 1 }, ticks: { stroke: '#c8c8c8' } },
          { label: p.ylabel, font: FONT, labelFont: FONT, size: 56, grid: { stroke: '#e1e1e1', width: 1 }, ticks: { stroke: '#c8c8c8' }, values: p.log ? logTicks : undefined },
        ],
        series: [{ label: 'time (s)' }, ...p.series.map((s, si) => ({
          label: s.label, stroke: s.color, width: s.width, dash: s.dash || undefined, spanGaps: false,
          points: { show: c.dots, size: 5, fill: s.color, stroke: s.color, filter: (u, i, show) => (show ? null : lone(ys[si])) },
        }))],
        hooks,
      };
      new uPlot(opts, [c.x, ...ys], el);
    });
    const marks = fig.querySelector('.marks');
    marks.textContent = '';
    const mark = (label, style) => {
      const li = document.createElement('li');
      const sw = document.createElement('span');
      sw.className = 'swatch';
      Object.assign(sw.style, style);
      li.appendChild(sw);
      li.appendChild(document.createTextNode(label));
      marks.appendChild(li);
    };
    for (const p of c.panels) for (const s of p.series) if (s.lo) mark(s.rangeLabel, { background: s.rangeColor });
    if (c.event) {
      mark(c.event.label, { borderTop: '2px dashed ` + colEvent + `', height: '0' });
      if (c.event.band) mark(c.event.bandLabel, { background: '` + colBand + `' });
    }
    fig.dataset.drawn = 'true';
  }
  const draw = () => { for (const c of data.charts) build(c, document.getElementById('chart-' + c.name)); };
  draw();
  let t = 0, w = innerWidth;
  addEventListener('resize', () => { if (innerWidth === w) return; w = innerWidth; clearTimeout(t); t = setTimeout(draw, 150); });
})();
`

// shorten cuts s to n characters, the last one an ellipsis.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// seconds formats a time on the axis: 29.4, 30, 0.25.
func seconds(s float64) string {
	return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64)
}

// The page.

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":    fmtMS,
	"count": fmtCount,
	"rate":  fmtRate,
}).Parse(reportHTML))

// figure is one chart on the page: its title and caption are text on the
// page, its plots are drawn by the page's script from ChartData.
type figure struct {
	ID, Title, Caption string
}

// reportPage is what the page template reads.
type reportPage struct {
	Sum         Summary
	Title       string
	Date        string
	Mode        string
	Duration    string
	Intervals   int
	ErrorsBy    []classCount
	ErrorShare  string
	Event       *eventView
	Figures     []figure
	ChartCSS    template.CSS // uPlot's style
	ChartJS     template.JS  // uPlot and the script that draws the charts
	ChartData   template.JS  // reportData as JSON
	OpenLoop    bool
	Interrupted bool
}

type classCount struct {
	Class string
	N     int64
}

// eventView is the event block's figures, formatted.
type eventView struct {
	EventReport
	At          string // seconds since start
	AtTime      string
	Window      string // "29.5 s → 31.513 s"
	Phases      []phase
	LostWarning bool
}

type phase struct {
	Name string
	OpSummary
}

func newReportPage(sum Summary, intervals []Interval, tl timeline, charts []chart) reportPage {
	var figs []figure
	for _, c := range charts {
		figs = append(figs, figure{ID: "chart-" + c.name, Title: c.title, Caption: c.caption})
	}
	p := reportPage{
		Sum:         sum,
		Title:       "dbpilot bench: " + workloadOn(sum),
		Intervals:   len(intervals),
		Figures:     figs,
		Interrupted: sum.Interrupted,
		OpenLoop:    sum.Mode != "closed",
		Duration:    seconds(math.Round(sum.Seconds*10)/10) + " s",
	}
	if len(intervals) > 0 {
		p.Date = tl.t0.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	switch {
	case sum.Mode == "closed":
		p.Mode = "closed loop"
	case sum.RateTarget > 0:
		p.Mode = "open loop at " + fmtRate(sum.RateTarget) + " tx/s"
		if sum.Arrival != "" {
			p.Mode += ", " + string(sum.Arrival) + " arrivals"
		}
	case sum.Mode != "":
		p.Mode = sum.Mode + " loop"
	}
	for _, c := range byCount(sum.ErrorsBy) {
		p.ErrorsBy = append(p.ErrorsBy, classCount{c, sum.ErrorsBy[c]})
	}
	if sum.Transactions > 0 && sum.Errors > 0 {
		p.ErrorShare = strconv.FormatFloat(100*float64(sum.Errors)/float64(sum.Transactions), 'f', 2, 64) + "%"
	}
	if e := sum.Event; e != nil {
		v := &eventView{EventReport: *e, LostWarning: e.LostWrites > 0,
			At: seconds(tl.sec(e.At)), AtTime: e.At.UTC().Format("15:04:05.000 UTC")}
		if !e.FirstFailed.IsZero() {
			v.Window = seconds(tl.sec(e.FirstFailed)) + " s → "
			if e.FirstOK.IsZero() {
				v.Window += "the end of the run (no write succeeded after)"
			} else {
				v.Window += seconds(tl.sec(e.FirstOK)) + " s"
			}
		}
		v.Phases = []phase{{"before", e.Before}, {"during", e.During}, {"after", e.After}}
		p.Event = v
	}
	return p
}

// fmtMS formats a latency in milliseconds with three significant digits
// or more: 0.412, 3.25, 12.4, 2013.
// It is formatMS with thousands separators from 1000 on.
func fmtMS(v float64) string {
	if math.Abs(v) < 100 {
		return formatMS(v)
	}
	return fmtCount(int64(math.Round(v)))
}

// fmtCount formats an integer with thousands separators: 1,234,567.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtRate formats transactions per second with one decimal: 1,000.0.
func fmtRate(v float64) string {
	r := math.Round(v * 10)
	whole := int64(r / 10)
	tenth := int64(math.Abs(r)) % 10
	return fmtCount(whole) + "." + strconv.FormatInt(tenth, 10)
}

// reportHTML is the page: html/template escapes every value; the chart
// library, its style and the charts' data (JSON, with <, > and & escaped)
// are the only unescaped values.
const reportHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{.ChartCSS}}
:root { --fg: #1e1e1e; --muted: #5f6368; --line: #e2e4e8; --bad: #b41428; --badbg: #fdecee; }
* { box-sizing: border-box; }
body { margin: 0; background: #f3f4f6; color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 40px; background: #fff; min-height: 100vh; }
h1 { font-size: 24px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 13px; margin: 0 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.sub { margin: 0 0 12px; color: var(--muted); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { font-weight: 600; border-bottom: 2px solid var(--line); }
.n { text-align: right; white-space: nowrap; }
.kv { width: 100%; }
.kv th { font-weight: normal; color: var(--muted); white-space: nowrap; }
.kv td { text-align: right; }
.kv th.class { padding-left: 24px; }
.pair { display: flex; flex-wrap: wrap; gap: 16px 48px; align-items: flex-start; }
.pair .kv { width: auto; min-width: 380px; }
caption { caption-side: top; text-align: left; padding: 4px 10px; color: var(--muted); font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 16px 32px; }
.warn { margin: 12px 0; padding: 8px 12px; background: var(--badbg); border-left: 4px solid var(--bad); }
td.lost { background: var(--bad); color: #fff; font-weight: 700; }
td.ok { color: #006b4f; font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
figure { margin: 0 0 28px; }
.chart-title { font-size: 15px; font-weight: 600; margin: 0 0 4px; overflow-wrap: anywhere; }
.plots { width: 100%; min-height: 120px; }
.plots .uplot { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; }
.plots .u-legend { font-size: 13px; text-align: left; margin: 0 0 6px 56px; }
.marks { list-style: none; margin: 0 0 4px 56px; padding: 0; font-size: 13px; display: flex; flex-wrap: wrap; gap: 4px 18px; }
.marks .swatch { display: inline-block; width: 22px; height: 10px; margin-right: 6px; vertical-align: middle; }
figcaption { margin-top: 2px; color: var(--muted); font-size: 13px; }
footer { margin-top: 32px; color: var(--muted); font-size: 13px; }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
<p class="sub">{{with .Mode}}{{.}} · {{end}}{{with .Date}}{{.}} · {{end}}{{.Duration}} · {{.Intervals}} intervals</p>
</header>
{{if .Interrupted}}<p class="warn" id="interrupted">Interrupted before its end: these are the figures of the run so far.</p>
{{end}}
<section id="summary">
<h2>Summary</h2>
<div class="cards">
<div>
<h3>Throughput</h3>
<table class="kv">
<tr><th>rate target</th><td id="rate-target">{{if and .OpenLoop (gt .Sum.RateTarget 0.0)}}{{rate .Sum.RateTarget}} tx/s{{else}}none (closed loop){{end}}</td></tr>
<tr><th>rate achieved</th><td id="rate-achieved">{{rate .Sum.RateAchieved}} tx/s</td></tr>
<tr><th>transactions</th><td id="transactions">{{count .Sum.Transactions}}</td></tr>
<tr><th>errors</th><td id="errors"{{if .Sum.Errors}} class="bad"{{end}}>{{count .Sum.Errors}}{{with .ErrorShare}} ({{.}}){{end}}</td></tr>
{{range .ErrorsBy}}<tr><th class="class">{{.Class}}</th><td>{{count .N}}</td></tr>
{{end}}</table>
</div>
<div>
<h3>Latency (ms, from intended start)</h3>
<table class="kv">
<tr><th>p50</th><td id="p50">{{ms .Sum.P50}}</td></tr>
<tr><th>p90</th><td id="p90">{{ms .Sum.P90}}</td></tr>
<tr><th>p99</th><td id="p99">{{ms .Sum.P99}}</td></tr>
<tr><th>p99.9</th><td id="p999">{{ms .Sum.P999}}</td></tr>
<tr><th>max</th><td id="max">{{ms .Sum.Max}}</td></tr>
</table>
</div>
<div>
<h3>Load</h3>
<table class="kv">
<tr><th>max backlog</th><td id="max-backlog">{{count .Sum.MaxBacklog}}</td></tr>
<tr><th>max busy connections</th><td id="max-busy">{{.Sum.MaxBusy}}</td></tr>
<tr><th>reconnects</th><td id="reconnects">{{count .Sum.Reconnects}}</td></tr>
<tr><th>interrupted</th><td>{{if .Interrupted}}<span class="bad">yes</span>{{else}}no{{end}}</td></tr>
</table>
</div>
</div>
</section>
{{if .Sum.Ops}}
<section id="ops">
<h2>Operations</h2>
<table>
<thead><tr><th>operation</th><th class="n">transactions</th><th class="n">errors</th><th class="n">p50 ms</th><th class="n">p90 ms</th><th class="n">p99 ms</th><th class="n">p99.9 ms</th><th class="n">max ms</th></tr></thead>
<tbody>
{{range .Sum.Ops}}<tr><td>{{.Op}}</td><td class="n">{{count .Count}}</td><td class="n">{{count .Errors}}</td><td class="n">{{ms .P50}}</td><td class="n">{{ms .P90}}</td><td class="n">{{ms .P99}}</td><td class="n">{{ms .P999}}</td><td class="n">{{ms .Max}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}
{{with .Event}}
<section id="event">
<h2>Event: {{.Kind}}</h2>
{{if .LostWarning}}<p class="warn">{{count .LostWrites}} acknowledged {{if eq .LostWrites 1}}write is{{else}}writes are{{end}} missing on the new primary.</p>
{{end}}<div class="pair">
<table class="kv">
<tr><th>kind</th><td>{{.Kind}}</td></tr>
<tr><th>at</th><td>{{.At}} s after start ({{.AtTime}})</td></tr>
{{if or .OldPrimary .NewPrimary}}<tr><th>primary</th><td id="primaries">{{or .OldPrimary "?"}} → {{or .NewPrimary "?"}}</td></tr>
{{end}}<tr><th>write-unavailability</th><td id="write-unavailable">{{if .Window}}{{ms .UnavailableMS}} ms{{else}}none: no write failed{{end}}</td></tr>
{{with .Window}}<tr><th>window</th><td>{{.}}</td></tr>
{{end}}<tr><th>failed transactions</th><td id="failed">{{count .Failed}}</td></tr>
<tr><th>acknowledged writes</th><td id="acked-writes">{{count .AckedWrites}}</td></tr>
<tr><th>lost acknowledged writes</th><td id="lost-writes" class="{{if .LostWarning}}lost{{else}}ok{{end}}">{{count .LostWrites}}</td></tr>
</table>
<table id="phases">
<caption>Transactions before, during and after the event</caption>
<thead><tr><th></th><th class="n">transactions</th><th class="n">errors</th><th class="n">p50 ms</th><th class="n">p99 ms</th><th class="n">p99.9 ms</th><th class="n">max ms</th></tr></thead>
<tbody>
{{range .Phases}}<tr><th>{{.Name}}</th><td class="n">{{count .Count}}</td><td class="n">{{count .Errors}}</td><td class="n">{{ms .P50}}</td><td class="n">{{ms .P99}}</td><td class="n">{{ms .P999}}</td><td class="n">{{ms .Max}}</td></tr>
{{end}}</tbody>
</table>
</div>
</section>
{{end}}
<section id="charts">
<h2>Charts</h2>
{{range .Figures}}<figure id="{{.ID}}">
<div class="chart-title">{{.Title}}</div>
<div class="plots"></div>
<ul class="marks"></ul>
<figcaption>{{.Caption}}</figcaption>
</figure>
{{else}}<p>No interval was recorded.</p>
{{end}}</section>
<section id="method">
<h2>How latency is measured</h2>
{{if .OpenLoop}}<p>Open loop: every transaction has an intended start, given by the arrival schedule at the target rate, whether or not a connection is free to run it. Its latency runs from that intended start to its commit or error, so the time a transaction waits in the backlog behind a stalled server counts: a stall of two seconds shows as two seconds of latency for the transactions it held up, not as a few slow ones (no coordinated omission).</p>
{{else}}<p>Closed loop: each connection runs its transactions back to back and latency runs from each transaction's start. A stalled server stalls the clients too, so fewer transactions are issued during a stall and the percentiles understate what clients arriving at a steady rate would see; an open-loop run measures that.</p>
{{end}}<p>Percentiles come from HDR histograms of every transaction of the run; the charts show, per interval, the transactions completed in it.</p>
</section>
<footer>Report written by dbpilot bench.</footer>
</main>
{{with .ChartData}}<script type="application/json" id="report-data">{{.}}</script>
<script type="module">{{$.ChartJS}}</script>
{{end}}</body>
</html>
`
