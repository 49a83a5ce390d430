package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// fakeService is an in-memory dbpilot.ClusterService that records what it
// was asked.
type fakeService struct {
	mu         sync.Mutex
	health     *dbpilot.Health
	clusters   []*dbpilot.ClusterStatus
	recoveries []*dbpilot.Recovery
	audit      []dbpilot.AuditEvent
	// err, when set, is returned by every method; opRec is returned with it
	// by operations.
	err   error
	opRec *dbpilot.Recovery

	calls      []string
	recFilter  dbpilot.RecoveryFilter
	audFilter  dbpilot.AuditFilter
	cluster    string
	replica    dbpilot.InstanceKey
	opt        dbpilot.OperationOptions
	by, commnt string
	source     string // of the last operation
}

func (f *fakeService) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeService) Health(ctx context.Context) (*dbpilot.Health, error) {
	f.record("Health")
	if f.err != nil {
		return nil, f.err
	}
	return f.health, nil
}

func (f *fakeService) Clusters(ctx context.Context) ([]*dbpilot.ClusterStatus, error) {
	f.record("Clusters")
	if f.err != nil {
		return nil, f.err
	}
	return f.clusters, nil
}

func (f *fakeService) ClusterStatus(ctx context.Context, name string) (*dbpilot.ClusterStatus, error) {
	f.record("ClusterStatus")
	f.cluster = name
	if f.err != nil {
		return nil, f.err
	}
	for _, c := range f.clusters {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q; known clusters: main", name)
}

func (f *fakeService) Recoveries(ctx context.Context, flt dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
	f.record("Recoveries")
	f.recFilter = flt
	if f.err != nil {
		return nil, f.err
	}
	return f.recoveries, nil
}

func (f *fakeService) AuditEvents(ctx context.Context, flt dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error) {
	f.record("AuditEvents")
	f.audFilter = flt
	if f.err != nil {
		return nil, f.err
	}
	return f.audit, nil
}

func (f *fakeService) op(kind, cluster string, replica dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	f.record(kind)
	f.cluster, f.replica, f.opt = cluster, replica, opt
	if f.err != nil {
		return f.opRec, f.err
	}
	r := &dbpilot.Recovery{ID: 42, Cluster: cluster, Kind: kind, NewPrimary: opt.To, Started: time.Unix(100, 5).UTC()}
	if opt.DryRun {
		r.ID, r.Plan = 0, "dry run: would "+kind
	}
	return r, nil
}

func (f *fakeService) Failover(ctx context.Context, cluster string, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	return f.op(dbpilot.RecoveryFailoverManual, cluster, dbpilot.InstanceKey{}, opt)
}

func (f *fakeService) Switchover(ctx context.Context, cluster string, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	return f.op(dbpilot.RecoverySwitchover, cluster, dbpilot.InstanceKey{}, opt)
}

func (f *fakeService) Relocate(ctx context.Context, replica dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	f.source = dbpilot.SourceOf(ctx)
	return f.op(dbpilot.RecoveryRelocate, "", replica, opt)
}

func (f *fakeService) Rejoin(ctx context.Context, cluster string, instance dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	f.source = dbpilot.SourceOf(ctx)
	return f.op(dbpilot.RecoveryRejoin, cluster, instance, opt)
}

func (f *fakeService) Ack(ctx context.Context, cluster, by, comment string) (int, error) {
	f.record("Ack")
	f.cluster, f.by, f.commnt = cluster, by, comment
	if f.err != nil {
		return 0, f.err
	}
	return 3, nil
}

var _ dbpilot.ClusterService = (*fakeService)(nil)

const testToken = "s3cret-token"

type env struct {
	fake   *fakeService
	srv    *httptest.Server
	client *Client
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T, serverToken, clientToken string) *env {
	t.Helper()
	fake := &fakeService{
		health: &dbpilot.Health{Status: "ok", Started: time.Unix(1000, 1).UTC(), Clusters: 2},
		clusters: []*dbpilot.ClusterStatus{
			{
				Name: "main", State: dbpilot.ClusterOK, Primary: dbpilot.InstanceKey{Host: "db1", Port: 3306}, AutoFailover: true,
				Instances: []*dbpilot.Instance{{Key: dbpilot.InstanceKey{Host: "db1", Port: 3306}, Reachable: true,
					ObservedAt: time.Unix(2000, 7).UTC(), Flavor: dbpilot.FlavorMariaDB,
					Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6, Raw: "10.11.6-MariaDB"}, Uptime: time.Hour}},
				Problems: []dbpilot.Problem{{Code: dbpilot.ProblemReplicaLagging, Severity: dbpilot.SeverityWarning,
					Instance: dbpilot.InstanceKey{Host: "db2", Port: 3306}, Message: "lag 30s", Detail: map[string]string{"lag": "30"}}},
				ObservedAt:   time.Unix(2000, 0).UTC(),
				BlockedUntil: time.Unix(3000, 0).UTC(),
				LastRecovery: &dbpilot.Recovery{ID: 1, Cluster: "main", Kind: dbpilot.RecoverySwitchover, Started: time.Unix(1500, 0).UTC(), Success: true},
			},
			{Name: "odd/name with space", State: dbpilot.ClusterUnknown, Instances: []*dbpilot.Instance{}, Problems: []dbpilot.Problem{}},
		},
		recoveries: []*dbpilot.Recovery{{
			ID: 9, Cluster: "main", Kind: dbpilot.RecoveryFailoverAuto,
			OldPrimary: dbpilot.InstanceKey{Host: "db1", Port: 3306}, NewPrimary: dbpilot.InstanceKey{Host: "::1", Port: 3307},
			DetectedAt: time.Unix(10, 1).UTC(), Started: time.Unix(11, 2).UTC(), Ended: time.Unix(12, 3).UTC(),
			Success: true, Plan: "promote", LostReplicas: []dbpilot.InstanceKey{{Host: "db4", Port: 3306}},
			Acked: true, AckedAt: time.Unix(13, 4).UTC(), AckedBy: "alice", AckComment: "ok",
		}},
		audit: []dbpilot.AuditEvent{{ID: 1, Time: time.Unix(10, 5).UTC(), Cluster: "main", RecoveryID: 9,
			Instance: dbpilot.InstanceKey{Host: "db2", Port: 3306}, Event: "promote", Message: "promoted", Detail: map[string]string{"k": "v"}}},
	}
	logs := &syncBuffer{}
	h := NewServer(fake, ServerOptions{
		Token:   serverToken,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version: "1.2.3",
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{fake: fake, srv: srv, client: NewClient(srv.URL, clientToken), logs: logs}
}

// raw sends a request without the Client and decodes the JSON answer.
func (e *env) raw(t *testing.T, method, path, token, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(data) > 0 && data[0] == '{' {
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, data, err)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q (body %q)", method, path, ct, data)
	}
	return resp, m
}

func wantError(t *testing.T, err error, code, msgPart string) {
	t.Helper()
	var e *dbpilot.Error
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *dbpilot.Error", err, err)
	}
	if e.Code != code || !strings.Contains(e.Message, msgPart) {
		t.Fatalf("error code %q message %q; want %q containing %q", e.Code, e.Message, code, msgPart)
	}
}

func TestReads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testToken, "") // reads need no token

	h, err := e.client.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := *e.fake.health
	want.Version = "1.2.3"
	if !reflect.DeepEqual(h, &want) {
		t.Errorf("health %+v, want %+v", h, want)
	}

	cs, err := e.client.Clusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cs, e.fake.clusters) {
		t.Errorf("clusters:\n got %+v\nwant %+v", cs, e.fake.clusters)
	}
	for _, want := range e.fake.clusters {
		c, err := e.client.ClusterStatus(ctx, want.Name)
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		if !reflect.DeepEqual(c, want) || e.fake.cluster != want.Name {
			t.Errorf("cluster %q (service saw %q):\n got %+v\nwant %+v", want.Name, e.fake.cluster, c, want)
		}
	}

	rs, err := e.client.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "main", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rs, e.fake.recoveries) {
		t.Errorf("recoveries:\n got %+v\nwant %+v", rs, e.fake.recoveries)
	}
	if e.fake.recFilter != (dbpilot.RecoveryFilter{Cluster: "main", Limit: 5}) {
		t.Errorf("recovery filter %+v", e.fake.recFilter)
	}

	since := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	es, err := e.client.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: "main", RecoveryID: 9, Since: since, Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(es, e.fake.audit) {
		t.Errorf("audit:\n got %+v\nwant %+v", es, e.fake.audit)
	}
	if f := e.fake.audFilter; f.Cluster != "main" || f.RecoveryID != 9 || !f.Since.Equal(since) || f.Limit != 7 {
		t.Errorf("audit filter %+v", f)
	}
	if _, err := e.client.AuditEvents(ctx, dbpilot.AuditFilter{}); err != nil || !reflect.DeepEqual(e.fake.audFilter, dbpilot.AuditFilter{}) {
		t.Errorf("empty audit filter %+v %v", e.fake.audFilter, err)
	}

	// Empty lists are [] on the wire, not null.
	e.fake.recoveries = nil
	resp, err := http.Get(e.srv.URL + "/api/recoveries")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("empty recoveries body %q, want []", b)
	}
}

func TestUnknownCluster(t *testing.T) {
	e := newEnv(t, testToken, testToken)
	_, err := e.client.ClusterStatus(context.Background(), "nope")
	wantError(t, err, dbpilot.ENOTFOUND, `no cluster "nope"; known clusters: main`)
	if err.Error() != `no cluster "nope"; known clusters: main` {
		t.Errorf("client error %q is not the server's one line", err)
	}
	resp, m := e.raw(t, "GET", "/api/clusters/nope", "", "")
	if resp.StatusCode != http.StatusNotFound || m["code"] != "not_found" || m["error"] != `no cluster "nope"; known clusters: main` {
		t.Errorf("status %d body %v", resp.StatusCode, m)
	}
	// An operation on an unknown cluster is a 404 too.
	e.fake.err = dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q", "nope")
	_, err = e.client.Failover(context.Background(), "nope", dbpilot.OperationOptions{})
	wantError(t, err, dbpilot.ENOTFOUND, `no cluster "nope"`)
}

func TestOperations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testToken, testToken)
	for _, dry := range []bool{true, false} {
		r, err := e.client.Failover(ctx, "main", dbpilot.OperationOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if e.fake.cluster != "main" || e.fake.opt.DryRun != dry || r.Kind != dbpilot.RecoveryFailoverManual || (r.Plan != "") != dry {
			t.Errorf("failover dry=%v: service saw %q %+v; got %+v", dry, e.fake.cluster, e.fake.opt, r)
		}
	}

	to := dbpilot.InstanceKey{Host: "db2", Port: 3307}
	if _, err := e.client.Failover(ctx, "main", dbpilot.OperationOptions{To: to}); err != nil || e.fake.opt.To != to {
		t.Errorf("failover with a target: service saw %+v (%v)", e.fake.opt, err)
	}
	r, err := e.client.Switchover(ctx, "odd/name with space", dbpilot.OperationOptions{DryRun: true, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if e.fake.cluster != "odd/name with space" || e.fake.opt != (dbpilot.OperationOptions{DryRun: true, To: to}) || r.NewPrimary != to {
		t.Errorf("switchover: service saw %q %+v; got %+v", e.fake.cluster, e.fake.opt, r)
	}
	if _, err := e.client.Switchover(ctx, "main", dbpilot.OperationOptions{}); err != nil || !e.fake.opt.To.IsZero() {
		t.Errorf("switchover without target: %+v %v", e.fake.opt, err)
	}
	bounded := dbpilot.OperationOptions{MaxLag: 30 * time.Second, DrainTimeout: 1500 * time.Millisecond}
	if _, err := e.client.Switchover(ctx, "main", bounded); err != nil || e.fake.opt != bounded {
		t.Errorf("switchover with bounds: service saw %+v (%v)", e.fake.opt, err)
	}
	resp, body := e.raw(t, "POST", "/api/clusters/main/switchover", testToken, `{"max_lag":"soon"}`)
	if resp.StatusCode != 400 || body["error"] != `invalid max_lag "soon": want a duration such as 10s` {
		t.Errorf("switchover with a bad max_lag: %d %v", resp.StatusCode, body)
	}
	if _, err := e.client.Relocate(ctx, dbpilot.InstanceKey{Host: "db3", Port: 3306}, dbpilot.OperationOptions{To: to, MaxLag: time.Minute}); err != nil || e.fake.opt.MaxLag != time.Minute {
		t.Errorf("relocate with max lag: service saw %+v (%v)", e.fake.opt, err)
	}

	replica := dbpilot.InstanceKey{Host: "::1", Port: 3310}
	r, err = e.client.Relocate(ctx, replica, dbpilot.OperationOptions{To: to})
	if err != nil {
		t.Fatal(err)
	}
	if e.fake.replica != replica || e.fake.opt != (dbpilot.OperationOptions{To: to}) || r.ID != 42 {
		t.Errorf("relocate: service saw %v %+v; got %+v", e.fake.replica, e.fake.opt, r)
	}

	old := dbpilot.InstanceKey{Host: "db1", Port: 3306}
	for _, o := range []dbpilot.OperationOptions{{DryRun: true}, {Reclone: true}, {}} {
		r, err = e.client.Rejoin(ctx, "odd/name with space", old, o)
		if err != nil || r.Kind != dbpilot.RecoveryRejoin {
			t.Fatalf("rejoin %+v: %v %+v", o, err, r)
		}
		if e.fake.cluster != "odd/name with space" || e.fake.replica != old || e.fake.opt != o || e.fake.source != dbpilot.SourceCLI {
			t.Errorf("rejoin %+v: service saw %q %v %+v from %q", o, e.fake.cluster, e.fake.replica, e.fake.opt, e.fake.source)
		}
	}
	if _, err := e.client.Rejoin(ctx, "", old, dbpilot.OperationOptions{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("rejoin without a cluster: %v", err)
	}

	n, err := e.client.Ack(ctx, "main", "alice", "checked the new primary")
	if err != nil || n != 3 {
		t.Fatalf("ack: %d %v", n, err)
	}
	if e.fake.cluster != "main" || e.fake.by != "alice" || e.fake.commnt != "checked the new primary" {
		t.Errorf("ack: service saw %q %q %q", e.fake.cluster, e.fake.by, e.fake.commnt)
	}
	resp, m := e.raw(t, "POST", "/api/clusters/main/ack", testToken, `{"by":"bob"}`)
	if resp.StatusCode != 200 || m["acked"] != float64(3) {
		t.Errorf("raw ack: %d %v", resp.StatusCode, m)
	}
	// An empty body is an empty request.
	resp, _ = e.raw(t, "POST", "/api/clusters/main/failover", testToken, "")
	if resp.StatusCode != 200 || e.fake.opt.DryRun {
		t.Errorf("empty body: %d %+v", resp.StatusCode, e.fake.opt)
	}
}

func TestAuth(t *testing.T) {
	ctx := context.Background()
	writes := []struct{ path, body string }{
		{"/api/clusters/main/failover", `{"dry_run":true}`},
		{"/api/clusters/main/switchover", `{"dry_run":true}`},
		{"/api/relocate", `{"replica":"db2:3306","below":"db3:3306","dry_run":true}`},
		{"/api/clusters/main/rejoin", `{"instance":"db1:3306","dry_run":true}`},
		{"/api/clusters/main/ack", `{"by":"x"}`},
	}

	t.Run("missing and wrong token", func(t *testing.T) {
		e := newEnv(t, testToken, "")
		_, err := e.client.Failover(ctx, "main", dbpilot.OperationOptions{DryRun: true})
		wantError(t, err, dbpilot.EAUTH, "missing API token")
		e.client = NewClient(e.srv.URL, "wrong")
		_, err = e.client.Ack(ctx, "main", "x", "")
		wantError(t, err, dbpilot.EAUTH, "wrong API token")
		for _, w := range writes {
			for _, tok := range []string{"", "wrong", testToken + "x", "s3cret"} {
				resp, m := e.raw(t, "POST", w.path, tok, w.body)
				if resp.StatusCode != http.StatusUnauthorized || m["code"] != dbpilot.EAUTH || m["error"] == "" {
					t.Errorf("POST %s token %q: %d %v", w.path, tok, resp.StatusCode, m)
				}
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("POST %s: WWW-Authenticate %q", w.path, resp.Header.Get("WWW-Authenticate"))
				}
			}
			resp, _ := e.raw(t, "POST", w.path, testToken, w.body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("POST %s with the token: %d", w.path, resp.StatusCode)
			}
		}
		// Other schemes and case.
		req, _ := http.NewRequest("POST", e.srv.URL+writes[0].path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Basic "+testToken)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
			t.Errorf("Basic scheme: %v %v", resp.StatusCode, err)
		}
		req, _ = http.NewRequest("POST", e.srv.URL+writes[0].path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "bearer "+testToken)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
			t.Errorf("lower-case scheme: %v %v", resp.StatusCode, err)
		}
		if n := strings.Count(strings.Join(e.fake.calls, " "), dbpilot.RecoveryFailoverManual); n != 2 {
			t.Errorf("service saw %d failovers, want 2 (calls %v)", n, e.fake.calls)
		}
	})

	t.Run("no token configured", func(t *testing.T) {
		e := newEnv(t, "", "anything")
		_, err := e.client.Switchover(ctx, "main", dbpilot.OperationOptions{DryRun: true})
		wantError(t, err, dbpilot.EAUTH, "no API token configured")
		for _, w := range writes {
			for _, tok := range []string{"", "anything"} {
				resp, m := e.raw(t, "POST", w.path, tok, w.body)
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(m["error"].(string), "token") {
					t.Errorf("POST %s: %d %v", w.path, resp.StatusCode, m)
				}
			}
		}
		if len(e.fake.calls) != 0 {
			t.Errorf("service called: %v", e.fake.calls)
		}
		// Reads still work.
		if _, err := e.client.Clusters(ctx); err != nil {
			t.Error(err)
		}
	})
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, testToken, testToken)
	cases := []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"POST", "/api/clusters/main/failover", `{"dry_run":`, 400, "invalid JSON body"},
		{"POST", "/api/clusters/main/failover", `not json`, 400, "invalid JSON body"},
		{"POST", "/api/clusters/main/failover", `{"dry_run":"yes"}`, 400, `field "dry_run" must be a JSON boolean`},
		{"POST", "/api/clusters/main/failover", `{"dryrun":true}`, 400, `unknown field "dryrun"`},
		{"POST", "/api/clusters/main/failover", `{"dry_run":true} {}`, 400, "after the JSON object"},
		{"POST", "/api/clusters/main/failover", `{"dry_run":true,"to":"db2:"}`, 400, `invalid "to"`},
		{"POST", "/api/clusters/main/switchover", `{"to":"db2:99999"}`, 400, `invalid "to": invalid instance address "db2:99999"`},
		{"POST", "/api/clusters/main/switchover", `{"to":"bad host:1"}`, 400, `invalid "to"`},
		{"POST", "/api/relocate", `{"replica":"db2:3306"}`, 400, `missing "below"`},
		{"POST", "/api/relocate", `{"replica":"db2:x","below":"db3:3306"}`, 400, `invalid "replica"`},
		{"POST", "/api/relocate", `{"replica":"db2:3306","below":":3306"}`, 400, `invalid "below"`},
		{"POST", "/api/clusters/main/rejoin", `{"dry_run":true}`, 400, `missing "instance"`},
		{"POST", "/api/clusters/main/rejoin", `{"instance":"db1:3306","reclone":"yes"}`, 400, `field "reclone" must be a JSON boolean`},
		{"POST", "/api/clusters/main/rejoin", `{"instance":"db1:3306","recl0ne":true}`, 400, `unknown field "recl0ne"`},
		{"POST", "/api/clusters/main/ack", `{"by":1}`, 400, `field "by" must be a JSON string`},
		{"POST", "/api/clusters/main/ack", `{"by":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, "larger than 1048576 bytes"},
		{"GET", "/api/recoveries?limit=x", "", 400, `invalid limit "x"`},
		{"GET", "/api/recoveries?limit=-1", "", 400, `invalid limit "-1"`},
		{"GET", "/api/audit?since=yesterday", "", 400, `invalid since "yesterday"`},
		{"GET", "/api/audit?recovery=abc", "", 400, `invalid recovery "abc"`},
		{"GET", "/api/nothing", "", 404, "no API endpoint GET /api/nothing"},
		{"DELETE", "/api/clusters/main", "", 405, "method DELETE not allowed"},
		{"GET", "/api/clusters/main/failover", "", 405, "method GET not allowed"},
	}
	for _, c := range cases {
		resp, m := e.raw(t, c.method, c.path, testToken, c.body)
		msg, _ := m["error"].(string)
		if resp.StatusCode != c.status || !strings.Contains(msg, c.msg) || m["code"] == "" {
			t.Errorf("%s %s %.40q: %d %v; want %d with %q", c.method, c.path, c.body, resp.StatusCode, m, c.status, c.msg)
		}
	}
	if len(e.fake.calls) != 0 {
		t.Errorf("service called on a bad request: %v", e.fake.calls)
	}
	// Through the client: an invalid key given by the caller.
	_, err := e.client.Relocate(context.Background(), dbpilot.InstanceKey{Host: "db2", Port: 3306}, dbpilot.OperationOptions{})
	wantError(t, err, dbpilot.EINVALID, `missing "below"`)
}

func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testToken, testToken)
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{dbpilot.Errorf(dbpilot.EINVALID, "bad"), 400, dbpilot.EINVALID},
		{dbpilot.Errorf(dbpilot.ENOTFOUND, "gone"), 404, dbpilot.ENOTFOUND},
		{dbpilot.Errorf(dbpilot.ECONFLICT, "a recovery of main runs"), 409, dbpilot.ECONFLICT},
		{dbpilot.Errorf(dbpilot.EUNSUPPORTED, "MySQL 5.6 cannot"), 422, dbpilot.EUNSUPPORTED},
		{dbpilot.Errorf(dbpilot.EAUTH, "access denied for dbpilot@db2"), 502, dbpilot.EAUTH},
		{dbpilot.WrapError(dbpilot.EUNAVAIL, io.ErrUnexpectedEOF, "db2:3306 unreachable"), 502, dbpilot.EUNAVAIL},
		{dbpilot.Errorf(dbpilot.EINTERNAL, "bug"), 500, dbpilot.EINTERNAL},
		{io.ErrClosedPipe, 500, dbpilot.EINTERNAL},
		{context.DeadlineExceeded, 502, dbpilot.EUNAVAIL},
	}
	for _, c := range cases {
		e.fake.err = c.err
		resp, m := e.raw(t, "GET", "/api/clusters", "", "")
		if resp.StatusCode != c.status || m["code"] != c.code || m["error"] != c.err.Error() {
			t.Errorf("%v: %d %v; want %d %s", c.err, resp.StatusCode, m, c.status, c.code)
		}
		_, err := e.client.Switchover(ctx, "main", dbpilot.OperationOptions{})
		wantError(t, err, c.code, c.err.Error())
		if err.Error() != c.err.Error() {
			t.Errorf("client error %q, want %q", err, c.err)
		}
	}

	// A failed operation brings its recovery record along.
	e.fake.err = dbpilot.Errorf(dbpilot.EUNAVAIL, "failover of main failed: db2 unreachable")
	e.fake.opRec = &dbpilot.Recovery{ID: 5, Cluster: "main", Kind: dbpilot.RecoveryFailoverManual, Error: "db2 unreachable", Started: time.Unix(5, 0).UTC()}
	r, err := e.client.Failover(ctx, "main", dbpilot.OperationOptions{})
	wantError(t, err, dbpilot.EUNAVAIL, "failover of main failed")
	if !reflect.DeepEqual(r, e.fake.opRec) {
		t.Errorf("recovery of the failed operation %+v", r)
	}
	e.fake.opRec = nil
	if r, err := e.client.Failover(ctx, "main", dbpilot.OperationOptions{}); err == nil || r != nil {
		t.Errorf("failed operation without a record: %+v %v", r, err)
	}
}

func TestLogging(t *testing.T) {
	e := newEnv(t, testToken, testToken)
	if _, err := e.client.Failover(context.Background(), "main", dbpilot.OperationOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	e.fake.err = io.ErrClosedPipe
	e.client.Clusters(context.Background())
	logs := e.logs.String()
	for _, want := range []string{"method=POST path=/api/clusters/main/failover status=200 duration=", "method=GET path=/api/clusters status=500", "level=ERROR"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, testToken) || strings.Contains(logs, "Bearer") {
		t.Errorf("log shows the token:\n%s", logs)
	}
}

func TestPanicIsInternalError(t *testing.T) {
	e := newEnv(t, testToken, testToken)
	e.fake.clusters = []*dbpilot.ClusterStatus{nil}
	e.fake.err = nil
	s := NewServer(panicky{e.fake}, ServerOptions{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	_, err := NewClient(srv.URL, "").Clusters(context.Background())
	wantError(t, err, dbpilot.EINTERNAL, "internal error in GET /api/clusters")
}

type panicky struct{ *fakeService }

func (panicky) Clusters(context.Context) ([]*dbpilot.ClusterStatus, error) { panic("boom") }

func TestClientUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := NewClient(addr, "") // a bare host:port
	_, err = c.Health(context.Background())
	wantError(t, err, dbpilot.EUNAVAIL, "httpapi: cannot reach dbpilot serve at http://"+addr)
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q does not say why", err)
	}

	_, err = NewClient("ftp://x", "").Health(context.Background())
	wantError(t, err, dbpilot.EINVALID, "invalid dbpilot serve address")
	for _, err := range []error{
		func() error { _, err := c.ClusterStatus(context.Background(), ""); return err }(),
		func() error { _, err := c.Failover(context.Background(), "", dbpilot.OperationOptions{}); return err }(),
		func() error { _, err := c.Ack(context.Background(), "", "", ""); return err }(),
	} {
		wantError(t, err, dbpilot.EINVALID, "cluster name is empty")
	}

	_, err = NewClient("", "").Health(context.Background())
	wantError(t, err, dbpilot.EINVALID, "empty")
}

func TestClientTimeouts(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	c := NewClient(srv.URL, "t")
	c.ReadTimeout = 50 * time.Millisecond
	_, err := c.Clusters(context.Background())
	wantError(t, err, dbpilot.EUNAVAIL, "did not answer GET /api/clusters within 50ms")

	// Operations have their own, longer bound; the caller's context wins.
	c.OperationTimeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Failover(ctx, "main", dbpilot.OperationOptions{})
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Errorf("canceled call: %v", err)
	}
}

func TestClientNonAPIError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down\nmore", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := NewClient(srv.URL+"/", "").Clusters(context.Background())
	wantError(t, err, dbpilot.EUNAVAIL, "answered GET /api/clusters: 502 Bad Gateway: upstream down")
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	_, err := NewClient(srv.URL, "secret").Ack(context.Background(), "main", "", "")
	if err == nil || hits != 0 {
		t.Errorf("redirect followed: hits %d err %v", hits, err)
	}
}
