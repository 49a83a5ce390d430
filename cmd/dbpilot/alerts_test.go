package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// alertsServer answers GET /api/alerts from a list, as serve would.
func alertsServer(t *testing.T, alerts []*dbpilot.Alert) (*httptest.Server, *[]string) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/alerts" {
			http.NotFound(w, r)
			return
		}
		queries = append(queries, r.URL.RawQuery)
		q := r.URL.Query()
		out := []*dbpilot.Alert{}
		for _, a := range alerts {
			if (q.Get("state") == "" || a.State == q.Get("state")) && (q.Get("cluster") == "" || a.Labels["cluster"] == q.Get("cluster")) {
				out = append(out, a)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &queries
}

func runAlerts(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, log: slog.New(slog.DiscardHandler)}
	cmd := a.alertsCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestAlertsCommand(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	alerts := []*dbpilot.Alert{
		{ID: 1, Rule: "ReplicationIOStopped", Severity: "critical", State: dbpilot.AlertFiring,
			Labels:  map[string]string{"instance": "db2:3306", "cluster": "main", "role": "replica", "channel_name": "a"},
			Summary: "replication IO thread stopped on db2:3306", ActiveAt: base, FiredAt: base.Add(10 * time.Second),
			Suppressed: "primary db1:3306 of cluster main is down"},
		{ID: 2, Rule: "ReplicationLagHigh", Severity: "warning", State: dbpilot.AlertPending,
			Labels:  map[string]string{"instance": "db3:3306", "cluster": "main"},
			Summary: "db3:3306 lags\n45s behind", ActiveAt: base.Add(time.Minute)},
		{ID: 3, Rule: "MySQLRestarted", Severity: "info", State: dbpilot.AlertResolved,
			Labels:  map[string]string{"instance": "db1:3306", "cluster": "other"},
			Summary: "db1:3306 restarted", ActiveAt: base.Add(-time.Hour), FiredAt: base.Add(-time.Hour), ResolvedAt: base.Add(-55 * time.Minute)},
	}
	srv, queries := alertsServer(t, alerts)
	local := func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

	// Default: active (firing and pending), newest first; a firing alert
	// exits 1.
	out, err := runAlerts(t, "--server", srv.URL)
	if !errors.Is(err, errProblemsFound) {
		t.Errorf("error %v, want problems found", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "STATE") {
		t.Fatalf("output:\n%s", out)
	}
	for _, want := range []string{"pending", "warning", "ReplicationLagHigh", "main", "db3:3306", local(base.Add(time.Minute)), "db3:3306 lags 45s behind"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("line %q lacks %q", lines[1], want)
		}
	}
	for _, want := range []string{"firing", "critical", "ReplicationIOStopped", "db2:3306", local(base.Add(10 * time.Second)),
		"replication IO thread stopped on db2:3306 {channel_name=a} [suppressed: primary db1:3306 of cluster main is down]"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("line %q lacks %q", lines[2], want)
		}
	}
	if strings.Join(*queries, " ") != "limit=50&state=firing limit=50&state=pending" {
		t.Errorf("queries %v", *queries)
	}

	// A cluster, resolved, JSON: no firing alert, exit 0.
	*queries = nil
	out, err = runAlerts(t, "other", "--server", srv.URL, "--state", "resolved", "--json", "--limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	var got []*dbpilot.Alert
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].ID != 3 {
		t.Errorf("JSON %s (%v)", out, err)
	}
	if strings.Join(*queries, " ") != "cluster=other&limit=5&state=resolved" {
		t.Errorf("queries %v", *queries)
	}

	out, err = runAlerts(t, "nosuch", "--server", srv.URL)
	if err != nil || strings.TrimSpace(out) != "no alerts" {
		t.Errorf("no alerts: %v %q", err, out)
	}
	out, err = runAlerts(t, "--server", srv.URL, "--state", "all")
	if !errors.Is(err, errProblemsFound) || strings.Count(out, "\n") != 4 || !strings.Contains(out, "resolved  info") {
		t.Errorf("all: %v\n%s", err, out)
	}

	if _, err := runAlerts(t, "--server", srv.URL, "--state", "burning"); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("bad state: %v", err)
	}
	if _, err := runAlerts(t, "a", "b", "--server", srv.URL); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("two clusters: %v", err)
	}
	if _, err := runAlerts(t); err == nil || !strings.Contains(err.Error(), "--server URL") {
		t.Errorf("no target: %v", err)
	}
}
