package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot"
)

// GET /api/queries?cluster=&instance=&since=&until=&by=total|avg|count|rows&limit=&schema=
// answers a dbpilot.QueryReport (the top digests over the span) when the
// service given to NewServer also implements dbpilot.QueryService;
// otherwise 422 (unsupported). since and until are RFC 3339 times, or since
// a duration back from now ("1h", "15m"); since defaults to an hour ago.

const queriesPattern = "GET /api/queries"

// registerQueries adds the queries route; NewServer calls it.
func (s *Server) registerQueries() {
	s.mux.HandleFunc(queriesPattern, s.read(s.queries))
}

func (s *Server) queries(w http.ResponseWriter, r *http.Request) {
	qs, ok := s.svc.(dbpilot.QueryService)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot serve does not collect query statistics"), nil)
		return
	}
	f, err := parseQueryFilter(r.URL.Query(), time.Now())
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	rep, err := qs.Queries(r.Context(), f)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	s.writeJSON(w, http.StatusOK, rep)
}

// parseQueryFilter reads GET /api/queries' parameters.
func parseQueryFilter(q url.Values, now time.Time) (dbpilot.QueryFilter, error) {
	f := dbpilot.QueryFilter{Cluster: q.Get("cluster"), Instance: q.Get("instance"), By: q.Get("by"), Schema: q.Get("schema")}
	switch f.By {
	case "", dbpilot.QueryByTotal, dbpilot.QueryByAvg, dbpilot.QueryByCount, dbpilot.QueryByRows:
	default:
		return f, dbpilot.Errorf(dbpilot.EINVALID, "invalid by %q: want total, avg, count or rows", f.By)
	}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		return f, err
	}
	if f.Since, err = timeParam(q.Get("since"), "since", now); err != nil {
		return f, err
	}
	if f.Until, err = timeParam(q.Get("until"), "until", now); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, dbpilot.Errorf(dbpilot.EINVALID, "since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return f, nil
}

// timeParam reads an RFC 3339 time, or a positive duration back from now.
func timeParam(v, name string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, dbpilot.Errorf(dbpilot.EINVALID, "invalid %s %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z or a duration back from now such as 1h", name, v)
}

var _ dbpilot.QueryService = (*Client)(nil)

// Queries implements dbpilot.QueryService.
func (c *Client) Queries(ctx context.Context, f dbpilot.QueryFilter) (*dbpilot.QueryReport, error) {
	q := url.Values{}
	for k, v := range map[string]string{"cluster": f.Cluster, "instance": f.Instance, "by": f.By, "schema": f.Schema} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var rep dbpilot.QueryReport
	if err := c.get(ctx, "/api/queries", q, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
