package remotewrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/dbpilot/dbpilot"
)

// DefaultQueryTimeout bounds a query unless the caller's context ends sooner.
const DefaultQueryTimeout = 30 * time.Second

// QueryOptions configure a Querier.
type QueryOptions struct {
	// URL is the base of a Prometheus-compatible HTTP API: the server's
	// address (http://prometheus:9090, http://vm:8428), under which
	// /api/v1/query lives. A user and password in it are sent as basic
	// authentication and never shown.
	URL string
	// Timeout bounds a query (default 30s).
	Timeout time.Duration
	// Client sends the requests (nil: a client that never follows
	// redirects).
	Client *http.Client
}

// Querier answers PromQL queries from a Prometheus-compatible HTTP API (the
// receiver serve remote-writes to): it implements dbpilot.MetricsQuerier,
// and APIHandler serves serve's /api/metrics/ from it.
type Querier struct {
	api     v1.API
	base    *url.URL // without user info
	label   string
	timeout time.Duration
	client  *http.Client
	user    *url.Userinfo
}

var _ dbpilot.MetricsQuerier = (*Querier)(nil)

// NewQuerier returns a Querier of the API at opt.URL.
func NewQuerier(opt QueryOptions) (*Querier, error) {
	u, err := ParseURL(opt.URL)
	if err != nil {
		return nil, err
	}
	q := &Querier{timeout: opt.Timeout, client: opt.Client, user: u.User}
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/")
	q.base, q.label = u, Redacted(u)
	if q.timeout <= 0 {
		q.timeout = DefaultQueryTimeout
	}
	if q.client == nil {
		q.client = newHTTPClient()
	}
	q.client = &http.Client{Transport: authTransport{next: transportOf(q.client), user: q.user}, CheckRedirect: q.client.CheckRedirect, Timeout: q.client.Timeout}
	c, err := api.NewClient(api.Config{Address: u.String(), Client: q.client})
	if err != nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics.query_url %s: %v", q.label, err)
	}
	q.api = v1.NewAPI(c)
	return q, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// authTransport adds basic authentication from the URL's user info.
type authTransport struct {
	next http.RoundTripper
	user *url.Userinfo
}

func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.user == nil {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	pw, _ := t.user.Password()
	r.SetBasicAuth(t.user.Username(), pw)
	return t.next.RoundTrip(r)
}

// URL returns the API's base without credentials.
func (q *Querier) URL() string { return q.label }

// QueryInstant implements dbpilot.MetricsQuerier (GET /api/v1/query). A
// zero t is the server's now.
func (q *Querier) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	v, _, err := q.api.Query(ctx, expr, t)
	if err != nil {
		return nil, q.queryError(expr, err)
	}
	return toSeries(expr, v)
}

// QueryRange implements dbpilot.MetricsQuerier (GET /api/v1/query_range).
func (q *Querier) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	v, _, err := q.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, q.queryError(expr, err)
	}
	return toSeries(expr, v)
}

// queryError maps an API error to dbpilot's codes as the embedded store
// does: EINVALID for a bad expression, EUNAVAIL when the server cannot
// answer. The message never holds the URL's credentials.
func (q *Querier) queryError(expr string, err error) error {
	var aerr *v1.Error
	if errors.As(err, &aerr) {
		code := dbpilot.EUNAVAIL
		switch aerr.Type {
		case v1.ErrBadData, v1.ErrExec:
			code = dbpilot.EINVALID
		case v1.ErrBadResponse:
			code = dbpilot.EINTERNAL
		}
		return dbpilot.Errorf(code, "metrics query %q on %s: %s", shorten(expr), q.label, oneLine(aerr.Msg))
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "metrics query %q on %s: %v", shorten(expr), q.label, err)
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// toSeries converts a result as the embedded store's QueryInstant and
// QueryRange return it: a scalar is one series without labels; a string is
// refused.
func toSeries(expr string, v model.Value) ([]dbpilot.Series, error) {
	switch v := v.(type) {
	case model.Vector:
		out := make([]dbpilot.Series, 0, len(v))
		for _, s := range v {
			out = append(out, dbpilot.Series{Labels: labelMap(s.Metric), Points: []dbpilot.Point{point(s.Timestamp, s.Value)}})
		}
		return out, nil
	case model.Matrix:
		out := make([]dbpilot.Series, 0, len(v))
		for _, s := range v {
			pts := make([]dbpilot.Point, len(s.Values))
			for i, p := range s.Values {
				pts[i] = point(p.Timestamp, p.Value)
			}
			out = append(out, dbpilot.Series{Labels: labelMap(s.Metric), Points: pts})
		}
		return out, nil
	case *model.Scalar:
		return []dbpilot.Series{{Labels: map[string]string{}, Points: []dbpilot.Point{point(v.Timestamp, v.Value)}}}, nil
	}
	return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics query %q: the result is a %s, not numbers", shorten(expr), v.Type())
}

func labelMap(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

func point(t model.Time, v model.SampleValue) dbpilot.Point {
	return dbpilot.Point{T: t.Time().UTC(), V: float64(v)}
}

// apiPaths are the query API's endpoints serve forwards.
var apiPaths = []string{"/query", "/query_range", "/series", "/labels", "/metadata", "/status/buildinfo"}

// APIHandler serves serve's /api/metrics/ from the API: the paths of the
// embedded store's APIHandler (/api/metrics/query, .../query_range,
// .../series, .../labels, .../label/NAME/values, and the same under
// /api/metrics/api/v1/) are forwarded to the server's /api/v1/ with their
// parameters ("expr" is sent as "query", and a /query with start, end or
// step as /query_range, as the store takes them), and its answers, in the
// same shape, are returned as they are.
func (q *Querier) APIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			writeAPIError(w, http.StatusMethodNotAllowed, "bad_data", fmt.Sprintf("method %s not allowed on %s (allowed: GET, POST)", r.Method, r.URL.Path))
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		}
		if err := r.ParseForm(); err != nil {
			writeAPIError(w, http.StatusBadRequest, "bad_data", "invalid form: "+err.Error())
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/api/metrics")
		path = strings.TrimPrefix(path, "/api/v1")
		isLabel := strings.HasPrefix(path, "/label/") && strings.HasSuffix(path, "/values")
		known := isLabel
		for _, p := range apiPaths {
			known = known || path == p
		}
		if !known {
			writeAPIError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no metrics API endpoint %s %s", r.Method, r.URL.Path))
			return
		}
		form := url.Values{}
		for k, vs := range r.Form {
			if k == "expr" {
				k = "query"
			}
			form[k] = append(form[k], vs...)
		}
		if path == "/query" && (form.Has("start") || form.Has("end") || form.Has("step")) {
			path = "/query_range"
		}
		target := *q.base
		target.Path += "/api/v1" + path
		ctx, cancel := context.WithTimeout(r.Context(), q.timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(form.Encode()))
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := q.client.Do(req)
		if err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err
			}
			writeAPIError(w, http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("metrics.query_url %s: %v", q.label, err))
			return
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

// writeAPIError answers an error in the shape of Prometheus' HTTP API.
func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": typ, "error": msg})
}

// Unqueryable is the querier of a serve that keeps no local store and has
// no query API configured: every query, and its API handler, fails with
// the reason, as EUNAVAIL and 503.
type Unqueryable struct{ Reason string }

var _ dbpilot.MetricsQuerier = Unqueryable{}

// QueryInstant implements dbpilot.MetricsQuerier: it fails.
func (u Unqueryable) QueryInstant(context.Context, string, time.Time) ([]dbpilot.Series, error) {
	return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", u.Reason)
}

// QueryRange implements dbpilot.MetricsQuerier: it fails.
func (u Unqueryable) QueryRange(context.Context, string, time.Time, time.Time, time.Duration) ([]dbpilot.Series, error) {
	return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", u.Reason)
}

// Unqueryable reports why no query can be answered.
func (u Unqueryable) Unqueryable() error { return errors.New(u.Reason) }

// APIHandler answers every request 503 with the reason.
func (u Unqueryable) APIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeAPIError(w, http.StatusServiceUnavailable, "unavailable", u.Reason)
	})
}
