package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// The topology history (the time machine), when the service given to
// NewServer also implements dbpilot.HistoryService; otherwise 422
// (unsupported):
//
//	GET /api/clusters/{name}/at?t=TIME
//	    → dbpilot.ClusterAt: the cluster as it was at TIME
//	GET /api/clusters/{name}/changes?from=TIME&to=TIME&limit=N&newest=BOOL
//	    → []dbpilot.TopologyChange, oldest first: the oldest N (default
//	      1000) of the span, or with newest=true the newest N
//
// TIME is an RFC 3339 time (2026-11-29T07:50:00.250Z; fractions allowed)
// or Unix seconds (1795938600.25). An unknown cluster is a 404.

// registerHistory adds the history's routes; NewServer calls it.
func (s *Server) registerHistory() {
	s.mux.HandleFunc("GET /api/clusters/{name}/at", s.read(s.clusterAt))
	s.mux.HandleFunc("GET /api/clusters/{name}/changes", s.read(s.clusterChanges))
}

func (s *Server) historyService(w http.ResponseWriter) (dbpilot.HistoryService, bool) {
	h, ok := s.svc.(dbpilot.HistoryService)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot serve keeps no topology history"), nil)
	}
	return h, ok
}

func (s *Server) clusterAt(w http.ResponseWriter, r *http.Request) {
	h, ok := s.historyService(w)
	if !ok {
		return
	}
	v := r.URL.Query().Get("t")
	if v == "" {
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "missing t: want the instant, an RFC 3339 time such as 2026-11-29T07:50:00.25Z or Unix seconds such as 1795938600.25"), nil)
		return
	}
	t, err := instantParam(v, "t")
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	at, err := h.ClusterAt(r.Context(), r.PathValue("name"), t)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	s.writeJSON(w, http.StatusOK, at)
}

func (s *Server) clusterChanges(w http.ResponseWriter, r *http.Request) {
	h, ok := s.historyService(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := dbpilot.ChangeFilter{Cluster: r.PathValue("name")}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		s.writeError(w, err, nil)
		return
	}
	for _, p := range []struct {
		name string
		into *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(p.name); v != "" {
			if *p.into, err = instantParam(v, p.name); err != nil {
				s.writeError(w, err, nil)
				return
			}
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "to %s is before from %s", f.To.Format(time.RFC3339Nano), f.From.Format(time.RFC3339Nano)), nil)
		return
	}
	if v := q.Get("newest"); v != "" {
		if f.Newest, err = strconv.ParseBool(v); err != nil {
			s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid newest %q: want true or false", v), nil)
			return
		}
	}
	cs, err := h.TopologyChanges(r.Context(), f)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if cs == nil {
		cs = []dbpilot.TopologyChange{}
	}
	s.writeJSON(w, http.StatusOK, cs)
}

// instantParam reads an instant: an RFC 3339 time (fractions of a second
// allowed) or Unix seconds (fractions allowed, up to nanoseconds).
func instantParam(v, name string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, ok := unixSeconds(v); ok {
		return t, nil
	}
	return time.Time{}, dbpilot.Errorf(dbpilot.EINVALID, "invalid %s %q: want an RFC 3339 time such as 2026-11-29T07:50:00.25Z or Unix seconds such as 1795938600.25", name, v)
}

// unixSeconds parses SECONDS[.FRACTION] (digits only) exactly, without
// the rounding of a float.
func unixSeconds(v string) (time.Time, bool) {
	secs, frac, _ := strings.Cut(v, ".")
	if secs == "" || len(secs) > 11 || !digits(secs) || !digits(frac) || strings.HasSuffix(v, ".") {
		return time.Time{}, false
	}
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(s, ns).UTC(), true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var _ dbpilot.HistoryService = (*Client)(nil)

// ClusterAt implements dbpilot.HistoryService.
func (c *Client) ClusterAt(ctx context.Context, cluster string, t time.Time) (*dbpilot.ClusterAt, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	var at dbpilot.ClusterAt
	q := url.Values{"t": {t.UTC().Format(time.RFC3339Nano)}}
	if err := c.get(ctx, "/api/clusters/"+url.PathEscape(cluster)+"/at", q, &at); err != nil {
		return nil, err
	}
	return &at, nil
}

// TopologyChanges implements dbpilot.HistoryService.
func (c *Client) TopologyChanges(ctx context.Context, f dbpilot.ChangeFilter) ([]dbpilot.TopologyChange, error) {
	if err := checkCluster(f.Cluster); err != nil {
		return nil, err
	}
	q := url.Values{}
	if !f.From.IsZero() {
		q.Set("from", f.From.UTC().Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Newest {
		q.Set("newest", "true")
	}
	var cs []dbpilot.TopologyChange
	if err := c.get(ctx, "/api/clusters/"+url.PathEscape(f.Cluster)+"/changes", q, &cs); err != nil {
		return nil, err
	}
	return cs, nil
}
