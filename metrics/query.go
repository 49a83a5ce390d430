package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/dbpilot/dbpilot"
)

// Error types of a query, as Prometheus' HTTP API names them.
const (
	errBadData     = "bad_data"
	errExecution   = "execution"
	errTimeout     = "timeout"
	errCanceled    = "canceled"
	errInternal    = "internal"
	errUnavailable = "unavailable"
)

// queryError is a failed query with its Prometheus error type.
type queryError struct {
	typ string
	err error
}

func (e *queryError) Error() string { return e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// code returns the dbpilot error code of the failure.
func (e *queryError) code() string {
	switch e.typ {
	case errBadData, errExecution:
		return dbpilot.EINVALID
	case errTimeout, errCanceled, errUnavailable:
		return dbpilot.EUNAVAIL
	}
	return dbpilot.EINTERNAL
}

// asError returns the failure as a *dbpilot.Error.
func (e *queryError) asError(what string) error {
	return dbpilot.WrapError(e.code(), e, "metrics query %s", what)
}

// classify maps an execution error as Prometheus' API does.
func classify(err error) *queryError {
	var (
		canceled promql.ErrQueryCanceled
		timeout  promql.ErrQueryTimeout
		storErr  promql.ErrStorage
	)
	switch {
	case errors.As(err, &canceled), errors.Is(err, context.Canceled):
		return &queryError{errCanceled, err}
	case errors.As(err, &timeout), errors.Is(err, context.DeadlineExceeded):
		return &queryError{errTimeout, err}
	case errors.As(err, &storErr):
		return &queryError{errInternal, err}
	}
	return &queryError{errExecution, err}
}

// begin takes a query slot and keeps the TSDB open until the returned
// function is called.
func (s *Store) begin(ctx context.Context) (func(), *queryError) {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return nil, &queryError{errUnavailable, fmt.Errorf("metrics store %s is closed", s.opt.Dir)}
	}
	select {
	case s.qsem <- struct{}{}:
	case <-ctx.Done():
		s.life.RUnlock()
		return nil, classify(ctx.Err())
	}
	return func() { <-s.qsem; s.life.RUnlock() }, nil
}

// exec runs the query newQuery makes. On success the caller must call done
// once it no longer uses the result (its memory is pooled).
func (s *Store) exec(ctx context.Context, param string, newQuery func() (promql.Query, error)) (res *promql.Result, done func(), qerr *queryError) {
	release, qerr := s.begin(ctx)
	if qerr != nil {
		return nil, nil, qerr
	}
	q, err := newQuery()
	if err != nil {
		release()
		// Parse errors name their position: 1:12: parse error: ...
		return nil, nil, &queryError{errBadData, fmt.Errorf("invalid parameter %q: %w", param, err)}
	}
	res = q.Exec(ctx)
	done = func() { q.Close(); release() }
	if res.Err != nil {
		done()
		return nil, nil, classify(res.Err)
	}
	return res, done, nil
}

func (s *Store) instant(ctx context.Context, param, expr string, t time.Time) (*promql.Result, func(), *queryError) {
	return s.exec(ctx, param, func() (promql.Query, error) {
		return s.engine.NewInstantQuery(ctx, s.db, nil, expr, t)
	})
}

func (s *Store) ranged(ctx context.Context, param, expr string, start, end time.Time, step time.Duration) (*promql.Result, func(), *queryError) {
	if err := checkRange(start, end, step); err != nil {
		return nil, nil, err
	}
	return s.exec(ctx, param, func() (promql.Query, error) {
		return s.engine.NewRangeQuery(ctx, s.db, nil, expr, start, end, step)
	})
}

// checkRange refuses the ranges Prometheus' API refuses.
func checkRange(start, end time.Time, step time.Duration) *queryError {
	switch {
	case end.Before(start):
		return &queryError{errBadData, errors.New("invalid parameter \"end\": end timestamp must not be before start time")}
	case step <= 0:
		return &queryError{errBadData, errors.New("invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer")}
	case end.Sub(start)/step > maxPointsPerSeries:
		return &queryError{errBadData, fmt.Errorf("exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)", maxPointsPerSeries)}
	}
	return nil
}

// QueryInstant evaluates a PromQL expression at t. A scalar result is one
// series without labels.
func (s *Store) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	res, done, qerr := s.instant(ctx, "expr", expr, t)
	if qerr != nil {
		return nil, qerr.asError(fmt.Sprintf("%q", expr))
	}
	defer done()
	return toSeries(expr, res.Value)
}

// QueryRange evaluates a PromQL expression from start to end every step.
func (s *Store) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	res, done, qerr := s.ranged(ctx, "expr", expr, start, end, step)
	if qerr != nil {
		return nil, qerr.asError(fmt.Sprintf("%q", expr))
	}
	defer done()
	return toSeries(expr, res.Value)
}

// toSeries converts a PromQL value. Native histograms are skipped: dbpilot
// stores none.
func toSeries(expr string, v any) ([]dbpilot.Series, error) {
	switch v := v.(type) {
	case promql.Vector:
		out := make([]dbpilot.Series, 0, len(v))
		for _, smp := range v {
			if smp.H != nil {
				continue
			}
			out = append(out, dbpilot.Series{
				Labels: smp.Metric.Map(),
				Points: []dbpilot.Point{{T: timestamp.Time(smp.T), V: smp.F}},
			})
		}
		return out, nil
	case promql.Matrix:
		out := make([]dbpilot.Series, 0, len(v))
		for _, ser := range v {
			if len(ser.Floats) == 0 {
				continue
			}
			pts := make([]dbpilot.Point, len(ser.Floats))
			for i, p := range ser.Floats {
				pts[i] = dbpilot.Point{T: timestamp.Time(p.T), V: p.F}
			}
			out = append(out, dbpilot.Series{Labels: ser.Metric.Map(), Points: pts})
		}
		return out, nil
	case promql.Scalar:
		return []dbpilot.Series{{Labels: map[string]string{}, Points: []dbpilot.Point{{T: timestamp.Time(v.T), V: v.V}}}}, nil
	}
	return nil, dbpilot.Errorf(dbpilot.EINVALID, "metrics query %q: the result is a %T, not numbers", expr, v)
}

// Series returns the label sets of the series matching any of the
// selectors (such as `mysql_up{cluster="main"}`) with samples between start
// and end; a zero start or end leaves that side open.
func (s *Store) Series(ctx context.Context, matchers []string, start, end time.Time) ([]map[string]string, error) {
	var out []map[string]string
	_, err := s.series(ctx, matchers, start, end, 0, func(ls labels.Labels) { out = append(out, ls.Map()) })
	if err != nil {
		var qerr *queryError
		if errors.As(err, &qerr) {
			return nil, qerr.asError("series")
		}
		return nil, err
	}
	if out == nil {
		out = []map[string]string{}
	}
	return out, nil
}

// series calls f with every series matching matchers, in label order, at
// most limit of them (0: all).
func (s *Store) series(ctx context.Context, matchers []string, start, end time.Time, limit int, f func(labels.Labels)) (annotations.Annotations, error) {
	if len(matchers) == 0 {
		return nil, &queryError{errBadData, errors.New("no match[] parameter provided")}
	}
	sets, err := s.parser.ParseMetricSelectors(matchers)
	if err != nil {
		return nil, &queryError{errBadData, fmt.Errorf("invalid parameter \"match[]\": %w", err)}
	}
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	if !start.IsZero() {
		mint = timestamp.FromTime(start)
	}
	if !end.IsZero() {
		maxt = timestamp.FromTime(end)
	}
	if maxt < mint {
		return nil, &queryError{errBadData, errors.New("invalid parameter \"end\": end timestamp must not be before start time")}
	}
	release, qerr := s.begin(ctx)
	if qerr != nil {
		return nil, qerr
	}
	defer release()
	q, err := s.db.Querier(mint, maxt)
	if err != nil {
		return nil, &queryError{errInternal, err}
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: mint, End: maxt, Func: "series"}
	if limit > 0 {
		hints.Limit = limit + 1 // one more tells that the result is truncated
	}
	var set storage.SeriesSet
	if len(sets) == 1 {
		set = q.Select(ctx, false, hints, sets[0]...)
	} else {
		ss := make([]storage.SeriesSet, 0, len(sets))
		for _, m := range sets {
			ss = append(ss, q.Select(ctx, true, hints, m...))
		}
		set = storage.NewMergeSeriesSet(ss, hints.Limit, storage.ChainedSeriesMerge)
	}
	n := 0
	for set.Next() {
		if limit > 0 && n >= limit {
			var warn annotations.Annotations
			warn.Add(errors.New("results truncated due to limit"))
			return warn, nil
		}
		f(set.At().Labels())
		n++
	}
	if err := set.Err(); err != nil {
		return nil, classify(err)
	}
	return set.Warnings(), nil
}
