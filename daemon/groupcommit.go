package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/applyrate"
)

// figuresEvery is how often serve reads a cluster's group commit and
// applier figures from its metrics (they are rates over a minute).
const figuresEvery = 5 * time.Second

// applyFigures are a cluster's figures read from serve's metrics: the
// primary's group commit, and per replica (normalized key) its applier
// workers and retries. The maps are the fleet snapshot's, shared by every
// cluster and never modified.
type applyFigures struct {
	at      time.Time
	group   *dbpilot.GroupCommit
	busy    map[dbpilot.InstanceKey]float64
	total   map[dbpilot.InstanceKey]float64
	retries map[dbpilot.InstanceKey]float64
}

// refreshFigures reads the figures of cs from the fleet's snapshot
// (figureSnapshot) when the cluster's are figuresEvery old, and sets them
// into the status (setFigures). The watch loop calls it at the end of its
// tick, so that the queries never delay detection.
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
	snap := d.figureSnapshot(ctx, now)
	if snap == nil || (f != nil && !snap.at.After(f.at)) {
		return
	}
	f = snap.of(primary)
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

// figureCache is the fleet's last figure snapshot, read by one cluster's
// watch loop at a time.
type figureCache struct {
	mu         sync.Mutex
	snap       *figureSnapshot
	refreshing bool
}

// figureSnapshot is, per instance (normalized key), the values of the
// figureExprs at one time, over every cluster serve collects: one instant
// query per figure for the fleet every figuresEvery, not one per figure
// and cluster (at 200 clusters, 2 queries a second instead of 400).
type figureSnapshot struct {
	at time.Time
	v  map[string]map[dbpilot.InstanceKey]float64 // by figureExprs' name
}

// figureExprs are the figures read, by name: the applier workers (busy,
// total), MariaDB's optimistic apply retries per second, and a primary's
// group commit counters per second and settings.
var figureExprs = map[string]string{
	"busy":       `dbpilot_replication_applier_workers_busy`,
	"total":      `dbpilot_replication_applier_workers_total`,
	"retries":    `rate(mysql_global_status_slave_retried_transactions[1m])`,
	"commits":    `rate(mysql_global_status_binlog_commits[1m])`,
	"groups":     `rate(mysql_global_status_binlog_group_commits[1m])`,
	"count":      `rate(mysql_global_status_binlog_group_commit_trigger_count[1m])`,
	"timeout":    `rate(mysql_global_status_binlog_group_commit_trigger_timeout[1m])`,
	"lock_wait":  `rate(mysql_global_status_binlog_group_commit_trigger_lock_wait[1m])`,
	"wait_count": `mysql_global_variables_binlog_commit_wait_count`,
	"wait_usec":  `mysql_global_variables_binlog_commit_wait_usec`,
}

// figureSnapshot returns the fleet's figures, read again when the last
// read is figuresEvery old. While one cluster's loop reads them the others
// take the last snapshot (nil before the first).
func (d *Daemon) figureSnapshot(ctx context.Context, now time.Time) *figureSnapshot {
	c := &d.fleetFigures
	c.mu.Lock()
	s := c.snap
	if (s != nil && now.Sub(s.at) < figuresEvery) || c.refreshing {
		c.mu.Unlock()
		return s
	}
	c.refreshing = true
	c.mu.Unlock()
	s = d.queryFigures(ctx, now)
	c.mu.Lock()
	c.snap, c.refreshing = s, false
	c.mu.Unlock()
	return s
}

// queryFigures runs figureExprs; a failed query gives no values.
func (d *Daemon) queryFigures(ctx context.Context, now time.Time) *figureSnapshot {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s := &figureSnapshot{at: now, v: make(map[string]map[dbpilot.InstanceKey]float64, len(figureExprs))}
	for name, expr := range figureExprs {
		out := map[dbpilot.InstanceKey]float64{}
		s.v[name] = out
		series, err := d.metrics.QueryInstant(ctx, expr, now)
		if err != nil {
			continue
		}
		for _, sr := range series {
			if len(sr.Points) == 0 {
				continue
			}
			k, err := dbpilot.ParseInstanceKey(sr.Labels["instance"])
			if err != nil {
				continue
			}
			out[k.Normalized()] += sr.Points[len(sr.Points)-1].V
		}
	}
	return s
}

// of returns a cluster's figures: the replicas' from the fleet's maps,
// and the group commit of its primary (MariaDB's counters; none without
// its commit rate).
func (s *figureSnapshot) of(primary *dbpilot.Instance) *applyFigures {
	f := &applyFigures{at: s.at, busy: s.v["busy"], total: s.v["total"], retries: s.v["retries"]}
	if primary.Flavor != dbpilot.FlavorMariaDB {
		return f
	}
	pk := primary.Key.Normalized()
	commits, ok := s.v["commits"][pk]
	if !ok {
		return f
	}
	setting := func(name string) int64 {
		if v, ok := s.v[name][pk]; ok {
			return int64(v)
		}
		return -1
	}
	gc := applyrate.GroupCommitOf(commits, s.v["groups"][pk], s.v["count"][pk], s.v["timeout"][pk], s.v["lock_wait"][pk])
	gc.Key = primary.Key
	gc.WaitCount, gc.WaitUsec = setting("wait_count"), setting("wait_usec")
	f.group = &gc
	return f
}
