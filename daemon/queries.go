package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
)

// QueriesConfig configures query analytics (issue 13 §1): a statements
// collector per monitored instance reads the digest table (or the slow
// query log when performance_schema is off), stores what ran per minute
// and digest in the state file, and writes per-digest series for the
// costliest Top digests of each instance.
type QueriesConfig struct {
	// Disabled turns the statements collector off (default: on).
	Disabled bool `yaml:"disabled"`
	// Interval is how often the digest table is read (default 10s).
	Interval Duration `yaml:"interval"`
	// Top bounds the digests with their own series per instance (default 200).
	Top int `yaml:"top"`
	// Examples keeps the literals of example statements (they may hold
	// personal data; default: replaced by "?").
	Examples bool `yaml:"examples"`
	// Retention is how long the statistics are kept (default 8 days).
	Retention Duration `yaml:"retention"`
}

// DefaultQueriesRetention is QueriesConfig.Retention's default.
const DefaultQueriesRetention = 8 * 24 * time.Hour

// validateQueries fills the defaults of queries: and checks them.
func (c *Config) validateQueries() error {
	q := &c.Queries
	if q.Interval == 0 {
		q.Interval = Duration(defaultStatementsInterval)
	}
	if iv := q.Interval.D(); iv < time.Second || iv > time.Hour {
		return fmt.Errorf("queries.interval: %s is outside 1s..1h", iv)
	}
	if q.Top == 0 {
		q.Top = defaultStatementsTop
	}
	if q.Top < 1 || q.Top > 10000 {
		return fmt.Errorf("queries.top: %d is outside 1..10000 (it bounds the per-digest series of each instance)", q.Top)
	}
	if q.Retention == 0 {
		q.Retention = Duration(DefaultQueriesRetention)
	}
	if q.Retention.D() < time.Hour {
		return fmt.Errorf("queries.retention: %s is below 1h", q.Retention.D())
	}
	if c.Metrics.Disabled && !q.Disabled {
		// The collector runs on the monitoring sessions.
		q.Disabled = true
	}
	return nil
}

// QueryStore keeps the statements collectors' intervals and answers
// reports from them; the sqlite store implements it.
type QueryStore interface {
	dbpilot.QueryRecorder
	dbpilot.QueryService
	PruneQueries(ctx context.Context, before time.Time) (int64, error)
}

var _ dbpilot.QueryService = (*Daemon)(nil)

// errNoQueries is the answer of a serve that collects no query statistics.
var errNoQueries = errors.New("this dbpilot serve collects no query statistics (queries.disabled, metrics.disabled, or no state store)")

// Queries answers a query report from the store.
func (d *Daemon) Queries(ctx context.Context, f dbpilot.QueryFilter) (*dbpilot.QueryReport, error) {
	if d.queryStore == nil {
		return nil, dbpilot.WrapError(dbpilot.EUNSUPPORTED, errNoQueries, "queries")
	}
	if f.Cluster != "" {
		if _, err := d.cluster(f.Cluster); err != nil {
			return nil, err
		}
	}
	if f.Instance != "" {
		k, err := dbpilot.ParseInstanceKey(f.Instance)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "queries: instance %q", f.Instance)
		}
		f.Instance = k.String()
	}
	return d.queryStore.Queries(ctx, f)
}

// pruneQueries deletes the query statistics older than their retention.
func (d *Daemon) pruneQueries(ctx context.Context) {
	if d.queryStore == nil {
		return
	}
	keep := d.cfg.Queries.Retention.D()
	if keep <= 0 {
		keep = DefaultQueriesRetention
	}
	before := d.now().Add(-keep)
	n, err := d.queryStore.PruneQueries(ctx, before)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.log.Warn("prune query statistics", "err", err)
		}
	case n > 0:
		d.log.Info("query statistics pruned", "before", before.Format(time.RFC3339), "rows", n)
	}
}

// queryStoreOf returns the state store as a QueryStore, or nil.
func queryStoreOf(s dbpilot.StateStore) QueryStore {
	q, _ := s.(QueryStore)
	return q
}
