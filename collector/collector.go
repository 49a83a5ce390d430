// Package collector reads metrics from MySQL and MariaDB servers: one file
// per collector behind the small Collector interface (the shape of
// mysqld_exporter's Scraper), each run on its own interval with a timeout
// and self-metrics, by a Runner that keeps one persistent connection per
// instance and never lets runs of a collector pile up.
package collector

import (
	"context"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Querier is what collectors need of a connection; *mysql.DB implements it.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (*mysql.Rows, error)
	Exec(ctx context.Context, stmts ...string) error
}

// Target describes the instance a collector runs on.
type Target = dbpilot.MonitorTarget

// Collector reads one group of metrics.
type Collector interface {
	// Name is the collector's name, e.g. "global_status"; it labels
	// self-metrics and appears in configuration.
	Name() string
	// DefaultInterval is how often it runs unless configured otherwise.
	DefaultInterval() time.Duration
	// Collect reads the metrics and returns them. It must honour ctx (the
	// runner's timeout) and must not take metadata locks on user tables.
	Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error)
}

// PartialCollector is a Collector whose runs may return only some of its
// series (global_status between its full runs); LastPartial tells it of
// the run that just returned, and the runner marks the batch Partial.
type PartialCollector interface {
	Collector
	LastPartial() bool
}

// ObservingCollector is a Collector that can build its samples from serve's
// latest observation of the instance (Runner.Observe): discovery reads the
// replica status and GTID positions every poll, and reading them again for
// metrics doubled those statements on every server. The runner calls
// FromObservation, with the batch stamped at the observation's time,
// when an observation arrived since the collector's last run and within
// its interval; Collect otherwise. q serves what the observation lacks.
type ObservingCollector interface {
	Collector
	FromObservation(ctx context.Context, q Querier, t Target, obs *dbpilot.Instance) ([]dbpilot.Sample, error)
}
