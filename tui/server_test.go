package tui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/httpapi"
)

// fakeServe answers like `dbpilot serve` from the recorded answers in
// testdata/server. It records the PromQL queries asked.
type fakeServe struct {
	t         *testing.T
	noMetrics bool // /api/metrics/query answers 404 (an older serve)
	noAlerts  bool // /api/alerts answers 404
	// alertsStatus, when set, is /api/alerts' error status, with
	// alertsCode as the API's error code.
	alertsStatus int
	alertsCode   string
	failQuery    string
	// queriesStatus, when set, is /api/queries' error status, with
	// queriesCode as the API's error code.
	queriesStatus int
	queriesCode   string
	mu            sync.Mutex
	queries       []string
	queryReports  []string // the query strings of GET /api/queries
	authHeader    string
}

func (f *fakeServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	file := ""
	f.mu.Lock()
	f.authHeader = r.Header.Get("Authorization")
	f.mu.Unlock()
	switch r.URL.Path {
	case "/api/clusters":
		file = "clusters.json"
	case "/api/alerts":
		if f.alertsStatus != 0 {
			w.WriteHeader(f.alertsStatus)
			fmt.Fprintf(w, `{"code":%q,"error":"alerts: %s"}`, f.alertsCode, http.StatusText(f.alertsStatus))
			return
		}
		if f.noAlerts || r.URL.Query().Get("state") != "firing" {
			http.NotFound(w, r)
			return
		}
		file = "alerts.json"
	case "/api/queries":
		f.mu.Lock()
		f.queryReports = append(f.queryReports, r.URL.RawQuery)
		f.mu.Unlock()
		if f.queriesStatus != 0 {
			w.WriteHeader(f.queriesStatus)
			fmt.Fprintf(w, `{"code":%q,"error":"queries: %s"}`, f.queriesCode, http.StatusText(f.queriesStatus))
			return
		}
		file = "queries.json"
	case "/api/metrics/query":
		if f.noMetrics {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"code":"not_found","error":"no API endpoint GET /api/metrics/query"}`))
			return
		}
		expr := r.URL.Query().Get("expr")
		f.mu.Lock()
		f.queries = append(f.queries, expr)
		f.mu.Unlock()
		if f.failQuery != "" && strings.Contains(expr, f.failQuery) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
			return
		}
		for key, name := range map[string]string{
			"questions": "questions.json", "commands_total": "commands.json", "innodb_row_ops_total": "row_ops.json",
			"handlers_total": "handlers.json", "flow_control": "flow_control.json", "__name__": "gauges.json",
			"rows_read": "rows_read.json",
		} {
			if strings.Contains(expr, key) {
				file = name
			}
		}
	}
	if file == "" {
		f.t.Errorf("unexpected request %s", r.URL)
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(filepath.Join("testdata", "server", file))
	if err != nil {
		f.t.Error(err)
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func pollServer(t *testing.T, fs *fakeServe, token string, only ...dbpilot.InstanceKey) *Frame {
	t.Helper()
	ts := httptest.NewServer(fs)
	t.Cleanup(ts.Close)
	src := NewServer(httpapi.NewClient(ts.URL+"/", token), only)
	defer src.Close()
	f, err := src.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.Time = fixedTime
	f.Source = "server http://127.0.0.1:7070"
	return f
}

func TestServerSource(t *testing.T) {
	fs := &fakeServe{t: t}
	f := pollServer(t, fs, "tok")
	if fs.authHeader != "Bearer tok" {
		t.Errorf("Authorization %q", fs.authHeader)
	}
	if len(f.Rows) != 3 || len(f.Notes) != 0 || !f.AlertsKnown || len(f.Alerts) != 1 {
		t.Fatalf("frame: %d rows, notes %q, %d alerts", len(f.Rows), f.Notes, len(f.Alerts))
	}
	p, r2, r3 := f.Rows[0], f.Rows[1], f.Rows[2]
	if p.Role != RolePrimary || r2.Role != RoleReplica || r3.Role != RoleReplica {
		t.Errorf("roles %q %q %q", p.Role, r2.Role, r3.Role)
	}
	checks := []struct {
		name string
		got  Num
		want float64
	}{
		{"primary qps", p.QPS, 152.4},
		{"primary select", p.Select, 40.6},
		{"primary update", p.Update, 8.4},
		{"primary threads connected", p.ThreadsConnected, 14},
		{"primary dirty %", p.DirtyPct, 100 * 405 / 2028.0},                   // data+free+misc
		{"primary checkpoint %", p.CheckpointPct, 100 * 8388608 / 33554432.0}, // single log
		{"primary rows read (Rows_read)", p.RowsRead, 1840.5},
		{"replica rows read (handlers, no Rows_read)", r2.RowsRead, 0},
		{"primary rows inserted (handlers)", p.RowsInserted, 12},
		{"primary history", p.HistoryLength, 212},
		{"primary pending writes", p.PendingWrites, 1},
		{"replica heartbeat lag", r2.Lag, 0.4},
		{"lagging replica heartbeat lag", r3.Lag, 7.2},
	}
	for _, c := range checks {
		if !c.got.Valid || !near(c.got.V, c.want) {
			t.Errorf("%s = %+v, want %v", c.name, c.got, c.want)
		}
	}
	if p.Lag.Valid || p.LagNull {
		t.Errorf("primary has a lag: %+v", p.Lag)
	}
	if r3.Alerts != 1 || p.Alerts != 0 {
		t.Errorf("alerts per row: %d %d", p.Alerts, r3.Alerts)
	}
	if len(r3.Channels) != 1 || r3.Channels[0].Source != "127.0.0.1:16501" || r3.Channels[0].RelayLogSpace != N(5242880) {
		t.Errorf("channels %+v", r3.Channels)
	}
	if r2.GTID != "0-16501-43" {
		t.Errorf("gtid %q", r2.GTID)
	}
	for _, q := range fs.queries {
		if strings.Contains(q, "rate(") && !strings.Contains(q, "[5s]") {
			t.Errorf("rate query without a 5s window: %s", q)
		}
	}
	golden(t, "server-overview.golden", Render(Screen{Frame: f, View: ViewOverview, Width: 160}))
	golden(t, "server-replication.golden", Render(Screen{Frame: f, View: ViewReplication, Width: 160}))
	golden(t, "server-innodb.golden", Render(Screen{Frame: f, View: ViewInnoDB, Width: 160}))
	var b strings.Builder
	for _, l := range Lines(f) {
		b.WriteString(l + "\n")
	}
	golden(t, "server-lines.golden", b.String())
}

func TestServerSourceOnly(t *testing.T) {
	f := pollServer(t, &fakeServe{t: t}, "", dbpilot.InstanceKey{Host: "localhost", Port: 16503})
	if len(f.Rows) != 1 || f.Rows[0].Instance != "127.0.0.1:16503" || f.Rows[0].Role != RoleReplica {
		t.Fatalf("rows %+v", f.Rows)
	}
}

// TestServerSourceOlderServe: a serve without the metrics and alerts
// endpoints still shows instances, roles and replication.
func TestServerSourceOlderServe(t *testing.T) {
	f := pollServer(t, &fakeServe{t: t, noMetrics: true, noAlerts: true}, "")
	if len(f.Rows) != 3 || f.Rows[0].Role != RolePrimary || f.Rows[0].QPS.Valid {
		t.Fatalf("rows %+v", f.Rows)
	}
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "no /api/metrics/query") {
		t.Errorf("notes %q", f.Notes)
	}
	if len(f.Alerts) != 0 || f.AlertsKnown {
		t.Errorf("alerts %+v known %v", f.Alerts, f.AlertsKnown)
	}
	if strings.Contains(Render(Screen{Frame: f}), "ALERTS") {
		t.Errorf("alert column without an alerts endpoint")
	}
	// Seconds_Behind_Master from the cluster view stands in for the heartbeat.
	if r3 := f.Rows[2]; !r3.Lag.Valid || r3.Lag.V != 7 {
		t.Errorf("lag %+v", r3.Lag)
	}
}

// TestServerSourceAlertErrors: a serve that evaluates no alerts (422
// unsupported) shows no alert column, as one without the endpoint does; any
// other failure is a note.
func TestServerSourceAlertErrors(t *testing.T) {
	f := pollServer(t, &fakeServe{t: t, alertsStatus: http.StatusUnprocessableEntity, alertsCode: dbpilot.EUNSUPPORTED}, "")
	if f.AlertsKnown || len(f.Notes) != 0 || len(f.Rows) != 3 {
		t.Errorf("unsupported: known %v, notes %q", f.AlertsKnown, f.Notes)
	}
	f = pollServer(t, &fakeServe{t: t, alertsStatus: http.StatusInternalServerError, alertsCode: dbpilot.EINTERNAL}, "")
	if f.AlertsKnown || len(f.Notes) != 1 || f.Notes[0] != "alerts: alerts: Internal Server Error" {
		t.Errorf("failure: known %v, notes %q", f.AlertsKnown, f.Notes)
	}
}

func TestServerSourceQueryError(t *testing.T) {
	f := pollServer(t, &fakeServe{t: t, failQuery: "questions"}, "")
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "parse error") {
		t.Errorf("notes %q", f.Notes)
	}
	if f.Rows[0].QPS.Valid || !f.Rows[0].Select.Valid {
		t.Errorf("qps %+v select %+v", f.Rows[0].QPS, f.Rows[0].Select)
	}
}

func TestServerSourceDown(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	src := NewServer(httpapi.NewClient(url, ""), nil)
	_, err := src.Poll(context.Background())
	if err == nil || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Fatalf("Poll of a stopped serve: %v", err)
	}
}
