package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/report"
)

var _ dbpilot.RecoveryReporter = (*Daemon)(nil)

// Report windows: the charts and the cluster's events from reportAround
// before the detection to reportAround after the end; the client-seen
// impact from benchAround before the detection to benchAround after writes
// open; a bench run's ledger check within ledgerWithin after that.
const (
	reportAround = 5 * time.Minute
	benchAround  = 30 * time.Second
	ledgerWithin = time.Hour
	// reportAuditLimit bounds each audit read of a report.
	reportAuditLimit = 10000
	// reportChartPoints is the most points a chart's series gets.
	reportChartPoints = 450
)

// RecoveryReport implements dbpilot.RecoveryReporter: what serve knows of
// recovery id, gathered (reportInput) and rendered by package report, or
// the data gathered as JSON.
func (d *Daemon) RecoveryReport(ctx context.Context, id int64, format string) ([]byte, error) {
	if format != dbpilot.ReportHTML && format != dbpilot.ReportJSON {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "report format %q: want html or json", format)
	}
	in, err := d.reportInput(ctx, id)
	if err != nil {
		return nil, err
	}
	if format == dbpilot.ReportJSON {
		b, err := json.MarshalIndent(in, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("report of recovery %d: %w", id, err)
		}
		return append(b, '\n'), nil
	}
	return report.HTML(in)
}

// reportInput gathers what the report of recovery id shows: the recovery,
// its audit events and the cluster's around it, the alerts, the metrics of
// the window, the topology before and after, and what bench runs pushed.
// What cannot be read is said in the report's notes; only a recovery that
// cannot be read fails it.
func (d *Daemon) reportInput(ctx context.Context, id int64) (*report.Input, error) {
	if d.store == nil {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no recovery %d: this dbpilot keeps no state", id)
	}
	recs, err := d.store.Recoveries(ctx, dbpilot.RecoveryFilter{ID: id, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("report of recovery %d: %w", id, err)
	}
	if len(recs) == 0 {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no recovery %d", id)
	}
	rec := *recs[0]
	now := d.now()
	anchor := rec.DetectedAt
	if anchor.IsZero() {
		anchor = rec.Started
	}
	end := rec.Ended
	if end.IsZero() {
		end = now
	}
	in := &report.Input{Recovery: rec, Generated: now, From: anchor.Add(-reportAround), To: minTime(end.Add(reportAround), now)}
	note := func(format string, args ...any) { in.Notes = append(in.Notes, fmt.Sprintf(format, args...)) }

	// The recovery's events, and the cluster's since the window opened.
	in.RecoveryEvents, err = d.store.AuditEvents(ctx, dbpilot.AuditFilter{RecoveryID: id, Limit: reportAuditLimit})
	if err != nil {
		return nil, fmt.Errorf("report of recovery %d: %w", id, err)
	}
	evs, err := d.store.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: rec.Cluster, Since: in.From, Limit: reportAuditLimit})
	if err != nil {
		note("the cluster's audit events: %v", err)
	}
	if len(evs) == reportAuditLimit && evs[0].Time.After(in.From) {
		note("the cluster's audit events before %s: more than %d events since, only the latest were read", evs[0].Time.UTC().Format(time.RFC3339), reportAuditLimit)
	}
	for _, e := range evs {
		switch {
		case e.RecoveryID == id:
		case !e.Time.After(in.To):
			in.ClusterEvents = append(in.ClusterEvents, e)
		}
		if e.Instance.Equal(rec.OldPrimary) && !e.Time.Before(rec.Started) {
			switch e.Event {
			case dbpilot.AuditFence, dbpilot.AuditReclone, dbpilot.AuditRejoin:
				in.OldPrimaryEvents = append(in.OldPrimaryEvents, e)
			}
		}
	}

	if d.alertStore != nil {
		as, err := d.alertStore.Alerts(ctx, dbpilot.AlertFilter{Cluster: rec.Cluster, Since: in.From, Limit: 1000})
		if err != nil {
			note("alerts: %v", err)
		}
		for _, a := range as {
			if !a.ActiveAt.After(in.To) {
				in.Alerts = append(in.Alerts, a)
			}
		}
	} else {
		note("alerts: this serve evaluates no alert rules (metrics are off)")
	}
	if st, err := d.ClusterStatus(ctx, rec.Cluster); err == nil {
		for i, f := range st.Fenced {
			if f.Key.Equal(rec.OldPrimary) {
				in.Fenced = &st.Fenced[i]
			}
		}
	}

	d.reportTopology(ctx, in, anchor, end, now)
	if d.metrics == nil {
		note("metrics, the old primary's GTID position and bench runs: this serve keeps no metrics (metrics are off)")
		return in, nil
	}
	if err := d.unqueryable(); err != nil {
		note("metrics, the old primary's GTID position and bench runs: %v", err)
		return in, nil
	}
	d.reportCharts(ctx, in)
	d.reportOldPosition(ctx, in, anchor)
	opened := rec.WritesOpen
	if opened.IsZero() {
		opened = end
	}
	d.reportBench(ctx, in, anchor.Add(-benchAround), minTime(opened.Add(benchAround), now), now)
	return in, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// reportTopology reads the cluster just before the detection and just
// after the end from the topology history (the time machine, GET
// /api/clusters/{name}/at).
func (d *Daemon) reportTopology(ctx context.Context, in *report.Input, anchor, end, now time.Time) {
	h, ok := any(d).(dbpilot.HistoryService)
	if !ok {
		in.TopologyNote = "this serve keeps no topology history: the topology before and after is not known"
		return
	}
	name := in.Recovery.Cluster
	var errs []string
	var err error
	if in.Before, err = h.ClusterAt(ctx, name, anchor.Add(-time.Millisecond)); err != nil {
		errs = append(errs, "before: "+err.Error())
	}
	// The observation that follows the end records the new topology.
	if in.After, err = h.ClusterAt(ctx, name, minTime(end.Add(2*time.Second), now)); err != nil {
		errs = append(errs, "after: "+err.Error())
	}
	if len(errs) > 0 {
		in.TopologyNote = "the topology history could not be read: " + strings.Join(errs, "; ")
	}
}

// promSel is a PromQL selector of name with the labels' equality matchers
// (and raw matchers, e.g. `role!="primary"`).
func promSel(name string, eq map[string]string, raw ...string) string {
	var m []string
	for _, k := range []string{"cluster", "instance", "quantile"} {
		if v, ok := eq[k]; ok {
			m = append(m, k+"="+strconv.Quote(v))
		}
	}
	m = append(m, raw...)
	return name + "{" + strings.Join(m, ",") + "}"
}

// reportCharts queries the charts' series over the window (the console's
// expressions: web/static/js/promql.js).
func (d *Daemon) reportCharts(ctx context.Context, in *report.Input) {
	span := in.To.Sub(in.From)
	// At most reportChartPoints points: whole seconds, rounded up.
	step := max(time.Second, time.Duration(math.Ceil(float64(span)/reportChartPoints/float64(time.Second)))*time.Second)
	w := fmt.Sprintf("[%ds]", int64(max(2*time.Second, step)/time.Second))
	c := map[string]string{"cluster": in.Recovery.Cluster}
	rate := func(name string) string { return "rate(" + promSel(name, c) + w + ")" }
	peak := func(name string, raw ...string) string { return "max_over_time(" + promSel(name, c, raw...) + w + ")" }
	type q struct{ label, expr string }
	for _, ch := range []struct {
		id, title, unit string
		qs              []q
	}{
		{"qps", "Queries per second", "/s", []q{{"", "sum by (instance) (" + rate("mysql_global_status_questions") + ")"}}},
		{"lag", "Replication lag (heartbeat)", "s", []q{{"", "max by (instance) (" + peak("dbpilot_heartbeat_lag_seconds", `role!="primary"`) + ")"}}},
		{"threads-running", "Threads running", "", []q{{"", "max by (instance) (" + peak("mysql_global_status_threads_running") + ")"}}},
		{"threads-connected", "Threads connected", "", []q{{"", "max by (instance) (" + peak("mysql_global_status_threads_connected") + ")"}}},
		{"semisync", "Semi-sync waits (transactions that waited for a replica's acknowledgement, and that got none)", "/s", []q{
			{"tx waits", "sum by (instance) (" + rate("dbpilot_semisync_primary_tx_waits_total") + ")"},
			{"no-ack tx", "sum by (instance) (" + rate("dbpilot_semisync_primary_no_tx_total") + ")"},
		}},
	} {
		ci := report.ChartInput{ID: ch.id, Title: ch.title, Unit: ch.unit, Legend: "instance"}
		var exprs, errs []string
		for _, q := range ch.qs {
			exprs = append(exprs, q.expr)
			ss, err := d.metrics.QueryRange(ctx, q.expr, in.From, in.To, step)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			for _, s := range ss {
				if q.label != "" {
					// Two queries in one chart: each line says which.
					s.Labels = map[string]string{"series": s.Labels["instance"] + " " + q.label}
					ci.Legend = "series"
				}
				ci.Series = append(ci.Series, s)
			}
		}
		ci.Query = strings.Join(exprs, " ; ") + fmt.Sprintf("  (step %s)", step)
		ci.Error = strings.Join(errs, "; ")
		in.Charts = append(in.Charts, ci)
	}
}

// reportOldPosition reads the old primary's GTID position as last sampled
// before at: MariaDB's gtid_current_pos per domain, MySQL's gtid_executed
// count.
func (d *Daemon) reportOldPosition(ctx context.Context, in *report.Input, at time.Time) {
	sel := map[string]string{"cluster": in.Recovery.Cluster, "instance": in.Recovery.OldPrimary.String()}
	pos := &report.Position{}
	latest := func(expr string, each func(labels map[string]string, v float64)) {
		ss, err := d.metrics.QueryInstant(ctx, expr+"[5m]", at)
		if err != nil {
			in.Notes = append(in.Notes, fmt.Sprintf("the old primary's GTID position: %v", err))
			return
		}
		for _, s := range ss {
			if n := len(s.Points); n > 0 {
				p := s.Points[n-1]
				if p.T.After(pos.At) {
					pos.At = p.T
				}
				each(s.Labels, p.V)
			}
		}
	}
	latest(promSel("dbpilot_replication_gtid_seq", sel), func(l map[string]string, v float64) {
		dom, err := strconv.ParseUint(l["domain"], 10, 32)
		if err != nil || v < 0 || v > math.MaxInt64 {
			return
		}
		if pos.Domains == nil {
			pos.Domains = map[uint32]uint64{}
		}
		pos.Domains[uint32(dom)] = uint64(v)
	})
	latest(promSel("dbpilot_gtid_executed_count", sel), func(_ map[string]string, v float64) { pos.Executed = v })
	if len(pos.Domains) > 0 || pos.Executed > 0 {
		in.OldPrimaryPosition = pos
	}
}

// reportBench reads what `dbpilot bench --server` runs pushed from from to
// to (cmd/dbpilot/bench.go: benchPusher), and their ledger check at their
// end; in.Bench stays nil without a bench sample in the window.
func (d *Daemon) reportBench(ctx context.Context, in *report.Input, from, to, now time.Time) {
	if !to.After(from) {
		return
	}
	c := map[string]string{"cluster": in.Recovery.Cluster}
	secs := fmt.Sprintf("[%ds]", int64(math.Ceil(to.Sub(from).Seconds())))
	failed := false
	rangeQ := func(expr string, start, end time.Time, step time.Duration) []dbpilot.Series {
		ss, err := d.metrics.QueryRange(ctx, expr, start, end, step)
		if err != nil && !failed {
			failed = true
			in.Notes = append(in.Notes, fmt.Sprintf("bench metrics (%s): %v", expr, err))
		}
		return ss
	}
	instantQ := func(expr string, at time.Time) []dbpilot.Series {
		ss, err := d.metrics.QueryInstant(ctx, expr, at)
		if err != nil && !failed {
			failed = true
			in.Notes = append(in.Notes, fmt.Sprintf("bench metrics (%s): %v", expr, err))
		}
		return ss
	}
	b := &report.BenchInput{From: from, To: to}
	b.Rate = rangeQ("sum("+promSel("dbpilot_bench_rate", c)+")", from, to, time.Second)
	if !hasPoints(b.Rate) {
		return
	}
	for _, s := range instantQ("count by (workload) (count_over_time("+promSel("dbpilot_bench_rate", c)+secs+"))", to) {
		b.Workloads = append(b.Workloads, s.Labels["workload"])
	}
	slices.Sort(b.Workloads)
	b.ErrorsPerSecond = rangeQ("sum("+promSel("dbpilot_bench_errors_per_second", c)+")", from, to, time.Second)
	b.Latency = rangeQ("max by (quantile) ("+promSel("dbpilot_bench_latency_seconds", c, `quantile=~"0.5|0.99|1"`)+")", from, to, time.Second)
	if ss := instantQ("max(max_over_time("+promSel("dbpilot_bench_write_stall_seconds", c)+secs+"))", to); hasPoints(ss) {
		b.LongestStall, b.HasStall = ss[0].Points[0].V, true
	}
	b.ErrorsBase = instantQ(promSel("dbpilot_bench_errors_total", c), from)
	b.ErrorsRaw = instantQ(promSel("dbpilot_bench_errors_total", c)+secs, to)

	// The ledger: a run with one pushes its acknowledged writes each
	// interval and, at its end, what it found on the new primary.
	l := &b.Ledger
	if ss := instantQ(promSel("dbpilot_bench_ledger_acknowledged", c)+secs, to); hasPoints(ss) {
		l.HasAcked = true
		for _, s := range ss {
			l.Acked += s.Points[len(s.Points)-1].V
		}
	}
	checkTo := minTime(to.Add(ledgerWithin), now)
	look := fmt.Sprintf("[%ds]", int64(math.Ceil(checkTo.Sub(from).Seconds())))
	first := func(name string) (dbpilot.Point, map[string]string, bool) {
		var best dbpilot.Point
		var labels map[string]string
		for _, s := range instantQ(promSel(name, c)+look, checkTo) {
			for _, p := range s.Points {
				if !p.T.Before(from) && (labels == nil || p.T.Before(best.T)) {
					best, labels = p, s.Labels
				}
			}
		}
		return best, labels, labels != nil
	}
	if p, labels, ok := first("dbpilot_bench_ledger_lost"); ok {
		l.Lost, l.HasLost, l.At = p.V, true, p.T
		// The acknowledged and found writes of the same check.
		sel := map[string]string{"cluster": in.Recovery.Cluster, "instance": labels["instance"]}
		wl := `workload=` + strconv.Quote(labels["workload"])
		for _, m := range []struct {
			name string
			v    *float64
			has  *bool
		}{{"dbpilot_bench_ledger_found", &l.Found, &l.HasFound}, {"dbpilot_bench_ledger_acknowledged", &l.Acked, &l.HasAcked}} {
			for _, s := range instantQ(promSel(m.name, sel, wl), p.T) {
				if hasPoints([]dbpilot.Series{s}) {
					*m.v, *m.has = s.Points[0].V, true
				}
			}
		}
	} else if p, _, ok := first("dbpilot_bench_ledger_check_failed"); ok {
		l.Failed, l.At = true, p.T
	}
	in.Bench = b
}

func hasPoints(ss []dbpilot.Series) bool {
	for _, s := range ss {
		if len(s.Points) > 0 {
			return true
		}
	}
	return false
}
