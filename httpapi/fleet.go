package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FleetMetrics serves the metrics query API (/api/metrics/) for the whole
// fleet of serves that share the clusters (coordination): each serve
// stores the series of the instances it collects, so a query is answered
// by this serve's store (Local) and by every peer's, asked with the same
// path and query marked as a peer read (PeerHeader: the peer answers from
// its own store and asks nobody in turn), and the answers are merged:
//
//   - query, query_range: the series concatenated; of two series with the
//     same labels (an instance whose collection moved between serves) the
//     one with the newest sample is kept, its points merged with the
//     other's;
//   - series: the label sets, without duplicates;
//   - labels, label/NAME/values: the names or values, sorted, without
//     duplicates.
//
// An instant query without a time is pinned to one time for every serve.
// A peer that does not answer within Timeout is left out, named in the
// answer's warnings (as Prometheus reports a partial answer). Any other
// path, and an answer of Local that is an error, are Local's alone.
type FleetMetrics struct {
	Local http.Handler
	// Peers returns the API base URLs of the other serves.
	Peers func() []string
	// Token authenticates to the peers (an admin token of the config, as
	// for the operations forwarded to a leader).
	Token   string
	Timeout time.Duration // default 5 s
	Client  *http.Client  // default http.DefaultClient
	Logger  *slog.Logger
}

// fleetAnswer is an answer of the query API, with what merging needs.
type fleetAnswer struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data,omitempty"`
	ErrorType string          `json:"errorType,omitempty"`
	Error     string          `json:"error,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
}

func (f *FleetMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := fleetKind(r.URL.Path)
	if kind == "" || r.Header.Get(PeerHeader) != "" || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
		f.Local.ServeHTTP(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		f.Local.ServeHTTP(w, r)
		return
	}
	q := r.Form
	if kind == "query" && q.Get("time") == "" && q.Get("start") == "" {
		q.Set("time", strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64))
	}
	peers := f.Peers()
	answers := make([]*fleetAnswer, len(peers))
	var warnings []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := f.ask(r.Context(), p, r.URL.Path, q)
			if err != nil {
				mu.Lock()
				warnings = append(warnings, fmt.Sprintf("serve %s: %v", p, err))
				mu.Unlock()
				return
			}
			answers[i] = a
		}()
	}
	// This serve's own answer, on the same (pinned) query.
	lr := r.Clone(r.Context())
	lr.Method, lr.Body, lr.Form, lr.PostForm = http.MethodGet, http.NoBody, nil, nil
	lr.URL.RawQuery = q.Encode()
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	f.Local.ServeHTTP(rec, lr)
	wg.Wait()
	var local fleetAnswer
	if json.Unmarshal(rec.body.Bytes(), &local) != nil || local.Status != "success" {
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
		return
	}
	all := []*fleetAnswer{&local}
	for _, a := range answers {
		if a != nil {
			all = append(all, a)
		}
	}
	out, err := mergeFleet(kind, all)
	if err != nil {
		warnings = append(warnings, err.Error())
		out = &local
	}
	slices.Sort(warnings)
	out.Warnings = append(out.Warnings, warnings...)
	if len(warnings) > 0 && f.Logger != nil {
		f.Logger.Debug("fleet metrics query: partial answer", "path", r.URL.Path, "warnings", strings.Join(warnings, "; "))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// fleetKind names the query API paths whose answers are merged.
func fleetKind(path string) string {
	p := strings.TrimPrefix(path, "/api/metrics")
	p = strings.TrimPrefix(p, "/api/v1")
	switch {
	case p == "/query" || p == "/query_range":
		return "query"
	case p == "/series":
		return "series"
	case p == "/labels" || (strings.HasPrefix(p, "/label/") && strings.HasSuffix(p, "/values")):
		return "strings"
	}
	return ""
}

// ask sends the query to one peer.
func (f *FleetMetrics) ask(ctx context.Context, base, path string, q url.Values) (*fleetAnswer, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(PeerHeader, "1")
	req.Header.Set("Accept", "application/json")
	if f.Token != "" {
		req.Header.Set("Authorization", "Bearer "+f.Token)
	}
	cl := f.Client
	if cl == nil {
		cl = http.DefaultClient
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	var a fleetAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.Status == "" {
		return nil, fmt.Errorf("%s answered %s", path, resp.Status)
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("%s", oneLine(a.Error))
	}
	return &a, nil
}

// mergeFleet merges successful answers of one kind; the first is this
// serve's.
func mergeFleet(kind string, all []*fleetAnswer) (*fleetAnswer, error) {
	out := &fleetAnswer{Status: "success"}
	for _, a := range all {
		out.Warnings = append(out.Warnings, a.Warnings...)
	}
	var data any
	var err error
	switch kind {
	case "query":
		data, err = mergeResults(all)
	case "series":
		data, err = mergeSeriesSets(all)
	default:
		data, err = mergeStrings(all)
	}
	if err != nil {
		return nil, fmt.Errorf("merge the serves' answers: %w", err)
	}
	out.Data, err = json.Marshal(data)
	return out, err
}

type fleetSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value,omitempty"`
	Values [][]any           `json:"values,omitempty"`
}

// lastT is the time of the series' newest sample.
func (s *fleetSeries) lastT() float64 {
	p := s.Value
	if len(s.Values) > 0 {
		p = s.Values[len(s.Values)-1]
	}
	if len(p) == 0 {
		return 0
	}
	t, _ := p[0].(float64)
	return t
}

func labelKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "\x00" + m[k] + "\x00")
	}
	return b.String()
}

func mergeResults(all []*fleetAnswer) (any, error) {
	type data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	var rt string
	var order []string
	byKey := map[string]*fleetSeries{}
	var scalar json.RawMessage
	for _, a := range all {
		var d data
		if err := json.Unmarshal(a.Data, &d); err != nil {
			return nil, err
		}
		if rt == "" {
			rt = d.ResultType
		}
		if d.ResultType != rt {
			return nil, fmt.Errorf("result types %s and %s", rt, d.ResultType)
		}
		if rt != "vector" && rt != "matrix" {
			// A scalar or a string: every serve computes the same.
			if scalar == nil {
				scalar = d.Result
			}
			continue
		}
		var ss []*fleetSeries
		if err := json.Unmarshal(d.Result, &ss); err != nil {
			return nil, err
		}
		for _, s := range ss {
			k := labelKey(s.Metric)
			prev := byKey[k]
			switch {
			case prev == nil:
				byKey[k] = s
				order = append(order, k)
			case rt == "matrix":
				byKey[k] = mergePoints(prev, s)
			case s.lastT() > prev.lastT():
				byKey[k] = s
			}
		}
	}
	if rt != "vector" && rt != "matrix" {
		return data{ResultType: rt, Result: scalar}, nil
	}
	res := make([]*fleetSeries, 0, len(order))
	for _, k := range order {
		res = append(res, byKey[k])
	}
	b, err := json.Marshal(res)
	return data{ResultType: rt, Result: b}, err
}

// mergePoints merges the points of two copies of one series (collected by
// one serve, then another): by time, one point per time, the newer
// series' point at a time both have.
func mergePoints(a, b *fleetSeries) *fleetSeries {
	if b.lastT() < a.lastT() {
		a, b = b, a
	}
	at := map[float64][]any{}
	for _, s := range []*fleetSeries{a, b} {
		for _, p := range s.Values {
			if len(p) == 2 {
				t, _ := p[0].(float64)
				at[t] = p
			}
		}
	}
	ts := make([]float64, 0, len(at))
	for t := range at {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	out := &fleetSeries{Metric: b.Metric, Values: make([][]any, 0, len(ts))}
	for _, t := range ts {
		out.Values = append(out.Values, at[t])
	}
	return out
}

func mergeSeriesSets(all []*fleetAnswer) (any, error) {
	seen := map[string]bool{}
	out := []map[string]string{}
	for _, a := range all {
		var sets []map[string]string
		if err := json.Unmarshal(a.Data, &sets); err != nil {
			return nil, err
		}
		for _, m := range sets {
			if k := labelKey(m); !seen[k] {
				seen[k] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func mergeStrings(all []*fleetAnswer) (any, error) {
	out := []string{}
	for _, a := range all {
		var ss []string
		if err := json.Unmarshal(a.Data, &ss); err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// recorder keeps the local handler's answer for merging.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }
