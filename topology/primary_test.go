package topology

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

func replicaErr(port int, io dbpilot.IOState, errno int) *dbpilot.Instance {
	r := replica(port, io, true)
	r.Channels[0].LastIOErrno = errno
	return r
}

func silent(port int, d time.Duration) *dbpilot.Instance {
	r := replica(port, dbpilot.IORunning, true)
	r.Channels[0].HeartbeatPeriod, r.Channels[0].SourceSilentFor = time.Second, d
	return r
}

func TestAssessPrimary(t *testing.T) {
	p := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 21001}
	down := &dbpilot.Instance{Key: p, LastError: "connection refused"}
	up := &dbpilot.Instance{Key: p, Reachable: true}
	locked := &dbpilot.Instance{Key: p, RefusedErrno: 4151, LastError: `mysql: inspect on 127.0.0.1:21001: the account of user "dbpilot" is locked`}
	tests := []struct {
		name     string
		primary  *dbpilot.Instance
		replicas []*dbpilot.Instance
		want     string
		reason   string
	}{
		{"primary answers", up, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true)}, dbpilot.ClusterOK, "answers"},
		{"all replicas lost it", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 2003), replicaErr(21003, dbpilot.IOConnecting, 2013)}, dbpilot.ClusterDead, "all 2 reachable replicas lost it"},
		{"connecting without an error yet votes dead", down, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true)}, dbpilot.ClusterDead, "all 1 reachable"},
		{"IO thread gave up after retries votes dead", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOStopped, 2003)}, dbpilot.ClusterDead, "all 1 reachable"},
		{"one replica still receives", down, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true), replica(21003, dbpilot.IORunning, true)}, dbpilot.ClusterUnreachable, "still see it alive (127.0.0.1:21003)"},
		{"no replica reachable", down, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, false)}, dbpilot.ClusterUnreachable, "none of its 1 replicas can be read"},
		{"no replicas at all", down, nil, dbpilot.ClusterUnreachable, "none of its 0 replicas"},
		{"unreachable replicas are ignored", down, []*dbpilot.Instance{replica(21002, dbpilot.IOConnecting, true), replica(21003, dbpilot.IORunning, false)}, dbpilot.ClusterDead, "all 1 reachable"},
		// An answer is proof of life.
		{"primary refuses dbpilot (account locked)", locked, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 2003)}, dbpilot.ClusterUnreachable, "answers but refuses dbpilot"},
		{"replicas refused by the primary (locked replication account)", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 4151), replicaErr(21003, dbpilot.IOConnecting, 1045)}, dbpilot.ClusterUnreachable, "still see it alive"},
		{"too many connections and host blocked are answers", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 1040), replicaErr(21003, dbpilot.IOConnecting, 1129)}, dbpilot.ClusterUnreachable, "still see it alive"},
		{"a binlog error from the primary is an answer", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOStopped, 1236)}, dbpilot.ClusterUnreachable, "still see it alive"},
		{"IO threads stopped by hand do not vote", down, []*dbpilot.Instance{replica(21002, dbpilot.IOStopped, true), replica(21003, dbpilot.IOStopped, true)}, dbpilot.ClusterUnreachable, "stopped without an error"},
		{"one lost, one stopped by hand: the lost one decides", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 2003), replica(21003, dbpilot.IOStopped, true)}, dbpilot.ClusterDead, "all 1 reachable"},
		{"running but silent for 3 heartbeat periods votes dead (a hung primary)", down, []*dbpilot.Instance{silent(21002, 3*time.Second), silent(21003, 3*time.Second)}, dbpilot.ClusterDead, "all 2 reachable"},
		{"running and silent for 1 s is still alive", down, []*dbpilot.Instance{silent(21002, time.Second)}, dbpilot.ClusterUnreachable, "still see it alive"},
		{"net read timeout votes dead", down, []*dbpilot.Instance{replicaErr(21002, dbpilot.IOConnecting, 1159)}, dbpilot.ClusterDead, "all 1 reachable"},
	}
	for _, tt := range tests {
		v := AssessPrimary(tt.primary, tt.replicas)
		if v.State != tt.want || !strings.Contains(v.Reason, tt.reason) {
			t.Errorf("%s: %s (%s), want %s containing %q", tt.name, v.State, v.Reason, tt.want, tt.reason)
		}
		if _, ok := v.Problem(p); ok && tt.primary.RefusedErrno != 0 {
			t.Errorf("%s: a refusing primary must not be named DeadPrimary/UnreachablePrimary", tt.name)
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
