package metrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

type apiBody struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type queryData struct {
	ResultType string            `json:"resultType"`
	Result     []json.RawMessage `json:"result"`
}

type vectorItem struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

type matrixItem struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

func get(t *testing.T, h http.Handler, target string) (int, apiBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return decodeAPI(t, rec)
}

func decodeAPI(t *testing.T, rec *httptest.ResponseRecorder) (int, apiBody) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	var b apiBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return rec.Code, b
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestAPIQuery(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	h := s.APIHandler()
	end := t0.Add(60 * time.Second)

	// Instant: a vector of [seconds, "value"].
	code, b := get(t, h, "/api/metrics/query?expr="+url.QueryEscape(`rate(mysql_global_status_queries[1m])`)+"&time="+unix(end))
	if code != http.StatusOK || b.Status != "success" {
		t.Fatalf("instant: %d %+v", code, b)
	}
	var qd queryData
	if err := json.Unmarshal(b.Data, &qd); err != nil {
		t.Fatal(err)
	}
	if qd.ResultType != "vector" || len(qd.Result) != 2 {
		t.Fatalf("instant data: %s", b.Data)
	}
	var vi vectorItem
	if err := json.Unmarshal(qd.Result[0], &vi); err != nil {
		t.Fatal(err)
	}
	if vi.Metric["instance"] == "" || vi.Metric["cluster"] != "main" || vi.Value[0] != float64(end.Unix()) {
		t.Errorf("vector item %s", qd.Result[0])
	}
	if v, ok := vi.Value[1].(string); !ok || (v != "10" && v != "20") {
		t.Errorf("value %#v, want the string 10 or 20", vi.Value[1])
	}

	// Range, RFC 3339 times and a duration step, under Prometheus' path with
	// "query" as Grafana sends it.
	q := url.Values{"query": {`mysql_global_status_queries{role="primary"}`}, "start": {t0.Format(time.RFC3339)},
		"end": {end.Format(time.RFC3339)}, "step": {"15s"}}
	code, b = get(t, h, "/api/metrics/api/v1/query_range?"+q.Encode())
	if code != http.StatusOK {
		t.Fatalf("range: %d %+v", code, b)
	}
	if err := json.Unmarshal(b.Data, &qd); err != nil {
		t.Fatal(err)
	}
	if qd.ResultType != "matrix" || len(qd.Result) != 1 {
		t.Fatalf("range data: %s", b.Data)
	}
	var mi matrixItem
	if err := json.Unmarshal(qd.Result[0], &mi); err != nil {
		t.Fatal(err)
	}
	if mi.Metric["__name__"] != "mysql_global_status_queries" || len(mi.Values) != 5 || mi.Values[1][1] != "1150" {
		t.Errorf("matrix item %s", qd.Result[0])
	}

	// /query with start/end/step is a range query; seconds as step; POST
	// form, prefix stripped.
	form := url.Values{"expr": {`mysql_up`}, "start": {unix(t0)}, "end": {unix(end)}, "step": {"30"}}
	req := httptest.NewRequest(http.MethodPost, "/query", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	code, b = decodeAPI(t, rec)
	if err := json.Unmarshal(b.Data, &qd); code != http.StatusOK || err != nil || qd.ResultType != "matrix" || len(qd.Result) != 2 {
		t.Fatalf("POST range: %d %s", code, rec.Body)
	}

	// A scalar.
	code, b = get(t, h, "/api/metrics/query?expr=1%2B1&time=1700000000.5")
	if code != http.StatusOK || string(b.Data) != `{"resultType":"scalar","result":[1700000000.5,"2"]}` {
		t.Errorf("scalar: %d %s", code, b.Data)
	}
}

func TestAPIErrors(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	h := s.APIHandler()
	end := unix(t0.Add(60 * time.Second))
	for _, tc := range []struct {
		name, target string
		status       int
		typ, msg     string
	}{
		{"parse", "/api/metrics/query?expr=" + url.QueryEscape("rate(mysql_up[1m]"), 400, "bad_data", `invalid parameter "expr": 1:18: parse error`},
		{"empty", "/api/metrics/query", 400, "bad_data", "invalid parameter"},
		{"time", "/api/metrics/query?expr=mysql_up&time=yesterday", 400, "bad_data", `invalid parameter "time"`},
		{"step", "/api/metrics/query_range?expr=mysql_up&start=1&end=2", 400, "bad_data", `missing parameter "step"`},
		{"bad step", "/api/metrics/query_range?expr=mysql_up&start=1&end=2&step=often", 400, "bad_data", `invalid parameter "step"`},
		{"zero step", "/api/metrics/query_range?expr=mysql_up&start=1&end=2&step=0", 400, "bad_data", "zero or negative"},
		{"backwards", "/api/metrics/query_range?expr=mysql_up&start=2&end=1&step=1", 400, "bad_data", "end timestamp must not be before start"},
		{"resolution", "/api/metrics/query_range?expr=mysql_up&start=0&end=100000&step=1", 400, "bad_data", "11000 points"},
		{"range type", "/api/metrics/query_range?expr=mysql_up[1m]&start=1&end=2&step=1", 400, "bad_data", "range vector"},
		{"execution", "/api/metrics/query?time=" + end + "&expr=" + url.QueryEscape("mysql_up + ignoring(instance, role) mysql_up"), 422, "execution", "many-to-many"},
		{"timeout", "/api/metrics/query?timeout=1ns&expr=mysql_up", 503, "timeout", ""},
		{"no match", "/api/metrics/series", 400, "bad_data", "no match[] parameter provided"},
		{"bad match", "/api/metrics/series?match[]=" + url.QueryEscape("mysql_up{"), 400, "bad_data", `invalid parameter "match[]"`},
		{"not found", "/api/metrics/nothing", 404, "not_found", "no metrics API endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := get(t, h, tc.target)
			if code != tc.status || b.Status != "error" || b.ErrorType != tc.typ || !strings.Contains(b.Error, tc.msg) {
				t.Errorf("%s: %d %+v, want %d %s %q", tc.target, code, b, tc.status, tc.typ, tc.msg)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/metrics/query", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, POST" {
		t.Errorf("DELETE: %d %v", rec.Code, rec.Header())
	}
}

func TestAPISeriesAndLabels(t *testing.T) {
	s := openTest(t)
	writeMinute(t, s)
	h := s.APIHandler()

	code, b := get(t, h, "/api/metrics/series?match[]=mysql_up&match[]="+url.QueryEscape(`mysql_slave_status_seconds_behind_master{role="replica"}`)+
		"&start="+unix(t0)+"&end="+unix(t0.Add(time.Minute)))
	if code != http.StatusOK {
		t.Fatalf("series: %d %+v", code, b)
	}
	var series []map[string]string
	if err := json.Unmarshal(b.Data, &series); err != nil {
		t.Fatal(err)
	}
	if len(series) != 3 {
		t.Fatalf("series %v, want 3", series)
	}
	for _, ls := range series {
		if ls["__name__"] == "" || ls["instance"] == "" || ls["cluster"] != "main" {
			t.Errorf("series labels %v", ls)
		}
	}
	code, b = get(t, h, "/api/metrics/api/v1/series?match[]=mysql_up&limit=1")
	if err := json.Unmarshal(b.Data, &series); code != http.StatusOK || err != nil || len(series) != 1 || len(b.Warnings) != 1 {
		t.Errorf("series limit 1: %d %+v", code, b)
	}

	var names []string
	code, b = get(t, h, "/api/metrics/api/v1/label/__name__/values")
	if err := json.Unmarshal(b.Data, &names); code != http.StatusOK || err != nil || len(names) != 4 || names[0] != "mysql_global_status_queries" {
		t.Errorf("metric names: %d %s", code, b.Data)
	}
	code, b = get(t, h, "/api/metrics/labels?match[]=mysql_up")
	if err := json.Unmarshal(b.Data, &names); code != http.StatusOK || err != nil || strings.Join(names, ",") != "__name__,cluster,instance,role" {
		t.Errorf("label names: %d %s", code, b.Data)
	}
	code, b = get(t, h, "/api/metrics/api/v1/status/buildinfo")
	if code != http.StatusOK || !strings.Contains(string(b.Data), `"version"`) {
		t.Errorf("buildinfo: %d %s", code, b.Data)
	}
}
