package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func replica(port int, io dbpilot.IOState, reachable bool) *dbpilot.Instance {
	return &dbpilot.Instance{
		Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Reachable: reachable,
		Channels: []dbpilot.ReplicationChannel{{Source: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 21001}, IORunning: io, SQLRunning: true}},
	}
}

func TestAssess(t *testing.T) {
	p := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 21001}
	tests := []struct {
		name      string
		reachable bool
		replicas  []*dbpilot.Instance
		want      string
		reason    string
	}{
		{"primary answers", true, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true)}, dbpilot.ClusterOK, "answers"},
		{"all replicas lost it", false, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true), replica(21003, dbpilot.IOStopped, true)}, dbpilot.ClusterDead, "all 2 reachable replicas lost it"},
		{"one replica still receives", false, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true), replica(21003, dbpilot.IORunning, true)}, dbpilot.ClusterUnreachable, "still replicate from it (127.0.0.1:21003)"},
		{"no replica reachable", false, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, false)}, dbpilot.ClusterUnreachable, "none of its 1 replicas can be read"},
		{"no replicas at all", false, nil, dbpilot.ClusterUnreachable, "none of its 0 replicas"},
		{"unreachable replicas are ignored", false, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true), replica(21003, dbpilot.IORunning, false)}, dbpilot.ClusterDead, "all 1 reachable"},
	}
	for _, tt := range tests {
		v := Assess(tt.reachable, p, tt.replicas)
		if v.State != tt.want || !strings.Contains(v.Reason, tt.reason) {
			t.Errorf("%s: %s (%s), want %s containing %q", tt.name, v.State, v.Reason, tt.want, tt.reason)
		}
	}
}

func TestAgeOut(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	now := time.Now()
	cs := &clusterState{
		cfg:      &ClusterConfig{seeds: []dbpilot.InstanceKey{k(1)}},
		known:    []dbpilot.InstanceKey{k(1), k(2), k(3), k(4), k(5)},
		fenced:   map[dbpilot.InstanceKey]bool{k(4): true},
		lastSeen: map[dbpilot.InstanceKey]time.Time{k(1): now.Add(-2 * time.Hour), k(2): now.Add(-2 * time.Hour), k(3): now.Add(-time.Minute), k(4): now.Add(-2 * time.Hour)},
	}
	gone := cs.ageOut(now, time.Hour, &dbpilot.Instance{Key: k(9)})
	if len(gone) != 1 || gone[0] != k(2) {
		t.Errorf("aged out %v, want only 127.0.0.1:2 (seed 1, recent 3, fenced 4 and new 5 stay)", gone)
	}
	if len(cs.known) != 4 {
		t.Errorf("known = %v", cs.known)
	}
}
