package alert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Defaults of Options.
const (
	DefaultInterval     = time.Second
	DefaultQueryTimeout = 10 * time.Second
	DefaultGrace        = 30 * time.Second
)

// ReasonLeftTopology is the Suppressed reason of an alert resolved because
// its instance is no longer monitored.
const ReasonLeftTopology = "the instance left the topology"

// ReasonRuleRemoved is the Suppressed reason of an alert resolved because its
// rule no longer exists (found in the store after a restart).
const ReasonRuleRemoved = "its rule no longer exists"

// Options configure an Evaluator.
type Options struct {
	// Interval is how often Run evaluates every rule (DefaultInterval when 0).
	Interval time.Duration
	// QueryTimeout bounds each rule's query (DefaultQueryTimeout when 0).
	QueryTimeout time.Duration
	// Querier answers the rules' queries.
	Querier dbpilot.MetricsQuerier
	// Store keeps alert states; nil keeps them in memory only.
	Store dbpilot.AlertStore
	// Notifiers are told of every alert that fires or resolves. Notify must
	// return quickly (the webhook queues). Run closes those that implement
	// io.Closer when it returns.
	Notifiers []Notifier
	// Suppress returns why the alert with these labels is held back (its
	// primary is down, a recovery runs), or "". A suppressed alert keeps its
	// state but is not notified until the reason clears.
	Suppress func(labels map[string]string) string
	// Known reports whether the instance of these labels is still monitored.
	// The series of one that is not raise no alert, and its alerts resolve
	// (reason ReasonLeftTopology) once it has been unknown for Grace. Nil:
	// every instance is. Suppress and Known are called with the evaluator's
	// lock held: they must not call the Evaluator.
	Known func(labels map[string]string) bool
	// Grace (DefaultGrace when 0; negative: none) is how long an alert is
	// kept while Known says no, and how long after the first round an alert
	// loaded from the store is kept while its series is missing: serve's
	// discovery and collectors may not have caught up yet, and resolving
	// then would notify the resolution and, a moment later, the alert again.
	Grace time.Duration
	// Logger receives state changes and errors; nil discards.
	Logger *slog.Logger
	// Now is the clock of Run (time.Now when nil).
	Now func() time.Time
}

// Evaluator evaluates rules and keeps the state of their alerts.
type Evaluator struct {
	rules  []*Rule
	byName map[string]*Rule
	opt    Options
	log    *slog.Logger

	evalMu sync.Mutex // one round at a time

	mu     sync.Mutex // guards what follows
	active map[string]*state
	loaded bool
	start  time.Time // the first round's time
}

// state is one pending or firing alert.
type state struct {
	rule  *Rule
	alert *dbpilot.Alert
	// notified says a firing notification went out, so that the resolution
	// is notified too.
	notified bool
	// restored: loaded from the store and not seen since.
	restored bool
	// unknownSince is when Known first said no (zero while it says yes).
	unknownSince time.Time
	changed      bool // to save at the end of the round
}

// keys returns the keys of the active alerts, sorted, so that a round saves
// and notifies in a stable order.
func (e *Evaluator) keys() []string {
	ks := make([]string, 0, len(e.active))
	for k := range e.active {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// NewEvaluator returns an evaluator of rules. Rules built in code have their
// summary templates parsed here; a broken one renders as its text.
func NewEvaluator(rules []Rule, opt Options) *Evaluator {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.QueryTimeout <= 0 {
		opt.QueryTimeout = DefaultQueryTimeout
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	switch {
	case opt.Grace == 0:
		opt.Grace = DefaultGrace
	case opt.Grace < 0:
		opt.Grace = 0
	}
	e := &Evaluator{opt: opt, log: opt.Logger, byName: map[string]*Rule{}, active: map[string]*state{}}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	for i := range rules {
		r := rules[i] // a copy: the evaluator owns its rules
		if r.tmpl == nil {
			text := r.Summary
			if text == "" {
				text = defaultSummary
			}
			t, err := newTemplate(r.Name, text)
			if err != nil {
				e.log.Warn("alert summary template", "rule", r.Name, "error", err)
			}
			r.tmpl = t
		}
		if r.Severity == "" {
			r.Severity = SeverityWarning
		}
		if _, dup := e.byName[r.Name]; dup {
			e.log.Warn("alert rule defined twice; the first is used", "rule", r.Name)
			continue
		}
		e.rules = append(e.rules, &r)
		e.byName[r.Name] = &r
	}
	for _, n := range opt.Notifiers {
		if w, ok := n.(interface{ defaultLogger(*slog.Logger) }); ok {
			w.defaultLogger(e.log)
		}
	}
	return e
}

// Rules returns the evaluator's rules.
func (e *Evaluator) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = *r
	}
	return out
}

// Run evaluates the rules every Interval until ctx ends, then closes the
// notifiers that implement io.Closer.
func (e *Evaluator) Run(ctx context.Context) {
	defer e.closeNotifiers()
	t := time.NewTicker(e.opt.Interval)
	defer t.Stop()
	var lastErr string
	var lastLogged time.Time
	for {
		err := e.Evaluate(ctx, e.opt.Now())
		if ctx.Err() != nil {
			return
		}
		// The same error every second is logged once a minute.
		if err != nil && (err.Error() != lastErr || time.Since(lastLogged) >= time.Minute) {
			e.log.Warn("alert evaluation", "error", err)
			lastErr, lastLogged = err.Error(), time.Now()
		} else if err == nil {
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (e *Evaluator) closeNotifiers() {
	for _, n := range e.opt.Notifiers {
		if c, ok := n.(io.Closer); ok {
			if err := c.Close(); err != nil {
				e.log.Warn("alert notifier close", "error", err)
			}
		}
	}
}

// result is one rule's query outcome.
type result struct {
	series []dbpilot.Series
	err    error
}

// round is what one evaluation gathers as it goes.
type round struct {
	now time.Time
	// seen holds the keys of the alerts the round vouches for: returned by
	// their rule's query, or of a rule whose query failed. The others are
	// resolved.
	seen    map[string]bool
	changed []*state         // to save, in order
	notify  []*dbpilot.Alert // to notify, in order
	errs    []error
}

// mark records that st changed, to save at the end of the round.
func (rd *round) mark(st *state) {
	if !st.changed {
		st.changed = true
		rd.changed = append(rd.changed, st)
	}
}

// Evaluate runs one round at time now: it queries every rule, moves alerts
// between states, saves every change and notifies. A rule whose query fails
// keeps its alerts as they are; the errors are returned together.
func (e *Evaluator) Evaluate(ctx context.Context, now time.Time) error {
	e.evalMu.Lock()
	defer e.evalMu.Unlock()
	if e.opt.Querier == nil {
		return errors.New("alert: no metrics querier")
	}
	restoredNotify, err := e.load(ctx, now)
	if err != nil && !e.isLoaded() {
		return err
	}
	rd := &round{now: now, seen: map[string]bool{}}
	if err != nil {
		rd.errs = append(rd.errs, err)
	}

	// Queries run without the state lock, so Active answers meanwhile.
	results := e.query(ctx, rd)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	e.mu.Lock()
	if e.start.IsZero() {
		e.start = now
	}
	e.match(rd, results)
	e.resolveGone(rd)
	e.suppressAndFire(rd)
	e.persist(ctx, rd)
	e.mu.Unlock()

	e.notify(ctx, append(restoredNotify, rd.notify...))
	return errors.Join(rd.errs...)
}

// query runs every rule's query at the round's time, each bounded by
// QueryTimeout. A failure is kept in the rule's result and in the round's
// errors.
func (e *Evaluator) query(ctx context.Context, rd *round) []result {
	results := make([]result, len(e.rules))
	for i, r := range e.rules {
		qctx, cancel := context.WithTimeout(ctx, e.opt.QueryTimeout)
		s, err := e.opt.Querier.QueryInstant(qctx, r.Expr, rd.now)
		cancel()
		if err != nil {
			err = fmt.Errorf("rule %s: %w", r.Name, err)
			rd.errs = append(rd.errs, err)
		}
		results[i] = result{series: s, err: err}
	}
	return results
}

// match matches the series of every rule to the active alerts (see
// observe). The alerts of a rule whose query failed are kept as they are.
func (e *Evaluator) match(rd *round, results []result) {
	for i, r := range e.rules {
		res := results[i]
		if res.err != nil {
			for k, st := range e.active {
				if st.rule == r {
					rd.seen[k] = true // unknown: keep as is
				}
			}
			continue
		}
		for _, s := range res.series {
			e.observe(rd, r, s)
		}
	}
}

// observe matches one series of rule r to its alert: a new label set raises
// a pending alert, unless Known says its instance is not monitored; the
// alert takes the series' last value and its summary, and fires once it has
// been pending for the rule's For. A series without points is ignored, and
// a label set returned twice is an error.
func (e *Evaluator) observe(rd *round, r *Rule, s dbpilot.Series) {
	if len(s.Points) == 0 {
		return
	}
	labels := alertLabels(s.Labels, r.Labels)
	k := key(r.Name, labels)
	if rd.seen[k] {
		rd.errs = append(rd.errs, fmt.Errorf("rule %s: the query returned the label set %s twice; the second is ignored", r.Name, labelString(labels)))
		return
	}
	if e.opt.Known != nil && !e.opt.Known(labels) {
		// Judged by resolveGone; a new one is not raised.
		rd.seen[k] = e.active[k] != nil
		return
	}
	rd.seen[k] = true
	value := s.Points[len(s.Points)-1].V
	st := e.active[k]
	if st == nil {
		st = &state{rule: r, alert: &dbpilot.Alert{
			Rule: r.Name, Severity: r.Severity, State: dbpilot.AlertPending,
			Labels: labels, ActiveAt: rd.now,
		}}
		e.active[k] = st
		rd.mark(st)
		e.log.Debug("alert pending", "alert", r.Name, "labels", labelString(labels))
	}
	st.restored = false
	st.alert.Value = finite(value)
	st.alert.Summary = e.render(r, labels, value)
	e.advance(rd, st, r.For)
}

// advance moves a pending alert to firing once it has been pending for
// forDur.
func (e *Evaluator) advance(rd *round, st *state, forDur time.Duration) {
	if st.alert.State == dbpilot.AlertPending && rd.now.Sub(st.alert.ActiveAt) >= forDur {
		st.alert.State = dbpilot.AlertFiring
		st.alert.FiredAt = rd.now
		rd.mark(st)
	}
}

// resolveGone resolves, in key order, the active alerts that are gone (see
// gone).
func (e *Evaluator) resolveGone(rd *round) {
	for _, k := range e.keys() {
		st := e.active[k]
		if reason, ok := e.gone(rd, k, st); ok {
			e.resolve(rd, k, st, reason)
		}
	}
}

// gone reports whether the alert of key k is to resolve, with the reason
// when it is not that its condition stopped holding. An alert whose
// instance Known says is not monitored goes once it has been so for Grace
// (ReasonLeftTopology); gone keeps the time Known first said no. Any other
// alert goes when the round did not see it, unless it was loaded from the
// store and the first round was less than Grace ago.
func (e *Evaluator) gone(rd *round, k string, st *state) (reason string, ok bool) {
	if e.opt.Known != nil && !e.opt.Known(st.alert.Labels) {
		if st.unknownSince.IsZero() {
			st.unknownSince = rd.now
		}
		if rd.now.Sub(st.unknownSince) < e.opt.Grace {
			return "", false
		}
		return ReasonLeftTopology, true
	}
	st.unknownSince = time.Time{}
	if rd.seen[k] || st.restored && rd.now.Sub(e.start) < e.opt.Grace {
		return "", false
	}
	return "", true
}

// resolve ends the alert of key k (reason, when not "", becomes its
// Suppressed): a firing alert resolves, notified when its firing was; a
// pending one is dropped, stored as resolved without FiredAt.
func (e *Evaluator) resolve(rd *round, k string, st *state, reason string) {
	a := st.alert
	wasFiring := a.State == dbpilot.AlertFiring
	a.State = dbpilot.AlertResolved
	a.ResolvedAt = rd.now
	if reason != "" {
		a.Suppressed = reason
	}
	delete(e.active, k)
	rd.mark(st)
	if wasFiring && st.notified {
		rd.notify = append(rd.notify, cloneAlert(a))
	}
	if wasFiring {
		e.log.Debug("alert resolved", "alert", a.Rule, "labels", labelString(a.Labels), "reason", reason)
	}
}

// suppressAndFire, for each active alert in key order, updates its
// suppression, then notifies it if it fires (see suppress and fire).
func (e *Evaluator) suppressAndFire(rd *round) {
	for _, k := range e.keys() {
		st := e.active[k]
		e.suppress(rd, st)
		e.fire(rd, st)
	}
}

// suppress sets the alert's Suppressed to what Suppress says now.
func (e *Evaluator) suppress(rd *round, st *state) {
	a := st.alert
	reason := ""
	if e.opt.Suppress != nil {
		reason = e.opt.Suppress(a.Labels)
	}
	if reason != a.Suppressed {
		a.Suppressed = reason
		rd.mark(st)
		if reason != "" {
			e.log.Info("alert suppressed", "alert", a.Rule, "labels", labelString(a.Labels), "reason", reason)
		}
	}
}

// fire notifies a firing alert that is not suppressed, once.
func (e *Evaluator) fire(rd *round, st *state) {
	a := st.alert
	if a.State == dbpilot.AlertFiring && a.Suppressed == "" && !st.notified {
		st.notified = true
		rd.notify = append(rd.notify, cloneAlert(a))
		e.log.Debug("alert firing", "alert", a.Rule, "severity", a.Severity, "labels", labelString(a.Labels))
	}
}

// persist saves the alerts that changed in the round, in the order they
// changed; a failed save is one of the round's errors.
func (e *Evaluator) persist(ctx context.Context, rd *round) {
	for _, st := range rd.changed {
		st.changed = false
		if err := e.save(ctx, st.alert); err != nil {
			rd.errs = append(rd.errs, err)
		}
	}
}

// load reads the pending and firing alerts of the store once, so that a
// restart neither notifies again nor restarts `for` clocks. It returns the
// resolutions to notify (alerts whose rule is gone). Until it succeeds no
// rule is evaluated.
func (e *Evaluator) load(ctx context.Context, now time.Time) ([]*dbpilot.Alert, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loaded {
		return nil, nil
	}
	if e.opt.Store == nil {
		e.loaded = true
		return nil, nil
	}
	var stored []*dbpilot.Alert
	for _, s := range []string{dbpilot.AlertPending, dbpilot.AlertFiring} {
		as, err := e.opt.Store.Alerts(ctx, dbpilot.AlertFilter{State: s, Limit: loadLimit})
		if err != nil {
			return nil, fmt.Errorf("alert: load the alert states: %w", err)
		}
		stored = append(stored, as...)
	}
	e.loaded = true
	// Newest first, so that of two copies of one alert the newest is kept.
	sort.SliceStable(stored, func(i, j int) bool { return stored[i].ID > stored[j].ID })
	var errs []error
	var notify []*dbpilot.Alert
	for _, a := range stored {
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		r := e.byName[a.Rule]
		k := key(a.Rule, a.Labels)
		if r == nil || e.active[k] != nil {
			// Its rule is gone, or a duplicate: resolve it.
			wasNotified := a.State == dbpilot.AlertFiring && a.Suppressed == ""
			a.State, a.ResolvedAt = dbpilot.AlertResolved, now
			if r == nil {
				a.Suppressed = ReasonRuleRemoved
				if wasNotified {
					notify = append(notify, cloneAlert(a))
				}
			}
			if err := e.save(ctx, a); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		a.Severity = r.Severity
		st := &state{rule: r, alert: a, restored: true, notified: a.State == dbpilot.AlertFiring && a.Suppressed == ""}
		if a.State == dbpilot.AlertPending && !a.ActiveAt.Add(r.For).After(now) {
			// It would have fired while nobody watched: start its clock
			// again rather than fire on one sample.
			a.ActiveAt = now
			if err := e.save(ctx, a); err != nil {
				errs = append(errs, err)
			}
		}
		e.active[k] = st
	}
	if len(stored) > 0 {
		e.log.Info("alert states loaded", "active", len(e.active), "stored", len(stored))
	}
	return notify, errors.Join(errs...)
}

// loadLimit bounds the alerts read from the store at start.
const loadLimit = 100000

// save stores a's state (setting its ID on the first save).
func (e *Evaluator) save(ctx context.Context, a *dbpilot.Alert) error {
	if e.opt.Store == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opt.QueryTimeout)
	defer cancel()
	if err := e.opt.Store.SaveAlert(sctx, a); err != nil {
		return fmt.Errorf("alert: save %s %s: %w", a.Rule, labelString(a.Labels), err)
	}
	return nil
}

// notify tells every notifier of alerts.
func (e *Evaluator) notify(ctx context.Context, alerts []*dbpilot.Alert) {
	if len(alerts) == 0 {
		return
	}
	for _, n := range e.opt.Notifiers {
		batch := make([]*dbpilot.Alert, len(alerts))
		for i, a := range alerts {
			batch[i] = cloneAlert(a)
		}
		if err := n.Notify(ctx, batch); err != nil {
			e.log.Warn("alert notify", "error", err)
		}
	}
}

// render expands a rule's summary; a broken template yields its text.
func (e *Evaluator) render(r *Rule, labels map[string]string, value float64) string {
	s, err := r.render(labels, value)
	if err != nil {
		e.log.Debug("alert summary template", "alert", r.Name, "error", err)
	}
	return s
}

// Active returns the pending and firing alerts, oldest first.
func (e *Evaluator) Active() []*dbpilot.Alert {
	e.mu.Lock()
	out := make([]*dbpilot.Alert, 0, len(e.active))
	for _, st := range e.active {
		out = append(out, cloneAlert(st.alert))
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.ActiveAt.Equal(b.ActiveAt) {
			return a.ActiveAt.Before(b.ActiveAt)
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return labelString(a.Labels) < labelString(b.Labels)
	})
	return out
}

// Alerts implements dbpilot.AlertService: the stored alerts f selects, with
// the current value and summary of those still active. Without a store it
// answers from the active alerts alone.
func (e *Evaluator) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	if e.opt.Store == nil {
		var out []*dbpilot.Alert
		active := e.Active()
		for i := len(active) - 1; i >= 0; i-- { // newest first
			a := active[i]
			if (f.Cluster == "" || a.Labels["cluster"] == f.Cluster) && (f.State == "" || a.State == f.State) {
				out = append(out, a)
			}
		}
		limit := f.Limit
		if limit <= 0 {
			limit = 500
		}
		if len(out) > limit {
			out = out[:limit]
		}
		return out, nil
	}
	as, err := e.opt.Store.Alerts(ctx, f)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	live := map[int64]*dbpilot.Alert{}
	for _, st := range e.active {
		if st.alert.ID != 0 {
			live[st.alert.ID] = st.alert
		}
	}
	for _, a := range as {
		if l := live[a.ID]; l != nil && l.State == a.State {
			a.Value, a.Summary = l.Value, l.Summary
		}
	}
	e.mu.Unlock()
	return as, nil
}

var _ dbpilot.AlertService = (*Evaluator)(nil)

func (e *Evaluator) isLoaded() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.loaded
}

// alertLabels are a series' labels without __name__, with the rule's labels.
func alertLabels(series, rule map[string]string) map[string]string {
	out := make(map[string]string, len(series)+len(rule))
	for k, v := range series {
		if k != "__name__" {
			out[k] = v
		}
	}
	for k, v := range rule {
		out[k] = v
	}
	return out
}

// key identifies an alert: its rule and label set.
func key(rule string, labels map[string]string) string {
	return rule + "\x00" + labelString(labels)
}

// labelString renders labels sorted, as {a="1", b="2"}.
func labelString(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

func cloneAlert(a *dbpilot.Alert) *dbpilot.Alert {
	c := *a
	if a.Labels != nil {
		c.Labels = make(map[string]string, len(a.Labels))
		for k, v := range a.Labels {
			c.Labels[k] = v
		}
	}
	return &c
}

// finite keeps a value JSON can carry: NaN becomes 0 and infinities the
// largest floats (the summary shows the real value).
func finite(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}
