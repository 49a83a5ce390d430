package daemon

import (
	"context"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/applyrate"
)

// figuresEvery is how often serve reads a cluster's group commit and
// applier figures from its metrics (they are rates over a minute).
const figuresEvery = 5 * time.Second

// applyFigures are a cluster's figures read from serve's metrics: the
// primary's group commit, and per replica (normalized key) its applier
// workers and retries.
type applyFigures struct {
	at      time.Time
	group   *dbpilot.GroupCommit
	busy    map[dbpilot.InstanceKey]float64
	total   map[dbpilot.InstanceKey]float64
	retries map[dbpilot.InstanceKey]float64
}

// refreshFigures reads the figures of cs from the metrics store when the
// last read is figuresEvery old, and sets them into the status
// (setFigures). The watch loop calls it at the end of its tick, so that the
// queries never delay detection.
func (d *Daemon) refreshFigures(ctx context.Context, cs *clusterState, primary *dbpilot.Instance) {
	if d.metrics == nil || !d.running.Load() || primary == nil || d.unqueryable() != nil {
		return
	}
	cs.mu.Lock()
	f := cs.figures
	cs.mu.Unlock()
	now := time.Now()
	if f != nil && now.Sub(f.at) < figuresEvery {
		return
	}
	f = d.queryFigures(ctx, cs.cfg.Name, primary, now)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.figures = f
	cs.setFigures()
	cs.touch()
}

// setFigures sets the figures last read into the status: the primary's
// group commit, each replica's workers, retry rate and parallel mode, and
// the advice they support (applyrate.Advise) among the problems. Called
// by record after every observation (the status's replicas and problems
// are set afresh) and by refreshFigures. The caller holds cs.mu.
func (cs *clusterState) setFigures() {
	f := cs.figures
	if f == nil {
		return
	}
	cs.status.GroupCommit = nil
	if f.group != nil && f.group.Key.Equal(cs.status.Primary) {
		cs.status.GroupCommit = f.group
	}
	for i := range cs.status.ReplicaApply {
		a := &cs.status.ReplicaApply[i]
		k := a.Key.Normalized()
		a.WorkersBusy, a.WorkersTotal, a.RetryRate = int(f.busy[k]), int(f.total[k]), f.retries[k]
		for _, m := range cs.status.Instances {
			if m.Key.Equal(a.Key) && len(m.Channels) > 0 {
				a.ParallelMode = m.Channels[0].ParallelMode
			}
		}
	}
	var problems []dbpilot.Problem
	for _, p := range cs.status.Problems {
		if p.Code != dbpilot.ProblemSmallCommitGroups && p.Code != dbpilot.ProblemOptimisticRetries {
			problems = append(problems, p)
		}
	}
	if adv := applyrate.Advise(cs.status.GroupCommit, cs.status.ReplicaApply); len(adv) > 0 || len(problems) != len(cs.status.Problems) {
		cs.status.Problems = append(problems, adv...)
		if cs.status.Problems == nil {
			cs.status.Problems = []dbpilot.Problem{}
		}
	}
}

// queryFigures runs the queries of readFigures.
func (d *Daemon) queryFigures(ctx context.Context, cluster string, primary *dbpilot.Instance, now time.Time) *applyFigures {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sel := `{cluster="` + strings.ReplaceAll(cluster, `"`, `\"`) + `"}`
	// perInstance returns expr's value per instance (normalized key); a
	// failed query gives none.
	perInstance := func(expr string) map[dbpilot.InstanceKey]float64 {
		out := map[dbpilot.InstanceKey]float64{}
		series, err := d.metrics.QueryInstant(ctx, expr, now)
		if err != nil {
			return out
		}
		for _, s := range series {
			if len(s.Points) == 0 {
				continue
			}
			k, err := dbpilot.ParseInstanceKey(s.Labels["instance"])
			if err != nil {
				continue
			}
			out[k.Normalized()] += s.Points[len(s.Points)-1].V
		}
		return out
	}
	f := &applyFigures{at: now}
	f.busy = perInstance(`dbpilot_replication_applier_workers_busy` + sel)
	f.total = perInstance(`dbpilot_replication_applier_workers_total` + sel)
	f.retries = perInstance(`rate(mysql_global_status_slave_retried_transactions` + sel + `[1m])`)
	if primary.Flavor != dbpilot.FlavorMariaDB {
		return f
	}
	pk := primary.Key.Normalized()
	rate := func(name string) (float64, bool) {
		v, ok := perInstance(`rate(mysql_global_status_` + name + sel + `[1m])`)[pk]
		return v, ok
	}
	setting := func(name string) int64 {
		if v, ok := perInstance(`mysql_global_variables_` + name + sel)[pk]; ok {
			return int64(v)
		}
		return -1
	}
	commits, ok := rate("binlog_commits")
	if !ok {
		return f
	}
	groups, _ := rate("binlog_group_commits")
	count, _ := rate("binlog_group_commit_trigger_count")
	timeout, _ := rate("binlog_group_commit_trigger_timeout")
	lockWait, _ := rate("binlog_group_commit_trigger_lock_wait")
	gc := applyrate.GroupCommitOf(commits, groups, count, timeout, lockWait)
	gc.Key = primary.Key
	gc.WaitCount, gc.WaitUsec = setting("binlog_commit_wait_count"), setting("binlog_commit_wait_usec")
	f.group = &gc
	return f
}
