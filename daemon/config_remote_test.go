package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigRemoteWrite(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	pw := filepath.Join(t.TempDir(), "rw.pass")
	os.WriteFile(pw, []byte("rw-secret\n"), 0o600)
	c, err := LoadConfig(writeConfig(t, minimal+`
metrics:
  local: false
  query_url: http://127.0.0.1:8428
  remote_write:
    - url: http://127.0.0.1:8428/api/v1/write
      basic_auth: {username: dbp, password_file: `+pw+`}
      headers: {X-Scope-OrgID: t1}
      queue: {capacity: 1000}
    - url: http://127.0.0.1:9090/api/v1/write
`))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Metrics
	if m.LocalStore() || len(m.RemoteWrite) != 2 {
		t.Fatalf("metrics: %+v", m)
	}
	o := m.RemoteWrite[0].options()
	if o.Password != "rw-secret" || o.Username != "dbp" || o.Capacity != 1000 || o.MaxSamplesPerSend != 2000 ||
		o.Timeout != 10*time.Second || o.BatchSendDeadline != time.Second || o.MinBackoff != 30*time.Millisecond || o.MaxBackoff != 5*time.Second {
		t.Errorf("options with defaults: %+v", o)
	}
	if o := m.RemoteWrite[1].options(); o.Capacity != 500_000 {
		t.Errorf("default capacity: %d", o.Capacity)
	}
	if c, _ := LoadConfig(writeConfig(t, minimal)); !c.Metrics.LocalStore() {
		t.Error("metrics.local defaults to false")
	}
}

// Bad remote-write settings are refused with one line naming the key.
func TestConfigRemoteWriteErrors(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	rw := func(s string) string { return minimal + "metrics:\n  remote_write:\n    - " + s + "\n" }
	tests := []struct{ body, want string }{
		{rw("url: ftp://h/x"), `metrics.remote_write[0].url: ftp://h/x is not an http(s) URL`},
		{rw("url: 'http://u:pw-secret@/x'"), `metrics.remote_write[0].url: http:///x is not an http(s) URL`},
		{rw("url: http://h:1/x\n      queue: {capacity: 0}"), "metrics.remote_write[0].queue.capacity: 0 is not a positive number of samples"},
		{rw("url: http://h:1/x\n      queue: {capacity: -5}"), "metrics.remote_write[0].queue.capacity: -5 is not a positive"},
		{rw("url: http://h:1/x\n      queue: {max_samples_per_send: 0}"), "queue.max_samples_per_send: 0 is not a positive"},
		{rw("url: http://h:1/x\n      timeout: 'off'"), "metrics.remote_write[0].timeout: must be a positive duration"},
		{rw("url: http://h:1/x\n      queue: {min_backoff: 2s, max_backoff: 1s}"), "queue.max_backoff: 1s is below min_backoff 2s"},
		{rw("url: http://h:1/x\n      headers: {Authorization: x}"), "metrics.remote_write[0].headers: header Authorization: use basic_auth or bearer_token"},
		{rw("url: http://h:1/x\n      headers: {Content-Type: x}"), "header Content-Type is set by the protocol"},
		{rw("url: http://h:1/x\n      bearer_token: t\n      basic_auth: {username: u, password: p}"), "basic_auth and bearer_token: give one"},
		{rw("url: http://h:1/x\n    - url: http://h:1/x?tenant=2"), "metrics.remote_write[1].url: http://h:1/x is also metrics.remote_write[0]"},
		{rw("url: ''"), "metrics.remote_write[0].url: required"},
		{minimal + "metrics: {local: false}\n", "metrics.local: false keeps no samples in serve: configure at least one metrics.remote_write target"},
		{minimal + "metrics: {query_url: http://h:1}\n", "metrics.query_url: used only with metrics.local: false"},
		{rw("url: http://h:1/x") + "  local: false\n  query_url: h:1\n", "metrics.query_url: "},
	}
	for _, tt := range tests {
		_, err := LoadConfig(writeConfig(t, tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config:\n%s\nerror %v, want %q", tt.body, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error shows a secret or spans lines: %v", err)
		}
	}
}

// TestOpenWithoutLocalStore: with metrics.local false serve opens no
// embedded store; /metrics has the remote-write self-metrics, and without
// query_url the PromQL API answers 503 naming what is missing.
func TestOpenWithoutLocalStore(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer recv.Close()
	c, err := LoadConfig(writeConfig(t, minimal+"metrics:\n  local: false\n  remote_write: [{url: '"+recv.URL+"/api/v1/write'}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(c, Wiring{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.TSDB != nil || len(d.Remote) != 1 || d.Exposition == nil || d.QueryAPI == nil {
		t.Fatalf("wired: %+v", d)
	}
	if _, err := os.Stat(c.Metrics.Dir); !os.IsNotExist(err) {
		t.Errorf("metrics dir %s created: %v", c.Metrics.Dir, err)
	}
	if err := d.unqueryable(); err == nil || err.Error() != "metrics.local is false and metrics.query_url is not set" {
		t.Errorf("unqueryable: %v", err)
	}
	get := func(h http.Handler, path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(w.Body)
		return w.Code, string(b)
	}
	if code, body := get(d.QueryAPI, "/api/metrics/query?expr=up"); code != 503 || !strings.Contains(body, "metrics.local is false and metrics.query_url is not set") {
		t.Errorf("query API: %d %s", code, body)
	}
	if err := d.RegisterMetrics(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dbpilot_test_gauge", Help: "h"}, func() float64 { return 7 })); err != nil {
		t.Fatal(err)
	}
	code, body := get(d.Exposition, "/metrics")
	if code != 200 || !strings.Contains(body, `dbpilot_remote_write_queue_length{url="`+recv.URL+`/api/v1/write"} 0`) || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "dbpilot_test_gauge 7") {
		t.Errorf("/metrics: %d %s", code, body)
	}
}

// TestOpenFansOutToRemoteWrite: with the local store and a remote-write
// target, serve's /metrics (the store's) carries the target's
// self-metrics, and queries go to the local store.
func TestOpenFansOutToRemoteWrite(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	c, err := LoadConfig(writeConfig(t, minimal+"metrics:\n  remote_write: [{url: 'http://127.0.0.1:1/api/v1/write'}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(c, Wiring{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.TSDB == nil || len(d.Remote) != 1 || d.unqueryable() != nil {
		t.Fatalf("wired: %+v", d)
	}
	if _, ok := d.metrics.(*fanout); !ok {
		t.Fatalf("backend %T, want the fan-out", d.metrics)
	}
	w := httptest.NewRecorder()
	d.Exposition.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if body := w.Body.String(); !strings.Contains(body, `dbpilot_remote_write_samples_sent_total{url="http://127.0.0.1:1/api/v1/write"} 0`) || !strings.Contains(body, "dbpilot_tsdb_head_series") {
		t.Errorf("/metrics:\n%s", body)
	}
}
