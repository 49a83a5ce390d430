package remotewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	args := url.Values{"query": {expr}}
	if !t.IsZero() {
		args.Set("time", formatTime(t))
	}
	v, err := q.do(ctx, "/api/v1/query", args)
	if err != nil {
		return nil, q.queryError(expr, err)
	}
	return toSeries(expr, v)
}

// QueryRange implements dbpilot.MetricsQuerier (GET /api/v1/query_range).
func (q *Querier) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	args := url.Values{"query": {expr}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	v, err := q.do(ctx, "/api/v1/query_range", args)
	if err != nil {
		return nil, q.queryError(expr, err)
	}
	return toSeries(expr, v)
}

// formatTime is t in seconds since the epoch, as the API takes it.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}

// The API's error types (Prometheus' HTTP API documentation), as the
// response's errorType names them.
const (
	errBadData     = "bad_data"
	errExec        = "execution"
	errBadResponse = "bad_response"
	errServer      = "server_error"
	errClient      = "client_error"
)

// apiError is an error the API answered, or an answer that is not the API's.
type apiError struct {
	Type string
	Msg  string
}

func (e *apiError) Error() string { return e.Type + ": " + e.Msg }

// do sends a query as Prometheus' Go client does: a form POST, again as a
// GET when the server refuses the POST (403, 405, 501); it returns the
// result, or an *apiError for an API error or a response that is not the
// API's, or the transport's error.
func (q *Querier) do(ctx context.Context, endpoint string, args url.Values) (model.Value, error) {
	u := *q.base
	u.Path += endpoint
	form := args.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Idempotent: the transport may retry it on a network error.
	req.Header["Idempotency-Key"] = nil
	code, data, err := q.send(req)
	if code == http.StatusForbidden || code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented {
		u.RawQuery = form
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return nil, err
		}
		_, data, err = q.send(req)
	}
	if err != nil {
		return nil, err
	}
	var res struct {
		Type   model.ValueType `json:"resultType"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, &apiError{Type: errBadResponse, Msg: err.Error()}
	}
	var v model.Value
	switch res.Type {
	case model.ValScalar:
		v = new(model.Scalar)
	case model.ValVector:
		v = new(model.Vector)
	case model.ValMatrix:
		v = new(model.Matrix)
	case model.ValString:
		v = new(model.String)
	default:
		return nil, &apiError{Type: errBadResponse, Msg: fmt.Sprintf("unexpected result type %q", res.Type)}
	}
	if err := json.Unmarshal(res.Result, v); err != nil {
		return nil, &apiError{Type: errBadResponse, Msg: err.Error()}
	}
	switch v := v.(type) {
	case *model.Vector:
		return *v, nil
	case *model.Matrix:
		return *v, nil
	}
	return v, nil
}

// send sends req and returns the response's status and the API's data:
// an error status other than 400 and 422 (the API's own errors, with a
// body) is an *apiError, as is a body that is not the API's envelope or
// that says "error".
func (q *Querier) send(req *http.Request) (int, json.RawMessage, error) {
	resp, err := q.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, nil, err
	}
	code := resp.StatusCode
	apiErr := code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
	if code/100 != 2 && !apiErr {
		typ := errBadResponse
		switch code / 100 {
		case 4:
			typ = errClient
		case 5:
			typ = errServer
		}
		return code, nil, &apiError{Type: typ, Msg: fmt.Sprintf("%s: %d", strings.ReplaceAll(typ, "_", " "), code)}
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if code != http.StatusNoContent {
		if err := json.Unmarshal(body.Bytes(), &env); err != nil {
			return code, nil, &apiError{Type: errBadResponse, Msg: err.Error()}
		}
	}
	switch {
	case env.Status == "error":
		return code, nil, &apiError{Type: env.ErrorType, Msg: env.Error}
	case apiErr:
		return code, nil, &apiError{Type: errBadResponse, Msg: "inconsistent body for response code"}
	}
	return code, env.Data, nil
}

// queryError maps an API error to dbpilot's codes as the embedded store
// does: EINVALID for a bad expression, EUNAVAIL when the server cannot
// answer. The message never holds the URL's credentials.
func (q *Querier) queryError(expr string, err error) error {
	var aerr *apiError
	if errors.As(err, &aerr) {
		code := dbpilot.EUNAVAIL
		switch aerr.Type {
		case errBadData, errExec, "400", "422": // VictoriaMetrics puts the HTTP status there
			code = dbpilot.EINVALID
		case errBadResponse:
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
