// Package report renders the incident report of a recovery: one
// self-contained HTML page (inline CSS, inline SVG charts and topology
// drawings, no script, no address of anything outside the page) that
// prints as it shows.
//
// The daemon gathers what serve knows of a recovery into an Input (the
// recovery, its audit events and the cluster's around it, the alerts, the
// metrics of the window, the topology before and after, what a `dbpilot
// bench` run pushed); Build derives what the page shows (the first
// symptom, each step's duration, the decision's candidates, the checks
// for lost and errant transactions, the client-seen impact); Render
// writes the page. Build and Render are pure: their tests run on recorded
// inputs (testdata/<case>/input.json → report.html).
//
//	report.go    Input, Build and what the page shows (Report)
//	checks.go    lost and errant transactions; the client-seen impact
//	plan.go      the decision: the plan's text read back into candidates
//	svg.go       charts and topology drawings as inline SVG
//	render.go    the page (html/template, page.html and page.css embedded)
package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Input is what serve knows of one recovery, as the daemon gathers it.
type Input struct {
	Recovery dbpilot.Recovery `json:"recovery"`
	// Generated is when the report was made.
	Generated time.Time `json:"generated"`
	// From and To bound the charts and the cluster's events: 5 minutes
	// before the detection (the start, for planned work) to 5 minutes
	// after the end, or to Generated when that is earlier.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// RecoveryEvents are the recovery's audit events, oldest first.
	RecoveryEvents []dbpilot.AuditEvent `json:"recovery_events"`
	// ClusterEvents are the cluster's other audit events from From to To,
	// oldest first.
	ClusterEvents []dbpilot.AuditEvent `json:"cluster_events,omitempty"`
	// OldPrimaryEvents are the audit events about the old primary since the
	// recovery started, whenever they happened (fencing findings with its
	// errant GTIDs, a reclone, its rejoin), oldest first.
	OldPrimaryEvents []dbpilot.AuditEvent `json:"old_primary_events,omitempty"`
	// Alerts are the cluster's alerts active at some time from From to To.
	Alerts []*dbpilot.Alert `json:"alerts,omitempty"`
	// Fenced is the old primary as serve keeps it out of the cluster now
	// (nil: not fenced, or not known).
	Fenced *dbpilot.FencedInstance `json:"fenced,omitempty"`
	// OldPrimaryPosition is the old primary's GTID position as last read
	// before the detection (nil: none was read).
	OldPrimaryPosition *Position `json:"old_primary_position,omitempty"`
	// Charts are the servers' metrics from From to To.
	Charts []ChartInput `json:"charts,omitempty"`
	// Before and After are the cluster just before the detection and just
	// after the end (nil: not known; TopologyNote says why).
	Before       *dbpilot.ClusterAt `json:"before,omitempty"`
	After        *dbpilot.ClusterAt `json:"after,omitempty"`
	TopologyNote string             `json:"topology_note,omitempty"`
	// Bench is what `dbpilot bench --server` runs pushed around the
	// recovery (nil: no bench sample in the window).
	Bench *BenchInput `json:"bench,omitempty"`
	// Notes say what could not be gathered, one line each.
	Notes []string `json:"notes,omitempty"`
}

// Position is a server's GTID position as the metrics store has it.
type Position struct {
	// At is the time of the newest sample read.
	At time.Time `json:"at"`
	// Domains is MariaDB's gtid_current_pos: the sequence number of each
	// domain.
	Domains map[uint32]uint64 `json:"domains,omitempty"`
	// Executed is MySQL's count of transactions in gtid_executed (0 on
	// MariaDB).
	Executed float64 `json:"executed,omitempty"`
}

// ChartInput is one chart's data: series of a metric query.
type ChartInput struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Unit of the values: "/s", "s" (seconds), "ms" or "" (a count).
	Unit string `json:"unit"`
	// Legend is the label that names a series ("instance"); empty: all
	// labels.
	Legend string           `json:"legend,omitempty"`
	Query  string           `json:"query"`
	Series []dbpilot.Series `json:"series"`
	// Error is why the query failed ("" when it did not).
	Error string `json:"error,omitempty"`
}

// BenchInput is what bench runs pushed to serve's metrics (docs/bench.md)
// around the recovery.
type BenchInput struct {
	// From and To bound the impact: 30 s before the detection to 30 s
	// after writes opened (the end when they did not).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Workloads are the bench runs' workload labels.
	Workloads []string `json:"workloads"`
	// PerSecond are, at each second from From to To, the rate
	// (dbpilot_bench_rate summed), errors per second, and latency
	// quantiles (dbpilot_bench_latency_seconds, max by quantile; quantile
	// label "0.5", "0.99", "1").
	Rate            []dbpilot.Series `json:"rate"`
	ErrorsPerSecond []dbpilot.Series `json:"errors_per_second"`
	Latency         []dbpilot.Series `json:"latency"`
	// LongestStall is the largest dbpilot_bench_write_stall_seconds from
	// From to To (seconds); HasStall is false when there is none (no write
	// acknowledged or attempted).
	LongestStall float64 `json:"longest_stall"`
	HasStall     bool    `json:"has_stall"`
	// ErrorsBase is each class's dbpilot_bench_errors_total at From (its
	// last sample before, within the lookback), ErrorsRaw its samples from
	// From to To.
	ErrorsBase []dbpilot.Series `json:"errors_base,omitempty"`
	ErrorsRaw  []dbpilot.Series `json:"errors_raw,omitempty"`
	// Ledger is the acknowledged-write ledger's check at the end of a run
	// (the first after From).
	Ledger LedgerInput `json:"ledger"`
}

// LedgerInput is the bench ledger's samples: Acked, Found, Lost and Failed
// are set (Has*) when the samples exist.
type LedgerInput struct {
	Acked    float64 `json:"acked"`
	Found    float64 `json:"found"`
	Lost     float64 `json:"lost"`
	HasAcked bool    `json:"has_acked"`
	HasFound bool    `json:"has_found"`
	HasLost  bool    `json:"has_lost"`
	// Failed: the run could not check (dbpilot_bench_ledger_check_failed).
	Failed bool `json:"failed,omitempty"`
	// At is when the check was made.
	At time.Time `json:"at,omitzero"`
}

// Report is what the page shows.
type Report struct {
	Title     string
	Generated time.Time
	Recovery  dbpilot.Recovery
	// Outcome: "success", "failed: …", "running".
	Outcome string
	// Origin is the time offsets count from: the first symptom.
	Origin time.Time
	// Times are the key times: first symptom, detected, started, writes
	// open, ended.
	Times []KeyTime
	// Unavailable is the time from the detection to writes open (what
	// clients saw of the failure); zero when either is unknown.
	Unavailable time.Duration
	Symptom     Symptom
	Timeline    []Row
	Decision    Decision
	Topology    []Topology
	// TopologyNote says why a drawing is missing.
	TopologyNote string
	Charts       []Chart
	From, To     time.Time
	Alerts       []AlertRow
	Checks       []Check
	Impact       *Impact
	Notes        []string
}

// KeyTime is one moment of the recovery.
type KeyTime struct {
	ID    string // first-symptom, detected, started, writes-open, ended
	Label string
	Time  time.Time
	// Offset from the first symptom.
	Offset time.Duration
}

// Symptom is the first sign of the failure.
type Symptom struct {
	Time time.Time
	What string
}

// Row kinds of the timeline.
const (
	RowStep    = "step"    // an audit event of the recovery
	RowContext = "context" // another audit event of the cluster
	RowAlert   = "alert"   // an alert went pending, fired or resolved
	RowMarker  = "marker"  // a key time (detected, writes open)
)

// Row is one line of the timeline.
type Row struct {
	Kind     string
	Time     time.Time
	Offset   time.Duration
	AuditID  int64 // RowStep and RowContext
	Event    string
	Instance string
	Message  string
	Detail   []KV
	// Duration of a step, and where it comes from: DurationRecorded (the
	// event's detail: elapsed_ms, took_ms, ...) or DurationToNext (the
	// time to the recovery's next event).
	Duration       time.Duration
	DurationSource string
}

// Duration sources.
const (
	DurationRecorded = "recorded"
	DurationToNext   = "to next step"
)

// KV is one detail of an audit event.
type KV struct{ Key, Value string }

// durationKeys are the details that carry a step's own duration, in
// milliseconds, most specific first.
var durationKeys = []string{"elapsed_ms", "took_ms", "write_unavailable_ms", "detection_ms", "duration_ms"}

// AlertRow is one alert active in the window.
type AlertRow struct {
	Rule, Severity, State, Instance, Summary, Suppressed string
	ActiveAt, FiredAt, ResolvedAt                        time.Time
	// OldPrimary: the alert is the old primary's.
	OldPrimary bool
}

// Build derives the report from what serve gathered.
func Build(in *Input) *Report {
	rec := in.Recovery
	r := &Report{
		Title:     fmt.Sprintf("Incident report: %s #%d of cluster %s", rec.Kind, rec.ID, rec.Cluster),
		Generated: in.Generated, Recovery: rec, From: in.From, To: in.To,
		Notes: slices.Clone(in.Notes), TopologyNote: in.TopologyNote,
	}
	switch {
	case rec.Ended.IsZero():
		r.Outcome = "running"
	case rec.Success:
		r.Outcome = "success"
	default:
		r.Outcome = "failed: " + rec.Error
	}
	r.Symptom = firstSymptom(in)
	r.Origin = r.Symptom.Time
	if !rec.DetectedAt.IsZero() && !rec.WritesOpen.IsZero() {
		r.Unavailable = rec.WritesOpen.Sub(rec.DetectedAt)
	}
	for _, k := range []KeyTime{
		{ID: "first-symptom", Label: "first symptom", Time: r.Symptom.Time},
		{ID: "detected", Label: "detected (first failed probe of the primary)", Time: rec.DetectedAt},
		{ID: "started", Label: "recovery started", Time: rec.Started},
		{ID: "writes-open", Label: "writes open on the new primary", Time: rec.WritesOpen},
		{ID: "ended", Label: "recovery ended", Time: rec.Ended},
	} {
		if !k.Time.IsZero() {
			k.Offset = k.Time.Sub(r.Origin)
			r.Times = append(r.Times, k)
		}
	}
	r.Timeline = timeline(in, r.Origin)
	r.Decision = decision(rec, in.RecoveryEvents)
	r.Topology = topologies(in)
	if len(r.Topology) < 2 && r.TopologyNote == "" {
		r.TopologyNote = "the topology history has no record of the cluster at that time"
	}
	marks := chartMarks(rec)
	for _, c := range in.Charts {
		r.Charts = append(r.Charts, newChart(c, in.From, in.To, r.axisOrigin(), marks))
	}
	r.Alerts = alertRows(in)
	r.Checks = checks(in)
	if in.Bench != nil {
		r.Impact = impact(in.Bench, r.axisOrigin(), marks)
	}
	return r
}

// axisOrigin is the time the charts' axes count from: the detection (the
// start of planned work).
func (r *Report) axisOrigin() time.Time {
	if !r.Recovery.DetectedAt.IsZero() {
		return r.Recovery.DetectedAt
	}
	return r.Recovery.Started
}

// firstSymptom is the earliest of the detection (the primary's first
// failed probe), the old primary's alerts that went pending before it and
// were still active at it, and the cluster's audit events about the old
// primary in the minutes before it (a forced failover, a finding); for
// planned work without a detection, the start.
func firstSymptom(in *Input) Symptom {
	rec := in.Recovery
	s := Symptom{Time: rec.Started, What: "the " + rec.Kind + " was requested"}
	if rec.DetectedAt.IsZero() {
		return s
	}
	s = Symptom{Time: rec.DetectedAt, What: fmt.Sprintf("serve's first failed probe of the primary %s", rec.OldPrimary)}
	old := rec.OldPrimary.String()
	for _, a := range in.Alerts {
		if a.Labels["instance"] != old || a.ActiveAt.IsZero() || a.ActiveAt.Before(in.From) || !a.ActiveAt.Before(s.Time) {
			continue
		}
		if !a.ResolvedAt.IsZero() && a.ResolvedAt.Before(rec.DetectedAt) {
			continue // over before the failure
		}
		s = Symptom{Time: a.ActiveAt, What: fmt.Sprintf("alert %s went pending on %s", a.Rule, old)}
	}
	for _, e := range in.ClusterEvents {
		if e.Instance.Equal(rec.OldPrimary) && !e.Time.Before(in.From) && e.Time.Before(s.Time) {
			s = Symptom{Time: e.Time, What: fmt.Sprintf("%s: %s", e.Event, e.Message)}
			break // the events are oldest first
		}
	}
	return s
}

// timeline merges the recovery's steps, the cluster's other events, the
// alerts' changes and the key times, oldest first.
func timeline(in *Input, origin time.Time) []Row {
	rec := in.Recovery
	var rows []Row
	steps := in.RecoveryEvents
	for i, e := range steps {
		row := eventRow(RowStep, e)
		if d, ok := recordedDuration(e); ok {
			row.Duration, row.DurationSource = d, DurationRecorded
		} else if i+1 < len(steps) {
			row.Duration, row.DurationSource = steps[i+1].Time.Sub(e.Time), DurationToNext
		}
		rows = append(rows, row)
	}
	for _, e := range in.ClusterEvents {
		if e.RecoveryID == rec.ID && rec.ID != 0 {
			continue
		}
		rows = append(rows, eventRow(RowContext, e))
	}
	inWindow := func(t time.Time) bool { return !t.IsZero() && !t.Before(in.From) && !t.After(in.To) }
	for _, a := range in.Alerts {
		inst := a.Labels["instance"]
		for _, ch := range []struct {
			t    time.Time
			what string
		}{{a.ActiveAt, "pending"}, {a.FiredAt, "firing"}, {a.ResolvedAt, "resolved"}} {
			if !inWindow(ch.t) {
				continue
			}
			msg := fmt.Sprintf("alert %s %s", a.Rule, ch.what)
			if ch.what != "resolved" && a.Summary != "" {
				msg += ": " + a.Summary
			}
			rows = append(rows, Row{Kind: RowAlert, Time: ch.t, Event: "alert " + ch.what, Instance: inst, Message: msg,
				Detail: []KV{{"severity", a.Severity}}})
		}
	}
	for _, m := range []struct {
		t        time.Time
		what     string
		instance dbpilot.InstanceKey
	}{
		{rec.DetectedAt, "detected: the primary's first failed probe", rec.OldPrimary},
		{rec.WritesOpen, "writes open: the new primary is writable", rec.NewPrimary},
	} {
		if !m.t.IsZero() {
			rows = append(rows, Row{Kind: RowMarker, Time: m.t, Event: "—", Instance: keyString(m.instance), Message: m.what})
		}
	}
	// Stable: at one time, the recovery's steps keep their order and a
	// marker comes after the step that made it.
	slices.SortStableFunc(rows, func(a, b Row) int { return a.Time.Compare(b.Time) })
	for i := range rows {
		rows[i].Offset = rows[i].Time.Sub(origin)
	}
	return rows
}

func eventRow(kind string, e dbpilot.AuditEvent) Row {
	row := Row{Kind: kind, Time: e.Time, AuditID: e.ID, Event: e.Event, Instance: keyString(e.Instance), Message: e.Message}
	for _, k := range slices.Sorted(maps.Keys(e.Detail)) {
		switch k {
		case "plan", "source", "by":
			// The plan has its own section; who asked is in the
			// message of an operation.
			if k != "plan" && e.Detail[k] != "" && e.Detail[k] != dbpilot.SourceAPI {
				row.Detail = append(row.Detail, KV{k, e.Detail[k]})
			}
			continue
		}
		row.Detail = append(row.Detail, KV{k, e.Detail[k]})
	}
	return row
}

// recordedDuration is the duration an audit event carries in its detail.
func recordedDuration(e dbpilot.AuditEvent) (time.Duration, bool) {
	for _, k := range durationKeys {
		if v, ok := e.Detail[k]; ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
				return time.Duration(ms) * time.Millisecond, true
			}
		}
	}
	return 0, false
}

func keyString(k dbpilot.InstanceKey) string {
	if k.IsZero() {
		return ""
	}
	return k.String()
}

func alertRows(in *Input) []AlertRow {
	old := in.Recovery.OldPrimary.String()
	var out []AlertRow
	for _, a := range in.Alerts {
		out = append(out, AlertRow{Rule: a.Rule, Severity: a.Severity, State: a.State, Instance: a.Labels["instance"],
			Summary: a.Summary, Suppressed: a.Suppressed, ActiveAt: a.ActiveAt, FiredAt: a.FiredAt, ResolvedAt: a.ResolvedAt,
			OldPrimary: a.Labels["instance"] == old})
	}
	slices.SortStableFunc(out, func(a, b AlertRow) int {
		return cmp.Or(a.ActiveAt.Compare(b.ActiveAt), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Instance, b.Instance))
	})
	return out
}

// chartMarks are the key times drawn on every chart: the detection and
// writes open (the start and end of planned work without them).
func chartMarks(rec dbpilot.Recovery) []mark {
	var ms []mark
	if !rec.DetectedAt.IsZero() {
		ms = append(ms, mark{t: rec.DetectedAt, label: "detected", class: "mark-detected"})
	} else {
		ms = append(ms, mark{t: rec.Started, label: "started", class: "mark-detected"})
	}
	switch {
	case !rec.WritesOpen.IsZero():
		ms = append(ms, mark{t: rec.WritesOpen, label: "writes open", class: "mark-open"})
	case !rec.Ended.IsZero():
		ms = append(ms, mark{t: rec.Ended, label: "ended", class: "mark-open"})
	}
	return ms
}
