package remotewrite

import (
	"context"
	"errors"
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
		case v1.ErrBadData, v1.ErrExec, "400", "422": // VictoriaMetrics puts the HTTP status there
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
