package daemon

import (
	"context"
	"sync"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
)

// Collectors returns every collector dbpilot runs, in a fixed order.
func Collectors() []collector.Collector {
	return []collector.Collector{
		collector.NewGlobalStatus(),
		collector.NewGlobalVariables(),
		collector.NewReplication(),
		collector.NewHeartbeat(),
		collector.NewInnoDB(),
		collector.NewProcesslist(),
		collector.NewBinlog(),
		collector.NewGalera(),
		collector.NewSemiSync(),
	}
}

// monitor runs one collector Runner per monitored instance and keeps their
// targets in step with the topology.
type monitor struct {
	d       *Daemon
	sink    dbpilot.MetricSink
	forget  func(dbpilot.InstanceKey)
	cfg     collector.Config
	enabled map[string]bool // nil: all

	mu      sync.Mutex
	runners map[dbpilot.InstanceKey]*runnerEntry
}

type runnerEntry struct {
	r       *collector.Runner
	cluster string
	target  collector.Target
}

func (m *monitor) collectors() []collector.Collector {
	var out []collector.Collector
	for _, c := range Collectors() {
		if m.enabled == nil || m.enabled[c.Name()] {
			out = append(out, c)
		}
	}
	return out
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
	var primaryID uint32
	if primary != nil {
		primaryID = primary.ServerID
	}
	seen := map[dbpilot.InstanceKey]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range members {
		k := i.Key.Normalized()
		seen[k] = true
		e := m.runners[k]
		if !i.Reachable {
			continue // the runner reconnects by itself; mysql_up shows 0
		}
		t := collector.Target{Key: i.Key, Flavor: i.Flavor, Version: i.Version, Role: roleOf(i, members), ServerID: i.ServerID, PrimaryServerID: primaryID}
		if e == nil {
			base := dbpilot.Batch{Instance: i.Key, Cluster: cluster, Role: t.Role}
			r := collector.NewRunner(t, m.d.cfg.Admin(), m.collectors(), m.cfg, m.sink, base, m.d.log.With("instance", i.Key.String()))
			r.Start(ctx)
			m.runners[k] = &runnerEntry{r: r, cluster: cluster, target: t}
			continue
		}
		if e.target != t {
			e.r.SetTarget(t)
			e.target = t
		}
	}
	for k, e := range m.runners {
		if e.cluster == cluster && !seen[k] {
			e.r.Stop()
			delete(m.runners, k)
			if m.forget != nil {
				m.forget(k)
			}
			m.d.log.Info("stopped monitoring", "cluster", cluster, "instance", k.String())
		}
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
func (m *monitor) known(instance string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.runners {
		if k.String() == instance || e.target.Key.String() == instance {
			return true
		}
	}
	return false
}
