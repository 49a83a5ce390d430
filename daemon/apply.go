package daemon

import (
	"context"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/applyrate"
)

// applyState is the last minute of a cluster's transaction counters, one
// point an observation: its primary's and each replica's, from which the
// replicas' catch-up is predicted (applyrate.Predict).
type applyState struct {
	primaryKey dbpilot.InstanceKey
	primary    applyrate.Ring
	replicas   map[dbpilot.InstanceKey]*applyrate.Ring
}

// observe adds an observation of the cluster and returns every replica's
// apply figures, in the members' order. A new primary starts the counters
// afresh. The caller holds cs.mu.
func (a *applyState) observe(primary *dbpilot.Instance, members []*dbpilot.Instance) []dbpilot.ReplicaApply {
	if primary == nil || !primary.Reachable {
		return nil
	}
	if !a.primaryKey.Equal(primary.Key) || a.replicas == nil {
		a.primaryKey = primary.Key
		a.primary.Reset()
		a.replicas = map[dbpilot.InstanceKey]*applyrate.Ring{}
	}
	a.primary.Add(applyrate.PrimaryPoint(primary))
	var out []dbpilot.ReplicaApply
	seen := make(map[dbpilot.InstanceKey]bool, len(members))
	for _, m := range members {
		if !m.Reachable || !m.IsReplica() || m.Key.Equal(primary.Key) {
			continue
		}
		k := m.Key.Normalized()
		seen[k] = true
		r := a.replicas[k]
		if r == nil {
			r = &applyrate.Ring{}
			a.replicas[k] = r
		}
		r.Add(applyrate.ReplicaPoint(primary, m))
		ap := applyrate.Predict(a.primary.Points(), r.Points())
		ap.Key = m.Key
		out = append(out, ap)
	}
	for k := range a.replicas {
		if !seen[k] {
			delete(a.replicas, k)
		}
	}
	return out
}

// applyCollector names the series serve writes from the catch-up
// predictions.
const applyCollector = "apply"

// noteApply writes, when serve runs with metrics, each replica's apply
// figures as series of the replica:
//
//	dbpilot_replica_backlog_transactions, dbpilot_replica_backlog_bytes
//	dbpilot_replica_apply_rate          once measured (transactions/s)
//	dbpilot_replica_commit_rate         the primary's transactions/s
//	dbpilot_replica_catchup_seconds     while catching up: the prediction
//	dbpilot_replica_falling_behind_rate while falling behind (transactions/s)
//	dbpilot_replica_catchup_beyond_horizon 1 when falling behind or predicted
//	                                    to take longer than alerts.catchup_horizon
func (d *Daemon) noteApply(cs *clusterState, apply []dbpilot.ReplicaApply) {
	if d.metrics == nil || !d.running.Load() {
		return
	}
	now := time.Now()
	horizon := d.cfg.Alerts.CatchUpHorizon.D()
	if horizon <= 0 {
		horizon = DefaultCatchUpHorizon
	}
	for _, a := range apply {
		g := func(name, help string, v float64) dbpilot.Sample {
			return dbpilot.Sample{Name: name, Type: dbpilot.Gauge, Value: v, Help: help}
		}
		samples := []dbpilot.Sample{
			g("dbpilot_replica_backlog_transactions", "Transactions the cluster's primary committed that the replica has not applied (GTID positions).", float64(a.BacklogTransactions)),
			g("dbpilot_replica_backlog_bytes", "Relay log bytes the replica has still to apply.", float64(a.BacklogBytes)),
			g("dbpilot_replica_commit_rate", "The cluster primary's transactions per second over the last minute.", a.CommitRate),
		}
		if a.RateSeconds > 0 {
			samples = append(samples, g("dbpilot_replica_apply_rate", "Transactions per second the replica applied while it had a backlog, over the last minute.", a.ApplyRate))
		}
		beyond := 0.0
		switch a.State {
		case dbpilot.CatchUpCatching:
			samples = append(samples, g("dbpilot_replica_catchup_seconds", "Predicted time for the replica to catch up: backlog / (apply rate - commit rate).", a.CatchUpSeconds))
			if a.CatchUpSeconds > horizon.Seconds() {
				beyond = 1
			}
		case dbpilot.CatchUpFalling:
			samples = append(samples, g("dbpilot_replica_falling_behind_rate", "Transactions per second the replica's backlog grows by (commit rate - apply rate).", a.FallingBehindBy))
			beyond = 1
		}
		samples = append(samples, g("dbpilot_replica_catchup_beyond_horizon", "1 when the replica falls behind or is predicted to catch up later than alerts.catchup_horizon.", beyond))
		_ = d.metrics.Write(context.Background(), dbpilot.Batch{Instance: a.Key, Cluster: cs.cfg.Name, Role: "replica", Collector: applyCollector, Time: now, Samples: samples})
	}
}
