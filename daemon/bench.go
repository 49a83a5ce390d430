package daemon

import (
	"context"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// BenchMetricPrefix starts the name of every metric `dbpilot bench` writes
// into serve's metrics (WriteBenchMetrics).
const BenchMetricPrefix = "dbpilot_bench_"

// maxBenchSamples bounds one batch of bench metrics.
const maxBenchSamples = 1000

// WriteBenchMetrics stores one interval of a `dbpilot bench` run (rate,
// latency percentiles, busy connections, backlog) so that the console can
// show the load beside the servers' metrics. Only dbpilot_bench_* names
// are taken; the batch's instance is the bench's target.
func (d *Daemon) WriteBenchMetrics(ctx context.Context, b dbpilot.Batch) error {
	if d.metrics == nil {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "serve stores no metrics (metrics are off)")
	}
	if len(b.Samples) == 0 || len(b.Samples) > maxBenchSamples {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench metrics: %d samples; want 1 to %d", len(b.Samples), maxBenchSamples)
	}
	for _, s := range b.Samples {
		if !strings.HasPrefix(s.Name, BenchMetricPrefix) {
			return dbpilot.Errorf(dbpilot.EINVALID, "bench metrics: %q does not start with %s", s.Name, BenchMetricPrefix)
		}
	}
	if b.Instance.IsZero() {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench metrics: no instance")
	}
	b.Collector = "bench"
	b.Role = ""
	return d.metrics.Write(ctx, b)
}
