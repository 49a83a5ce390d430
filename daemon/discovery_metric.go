package daemon

import (
	"context"
	"fmt"
	"strings"
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

// analysisCollector names the series serve writes from each observation's
// analysis (dbpilot_topology_problem).
const analysisCollector = "analysis"

// alerted are the topology problems that have an alert rule of their own:
// they exist only in analysis, not in any collector's series.
var alerted = map[dbpilot.ProblemCode]bool{
	dbpilot.ProblemRefusesDbpilot:   true,
	dbpilot.ProblemMultipleWritable: true,
	dbpilot.ProblemClusterOverlap:   true,
}

// noteProblems writes, when serve runs with metrics, one series
// dbpilot_topology_problem{code, server} = 1 per alerted problem of the
// observation, as a complete batch of the cluster's primary: a problem that
// is gone ends its series. Written when the set changes, and every
// saveEvery while it is not empty (so that a restarted store has it).
func (d *Daemon) noteProblems(cs *clusterState, at dbpilot.InstanceKey, problems []dbpilot.Problem) {
	if d.metrics == nil || !d.running.Load() {
		return
	}
	if at.IsZero() && len(cs.cfg.seeds) > 0 {
		at = cs.cfg.seeds[0]
	}
	var samples []dbpilot.Sample
	var sig strings.Builder
	for _, p := range problems {
		if !alerted[p.Code] {
			continue
		}
		samples = append(samples, dbpilot.Sample{Name: "dbpilot_topology_problem", Value: 1, Type: dbpilot.Gauge,
			Labels: []dbpilot.Label{{Name: "code", Value: string(p.Code)}, {Name: "server", Value: p.Instance.String()}, {Name: "errno", Value: p.Detail["errno"]}},
			Help:   "A problem found by serve's analysis of the cluster that has an alert of its own (RefusesDbpilot, MultipleWritable, ClusterOverlap), per server."})
		fmt.Fprintf(&sig, "%s %s %s;", p.Code, p.Instance, p.Detail["errno"])
	}
	now := time.Now()
	cs.mu.Lock()
	same := sig.String() == cs.problemSig && at == cs.problemAt
	due := len(samples) > 0 && now.Sub(cs.problemWritten) >= saveEvery
	prevAt := cs.problemAt
	if same && !due {
		cs.mu.Unlock()
		return
	}
	cs.problemSig, cs.problemAt, cs.problemWritten = sig.String(), at, now
	cs.mu.Unlock()
	if !prevAt.IsZero() && prevAt != at {
		// The series were written under another instance: end them there.
		_ = d.metrics.Write(context.Background(), dbpilot.Batch{Instance: prevAt, Cluster: cs.cfg.Name, Collector: analysisCollector, Time: now})
	}
	_ = d.metrics.Write(context.Background(), dbpilot.Batch{Instance: at, Cluster: cs.cfg.Name, Collector: analysisCollector, Time: now, Samples: samples})
}
