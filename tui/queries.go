package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// DefaultQueriesEvery is how often the q view reads the statement digests
// (Direct: the digest table; Server: GET /api/queries): reading the whole
// table costs the server more than the status counters.
const DefaultQueriesEvery = 5 * time.Second

// DefaultQueryRows is the number of digests kept when the screen's height is
// unknown (line output).
const DefaultQueryRows = 20

// ViewSetter is implemented by a Source that reads more for some views: the
// statement digests of the q view. Run calls SetView before the first poll,
// whenever the view changes and when the terminal is resized; rows is the
// number of table rows the screen has room for (0: unknown). It may be
// called while a Poll runs.
type ViewSetter interface {
	SetView(v View, rows int)
}

// Queries is what the q view shows: the statements that ran on the
// instances over a recent span, by digest, the heaviest first.
type Queries struct {
	// Origin says where the digests come from and how often they are read,
	// e.g. "performance_schema, read every 5s".
	Origin string
	// At is the time of the read the rows come from; Span what their
	// counters cover (the time between the last two reads for Direct, the
	// report's span for Server). Span is zero before a second read.
	At   time.Time
	Span time.Duration
	// Sources describe each instance's digest table (capacity, rows, lost
	// digests, full).
	Sources []dbpilot.QuerySource
	// Rows are sorted by load (total latency per second), largest first.
	Rows []QueryRow
	// Notes are per-instance problems: performance_schema off, a failed
	// read, a serve without query statistics.
	Notes []string
}

// QueryRow is one digest's activity on one instance over Span.
type QueryRow struct {
	dbpilot.QueryStat
	Span time.Duration
}

// perSec returns v per second over span (unknown for an empty span).
func perSec(v float64, span time.Duration) Num {
	if span <= 0 {
		return Num{}
	}
	return N(v / span.Seconds())
}

// CallsPerSec is the number of statements run per second.
func (r QueryRow) CallsPerSec() Num { return perSec(float64(r.Count), r.Span) }

// LoadMS is the latency summed over the statements per second of the span
// (ms/s): 1000 is one connection busy all the time.
func (r QueryRow) LoadMS() Num { return perSec(r.TotalMS, r.Span) }

// RowsExaminedPerSec is the rows examined per second.
func (r QueryRow) RowsExaminedPerSec() Num { return perSec(float64(r.RowsExamined), r.Span) }

// sortQueryRows orders rows by load, then calls, then instance and digest.
func sortQueryRows(rows []QueryRow) {
	slices.SortStableFunc(rows, func(a, b QueryRow) int {
		if c := cmp.Compare(b.LoadMS().V, a.LoadMS().V); c != 0 {
			return c
		}
		if c := cmp.Compare(b.CallsPerSec().V, a.CallsPerSec().V); c != 0 {
			return c
		}
		if c := strings.Compare(a.Instance, b.Instance); c != 0 {
			return c
		}
		return strings.Compare(a.Digest, b.Digest)
	})
}

// psToMS converts performance_schema picoseconds to milliseconds.
func psToMS(ps uint64) float64 { return float64(ps) / 1e9 }

// queryStat converts a digest row (deltas) of instance.
func queryStat(instance string, g mysql.Digest) dbpilot.QueryStat {
	s := dbpilot.QueryStat{
		Instance: instance, Schema: g.Schema, Digest: g.Digest, DigestText: g.Text, Example: g.Sample,
		Count: g.Count, TotalMS: psToMS(g.TotalWait), MaxMS: psToMS(g.MaxWait),
		RowsExamined: g.RowsExamined, RowsSent: g.RowsSent, Errors: g.Errors, Warnings: g.Warnings,
		NoIndexUsed: g.NoIndexUsed, TmpDiskTables: g.TmpDiskTables, SortMergePasses: g.SortMergePasses,
		FirstSeen: g.FirstSeen, LastSeen: g.LastSeen,
	}
	if g.Count > 0 {
		s.AvgMS = s.TotalMS / float64(g.Count)
	}
	return s
}

// digestState is what the q view keeps of one server between the reads of
// its digest table (Direct).
type digestState struct {
	prev   *mysql.DigestSnapshot // the last snapshot read
	readAt time.Time             // the last read attempt
	at     time.Time             // the time of the snapshot the rows come from
	span   time.Duration         // between the last two snapshots
	rows   []QueryRow            // what ran between them
	source *dbpilot.QuerySource  // nil before a first read worked
	note   string                // why there are no rows
}

// due reports whether the digest table should be read again.
func (s *digestState) due(now time.Time, every time.Duration) bool {
	return s.readAt.IsZero() || now.Sub(s.readAt) >= every
}

// update takes in one read of the digest table of instance: a snapshot, or
// the error reading it. limit caps the rows kept (0: all).
func (s *digestState) update(instance string, snap *mysql.DigestSnapshot, err error, now time.Time, limit int) {
	s.readAt = now
	if err != nil {
		*s = digestState{readAt: now, note: fmt.Sprintf("%s: read digests: %s", instance, oneLine(err.Error()))}
		return
	}
	if err := snap.DigestsUsable(); err != nil {
		*s = digestState{readAt: now, note: oneLine(err.Error())}
		return
	}
	src := &dbpilot.QuerySource{Instance: instance, Source: snap.Source, Detail: snap.SourceDetail, Capacity: snap.Capacity,
		Digests: len(snap.Digests), LostDigests: snap.Lost, At: snap.At}
	src.Full = snap.Capacity > 0 && int64(len(snap.Digests)) >= snap.Capacity
	prev := s.prev
	s.prev, s.source, s.note = snap, src, ""
	if prev == nil {
		s.rows, s.span, s.at = nil, 0, snap.At
		return
	}
	if snap.Lost >= prev.Lost {
		src.LostInSpan = snap.Lost - prev.Lost
	} else {
		src.LostInSpan = snap.Lost // the server restarted
	}
	s.span, s.at = snap.At.Sub(prev.At), snap.At
	s.rows = s.rows[:0]
	for _, g := range mysql.DigestDeltas(prev, snap) {
		s.rows = append(s.rows, QueryRow{QueryStat: queryStat(instance, g), Span: s.span})
	}
	sortQueryRows(s.rows)
	if limit > 0 && len(s.rows) > limit {
		s.rows = s.rows[:limit]
	}
}

// mergeDigests gathers the states of several servers into the q view's
// data, keeping the limit heaviest rows (0: all).
func mergeDigests(origin string, states []*digestState, limit int) *Queries {
	q := &Queries{Origin: origin}
	for _, s := range states {
		if s == nil {
			continue
		}
		if s.note != "" {
			q.Notes = append(q.Notes, s.note)
		}
		if s.source != nil {
			q.Sources = append(q.Sources, *s.source)
		}
		q.Rows = append(q.Rows, s.rows...)
		if s.at.After(q.At) {
			q.At = s.at
		}
		if s.readAt.After(q.At) && s.note != "" {
			q.At = s.readAt
		}
		q.Span = max(q.Span, s.span)
	}
	sortQueryRows(q.Rows)
	if limit > 0 && len(q.Rows) > limit {
		q.Rows = q.Rows[:limit]
	}
	return q
}

// spanText formats a span: 5.0s, 1m0s.
func spanText(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// queriesView draws the q view: a line on the digests' origin and span,
// one per instance's digest table, instance errors and notes, then the
// digests, their text cut to width.
func queriesView(f *Frame, width int) []string {
	q := f.Queries
	var out []string
	for _, r := range f.Rows {
		if r.Err != "" {
			out = append(out, r.Instance+": error: "+oneLine(r.Err))
		}
	}
	if q == nil {
		return append(out, "waiting for the first digest read...")
	}
	head := "TOP DIGESTS"
	if q.Span > 0 {
		head += fmt.Sprintf(" by load over the last %s", spanText(q.Span))
	}
	if q.Origin != "" {
		head += "  (" + q.Origin + ")"
	}
	var srcs []string
	for _, s := range q.Sources {
		srcs = append(srcs, "  "+sourceLine(s))
	}
	out = append(append([]string{head}, srcs...), out...)
	for _, n := range q.Notes {
		out = append(out, "note: "+n)
	}
	out = append(out, "")
	switch {
	case q.Span <= 0 && len(q.Sources) > 0:
		return append(out, "waiting for a second digest read...")
	case q.Span <= 0:
		return out[:len(out)-1]
	case len(q.Rows) == 0:
		return append(out, fmt.Sprintf("no statements in the last %s", spanText(q.Span)))
	}
	instances := map[string]bool{}
	for _, s := range q.Sources {
		instances[s.Instance] = true
	}
	for _, r := range q.Rows {
		instances[r.Instance] = true
	}
	several := len(instances) > 1
	var cols []column
	if several {
		cols = append(cols, column{"INSTANCE", false})
	}
	cols = append(cols, []column{{"CALLS/s", true}, {"LOAD_ms/s", true}, {"AVG_ms", true}, {"MAX_ms", true},
		{"EXAM/s", true}, {"ERR", true}, {"NOIDX", true}, {"SCHEMA", false}, {"DIGEST_TEXT", false}}...)
	rows := make([]tableRow, 0, len(q.Rows))
	for _, r := range q.Rows {
		var cells []string
		if several {
			cells = append(cells, r.Instance)
		}
		cells = append(cells, rate(r.CallsPerSec()), ms(r.LoadMS()), ms(N(r.AvgMS)), ms(N(r.MaxMS)),
			rate(r.RowsExaminedPerSec()), strconv.FormatUint(r.Errors, 10), strconv.FormatUint(r.NoIndexUsed, 10),
			dash(r.Schema), digestText(r.QueryStat))
		rows = append(rows, tableRow{cells: cells})
	}
	lines := table(cols, rows)
	if width > 1 {
		for i, l := range lines {
			if utf8.RuneCountInString(l) > width {
				lines[i] = cut(l, width-1) + "…"
			}
		}
	}
	return append(out, lines...)
}

// sourceLine describes one instance's digest table.
func sourceLine(s dbpilot.QuerySource) string {
	var b strings.Builder
	b.WriteString(s.Instance)
	if s.Source == dbpilot.QuerySourceNone || s.Source == "" && s.Error != "" {
		return b.String() + "  no statistics: " + dash(oneLine(s.Error))
	}
	if s.Source != "" && s.Source != dbpilot.QuerySourcePerformanceSchema {
		b.WriteString(" " + s.Source)
		if s.Detail != "" {
			b.WriteString(" " + s.Detail)
		}
	}
	if s.Capacity != 0 {
		capacity := strconv.FormatInt(s.Capacity, 10)
		if s.Capacity < 0 {
			capacity = "auto"
		}
		fmt.Fprintf(&b, "  %d of %s digests", s.Digests, capacity)
	}
	fmt.Fprintf(&b, "  lost %d", s.LostDigests)
	if s.LostInSpan > 0 {
		fmt.Fprintf(&b, " (+%d)", s.LostInSpan)
	}
	if s.Full {
		b.WriteString("  TABLE FULL")
	}
	if s.Error != "" {
		b.WriteString("  error: " + oneLine(s.Error))
	}
	return b.String()
}

// digestText is a digest's text on one line; the row of statements that
// found the table full has none.
func digestText(s dbpilot.QueryStat) string {
	t := strings.Join(strings.Fields(s.DigestText), " ")
	if t == "" && s.Digest == "" {
		return "(statements not counted by digest: table full)"
	}
	return dash(t)
}

// ms formats milliseconds: 0.12, 3.4, 12, 4512, 123k.
func ms(n Num) string {
	if !n.Valid {
		return "-"
	}
	if a := n.V; a < 1 && a > -1 && a != 0 {
		return strconv.FormatFloat(n.V, 'f', 2, 64)
	}
	return rate(n)
}

// QueryLines formats the q view's digests for output that is not a
// terminal: one line per digest (the time of the read, then key=value
// pairs), one per note.
func QueryLines(q *Queries) []string {
	if q == nil {
		return nil
	}
	ts := q.At.Format("2006-01-02T15:04:05.000Z07:00")
	var out []string
	for _, s := range q.Sources {
		l := fmt.Sprintf("%s instance=%s digests=%d capacity=%d lost=%d lost_in_span=%d full=%v",
			ts, s.Instance, s.Digests, s.Capacity, s.LostDigests, s.LostInSpan, s.Full)
		out = append(out, l)
	}
	for _, n := range q.Notes {
		out = append(out, ts+" note="+strconv.Quote(n))
	}
	if q.Span <= 0 {
		return out
	}
	for _, r := range q.Rows {
		var b strings.Builder
		b.WriteString(ts)
		kv := func(k, v string) { b.WriteString(" " + k + "=" + v) }
		kv("instance", r.Instance)
		kv("span_s", strconv.FormatFloat(r.Span.Seconds(), 'f', 1, 64))
		kv("schema", dash(r.Schema))
		kv("digest", dash(r.Digest))
		kv("count", strconv.FormatUint(r.Count, 10))
		kv("calls_per_s", fixed(r.CallsPerSec(), 2))
		kv("load_ms_per_s", fixed(r.LoadMS(), 3))
		kv("avg_ms", strconv.FormatFloat(r.AvgMS, 'f', 3, 64))
		kv("max_ms", strconv.FormatFloat(r.MaxMS, 'f', 3, 64))
		kv("rows_examined_per_s", fixed(r.RowsExaminedPerSec(), 1))
		kv("errors", strconv.FormatUint(r.Errors, 10))
		kv("no_index_used", strconv.FormatUint(r.NoIndexUsed, 10))
		kv("text", strconv.Quote(digestText(r.QueryStat)))
		out = append(out, b.String())
	}
	return out
}
