package daemon

import (
	"context"
	"time"

	"github.com/dbpilot/dbpilot"
)

// discoveryCollector names the series of each cluster's discovery pass in
// the metrics store.
const discoveryCollector = "discovery"

// noteDiscovery records how long one observation of the cluster took
// (discovery crawl, analysis, state save, monitoring update) as
// dbpilot_discovery_seconds{cluster, instance=<first seed>}, when serve runs
// with metrics. Called deferred from observe with its start time.
func (d *Daemon) noteDiscovery(cs *clusterState, start time.Time) {
	if d.metrics == nil || !d.running.Load() || len(cs.cfg.seeds) == 0 {
		return
	}
	took := time.Since(start)
	_ = d.metrics.Write(context.Background(), dbpilot.Batch{
		Instance: cs.cfg.seeds[0], Cluster: cs.cfg.Name, Collector: discoveryCollector, Time: time.Now(), Took: took,
		Samples: []dbpilot.Sample{{Name: "dbpilot_discovery_seconds", Value: took.Seconds(), Type: dbpilot.Gauge,
			Help: "How long the last observation of the cluster took: discovery crawl, analysis, state save."}},
	})
}
