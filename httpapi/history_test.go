package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// historyService is a fakeService with a topology history.
type historyService struct {
	*fakeService
	at      *dbpilot.ClusterAt
	changes []dbpilot.TopologyChange
	gotT    time.Time
	gotF    dbpilot.ChangeFilter
}

func (h *historyService) ClusterAt(_ context.Context, cluster string, t time.Time) (*dbpilot.ClusterAt, error) {
	h.gotT = t
	if cluster != "main" {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q; known clusters: main", cluster)
	}
	return h.at, nil
}

func (h *historyService) TopologyChanges(_ context.Context, f dbpilot.ChangeFilter) ([]dbpilot.TopologyChange, error) {
	h.gotF = f
	if f.Cluster != "main" {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q; known clusters: main", f.Cluster)
	}
	return h.changes, nil
}

func newHistoryEnv(t *testing.T) (*env, *historyService) {
	t.Helper()
	e := newEnv(t, testToken, "")
	k1, k2 := dbpilot.InstanceKey{Host: "db1", Port: 3306}, dbpilot.InstanceKey{Host: "db2", Port: 3306}
	stopped := dbpilot.Problem{Code: dbpilot.ProblemReplicationSQLStopped, Severity: dbpilot.SeverityCritical, Instance: k2, Message: "SQL thread stopped"}
	change := dbpilot.TopologyChange{ID: 7, Time: time.Unix(1795938600, 250000000).UTC(), Cluster: "main", Kind: dbpilot.ChangeInstance, Instance: k2,
		State:   &dbpilot.Instance{Key: k2, Reachable: true, Channels: []dbpilot.ReplicationChannel{{Source: k1, IORunning: dbpilot.IORunning}}},
		Summary: "db2:3306: SQL thread stopped"}
	h := &historyService{fakeService: e.fake,
		at: &dbpilot.ClusterAt{Name: "main", At: time.Unix(1795938600, 250000000).UTC(), Recorded: true, Since: time.Unix(1795930000, 0).UTC(),
			Primary: k1, Instances: []*dbpilot.Instance{{Key: k1, Reachable: true}, change.State}, Problems: []dbpilot.Problem{stopped},
			Alerts: []dbpilot.Alert{{ID: 3, Rule: "ReplicationSQLStopped", Severity: "critical", State: dbpilot.AlertFiring,
				Labels: map[string]string{"instance": "db2:3306", "cluster": "main"}, ActiveAt: time.Unix(1795938590, 0).UTC(), FiredAt: time.Unix(1795938595, 0).UTC()}},
			Lag: map[string]float64{"db2:3306": 4.5}, QueriesPerSecond: map[string]float64{"db1:3306": 120.25, "db2:3306": 0},
			Changes: []dbpilot.TopologyChange{change}, Prev: time.Unix(1795930000, 0).UTC()},
		changes: []dbpilot.TopologyChange{change}}
	srv := httptest.NewServer(NewServer(h, ServerOptions{Token: testToken}))
	t.Cleanup(srv.Close)
	e.srv, e.client = srv, NewClient(srv.URL, "")
	return e, h
}

func TestClusterAt(t *testing.T) {
	ctx := context.Background()
	e, h := newHistoryEnv(t)
	at := time.Date(2026, 11, 29, 7, 50, 0, 123456789, time.UTC)
	got, err := e.client.ClusterAt(ctx, "main", at)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h.at) || !h.gotT.Equal(at) {
		t.Errorf("got %+v (service asked for %s)\nwant %+v at %s", got, h.gotT, h.at, at)
	}
	// The JSON names the console and the incident report read.
	_, m := e.raw(t, "GET", "/api/clusters/main/at?t=2026-11-29T07:50:00Z", "", "")
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"alerts", "at", "changes", "instances", "lag", "name", "prev", "primary", "problems", "queries_per_second", "recorded", "since"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	for _, c := range []struct {
		t    string
		want time.Time
	}{
		{"2026-11-29T07:50:00Z", time.Date(2026, 11, 29, 7, 50, 0, 0, time.UTC)},
		{"2026-11-29T08:50:00.25%2B01:00", time.Date(2026, 11, 29, 7, 50, 0, 250000000, time.UTC)},
		{"1795938600", time.Unix(1795938600, 0)},
		{"1795938600.25", time.Unix(1795938600, 250000000)},
		{"1795938600.123456789123", time.Unix(1795938600, 123456789)},
	} {
		resp, m := e.raw(t, "GET", "/api/clusters/main/at?t="+c.t, "", "")
		if resp.StatusCode != http.StatusOK || !h.gotT.Equal(c.want) {
			t.Errorf("t=%s: status %d %v, service asked for %s, want %s", c.t, resp.StatusCode, m, h.gotT, c.want)
		}
	}
	for _, c := range []struct{ query, msg string }{
		{"", "missing t: want the instant, an RFC 3339 time such as 2026-11-29T07:50:00.25Z or Unix seconds such as 1795938600.25"},
		{"?t=yesterday", `invalid t "yesterday": want an RFC 3339 time such as 2026-11-29T07:50:00.25Z or Unix seconds such as 1795938600.25`},
		{"?t=-5", `invalid t "-5"`},
		{"?t=1795938600.", `invalid t "1795938600."`},
		{"?t=1e9", `invalid t "1e9"`},
	} {
		resp, m := e.raw(t, "GET", "/api/clusters/main/at"+c.query, "", "")
		if msg, _ := m["error"].(string); resp.StatusCode != http.StatusBadRequest || m["code"] != dbpilot.EINVALID || len(msg) < len(c.msg) || msg[:len(c.msg)] != c.msg {
			t.Errorf("%q: status %d %v, want 400 %q", c.query, resp.StatusCode, m, c.msg)
		}
	}
	_, err = e.client.ClusterAt(ctx, "nope", at)
	wantError(t, err, dbpilot.ENOTFOUND, `no cluster "nope"`)
	if resp, _ := e.raw(t, "GET", "/api/clusters/nope/at?t=1795938600", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown cluster: status %d", resp.StatusCode)
	}
}

func TestTopologyChangesAPI(t *testing.T) {
	ctx := context.Background()
	e, h := newHistoryEnv(t)
	from, to := time.Date(2026, 11, 29, 7, 0, 0, 5, time.UTC), time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	f := dbpilot.ChangeFilter{Cluster: "main", From: from, To: to, Limit: 50, Newest: true}
	got, err := e.client.TopologyChanges(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h.changes) || !h.gotF.From.Equal(from) || !h.gotF.To.Equal(to) || h.gotF.Limit != 50 || !h.gotF.Newest || h.gotF.Cluster != "main" {
		t.Errorf("got %+v with filter %+v", got, h.gotF)
	}
	if _, err := e.client.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "main"}); err != nil || !reflect.DeepEqual(h.gotF, dbpilot.ChangeFilter{Cluster: "main"}) {
		t.Errorf("no filter: %+v, %v", h.gotF, err)
	}
	h.changes = nil
	resp, _ := e.raw(t, "GET", "/api/clusters/main/changes?from=1795938600.5", "", "")
	if resp.StatusCode != http.StatusOK || !h.gotF.From.Equal(time.Unix(1795938600, 500000000)) {
		t.Errorf("from in Unix seconds: %d, %+v", resp.StatusCode, h.gotF)
	}
	if got, err := e.client.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "main"}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no changes: %#v, %v (want [] on the wire)", got, err)
	}
	for _, q := range []string{"?from=x", "?to=x", "?limit=-1", "?newest=maybe", "?from=1795938600&to=1795938599"} {
		if resp, m := e.raw(t, "GET", "/api/clusters/main/changes"+q, "", ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d %v, want 400", q, resp.StatusCode, m)
		}
	}
	_, err = e.client.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "nope"})
	wantError(t, err, dbpilot.ENOTFOUND, `no cluster "nope"`)
	_, err = e.client.TopologyChanges(ctx, dbpilot.ChangeFilter{})
	wantError(t, err, dbpilot.EINVALID, "cluster name is empty")
}

// A service without a history answers 422, and reads follow the read
// rule (a token when reads need one).
func TestHistoryUnsupportedAndProtected(t *testing.T) {
	e := newEnv(t, testToken, "")
	_, err := e.client.ClusterAt(context.Background(), "main", time.Now())
	wantError(t, err, dbpilot.EUNSUPPORTED, "keeps no topology history")
	h := &historyService{fakeService: e.fake, at: &dbpilot.ClusterAt{Name: "main"}}
	srv := httptest.NewServer(NewServer(h, ServerOptions{Token: testToken, ReadRequiresToken: true}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/api/clusters/main/at?t=1", "/api/clusters/main/changes"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
	if _, err := NewClient(srv.URL, testToken).ClusterAt(context.Background(), "main", time.Unix(1, 0)); err != nil {
		t.Errorf("with the token: %v", err)
	}
}
