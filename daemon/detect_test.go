package daemon

import (
	"strings"
	"testing"

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
