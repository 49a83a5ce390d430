package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// actorService is a fakeService that records the actor (the token's name)
// of each write and stores bench metrics.
type actorService struct {
	*fakeService
	mu     sync.Mutex
	actors []string
}

func (s *actorService) saw(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actors = append(s.actors, dbpilot.ActorOf(ctx))
}

func (s *actorService) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.actors) == 0 {
		return ""
	}
	return s.actors[len(s.actors)-1]
}

func (s *actorService) Failover(ctx context.Context, c string, o dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	s.saw(ctx)
	return s.fakeService.Failover(ctx, c, o)
}

func (s *actorService) Switchover(ctx context.Context, c string, o dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	s.saw(ctx)
	return s.fakeService.Switchover(ctx, c, o)
}

func (s *actorService) Relocate(ctx context.Context, r dbpilot.InstanceKey, o dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	s.saw(ctx)
	return s.fakeService.Relocate(ctx, r, o)
}

func (s *actorService) Rejoin(ctx context.Context, c string, i dbpilot.InstanceKey, o dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	s.saw(ctx)
	return s.fakeService.Rejoin(ctx, c, i, o)
}

func (s *actorService) Ack(ctx context.Context, c, by, comment string) (int, error) {
	s.saw(ctx)
	return s.fakeService.Ack(ctx, c, by, comment)
}

func (s *actorService) WriteBenchMetrics(ctx context.Context, b dbpilot.Batch) error {
	s.saw(ctx)
	return nil
}

// roleTokens: one token per role, and the legacy admin token.
var roleTokens = map[dbpilot.Role]string{
	dbpilot.RoleViewer:   "viewer-secret",
	dbpilot.RoleOperator: "operator-secret",
	dbpilot.RoleAdmin:    "admin-secret",
}

func newRoleServer(t *testing.T, readRequiresToken bool) (*actorService, *httptest.Server) {
	t.Helper()
	e := newEnv(t, "", "") // its fake service, with data
	svc := &actorService{fakeService: e.fake}
	opt := ServerOptions{Token: testToken, ReadRequiresToken: readRequiresToken}
	for role, secret := range roleTokens {
		opt.Tokens = append(opt.Tokens, Token{Name: "t-" + string(role), Role: role, Secret: secret})
	}
	srv := httptest.NewServer(NewServer(svc, opt))
	t.Cleanup(srv.Close)
	return svc, srv
}

// actionBodies are a valid request of each action.
var actionBodies = map[string]struct{ path, body string }{
	"ack":           {"/api/clusters/main/ack", `{"by":"x"}`},
	"relocate":      {"/api/relocate", `{"replica":"db2:3306","below":"db3:3306","dry_run":true}`},
	"switchover":    {"/api/clusters/main/switchover", `{"dry_run":true}`},
	"bench_metrics": {"/api/bench/metrics", `{}`},
	"failover":      {"/api/clusters/main/failover", `{"dry_run":true}`},
	"rejoin":        {"/api/clusters/main/rejoin", `{"instance":"db1:3306","dry_run":true}`},
}

// TestRoleTable sends every write endpoint with every role's token: 2xx
// where the role allows it, 403 naming the role needed otherwise; the
// service sees the token's name.
func TestRoleTable(t *testing.T) {
	want := map[string]map[dbpilot.Role]bool{
		"ack":           {dbpilot.RoleViewer: false, dbpilot.RoleOperator: true, dbpilot.RoleAdmin: true},
		"relocate":      {dbpilot.RoleViewer: false, dbpilot.RoleOperator: true, dbpilot.RoleAdmin: true},
		"switchover":    {dbpilot.RoleViewer: false, dbpilot.RoleOperator: true, dbpilot.RoleAdmin: true},
		"bench_metrics": {dbpilot.RoleViewer: false, dbpilot.RoleOperator: true, dbpilot.RoleAdmin: true},
		"failover":      {dbpilot.RoleViewer: false, dbpilot.RoleOperator: false, dbpilot.RoleAdmin: true},
		"rejoin":        {dbpilot.RoleViewer: false, dbpilot.RoleOperator: false, dbpilot.RoleAdmin: true},
	}
	if len(want) != len(Actions) {
		t.Fatalf("the table has %d actions, Actions %d", len(want), len(Actions))
	}
	svc, srv := newRoleServer(t, false)
	e := &env{srv: srv}
	for _, a := range Actions {
		req, ok := actionBodies[a.Name]
		if !ok || !strings.HasSuffix(a.Path, req.path[strings.LastIndex(req.path, "/"):]) {
			t.Fatalf("no request for action %s (%s)", a.Name, a.Path)
		}
		for _, role := range dbpilot.Roles {
			allowed, ok := want[a.Name][role]
			if !ok {
				t.Fatalf("the table lacks %s × %s", a.Name, role)
			}
			n := len(svc.actors)
			resp, m := post(t, srv.URL+req.path, roleTokens[role], req.body)
			switch {
			case allowed && (resp.StatusCode < 200 || resp.StatusCode > 299):
				t.Errorf("%s with a %s token: %d %v, want 2xx", a.Name, role, resp.StatusCode, m)
			case allowed && svc.last() != "token:t-"+string(role):
				t.Errorf("%s with a %s token: the service saw actor %q, want token:t-%s", a.Name, role, svc.last(), role)
			case !allowed && resp.StatusCode != http.StatusForbidden:
				t.Errorf("%s with a %s token: %d %v, want 403", a.Name, role, resp.StatusCode, m)
			case !allowed:
				wantMsg := a.Name + " needs a token of role " + string(a.Role) + " or more; token \"t-" + string(role) + "\" has role " + string(role)
				if m["error"] != wantMsg || m["code"] != dbpilot.EAUTH {
					t.Errorf("%s with a %s token: %v, want error %q", a.Name, role, m, wantMsg)
				}
				if len(svc.actors) != n {
					t.Errorf("%s with a %s token reached the service", a.Name, role)
				}
			}
		}
		// The setting token (an admin named "admin") may do everything.
		resp, m := post(t, srv.URL+req.path, testToken, req.body)
		if resp.StatusCode > 299 || svc.last() != "token:admin" {
			t.Errorf("%s with token (admin): %d %v, actor %q", a.Name, resp.StatusCode, m, svc.last())
		}
		// No token: 401, a wrong one: 401.
		for _, tok := range []string{"", "nope"} {
			resp, m := e.raw(t, "POST", req.path, tok, req.body)
			if resp.StatusCode != http.StatusUnauthorized || m["code"] != dbpilot.EAUTH {
				t.Errorf("%s with token %q: %d %v, want 401", a.Name, tok, resp.StatusCode, m)
			}
		}
	}
	// The messages of a 401.
	resp, m := e.raw(t, "POST", "/api/clusters/main/failover", "", "")
	if resp.StatusCode != 401 || m["error"] != "missing API token: failover needs Authorization: Bearer <token>" {
		t.Errorf("no token: %d %v", resp.StatusCode, m)
	}
	resp, m = e.raw(t, "POST", "/api/clusters/main/failover", "nope", "")
	if resp.StatusCode != 401 || m["error"] != "wrong API token" {
		t.Errorf("wrong token: %d %v", resp.StatusCode, m)
	}
}

// TestReadsNeedViewer: with ReadRequiresToken a viewer's token reads (the
// alerts too), no token is 401.
func TestReadsNeedViewer(t *testing.T) {
	_, srv := newRoleServer(t, true)
	e := &env{srv: srv}
	for _, path := range []string{"/api/clusters", "/api/recoveries", "/api/audit", "/api/health"} {
		if resp, m := e.raw(t, "GET", path, "", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d %v", path, resp.StatusCode, m)
		}
		if resp, m := e.raw(t, "GET", path, roleTokens[dbpilot.RoleViewer], ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with a viewer token: %d %v", path, resp.StatusCode, m)
		}
	}
	// alerts: 422 (the fake has no alerts) once past the token, 401 before.
	if resp, _ := e.raw(t, "GET", "/api/alerts", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/alerts without a token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := e.raw(t, "GET", "/api/alerts", roleTokens[dbpilot.RoleViewer], ""); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("GET /api/alerts with a viewer token: %d, want 422 (no alert service)", resp.StatusCode)
	}
}

func TestWhoami(t *testing.T) {
	ctx := context.Background()
	for _, rrt := range []bool{false, true} {
		_, srv := newRoleServer(t, rrt)
		for role, secret := range roleTokens {
			who, err := NewClient(srv.URL, secret).Whoami(ctx)
			if err != nil {
				t.Fatalf("whoami %s: %v", role, err)
			}
			if who.Name != "t-"+string(role) || who.Role != role {
				t.Errorf("whoami of the %s token: %+v", role, who)
			}
			for _, a := range Actions {
				has := strings.Contains(" "+strings.Join(who.Actions, " ")+" ", " "+a.Name+" ")
				if has != role.Allows(a.Role) {
					t.Errorf("whoami of the %s token lists %s: %v (actions %v)", role, a.Name, has, who.Actions)
				}
			}
		}
		if _, err := NewClient(srv.URL, "nope").Whoami(ctx); err == nil || !strings.Contains(err.Error(), "wrong API token") {
			t.Errorf("whoami with a wrong token (read_requires_token %v): %v", rrt, err)
		}
		who, err := NewClient(srv.URL, "").Whoami(ctx)
		switch {
		case rrt && (err == nil || !strings.Contains(err.Error(), "missing API token")):
			t.Errorf("whoami without a token where reads need one: %+v %v", who, err)
		case !rrt && (err != nil || who.Role != "" || len(who.Actions) != 0):
			t.Errorf("whoami without a token: %+v %v, want no role", who, err)
		}
	}
}

// post sends a write and decodes an answer with a body (204 has none).
func post(t *testing.T, url, token, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
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
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("POST %s: body %q: %v", url, data, err)
		}
	}
	return resp, m
}

// TestForwardedActor: a request a serve forwards (its context names who
// asked) is audited as that actor via the forwarding serve's admin token;
// the header from a token of a lower role is ignored.
func TestForwardedActor(t *testing.T) {
	svc, srv := newRoleServer(t, false)
	ctx := dbpilot.WithActor(context.Background(), "token:oncall")
	if _, err := NewClient(srv.URL, roleTokens[dbpilot.RoleAdmin]).Ack(ctx, "main", "x", ""); err != nil {
		t.Fatal(err)
	}
	if got := svc.last(); got != "token:oncall via token:t-admin" {
		t.Errorf("forwarded by an admin token: actor %q", got)
	}
	if _, err := NewClient(srv.URL, roleTokens[dbpilot.RoleOperator]).Ack(ctx, "main", "x", ""); err != nil {
		t.Fatal(err)
	}
	if got := svc.last(); got != "token:t-operator" {
		t.Errorf("an operator's token naming another actor: actor %q, want its own", got)
	}
}
