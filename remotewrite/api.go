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

	"github.com/dbpilot/dbpilot"
)

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
