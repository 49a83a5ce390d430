package report

// Charts and topology drawings as inline SVG, written here rather than by
// a chart library: the page must need no script and fetch nothing, and a
// few polylines with axes are all it draws. Every text put into the SVG is
// escaped (template.HTMLEscapeString).

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Chart is one chart of the page.
type Chart struct {
	ID, Title, Unit, Query string
	SVG                    template.HTML
	Legend                 []LegendItem
	// Empty: no point in the window; Error: the query failed.
	Empty bool
	Error string
	// Points counts the points drawn.
	Points int
}

// LegendItem names one series.
type LegendItem struct {
	Name, Color string
	Max         string // its largest value, formatted
}

// mark is a key time drawn on the charts.
type mark struct {
	t            time.Time
	label, class string
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// Chart geometry (SVG user units; the SVG scales to the page's width).
const (
	chartW, chartH                 = 900, 190
	chartLeft, chartRight          = 60, 14
	chartTop, chartBottom          = 30, 26
	chartPlotW, chartPlotH         = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartGapFactor         float64 = 2.5 // a gap of more than this many steps breaks a line
)

// esc escapes a text put into the SVG.
var esc = template.HTMLEscapeString

// newChart draws c's series from from to to, the time axis labelled from
// origin, marks as vertical lines (the span between the first two shaded).
func newChart(c ChartInput, from, to, origin time.Time, marks []mark) Chart {
	ch := Chart{ID: c.ID, Title: c.Title, Unit: c.Unit, Query: c.Query, Error: c.Error}
	series := slices.Clone(c.Series)
	slices.SortStableFunc(series, func(a, b dbpilot.Series) int {
		return strings.Compare(seriesName(a, c.Legend), seriesName(b, c.Legend))
	})
	if len(series) > len(palette) {
		series = series[:len(palette)]
	}
	lo, hi := 0.0, 0.0
	for _, s := range series {
		for _, p := range s.Points {
			if !isFinite(p.V) {
				continue
			}
			lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
			ch.Points++
		}
	}
	if ch.Points == 0 {
		ch.Empty = true
	}
	span := to.Sub(from)
	if span <= 0 {
		span = time.Second
	}
	step := niceStep((hi - lo) / 4)
	if hi <= lo {
		step = 1
	}
	top := math.Ceil(hi/step) * step
	bottom := math.Floor(lo/step) * step
	if top <= bottom {
		top = bottom + step
	}
	x := func(t time.Time) float64 { return chartLeft + float64(t.Sub(from))/float64(span)*chartPlotW }
	y := func(v float64) float64 { return chartTop + chartPlotH - (v-bottom)/(top-bottom)*chartPlotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, chartH, esc(c.Title))
	// Shaded span between the first two marks (detection to writes open).
	if len(marks) >= 2 {
		x0, x1 := clampX(x(marks[0].t)), clampX(x(marks[1].t))
		if x1 > x0 {
			fmt.Fprintf(&b, `<rect class="span" x="%.1f" y="%d" width="%.1f" height="%d"/>`, x0, chartTop, x1-x0, chartPlotH)
		}
	}
	// Y grid and labels.
	for v := bottom; v <= top+step/2; v += step {
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, chartLeft, yy, chartLeft+chartPlotW, yy)
		fmt.Fprintf(&b, `<text class="ylabel" x="%d" y="%.1f">%s</text>`, chartLeft-6, yy+4, esc(formatValue(v, c.Unit)))
	}
	// X ticks, labelled from origin.
	tick := tickStep(span)
	first := origin.Add(time.Duration(math.Ceil(float64(from.Sub(origin))/float64(tick))) * tick)
	for t := first; !t.After(to); t = t.Add(tick) {
		xx := x(t)
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, xx, chartTop+chartPlotH, xx, chartTop+chartPlotH+4)
		fmt.Fprintf(&b, `<text class="xlabel" x="%.1f" y="%d">%s</text>`, xx, chartH-8, esc(formatOffset(t.Sub(origin))))
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>`, chartLeft, chartTop, chartPlotW, chartPlotH)
	// Series.
	for i, s := range series {
		color := palette[i%len(palette)]
		name := seriesName(s, c.Legend)
		item := LegendItem{Name: name, Color: color}
		maxV := math.Inf(-1)
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b dbpilot.Point) int { return a.T.Compare(b.T) })
		gap := typicalStep(pts) * chartGapFactor
		fmt.Fprintf(&b, `<g class="series" data-series="%s" stroke="%s" fill="%s">`, esc(name), color, color)
		var seg []string
		flush := func() {
			switch len(seg) {
			case 0:
			case 1:
				xy := strings.Split(seg[0], ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="1.8"/>`, xy[0], xy[1])
			default:
				fmt.Fprintf(&b, `<polyline fill="none" points="%s"/>`, strings.Join(seg, " "))
			}
			seg = seg[:0]
		}
		for j, p := range pts {
			if !isFinite(p.V) || p.T.Before(from) || p.T.After(to) {
				flush()
				continue
			}
			if j > 0 && gap > 0 && float64(p.T.Sub(pts[j-1].T)) > gap {
				flush()
			}
			maxV = math.Max(maxV, p.V)
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.V)))
		}
		flush()
		b.WriteString(`</g>`)
		if !math.IsInf(maxV, -1) {
			item.Max = formatValue(maxV, c.Unit)
		}
		ch.Legend = append(ch.Legend, item)
	}
	// Marks, their labels on two rows above the plot (two marks a few
	// pixels apart stay readable), right-aligned near the right edge.
	for i, m := range marks {
		if m.t.Before(from) || m.t.After(to) {
			continue
		}
		xx := x(m.t)
		fmt.Fprintf(&b, `<line class="mark %s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, m.class, xx, chartTop, xx, chartTop+chartPlotH)
		lx, anchor := xx+3, "start"
		if xx > chartLeft+0.8*chartPlotW {
			lx, anchor = xx-3, "end"
		}
		fmt.Fprintf(&b, `<text class="marklabel %s" x="%.1f" y="%d" text-anchor="%s">%s</text>`, m.class, lx, chartTop-16+(i%2)*12, anchor, esc(m.label))
	}
	b.WriteString(`</svg>`)
	ch.SVG = template.HTML(b.String()) // every text above is escaped
	return ch
}

func clampX(v float64) float64 { return math.Max(chartLeft, math.Min(chartLeft+chartPlotW, v)) }

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// typicalStep is the median time between consecutive points (0 for fewer
// than two).
func typicalStep(pts []dbpilot.Point) float64 {
	if len(pts) < 2 {
		return 0
	}
	d := make([]float64, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		d = append(d, float64(pts[i].T.Sub(pts[i-1].T)))
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// seriesName names a series by its legend label, else by its labels.
func seriesName(s dbpilot.Series, legend string) string {
	if v := s.Labels[legend]; legend != "" && v != "" {
		return v
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if k != "__name__" {
			parts = append(parts, k+"="+s.Labels[k])
		}
	}
	if len(parts) == 0 {
		return "value"
	}
	return strings.Join(parts, " ")
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if !(v > 0) || !isFinite(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tickStep is the time between x ticks: a round step giving at most 10.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour} {
		if span/s <= 10 {
			return s
		}
	}
	return span / 10
}

// formatOffset formats a time relative to the origin: "0", "+30s",
// "−2m", "+1m30s", "+1.250s".
func formatOffset(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	if d%time.Second != 0 {
		return sign + strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
	}
	m, s := d/time.Minute, (d%time.Minute)/time.Second
	switch {
	case m == 0:
		return fmt.Sprintf("%s%ds", sign, s)
	case s == 0:
		return fmt.Sprintf("%s%dm", sign, m)
	}
	return fmt.Sprintf("%s%dm%ds", sign, m, s)
}

// formatValue formats an axis or legend value in unit.
func formatValue(v float64, unit string) string {
	num := func(v float64) string {
		a := math.Abs(v)
		switch {
		case a >= 1e6:
			return trimZeros(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
		case a >= 1e4:
			return trimZeros(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
		case a >= 100 || v == math.Trunc(v):
			return strconv.FormatFloat(v, 'f', 0, 64)
		case a >= 1:
			return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
		}
		return trimZeros(strconv.FormatFloat(v, 'f', 3, 64))
	}
	switch unit {
	case "/s":
		return num(v) + "/s"
	case "s":
		return num(v) + " s"
	case "ms":
		return num(v) + " ms"
	}
	return num(v)
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Topology is the cluster drawn at one instant.
type Topology struct {
	ID, Title string
	At        time.Time
	// Recorded is false when the history knows nothing of that time.
	Recorded  bool
	Primary   string
	Instances int
	Problems  []string
	SVG       template.HTML
}

func topologies(in *Input) []Topology {
	var out []Topology
	for _, t := range []struct {
		id, title string
		at        *dbpilot.ClusterAt
	}{{"before", "Just before the detection", in.Before}, {"after", "Just after the end", in.After}} {
		if t.at == nil {
			continue
		}
		out = append(out, newTopology(t.id, t.title, t.at))
	}
	return out
}

// Topology drawing geometry.
const (
	nodeW, nodeH = 178, 52
	nodeGapX     = 18
	nodeGapY     = 40
	topoMargin   = 12
)

func newTopology(id, title string, c *dbpilot.ClusterAt) Topology {
	t := Topology{ID: id, Title: title, At: c.At, Recorded: c.Recorded, Primary: keyString(c.Primary), Instances: len(c.Instances)}
	for _, p := range c.Problems {
		line := string(p.Code)
		if !p.Instance.IsZero() {
			line += " on " + p.Instance.String()
		}
		if p.Message != "" {
			line += ": " + p.Message
		}
		t.Problems = append(t.Problems, line)
	}
	if !c.Recorded || len(c.Instances) == 0 {
		return t
	}
	// Levels: the roots (the primary first), then each level's replicas.
	byKey := map[string]*dbpilot.Instance{}
	for _, in := range c.Instances {
		byKey[in.Key.String()] = in
	}
	parent := func(in *dbpilot.Instance) string {
		for _, ch := range in.Channels {
			if _, ok := byKey[ch.Source.String()]; ok && !ch.Source.Equal(in.Key) {
				return ch.Source.String()
			}
		}
		return ""
	}
	children := map[string][]string{}
	var roots []string
	for _, in := range c.Instances {
		k := in.Key.String()
		if p := parent(in); p != "" {
			children[p] = append(children[p], k)
		} else {
			roots = append(roots, k)
		}
	}
	primary := c.Primary.String()
	slices.SortFunc(roots, func(a, b string) int {
		return cmp.Or(cmp.Compare(boolInt(b == primary), boolInt(a == primary)), strings.Compare(a, b))
	})
	var levels [][]string
	seen := map[string]bool{}
	cur := roots
	for len(cur) > 0 {
		levels = append(levels, cur)
		var next []string
		for _, k := range cur {
			seen[k] = true
			kids := slices.Clone(children[k])
			slices.Sort(kids)
			for _, kid := range kids {
				if !seen[kid] {
					next = append(next, kid)
				}
			}
		}
		cur = next
	}
	// Anything left is in a replication cycle: a last level.
	var rest []string
	for _, in := range c.Instances {
		if !seen[in.Key.String()] {
			rest = append(rest, in.Key.String())
		}
	}
	if len(rest) > 0 {
		slices.Sort(rest)
		levels = append(levels, rest)
	}
	widest := 0
	for _, l := range levels {
		widest = max(widest, len(l))
	}
	w := topoMargin*2 + widest*nodeW + (widest-1)*nodeGapX
	h := topoMargin*2 + len(levels)*nodeH + (len(levels)-1)*nodeGapY
	pos := map[string][2]float64{}
	for li, l := range levels {
		rowW := len(l)*nodeW + (len(l)-1)*nodeGapX
		x0 := float64(w-rowW) / 2
		for i, k := range l {
			pos[k] = [2]float64{x0 + float64(i*(nodeW+nodeGapX)), float64(topoMargin + li*(nodeH+nodeGapY))}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="topology" id="topology-%s" viewBox="0 0 %d %d" style="max-width:%dpx" role="img" aria-label="%s">`,
		esc(id), w, h, w, esc(title))
	for _, in := range c.Instances {
		k := in.Key.String()
		p := parent(in)
		if p == "" {
			continue
		}
		from, to := pos[p], pos[k]
		x1, y1 := from[0]+nodeW/2, from[1]+nodeH
		x2, y2 := to[0]+nodeW/2, to[1]
		my := (y1 + y2) / 2
		class := "edge"
		if ch := in.Channel(byKey[p].Key); ch != nil && !ch.Healthy() {
			class += " broken"
		}
		fmt.Fprintf(&b, `<path class="%s" data-from="%s" data-to="%s" d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
			class, esc(p), esc(k), x1, y1, x1, my, x2, my, x2, y2)
	}
	for _, in := range c.Instances {
		k := in.Key.String()
		role := nodeRole(in, c.Primary, parent(in) != "", len(children[k]) > 0)
		writeNode(&b, in, role, c.Lag, pos[k], parent(in) != "")
	}
	b.WriteString(`</svg>`)
	t.SVG = template.HTML(b.String()) // every text above is escaped
	return t
}

// writeNode draws one instance of the topology at xy: its address, role,
// writability and lag, and its first channel's threads (with the source
// when that is not drawn as an edge).
func writeNode(b *strings.Builder, in *dbpilot.Instance, role string, lags map[string]float64, xy [2]float64, hasParent bool) {
	k, state := in.Key.String(), nodeState(in)
	fmt.Fprintf(b, `<g class="node %s" data-key="%s" data-role="%s" data-state="%s" transform="translate(%.1f,%.1f)">`,
		state, esc(k), role, state, xy[0], xy[1])
	fmt.Fprintf(b, `<rect width="%d" height="%d" rx="5"/>`, nodeW, nodeH)
	fmt.Fprintf(b, `<text class="key" x="8" y="17">%s</text>`, esc(k))
	line2 := role
	switch {
	case !in.Reachable:
		line2 += " · unreachable"
	case in.ReadOnly:
		line2 += " · ro"
	default:
		line2 += " · RW"
	}
	if lag, ok := lags[k]; ok && role != "primary" {
		line2 += " · lag " + formatValue(lag, "s")
	}
	fmt.Fprintf(b, `<text x="8" y="32">%s</text>`, esc(line2))
	if len(in.Channels) > 0 {
		ch := in.Channels[0]
		io, sql := "✔", "✔"
		if ch.IORunning != dbpilot.IORunning {
			io = "✖"
		}
		if !ch.SQLRunning {
			sql = "✖"
		}
		line3 := fmt.Sprintf("IO %s SQL %s", io, sql)
		if !hasParent {
			line3 += " · from " + ch.Source.String()
		}
		fmt.Fprintf(b, `<text class="small" x="8" y="46">%s</text>`, esc(line3))
	}
	b.WriteString(`</g>`)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nodeRole(in *dbpilot.Instance, primary dbpilot.InstanceKey, hasParent, hasChildren bool) string {
	switch {
	case in.Key.Equal(primary):
		return "primary"
	case hasParent && hasChildren:
		return "intermediate"
	case len(in.Channels) > 0:
		return "replica"
	}
	return "detached"
}

func nodeState(in *dbpilot.Instance) string {
	switch {
	case !in.Reachable:
		return "unreachable"
	case len(in.Channels) > 0 && !in.Channels[0].Healthy():
		return "stopped"
	}
	return "ok"
}
