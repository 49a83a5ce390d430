package daemon

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// The topology history (the time machine): every observation of a
// cluster by the serve that observes it is compared with the cluster as
// last recorded (clusterState.hist), and what changed is written to the
// state store (dbpilot.TopologyHistory) by a batcher, every cluster's
// changes of one second in one transaction. GET /api/clusters/{name}/at
// rebuilds a cluster at any instant from those records.

// changeBatchEvery is how often the recorded changes are written.
const changeBatchEvery = time.Second

// changeBatchMax bounds the changes waiting for the next write: past it
// an observation's changes are not queued, and its cluster keeps its last
// recorded snapshot, so that the next observation records them (later)
// rather than the history missing them.
const changeBatchMax = 50000

// historyLoadTimeout bounds reading a cluster's last recorded state.
const historyLoadTimeout = 5 * time.Second

// newChangeBatcher writes the topology changes of every cluster to store
// once a second (changeBatchEvery); a failed write is tried again.
func newChangeBatcher(store dbpilot.TopologyHistory, log *slog.Logger) *batcher[dbpilot.TopologyChange] {
	return &batcher[dbpilot.TopologyChange]{what: "topology history: store the changes", max: changeBatchMax, write: store.RecordChanges, requeue: true, log: log}
}

// queueChanges queues an observation's changes; false when the queue is
// full (the cluster then keeps its last recorded snapshot).
func (d *Daemon) queueChanges(changes []dbpilot.TopologyChange) bool {
	ok, waiting := d.changes.add(changes...)
	if !ok {
		d.changes.warn("topology history: the state store does not keep up; changes wait for the next observation", "waiting", waiting)
	}
	return ok
}

// recordHistory compares an observation of cs (its status just set by
// record, and c's members) with the cluster as last recorded, and queues
// what changed. Members of a partial crawl that were not inspected
// (c.stale) and their problems keep their last recorded state. Only serve
// records (the loops run), and only what it observed itself: with
// coordination the cluster's owner, never a status copied from a peer.
func (d *Daemon) recordHistory(ctx context.Context, cs *clusterState, c crawled, members []*dbpilot.Instance) {
	if d.changes == nil || !d.running.Load() {
		return
	}
	cs.mu.Lock()
	primary, problems, at := cs.status.Primary, cs.status.Problems, cs.status.ObservedAt
	cs.mu.Unlock()
	cs.histMu.Lock()
	defer cs.histMu.Unlock()
	if cs.hist == nil {
		// Once, at the cluster's first observation: a restarted serve goes
		// on from what it recorded, and records no instance again as
		// joined.
		lctx, cancel := context.WithTimeout(ctx, historyLoadTimeout)
		recorded, err := d.history.ChangesAt(lctx, cs.cfg.Name, d.now())
		cancel()
		if err != nil {
			d.log.Warn("topology history: read the cluster's last recorded state; recording waits for the next observation", "cluster", cs.cfg.Name, "err", err)
			return
		}
		s := topology.Rebuild(recorded)
		cs.hist = &s
	}
	prev := *cs.hist
	next := topology.NewSnapshot(primary, members, problems)
	if len(c.stale) > 0 {
		keepUninspected(&next, prev, c.stale)
	}
	if changes := topology.Diff(cs.cfg.Name, at, prev, next); len(changes) > 0 && !d.queueChanges(changes) {
		return // prev stays what is recorded
	}
	cs.hist = &next
}

// recordDeadPrimary records in cs's history the primary a recovery found
// dead (its detect event ev), at the detection: a fast failover ends
// before the next observation, and the history then went from the
// healthy cluster straight to the new primary, without the moment it was
// down that the time machine and the incident report show.
func (d *Daemon) recordDeadPrimary(cs *clusterState, ev dbpilot.AuditEvent) {
	if d.changes == nil || !d.running.Load() || cs == nil {
		return
	}
	cs.histMu.Lock()
	defer cs.histMu.Unlock()
	if cs.hist == nil {
		return // nothing recorded yet to change
	}
	prev := *cs.hist
	k := ev.Instance.Normalized()
	m := prev.Members[k]
	if m == nil || !m.Reachable {
		return // not a member as recorded, or already recorded down
	}
	next := topology.Snapshot{Primary: prev.Primary, Members: maps.Clone(prev.Members), Problems: slices.Clone(prev.Problems)}
	dead := *m
	dead.Reachable = false
	next.Members[k] = &dead
	next.Problems = append(next.Problems, dbpilot.Problem{Code: dbpilot.ProblemDeadPrimary, Severity: dbpilot.SeverityCritical,
		Instance: ev.Instance, Message: ev.Message})
	at := ev.Time
	if at.IsZero() {
		at = d.now()
	}
	if changes := topology.Diff(cs.cfg.Name, at, prev, next); len(changes) > 0 && !d.queueChanges(changes) {
		return
	}
	cs.hist = &next
}

// keepUninspected gives the members stale names (normalized keys) and
// their problems the state prev recorded: what was not inspected did not
// change.
func keepUninspected(next *topology.Snapshot, prev topology.Snapshot, stale map[dbpilot.InstanceKey]bool) {
	for k := range stale {
		if p, ok := prev.Members[k]; ok {
			next.Members[k] = p
		} else {
			delete(next.Members, k)
		}
	}
	var problems []dbpilot.Problem
	for _, p := range next.Problems {
		if !stale[p.Instance.Normalized()] {
			problems = append(problems, p)
		}
	}
	for _, p := range prev.Problems {
		if stale[p.Instance.Normalized()] {
			problems = append(problems, p)
		}
	}
	next.Problems = problems
}

var _ dbpilot.HistoryService = (*Daemon)(nil)

// historyOf returns the state store as a TopologyHistory, or nil.
func historyOf(s dbpilot.StateStore) dbpilot.TopologyHistory {
	h, _ := s.(dbpilot.TopologyHistory)
	return h
}

// noHistory is the error of a daemon without a topology history.
func noHistory() error {
	return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this dbpilot keeps no topology history (its state store has none)")
}

// historyOwner returns the history of the serve that observes cluster
// when it is another one (coordination): its records are the cluster's.
func (d *Daemon) historyOwner(ctx context.Context, cluster string) dbpilot.HistoryService {
	if fwd := d.fromOwner(ctx, cluster); fwd != nil {
		if h, ok := fwd.(dbpilot.HistoryService); ok {
			return h
		}
	}
	return nil
}

// TopologyChanges returns the recorded changes of f.Cluster that f
// selects, oldest first (dbpilot.HistoryService).
func (d *Daemon) TopologyChanges(ctx context.Context, f dbpilot.ChangeFilter) ([]dbpilot.TopologyChange, error) {
	if f.Cluster == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "topology changes: no cluster given")
	}
	if _, err := d.cluster(f.Cluster); err != nil {
		return nil, err
	}
	if h := d.historyOwner(ctx, f.Cluster); h != nil {
		if cs, err := h.TopologyChanges(dbpilot.WithPeerRead(ctx), f); err == nil {
			return cs, nil
		}
		// The owner does not answer: this serve's own records.
	}
	if d.history == nil {
		return nil, noHistory()
	}
	return d.history.TopologyChanges(ctx, f)
}

// ClusterAt returns the cluster as it was at t (dbpilot.HistoryService):
// its instances, primary and problems rebuilt from the topology history,
// the alerts firing then from the alert store, lag and queries/s then from
// the metrics store, and the changes around t. Outside the history (before
// it begins, after now) only Prev and Next are set: the moments to step
// to.
func (d *Daemon) ClusterAt(ctx context.Context, name string, t time.Time) (*dbpilot.ClusterAt, error) {
	if _, err := d.cluster(name); err != nil {
		return nil, err
	}
	if h := d.historyOwner(ctx, name); h != nil {
		if at, err := h.ClusterAt(dbpilot.WithPeerRead(ctx), name, t); err == nil {
			return at, nil
		}
	}
	if d.history == nil {
		return nil, noHistory()
	}
	t = t.UTC()
	now := d.now()
	at := &dbpilot.ClusterAt{Name: name, At: t, Instances: []*dbpilot.Instance{}, Problems: []dbpilot.Problem{},
		Alerts: []dbpilot.Alert{}, Lag: map[string]float64{}, QueriesPerSecond: map[string]float64{}, Changes: []dbpilot.TopologyChange{}}
	var err error
	if at.Since, err = d.history.HistoryStart(ctx, name); err != nil {
		return nil, err
	}
	at.Recorded = !at.Since.IsZero() && !t.Before(at.Since) && !t.After(now)
	if at.Recorded {
		recorded, err := d.history.ChangesAt(ctx, name, t)
		if err != nil {
			return nil, err
		}
		s := topology.Rebuild(recorded)
		at.Primary, at.Instances = s.Primary, s.Instances()
		if len(s.Problems) > 0 {
			at.Problems = s.Problems
		}
	}
	// The nearest changes on either side, within the history: from before
	// it, Next steps into it; from after now, Prev steps back.
	if at.Since.IsZero() {
		return at, nil
	}
	prev, err := d.history.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: name, To: t.Add(-1), Limit: 1, Newest: true})
	if err != nil {
		return nil, err
	}
	if len(prev) > 0 && !prev[0].Time.Before(at.Since) {
		at.Prev = prev[0].Time
	}
	next, err := d.history.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: name, From: maxTime(t.Add(1), at.Since), Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(next) > 0 {
		at.Next = next[0].Time
	}
	if !at.Recorded {
		return at, nil // nothing is known then
	}
	// The changes of the second up to t.
	if at.Changes, err = d.history.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: name, From: t.Add(-time.Second + 1), To: t}); err != nil {
		return nil, err
	}
	if at.Changes == nil {
		at.Changes = []dbpilot.TopologyChange{}
	}
	if at.Alerts, err = d.alertsAt(ctx, name, t); err != nil {
		return nil, err
	}
	d.metricsAt(ctx, at)
	return at, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// alertsAt returns the alerts of cluster firing at t: fired at or before
// it and not resolved by then.
func (d *Daemon) alertsAt(ctx context.Context, cluster string, t time.Time) ([]dbpilot.Alert, error) {
	out := []dbpilot.Alert{}
	if d.alertStore == nil {
		return out, nil
	}
	as, err := d.alertStore.Alerts(ctx, dbpilot.AlertFilter{Cluster: cluster, FiringAt: t})
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		// Checked here too: a store may not know FiringAt.
		if !a.FiredAt.IsZero() && !a.FiredAt.After(t) && (a.ResolvedAt.IsZero() || a.ResolvedAt.After(t)) {
			out = append(out, *a)
		}
	}
	return out, nil
}

// metricsAt fills at's lag and queries/s from the metrics store, by the
// instance label (HOST:PORT): the heartbeat lag as the store's instant
// query sees it (its 5 minute lookback), and the rate of the queries
// counter over the minute up to At. Without a metrics store, or when it
// fails, they stay empty: the topology is the answer.
func (d *Daemon) metricsAt(ctx context.Context, at *dbpilot.ClusterAt) {
	if d.metrics == nil || d.unqueryable() != nil {
		return
	}
	sel := `{cluster=` + strconv.Quote(at.Name) + `}`
	for _, q := range []struct {
		expr string
		into map[string]float64
	}{
		{metricHeartbeatLag + sel, at.Lag},
		{`rate(mysql_global_status_queries` + sel + `[1m])`, at.QueriesPerSecond},
	} {
		series, err := d.metrics.QueryInstant(ctx, q.expr, at.At)
		if err != nil {
			d.log.Debug("topology history: metrics at an instant", "cluster", at.Name, "expr", q.expr, "err", err)
			continue
		}
		for _, s := range series {
			inst := s.Labels["instance"]
			if inst == "" || len(s.Points) == 0 {
				continue
			}
			v := s.Points[len(s.Points)-1].V
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue // JSON cannot carry it
			}
			if old, ok := q.into[inst]; !ok || v > old {
				q.into[inst] = v // the largest of an instance's channels
			}
		}
	}
}
