package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// The web console reads one recovery by id.
func TestRecoveryByID(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testToken, "")
	r, err := e.client.Recovery(ctx, 9)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != 9 || r.Plan != "promote" || e.fake.recFilter.ID != 9 {
		t.Errorf("recovery %+v, filter %+v", r, e.fake.recFilter)
	}
	e.fake.recoveries = nil
	_, err = e.client.Recovery(ctx, 10)
	wantError(t, err, dbpilot.ENOTFOUND, "no recovery 10")
	for _, bad := range []string{"x", "-1", "0", "1.5"} {
		resp, m := e.raw(t, "GET", "/api/recoveries/"+bad, "", "")
		if resp.StatusCode != http.StatusBadRequest || m["code"] != dbpilot.EINVALID {
			t.Errorf("GET /api/recoveries/%s: %d %v", bad, resp.StatusCode, m)
		}
	}
}

// Off-loopback, serve makes reads need the token too; writes are unchanged,
// and handlers mounted beside the API through Protect follow the same rule.
func TestReadRequiresToken(t *testing.T) {
	e := newEnv(t, testToken, "")
	s := NewServer(e.fake, ServerOptions{Token: testToken, ReadRequiresToken: true})
	mux := http.NewServeMux()
	mux.Handle("/api/", s)
	mux.Handle("/metrics", s.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.srv = srv
	for _, path := range []string{"/api/health", "/api/clusters", "/api/clusters/main", "/api/recoveries", "/api/recoveries/9", "/api/audit", "/metrics"} {
		for _, tok := range []string{"", "wrong"} {
			resp, m := e.raw(t, "GET", path, tok, "")
			if resp.StatusCode != http.StatusUnauthorized || m["code"] != dbpilot.EAUTH {
				t.Errorf("GET %s token %q: %d %v", path, tok, resp.StatusCode, m)
			}
			if tok == "" && !strings.Contains(m["error"].(string), "reading") {
				t.Errorf("GET %s: message %q does not say reading needs the token", path, m["error"])
			}
		}
		if resp, _ := e.raw(t, "GET", path, testToken, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the token: %d", path, resp.StatusCode)
		}
	}
	if _, err := NewClient(srv.URL, "").Clusters(context.Background()); err == nil {
		t.Error("a client without the token read the clusters")
	}
	if _, err := NewClient(srv.URL, testToken).Clusters(context.Background()); err != nil {
		t.Error(err)
	}
}

// The source of a request reaches the service's context: "cli" from the
// Client, "web" from the page, "api" when absent or not a short word.
func TestRequestSource(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testToken, testToken)
	body := `{"replica":"db2:3306","below":"db3:3306","dry_run":true}`
	if _, err := e.client.Relocate(ctx, dbpilot.InstanceKey{Host: "db2", Port: 3306}, dbpilot.OperationOptions{DryRun: true, To: dbpilot.InstanceKey{Host: "db3", Port: 3306}}); err != nil {
		t.Fatal(err)
	}
	if e.fake.source != dbpilot.SourceCLI {
		t.Errorf("client source %q, want cli", e.fake.source)
	}
	for header, want := range map[string]string{"web": "web", "": "api", "Web<script>": "api", strings.Repeat("a", 40): "api"} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/relocate", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		if header != "" {
			req.Header.Set(SourceHeader, header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if e.fake.source != want {
			t.Errorf("header %q: source %q, want %q", header, e.fake.source, want)
		}
	}
}
