package remotewrite

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// TestQuerierAnswers checks how the querier reads answers a real server
// gives less readily: a POST refused (it asks again with GET), server
// errors, bodies that are not the API's, and results that are not numbers.
func TestQuerierAnswers(t *testing.T) {
	const vector = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"db1:3306"},"value":[1700000000.5,"42"]}]}}`
	for _, tc := range []struct {
		name     string
		postCode int // the answer to a POST: 0 answers as a GET
		code     int
		body     string
		wantCode string // "" for success
	}{
		{"post", 0, 200, vector, ""},
		{"get after 405", http.StatusMethodNotAllowed, 200, vector, ""},
		{"bad expression", 0, 400, `{"status":"error","errorType":"bad_data","error":"parse error"}`, dbpilot.EINVALID},
		{"victoriametrics status", 0, 422, `{"status":"error","errorType":"422","error":"cannot parse"}`, dbpilot.EINVALID},
		{"unavailable", 0, 503, `overloaded`, dbpilot.EUNAVAIL},
		{"not json", 0, 200, `<html>`, dbpilot.EINTERNAL},
		{"inconsistent", 0, 400, `{"status":"success","data":{}}`, dbpilot.EINTERNAL},
		{"string", 0, 200, `{"status":"success","data":{"resultType":"string","result":[1700000000,"x"]}}`, dbpilot.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var methods []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				methods = append(methods, r.Method)
				if err := r.ParseForm(); err != nil || r.Form.Get("query") != "up" || r.Form.Get("time") != "1700000000.5" || r.URL.Path != "/prefix/api/v1/query" {
					t.Errorf("request %s %s form %v (%v)", r.Method, r.URL.Path, r.Form, err)
				}
				if r.Method == http.MethodPost && tc.postCode != 0 {
					w.WriteHeader(tc.postCode)
					return
				}
				w.WriteHeader(tc.code)
				w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			q, err := NewQuerier(QueryOptions{URL: srv.URL + "/prefix/"})
			if err != nil {
				t.Fatal(err)
			}
			series, err := q.QueryInstant(context.Background(), "up", time.Unix(1700000000, 5e8))
			if got := dbpilot.ErrorCode(err); err != nil && got != tc.wantCode || err == nil && tc.wantCode != "" {
				t.Fatalf("error %v (code %q), want code %q", err, got, tc.wantCode)
			}
			if tc.wantCode == "" {
				if len(series) != 1 || series[0].Labels["instance"] != "db1:3306" || len(series[0].Points) != 1 ||
					series[0].Points[0].V != 42 || !series[0].Points[0].T.Equal(time.Unix(1700000000, 5e8)) {
					t.Errorf("series %+v", series)
				}
			}
			want := []string{http.MethodPost}
			if tc.postCode != 0 {
				want = append(want, http.MethodGet)
			}
			if len(methods) != len(want) || methods[0] != want[0] || methods[len(methods)-1] != want[len(want)-1] {
				t.Errorf("requests %v, want %v", methods, want)
			}
		})
	}
}
