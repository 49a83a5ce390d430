package daemon

import (
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// TestWithUninspected: a partial crawl that reached one replica only keeps
// the last observation of the others, so the cluster keeps its primary
// and its members (the replica alone looked like a primary of its own).
func TestWithUninspected(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	primary := &dbpilot.Instance{Key: k(1), Reachable: true, ServerID: 1, Replicas: []dbpilot.InstanceKey{k(2), k(3)}}
	replica := func(p int) *dbpilot.Instance {
		return &dbpilot.Instance{Key: k(p), Reachable: true, ServerID: uint32(p), ReadOnly: true,
			Channels: []dbpilot.ReplicationChannel{{Source: k(1), IORunning: "Yes", SQLRunning: true}}}
	}
	prev := []*dbpilot.Instance{primary, replica(2), replica(3)}
	crawl := []*dbpilot.Instance{replica(3)}
	all, stale := withUninspected(crawl, prev)
	if len(all) != 3 || !stale[k(1)] || !stale[k(2)] || stale[k(3)] || all[0] != crawl[0] {
		t.Fatalf("merged %d instances, stale %v", len(all), stale)
	}
	comps := topology.Clusters(all)
	if len(comps) != 1 || len(comps[0].Primaries) != 1 || !comps[0].Primaries[0].Equal(k(1)) || len(comps[0].Instances) != 3 {
		t.Fatalf("components %+v, want one of 3 under 127.0.0.1:1", comps)
	}
	// A complete crawl is returned as is.
	if got, stale := withUninspected(prev, prev); len(got) != 3 || stale != nil {
		t.Errorf("complete crawl: %d instances, stale %v", len(got), stale)
	}
}
