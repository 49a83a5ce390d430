package replay

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the result as one table with the stretch, the
// preparation, the source's rate and the recommendation.
func (res *Result) WriteTable(w io.Writer) error {
	st := res.Stretch
	fmt.Fprintf(w, "replay of %s into %s: %d transactions, %d events, %d rows, from %s to %s (recorded over %d s)\n",
		res.Archive, res.Target, st.Txns, st.Events, st.Rows, res.From, res.Until, res.RecordedSpanSec)
	if res.Rate > 0 {
		fmt.Fprintf(w, "pace: %g× the recorded pace\n", res.Rate)
	}
	fmt.Fprintf(w, "prepare: %s\n\n", res.Prepare)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "setting\ttime\ttx/s\tevents/s\trows/s\tspeed-up\tretries\tdeadlocks\tbusy workers\t"
	if res.Rate > 0 {
		head += "max lag\tbehind at\t"
	}
	fmt.Fprintln(tw, head+"data\t")
	for i, r := range res.Settings {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tfailed: %s\t\n", r.Setting, r.Error)
			continue
		}
		busy := "-"
		if r.Threads > 0 {
			busy = fmt.Sprintf("%.1f/%d", r.BusyWorkers(), r.Threads)
		}
		elapsed := r.Elapsed.Round(time.Millisecond).String()
		if len(r.Runs) > 1 {
			elapsed += " (" + spread(r.Runs) + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f×\t%d\t%d\t%s\t", r.Setting, elapsed,
			r.TxnsPerSec, r.EventsPerSec, r.RowsPerSec, r.Speedup, r.Retries, r.Deadlocks, busy)
		if res.Rate > 0 {
			line += fmt.Sprintf("%.1f s\t%.0f s\t", r.MaxLagSec, r.BehindAtSec)
		}
		data := "identical"
		switch {
		case i == 0:
			data = "reference"
		case !r.Identical:
			data = "DIFFERS: " + strings.Join(r.Differ, ",")
		}
		fmt.Fprintln(tw, line+data+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nsource: %.0f events/s (%.0f tx/s) served to a discarding sink, %.1f× the fastest apply (want ≥ 3×)\n",
		res.Source.EventsPerSec(), res.Source.TxnsPerSec(), res.SourceRatio)
	if res.Recommended != nil {
		fmt.Fprintf(w, "recommended: %s\n", res.Reason)
	} else {
		fmt.Fprintf(w, "%s\n", res.Reason)
	}
	for _, wr := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wr)
	}
	return nil
}

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("replay").Funcs(template.FuncMap{
	"dur":    func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"spread": spread,
	"f0":     func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"f1":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f2":     func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"join":   strings.Join,
}).Parse(pageHTML))

// WriteHTML writes the result as one self-contained HTML page: the table,
// the recommendation and a chart per setting (transactions applied over
// time, on the same axes for every setting; with --rate, the recorded
// pace beside it). No outside address is referenced.
func (res *Result) WriteHTML(w io.Writer) error {
	type chart struct {
		SettingResult
		Data    string
		Base    bool
		SVG     template.HTML
		Setting string
	}
	var longest time.Duration
	for _, r := range res.Settings {
		longest = max(longest, r.Elapsed)
	}
	var charts []chart
	for i, r := range res.Settings {
		data := "identical"
		switch {
		case r.Error != "":
			data = "failed"
		case i == 0:
			data = "reference"
		case !r.Identical:
			data = "differs"
		}
		charts = append(charts, chart{SettingResult: r, Data: data, Base: i == 0, SVG: res.svg(r, longest), Setting: r.Setting.String()})
	}
	var b bytes.Buffer
	if err := page.Execute(&b, map[string]any{"R": res, "Charts": charts}); err != nil {
		return fmt.Errorf("replay: render the report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// spread formats the fastest and slowest of a setting's runs, with their
// count ("3 runs 12.03–22.31 s").
func spread(runs []time.Duration) string {
	lo, hi := slices.Min(runs), slices.Max(runs)
	return fmt.Sprintf("%d runs %.2f–%.2f s", len(runs), lo.Seconds(), hi.Seconds())
}

// svg is a line chart of the transactions applied over time; x runs to
// the longest run, y to the stretch's transactions. With a rate, a grey
// line is the recorded pace (the transactions due by then).
func (res *Result) svg(r SettingResult, longest time.Duration) template.HTML {
	const w, h, l, bt = 520.0, 160.0, 44.0, 22.0
	total := float64(max(res.Stretch.Txns, 1))
	span := max(longest.Seconds(), 1e-3)
	x := func(d time.Duration) float64 { return l + (w-l-8)*d.Seconds()/span }
	y := func(n int) float64 { return h - bt - (h-bt-8)*float64(n)/total }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="transactions applied over time">`, w, h, w, h)
	fmt.Fprintf(&sb, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#d5dbe1"/>`, l, h-bt, w-8, h-bt)
	fmt.Fprintf(&sb, `<line x1="%.0f" y1="8" x2="%.0f" y2="%.0f" stroke="#d5dbe1"/>`, l, l, h-bt)
	fmt.Fprintf(&sb, `<text x="%.0f" y="14" font-size="10" text-anchor="end" fill="#5f6b76">%d</text>`, l-4, res.Stretch.Txns)
	fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" font-size="10" text-anchor="end" fill="#5f6b76">0</text>`, l-4, h-bt)
	fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" font-size="10" text-anchor="end" fill="#5f6b76">%s</text>`, w-8, h-6, longest.Round(time.Millisecond))
	fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" font-size="10" fill="#5f6b76">0 s</text>`, l, h-6)
	if res.Rate > 0 && len(res.Stretch.Times) > 0 {
		// The recorded pace: transaction i due at its offset ÷ rate.
		var pts []string
		t0 := res.Stretch.Times[0]
		step := max(len(res.Stretch.Times)/300, 1)
		for i := 0; i < len(res.Stretch.Times); i += step {
			d := time.Duration(float64(res.Stretch.Times[i]-t0) / res.Rate * float64(time.Second))
			if d > longest {
				break
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(d), y(i)))
		}
		fmt.Fprintf(&sb, `<polyline fill="none" stroke="#9aa5b1" stroke-dasharray="4 3" points="%s"/>`, strings.Join(pts, " "))
	}
	pts := []string{fmt.Sprintf("%.1f,%.1f", x(0), y(0))}
	for _, s := range r.Samples {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At), y(s.Txns)))
	}
	color := "#1f5fa8"
	if r.Error != "" || (!r.Identical && r.Threads > 0) {
		color = "#b3261e"
	}
	fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, color, strings.Join(pts, " "))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// thin keeps at most n samples, evenly spread, the last one kept.
func thin(s []Sample, n int) []Sample {
	if len(s) <= n || n < 2 {
		return s
	}
	out := make([]Sample, 0, n)
	step := float64(len(s)-1) / float64(n-1)
	for i := 0; i < n; i++ {
		out = append(out, s[int(float64(i)*step+0.5)])
	}
	return out
}
