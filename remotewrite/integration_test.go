package remotewrite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/remotewrite"
)

var (
	db1 = dbpilot.InstanceKey{Host: "db1", Port: 3306}
	db2 = dbpilot.InstanceKey{Host: "db2", Port: 3306}
)

func newSink(t *testing.T, opt remotewrite.Options) *remotewrite.Sink {
	t.Helper()
	if opt.MaxBackoff == 0 {
		opt.MinBackoff, opt.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	}
	if opt.BatchSendDeadline == 0 {
		opt.BatchSendDeadline = 100 * time.Millisecond
	}
	s, err := remotewrite.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newQuerier(t *testing.T, srv *testutil.TSDBServer) *remotewrite.Querier {
	t.Helper()
	q, err := remotewrite.NewQuerier(remotewrite.QueryOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// waitSent waits until the sink sent everything it was given.
func waitSent(t *testing.T, s *remotewrite.Sink) remotewrite.Stats {
	t.Helper()
	var st remotewrite.Stats
	testutil.WaitFor(t, 60*time.Second, "every sample sent to "+s.URL(), func() (bool, string) {
		st = s.Stats()
		return st.Pending == 0 && st.Sent+st.Failed+st.Dropped == st.Samples, fmt.Sprintf("%+v", st)
	})
	return st
}

// rawSamples returns the values of the raw samples of a selector over the
// 10 minutes before at, by series (instant query of a range vector).
func rawSamples(t *testing.T, q *remotewrite.Querier, selector string, at time.Time) map[string][]dbpilot.Point {
	t.Helper()
	series, err := q.QueryInstant(context.Background(), selector+"[10m]", at)
	if err != nil {
		t.Fatalf("query %s: %v", selector, err)
	}
	out := map[string][]dbpilot.Point{}
	for _, s := range series {
		keys := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			keys = append(keys, k+"="+v)
		}
		slices.Sort(keys)
		out[strings.Join(keys, ",")] = s.Points
	}
	return out
}

// writeAndQuery: the sink sends batches at 1 s timestamps to a real
// receiver, and PromQL there returns dbpilot's series with their labels and
// values; the PromQL API serve would mount (Querier.APIHandler) answers
// from it too.
func writeAndQuery(t *testing.T, srv *testutil.TSDBServer) {
	s := newSink(t, remotewrite.Options{URL: srv.WriteURL})
	q := newQuerier(t, srv)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	const n = 10
	for i := range n {
		for _, inst := range []dbpilot.InstanceKey{db1, db2} {
			b := dbpilot.Batch{Instance: inst, Cluster: "main", Role: map[bool]string{true: "primary", false: "replica"}[inst == db1],
				Collector: "global_status", Time: t0.Add(time.Duration(i) * time.Second), Samples: []dbpilot.Sample{
					{Name: "mysql_global_status_questions", Value: float64(100 + i), Type: dbpilot.Counter},
					{Name: "mysql_global_status_threads_connected", Value: float64(i % 3)},
					{Name: "mysql_slave_status_seconds_behind_master", Labels: []dbpilot.Label{{Name: "channel_name", Value: "c1"}, {Name: "instance", Value: "other"}}, Value: 0.5},
				}}
			if err := s.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := waitSent(t, s)
	if st.Sent != 2*3*n || st.Failed != 0 || st.Dropped != 0 {
		t.Fatalf("stats: %+v", st)
	}
	end := t0.Add(n * time.Second)
	var got map[string][]dbpilot.Point
	testutil.WaitFor(t, 30*time.Second, "questions of db1 on "+srv.Name, func() (bool, string) {
		srv.Flush()
		got = rawSamples(t, q, `mysql_global_status_questions{instance="db1:3306"}`, end)
		for _, pts := range got {
			return len(pts) == n, fmt.Sprint(got)
		}
		return false, "no series"
	})
	pts := got["__name__=mysql_global_status_questions,cluster=main,instance=db1:3306,role=primary"]
	if len(got) != 1 || len(pts) != n {
		t.Fatalf("series %v", got)
	}
	for i, p := range pts {
		if p.V != float64(100+i) || !p.T.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Errorf("point %d: %+v", i, p)
		}
	}
	// Labels: a sample's own label, and its "instance" kept as exported_instance.
	lag, err := q.QueryInstant(context.Background(), `mysql_slave_status_seconds_behind_master{role="replica"}`, end)
	if err != nil || len(lag) != 1 {
		t.Fatalf("lag: %v %v", lag, err)
	}
	if l := lag[0].Labels; l["instance"] != "db2:3306" || l["cluster"] != "main" || l["channel_name"] != "c1" || l["exported_instance"] != "other" || lag[0].Points[0].V != 0.5 {
		t.Errorf("lag series: %+v", lag[0])
	}
	// PromQL: functions over the counter's samples, and an aggregation.
	inc, err := q.QueryInstant(context.Background(), `sum by (cluster) (max_over_time(mysql_global_status_questions[1m]) - min_over_time(mysql_global_status_questions[1m]))`, t0.Add(9*time.Second))
	if err != nil || len(inc) != 1 || inc[0].Labels["cluster"] != "main" || math.Abs(inc[0].Points[0].V-18) > 1e-9 {
		t.Errorf("increase: %+v %v", inc, err)
	}
	rng, err := q.QueryRange(context.Background(), `mysql_global_status_threads_connected{instance="db2:3306"}`, t0, t0.Add(9*time.Second), time.Second)
	if err != nil || len(rng) != 1 || len(rng[0].Points) != n || rng[0].Points[4].V != 1 {
		t.Errorf("range: %+v %v", rng, err)
	}
	if _, err := q.QueryInstant(context.Background(), `sum(`, end); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("bad expression: %v", err)
	}
	// serve's /api/metrics/ forwarded to the server, with dbpilot's "expr".
	api := httptest.NewServer(q.APIHandler())
	defer api.Close()
	resp, err := http.Get(api.URL + "/api/metrics/query?" + url.Values{"expr": {`mysql_global_status_questions{role="primary"}`}, "time": {fmt.Sprint(t0.Add(9 * time.Second).Unix())}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a struct {
		Status string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  []any
			}
		}
	}
	if err := json.Unmarshal(body, &a); err != nil || a.Status != "success" || len(a.Data.Result) != 1 || a.Data.Result[0].Value[1] != "109" {
		t.Errorf("API answer %d: %s", resp.StatusCode, body)
	}
}

// TestRemoteWritePrometheus: to a real Prometheus server with
// --web.enable-remote-write-receiver.
func TestRemoteWritePrometheus(t *testing.T) {
	writeAndQuery(t, testutil.StartPrometheus(t))
}

// TestRemoteWriteVictoriaMetrics: to a real VictoriaMetrics (/api/v1/write).
func TestRemoteWriteVictoriaMetrics(t *testing.T) {
	writeAndQuery(t, testutil.StartVictoriaMetrics(t))
}

// TestRemoteWriteOutage: both receivers are down for 30 s while batches
// keep coming every second, then back. With a queue large enough nothing
// is missing; with a small one, exactly the samples counted in
// dbpilot_remote_write_samples_dropped_total are missing, and nothing
// failed.
func TestRemoteWriteOutage(t *testing.T) {
	servers := []*testutil.TSDBServer{testutil.StartPrometheus(t), testutil.StartVictoriaMetrics(t)}
	const series = 5
	type target struct {
		srv   *testutil.TSDBServer
		queue string
		sink  *remotewrite.Sink
	}
	var targets []*target
	for _, srv := range servers {
		targets = append(targets,
			&target{srv: srv, queue: "large", sink: newSink(t, remotewrite.Options{URL: srv.WriteURL, Capacity: 100_000})},
			&target{srv: srv, queue: "small", sink: newSink(t, remotewrite.Options{URL: srv.WriteURL, Capacity: 40, MaxSamplesPerSend: 10})})
	}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	i := 0
	write := func(batches int) {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for range batches {
			for _, tg := range targets {
				b := dbpilot.Batch{Instance: db1, Cluster: "main", Role: "primary", Collector: "outage_" + tg.queue, Time: t0.Add(time.Duration(i) * time.Second)}
				for k := range series {
					b.Samples = append(b.Samples, dbpilot.Sample{Name: "rw_outage", Labels: []dbpilot.Label{{Name: "queue", Value: tg.queue}, {Name: "k", Value: fmt.Sprint(k)}}, Value: float64(i)})
				}
				if err := tg.sink.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			i++
			<-tick.C
		}
	}
	write(3)
	for _, srv := range servers {
		srv.Stop()
	}
	write(30) // the receivers are down for these 30 s
	for _, srv := range servers {
		srv.Start()
	}
	write(3)
	end := t0.Add(time.Duration(i) * time.Second)
	for _, tg := range targets {
		st := waitSent(t, tg.sink)
		reg := prometheus.NewRegistry()
		reg.MustRegister(tg.sink)
		dropped := gathered(t, reg, "dbpilot_remote_write_samples_dropped_total")
		q := newQuerier(t, tg.srv)
		var stored int
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("%s: the sent samples queryable", tg.srv.Name), func() (bool, string) {
			stored = 0
			tg.srv.Flush()
			for _, pts := range rawSamples(t, q, `rw_outage{queue="`+tg.queue+`"}`, end) {
				stored += len(pts)
			}
			return int64(stored) == st.Sent, fmt.Sprintf("%d stored, %d sent", stored, st.Sent)
		})
		total := i * series
		t.Logf("%s, %s queue: %d samples, %d stored, %d dropped, sends %v", tg.srv.Name, tg.queue, total, stored, st.Dropped, st.Sends)
		if st.Samples != int64(total) || st.Failed != 0 || dropped != float64(st.Dropped) {
			t.Errorf("%s %s: stats %+v, dropped_total %v", tg.srv.Name, tg.queue, st, dropped)
		}
		switch tg.queue {
		case "large":
			if stored != total || st.Dropped != 0 || st.Retried == 0 {
				t.Errorf("%s, large queue: %d of %d samples stored, %d dropped, %d retried", tg.srv.Name, stored, total, st.Dropped, st.Retried)
			}
		case "small":
			if st.Dropped == 0 || int64(total-stored) != st.Dropped {
				t.Errorf("%s, small queue: %d of %d samples stored, dropped_total %d", tg.srv.Name, stored, total, st.Dropped)
			}
		}
	}
}

// gathered returns the value of a metric family with one series.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
