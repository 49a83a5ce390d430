package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// serve mounts its metrics store's query API (metrics.Store.APIHandler) at
// /api/metrics/. It answers in the shape of Prometheus' HTTP API:
//
//	{"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[1700000000.5,"3.2"]}]}}
//	{"status":"error","errorType":"bad_data","error":"invalid parameter \"expr\": 1:5: parse error: ..."}
//
// A serve that stores no metrics answers the API's own 404 instead.
const (
	metricsQueryPath = "/api/metrics/query"
	metricsRangePath = "/api/metrics/query_range"
)

var _ dbpilot.MetricsQuerier = (*Client)(nil)

// QueryInstant implements dbpilot.MetricsQuerier: GET
// /api/metrics/query?expr=&time=. A zero t asks for the serve's current
// time. As with the metrics store, a scalar is one series without labels and
// a string result is refused. Errors have the store's codes: EINVALID for a
// bad expression, EUNAVAIL for a query that timed out, EUNSUPPORTED when
// the serve stores no metrics.
func (c *Client) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	q := url.Values{"expr": {expr}}
	if !t.IsZero() {
		q.Set("time", t.UTC().Format(time.RFC3339Nano))
	}
	return c.metricsQuery(ctx, metricsQueryPath, expr, q)
}

// QueryRange implements dbpilot.MetricsQuerier: GET
// /api/metrics/query_range?expr=&start=&end=&step=, with QueryInstant's
// results and errors.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	q := url.Values{
		"expr":  {expr},
		"start": {start.UTC().Format(time.RFC3339Nano)},
		"end":   {end.UTC().Format(time.RFC3339Nano)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	return c.metricsQuery(ctx, metricsRangePath, expr, q)
}

// promAnswer is an answer of the metrics query API.
type promAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// promPoint is [unix seconds, "value"].
type promPoint dbpilot.Point

func (p *promPoint) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("a point has %d members, want 2", len(pair))
	}
	var sec float64
	if err := json.Unmarshal(pair[0], &sec); err != nil {
		return fmt.Errorf("point time: %w", err)
	}
	var sv string
	if err := json.Unmarshal(pair[1], &sv); err != nil {
		return fmt.Errorf("point value: %w", err)
	}
	v, err := strconv.ParseFloat(sv, 64) // NaN, +Inf and -Inf too
	if err != nil {
		return fmt.Errorf("point value: %w", err)
	}
	// The API writes milliseconds as seconds with up to three decimals.
	p.T = time.UnixMilli(int64(math.Round(sec * 1000))).UTC()
	p.V = v
	return nil
}

// metricsQuery asks the query API at path and converts its answer.
func (c *Client) metricsQuery(ctx context.Context, path, expr string, q url.Values) ([]dbpilot.Series, error) {
	resp, data, err := c.send(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return nil, err
	}
	var a promAnswer
	if json.Unmarshal(data, &a) != nil || a.Status == "" {
		// Not the query API's answer: serve's API router (no metrics store,
		// or a serve from before it) or a proxy.
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "httpapi: dbpilot serve at %s has no %s: it stores no metrics", c.base, path)
		case resp.StatusCode >= 300:
			return nil, c.errorAnswer(http.MethodGet, path, resp, data, nil)
		}
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "httpapi: unreadable answer from dbpilot serve at %s to GET %s", c.base, path)
	}
	if a.Status != "success" {
		return nil, dbpilot.Errorf(queryErrorCode(a.ErrorType, resp.StatusCode), "metrics query %s: %s", quoteExpr(expr), oneLine(a.Error))
	}
	series, err := decodeResult(a.Data.ResultType, a.Data.Result)
	if err != nil {
		return nil, c.unreadable(err, http.MethodGet, path)
	}
	if series == nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics query %s: the result is a %s, not numbers", quoteExpr(expr), a.Data.ResultType)
	}
	return series, nil
}

// decodeResult converts a vector, matrix or scalar to series, as the metrics
// store's QueryInstant and QueryRange return them. Other result types give
// nil and no error.
func decodeResult(resultType string, raw json.RawMessage) ([]dbpilot.Series, error) {
	switch resultType {
	case "vector":
		var result []struct {
			Metric map[string]string `json:"metric"`
			Value  promPoint         `json:"value"`
		}
		if err := json.Unmarshal(raw, &result); err != nil {
			return nil, err
		}
		out := make([]dbpilot.Series, 0, len(result))
		for _, r := range result {
			out = append(out, dbpilot.Series{Labels: labelsOrEmpty(r.Metric), Points: []dbpilot.Point{dbpilot.Point(r.Value)}})
		}
		return out, nil
	case "matrix":
		var result []struct {
			Metric map[string]string `json:"metric"`
			Values []promPoint       `json:"values"`
		}
		if err := json.Unmarshal(raw, &result); err != nil {
			return nil, err
		}
		out := make([]dbpilot.Series, 0, len(result))
		for _, r := range result {
			pts := make([]dbpilot.Point, len(r.Values))
			for i, p := range r.Values {
				pts[i] = dbpilot.Point(p)
			}
			out = append(out, dbpilot.Series{Labels: labelsOrEmpty(r.Metric), Points: pts})
		}
		return out, nil
	case "scalar":
		var p promPoint
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return []dbpilot.Series{{Labels: map[string]string{}, Points: []dbpilot.Point{dbpilot.Point(p)}}}, nil
	}
	return nil, nil
}

func labelsOrEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// queryErrorCode maps the query API's error types to dbpilot codes as the
// metrics store does; an unknown type goes by the HTTP status.
func queryErrorCode(errorType string, status int) string {
	switch errorType {
	case "bad_data", "execution":
		return dbpilot.EINVALID
	case "timeout", "canceled", "unavailable":
		return dbpilot.EUNAVAIL
	case "internal":
		return dbpilot.EINTERNAL
	}
	return codeOfStatus(status)
}

// quoteExpr quotes a PromQL expression for a one-line message, shortened
// when long.
func quoteExpr(expr string) string {
	const limit = 80
	if len(expr) > limit {
		return strconv.Quote(expr[:limit]) + "..."
	}
	return strconv.Quote(expr)
}

// oneLine joins the lines of a message.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
