package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// find returns the instance with port in in.
func find(in []*dbpilot.Instance, port int) *dbpilot.Instance {
	for _, i := range in {
		if i.Key.Port == port {
			return i
		}
	}
	panic(fmt.Sprintf("no instance on port %d", port))
}

// codes lists problems as "port:Code" (with ":severity" when sev).
func codes(ps []dbpilot.Problem, sev bool) []string {
	var out []string
	for _, p := range ps {
		s := fmt.Sprintf("%d:%s", p.Instance.Port, p.Code)
		if sev {
			s += ":" + string(p.Severity)
		}
		out = append(out, s)
	}
	return out
}

func TestAnalyzeRules(t *testing.T) {
	t0 := time.Date(2025, 6, 2, 10, 15, 0, 0, time.UTC)
	tests := []struct {
		name   string
		base   string
		modify func(in []*dbpilot.Instance) []*dbpilot.Instance
		want   []string // port:Code:severity
	}{
		{
			name: "replica ahead on its source's own stream, observed later: snapshot skew",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).GTID.BinlogState = "0-1-15"
				return in
			},
		},
		{
			name: "replica ahead on its source's stream, observed earlier: the source lost them",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21002)
				r.GTID.BinlogState = "0-1-15"
				r.ObservedAt = t0
				return in
			},
			want: []string{"21002:ErrantGTID:warning"},
		},
		{
			name: "replica has transactions of a server its source never had",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21003).GTID.BinlogState = "0-1-12,0-9-4"
				return in
			},
			want: []string{"21003:ErrantGTID:warning"},
		},
		{
			name: "MySQL replica ahead of its source, observed later: snapshot skew",
			base: "errant-mysql",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21002)
				r.GTID.Executed = strings.Replace(find(in, 21001).GTID.Executed, "1-57", "1-60", 1)
				return in
			},
		},
		{
			name: "ring member writes in domain 0 besides its own domain",
			base: "ring",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).GTID.BinlogState = "0-2-1,1-1-20,2-2-16,3-3-9"
				return in
			},
			want: []string{"21002:ErrantGTID:warning"},
		},
		{
			name: "ring with two writable members",
			base: "ring",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21003).ReadOnly = false
				return in
			},
			want: []string{"21001:MultipleWritable:critical", "21003:MultipleWritable:critical"},
		},
		{
			name: "primary refuses dbpilot (account locked): alive, not down",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				p := find(in, 21001)
				*p = dbpilot.Instance{Key: p.Key, RefusedErrno: 4151, LastError: `mysql: connect on 127.0.0.1:21001: the account of user "dbpilot" is locked`}
				for _, r := range in[1:] {
					r.Channels[0].IORunning, r.Channels[0].LastIOErrno = dbpilot.IOConnecting, 4151
				}
				return in
			},
			want: []string{"21001:RefusesDbpilot:critical", "21002:ReplicationIOStopped:critical", "21003:ReplicationIOStopped:critical"},
		},
		{
			name: "ring member without log_slave_updates breaks the ring",
			base: "ring",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21003).LogReplicaUpdates = false
				return in
			},
			want: []string{"21003:NoLogReplicaUpdates:critical"},
		},
		{
			name: "intermediate without log_slave_updates starves its replicas",
			base: "chain",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).LogReplicaUpdates = false
				return in
			},
			want: []string{"21002:NoLogReplicaUpdates:critical"},
		},
		{
			name: "multi-source with an unreachable source: no errant check",
			base: "multi-source-errant",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				p := find(in, 21002)
				*p = dbpilot.Instance{Key: p.Key, LastError: "mysql: connect on 127.0.0.1:21002: connection refused"}
				return in
			},
			// Its replica still shows a running channel from it: not dead.
			want: []string{"21002:Unreachable:critical", "21002:UnreachablePrimary:critical"},
		},
		{
			name: "multi-source sink that is writable",
			base: "multi-source",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21003).ReadOnly = false
				return in
			},
			want: []string{"21003:ReplicaNotReadOnly:warning"},
		},
		{
			name: "delayed replica within its delay is not lagging",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				c := &find(in, 21002).Channels[0]
				c.SQLDelay = 3600
				c.SecondsBehind = new(int64(3605))
				c2 := &find(in, 21003).Channels[0]
				c2.SQLDelay = 3600
				c2.SecondsBehind = new(int64(3611))
				return in
			},
			want: []string{"21003:ReplicaLagging:warning"},
		},
		{
			name: "unknown lag with running threads is no problem",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).Channels[0].SecondsBehind = nil
				return in
			},
		},
		{
			name: "threads stopped by an operator, and a replica reconnecting without error",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				c := &find(in, 21002).Channels[0]
				c.IORunning, c.SQLRunning, c.SecondsBehind = dbpilot.IOStopped, false, nil
				find(in, 21003).Channels[0].IORunning = dbpilot.IOConnecting
				return in
			},
			want: []string{"21002:ReplicationIOStopped:warning", "21002:ReplicationSQLStopped:warning"},
		},
		{
			name: "heartbeat off, and heartbeat not below slave_net_timeout",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).Channels[0].HeartbeatPeriod = 0
				find(in, 21003).Channels[0].HeartbeatPeriod = 10 * time.Second
				return in
			},
			want: []string{"21002:SlowFailureDetection:warning", "21003:SlowFailureDetection:warning"},
		},
		{
			name: "heartbeat period unknown (MySQL without performance_schema): judged on slave_net_timeout alone",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				for _, p := range []int{21002, 21003} {
					find(in, p).Channels[0].HeartbeatPeriod = 0
					find(in, p).Channels[0].HeartbeatUnknown = true
				}
				find(in, 21003).SlaveNetTimeout = 60 * time.Second
				return in
			},
			want: []string{"21003:SlowFailureDetection:warning"},
		},
		{
			name: "file/position replication",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).Channels[0].UsingGTID = "No"
				return in
			},
			want: []string{"21002:NoGTID:warning"},
		},
		{
			name: "MySQL without GTID, and MySQL without auto-position",
			base: "errant-mysql",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21002)
				r.GTID.Executed = find(in, 21001).GTID.Executed
				r.GTID.Mode = "OFF_PERMISSIVE"
				find(in, 21003).Channels[0].UsingGTID = "No"
				return in
			},
			want: []string{"21002:NoGTID:warning", "21003:NoGTID:warning"},
		},
		{
			name: "standalone read-only server without replicas",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				p := find(in, 21001)
				p.ReadOnly, p.Replicas, p.SemiSync = true, nil, dbpilot.SemiSyncState{}
				return []*dbpilot.Instance{p}
			},
		},
		{
			name: "semi-sync still active with no clients",
			base: "semisync-no-replicas",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21001).SemiSync.PrimaryActive = true
				return in
			},
			want: []string{"21001:SemiSyncNoReplicas:warning"},
		},
		{
			// "Ready for promotion", as DBAs do: each applied commit may
			// wait the semi-sync timeout (issue 10: 5 s of a 5.1 s failover).
			name: "semi-sync primary side on a leaf replica is SemiSyncPrimaryOnReplica",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				find(in, 21002).SemiSync.PrimaryEnabled = true
				return in
			},
			want: []string{"21002:SemiSyncPrimaryOnReplica:warning"},
		},
		{
			name: "semi-sync primary side on a leaf replica without log_slave_updates waits for nothing",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21002)
				r.SemiSync.PrimaryEnabled = true
				r.LogReplicaUpdates = false
				return in
			},
			want: []string{"21002:NoLogReplicaUpdates:warning"},
		},
		{
			name: "unreachable replica known only from its source",
			base: "healthy",
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21003)
				*r = dbpilot.Instance{Key: r.Key, LastError: "mysql: connect on 127.0.0.1:21003: timed out"}
				return in
			},
			want: []string{"21003:Unreachable:critical"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.modify(loadCase(t, tt.base))
			got := Analyze(in, AnalyzeOptions{})
			if c := codes(got, true); !slices.Equal(c, tt.want) {
				t.Errorf("got %q, want %q", c, tt.want)
				for _, p := range got {
					t.Logf("%s", p.Message)
				}
			}
		})
	}
}

func TestAnalyzeMessages(t *testing.T) {
	in := loadCase(t, "unreachable-primary")
	ps := Analyze(in, AnalyzeOptions{})
	if len(ps) < 2 || ps[1].Code != dbpilot.ProblemUnreachable || !strings.Contains(ps[1].Message, "connection refused") || ps[1].Detail["role"] != "primary" {
		t.Errorf("unreachable primary: %+v", ps)
	}
	if ps[0].Code != dbpilot.ProblemDeadPrimary || ps[0].Message != "primary 127.0.0.1:21001 is unreachable and all 2 reachable replicas lost it" || ps[0].Detail["lost"] != "2" {
		t.Errorf("dead primary: %+v", ps[0])
	}

	in = loadCase(t, "lagging-replica")
	ps = Analyze(in, AnalyzeOptions{LagThreshold: 5 * time.Minute})
	if len(ps) != 0 {
		t.Errorf("lag 184s under a 5m threshold: %v", codes(ps, false))
	}

	in = loadCase(t, "slow-failure-detection")
	ps = Analyze(in, AnalyzeOptions{MaxDetection: 2 * time.Minute})
	if len(ps) != 0 {
		t.Errorf("slave_net_timeout 60s under a 2m bound with heartbeat 30s: %v", codes(ps, false))
	}
}

func TestClusters(t *testing.T) {
	tests := []struct {
		base      string
		modify    func(in []*dbpilot.Instance) []*dbpilot.Instance
		want      []string // name: primaries / instances
		wantEdges int
	}{
		{base: "healthy", want: []string{"127.0.0.1:21001: [127.0.0.1:21001] / 3"}, wantEdges: 2},
		{base: "chain", want: []string{"127.0.0.1:21001: [127.0.0.1:21001] / 3"}, wantEdges: 2},
		{base: "ring", want: []string{"127.0.0.1:21001: [127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003] / 3"}, wantEdges: 3},
		{base: "multi-source", want: []string{"127.0.0.1:21001: [127.0.0.1:21001 127.0.0.1:21002] / 3"}, wantEdges: 2},
		{base: "unreachable-primary", want: []string{"127.0.0.1:21001: [127.0.0.1:21001] / 3"}, wantEdges: 2},
		{
			base: "healthy", // an unreachable replica stays in its cluster and is no primary
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := find(in, 21003)
				*r = dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "localhost", Port: 21003}, LastError: "timed out"}
				return in
			},
			want:      []string{"127.0.0.1:21001: [127.0.0.1:21001] / 3"},
			wantEdges: 2,
		},
		{
			base: "healthy", // two clusters
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				other := loadCase(t, "chain")
				for _, i := range other {
					i.Key.Port += 100
					for c := range i.Channels {
						i.Channels[c].Source.Port += 100
					}
					for r := range i.Replicas {
						i.Replicas[r].Port += 100
					}
				}
				return append(other, in...)
			},
			want: []string{
				"127.0.0.1:21001: [127.0.0.1:21001] / 3",
				"127.0.0.1:21101: [127.0.0.1:21101] / 3",
			},
			wantEdges: 2,
		},
		{
			base: "ring", // a replica hanging off a ring member
			modify: func(in []*dbpilot.Instance) []*dbpilot.Instance {
				r := loadCase(t, "chain")[2] // replicates from 21002
				r.Key.Port = 21004
				find(in, 21002).Replicas = append(find(in, 21002).Replicas, r.Key)
				return append(in, r)
			},
			want:      []string{"127.0.0.1:21001: [127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003] / 4"},
			wantEdges: 4,
		},
	}
	for _, tt := range tests {
		in := loadCase(t, tt.base)
		if tt.modify != nil {
			in = tt.modify(in)
		}
		cs := Clusters(in)
		var got []string
		for _, c := range cs {
			got = append(got, fmt.Sprintf("%s: %v / %d", c.Name, c.Primaries, len(c.Instances)))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.base, got, tt.want)
		}
		if n := len(Edges(cs[0])); n != tt.wantEdges {
			t.Errorf("%s: %d edges, want %d", tt.base, n, tt.wantEdges)
		}
	}
}

func TestSummarize(t *testing.T) {
	for base, healthy := range map[string]bool{"healthy": true, "ring": true, "sql-stopped": false, "writable-replica": false} {
		in := loadCase(t, base)
		ps := Analyze(in, AnalyzeOptions{})
		cs := Clusters(in)
		h := Summarize(cs[0], ps)
		if h.Healthy != healthy || h.Instances != 3 || len(h.Problems) != len(ps) || h.Name != "127.0.0.1:21001" {
			t.Errorf("%s: %+v", base, h)
		}
	}
}

func TestErrantAfterFailover(t *testing.T) {
	// 21002 was promoted; 21003 had received 0-1-13 from the old primary
	// 21001 (now gone), which the new primary never got.
	in := loadCase(t, "healthy")
	p, r := find(in, 21002), find(in, 21003)
	p.Channels, p.ReadOnly, p.Replicas = nil, false, []dbpilot.InstanceKey{r.Key}
	p.GTID.BinlogState = "0-1-12,0-2-14"
	r.Channels[0].Source = p.Key
	r.GTID.BinlogState = "0-1-13,0-2-14"
	got := Analyze([]*dbpilot.Instance{p, r}, AnalyzeOptions{})
	if c := codes(got, false); !slices.Equal(c, []string{"21003:ErrantGTID"}) || got[0].Detail["errant"] != "0-1-13" {
		t.Errorf("got %v %v", c, got)
	}
}

// TestErrantSnapshotSkew: a replica whose inspection ended before its
// source's did, but after the source's began, may hold a transaction the
// source's read missed (serve's own heartbeat): not errant. One that ended
// before the source's read began is compared strictly.
func TestErrantSnapshotSkew(t *testing.T) {
	in := loadCase(t, "healthy")
	p, r := find(in, 21001), find(in, 21002)
	p.GTID.BinlogState, p.GTID.BinlogPos, p.GTID.CurrentPos = "0-1-49", "0-1-49", "0-1-49"
	r.GTID.BinlogState, r.GTID.BinlogPos, r.GTID.CurrentPos, r.GTID.SlavePos = "0-1-50", "0-1-50", "0-1-50", "0-1-50"
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name        string
		replicaRead [2]time.Duration // start, end of the replica's inspection
		errant      bool
	}{
		{"overlapping, replica first to end", [2]time.Duration{10 * time.Millisecond, 40 * time.Millisecond}, false},
		{"replica read before the source's", [2]time.Duration{-50 * time.Millisecond, -10 * time.Millisecond}, true},
	} {
		p.ReadStartedAt, p.ObservedAt = t0, t0.Add(60*time.Millisecond)
		r.ReadStartedAt, r.ObservedAt = t0.Add(c.replicaRead[0]), t0.Add(c.replicaRead[1])
		got := Analyze([]*dbpilot.Instance{p, r}, AnalyzeOptions{})
		if has := slices.Contains(codes(got, false), "21002:ErrantGTID"); has != c.errant {
			t.Errorf("%s: errant %t, want %t: %v", c.name, has, c.errant, got)
		}
	}
}
