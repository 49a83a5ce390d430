package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestHostPolicy(t *testing.T) {
	tests := []struct {
		listen  string
		allowed []string
		ok, bad []string
	}{
		{"127.0.0.1:7070", nil,
			[]string{"127.0.0.1:7070", "localhost:7070", "LocalHost:7070", "localhost.:7070", "[::1]:7070", "127.0.0.2:7070", ""},
			[]string{"evil.example:7070", "evil.example", "127.0.0.1:7071", "localhost", "localhost:80", "10.0.0.5:7070", "0.0.0.0:7070", "127.0.0.1.evil.example:7070"}},
		{"127.0.0.1:7070", []string{"dbpilot.example.com", "proxy.example:8443"},
			[]string{"dbpilot.example.com", "DBPILOT.example.com:443", "dbpilot.example.com:7070", "proxy.example:8443"},
			[]string{"proxy.example:7070", "proxy.example", "example.com:7070", "evil.dbpilot.example.com"}},
		{"10.0.0.5:7070", nil,
			[]string{"10.0.0.5:7070", "localhost:7070", "127.0.0.1:7070"},
			[]string{"10.0.0.6:7070", "10.0.0.5:80", "db.example:7070"}},
		{"0.0.0.0:7070", nil,
			[]string{"10.0.0.5:7070", "192.168.1.9:7070", "[fe80::1]:7070", "localhost:7070"},
			[]string{"rebind.example:7070", "10.0.0.5:7071"}},
		{"[::]:7070", nil, []string{"[2001:db8::1]:7070", "10.0.0.5:7070"}, []string{"x.example:7070"}},
		{":80", nil, []string{"localhost", "127.0.0.1", "10.0.0.5"}, []string{"evil.example"}},
		{"db-host:7070", nil, []string{"db-host:7070", "DB-HOST:7070", "localhost:7070"}, []string{"db-host:7071", "other:7070"}},
	}
	for _, tc := range tests {
		p, err := NewHostPolicy(tc.listen, tc.allowed)
		if err != nil {
			t.Fatalf("NewHostPolicy(%q, %q): %v", tc.listen, tc.allowed, err)
		}
		for _, h := range tc.ok {
			if !p.Allows(h) {
				t.Errorf("listen %s, allowed %q: Host %q refused", tc.listen, tc.allowed, h)
			}
		}
		for _, h := range tc.bad {
			if p.Allows(h) {
				t.Errorf("listen %s, allowed %q: Host %q allowed", tc.listen, tc.allowed, h)
			}
		}
	}
	for _, bad := range []string{"http://x.example", "x.example/path", "user@x.example", "", "x.example:", ":7070"} {
		if _, err := NewHostPolicy("127.0.0.1:7070", []string{bad}); err == nil || dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("allowed host %q: %v, want invalid", bad, err)
		}
	}
	if _, err := NewHostPolicy("nowhere", nil); err == nil {
		t.Error("listen without a port accepted")
	}
}

// TestHostGuard: the API over a real HTTP server answers its own address
// and localhost, and refuses, with 421 and a one-line JSON error, a request
// naming another host (a DNS-rebinding page), before any handler runs.
func TestHostGuard(t *testing.T) {
	fake := &fakeService{clusters: []*dbpilot.ClusterStatus{{Name: "main"}}}
	var guard http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { guard.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	p, err := NewHostPolicy(srv.Listener.Addr().String(), []string{"dbpilot.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	guard = p.Guard(NewServer(fake, ServerOptions{}))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	get := func(host string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", srv.URL+"/api/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp, b.String()
	}
	for _, h := range []string{srv.Listener.Addr().String(), "localhost:" + port, "dbpilot.example.com"} {
		if resp, body := get(h); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"main"`) {
			t.Errorf("Host %q: %d %s", h, resp.StatusCode, body)
		}
	}
	fake.calls = nil
	resp, body := get("rebind.attacker.example:" + port)
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("Host rebind.attacker.example: status %d, want 421: %s", resp.StatusCode, body)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != dbpilot.EAUTH ||
		!strings.Contains(e.Error, `host "rebind.attacker.example:`+port+`" is not one dbpilot serve answers to`) || strings.Contains(e.Error, "\n") {
		t.Errorf("421 body %q (%v)", body, err)
	}
	if len(fake.calls) != 0 {
		t.Errorf("the service was called for a refused host: %v", fake.calls)
	}
}
