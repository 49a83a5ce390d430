package topology

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

func TestAssessPrimary(t *testing.T) {
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
		v := AssessPrimary(tt.reachable, p, tt.replicas)
		if v.State != tt.want || !strings.Contains(v.Reason, tt.reason) {
			t.Errorf("%s: %s (%s), want %s containing %q", tt.name, v.State, v.Reason, tt.want, tt.reason)
		}
	}
}

func TestProblemKinds(t *testing.T) {
	seen := map[dbpilot.ProblemCode]bool{}
	for i, k := range ProblemKinds {
		if k.Priority != i+1 || seen[k.Code] || k.Action == "" {
			t.Errorf("kind %d: %+v (priorities must be 1.. in order, codes unique, actions named)", i, k)
		}
		seen[k.Code] = true
	}
	// Every code Analyze names in the recorded cases has a kind.
	for _, name := range caseNames(t) {
		for _, p := range Analyze(loadCase(t, name), AnalyzeOptions{}) {
			if !seen[p.Code] {
				t.Errorf("%s: %s has no entry in ProblemKinds", name, p.Code)
			}
		}
	}
}

func TestWorst(t *testing.T) {
	p := func(code dbpilot.ProblemCode, sev dbpilot.Severity) dbpilot.Problem {
		return dbpilot.Problem{Code: code, Severity: sev}
	}
	if _, ok := Worst(nil); ok {
		t.Error("Worst(nil) reported a problem")
	}
	for _, tt := range []struct {
		in   []dbpilot.Problem
		want dbpilot.ProblemCode
	}{
		{[]dbpilot.Problem{p(dbpilot.ProblemReplicaLagging, dbpilot.SeverityWarning)}, dbpilot.ProblemReplicaLagging},
		{[]dbpilot.Problem{p(dbpilot.ProblemUnreachable, dbpilot.SeverityCritical), p(dbpilot.ProblemDeadPrimary, dbpilot.SeverityCritical)}, dbpilot.ProblemDeadPrimary},
		// Severity first: a critical problem of low priority beats a warning.
		{[]dbpilot.Problem{p(dbpilot.ProblemPrimaryReadOnly, dbpilot.SeverityWarning), p(dbpilot.ProblemNoGTID, dbpilot.SeverityCritical)}, dbpilot.ProblemNoGTID},
		{[]dbpilot.Problem{p("SomethingNew", dbpilot.SeverityCritical), p(dbpilot.ProblemReplicationSQLStopped, dbpilot.SeverityCritical)}, dbpilot.ProblemReplicationSQLStopped},
	} {
		if got, _ := Worst(tt.in); got.Code != tt.want {
			t.Errorf("Worst(%v) = %s, want %s", tt.in, got.Code, tt.want)
		}
	}
}
