package loadgen

// A run's outputs: JSON (summary and intervals), CSV (intervals), the live
// line printed after each interval and the human summary.

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteJSON writes r as one JSON object {"summary": ..., "intervals": [...]}.
func WriteJSON(w io.Writer, r *Result) error {
	out := struct {
		Summary   Summary    `json:"summary"`
		Intervals []Interval `json:"intervals"`
	}{r.Summary, r.Intervals}
	if out.Intervals == nil {
		out.Intervals = []Interval{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("bench: write JSON: %w", err)
	}
	return nil
}

// csvHeader is WriteCSV's first line.
var csvHeader = []string{"start", "seconds", "rate_target", "rate", "transactions", "errors",
	"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "busy", "backlog", "reconnects"}

// csvTime is the start column's format: RFC 3339 with milliseconds.
const csvTime = "2006-01-02T15:04:05.000Z07:00"

// WriteCSV writes the intervals as CSV: a header and a line per interval.
func WriteCSV(w io.Writer, intervals []Interval) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("bench: write CSV: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, iv := range intervals {
		rec := []string{iv.Start.Format(csvTime), f(roundDigits(iv.Seconds, 6)), f(roundDigits(iv.RateTarget, 3)), f(roundDigits(iv.Rate, 3)),
			i(iv.Completed), i(iv.Errors), ms(iv.P50), ms(iv.P90), ms(iv.P99), ms(iv.P999), ms(iv.Max),
			strconv.Itoa(iv.Busy), i(iv.Backlog), i(iv.Reconnects)}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("bench: write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("bench: write CSV: %w", err)
	}
	return nil
}

func roundDigits(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// FormatLine is the live line of an interval, like sysbench's, stamped
// with the interval's end as a time of day:
//
//	[ 15:04:05 ] rate 1000.0/1000 tps  p50 1.23 ms  p99 4.56 ms  p99.9 9.87 ms  max 12.3 ms  err 0  busy 3  backlog 0
//
// FormatLineAt stamps it with the time since the start instead.
func FormatLine(iv Interval) string {
	end := iv.Start.Add(time.Duration(iv.Seconds * float64(time.Second)))
	return formatLine(end.Format("15:04:05"), iv)
}

// FormatLineAt is FormatLine stamped with elapsed, the time from the run's
// start to the interval's end (the first interval starts at the run's
// start):
//
//	[ 12s ] rate 1000.0/1000 tps  p50 1.23 ms  p99 4.56 ms  p99.9 9.87 ms  max 12.3 ms  err 0  busy 3  backlog 0
func FormatLineAt(elapsed time.Duration, iv Interval) string {
	return formatLine(formatElapsed(elapsed), iv)
}

func formatElapsed(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

func formatLine(stamp string, iv Interval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ %s ] rate %.1f", stamp, iv.Rate)
	if iv.RateTarget > 0 {
		b.WriteString("/" + formatRate(iv.RateTarget))
	}
	fmt.Fprintf(&b, " tps  p50 %s ms  p99 %s ms  p99.9 %s ms  max %s ms  err %d  busy %d  backlog %d",
		formatMS(iv.P50), formatMS(iv.P99), formatMS(iv.P999), formatMS(iv.Max), iv.Errors, iv.Busy, iv.Backlog)
	if iv.Reconnects > 0 {
		fmt.Fprintf(&b, "  reconnects %d", iv.Reconnects)
	}
	return b.String()
}

// formatRate formats a rate without decimals when it is whole (or large).
func formatRate(v float64) string {
	if v == math.Trunc(v) || v >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// formatMS formats milliseconds with three significant digits (0.412,
// 1.23, 12.3, 123, 2013).
func formatMS(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// FormatSummary is the human summary of a run: totals, latency, errors by
// class, a table per operation and the event's block.
func FormatSummary(s Summary) string {
	var b strings.Builder
	head := s.Workload
	if s.Target != "" {
		head += " on " + s.Target
	}
	switch s.Mode {
	case "open":
		head += ", open loop at " + formatRate(s.RateTarget) + " tx/s"
		if s.Arrival != "" {
			head += " (" + string(s.Arrival) + " arrivals)"
		}
	case "closed":
		head += ", closed loop"
	}
	head += fmt.Sprintf(", %.1f s", s.Seconds)
	if s.Interrupted {
		head += " (interrupted: the summary so far)"
	}
	fmt.Fprintln(&b, head)
	fmt.Fprintf(&b, "  transactions  %d (%.1f/s)\n", s.Transactions, s.RateAchieved)
	errs := strconv.FormatInt(s.Errors, 10)
	if s.Errors > 0 && s.Transactions > 0 {
		errs += fmt.Sprintf(" (%.2f%%: %s)", 100*float64(s.Errors)/float64(s.Transactions), formatClasses(s.ErrorsBy))
	}
	fmt.Fprintf(&b, "  errors        %s\n", errs)
	from := "actual start"
	if s.Mode == "open" {
		from = "intended start"
	}
	fmt.Fprintf(&b, "  latency (ms, from %s)  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		from, formatMS(s.P50), formatMS(s.P90), formatMS(s.P99), formatMS(s.P999), formatMS(s.Max))
	fmt.Fprintf(&b, "  busy connections max %d", s.MaxBusy)
	if s.Mode == "open" {
		fmt.Fprintf(&b, ", backlog max %d", s.MaxBacklog)
	}
	fmt.Fprintf(&b, ", reconnects %d\n", s.Reconnects)

	if len(s.Ops) > 0 {
		rows := [][]string{{"op", "count", "errors", "p50", "p90", "p99", "p99.9", "max (ms)"}}
		for _, o := range s.Ops {
			rows = append(rows, opRow(o.Op, o))
		}
		b.WriteString("\n")
		writeTable(&b, rows)
	}

	if e := s.Event; e != nil {
		kind := e.Kind
		if kind == "" {
			kind = "event"
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "%s at %s", kind, e.At.Format("15:04:05.000"))
		if e.OldPrimary != "" || e.NewPrimary != "" {
			fmt.Fprintf(&b, ": primary %s -> %s", orDash(e.OldPrimary), orDash(e.NewPrimary))
		}
		b.WriteString("\n")
		switch {
		case e.FirstFailed.IsZero():
			b.WriteString("  no write failed\n")
		case e.FirstOK.IsZero():
			fmt.Fprintf(&b, "  writes unavailable from %s after the event to the end of the run (%s ms): no write succeeded after\n",
				sinceEvent(e.At, e.FirstFailed), formatMS(e.UnavailableMS))
		default:
			fmt.Fprintf(&b, "  writes unavailable %s ms: first failed write %s after the event, first successful write %s\n",
				formatMS(e.UnavailableMS), sinceEvent(e.At, e.FirstFailed), sinceEvent(e.At, e.FirstOK))
		}
		fmt.Fprintf(&b, "  failed transactions %d; acknowledged writes %d, lost %d\n", e.Failed, e.AckedWrites, e.LostWrites)
		if s.WriteStallMS > 0 {
			fmt.Fprintf(&b, "  longest write stall %s ms (the longest time without an acknowledged write)\n", formatMS(s.WriteStallMS))
		}
		rows := [][]string{{"phase", "count", "errors", "p50", "p90", "p99", "p99.9", "max (ms)"}}
		for _, p := range []struct {
			name string
			o    OpSummary
		}{{"before", e.Before}, {"during", e.During}, {"after", e.After}} {
			rows = append(rows, opRow(p.name, p.o))
		}
		writeTable(&b, rows)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sinceEvent formats t relative to the event: "+1.234 s".
func sinceEvent(at, t time.Time) string {
	return fmt.Sprintf("%+.3f s", t.Sub(at).Seconds())
}

func opRow(name string, o OpSummary) []string {
	return []string{name, strconv.FormatInt(o.Count, 10), strconv.FormatInt(o.Errors, 10),
		formatMS(o.P50), formatMS(o.P90), formatMS(o.P99), formatMS(o.P999), formatMS(o.Max)}
}

// formatClasses lists error classes, most frequent first.
func formatClasses(by map[string]int64) string {
	type kv struct {
		k string
		n int64
	}
	var l []kv
	for k, n := range by {
		l = append(l, kv{k, n})
	}
	slices.SortFunc(l, func(a, b kv) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.k + " " + strconv.FormatInt(e.n, 10)
	}
	return strings.Join(parts, ", ")
}

// writeTable writes rows indented by two spaces, the first column left
// aligned, the others right aligned.
func writeTable(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		b.WriteString(" ")
		for i, c := range r {
			b.WriteString(" ")
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", widths[i]-len(c)))
			} else {
				b.WriteString(strings.Repeat(" ", widths[i]-len(c)) + c)
			}
		}
		b.WriteString("\n")
	}
}
