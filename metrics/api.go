package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// maxFormBytes bounds a POSTed query form.
const maxFormBytes = 1 << 20

// APIHandler returns the query API, to mount at /api/metrics/ (with or
// without the prefix stripped). Its answers are shaped as Prometheus' HTTP
// API's, so that Grafana's Prometheus data source can use it with the URL
// http://HOST:PORT/api/metrics:
//
//	GET /api/metrics/query?expr=&time=                    instant query (time: RFC 3339 or unix seconds; default now)
//	GET /api/metrics/query?expr=&start=&end=&step=        range query (step: 15s, 1m or seconds)
//	GET /api/metrics/query_range?expr=&start=&end=&step=  range query
//	GET /api/metrics/series?match[]=&start=&end=&limit=   series matching selectors
//	GET /api/metrics/labels, /api/metrics/label/NAME/values
//	    /api/metrics/api/v1/{query,query_range,series,labels,label/NAME/values,
//	    metadata,status/buildinfo}                        the same, under Prometheus' paths
//
// "query" may be used for "expr"; POST with a form body works as GET. An
// optional timeout (duration) shortens the 30 s limit. Errors answer
// {"status":"error","errorType":...,"error":...}: 400 bad_data (a bad
// expression, naming the parse error's position, or bad parameters), 422
// execution, 503 timeout or unavailable, 499 canceled, 500 internal.
func (s *Store) APIHandler() http.Handler {
	return http.HandlerFunc(s.serveAPI)
}

func (s *Store) serveAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeAPIError(w, http.StatusMethodNotAllowed, errBadData, fmt.Sprintf("method %s not allowed on %s (allowed: GET, POST)", r.Method, r.URL.Path))
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	if err := r.ParseForm(); err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, "invalid form: "+err.Error())
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/metrics")
	path = strings.TrimPrefix(path, "/api/v1")
	switch {
	case path == "/query":
		if r.Form.Has("start") || r.Form.Has("end") || r.Form.Has("step") {
			s.apiRange(w, r)
		} else {
			s.apiInstant(w, r)
		}
	case path == "/query_range":
		s.apiRange(w, r)
	case path == "/series":
		s.apiSeries(w, r)
	case path == "/labels":
		s.apiLabels(w, r, "")
	case strings.HasPrefix(path, "/label/") && strings.HasSuffix(path, "/values"):
		name := strings.TrimSuffix(strings.TrimPrefix(path, "/label/"), "/values")
		if !model.UTF8Validation.IsValidLabelName(name) {
			writeAPIError(w, http.StatusBadRequest, errBadData, fmt.Sprintf("invalid label name: %q", name))
			return
		}
		s.apiLabels(w, r, name)
	case path == "/metadata":
		writeAPIData(w, map[string]any{})
	case path == "/status/buildinfo":
		writeAPIData(w, map[string]string{"version": "3.0.0", "goVersion": runtime.Version(), "application": "dbpilot"})
	default:
		writeAPIError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no metrics API endpoint %s %s", r.Method, r.URL.Path))
	}
}

// expr returns the expression parameter and its name.
func expr(r *http.Request) (string, string) {
	if r.Form.Has("expr") {
		return r.Form.Get("expr"), "expr"
	}
	return r.Form.Get("query"), "query"
}

// withTimeout applies an optional timeout parameter.
func withTimeout(r *http.Request) (context.Context, context.CancelFunc, error) {
	v := r.Form.Get("timeout")
	if v == "" {
		return r.Context(), func() {}, nil
	}
	d, err := parseDuration(v)
	if err != nil || d <= 0 {
		return nil, nil, fmt.Errorf("invalid parameter \"timeout\": %q is not a positive duration", v)
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return ctx, cancel, nil
}

func (s *Store) apiInstant(w http.ResponseWriter, r *http.Request) {
	q, param := expr(r)
	t, err := parseTimeParam(r, "time", time.Now())
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	ctx, cancel, err := withTimeout(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	defer cancel()
	res, done, qerr := s.instant(ctx, param, q, t)
	if qerr != nil {
		writeQueryError(w, qerr)
		return
	}
	defer done()
	writeResult(w, q, res)
}

func (s *Store) apiRange(w http.ResponseWriter, r *http.Request) {
	q, param := expr(r)
	start, err := parseTimeParam(r, "start", time.Time{})
	if err == nil && start.IsZero() {
		err = errors.New("missing parameter \"start\"")
	}
	var end time.Time
	if err == nil {
		end, err = parseTimeParam(r, "end", time.Time{})
		if err == nil && end.IsZero() {
			err = errors.New("missing parameter \"end\"")
		}
	}
	var step time.Duration
	if err == nil {
		v := r.Form.Get("step")
		if v == "" {
			err = errors.New("missing parameter \"step\"")
		} else if step, err = parseDuration(v); err != nil {
			err = fmt.Errorf("invalid parameter \"step\": %w", err)
		}
	}
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	ctx, cancel, err := withTimeout(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	defer cancel()
	res, done, qerr := s.ranged(ctx, param, q, start, end, step)
	if qerr != nil {
		writeQueryError(w, qerr)
		return
	}
	defer done()
	writeResult(w, q, res)
}

func (s *Store) apiSeries(w http.ResponseWriter, r *http.Request) {
	start, end, limit, err := rangeParams(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	var buf bytes.Buffer
	buf.WriteString(`{"status":"success","data":[`)
	n := 0
	warn, err := s.series(r.Context(), r.Form["match[]"], start, end, limit, func(ls labels.Labels) {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		appendLabelsJSON(&buf, ls)
	})
	if err != nil {
		var qerr *queryError
		if errors.As(err, &qerr) {
			writeQueryError(w, qerr)
			return
		}
		writeAPIError(w, http.StatusInternalServerError, errInternal, err.Error())
		return
	}
	buf.WriteByte(']')
	appendWarnings(&buf, warn, "")
	buf.WriteString("}\n")
	writeJSONBytes(w, http.StatusOK, buf.Bytes())
}

// apiLabels answers label names (name == "") or the values of a label.
func (s *Store) apiLabels(w http.ResponseWriter, r *http.Request, name string) {
	start, end, limit, err := rangeParams(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, errBadData, err.Error())
		return
	}
	vals, warn, qerr := s.labelValues(r.Context(), name, r.Form["match[]"], start, end, limit)
	if qerr != nil {
		writeQueryError(w, qerr)
		return
	}
	var buf bytes.Buffer
	buf.WriteString(`{"status":"success","data":[`)
	for i, v := range vals {
		if i > 0 {
			buf.WriteByte(',')
		}
		appendJSONString(&buf, v)
	}
	buf.WriteByte(']')
	appendWarnings(&buf, warn, "")
	buf.WriteString("}\n")
	writeJSONBytes(w, http.StatusOK, buf.Bytes())
}

// labelValues returns the sorted label names (name == "") or values of
// name among the series matching any of matchers (all series if none).
func (s *Store) labelValues(ctx context.Context, name string, matchers []string, start, end time.Time, limit int) ([]string, annotations.Annotations, *queryError) {
	sets, err := s.parser.ParseMetricSelectors(matchers)
	if err != nil {
		return nil, nil, &queryError{errBadData, fmt.Errorf("invalid parameter \"match[]\": %w", err)}
	}
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	if !start.IsZero() {
		mint = timestamp.FromTime(start)
	}
	if !end.IsZero() {
		maxt = timestamp.FromTime(end)
	}
	release, qerr := s.begin(ctx)
	if qerr != nil {
		return nil, nil, qerr
	}
	defer release()
	q, err := s.db.Querier(mint, maxt)
	if err != nil {
		return nil, nil, &queryError{errInternal, err}
	}
	defer q.Close()
	var (
		all  []string
		warn annotations.Annotations
	)
	for _, m := range sets {
		var (
			vals []string
			ws   annotations.Annotations
		)
		if name == "" {
			vals, ws, err = q.LabelNames(ctx, &storage.LabelHints{}, m...)
		} else {
			vals, ws, err = q.LabelValues(ctx, name, &storage.LabelHints{}, m...)
		}
		if err != nil {
			return nil, nil, classify(err)
		}
		warn.Merge(ws)
		all = append(all, vals...) // copies are made below, before q closes
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if limit > 0 && len(all) > limit {
		all = all[:limit]
		warn.Add(errors.New("results truncated due to limit"))
	}
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = strings.Clone(v)
	}
	return out, warn, nil
}

// rangeParams reads the optional start, end and limit of the series and
// label endpoints.
func rangeParams(r *http.Request) (start, end time.Time, limit int, err error) {
	if start, err = parseTimeParam(r, "start", time.Time{}); err != nil {
		return
	}
	if end, err = parseTimeParam(r, "end", time.Time{}); err != nil {
		return
	}
	if v := r.Form.Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 0 {
			err = fmt.Errorf("invalid parameter \"limit\": %q is not a number of 0 or more", v)
		}
	}
	return
}

// parseTimeParam parses a time parameter: unix seconds (with a fraction)
// or RFC 3339; def when absent.
func parseTimeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.Form.Get(name)
	if v == "" {
		return def, nil
	}
	t, err := parseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid parameter %q: %w", name, err)
	}
	return t, nil
}

func parseTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		frac = math.Round(frac*1000) / 1000
		return time.Unix(int64(sec), int64(frac*float64(time.Second))).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp: want RFC 3339 or unix seconds", s)
}

// parseDuration parses seconds (with a fraction) or a duration such as
// 15s, 1m or 1h30m.
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		ns := f * float64(time.Second)
		if math.IsNaN(ns) || ns > math.MaxInt64 || ns < math.MinInt64 {
			return 0, fmt.Errorf("cannot parse %q to a valid duration: out of range", s)
		}
		return time.Duration(ns), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration: want 15s, 1m or seconds", s)
}

// writeResult writes a query result as Prometheus does.
func writeResult(w http.ResponseWriter, q string, res *promql.Result) {
	var buf bytes.Buffer
	buf.WriteString(`{"status":"success","data":{"resultType":`)
	appendJSONString(&buf, string(res.Value.Type()))
	buf.WriteString(`,"result":`)
	switch v := res.Value.(type) {
	case promql.Vector:
		buf.WriteByte('[')
		n := 0
		for _, smp := range v {
			if smp.H != nil {
				continue
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			buf.WriteString(`{"metric":`)
			appendLabelsJSON(&buf, smp.Metric)
			buf.WriteString(`,"value":`)
			appendPoint(&buf, smp.T, smp.F)
			buf.WriteByte('}')
		}
		buf.WriteByte(']')
	case promql.Matrix:
		buf.WriteByte('[')
		n := 0
		for _, ser := range v {
			if len(ser.Floats) == 0 {
				continue
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			buf.WriteString(`{"metric":`)
			appendLabelsJSON(&buf, ser.Metric)
			buf.WriteString(`,"values":[`)
			for i, p := range ser.Floats {
				if i > 0 {
					buf.WriteByte(',')
				}
				appendPoint(&buf, p.T, p.F)
			}
			buf.WriteString("]}")
		}
		buf.WriteByte(']')
	case promql.Scalar:
		appendPoint(&buf, v.T, v.V)
	case promql.String:
		buf.WriteByte('[')
		buf.WriteString(formatTime(v.T))
		buf.WriteByte(',')
		appendJSONString(&buf, v.V)
		buf.WriteByte(']')
	default:
		buf.WriteString("[]")
	}
	buf.WriteByte('}')
	appendWarnings(&buf, res.Warnings, q)
	buf.WriteString("}\n")
	writeJSONBytes(w, http.StatusOK, buf.Bytes())
}

// appendWarnings adds Prometheus' "warnings" and "infos" members.
func appendWarnings(buf *bytes.Buffer, a annotations.Annotations, q string) {
	if len(a) == 0 {
		return
	}
	warns, infos := a.AsStrings(q, 10, 10)
	for _, m := range []struct {
		key  string
		msgs []string
	}{{"warnings", warns}, {"infos", infos}} {
		if len(m.msgs) == 0 {
			continue
		}
		buf.WriteString(`,"` + m.key + `":[`)
		for i, s := range m.msgs {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSONString(buf, s)
		}
		buf.WriteByte(']')
	}
}

// appendPoint writes [unix seconds, "value"].
func appendPoint(buf *bytes.Buffer, t int64, v float64) {
	buf.WriteByte('[')
	buf.WriteString(formatTime(t))
	buf.WriteString(`,"`)
	buf.WriteString(strconv.FormatFloat(v, 'f', -1, 64)) // NaN, +Inf, -Inf as Prometheus
	buf.WriteString(`"]`)
}

// formatTime writes milliseconds as seconds with up to three decimals.
func formatTime(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

func appendLabelsJSON(buf *bytes.Buffer, ls labels.Labels) {
	buf.WriteByte('{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		appendJSONString(buf, l.Name)
		buf.WriteByte(':')
		appendJSONString(buf, l.Value)
	})
	buf.WriteByte('}')
}

// appendJSONString writes s as a JSON string.
func appendJSONString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case c == '\n':
				buf.WriteString(`\n`)
			case c == '\r':
				buf.WriteString(`\r`)
			case c == '\t':
				buf.WriteString(`\t`)
			case c < 0x20:
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(`\ufffd`)
		} else {
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}

// writeQueryError answers a failed query with Prometheus' status codes.
func writeQueryError(w http.ResponseWriter, e *queryError) {
	status := http.StatusInternalServerError
	switch e.typ {
	case errBadData:
		status = http.StatusBadRequest
	case errExecution:
		status = http.StatusUnprocessableEntity
	case errCanceled:
		status = 499 // client closed request, as Prometheus
	case errTimeout, errUnavailable:
		status = http.StatusServiceUnavailable
	}
	writeAPIError(w, status, e.typ, e.err.Error())
}

type apiResponse struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(apiResponse{Status: "error", ErrorType: typ, Error: msg})
	writeJSONBytes(w, status, append(b, '\n'))
}

func writeAPIData(w http.ResponseWriter, data any) {
	b, err := json.Marshal(apiResponse{Status: "success", Data: data})
	if err != nil {
		writeAPIError(w, http.StatusInternalServerError, errInternal, err.Error())
		return
	}
	writeJSONBytes(w, http.StatusOK, append(b, '\n'))
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}
