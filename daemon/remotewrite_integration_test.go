package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/remotewrite"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestServeRemoteWritesToVictoriaMetrics: serve, wired by daemon.Open with
// metrics.local false, monitors a real MariaDB sandbox and remote-writes to
// a real VictoriaMetrics: mysql_up and mysql_global_status_* series appear
// there with instance, cluster and role, serve's PromQL API answers from it
// (metrics.query_url), and /metrics counts what was sent.
func TestServeRemoteWritesToVictoriaMetrics(t *testing.T) {
	vm := testutil.StartVictoriaMetrics(t)
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	cfg, err := daemon.ConfigFromSandbox(d)
	if err != nil {
		t.Fatal(err)
	}
	cfg.State = filepath.Join(t.TempDir(), "state.db")
	local := false
	cfg.Metrics.Local = &local
	cfg.Metrics.QueryURL = vm.URL
	cfg.Metrics.RemoteWrite = []daemon.RemoteWriteConfig{{URL: vm.WriteURL}}
	cfg.Clusters[0].AutoFailover = false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dm, err := daemon.Open(cfg, daemon.Wiring{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if dm.TSDB != nil || len(dm.Remote) != 1 {
		t.Fatalf("wired: TSDB %v, %d remote targets", dm.TSDB, len(dm.Remote))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dm.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		dm.Close()
	})

	q, err := remotewrite.NewQuerier(remotewrite.QueryOptions{URL: vm.URL})
	if err != nil {
		t.Fatal(err)
	}
	primary, replica := d.Nodes[0].Key().String(), d.Nodes[1].Key().String()
	testutil.WaitFor(t, 60*time.Second, "mysql_up 1 of both instances in VictoriaMetrics", func() (bool, string) {
		vm.Flush()
		series, err := q.QueryInstant(context.Background(), `mysql_up{cluster="`+d.Name+`"} == 1`, time.Now())
		if err != nil || len(series) != 2 {
			return false, fmt.Sprint(series, err)
		}
		roles := map[string]string{}
		for _, s := range series {
			roles[s.Labels["instance"]] = s.Labels["role"]
		}
		return roles[primary] == "primary" && roles[replica] == "replica", fmt.Sprint(roles)
	})
	testutil.WaitFor(t, 30*time.Second, "rate of mysql_global_status_questions of both instances", func() (bool, string) {
		vm.Flush()
		series, err := q.QueryInstant(context.Background(), `rate(mysql_global_status_questions{cluster="`+d.Name+`"}[10s]) > 0`, time.Now())
		return err == nil && len(series) == 2, fmt.Sprint(series, err)
	})

	// serve's /api/metrics/ answers from VictoriaMetrics.
	api := httptest.NewServer(dm.QueryAPI)
	defer api.Close()
	resp, err := http.Get(api.URL + "/api/metrics/query?" + url.Values{"expr": {`count(mysql_global_status_uptime{cluster="` + d.Name + `"})`}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"success"`) || !strings.Contains(string(body), `"2"]`) {
		t.Errorf("serve's PromQL API: %d %s", resp.StatusCode, body)
	}

	// Everything collected was sent; /metrics says so.
	st := dm.Remote[0].Stats()
	if st.Sent == 0 || st.Failed != 0 || st.Dropped != 0 {
		t.Errorf("remote write stats: %+v", st)
	}
	w := httptest.NewRecorder()
	dm.Exposition.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	want := `dbpilot_remote_write_samples_sent_total{url="` + vm.WriteURL + `"} `
	if i := strings.Index(w.Body.String(), want); i < 0 || strings.HasPrefix(w.Body.String()[i+len(want):], "0\n") {
		t.Errorf("/metrics lacks %s with a count:\n%s", want, w.Body.String())
	}
}
