package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sqlite"
)

// fakeQuerier answers instant queries from a table of expressions.
type fakeQuerier struct {
	mu     sync.Mutex
	series map[string][]dbpilot.Series
	errs   map[string]error
}

func newFakeQuerier() *fakeQuerier {
	return &fakeQuerier{series: map[string][]dbpilot.Series{}, errs: map[string]error{}}
}

// set makes expr return one series per label set, each with value v.
func (f *fakeQuerier) set(expr string, v float64, labelSets ...map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ss []dbpilot.Series
	for _, l := range labelSets {
		ss = append(ss, dbpilot.Series{Labels: l, Points: []dbpilot.Point{{V: v}}})
	}
	f.series[expr] = ss
}

func (f *fakeQuerier) fail(expr string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[expr] = err
}

func (f *fakeQuerier) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[expr]; err != nil {
		return nil, err
	}
	var out []dbpilot.Series
	for _, s := range f.series[expr] {
		l := map[string]string{}
		for k, v := range s.Labels {
			l[k] = v
		}
		out = append(out, dbpilot.Series{Labels: l, Points: []dbpilot.Point{{T: t, V: s.Points[0].V}}})
	}
	return out, nil
}

func (f *fakeQuerier) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	return nil, errors.New("not implemented")
}

// receiver is a webhook endpoint that records what it receives.
type receiver struct {
	srv *httptest.Server
	got chan WebhookPayload
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: make(chan WebhookPayload, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p WebhookPayload
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook request %s %s", req.Method, req.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		r.got <- p
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// next returns the next payload.
func (r *receiver) next(t *testing.T) []*dbpilot.Alert {
	t.Helper()
	select {
	case p := <-r.got:
		return p.Alerts
	case <-time.After(5 * time.Second):
		t.Fatal("no webhook notification")
	}
	return nil
}

// none checks that nothing more arrived.
func (r *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-r.got:
		t.Fatalf("unexpected webhook notification: %+v", p.Alerts[0])
	case <-time.After(100 * time.Millisecond):
	}
}

func openStore(t *testing.T) (*sqlite.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dbpilot.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func testRules(t *testing.T) []Rule {
	t.Helper()
	rules, err := ParseRules("test.yaml", []byte(`
rules:
  - alert: Down
    expr: mysql_up == 0
    for: 10s
    severity: critical
    summary: "{{ $labels.instance }} down ({{ $value }})"
  - alert: Restarted
    expr: mysql_global_status_uptime < 300
    severity: info
    labels: {team: dba}
`))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

var (
	t0   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	db1  = map[string]string{"__name__": "mysql_up", "instance": "db1:3306", "cluster": "main", "role": "primary"}
	db2  = map[string]string{"__name__": "mysql_up", "instance": "db2:3306", "cluster": "main", "role": "replica"}
	sec  = time.Second
	down = "mysql_up == 0"
)

type fixture struct {
	q     *fakeQuerier
	store *sqlite.DB
	path  string
	recv  *receiver
	hook  *Webhook
	opt   Options
	e     *Evaluator
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{q: newFakeQuerier(), recv: newReceiver(t)}
	f.store, f.path = openStore(t)
	f.hook = NewWebhook(f.recv.srv.URL, time.Second)
	t.Cleanup(func() { f.hook.Close() })
	f.opt = Options{Querier: f.q, Store: f.store, Notifiers: []Notifier{f.hook}, Grace: -1}
	f.e = NewEvaluator(testRules(t), f.opt)
	return f
}

func (f *fixture) eval(t *testing.T, at time.Time) {
	t.Helper()
	if err := f.e.Evaluate(context.Background(), at); err != nil {
		t.Fatalf("Evaluate at %s: %v", at.Sub(t0), err)
	}
}

func (f *fixture) stored(t *testing.T, flt dbpilot.AlertFilter) []*dbpilot.Alert {
	t.Helper()
	as, err := f.store.Alerts(context.Background(), flt)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func wantAlert(t *testing.T, a *dbpilot.Alert, rule, state, instance string) {
	t.Helper()
	if a.Rule != rule || a.State != state || a.Labels["instance"] != instance {
		t.Fatalf("alert %s %s %s, want %s %s %s", a.Rule, a.State, a.Labels["instance"], rule, state, instance)
	}
	if _, ok := a.Labels["__name__"]; ok {
		t.Errorf("alert labels keep __name__: %v", a.Labels)
	}
}

func TestEvaluatorLifecycle(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1)

	f.eval(t, t0)
	act := f.e.Active()
	if len(act) != 1 {
		t.Fatalf("active %+v", act)
	}
	wantAlert(t, act[0], "Down", dbpilot.AlertPending, "db1:3306")
	if act[0].Summary != "db1:3306 down (0)" || act[0].Severity != "critical" || !act[0].ActiveAt.Equal(t0) {
		t.Errorf("pending alert %+v", act[0])
	}
	st := f.stored(t, dbpilot.AlertFilter{})
	if len(st) != 1 || st[0].State != dbpilot.AlertPending || st[0].ID != act[0].ID || st[0].ID == 0 {
		t.Fatalf("stored %+v", st)
	}

	f.eval(t, t0.Add(9*sec))
	if act := f.e.Active(); act[0].State != dbpilot.AlertPending {
		t.Fatalf("fired before for: %+v", act[0])
	}
	f.recv.none(t)

	f.eval(t, t0.Add(10*sec))
	got := f.recv.next(t)
	if len(got) != 1 {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Down", dbpilot.AlertFiring, "db1:3306")
	if !got[0].FiredAt.Equal(t0.Add(10*sec)) || !got[0].ActiveAt.Equal(t0) || got[0].Summary != "db1:3306 down (0)" {
		t.Errorf("firing notification %+v", got[0])
	}
	if st := f.stored(t, dbpilot.AlertFilter{State: dbpilot.AlertFiring}); len(st) != 1 || !st[0].FiredAt.Equal(t0.Add(10*sec)) {
		t.Errorf("stored firing %+v", st)
	}

	// Still true: no new notification.
	f.eval(t, t0.Add(11*sec))
	f.eval(t, t0.Add(12*sec))
	f.recv.none(t)

	// A second instance goes down and comes back before `for`: pending,
	// then dropped (stored resolved without FiredAt), never notified.
	f.q.set(down, 0, db1, db2)
	f.eval(t, t0.Add(13*sec))
	f.q.set(down, 0, db1)
	f.eval(t, t0.Add(14*sec))
	f.recv.none(t)
	dropped := f.stored(t, dbpilot.AlertFilter{State: dbpilot.AlertResolved})
	if len(dropped) != 1 || dropped[0].Labels["instance"] != "db2:3306" || !dropped[0].FiredAt.IsZero() || !dropped[0].ResolvedAt.Equal(t0.Add(14*sec)) {
		t.Errorf("dropped pending %+v", dropped)
	}

	// Resolved.
	f.q.set(down, 0)
	f.eval(t, t0.Add(20*sec))
	got = f.recv.next(t)
	if len(got) != 1 {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Down", dbpilot.AlertResolved, "db1:3306")
	if !got[0].ResolvedAt.Equal(t0.Add(20*sec)) || !got[0].FiredAt.Equal(t0.Add(10*sec)) {
		t.Errorf("resolved notification %+v", got[0])
	}
	if act := f.e.Active(); len(act) != 0 {
		t.Errorf("active after resolution: %+v", act)
	}
	st = f.stored(t, dbpilot.AlertFilter{Cluster: "main"})
	if len(st) != 2 || st[1].State != dbpilot.AlertResolved || st[1].ID != got[0].ID {
		t.Errorf("stored %+v", st)
	}
	f.eval(t, t0.Add(21*sec))
	f.recv.none(t)
}

func TestEvaluatorForZeroAndRuleLabels(t *testing.T) {
	f := newFixture(t)
	f.q.set("mysql_global_status_uptime < 300", 42, map[string]string{"instance": "db1:3306", "cluster": "main"})
	f.eval(t, t0)
	got := f.recv.next(t)
	if len(got) != 1 {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Restarted", dbpilot.AlertFiring, "db1:3306")
	if got[0].Labels["team"] != "dba" || got[0].Severity != "info" || got[0].Value != 42 || got[0].Summary != "db1:3306: value 42" {
		t.Errorf("alert %+v", got[0])
	}
}

func TestEvaluatorSuppression(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	reason := "primary db1:3306 of cluster main is down"
	f.opt.Suppress = func(l map[string]string) string {
		mu.Lock()
		defer mu.Unlock()
		if l["role"] == "replica" {
			return reason
		}
		return ""
	}
	f.e = NewEvaluator(testRules(t), f.opt)
	f.q.set(down, 0, db2)
	f.eval(t, t0)
	f.eval(t, t0.Add(10*sec))
	act := f.e.Active()
	if len(act) != 1 || act[0].State != dbpilot.AlertFiring || act[0].Suppressed != reason {
		t.Fatalf("active %+v", act)
	}
	if st := f.stored(t, dbpilot.AlertFilter{}); len(st) != 1 || st[0].Suppressed != reason || st[0].State != dbpilot.AlertFiring {
		t.Errorf("stored %+v", st)
	}
	f.recv.none(t)

	// The reason clears: the firing alert is notified now.
	mu.Lock()
	reason = ""
	mu.Unlock()
	f.eval(t, t0.Add(11*sec))
	got := f.recv.next(t)
	if len(got) != 1 || got[0].Suppressed != "" {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Down", dbpilot.AlertFiring, "db2:3306")
	if st := f.stored(t, dbpilot.AlertFilter{}); st[0].Suppressed != "" {
		t.Errorf("stored %+v", st[0])
	}
	f.eval(t, t0.Add(12*sec))
	f.recv.none(t)

	// Suppressed again, then resolved: the resolution of a notified alert
	// is notified (the receiver would keep it open otherwise).
	mu.Lock()
	reason = "a recovery of cluster main is running"
	mu.Unlock()
	f.eval(t, t0.Add(13*sec))
	f.recv.none(t)
	f.q.set(down, 0)
	f.eval(t, t0.Add(14*sec))
	got = f.recv.next(t)
	wantAlert(t, got[0], "Down", dbpilot.AlertResolved, "db2:3306")

	// An alert that fires and resolves while suppressed is never notified.
	f.q.set(down, 0, db2)
	f.eval(t, t0.Add(20*sec))
	f.eval(t, t0.Add(30*sec))
	f.q.set(down, 0)
	f.eval(t, t0.Add(31*sec))
	f.recv.none(t)
	if st := f.stored(t, dbpilot.AlertFilter{}); len(st) != 2 || st[0].State != dbpilot.AlertResolved || st[0].FiredAt.IsZero() || st[0].Suppressed == "" {
		t.Errorf("stored %+v", st)
	}
}

func TestEvaluatorKnown(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	gone := map[string]bool{}
	f.opt.Known = func(l map[string]string) bool {
		mu.Lock()
		defer mu.Unlock()
		return !gone[l["instance"]]
	}
	f.e = NewEvaluator(testRules(t), f.opt)
	f.q.set(down, 0, db1, db2)
	f.eval(t, t0)
	f.eval(t, t0.Add(10*sec))
	if got := f.recv.next(t); len(got) != 2 {
		t.Fatalf("notified %+v", got)
	}

	// db2 leaves the topology; its series lingers in the metrics store.
	mu.Lock()
	gone["db2:3306"] = true
	mu.Unlock()
	f.eval(t, t0.Add(11*sec))
	got := f.recv.next(t)
	if len(got) != 1 {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Down", dbpilot.AlertResolved, "db2:3306")
	if got[0].Suppressed != ReasonLeftTopology {
		t.Errorf("reason %q", got[0].Suppressed)
	}
	f.eval(t, t0.Add(30*sec))
	f.recv.none(t)
	act := f.e.Active()
	if len(act) != 1 || act[0].Labels["instance"] != "db1:3306" {
		t.Errorf("active %+v", act)
	}
}

func TestEvaluatorRestart(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1)
	f.q.set("mysql_global_status_uptime < 300", 10, db2)
	f.eval(t, t0)
	f.recv.next(t) // Restarted fires at once
	f.eval(t, t0.Add(10*sec))
	got := f.recv.next(t)
	wantAlert(t, got[0], "Down", dbpilot.AlertFiring, "db1:3306")
	// db2's Down goes pending just before the restart.
	f.q.set(down, 0, db1, db2)
	f.eval(t, t0.Add(15*sec))

	// A new evaluator on the same store, with Restarted removed from the
	// rules: Down on db1 stays firing without a new notification; db2's
	// pending Down keeps its clock; Restarted resolves.
	f2 := newReceiver(t)
	hook := NewWebhook(f2.srv.URL, time.Second)
	defer hook.Close()
	rules := testRules(t)[:1]
	e := NewEvaluator(rules, Options{Querier: f.q, Store: f.store, Notifiers: []Notifier{hook}, Grace: -1})
	if err := e.Evaluate(context.Background(), t0.Add(20*sec)); err != nil {
		t.Fatal(err)
	}
	got = f2.next(t)
	if len(got) != 1 || got[0].Rule != "Restarted" || got[0].State != dbpilot.AlertResolved || got[0].Suppressed != ReasonRuleRemoved {
		t.Fatalf("notified after restart: %+v", got)
	}
	f2.none(t)
	act := e.Active()
	if len(act) != 2 {
		t.Fatalf("active after restart %+v", act)
	}
	wantAlert(t, act[0], "Down", dbpilot.AlertFiring, "db1:3306")
	if !act[0].FiredAt.Equal(t0.Add(10*sec)) || !act[0].ActiveAt.Equal(t0) {
		t.Errorf("reloaded %+v", act[0])
	}
	wantAlert(t, act[1], "Down", dbpilot.AlertPending, "db2:3306")
	if !act[1].ActiveAt.Equal(t0.Add(15 * sec)) {
		t.Errorf("pending clock restarted: %+v", act[1])
	}
	// It fires when its `for` has passed since it first went pending.
	if err := e.Evaluate(context.Background(), t0.Add(25*sec)); err != nil {
		t.Fatal(err)
	}
	got = f2.next(t)
	wantAlert(t, got[0], "Down", dbpilot.AlertFiring, "db2:3306")

	// The reloaded firing alert's resolution is notified.
	f.q.set(down, 0)
	if err := e.Evaluate(context.Background(), t0.Add(30*sec)); err != nil {
		t.Fatal(err)
	}
	got = f2.next(t)
	if len(got) != 2 || got[0].State != dbpilot.AlertResolved || got[1].State != dbpilot.AlertResolved {
		t.Fatalf("resolutions %+v", got)
	}
	if st := f.stored(t, dbpilot.AlertFilter{State: dbpilot.AlertFiring}); len(st) != 0 {
		t.Errorf("still firing in the store: %+v", st)
	}
	if st := f.stored(t, dbpilot.AlertFilter{}); len(st) != 3 {
		t.Errorf("stored %d alerts, want 3 (one row per alert)", len(st))
	}
	f.recv.none(t)
}

// Right after a restart, and while an instance is unknown, alerts are kept
// for the grace period: discovery and collection may not have caught up.
func TestEvaluatorGrace(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1, db2)
	f.eval(t, t0)
	f.eval(t, t0.Add(10*sec))
	if got := f.recv.next(t); len(got) != 2 {
		t.Fatalf("notified %+v", got)
	}

	// Restart: no series yet, and db1 not known yet.
	f.q.set(down, 0)
	var mu sync.Mutex
	known := false
	f.opt.Grace = 30 * sec
	f.opt.Known = func(l map[string]string) bool {
		mu.Lock()
		defer mu.Unlock()
		return known || l["instance"] != "db1:3306"
	}
	e := NewEvaluator(testRules(t), f.opt)
	start := t0.Add(time.Hour)
	for _, at := range []time.Duration{0, 10 * sec, 29 * sec} {
		if err := e.Evaluate(context.Background(), start.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	if act := e.Active(); len(act) != 2 || act[0].State != dbpilot.AlertFiring || act[1].State != dbpilot.AlertFiring {
		t.Fatalf("active within the grace period: %+v", act)
	}
	f.recv.none(t)

	// db1 becomes known again and its series is back: kept, not notified.
	// db2's series stays missing: resolved when the grace period ends.
	mu.Lock()
	known = true
	mu.Unlock()
	f.q.set(down, 0, db1)
	if err := e.Evaluate(context.Background(), start.Add(30*sec)); err != nil {
		t.Fatal(err)
	}
	got := f.recv.next(t)
	if len(got) != 1 {
		t.Fatalf("notified %+v", got)
	}
	wantAlert(t, got[0], "Down", dbpilot.AlertResolved, "db2:3306")
	f.recv.none(t)

	// db1 leaves the topology: kept for the grace period, then resolved.
	mu.Lock()
	known = false
	mu.Unlock()
	if err := e.Evaluate(context.Background(), start.Add(40*sec)); err != nil {
		t.Fatal(err)
	}
	if err := e.Evaluate(context.Background(), start.Add(69*sec)); err != nil {
		t.Fatal(err)
	}
	f.recv.none(t)
	if err := e.Evaluate(context.Background(), start.Add(70*sec)); err != nil {
		t.Fatal(err)
	}
	got = f.recv.next(t)
	wantAlert(t, got[0], "Down", dbpilot.AlertResolved, "db1:3306")
	if got[0].Suppressed != ReasonLeftTopology {
		t.Errorf("reason %q", got[0].Suppressed)
	}
	if act := e.Active(); len(act) != 0 {
		t.Errorf("active %+v", act)
	}
}

// A pending alert loaded long after it went pending restarts its clock
// rather than fire on one sample.
func TestEvaluatorRestartStalePending(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1)
	f.eval(t, t0)
	e := NewEvaluator(testRules(t), f.opt)
	if err := e.Evaluate(context.Background(), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	act := e.Active()
	if len(act) != 1 || act[0].State != dbpilot.AlertPending || !act[0].ActiveAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("active %+v", act)
	}
	f.recv.none(t)
}

func TestEvaluatorQueryError(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1)
	f.eval(t, t0)
	f.eval(t, t0.Add(10*sec))
	f.recv.next(t)
	f.q.fail(down, errors.New("storage unavailable"))
	err := f.e.Evaluate(context.Background(), t0.Add(11*sec))
	if err == nil || !strings.Contains(err.Error(), "rule Down: storage unavailable") {
		t.Errorf("error %v", err)
	}
	// The alert is kept as it was, not resolved.
	if act := f.e.Active(); len(act) != 1 || act[0].State != dbpilot.AlertFiring {
		t.Errorf("active %+v", act)
	}
	f.recv.none(t)
}

func TestEvaluatorAlerts(t *testing.T) {
	f := newFixture(t)
	f.q.set(down, 0, db1)
	f.eval(t, t0)
	f.q.set(down, 7, db1)
	f.eval(t, t0.Add(sec))
	as, err := f.e.Alerts(context.Background(), dbpilot.AlertFilter{Cluster: "main"})
	if err != nil || len(as) != 1 || as[0].Value != 7 || as[0].Summary != "db1:3306 down (7)" {
		t.Errorf("Alerts: %+v, %v", as, err)
	}
	// Without a store, from memory.
	e := NewEvaluator(testRules(t), Options{Querier: f.q})
	if err := e.Evaluate(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	as, err = e.Alerts(context.Background(), dbpilot.AlertFilter{State: dbpilot.AlertPending})
	if err != nil || len(as) != 1 {
		t.Errorf("Alerts without a store: %+v, %v", as, err)
	}
	if as, _ := e.Alerts(context.Background(), dbpilot.AlertFilter{Cluster: "other"}); len(as) != 0 {
		t.Errorf("Alerts of another cluster: %+v", as)
	}
}

func TestEvaluatorRun(t *testing.T) {
	q := newFakeQuerier()
	q.set(down, 0, db1)
	recv := newReceiver(t)
	hook := NewWebhook(recv.srv.URL, time.Second)
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil))
	rules, err := ParseRules("x.yaml", []byte("rules:\n  - alert: Down\n    expr: mysql_up == 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := NewEvaluator(rules, Options{Interval: 10 * time.Millisecond, Querier: q, Notifiers: []Notifier{hook, NewLogNotifier(log)}, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	got := recv.next(t)
	wantAlert(t, got[0], "Down", dbpilot.AlertFiring, "db1:3306")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	// Run closed the webhook.
	if err := hook.Notify(context.Background(), got); err == nil {
		t.Error("webhook still open after Run")
	}
	mu.Lock()
	defer mu.Unlock()
	if s := logs.String(); !strings.Contains(s, "level=WARN msg=alert alert=Down state=firing severity=warning instance=db1:3306 cluster=main") {
		t.Errorf("log:\n%s", s)
	}
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
