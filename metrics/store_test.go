package metrics

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/timestamp"

	"github.com/dbpilot/dbpilot"
)

// t0 is a whole second, well inside any retention.
var t0 = time.Now().Add(-10 * time.Minute).Truncate(time.Second)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	primary = dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	replica = dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3307}
)

func batch(k dbpilot.InstanceKey, role, collector string, at time.Time, samples ...dbpilot.Sample) dbpilot.Batch {
	return dbpilot.Batch{Instance: k, Cluster: "main", Role: role, Collector: collector, Time: at, Samples: samples}
}

func counter(name string, v float64, ls ...string) dbpilot.Sample {
	return dbpilot.Sample{Name: name, Value: v, Type: dbpilot.Counter, Labels: pairs(ls), Help: "Generic counter metric from SHOW GLOBAL STATUS."}
}

func gauge(name string, v float64, ls ...string) dbpilot.Sample {
	return dbpilot.Sample{Name: name, Value: v, Type: dbpilot.Gauge, Labels: pairs(ls)}
}

func pairs(ls []string) []dbpilot.Label {
	var out []dbpilot.Label
	for i := 0; i+1 < len(ls); i += 2 {
		out = append(out, dbpilot.Label{Name: ls[i], Value: ls[i+1]})
	}
	return out
}

func mustWrite(t *testing.T, s *Store, b dbpilot.Batch) {
	t.Helper()
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("write %s %s: %v", b.Instance, b.Collector, err)
	}
}

// writeMinute writes 61 one-second batches from t0: a counter going up 10
// per second, a gauge and a labelled replication gauge.
func writeMinute(t *testing.T, s *Store) {
	t.Helper()
	for i := range 61 {
		at := t0.Add(time.Duration(i) * time.Second)
		mustWrite(t, s, batch(primary, "primary", "global_status", at,
			counter("mysql_global_status_queries", float64(1000+10*i)),
			gauge("mysql_global_status_threads_connected", 5),
			gauge("mysql_up", 1)))
		mustWrite(t, s, batch(replica, "replica", "global_status", at,
			counter("mysql_global_status_queries", float64(20*i)),
			gauge("mysql_global_status_threads_connected", 7),
			gauge("mysql_up", 1)))
		mustWrite(t, s, batch(replica, "replica", "replication", at,
			gauge("mysql_slave_status_seconds_behind_master", float64(i%3), "channel_name", "", "master_host", "127.0.0.1")))
	}
}

func TestQueryInstantAndRange(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	ctx := context.Background()
	end := t0.Add(60 * time.Second)

	got, err := s.QueryInstant(ctx, `mysql_global_status_threads_connected`, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("instant: %d series, want 2: %v", len(got), got)
	}
	byInstance := map[string]dbpilot.Series{}
	for _, ser := range got {
		byInstance[ser.Labels["instance"]] = ser
	}
	p := byInstance["127.0.0.1:3306"]
	want := map[string]string{"__name__": "mysql_global_status_threads_connected", "instance": "127.0.0.1:3306", "cluster": "main", "role": "primary"}
	if !equalMaps(p.Labels, want) {
		t.Errorf("labels %v, want %v", p.Labels, want)
	}
	if len(p.Points) != 1 || p.Points[0].V != 5 || !p.Points[0].T.Equal(end) {
		t.Errorf("points %v, want 5 at %s", p.Points, end)
	}
	if r := byInstance["127.0.0.1:3307"]; r.Labels["role"] != "replica" || r.Points[0].V != 7 {
		t.Errorf("replica %v", r)
	}

	// Sample labels come along; an empty label value is no label.
	got, err = s.QueryInstant(ctx, `mysql_slave_status_seconds_behind_master{master_host="127.0.0.1"}`, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["instance"] != "127.0.0.1:3307" || got[0].Labels["role"] != "replica" {
		t.Fatalf("replication: %v", got)
	}
	if _, ok := got[0].Labels["channel_name"]; ok {
		t.Errorf("empty label stored: %v", got[0].Labels)
	}

	// Counters stay counters: rates at query time.
	got, err = s.QueryInstant(ctx, `rate(mysql_global_status_queries{role="primary"}[1m])`, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || math.Abs(got[0].Points[0].V-10) > 1e-9 {
		t.Fatalf("rate: %v, want 10/s", got)
	}
	if _, ok := got[0].Labels["__name__"]; ok {
		t.Errorf("rate keeps __name__: %v", got[0].Labels)
	}
	got, err = s.QueryInstant(ctx, `sum by (cluster) (rate(mysql_global_status_queries[1m]))`, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || math.Abs(got[0].Points[0].V-30) > 1e-9 || got[0].Labels["cluster"] != "main" {
		t.Fatalf("sum of rates: %v, want 30/s", got)
	}

	// Range: one point per step.
	got, err = s.QueryRange(ctx, `mysql_global_status_queries{role="primary"}`, t0, end, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Points) != 7 {
		t.Fatalf("range: %v, want 1 series of 7 points", got)
	}
	for i, pt := range got[0].Points {
		if want := float64(1000 + 100*i); pt.V != want || !pt.T.Equal(t0.Add(time.Duration(i)*10*time.Second)) {
			t.Errorf("point %d: %v, want %v at %s", i, pt, want, t0.Add(time.Duration(i)*10*time.Second))
		}
	}
	got, err = s.QueryRange(ctx, `rate(mysql_global_status_queries[30s])`, t0.Add(30*time.Second), end, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Points) != 3 {
		t.Fatalf("range rate: %v", got)
	}

	// A scalar is one series without labels.
	got, err = s.QueryInstant(ctx, `1 + 1`, end)
	if err != nil || len(got) != 1 || got[0].Points[0].V != 2 || len(got[0].Labels) != 0 {
		t.Fatalf("scalar: %v %v", got, err)
	}
}

func TestQueryErrors(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	ctx := context.Background()
	end := t0.Add(60 * time.Second)
	for _, tc := range []struct {
		name, expr string
		code       string
		msg        string
	}{
		{"parse", `rate(mysql_up[1m]`, dbpilot.EINVALID, "parse error"},
		{"string", `"text"`, dbpilot.EINVALID, "not numbers"},
		{"execution", `mysql_up + ignoring(instance, role) mysql_up`, dbpilot.EINVALID, "many-to-many"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.QueryInstant(ctx, tc.expr, end)
			if err == nil || dbpilot.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v (code %s), want code %s with %q", err, dbpilot.ErrorCode(err), tc.code, tc.msg)
			}
		})
	}
	if _, err := s.QueryRange(ctx, `mysql_up`, end, t0, time.Second); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("end before start: %v", err)
	}
	if _, err := s.QueryRange(ctx, `mysql_up`, t0, end, 0); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("zero step: %v", err)
	}
	if _, err := s.QueryRange(ctx, `mysql_up`, t0, t0.Add(24*time.Hour), time.Second); err == nil || !strings.Contains(err.Error(), "11000 points") {
		t.Errorf("too many points: %v", err)
	}
}

func TestSeries(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	ctx := context.Background()
	got, err := s.Series(ctx, []string{`mysql_up`, `{__name__="mysql_slave_status_seconds_behind_master"}`}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("series %v, want 3", got)
	}
	for _, ls := range got {
		if ls["instance"] == "" || ls["cluster"] != "main" || ls["role"] == "" {
			t.Errorf("series without pipeline labels: %v", ls)
		}
	}
	// Outside the time range: nothing.
	got, err = s.Series(ctx, []string{`mysql_up`}, t0.Add(-time.Hour), t0.Add(-30*time.Minute))
	if err != nil || len(got) != 0 {
		t.Errorf("series before the data: %v %v", got, err)
	}
	if _, err := s.Series(ctx, []string{`mysql_up{`}, time.Time{}, time.Time{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("bad selector: %v", err)
	}
	if _, err := s.Series(ctx, nil, time.Time{}, time.Time{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("no selector: %v", err)
	}
}

func TestStaleness(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	mustWrite(t, s, batch(primary, "primary", "processlist", t0,
		gauge("mysql_info_schema_processlist_threads", 3, "state", "sending data"),
		gauge("mysql_info_schema_processlist_threads", 1, "state", "sleep")))
	// The next batch lacks "sending data": that series ends at once, not
	// after the 5 minute lookback.
	mustWrite(t, s, batch(primary, "primary", "processlist", t0.Add(time.Second),
		gauge("mysql_info_schema_processlist_threads", 2, "state", "sleep")))
	got, err := s.QueryInstant(ctx, `mysql_info_schema_processlist_threads`, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["state"] != "sleep" || got[0].Points[0].V != 2 {
		t.Fatalf("after a series vanished: %v", got)
	}

	// A role change ends the series under the old role.
	mustWrite(t, s, batch(primary, "replica", "processlist", t0.Add(2*time.Second),
		gauge("mysql_info_schema_processlist_threads", 4, "state", "sleep")))
	got, err = s.QueryInstant(ctx, `mysql_info_schema_processlist_threads`, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["role"] != "replica" {
		t.Fatalf("after a role change: %v", got)
	}
}

func TestForgetEndsSeries(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Now().Add(-2 * time.Second)
	mustWrite(t, s, batch(primary, "primary", "global_status", at, gauge("mysql_up", 1)))
	mustWrite(t, s, batch(replica, "replica", "global_status", at, gauge("mysql_up", 1)))
	// Forget ends every series of the instance, whatever the spelling of
	// its address; without the staleness markers they would stay for the
	// 5 minute lookback.
	s.Forget(dbpilot.InstanceKey{Host: "localhost", Port: 3306})
	got, err := s.QueryInstant(ctx, `mysql_up`, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["instance"] != "127.0.0.1:3307" {
		t.Fatalf("after Forget: %v", got)
	}
}

func TestWriteRefusals(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()

	// Invalid names are refused one by one; the rest is stored. Sample
	// labels named as pipeline labels are kept as exported_*.
	err := s.Write(ctx, batch(primary, "primary", "global_status", t0,
		gauge("mysql up", 1),
		gauge("mysql_global_status_x", 1, "bad-label", "v"),
		gauge("mysql_global_status_threads_running", 2, "instance", "other:1", "channel", "c1")))
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "2 of 3 samples not stored") || !strings.Contains(err.Error(), `"mysql up"`) {
		t.Fatalf("invalid samples: %v", err)
	}
	got, err := s.QueryInstant(ctx, `mysql_global_status_threads_running`, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["instance"] != "127.0.0.1:3306" || got[0].Labels["exported_instance"] != "other:1" || got[0].Labels["channel"] != "c1" {
		t.Fatalf("stored: %v", got)
	}

	// Time going back: the samples are refused as out of order and
	// counted; later batches are stored again.
	err = s.Write(ctx, batch(primary, "primary", "global_status", t0.Add(-time.Second),
		gauge("mysql_global_status_threads_running", 9, "instance", "other:1", "channel", "c1")))
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("out of order: %v", err)
	}
	mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(time.Second),
		gauge("mysql_global_status_threads_running", 3, "instance", "other:1", "channel", "c1")))
	if v := scrapeValue(t, s, "dbpilot_tsdb_samples_rejected_total"); v != 3 {
		t.Errorf("rejected %v, want 3", v)
	}
	if v := scrapeValue(t, s, "dbpilot_tsdb_write_errors_total"); v != 0 {
		t.Errorf("write errors %v, want 0", v)
	}

	// A canceled context stores nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Write(cctx, batch(primary, "primary", "x", t0, gauge("mysql_up", 1))); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestOpenAndClose(t *testing.T) {
	if _, err := Open(Options{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("no dir: %v", err)
	}
	dir := t.TempDir() + "/metrics"
	s, err := Open(Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT {
		t.Errorf("second open of %s: %v, want a conflict", dir, err)
	}
	mustWrite(t, s, batch(primary, "primary", "global_status", t0, gauge("mysql_up", 1)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), batch(primary, "primary", "global_status", t0.Add(time.Second), gauge("mysql_up", 1))); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("write after close: %v", err)
	}
	if _, err := s.QueryInstant(context.Background(), "mysql_up", t0); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("query after close: %v", err)
	}
	// /metrics keeps answering from memory.
	if v := scrapeValue(t, s, "mysql_up"); v != 1 {
		t.Errorf("mysql_up after close: %v", v)
	}

	// Samples survive a reopen.
	s, err = Open(Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.QueryInstant(context.Background(), "mysql_up", t0)
	if err != nil || len(got) != 1 {
		t.Fatalf("after reopen: %v %v", got, err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestConcurrentUse writes, scrapes, queries and forgets at once (run with
// -race).
func TestConcurrentUse(t *testing.T) {
	s := openTest(t)
	f := newFleet(6, 50)
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for sec := range 40 {
				for i := w; i < len(f.instances); i += 3 {
					// Samples of a forgotten instance may now be out of
					// order (EINVALID): Forget ended its series at the
					// current time.
					err := s.Write(context.Background(), f.batch(i, start.Add(time.Duration(sec)*time.Second)))
					if err != nil && dbpilot.ErrorCode(err) != dbpilot.EINVALID {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	var rg sync.WaitGroup
	rg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(rec.Body); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.QueryInstant(context.Background(), `count(mysql_global_status_synthetic_001)`, time.Now()); err != nil {
				t.Error(err)
				return
			}
			s.Forget(f.instances[0])
		}
	})
	rg.Wait()
}

// TestPartialBatchKeepsSeries: a partial batch (global_status between its
// full runs) leaves the collector's other series alive; the next complete
// batch without them ends them.
func TestPartialBatchKeepsSeries(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	mustWrite(t, s, batch(primary, "primary", "global_status", t0,
		gauge("mysql_global_status_questions", 10), gauge("mysql_global_status_ssl_accepts", 0)))
	b := batch(primary, "primary", "global_status", t0.Add(time.Second), gauge("mysql_global_status_questions", 11))
	b.Partial = true
	mustWrite(t, s, b)
	got, err := s.QueryInstant(ctx, `mysql_global_status_ssl_accepts`, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("a partial batch ended the series it lacks: %v", got)
	}
	mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(2*time.Second), gauge("mysql_global_status_questions", 12)))
	if got, _ = s.QueryInstant(ctx, `mysql_global_status_ssl_accepts`, t0.Add(3*time.Second)); len(got) != 0 {
		t.Fatalf("a complete batch kept a series it lacks: %v", got)
	}
}

// TestFromZero: an idle counter's first value (FromZero) is preceded by a 0
// at the source's previous write, so increase() counts its first events.
func TestFromZero(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 5 {
		mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(time.Duration(i)*time.Second), counter("mysql_global_status_questions", float64(10+i))))
	}
	moved := counter("mysql_global_status_innodb_deadlocks", 2)
	moved.FromZero = true
	mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(5*time.Second), counter("mysql_global_status_questions", 15), moved))
	mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(6*time.Second), counter("mysql_global_status_questions", 16), counter("mysql_global_status_innodb_deadlocks", 2)))
	got, err := s.QueryRange(ctx, `mysql_global_status_innodb_deadlocks`, t0, t0.Add(6*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Points) != 3 || got[0].Points[0].V != 0 || !got[0].Points[0].T.Equal(t0.Add(4*time.Second)) || got[0].Points[1].V != 2 {
		t.Fatalf("points = %+v, want 0 at +4s, then 2, 2", got)
	}
	inc, err := s.QueryInstant(ctx, `increase(mysql_global_status_innodb_deadlocks[10s])`, t0.Add(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(inc) != 1 || inc[0].Points[0].V < 2 {
		t.Fatalf("increase = %+v, want >= 2 (the first deadlocks counted)", inc)
	}
	// The first batch of a source has no previous write: no 0 is invented.
	first := counter("mysql_global_status_innodb_deadlocks", 1)
	first.FromZero = true
	mustWrite(t, s, batch(replica, "replica", "global_status", t0, first))
	got, err = s.QueryRange(ctx, `mysql_global_status_innodb_deadlocks{role="replica"}`, t0.Add(-time.Second), t0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Points) != 1 || got[0].Points[0].V != 1 {
		t.Fatalf("points = %+v, want 1 alone", got)
	}
}

// TestUnchangedGauges: a gauge whose value does not change is appended
// every UnchangedEvery, a changed value at once, a counter every batch;
// queries at every second see the gauge's value all along.
func TestUnchangedGauges(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 40 {
		v := 5.0
		if i >= 20 && i < 22 {
			v = 6 // a change for two seconds
		}
		mustWrite(t, s, batch(primary, "primary", "global_variables", t0.Add(time.Duration(i)*time.Second),
			gauge("mysql_global_variables_max_connections", v), counter("mysql_global_status_questions", float64(i)), gauge("mysql_up", 1)))
	}
	count := func(expr string) float64 {
		t.Helper()
		got, err := s.QueryInstant(ctx, expr, t0.Add(39*time.Second))
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %v", expr, got, err)
		}
		return got[0].Points[0].V
	}
	// 0 and 15 s; 20 (changed), 22 (changed back), 37 (15 s after).
	if n := count(`count_over_time(mysql_global_variables_max_connections[1m])`); n != 5 {
		t.Errorf("gauge samples stored: %v, want 5", n)
	}
	if n := count(`count_over_time(mysql_global_status_questions[1m])`); n != 40 {
		t.Errorf("counter samples stored: %v, want 40", n)
	}
	// mysql_up is written every second, unchanged or not: a gap in it means
	// the server was not read.
	if n := count(`count_over_time(mysql_up[1m])`); n != 40 {
		t.Errorf("mysql_up samples stored: %v, want 40", n)
	}
	got, err := s.QueryRange(ctx, `mysql_global_variables_max_connections`, t0, t0.Add(39*time.Second), time.Second)
	if err != nil || len(got) != 1 || len(got[0].Points) != 40 {
		t.Fatalf("range: %v %v", got, err)
	}
	for i, p := range got[0].Points {
		want := 5.0
		if i >= 20 && i < 22 {
			want = 6
		}
		if p.V != want {
			t.Errorf("at +%ds: %v, want %v", i, p.V, want)
		}
	}
	// Windows of 30 s hold two samples at least: deriv and delta answer.
	if d := count(`delta(mysql_global_variables_max_connections[30s])`); d != 0 {
		t.Errorf("delta over 30 s: %v", d)
	}
}

// TestWriteAfterHeadGC: the store's cached series references survive the
// head's garbage collection of their series (a head compaction past
// samples older than the block range): the next append re-creates the
// series from its labels instead of failing or writing to another.
func TestWriteAfterHeadGC(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	mustWrite(t, s, batch(primary, "primary", "global_status", t0, gauge("mysql_global_status_threads_connected", 3), counter("mysql_global_status_questions", 1)))
	// Truncate the head past every sample: its series are garbage-collected
	// and the references the store holds point at nothing.
	if err := s.db.Head().Truncate(timestamp.FromTime(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if n := s.db.Head().NumSeries(); n != 0 {
		t.Fatalf("head series after truncation: %d", n)
	}
	at := t0.Add(time.Hour + time.Second)
	mustWrite(t, s, batch(primary, "primary", "global_status", at, gauge("mysql_global_status_threads_connected", 3), counter("mysql_global_status_questions", 2)))
	for _, q := range []string{`mysql_global_status_threads_connected`, `mysql_global_status_questions`} {
		got, err := s.QueryInstant(ctx, q, at)
		if err != nil || len(got) != 1 || got[0].Labels["instance"] != primary.String() {
			t.Fatalf("%s after the head's GC: %v %v", q, got, err)
		}
	}
	if n := s.db.Head().NumSeries(); n != 2 {
		t.Errorf("head series: %d, want 2", n)
	}
}
