package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// answerer answers the query API with body, recording the requests.
func answerer(t *testing.T, body string, got *[]*http.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got != nil {
			*got = append(*got, r.Clone(r.Context()))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	})
}

func TestFleetMetricsMerges(t *testing.T) {
	cases := []struct {
		name, path, local, peer, want string
		warnings                      int
	}{
		{"range: disjoint and moved series", "/api/metrics/query_range?expr=mysql_up&start=1&end=3&step=1",
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"1"],[2,"1"]]},{"metric":{"instance":"m"},"values":[[1,"1"]]}]}}`,
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"b"},"values":[[1,"0"]]},{"metric":{"instance":"m"},"values":[[2,"1"],[3,"1"]]}]}}`,
			`{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"1"],[2,"1"]]},{"metric":{"instance":"m"},"values":[[1,"1"],[2,"1"],[3,"1"]]},{"metric":{"instance":"b"},"values":[[1,"0"]]}]}`, 0},
		{"instant: the newest sample of a duplicate", "/api/metrics/query?expr=mysql_up",
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"m"},"value":[10,"0"]}]}}`,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"m"},"value":[12,"1"]},{"metric":{"instance":"b"},"value":[12,"1"]}]}}`,
			`{"resultType":"vector","result":[{"metric":{"instance":"m"},"value":[12,"1"]},{"metric":{"instance":"b"},"value":[12,"1"]}]}`, 0},
		{"series", "/api/metrics/series?match[]=mysql_up",
			`{"status":"success","data":[{"__name__":"mysql_up","instance":"a"}]}`,
			`{"status":"success","data":[{"__name__":"mysql_up","instance":"a"},{"__name__":"mysql_up","instance":"b"}]}`,
			`[{"__name__":"mysql_up","instance":"a"},{"__name__":"mysql_up","instance":"b"}]`, 0},
		{"label values", "/api/metrics/label/instance/values",
			`{"status":"success","data":["b","c"]}`, `{"status":"success","data":["a","b"]}`, `["a","b","c"]`, 0},
		{"a peer's error is a warning", "/api/metrics/query?expr=up",
			`{"status":"success","data":{"resultType":"vector","result":[]}}`,
			`{"status":"error","errorType":"execution","error":"boom"}`, `{"resultType":"vector","result":[]}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var peerReqs []*http.Request
			peer := httptest.NewServer(answerer(t, c.peer, &peerReqs))
			defer peer.Close()
			down := httptest.NewServer(http.NotFoundHandler())
			down.Close() // a serve that was killed
			f := &FleetMetrics{Local: answerer(t, c.local, nil), Peers: func() []string { return []string{peer.URL, down.URL} }, Token: "tok"}
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
			var a fleetAnswer
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Status != "success" {
				t.Fatalf("answer %d %s: %v", rec.Code, rec.Body, err)
			}
			if string(a.Data) != c.want {
				t.Errorf("data\n got %s\nwant %s", a.Data, c.want)
			}
			if len(a.Warnings) != c.warnings+1 || !strings.Contains(strings.Join(a.Warnings, " "), down.URL) {
				t.Errorf("warnings %q: want the serve that does not answer and %d more", a.Warnings, c.warnings)
			}
			if len(peerReqs) != 1 {
				t.Fatalf("peer asked %d times", len(peerReqs))
			}
			r := peerReqs[0]
			if r.Header.Get(PeerHeader) == "" || r.Header.Get("Authorization") != "Bearer tok" {
				t.Errorf("peer request headers %v: want the peer mark and the token", r.Header)
			}
			if strings.HasSuffix(r.URL.Path, "/query") && r.URL.Query().Get("time") == "" {
				t.Errorf("instant query not pinned to one time: %s", r.URL)
			}
		})
	}
}

// A peer's read is answered by the local store alone: no fan-out again.
func TestFleetMetricsPeerReadIsLocal(t *testing.T) {
	asked := false
	f := &FleetMetrics{Local: answerer(t, `{"status":"success","data":["x"]}`, nil), Peers: func() []string { asked = true; return nil }}
	req := httptest.NewRequest("GET", "/api/metrics/labels?"+url.Values{}.Encode(), nil)
	req.Header.Set(PeerHeader, "1")
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, req)
	if asked || rec.Body.String() != `{"status":"success","data":["x"]}` {
		t.Errorf("peer read: asked peers %v, answer %s", asked, rec.Body)
	}
}
