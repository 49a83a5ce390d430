package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// GET /api/recoveries/{id}/report answers the incident report of a
// recovery: one self-contained HTML document (text/html), or with
// ?format=json the data it is made from, when the service given to
// NewServer implements dbpilot.RecoveryReporter; otherwise 422. Errors are
// JSON, as for every route. Reads need the token as other reads do
// (ReadRequiresToken).

// reportPolicy is the report page's Content-Security-Policy: it may load
// nothing at all (its style and drawings are inline), and a browser holds
// it to that.
const reportPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

// registerReport adds the report route; NewServer calls it.
func (s *Server) registerReport() {
	s.mux.HandleFunc("GET /api/recoveries/{id}/report", s.read(s.recoveryReport))
}

func (s *Server) recoveryReport(w http.ResponseWriter, r *http.Request) {
	rr, ok := s.svc.(dbpilot.RecoveryReporter)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot serve does not write incident reports"), nil)
		return
	}
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid recovery id %q: want a number", v), nil)
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = dbpilot.ReportHTML
	}
	if format != dbpilot.ReportHTML && format != dbpilot.ReportJSON {
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid format %q: want html or json", format), nil)
		return
	}
	page, err := rr.RecoveryReport(r.Context(), id, format)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if format == dbpilot.ReportJSON {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", reportPolicy)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(http.StatusOK)
	w.Write(page)
}

var _ dbpilot.RecoveryReporter = (*Client)(nil)

// RecoveryReport implements dbpilot.RecoveryReporter: GET
// /api/recoveries/{id}/report[?format=json].
func (c *Client) RecoveryReport(ctx context.Context, id int64, format string) ([]byte, error) {
	path := "/api/recoveries/" + strconv.FormatInt(id, 10) + "/report"
	want := "text/html"
	var q url.Values
	if format == dbpilot.ReportJSON {
		q, want = url.Values{"format": {format}}, "application/json"
	}
	resp, data, err := c.send(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, c.errorAnswer(http.MethodGet, path, resp, data, nil)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "httpapi: dbpilot serve at %s answered GET %s with %q, not %s", c.base, path, ct, want)
	}
	return data, nil
}
