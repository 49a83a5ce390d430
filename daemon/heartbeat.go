package daemon

import (
	"sync/atomic"

	"github.com/dbpilot/dbpilot"
)

// The heartbeat collector is the one place where serve writes on a server
// outside a topology change: REPLACE INTO dbpilot.heartbeat on an instance
// whose role is primary (and, once per connection, the CREATE of its
// schema and table). A write there on a server that is not, or no longer,
// the cluster's primary is an errant transaction: a killed primary started
// again writable (no read_only in its my.cnf) and written to before it is
// fenced cannot rejoin. So the write is gated here, in the daemon, which
// knows what the collector does not:
//
//   - the instance was reachable at the cluster's last observation: a
//     runner keeps its target (role primary) while its server is down, and
//     reconnects by itself when it is back; the role is decided again only
//     by an observation that reaches it;
//   - with coordination, this serve leads the cluster: followers only read
//     the rows the leader writes, and each statement of the leader is
//     preceded by the same fencing check as every mutating step of a
//     recovery (fencedCtl), so no write is issued once leadership is lost.
//     While coordination is unavailable nobody leads and nobody writes: the
//     lag is then left out of the samples. Where the primary is read, the
//     lag compares heartbeats and would read 0, saying nothing; where it is
//     not, it falls back to the age of the last heartbeat, which grows with
//     nobody writing and would fire ReplicationLagHigh on every replica.
//     Seconds_Behind_Master remains.

// roleWriter is the MonitorTarget.Role on which the heartbeat collector
// writes (a cluster's primary, a ring member); roleWriterNotLed is what it
// is given instead when this serve must not write.
const (
	roleWriter       = "primary"
	roleWriterNotLed = "primary-not-written"
)

// metricHeartbeatLag is the heartbeat collector's lag series.
const metricHeartbeatLag = "dbpilot_heartbeat_lag_seconds"

// HeartbeatGate decides, for one monitored instance, whether serve writes
// the heartbeat row on it now. The monitor makes one per runner and keeps
// it in step with the cluster's observations.
type HeartbeatGate struct {
	coord   dbpilot.Coordinator // nil: this serve acts alone
	cluster string
	// reachable: the cluster's last observation reached the instance.
	reachable atomic.Bool
}

func newHeartbeatGate(co dbpilot.Coordinator, cluster string) *HeartbeatGate {
	g := &HeartbeatGate{coord: co, cluster: cluster}
	g.reachable.Store(true) // runners start on reachable instances only
	return g
}

// hbMode is how the heartbeat collector runs on an instance now.
type hbMode int

const (
	hbWrite       hbMode = iota // write (as leader, under fence; or alone)
	hbRead                      // read only: not the leader, or not observed reachable
	hbUnavailable               // read only and without the lag: coordination unavailable, nobody writes
)

// mode returns how the heartbeat may run now, with the fence a leader
// writes under (zero when this serve acts alone).
func (g *HeartbeatGate) mode() (hbMode, dbpilot.Fence) {
	if g.coord == nil {
		if !g.reachable.Load() {
			return hbRead, dbpilot.Fence{}
		}
		return hbWrite, dbpilot.Fence{}
	}
	f, err := g.coord.Lead(g.cluster)
	switch {
	case err == nil && g.reachable.Load():
		return hbWrite, f
	case err != nil && dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL:
		return hbUnavailable, dbpilot.Fence{}
	}
	return hbRead, dbpilot.Fence{}
}

// withoutLag removes the heartbeat lag from samples (in place).
func withoutLag(samples []dbpilot.Sample) []dbpilot.Sample {
	out := samples[:0]
	for _, s := range samples {
		if s.Name != metricHeartbeatLag {
			out = append(out, s)
		}
	}
	return out
}
