package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// metricsServe is serve's routing: the API server at /, the metrics store's
// query API at /api/metrics/. extraQuery is added to every metrics request
// (the API's own timeout parameter, say); the Authorization header of the
// last request is kept.
type metricsServe struct {
	api, metrics http.Handler
	extraQuery   string

	mu   sync.Mutex
	auth string
}

func (m *metricsServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.auth = r.Header.Get("Authorization")
	m.mu.Unlock()
	if !strings.HasPrefix(r.URL.Path, "/api/metrics/") {
		m.api.ServeHTTP(w, r)
		return
	}
	if m.extraQuery != "" {
		r.URL.RawQuery += "&" + m.extraQuery
	}
	m.metrics.ServeHTTP(w, r)
}

// metricsEnv opens a metrics store holding a minute of samples of two
// instances, ending now, and a client of a serve that mounts its API.
func metricsEnv(t *testing.T, token string) (*metrics.Store, *metricsServe, *Client, time.Time) {
	t.Helper()
	store, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	end := time.Now().Truncate(time.Second)
	ctx := context.Background()
	for i := range 61 {
		at := end.Add(time.Duration(i-60) * time.Second)
		for n, k := range []dbpilot.InstanceKey{{Host: "127.0.0.1", Port: 3306}, {Host: "127.0.0.1", Port: 3307}} {
			err := store.Write(ctx, dbpilot.Batch{Instance: k, Cluster: "main", Role: []string{"primary", "replica"}[n],
				Collector: "global_status", Time: at, Samples: []dbpilot.Sample{
					{Name: "mysql_global_status_questions", Value: float64((n + 1) * 10 * i), Type: dbpilot.Counter},
					{Name: "mysql_global_status_threads_connected", Value: float64(5 + n), Type: dbpilot.Gauge},
					{Name: "mysql_global_status_commands_total", Labels: []dbpilot.Label{{Name: "command", Value: "select"}},
						Value: float64(3 * i), Type: dbpilot.Counter},
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	ms := &metricsServe{api: NewServer(&fakeService{}, ServerOptions{}), metrics: store.APIHandler()}
	srv := httptest.NewServer(ms)
	t.Cleanup(srv.Close)
	return store, ms, NewClient(srv.URL, token), end
}

// TestMetricsQueryLikeStore: the client answers every query as the store
// behind the API does, so that dbpilot.MetricsQuerier is the same directly
// and through serve.
func TestMetricsQueryLikeStore(t *testing.T) {
	store, ms, c, end := metricsEnv(t, "s3cret")
	ctx := context.Background()

	for _, expr := range []string{
		`mysql_global_status_threads_connected`,                 // a vector, two series
		`rate(mysql_global_status_questions[5s])`,               // fractions of a second in no point
		`sum by (command) (mysql_global_status_commands_total)`, // one label left
		`sum(mysql_global_status_threads_connected)`,            // no labels
		`1 + 1`,                      // a scalar
		`mysql_global_status_nosuch`, // nothing
	} {
		want, err := store.QueryInstant(ctx, expr, end)
		if err != nil {
			t.Fatalf("store %s: %v", expr, err)
		}
		got, err := c.QueryInstant(ctx, expr, end)
		if err != nil {
			t.Fatalf("client %s: %v", expr, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("QueryInstant(%s):\n got %+v\nwant %+v", expr, got, want)
		}
	}
	if ms.auth != "Bearer s3cret" {
		t.Errorf("Authorization %q", ms.auth)
	}

	start := end.Add(-30 * time.Second)
	for _, expr := range []string{`mysql_global_status_threads_connected`, `rate(mysql_global_status_questions[5s])`, `2 * 3`} {
		for _, step := range []time.Duration{10 * time.Second, 1500 * time.Millisecond} {
			want, err := store.QueryRange(ctx, expr, start, end, step)
			if err != nil {
				t.Fatalf("store %s: %v", expr, err)
			}
			got, err := c.QueryRange(ctx, expr, start, end, step)
			if err != nil {
				t.Fatalf("client %s: %v", expr, err)
			}
			if len(got) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("QueryRange(%s, step %s):\n got %+v\nwant %+v", expr, step, got, want)
			}
		}
	}

	// A zero time is the serve's now: the newest samples, a second old.
	got, err := c.QueryInstant(ctx, `mysql_global_status_threads_connected{instance="127.0.0.1:3307"}`, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Points[0].V != 6 || time.Since(got[0].Points[0].T) > time.Minute {
		t.Errorf("query at the serve's now: %+v", got)
	}
}

func TestMetricsQueryErrors(t *testing.T) {
	const token = "s3cret-token"
	store, ms, c, end := metricsEnv(t, token)
	ctx := context.Background()

	check := func(err error, code, msgPart string) {
		t.Helper()
		wantError(t, err, code, msgPart)
		if strings.Contains(err.Error(), token) {
			t.Errorf("token in the error %q", err)
		}
	}

	// The store's own code and message.
	for _, expr := range []string{`rate(mysql_global_status_questions[5s]`, `foo{`, `sum(rate(mysql_global_status_questions))`} {
		_, want := store.QueryInstant(ctx, expr, end)
		_, err := c.QueryInstant(ctx, expr, end)
		check(err, dbpilot.EINVALID, "metrics query "+`"`+expr+`": `)
		if err.Error() != oneLine(want.Error()) {
			t.Errorf("%s:\n client %q\n store  %q", expr, err, want)
		}
	}
	_, err := c.QueryInstant(ctx, `"a string"`, end)
	check(err, dbpilot.EINVALID, `metrics query "\"a string\"": the result is a string, not numbers`)
	_, err = c.QueryRange(ctx, `up`, end.Add(-time.Hour), end, time.Millisecond)
	check(err, dbpilot.EINVALID, "exceeded maximum resolution")
	_, err = c.QueryRange(ctx, `up`, end, end.Add(-time.Hour), time.Second)
	check(err, dbpilot.EINVALID, "end timestamp must not be before start time")

	// A long expression is shortened in the one-line message.
	long := `mysql_global_status_threads_connected{instance=~"` + strings.Repeat("x", 200) + `"} +`
	_, err = c.QueryInstant(ctx, long, end)
	check(err, dbpilot.EINVALID, `xxx"...: invalid parameter "expr"`)
	if strings.Contains(err.Error(), strings.Repeat("x", 100)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("long expression in the message: %q", err)
	}

	// The API's own timeout parameter: the query did not finish in time.
	ms.extraQuery = "timeout=1ns"
	_, err = c.QueryInstant(ctx, `sum(rate(mysql_global_status_questions[1m]))`, end)
	check(err, dbpilot.EUNAVAIL, "metrics query")
	ms.extraQuery = ""

	// A store that closed (serve stopping).
	store.Close()
	_, err = c.QueryInstant(ctx, `up`, end)
	check(err, dbpilot.EUNAVAIL, "closed")

	// A serve that stores no metrics: its API router answers 404.
	ms.metrics = ms.api
	_, err = c.QueryInstant(ctx, `up`, end)
	check(err, dbpilot.EUNSUPPORTED, "has no /api/metrics/query: it stores no metrics")
	_, err = c.QueryRange(ctx, `up`, end.Add(-time.Minute), end, time.Second)
	check(err, dbpilot.EUNSUPPORTED, "has no /api/metrics/query_range")

	// A proxy's answer, and answers that are not the API's.
	ms.metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	})
	_, err = c.QueryInstant(ctx, `up`, end)
	check(err, dbpilot.EUNAVAIL, "answered GET /api/metrics/query: 502 Bad Gateway: upstream down")
	for _, body := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, // a number, not a string
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}`,
		`<html>`,
	} {
		ms.metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) })
		_, err = c.QueryInstant(ctx, `up`, end)
		check(err, dbpilot.EINTERNAL, "unreadable answer from dbpilot serve at "+c.BaseURL()+" to GET /api/metrics/query")
	}

	if ms.auth != "Bearer "+token {
		t.Errorf("Authorization %q", ms.auth)
	}
}
