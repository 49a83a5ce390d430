package metrics

import (
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dbpilot/dbpilot"
)

// scrape parses /metrics as Prometheus would.
func scrape(t *testing.T, s *Store) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, text)
	}
	return fams, text
}

// scrapeValue returns the value of the only series of a family, or -1.
func scrapeValue(t *testing.T, s *Store, name string) float64 {
	t.Helper()
	fams, _ := scrape(t, s)
	mf := fams[name]
	if mf == nil || len(mf.Metric) == 0 {
		return -1
	}
	m := mf.Metric[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestExposition(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	// The same series from a second collector, a label to escape, a help
	// text to escape, special values.
	mustWrite(t, s, batch(primary, "primary", "global_status_copy", t0.Add(61*time.Second),
		gauge("mysql_up", 1),
		gauge("mysql_info_schema_processlist_threads", 2, "state", "say \"hi\"\\\nnow"),
		dbpilot.Sample{Name: "mysql_global_variables_max_connections", Value: 151, Help: "Generic gauge\nfrom \\ SHOW GLOBAL VARIABLES."},
		gauge("mysql_heartbeat_lag_seconds", math.Inf(1))))

	fams, text := scrape(t, s)
	if mf := fams["mysql_global_status_queries"]; mf.GetType() != dto.MetricType_COUNTER || len(mf.Metric) != 2 || mf.GetHelp() == "" {
		t.Errorf("queries family: %v", mf)
	}
	if mf := fams["mysql_up"]; mf.GetType() != dto.MetricType_GAUGE || len(mf.Metric) != 2 {
		t.Errorf("mysql_up family (one series collected twice): %v", mf)
	}
	if mf := fams["mysql_global_variables_max_connections"]; mf.GetHelp() != "Generic gauge\nfrom \\ SHOW GLOBAL VARIABLES." {
		t.Errorf("help %q", mf.GetHelp())
	}
	if mf := fams["mysql_info_schema_processlist_threads"]; labelMap(mf.Metric[0])["state"] != "say \"hi\"\\\nnow" {
		t.Errorf("escaped label: %v", mf.Metric[0])
	}
	if v := fams["mysql_heartbeat_lag_seconds"].Metric[0].Gauge.GetValue(); !math.IsInf(v, 1) {
		t.Errorf("+Inf: %v", v)
	}
	if v := fams["mysql_global_status_queries"].Metric[0].Counter.GetValue(); v != 1600 {
		t.Errorf("latest queries of the primary %v, want 1600", v)
	}

	// Every family has a TYPE line; collected ones carry instance, cluster
	// and role; no series twice.
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(name, " ")
			if !strings.Contains(text, "# TYPE "+name+" ") {
				t.Errorf("family %s has no TYPE", name)
			}
		}
	}
	seen := map[string]bool{}
	for name, mf := range fams {
		if mf.GetType() == dto.MetricType_UNTYPED {
			t.Errorf("family %s untyped", name)
		}
		for _, m := range mf.Metric {
			ls := labelMap(m)
			if strings.HasPrefix(name, "mysql_") && (ls["instance"] == "" || ls["cluster"] != "main" || ls["role"] == "") {
				t.Errorf("%s%v lacks instance/cluster/role", name, ls)
			}
			key := name + model.LabelSet(toLabelSet(ls)).String()
			if seen[key] {
				t.Errorf("duplicate series %s", key)
			}
			seen[key] = true
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes",
		"dbpilot_tsdb_head_series", "dbpilot_tsdb_samples_appended_total", "dbpilot_tsdb_write_errors_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if v := scrapeValue(t, s, "dbpilot_tsdb_head_series"); v != 10 {
		t.Errorf("head series %v, want 10", v)
	}
	// Every second: the two counters, the lag that moves and the two
	// instances' mysql_up (written every second, unchanged or not); the two
	// other gauges that never change every UnchangedEvery (0, 15, 30, 45,
	// 60 s).
	if v := scrapeValue(t, s, "dbpilot_tsdb_samples_appended_total"); v != 61*5+2*5+4 {
		t.Errorf("appended %v, want %d", v, 61*5+2*5+4)
	}

	// Forget removes the instance.
	s.Forget(dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3307})
	fams, _ = scrape(t, s)
	for name, mf := range fams {
		for _, m := range mf.Metric {
			if labelMap(m)["instance"] == "127.0.0.1:3307" {
				t.Errorf("forgotten instance still in %s", name)
			}
		}
	}
	if fams["mysql_slave_status_seconds_behind_master"] != nil {
		t.Error("a family of the forgotten instance only is still there")
	}
	if mf := fams["mysql_up"]; mf == nil || len(mf.Metric) != 1 {
		t.Errorf("mysql_up after Forget: %v", mf)
	}
}

func TestExpositionGzipAndMethods(t *testing.T) {
	s := openTest(t)
	mustWrite(t, s, batch(primary, "primary", "global_status", t0, gauge("mysql_up", 1)))
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `mysql_up{cluster="main",instance="127.0.0.1:3306",role="primary"} 1`) {
		t.Errorf("gzipped body:\n%s", body)
	}
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", rec.Code)
	}
}

func toLabelSet(m map[string]string) map[model.LabelName]model.LabelValue {
	out := make(map[model.LabelName]model.LabelValue, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out[model.LabelName(k)] = model.LabelValue(m[k])
	}
	return out
}
