package daemon_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestQueriesInServe: serve's statements collector records a probe run 50
// times with count 50 and its latency, answers it through GET /api/queries
// (by cluster, by instance, ordered), and writes per-digest series for at
// most queries.top digests.
func TestQueriesInServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	const top = 3
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Clusters[0].AutoFailover = false
		c.Queries.Interval = daemon.Duration(time.Second)
		c.Queries.Top = top
	}, daemon.Wiring{MetricsStore: ms}, false)
	srv := httptest.NewServer(httpapi.NewServer(f.dm, httpapi.ServerOptions{}))
	t.Cleanup(srv.Close)
	api := httpapi.NewClient(srv.URL, "")
	ctx := context.Background()
	node1 := f.key("node1").String()

	// The collector's first read of node1 is its baseline.
	testutil.WaitFor(t, 20*time.Second, "a first collection of node1", func() (bool, string) {
		rep, err := api.Queries(ctx, dbpilot.QueryFilter{Instance: node1})
		if err != nil {
			return false, err.Error()
		}
		return len(rep.Sources) == 1 && !rep.Sources[0].At.IsZero(), fmt.Sprintf("%+v", rep.Sources)
	})
	start := time.Now()

	db, err := mysql.Open(ctx, f.key("node1"), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 50
	for i := 0; i < n; i++ {
		if _, err := db.Query(ctx, fmt.Sprintf("SELECT %d + SLEEP(0.002) AS dbpilot_serve_probe", i)); err != nil {
			t.Fatal(err)
		}
	}
	// More digests than queries.top, each costlier than the last.
	for i := 1; i <= top+2; i++ {
		if _, err := db.Query(ctx, fmt.Sprintf("SELECT SLEEP(0.0%d) AS dbpilot_serve_other_%d", i, i)); err != nil {
			t.Fatal(err)
		}
	}

	probe := func(rep *dbpilot.QueryReport) *dbpilot.QueryStat {
		for i, q := range rep.Queries {
			if strings.Contains(q.DigestText, "dbpilot_serve_probe") {
				return &rep.Queries[i]
			}
		}
		return nil
	}
	var rep *dbpilot.QueryReport
	testutil.WaitFor(t, 20*time.Second, "the probe counted 50 times", func() (bool, string) {
		rep, err = api.Queries(ctx, dbpilot.QueryFilter{Cluster: d.Name, Since: start.Add(-time.Minute), Limit: 100})
		if err != nil {
			return false, err.Error()
		}
		p := probe(rep)
		if p == nil {
			return false, fmt.Sprintf("%d digests, no probe", len(rep.Queries))
		}
		return p.Count == n, fmt.Sprintf("probe %+v", *p)
	})
	p := probe(rep)
	t.Logf("probe: %+v", *p)
	if p.Instance != node1 || p.Cluster != d.Name || p.Digest == "" || p.Schema != "" {
		t.Errorf("probe row: %+v", *p)
	}
	// Each ran SLEEP(0.002): at least 2 ms each, 100 ms in all.
	if p.TotalMS < n*2 || p.AvgMS < 2 || p.MaxMS < 2 || p.MaxMS > p.TotalMS {
		t.Errorf("probe latencies: total %.3f ms, avg %.3f, max %.3f", p.TotalMS, p.AvgMS, p.MaxMS)
	}
	if len(rep.Sources) != 2 {
		t.Errorf("sources of the cluster: %+v", rep.Sources)
	}
	for _, s := range rep.Sources {
		if s.Source != dbpilot.QuerySourcePerformanceSchema || s.Error != "" || s.Capacity == 0 {
			t.Errorf("source: %+v", s)
		}
	}
	// Ordered by count, the probe comes first; node2 has no probe.
	byCount, err := api.Queries(ctx, dbpilot.QueryFilter{Cluster: d.Name, Since: start.Add(-time.Minute), By: dbpilot.QueryByCount, Limit: 1})
	if err != nil || len(byCount.Queries) != 1 || !strings.Contains(byCount.Queries[0].DigestText, "dbpilot_serve_probe") {
		t.Errorf("by count: %v %+v", err, byCount)
	}
	node2, err := api.Queries(ctx, dbpilot.QueryFilter{Instance: f.key("node2").String(), Since: start.Add(-time.Minute), Limit: 1000})
	if err != nil || probe(node2) != nil {
		t.Errorf("node2: %v, probe %+v", err, node2)
	}
	if _, err := api.Queries(ctx, dbpilot.QueryFilter{Cluster: "nope"}); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Errorf("unknown cluster: %v", err)
	}

	// Series: at most `top` digests of node1 have them (serve's own
	// monitoring statements compete too). A digest that keeps running and
	// costs more than the cheapest tracked one takes its place: the probe,
	// run again until its series appears, counts past 50.
	stop := make(chan struct{})
	probing := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				probing <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := db.Query(ctx, fmt.Sprintf("SELECT %d + SLEEP(0.002) AS dbpilot_serve_probe", i)); err != nil {
				probing <- err
				return
			}
		}
	}()
	expr := `dbpilot_query_calls_total{instance="` + node1 + `",digest_text=~".*dbpilot_serve_probe.*"}`
	testutil.WaitFor(t, 30*time.Second, expr, func() (bool, string) {
		s, err := ms.QueryInstant(ctx, expr, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return len(s) == 1 && len(s[0].Points) > 0 && s[0].Points[0].V > n, fmt.Sprintf("%+v", s)
	})
	close(stop)
	if err := <-probing; err != nil {
		t.Fatal(err)
	}
	count := `count(dbpilot_query_calls_total{instance="` + node1 + `"})`
	s, err := ms.QueryInstant(ctx, count, time.Now())
	if err != nil || len(s) != 1 || len(s[0].Points) == 0 || s[0].Points[0].V > top {
		t.Errorf("%s = %+v, %v: want at most %d", count, s, err, top)
	}
}

// TestQueriesInServeSlowLog: with performance_schema off, serve's
// statements collector falls back to the slow query log (mysql.slow_log
// here) and says so; with the slow log off too, the source is none with
// the reason, and dbpilot_query_source says it.
func TestQueriesInServeSlowLog(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle,
		Options: []string{"performance_schema=OFF", "slow_query_log=ON", "long_query_time=0", "log_output=TABLE"}})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Clusters[0].AutoFailover = false
		c.Queries.Interval = daemon.Duration(time.Second)
	}, daemon.Wiring{MetricsStore: ms}, false)
	ctx := context.Background()
	node1 := f.key("node1").String()
	testutil.WaitFor(t, 20*time.Second, "a first collection from the slow log", func() (bool, string) {
		rep, err := f.dm.Queries(ctx, dbpilot.QueryFilter{Instance: node1})
		if err != nil {
			return false, err.Error()
		}
		return len(rep.Sources) == 1 && rep.Sources[0].Source == dbpilot.QuerySourceSlowLogTable && rep.Sources[0].Error == "", fmt.Sprintf("%+v", rep.Sources)
	})
	const n = 25
	for i := 0; i < n; i++ {
		f.exec("node1", fmt.Sprintf("SELECT %d AS dbpilot_serve_slow_probe", i))
	}
	testutil.WaitFor(t, 20*time.Second, "the probe from the slow log", func() (bool, string) {
		rep, err := f.dm.Queries(ctx, dbpilot.QueryFilter{Instance: node1, Limit: 1000})
		if err != nil {
			return false, err.Error()
		}
		for _, q := range rep.Queries {
			if strings.Contains(q.DigestText, "dbpilot_serve_slow_probe") {
				return q.Count == n, fmt.Sprintf("%+v", q)
			}
		}
		return false, fmt.Sprintf("%d digests", len(rep.Queries))
	})

	// The slow log turned off: no source, with the reason.
	f.exec("node1", "SET GLOBAL slow_query_log = OFF")
	testutil.WaitFor(t, 60*time.Second, "source none", func() (bool, string) {
		rep, err := f.dm.Queries(ctx, dbpilot.QueryFilter{Instance: node1})
		if err != nil {
			return false, err.Error()
		}
		s := rep.Sources[0]
		return s.Source == dbpilot.QuerySourceNone && strings.Contains(s.Error, "slow_query_log"), fmt.Sprintf("%+v", s)
	})
	expr := `dbpilot_query_source{instance="` + node1 + `",source="none"}`
	testutil.WaitFor(t, 10*time.Second, expr, func() (bool, string) {
		s, err := ms.QueryInstant(ctx, expr, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return len(s) == 1 && len(s[0].Points) > 0 && s[0].Points[0].V == 1, fmt.Sprintf("%+v", s)
	})
}
