package loadgen

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes: 10 in wide; PNGs at chartDPI (1440 pixels wide).
const (
	chartWidth  = 10 * vg.Inch
	chartHeight = 4 * vg.Inch // rate, latency and errors
	// concurrencyHeight is the concurrency chart's height: two panels
	// (busy connections above, backlog below) on one time axis.
	concurrencyHeight = 5 * vg.Inch
	chartDPI          = 144
)

// WriteReport writes the report of a run into dir (created if needed): the
// charts rate, latency, concurrency and, when there were errors, errors, each
// as PNG (1440 pixels wide) and SVG, and index.html, a page that needs
// nothing else: the charts are inline SVG, their typeface and the style are
// in the page, values are escaped by html/template. It returns
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
	var figs []figure
	if len(intervals) > 0 {
		for _, c := range reportCharts(sum, intervals, tl) {
			svg, err := c.write(dir, tl)
			if err != nil {
				return "", fmt.Errorf("report: chart %s: %w", c.name, err)
			}
			figs = append(figs, figure{ID: "chart-" + c.name, Caption: c.caption, SVG: svg})
		}
	}
	page := newReportPage(sum, intervals, tl, figs)
	if len(figs) > 0 {
		if page.FontCSS, err = chartFont(); err != nil {
			return "", fmt.Errorf("report: %w", err)
		}
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

// Colours of the charts (Okabe–Ito, readable by colour-blind readers).
var (
	colBlue    = color.RGBA{0, 114, 178, 255}
	colOrange  = color.RGBA{230, 159, 0, 255}
	colGreen   = color.RGBA{0, 158, 115, 255}
	colVermil  = color.RGBA{213, 94, 0, 255}
	colPurple  = color.RGBA{204, 121, 167, 255}
	colSky     = color.RGBA{86, 180, 233, 255}
	colGrey    = color.RGBA{110, 110, 110, 255}
	colBlack   = color.RGBA{30, 30, 30, 255}
	colEvent   = color.RGBA{180, 20, 40, 255}
	colBand    = color.NRGBA{220, 40, 60, 46} // translucent
	colGrid    = color.RGBA{225, 225, 225, 255}
	errPalette = []color.Color{colVermil, colBlue, colOrange, colPurple, colGreen, colSky, colBlack}
)

// sans is the charts' typeface (Liberation Sans, embedded in gonum/plot).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

const (
	// sansFamily is sans's family name, as SVG text names it.
	sansFamily = "Liberation Sans"
	// fallbackFamilies are the SVG files' font families: Liberation Sans,
	// else fonts of the same metrics (Arial), else near them.
	fallbackFamilies = "'Liberation Sans',Arial,Helvetica,sans-serif"
)

// chartFont is an @font-face rule for the page that carries the charts'
// typeface (about 550 kB), so that their text has the metrics it was laid
// out with on any computer, and the page needs no installed font.
var chartFont = sync.OnceValues(func() (template.CSS, error) {
	face := font.DefaultCache.Lookup(sans, 10)
	if face.Face == nil {
		return "", fmt.Errorf("no %s font in gonum/plot's cache", sansFamily)
	}
	var raw bytes.Buffer
	if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", fmt.Errorf("read the %s font: %w", sansFamily, err)
	}
	return template.CSS(`@font-face { font-family: "` + sansFamily + `"; src: url(data:font/ttf;base64,` +
		base64.StdEncoding.EncodeToString(raw.Bytes()) + `) format("truetype"); }`), nil
})

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

// series is one line of a chart: a value per point, NaN where a point has
// none (no point is drawn, the line breaks); lo and hi, when set, are the
// range of the point's intervals, shaded.
type series struct {
	name   string
	color  color.Color
	width  vg.Length
	dashes []vg.Length
	ys     []float64
	lo, hi []float64
}

// panel is one plot area of a chart.
type panel struct {
	ylabel string
	log    bool // log Y axis: values <= 0 are not drawn
	series []series
}

// chart is one figure of the report, written as name.png and name.svg.
type chart struct {
	name    string
	title   string
	caption string
	height  vg.Length
	panels  []panel
	xs      []float64 // the points' times: the middles of their intervals
	event   *EventReport
}

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
		rate.series = append(rate.series, series{name: "target", color: colGrey, width: 1.5, dashes: []vg.Length{5, 3},
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
	charts = append(charts, chart{name: "rate", title: "Rate: " + on + suffix, height: chartHeight, panels: []panel{rate},
		caption: caption})

	caption = "Latency percentiles of the transactions completed in each interval, from their intended start; an interval where none completed has no point."
	if ps.per > 1 {
		caption += pointNote + "the highest of its intervals' values."
	}
	charts = append(charts, chart{name: "latency", title: "Latency: " + on + suffix, height: chartHeight, panels: []panel{{
		ylabel: "latency (ms, log scale)", log: true,
		series: []series{
			{name: "p50", color: colGreen, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P50 }), aggMax)},
			{name: "p99", color: colOrange, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P99 }), aggMax)},
			{name: "p99.9", color: colVermil, width: 1.5, ys: ps.ys(latency(func(iv Interval) float64 { return iv.P999 }), aggMax)},
			{name: "max", color: colBlack, width: 1, dashes: []vg.Length{2, 2}, ys: ps.ys(latency(func(iv Interval) float64 { return iv.Max }), aggMax)},
		}}},
		caption: caption})

	caption = "Connections running a transaction, and transactions due but not started (backlog), at each interval's end and at most during it."
	if ps.per > 1 {
		caption += pointNote + "the highest of its intervals' values."
	}
	charts = append(charts, chart{name: "concurrency", title: "Concurrency: " + on + suffix, height: concurrencyHeight, panels: []panel{
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
			es = append(es, series{name: "all", color: colGrey, width: 1, dashes: []vg.Length{4, 2},
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
		charts = append(charts, chart{name: "errors", title: "Errors: " + on + suffix, height: chartHeight,
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

// write writes the chart's PNG and SVG into dir and returns the SVG
// element (without the XML prolog) for the page.
func (c chart) write(dir string, tl timeline) (template.HTML, error) {
	img := vgimg.NewWith(vgimg.UseWH(chartWidth, c.height), vgimg.UseDPI(chartDPI))
	if err := c.draw(draw.New(img), tl); err != nil {
		return "", err
	}
	var png bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&png); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, c.name+".png"), png.Bytes(), 0o644); err != nil {
		return "", err
	}
	sv := vgsvg.New(chartWidth, c.height)
	if err := c.draw(draw.New(sv), tl); err != nil {
		return "", err
	}
	var svg bytes.Buffer
	if _, err := sv.WriteTo(&svg); err != nil {
		return "", err
	}
	// Where Liberation Sans is missing, Arial has the same metrics.
	s := strings.ReplaceAll(svg.String(), "font-family:"+sansFamily+";", "font-family:"+fallbackFamilies+";")
	if err := os.WriteFile(filepath.Join(dir, c.name+".svg"), []byte(s), 0o644); err != nil {
		return "", err
	}
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// The SVG is gonum/plot's output: its texts are escaped (our workload,
	// target and class names among them), it holds no script.
	return template.HTML(s), nil
}

// draw draws the chart: its title across the top, the panels stacked on
// one time axis (their plot areas aligned) and the legend in a column on
// the right, outside the data.
func (c chart) draw(dc draw.Canvas, tl timeline) error {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pad := vg.Points(8)
	area := draw.Crop(dc, pad, -pad, pad, -pad)

	title := textStyle(14, colBlack)
	title.XAlign, title.YAlign = draw.XLeft, draw.YTop
	t := c.title
	for r := []rune(t); title.Width(t) > area.Size().X && len(r) > 1; t = string(r) + "…" {
		r = r[:len(r)-1]
	}
	area.FillText(title, vg.Point{X: area.Min.X, Y: area.Max.Y}, t)
	area.Max.Y -= title.Height(t) + vg.Points(6)

	leg := c.legend(tl)
	legW := leg.Rectangle(area).Size().X
	plots := draw.Crop(area, 0, -(legW + vg.Points(14)), 0, 0)

	ps := make([]*plot.Plot, len(c.panels))
	cs := make([]draw.Canvas, len(c.panels))
	h := (plots.Max.Y - plots.Min.Y) / vg.Length(len(c.panels))
	for i, p := range c.panels {
		pl, err := c.plot(p, i == 0, i == len(c.panels)-1, tl)
		if err != nil {
			return err
		}
		ps[i] = pl
		cv := plots
		cv.Max.Y = plots.Max.Y - vg.Length(i)*h
		cv.Min.Y = cv.Max.Y - h
		cs[i] = cv
	}
	// Align the plot areas: Y axes with wider tick labels push their
	// area to the right; move the others as far.
	var left vg.Length
	for i, pl := range ps {
		left = max(left, pl.DataCanvas(cs[i]).Min.X)
	}
	var top vg.Length
	for i, pl := range ps {
		cs[i].Min.X += left - pl.DataCanvas(cs[i]).Min.X
		pl.Draw(cs[i])
		if i == 0 {
			top = pl.DataCanvas(cs[i]).Max.Y
		}
	}
	lc := area
	lc.Min.X = area.Max.X - legW
	lc.Max.Y = top
	leg.Draw(lc)
	return nil
}

// plot builds one panel's plot: the top one carries the event's label, the
// bottom one the time axis's label.
func (c chart) plot(p panel, first, last bool, tl timeline) (*plot.Plot, error) {
	pl := plot.New()
	pl.BackgroundColor = nil
	axisStyle(&pl.X)
	axisStyle(&pl.Y)
	pl.X.Min, pl.X.Max = 0, tl.end
	if last {
		pl.X.Label.Text = "time since start (s)"
	}
	pl.Y.Label.Text = p.ylabel

	pl.X.Tick.Marker = timeTicks{}
	if p.log {
		// The log axis is a linear axis of log10(value) with ticks
		// labelled by value (gonum's LogScale misplaces the axis label's
		// box, which shrinks the plot).
		lo, hi := math.Inf(1), math.Inf(-1)
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
		pl.Y.Min = math.Floor(math.Log10(lo))
		pl.Y.Max = math.Ceil(math.Log10(hi))
		if pl.Y.Max <= pl.Y.Min {
			pl.Y.Max = pl.Y.Min + 1
		}
		pl.Y.Tick.Marker = logTicks{}
	} else {
		hi := 0.0
		for _, s := range p.series {
			for _, ys := range [][]float64{s.ys, s.hi} {
				for _, y := range ys {
					if !math.IsNaN(y) {
						hi = math.Max(hi, y)
					}
				}
			}
		}
		// Headroom above the highest point for the event's label.
		pl.Y.Min, pl.Y.Max = 0, math.Max(hi*1.15, 1)
		pl.Y.Tick.Marker = linearTicks{}
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color = colGrid
	grid.Horizontal.Color = colGrid
	grid.Vertical.Width, grid.Horizontal.Width = 0.5, 0.5
	pl.Add(grid)
	ev := c.eventMarks(tl)
	if ev != nil {
		pl.Add(eventBand{ev})
	}
	for _, s := range p.series {
		if err := addSeries(pl, s, p.log, len(c.xs) <= 30, c.xs); err != nil {
			return nil, err
		}
	}
	if ev != nil {
		pl.Add(eventLine{ev, first})
	}
	return pl, nil
}

func axisStyle(a *plot.Axis) {
	a.Label.TextStyle.Font = font.From(sans, 11)
	a.Label.TextStyle.Color = colBlack
	a.Tick.Label.Font = font.From(sans, 10)
	a.Tick.Label.Color = colBlack
	a.Tick.Length = vg.Points(4)
	a.Padding = vg.Points(2)
	a.Label.Padding = vg.Points(2)
}

// linePiece is the most segments in one stroked path.
const linePiece = 50

// addSeries adds s to pl: a line for each run of points (NaN, and on a log
// axis a value <= 0, breaks it), a dot for a point alone; dots on every
// point when dots.
func addSeries(pl *plot.Plot, s series, log, dots bool, xs []float64) error {
	if s.lo != nil && !log {
		if err := addEnvelope(pl, s, xs); err != nil {
			return err
		}
	}
	style := draw.LineStyle{Color: s.color, Width: vg.Points(float64(s.width)), Dashes: s.dashes}
	var run plotter.XYs
	var alone plotter.XYs
	flush := func() error {
		switch len(run) {
		case 0:
		case 1:
			alone = append(alone, run...)
		default:
			// The PNG rasterizer slows down with the square of a path's
			// length: stroke a long line as pieces that share their ends.
			for i := 0; i < len(run)-1; i += linePiece {
				l, err := plotter.NewLine(run[i:min(i+linePiece+1, len(run))])
				if err != nil {
					return err
				}
				l.LineStyle = style
				pl.Add(l)
			}
			if dots {
				alone = append(alone, run...)
			}
		}
		run = nil
		return nil
	}
	for i, y := range s.ys {
		if math.IsNaN(y) || (log && y <= 0) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		if log {
			y = math.Log10(y)
		}
		run = append(run, plotter.XY{X: xs[i], Y: y})
	}
	if err := flush(); err != nil {
		return err
	}
	if len(alone) > 0 {
		sc, err := plotter.NewScatter(alone)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.color, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		pl.Add(sc)
	}
	return nil
}

// addEnvelope shades the range between s.lo and s.hi, a polygon for each
// run of points.
func addEnvelope(pl *plot.Plot, s series, xs []float64) error {
	var upper, lower plotter.XYs
	flush := func() error {
		if len(upper) > 1 {
			ring := append(upper, lower...)
			for i, j := len(upper), len(ring)-1; i < j; i, j = i+1, j-1 {
				ring[i], ring[j] = ring[j], ring[i]
			}
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return err
			}
			poly.LineStyle.Width = 0
			poly.Color = envelopeColor(s.color)
			pl.Add(poly)
		}
		upper, lower = nil, nil
		return nil
	}
	for i := range xs {
		if math.IsNaN(s.lo[i]) || math.IsNaN(s.hi[i]) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		upper = append(upper, plotter.XY{X: xs[i], Y: s.hi[i]})
		lower = append(lower, plotter.XY{X: xs[i], Y: s.lo[i]})
	}
	return flush()
}

// envelopeColor is c, translucent.
func envelopeColor(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
}

// legend is the chart's legend: every series of every panel, then the
// event's line and window.
func (c chart) legend(tl timeline) plot.Legend {
	leg := plot.NewLegend()
	leg.TextStyle = textStyle(10, colBlack)
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(4)
	leg.ThumbnailWidth = vg.Points(22)
	for _, p := range c.panels {
		for _, s := range p.series {
			leg.Add(shorten(s.name, 32), lineThumb{draw.LineStyle{Color: s.color, Width: vg.Points(float64(max(s.width, 1.5))), Dashes: s.dashes}})
			if s.lo != nil {
				leg.Add(s.name[:strings.IndexByte(s.name+" ", ' ')]+" (range)", bandThumb{envelopeColor(s.color)})
			}
		}
	}
	if ev := c.eventMarks(tl); ev != nil {
		leg.Add(shorten(ev.kind, 20)+" at "+seconds(ev.at)+" s", lineThumb{eventLineStyle})
		if ev.band {
			leg.Add("write unavailable", bandThumb{colBand})
		}
	}
	return leg
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

var eventLineStyle = draw.LineStyle{Color: colEvent, Width: vg.Points(1.5), Dashes: []vg.Length{6, 3}}

// eventBand shades the write-unavailability window over the whole height.
type eventBand struct{ m *eventMarks }

// Plot implements plot.Plotter.
func (b eventBand) Plot(c draw.Canvas, pl *plot.Plot) {
	if !b.m.band {
		return
	}
	trX, _ := pl.Transforms(&c)
	x0 := max(trX(b.m.from), c.Min.X)
	x1 := min(trX(b.m.to), c.Max.X)
	if w := vg.Points(4); x1-x0 < w { // narrower than 4 pt: widened to be seen
		mid := (x0 + x1) / 2
		x0, x1 = max(mid-w/2, c.Min.X), min(mid+w/2, c.Max.X)
	}
	c.FillPolygon(colBand, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
}

// eventLine draws the event's line and, on the top panel, its label.
type eventLine struct {
	m     *eventMarks
	label bool
}

// Plot implements plot.Plotter.
func (l eventLine) Plot(c draw.Canvas, pl *plot.Plot) {
	trX, _ := pl.Transforms(&c)
	x := trX(l.m.at)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(eventLineStyle, x, c.Min.Y, x, c.Max.Y)
	if !l.label {
		return
	}
	kind := shorten(l.m.kind, 32)
	sty := textStyle(10, colEvent)
	sty.YAlign = draw.YTop
	w := sty.Width(kind)
	h := sty.Height(kind)
	gap := vg.Points(4)
	tx := x + gap
	if tx+w > c.Max.X { // no room on the right: write it on the left
		tx = x - gap - w
	}
	ty := c.Max.Y - vg.Points(2)
	c.FillPolygon(color.NRGBA{255, 255, 255, 210}, []vg.Point{
		{X: tx - 2, Y: ty - h - 1}, {X: tx + w + 2, Y: ty - h - 1}, {X: tx + w + 2, Y: ty + 1}, {X: tx - 2, Y: ty + 1}})
	c.FillText(sty, vg.Point{X: tx, Y: ty}, kind)
}

// shorten cuts s to n characters, the last one an ellipsis.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

type lineThumb struct{ draw.LineStyle }

// Thumbnail implements plot.Thumbnailer.
func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.LineStyle, c.Min.X, y, c.Max.X, y)
}

type bandThumb struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (t bandThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(t.color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// logTicks marks an axis of log10(value): a labelled tick at every power
// of ten, and at 2 and 5 times them too when the axis spans at most two
// decades; minor ticks at the other multiples.
type logTicks struct{}

// Ticks implements plot.Ticker; lo and hi are powers of ten.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	dense := hi-lo <= 2.01
	var ticks []plot.Tick
	for e := int(math.Floor(lo)); float64(e) <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := math.Log10(float64(m)) + float64(e)
			if v < lo-1e-9 || v > hi+1e-9 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (dense && (m == 2 || m == 5)) {
				t.Label = tickNumber(float64(m) * math.Pow10(e))
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// timeTicks marks a time axis in seconds at a round step (1, 2, 5, 10, 15,
// 30 s, 1, 2, 5, 10, 15, 30 min, 1 h, ...) giving at most 12 labels.
type timeTicks struct{}

// Ticks implements plot.Ticker.
func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return nil
	}
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 12 {
			step = s
			break
		}
	}
	for span/step > 12 {
		step *= 2
	}
	minor := step / 5
	if math.Mod(step, 5) != 0 {
		minor = step / 2
	}
	if span < 3 {
		step, minor = 0.5, 0.1
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if r := math.Mod(v, step); math.Abs(r) < 1e-9 || math.Abs(r-step) < 1e-9 {
			t.Label = seconds(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// linearTicks labels a linear axis from 0 at a round step (1, 2, 2.5 or 5
// times a power of ten) giving 4 to 8 labels, with minor ticks between.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return nil
	}
	var step, minor float64
	for e := math.Floor(math.Log10(span / 8)); step == 0; e++ {
		for _, m := range []struct{ step, minors float64 }{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
			if s := m.step * math.Pow(10, e); span/s <= 8 {
				step, minor = s, s/m.minors
				break
			}
		}
	}
	if step < 5 { // counts: whole numbers, no minor ticks
		step = math.Max(math.Round(step), 1)
		minor = step
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if r := math.Mod(v, step); math.Abs(r) < 1e-9 || math.Abs(r-step) < 1e-9 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func tickNumber(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
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

// figure is one chart on the page.
type figure struct {
	ID, Caption string
	SVG         template.HTML
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
	FontCSS     template.CSS // the charts' typeface
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

func newReportPage(sum Summary, intervals []Interval, tl timeline, figs []figure) reportPage {
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

// reportHTML is the page: html/template escapes every value; the charts
// are the only template.HTML.
const reportHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{.FontCSS}}
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
figure svg { display: block; width: 100%; height: auto; }
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
{{.SVG}}<figcaption>{{.Caption}}</figcaption>
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
</body>
</html>
`
