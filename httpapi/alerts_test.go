package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// alertService is a fakeService that also lists alerts.
type alertService struct {
	*fakeService
	alerts []*dbpilot.Alert
	filter dbpilot.AlertFilter
}

func (a *alertService) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	a.record("Alerts")
	a.filter = f
	if a.err != nil {
		return nil, a.err
	}
	if f.Cluster != "" && f.Cluster != "main" {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q", f.Cluster)
	}
	return a.alerts, nil
}

// newAlertServer serves svc with the alerts route registered whether or not
// NewServer registers it already.
func newAlertServer(t *testing.T, svc dbpilot.ClusterService) *httptest.Server {
	s := NewServer(svc, ServerOptions{})
	s.registerAlerts()
	s.registerAlerts() // idempotent
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func TestAlerts(t *testing.T) {
	ctx := context.Background()
	svc := &alertService{fakeService: &fakeService{}, alerts: []*dbpilot.Alert{{
		ID: 3, Rule: "ReplicationIOStopped", Severity: "critical", State: dbpilot.AlertFiring,
		Labels:  map[string]string{"instance": "db2:3306", "cluster": "main", "channel_name": ""},
		Summary: "replication IO thread stopped on db2:3306", Value: 0,
		ActiveAt: time.Unix(100, 1).UTC(), FiredAt: time.Unix(110, 2).UTC(),
		Suppressed: "primary db1:3306 of cluster main is down",
	}}}
	srv := newAlertServer(t, svc)
	c := NewClient(srv.URL, "")

	since := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	got, err := c.Alerts(ctx, dbpilot.AlertFilter{Cluster: "main", State: dbpilot.AlertFiring, Since: since, Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, svc.alerts) {
		t.Errorf("alerts %+v\nwant %+v", got[0], svc.alerts[0])
	}
	if want := (dbpilot.AlertFilter{Cluster: "main", State: dbpilot.AlertFiring, Since: since, Limit: 7}); !reflect.DeepEqual(svc.filter, want) {
		t.Errorf("filter %+v, want %+v", svc.filter, want)
	}

	// None: an empty list, not null.
	svc.alerts = nil
	e := &env{srv: srv}
	resp, _ := e.raw(t, http.MethodGet, "/api/alerts", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	got, err = c.Alerts(ctx, dbpilot.AlertFilter{})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("no alerts: %#v, %v", got, err)
	}

	_, err = c.Alerts(ctx, dbpilot.AlertFilter{Cluster: "nope"})
	wantError(t, err, dbpilot.ENOTFOUND, `no cluster "nope"`)
	_, err = c.Alerts(ctx, dbpilot.AlertFilter{State: "hot"})
	wantError(t, err, dbpilot.EINVALID, `invalid state "hot"`)
	for _, q := range []string{"limit=-1", "limit=x", "since=yesterday"} {
		resp, body := e.raw(t, http.MethodGet, "/api/alerts?"+q, "", "")
		if resp.StatusCode != http.StatusBadRequest || body["code"] != dbpilot.EINVALID {
			t.Errorf("%s: %d %v", q, resp.StatusCode, body)
		}
	}
	resp, body := e.raw(t, http.MethodPost, "/api/alerts", "", "")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d %v", resp.StatusCode, body)
	}
}

func TestAlertsUnsupported(t *testing.T) {
	srv := newAlertServer(t, &fakeService{})
	_, err := NewClient(srv.URL, "").Alerts(context.Background(), dbpilot.AlertFilter{})
	wantError(t, err, dbpilot.EUNSUPPORTED, "does not evaluate alerts")
}
