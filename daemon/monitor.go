package daemon

import (
	"context"
	"sync"

	"github.com/dbpilot/dbpilot"
)

// monitor runs the metric collection of each monitored instance and keeps
// their targets in step with the topology.
type monitor struct {
	d      *Daemon
	start  CollectorStarter
	forget func(dbpilot.InstanceKey)

	mu      sync.Mutex
	runners map[dbpilot.InstanceKey]*runnerEntry
}

type runnerEntry struct {
	r       MetricsCollector
	cluster string
	target  dbpilot.MonitorTarget
	gate    *HeartbeatGate
}

// roleOf names an instance's role in its cluster.
func roleOf(i *dbpilot.Instance, members []*dbpilot.Instance) string {
	hasReplicas := false
	for _, m := range members {
		if m.Channel(i.Key) != nil {
			hasReplicas = true
			break
		}
	}
	switch {
	case i.IsReplica() && hasReplicas:
		return "intermediate"
	case i.IsReplica():
		// A ring member is a writer: it writes its own heartbeat.
		for _, c := range i.Channels {
			for _, m := range members {
				if m.Key.Equal(c.Source) && m.Channel(i.Key) != nil {
					return "primary"
				}
			}
		}
		return "replica"
	case hasReplicas:
		return "primary"
	}
	return "standalone"
}

// reconcile starts runners for new reachable instances of a cluster, updates
// the targets of known ones, and stops those that left it.
func (m *monitor) reconcile(ctx context.Context, cluster string, members []*dbpilot.Instance, primary *dbpilot.Instance) {
	var (
		primaryID  uint32
		primaryKey dbpilot.InstanceKey
	)
	if primary != nil {
		primaryID, primaryKey = primary.ServerID, primary.Key
	}
	seen := map[dbpilot.InstanceKey]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range members {
		k := i.Key.Normalized()
		seen[k] = true
		e := m.runners[k]
		if !i.Reachable {
			// The runner reconnects by itself (mysql_up shows 0 meanwhile)
			// but keeps its target: no heartbeat is written on the
			// instance until an observation reaches it and decides its
			// role again (a killed primary may come back writable after a
			// failover).
			if e != nil {
				e.gate.reachable.Store(false)
				continue
			}
			if i.Flavor == "" {
				continue // never read: nothing to start a runner for
			}
			// A member that does not answer and has no runner (serve
			// started while it was down, or an observation missed it):
			// monitored all the same, so that mysql_up says 0.
			t := dbpilot.MonitorTarget{Key: i.Key, Flavor: i.Flavor, Version: i.Version, Role: roleOf(i, members), ServerID: i.ServerID, PrimaryServerID: primaryID, PrimaryKey: primaryKey}
			gate := newHeartbeatGate(m.d.coord, cluster)
			gate.reachable.Store(false)
			e = &runnerEntry{r: m.start.Start(ctx, t, dbpilot.Batch{Instance: i.Key, Cluster: cluster, Role: t.Role}, gate), cluster: cluster, target: t, gate: gate}
			m.runners[k] = e
			continue
		}
		t := dbpilot.MonitorTarget{Key: i.Key, Flavor: i.Flavor, Version: i.Version, Role: roleOf(i, members), ServerID: i.ServerID, PrimaryServerID: primaryID, PrimaryKey: primaryKey}
		if e == nil {
			base := dbpilot.Batch{Instance: i.Key, Cluster: cluster, Role: t.Role}
			gate := newHeartbeatGate(m.d.coord, cluster)
			e = &runnerEntry{r: m.start.Start(ctx, t, base, gate), cluster: cluster, target: t, gate: gate}
			m.runners[k] = e
			observe(e.r, i)
			continue
		}
		if e.target != t {
			e.r.SetTarget(t)
			e.target = t
		}
		e.gate.reachable.Store(true) // after the role it was reached with
		observe(e.r, i)
	}
	for k, e := range m.runners {
		if e.cluster == cluster && !seen[k] {
			delete(m.runners, k)
			m.d.log.Info("stopped monitoring", "cluster", cluster, "instance", k.String())
			// Stop waits for the runs going (up to a collector's timeout):
			// not under m.mu, which every cluster's observation and the
			// alert evaluator take (at 1000 instances one stop held them
			// all for seconds). The series end once the runner is done.
			go func(k dbpilot.InstanceKey, r MetricsCollector) {
				r.Stop()
				if m.forget != nil {
					m.forget(k)
				}
				if f, ok := m.start.(interface{ Forget(dbpilot.InstanceKey) }); ok {
					f.Forget(k)
				}
			}(k, e.r)
		}
	}
}

// observe hands a runner that takes observations (collector.Runner) the
// instance as this poll saw it: its replication samples come from it
// instead of a second SHOW ALL SLAVES STATUS.
func observe(r MetricsCollector, i *dbpilot.Instance) {
	if o, ok := r.(interface{ Observe(*dbpilot.Instance) }); ok {
		o.Observe(i)
	}
}

// stop stops every runner.
func (m *monitor) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.runners {
		e.r.Stop()
		delete(m.runners, k)
	}
}

// known reports whether an instance is monitored (alerts for others stop).
// The evaluator asks once per alerting series: a map lookup, not a walk of
// every runner (which was quadratic in the fleet's size).
func (m *monitor) known(instance string) bool {
	k, err := dbpilot.ParseInstanceKey(instance)
	if err != nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.runners[k.Normalized()]
	return ok
}

// Monitored returns how many instances metrics are collected from.
func (d *Daemon) Monitored() int {
	if d.mon == nil {
		return 0
	}
	d.mon.mu.Lock()
	defer d.mon.mu.Unlock()
	return len(d.mon.runners)
}
