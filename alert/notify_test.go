package alert

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func testAlert(state string) []*dbpilot.Alert {
	return []*dbpilot.Alert{{ID: 1, Rule: "Down", Severity: "critical", State: state,
		Labels: map[string]string{"instance": "db1:3306", "cluster": "main"}, Summary: "db1:3306 down", ActiveAt: t0}}
}

func TestWebhookRetry(t *testing.T) {
	old := webhookRetryDelay
	webhookRetryDelay = 10 * time.Millisecond
	defer func() { webhookRetryDelay = old }()
	var calls atomic.Int32
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		got <- b.String()
	}))
	defer srv.Close()
	w := NewWebhook(srv.URL, time.Second)
	if err := w.Notify(context.Background(), testAlert(dbpilot.AlertFiring)); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-got:
		for _, want := range []string{`{"alerts":[{"id":1,"rule":"Down","severity":"critical","state":"firing","labels":{"cluster":"main","instance":"db1:3306"},"summary":"db1:3306 down"`, `"active_at":"2026-01-02T03:04:05Z"`} {
			if !strings.Contains(body, want) {
				t.Errorf("body %s\nwant %s", body, want)
			}
		}
		if strings.Contains(body, "fired_at") {
			t.Errorf("zero times sent: %s", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered after a retry")
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// A receiver that hangs neither blocks Notify nor Close for long, and a full
// queue drops.
func TestWebhookHangingReceiver(t *testing.T) {
	old := webhookRetryDelay
	webhookRetryDelay = 10 * time.Millisecond
	defer func() { webhookRetryDelay = old }()
	arrived := make(chan struct{}, 1000)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var logs bytes.Buffer
	var mu sync.Mutex
	w := NewWebhook(srv.URL, 200*time.Millisecond)
	w.SetLogger(slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil)))
	start := time.Now()
	if err := w.Notify(context.Background(), testAlert(dbpilot.AlertFiring)); err != nil {
		t.Fatal(err)
	}
	<-arrived // the first is in flight
	for i := 0; i < WebhookQueue; i++ {
		if err := w.Notify(context.Background(), testAlert(dbpilot.AlertFiring)); err != nil {
			t.Fatalf("notify %d: %v", i, err)
		}
	}
	err := w.Notify(context.Background(), testAlert(dbpilot.AlertResolved))
	if err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("full queue: %v", err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("Notify took %s", d)
	}
	start = time.Now()
	err = w.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s", d)
	}
	if err == nil || !strings.Contains(err.Error(), "not sent at close") {
		t.Errorf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "alert webhook") {
		t.Errorf("failure not logged:\n%s", logs.String())
	}
}

func TestWebhookIdleGoroutineExits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	w := NewWebhook(srv.URL, time.Second)
	if err := w.Notify(context.Background(), testAlert(dbpilot.AlertFiring)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sender still running with nothing to send")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

func TestLogNotifier(t *testing.T) {
	var b bytes.Buffer
	n := NewLogNotifier(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	as := append(testAlert(dbpilot.AlertFiring), testAlert(dbpilot.AlertResolved)...)
	as[1].Suppressed = ReasonLeftTopology
	if err := n.Notify(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], `level=ERROR msg=alert alert=Down state=firing severity=critical instance=db1:3306 cluster=main summary="db1:3306 down"`) ||
		!strings.Contains(lines[1], `level=INFO msg=alert alert=Down state=resolved`) || !strings.Contains(lines[1], `reason="the instance left the topology"`) {
		t.Errorf("log:\n%s", b.String())
	}
}

// Watchdog events go to the same receiver as a payload of their own, in the
// order queued, and a full queue drops them without blocking.
func TestWebhookWatchdogEvents(t *testing.T) {
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		got <- b.String()
	}))
	defer srv.Close()
	w := NewWebhook(srv.URL, time.Second)
	ev := WatchdogEvent{Time: t0, Instance: "db1:3306", Cluster: "main", Rule: "runaway", Action: "kill_query", Decision: "kill",
		Result: "killed", Session: WatchdogSession{ID: 7, User: "app", Host: "10.0.0.1:5000", DB: "shop", Command: "Query",
			State: "User sleep", Info: "SELECT SLEEP(100)", TimeSeconds: 2.5}, Reasons: []string{"busy 2.5s ≥ 2s"}}
	dry := ev
	dry.Decision, dry.Result = "dry_run", ""
	if err := w.NotifyWatchdog(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.NotifyWatchdog(context.Background(), []WatchdogEvent{ev, dry}); err != nil {
		t.Fatal(err)
	}
	if err := w.Notify(context.Background(), testAlert(dbpilot.AlertFiring)); err != nil {
		t.Fatal(err)
	}
	want := `{"watchdog_events":[{"time":"2026-01-02T03:04:05Z","instance":"db1:3306","cluster":"main","rule":"runaway","action":"kill_query","decision":"kill","result":"killed",` +
		`"session":{"id":7,"user":"app","host":"10.0.0.1:5000","db":"shop","command":"Query","state":"User sleep","info":"SELECT SLEEP(100)","time_s":2.5},"reasons":["busy 2.5s ≥ 2s"]},` +
		`{"time":"2026-01-02T03:04:05Z","instance":"db1:3306","cluster":"main","rule":"runaway","action":"kill_query","decision":"dry_run",`
	for i, prefix := range []string{want, `{"alerts":[`} {
		select {
		case body := <-got:
			if !strings.HasPrefix(body, prefix) {
				t.Errorf("body %d: %s\nwant prefix %s", i, body, prefix)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("body %d not delivered", i)
		}
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if err := w.NotifyWatchdog(context.Background(), []WatchdogEvent{ev}); err == nil || !strings.Contains(err.Error(), "1 watchdog events dropped") {
		t.Errorf("after Close: %v", err)
	}
}
