package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot"
)

// GET /api/alerts?cluster=&state=pending|firing|resolved&since=RFC3339&limit=
// answers []Alert, newest first, when the service given to NewServer also
// implements dbpilot.AlertService; otherwise 422 (unsupported).

const alertsPattern = "GET /api/alerts"

// registerAlerts adds the alerts route; NewServer calls it. Calling it again
// does nothing.
func (s *Server) registerAlerts() {
	probe := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/api/alerts"}}
	if _, p := s.mux.Handler(probe); p == alertsPattern {
		return
	}
	s.mux.HandleFunc(alertsPattern, s.read(s.alerts))
}

func (s *Server) alerts(w http.ResponseWriter, r *http.Request) {
	as, ok := s.svc.(dbpilot.AlertService)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot serve does not evaluate alerts"), nil)
		return
	}
	q := r.URL.Query()
	f := dbpilot.AlertFilter{Cluster: q.Get("cluster"), State: q.Get("state")}
	switch f.State {
	case "", dbpilot.AlertPending, dbpilot.AlertFiring, dbpilot.AlertResolved:
	default:
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid state %q: want pending, firing or resolved", f.State), nil)
		return
	}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		s.writeError(w, err, nil)
		return
	}
	if v := q.Get("since"); v != "" {
		f.Since, err = time.Parse(time.RFC3339, v)
		if err != nil {
			s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid since %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z", v), nil)
			return
		}
	}
	list, err := as.Alerts(r.Context(), f)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if list == nil {
		list = []*dbpilot.Alert{}
	}
	s.writeJSON(w, http.StatusOK, list)
}

var _ dbpilot.AlertService = (*Client)(nil)

// Alerts implements dbpilot.AlertService.
func (c *Client) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	q := url.Values{}
	if f.Cluster != "" {
		q.Set("cluster", f.Cluster)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var as []*dbpilot.Alert
	if err := c.get(ctx, "/api/alerts", q, &as); err != nil {
		return nil, err
	}
	return as, nil
}
