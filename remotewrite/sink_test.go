package remotewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"

	"github.com/dbpilot/dbpilot"
	dbtest "github.com/dbpilot/dbpilot/internal/testutil"
)

// receiver is an httptest remote-write endpoint that decodes what it gets.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []*http.Request
	series  []prompb.TimeSeries
	samples int
	// answer, when set, chooses the status of each request (n counts from 1).
	answer func(n int) int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, r)
		n := len(rc.reqs)
		answer := rc.answer
		rc.mu.Unlock()
		if answer != nil {
			if code := answer(n); code != http.StatusOK {
				http.Error(w, "try later", code)
				return
			}
		}
		pb, err := snappy.Decode(nil, body)
		if err != nil {
			t.Errorf("body is not snappy block format: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(pb); err != nil {
			t.Errorf("body is not a WriteRequest: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		rc.mu.Lock()
		for _, ts := range req.Timeseries {
			rc.samples += len(ts.Samples)
		}
		rc.series = append(rc.series, req.Timeseries...)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() (int, []prompb.TimeSeries) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.samples, append([]prompb.TimeSeries(nil), rc.series...)
}

func newSink(t *testing.T, opt Options) *Sink {
	t.Helper()
	if opt.BatchSendDeadline == 0 {
		opt.BatchSendDeadline = 20 * time.Millisecond
	}
	if opt.MinBackoff == 0 {
		opt.MinBackoff, opt.MaxBackoff = time.Millisecond, 10*time.Millisecond
	}
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func batch(at time.Time, samples ...dbpilot.Sample) dbpilot.Batch {
	return dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "db1", Port: 3306}, Cluster: "main", Role: "primary", Collector: "global_status", Time: at, Samples: samples}
}

func waitIdle(t *testing.T, s *Sink) Stats {
	t.Helper()
	var st Stats
	dbtest.WaitFor(t, 10*time.Second, "the queue drained", func() (bool, string) {
		st = s.Stats()
		return st.Pending == 0 && st.Sent+st.Failed+st.Dropped == st.Samples, fmt.Sprintf("%+v", st)
	})
	return st
}

// TestSinkWritesProtocol: one request carries the batch as a snappy block
// of a prompb.WriteRequest, with the protocol's headers, basic auth from
// the URL and custom headers; labels are sorted, with instance, cluster,
// role, and a sample's own "instance" kept as exported_instance.
func TestSinkWritesProtocol(t *testing.T) {
	rc := newReceiver(t)
	s := newSink(t, Options{URL: strings.Replace(rc.URL, "http://", "http://u:secret@", 1) + "/api/v1/write", Headers: map[string]string{"X-Scope-OrgID": "dbp"}})
	at := time.UnixMilli(1_700_000_000_123)
	err := s.Write(context.Background(), batch(at,
		dbpilot.Sample{Name: "mysql_global_status_questions", Value: 42, Type: dbpilot.Counter},
		dbpilot.Sample{Name: "mysql_info", Labels: []dbpilot.Label{{Name: "version", Value: "11.4"}, {Name: "instance", Value: "x"}}, Value: 1},
	))
	if err != nil {
		t.Fatal(err)
	}
	st := waitIdle(t, s)
	if st.Sent != 2 || st.Sends["204"] != 1 || st.Bytes == 0 || st.LastSuccess.IsZero() {
		t.Errorf("stats: %+v", st)
	}
	rc.mu.Lock()
	r := rc.reqs[0]
	rc.mu.Unlock()
	for k, want := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0", "X-Scope-OrgID": "dbp"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}
	if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "secret" {
		t.Errorf("basic auth: %q %q %v", u, p, ok)
	}
	_, series := rc.received()
	got := map[string]prompb.Sample{}
	for _, ts := range series {
		var parts []string
		for _, l := range ts.Labels {
			parts = append(parts, l.Name+"="+l.Value)
		}
		got[strings.Join(parts, ",")] = ts.Samples[0]
	}
	want := map[string]float64{
		"__name__=mysql_global_status_questions,cluster=main,instance=db1:3306,role=primary":               42,
		"__name__=mysql_info,cluster=main,exported_instance=x,instance=db1:3306,role=primary,version=11.4": 1,
	}
	for k, v := range want {
		if s, ok := got[k]; !ok || s.Value != v || s.Timestamp != at.UnixMilli() {
			t.Errorf("series %s: %+v (present %v); got %v", k, s, ok, got)
		}
	}
}

// TestSinkRetries: 5xx and 429 are retried until accepted; other 4xx are
// not, and count as failed.
func TestSinkRetries(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(n int) int
		sent, fail int64
		sends      map[string]int64
	}{
		{"503 then ok", func(n int) int { return map[bool]int{true: 503, false: 200}[n <= 2] }, 1, 0, map[string]int64{"503": 2, "204": 1}},
		{"429 then ok", func(n int) int { return map[bool]int{true: 429, false: 200}[n <= 1] }, 1, 0, map[string]int64{"429": 1, "204": 1}},
		{"400", func(int) int { return 400 }, 0, 1, map[string]int64{"400": 1}},
		{"401", func(int) int { return 401 }, 0, 1, map[string]int64{"401": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t)
			rc.answer = tt.answer
			s := newSink(t, Options{URL: rc.URL})
			s.Write(context.Background(), batch(time.Now(), dbpilot.Sample{Name: "m", Value: 1}))
			st := waitIdle(t, s)
			if st.Sent != tt.sent || st.Failed != tt.fail || len(st.Sends) != len(tt.sends) {
				t.Fatalf("stats: %+v", st)
			}
			for code, n := range tt.sends {
				if st.Sends[code] != n {
					t.Errorf("sends[%s] = %d, want %d (%v)", code, st.Sends[code], n, st.Sends)
				}
			}
		})
	}
}

// TestSinkDropsOldestWhenFull: while the receiver hangs, Write still
// returns at once; past the queue's capacity the oldest samples are
// dropped and counted, and every sample is sent, failed or dropped.
func TestSinkDropsOldestWhenFull(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t)
	var once sync.Once
	rc.answer = func(n int) int {
		if n == 1 {
			<-release // the first request hangs until the test releases it
		}
		return 200
	}
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	s := newSink(t, Options{URL: rc.URL, Capacity: 10, MaxSamplesPerSend: 5})
	t0 := time.Now().Add(-time.Hour)
	for i := range 100 {
		if err := s.Write(context.Background(), batch(t0.Add(time.Duration(i)*time.Second), dbpilot.Sample{Name: "m", Value: float64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Dropped == 0 || st.Pending > 15 {
		t.Errorf("while the receiver hangs: %+v", st)
	}
	once.Do(func() { close(release) })
	st := waitIdle(t, s)
	n, series := rc.received()
	// At most the capacity and one batch in flight survive.
	if st.Samples != 100 || st.Sent != int64(n) || st.Sent+st.Dropped != 100 || st.Dropped < 100-15 {
		t.Errorf("stats %+v, received %d", st, n)
	}
	// The newest sample arrived.
	var got []float64
	for _, ts := range series {
		for _, smp := range ts.Samples {
			got = append(got, smp.Value)
		}
	}
	if !slices.Contains(got, 99) {
		t.Errorf("received values %v: the newest is missing", got)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP dbpilot_remote_write_samples_dropped_total Samples dropped because the queue was full (the target was down or slow), or left at shutdown.
# TYPE dbpilot_remote_write_samples_dropped_total counter
dbpilot_remote_write_samples_dropped_total{url="%s"} %d
`, rc.URL, st.Dropped)), "dbpilot_remote_write_samples_dropped_total"); err != nil {
		t.Error(err)
	}
}

// TestSinkStalenessMarkers: a series missing from the next batch of its
// (instance, collector) is ended with Prometheus' staleness marker; so are
// an instance's series when it is forgotten.
func TestSinkStalenessMarkers(t *testing.T) {
	rc := newReceiver(t)
	s := newSink(t, Options{URL: rc.URL})
	t0 := time.Now().Add(-time.Minute)
	s.Write(context.Background(), batch(t0, dbpilot.Sample{Name: "a", Value: 1}, dbpilot.Sample{Name: "b", Value: 2}))
	s.Write(context.Background(), batch(t0.Add(time.Second), dbpilot.Sample{Name: "a", Value: 3}))
	s.Forget(dbpilot.InstanceKey{Host: "DB1", Port: 3306})
	waitIdle(t, s)
	_, series := rc.received()
	var stale []string
	for _, ts := range series {
		for _, smp := range ts.Samples {
			if value.IsStaleNaN(smp.Value) {
				stale = append(stale, ts.Labels[0].Value)
			}
		}
	}
	slices.Sort(stale)
	if strings.Join(stale, ",") != "a,b" {
		t.Errorf("staleness markers for %v, want a (forgotten) and b (gone from the batch)", stale)
	}
}

// TestSinkRefusesBadSamples: invalid names and samples not after their
// series' last are not sent, counted as failed, and named in the error.
func TestSinkRefusesBadSamples(t *testing.T) {
	rc := newReceiver(t)
	s := newSink(t, Options{URL: rc.URL})
	t0 := time.Now()
	if err := s.Write(context.Background(), batch(t0, dbpilot.Sample{Name: "ok", Value: 1}, dbpilot.Sample{Name: "bad-name", Value: 1})); err == nil || !strings.Contains(err.Error(), `"bad-name"`) {
		t.Errorf("error: %v", err)
	}
	if err := s.Write(context.Background(), batch(t0, dbpilot.Sample{Name: "ok", Value: 2})); err == nil || !strings.Contains(err.Error(), "not after") {
		t.Errorf("error: %v", err)
	}
	st := waitIdle(t, s)
	if st.Sent != 1 || st.Failed != 2 {
		t.Errorf("stats: %+v", st)
	}
}

// TestSinkHidesCredentials: neither the URL's user info and query nor a
// bearer token or header value shows in the url label, the logs or errors.
func TestSinkHidesCredentials(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := newSink(t, Options{URL: "http://user:pw-secret@127.0.0.1:1/api/v1/write?token=q-secret", Headers: map[string]string{"X-Key": "h-secret"}, Logger: log, FlushTimeout: 50 * time.Millisecond})
	s.Write(context.Background(), batch(time.Now(), dbpilot.Sample{Name: "m", Value: 1}))
	dbtest.WaitFor(t, 10*time.Second, "a failed send", func() (bool, string) { return s.Stats().Sends["error"] > 0, "" })
	s.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	mfs, _ := reg.Gather()
	b, _ := json.Marshal(mfs)
	all := logs.String() + string(b) + s.URL()
	for _, secret := range []string{"pw-secret", "q-secret", "h-secret", "user"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q shows:\n%s", secret, all)
		}
	}
	if s.URL() != "http://127.0.0.1:1/api/v1/write" || !strings.Contains(logs.String(), "remote write") {
		t.Errorf("url %q, logs %s", s.URL(), logs.String())
	}
	if st := s.Stats(); st.Dropped != 1 {
		t.Errorf("the unsent sample is not counted as dropped at Close: %+v", st)
	}
	if _, err := New(Options{URL: "http://u:pw-secret@/x"}); err == nil || strings.Contains(err.Error(), "pw-secret") {
		t.Errorf("bad URL error: %v", err)
	}
	if _, err := New(Options{URL: "http://u:pw-secret@h/x", BearerToken: "t"}); err == nil || strings.Contains(err.Error(), "pw-secret") {
		t.Errorf("two credentials error: %v", err)
	}
}

// TestQueue: the ring keeps FIFO order across growth and wrap-around, and
// drops the oldest when full.
func TestQueue(t *testing.T) {
	q := newQueue(initialQueue * 3)
	var next, dropped int
	push := func(n int) {
		for range n {
			if q.push(entry{t: int64(next)}) {
				dropped++
			}
			next++
		}
	}
	var got []entry
	push(initialQueue - 10)
	got = q.pop(got[:0], 100)
	push(initialQueue*3 + 50) // grows twice, wraps, then drops
	if q.len() != initialQueue*3 || dropped != initialQueue-10+50-100 {
		t.Fatalf("len %d dropped %d", q.len(), dropped)
	}
	want := int64(next - q.len())
	for q.len() > 0 {
		got = q.pop(got[:0], 777)
		for _, e := range got {
			if e.t != want {
				t.Fatalf("got %d, want %d", e.t, want)
			}
			want++
		}
	}
}

// TestUnqueryable: without a store or query URL, queries and the API fail
// with the reason, 503.
func TestUnqueryable(t *testing.T) {
	u := Unqueryable{Reason: "metrics.local is false and metrics.query_url is not set"}
	if _, err := u.QueryInstant(context.Background(), "up", time.Now()); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("QueryInstant: %v", err)
	}
	w := httptest.NewRecorder()
	u.APIHandler().ServeHTTP(w, httptest.NewRequest("GET", "/api/metrics/query?expr=up", nil))
	if w.Code != 503 || !strings.Contains(w.Body.String(), `"error":"metrics.local is false and metrics.query_url is not set"`) {
		t.Errorf("%d %s", w.Code, w.Body)
	}
}

// TestSinkFromZero: an idle counter's first value (FromZero) is sent with
// a 0 at the source's previous batch before it.
func TestSinkFromZero(t *testing.T) {
	rc := newReceiver(t)
	s := newSink(t, Options{URL: rc.URL})
	t0 := time.UnixMilli(1_700_000_000_000)
	s.Write(context.Background(), batch(t0, dbpilot.Sample{Name: "q", Value: 1, Type: dbpilot.Counter}))
	s.Write(context.Background(), batch(t0.Add(time.Second), dbpilot.Sample{Name: "q", Value: 2, Type: dbpilot.Counter},
		dbpilot.Sample{Name: "deadlocks", Value: 3, Type: dbpilot.Counter, FromZero: true}))
	waitIdle(t, s)
	_, series := rc.received()
	var got []string
	for _, ts := range series {
		if ts.Labels[0].Value != "deadlocks" {
			continue
		}
		for _, smp := range ts.Samples {
			got = append(got, fmt.Sprintf("%d=%g", smp.Timestamp-t0.UnixMilli(), smp.Value))
		}
	}
	if strings.Join(got, ",") != "0=0,1000=3" {
		t.Errorf("deadlocks samples %v, want 0 at the previous batch then 3", got)
	}
}
