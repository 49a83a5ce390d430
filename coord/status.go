package coord

import (
	"context"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbpilot/dbpilot"
)

// coordMetrics are the coordinator's own metrics on serve's /metrics.
type coordMetrics struct {
	leader       *prometheus.GaugeVec
	elections    *prometheus.CounterVec
	available    prometheus.Gauge
	ttl          prometheus.Gauge
	lastKA       prometheus.Gauge
	checks       *prometheus.CounterVec
	checkSeconds prometheus.Histogram
}

func newCoordMetrics() *coordMetrics {
	return &coordMetrics{
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dbpilot_coordination_leader",
			Help: "1 while this serve is the recovery leader of the cluster."}, []string{"cluster"}),
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbpilot_coordination_elections_won_total",
			Help: "Elections this serve won, per cluster."}, []string{"cluster"}),
		available: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dbpilot_coordination_available",
			Help: "1 while this serve holds a live etcd session; 0: monitoring only, no automatic recovery."}),
		ttl: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dbpilot_coordination_lease_ttl_seconds",
			Help: "The etcd session lease's TTL."}),
		lastKA: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dbpilot_coordination_lease_last_keepalive_timestamp_seconds",
			Help: "When etcd last confirmed this serve's lease (Unix time); lease age = time() - this."}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbpilot_coordination_fence_checks_total",
			Help: "Fencing-token checks before mutating statements, by result (ok, lost, error)."}, []string{"result"}),
		checkSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dbpilot_coordination_fence_check_seconds",
			Help: "Time of a fencing-token check with etcd.", Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, 1}}),
	}
}

// Collectors returns the coordinator's metrics, to register on /metrics.
func (e *Etcd) Collectors() []prometheus.Collector {
	m := e.metrics
	for _, c := range e.opt.Clusters {
		m.leader.WithLabelValues(c)
	}
	return []prometheus.Collector{m.leader, m.elections, m.available, m.ttl, m.lastKA, m.checks, m.checkSeconds}
}

// Status implements dbpilot.Coordinator.
func (e *Etcd) Status(ctx context.Context) *dbpilot.CoordinationStatus {
	ok, why := e.alive()
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &dbpilot.CoordinationStatus{State: dbpilot.CoordinationOK, Member: e.opt.Member, Endpoints: e.opt.Endpoints,
		LeaseTTL: e.opt.LeaseTTL.Seconds(), LastKeepAlive: e.lastKA, Members: []dbpilot.CoordMember{}, Leaders: []dbpilot.ClusterLeader{}}
	if !ok {
		st.State, st.Reason = dbpilot.CoordinationUnavailable, why
	}
	if e.sess != nil {
		st.LeaseID = int64(e.sess.Lease())
	}
	for _, m := range e.members {
		m.Self = m.ID == e.opt.Member
		st.Members = append(st.Members, m)
	}
	slices.SortFunc(st.Members, func(a, b dbpilot.CoordMember) int { return strings.Compare(a.ID, b.ID) })
	for _, c := range e.opt.Clusters {
		cl := dbpilot.ClusterLeader{Cluster: c}
		if l := e.leading[c]; l != nil {
			cl.Member, cl.Token, cl.Since, cl.Self = e.opt.Member, l.fence.Token, l.since, true
		} else if s, ok := e.seen[c]; ok {
			cl.Member, cl.Token, cl.Since = s.Member, s.Token, s.Since
		}
		switch {
		case !ok:
		case cl.Member != "":
			cl.Owner = cl.Member
		default:
			cl.Owner = rendezvous(c, e.memberIDsLocked())[0]
		}
		st.Leaders = append(st.Leaders, cl)
		if r := e.recs[c]; r != nil {
			cp := *r
			st.Recoveries = append(st.Recoveries, &cp)
		}
	}
	return st
}
