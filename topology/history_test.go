package topology

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// snapshotOf observes a recorded case: its instances, the primary
// discovery finds, and analysis' problems.
func snapshotOf(t *testing.T, name string) Snapshot {
	t.Helper()
	in := loadCase(t, name)
	return snapshotOfInstances(in)
}

func snapshotOfInstances(in []*dbpilot.Instance) Snapshot {
	var p dbpilot.InstanceKey
	if cl := Clusters(in); len(cl) > 0 && len(cl[0].Primaries) > 0 {
		p = cl[0].Primaries[0]
	}
	return NewSnapshot(p, in, Analyze(in, AnalyzeOptions{}))
}

// changeLines prints changes as "kind instance: summary" lines.
func changeLines(cs []dbpilot.TopologyChange) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Kind)
		if !c.Instance.IsZero() {
			b.WriteString(" " + c.Instance.String())
		}
		b.WriteString(": " + c.Summary + "\n")
	}
	return b.String()
}

// clone copies recorded instances (a case loaded once, changed per test).
func clone(t *testing.T, in []*dbpilot.Instance) []*dbpilot.Instance {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []*dbpilot.Instance
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDiff(t *testing.T) {
	healthy := loadCase(t, "healthy")
	p1, p2, p3 := healthy[0].Key, healthy[1].Key, healthy[2].Key
	for _, c := range []struct {
		name       string
		prev, next func() Snapshot
		want       string
	}{{
		name: "first observation",
		prev: func() Snapshot { return Snapshot{} },
		next: func() Snapshot { return snapshotOf(t, "healthy") },
		want: `instance 127.0.0.1:21001: 127.0.0.1:21001 joined as primary
instance 127.0.0.1:21002: 127.0.0.1:21002 joined as replica of 127.0.0.1:21001
instance 127.0.0.1:21003: 127.0.0.1:21003 joined as replica of 127.0.0.1:21001
cluster: primary 127.0.0.1:21001
`,
	}, {
		// Positions, lag, times and problem messages move all the time:
		// no change.
		name: "busy but unchanged",
		prev: func() Snapshot { return snapshotOf(t, "lagging-replica") },
		next: func() Snapshot {
			in := clone(t, loadCase(t, "lagging-replica"))
			for _, i := range in {
				i.ObservedAt = i.ObservedAt.Add(time.Second)
				i.GTID.CurrentPos += "0"
				i.Uptime += time.Second
				for c := range i.Channels {
					// A lagging replica lags more, still past the threshold.
					if l := i.Channels[c].SecondsBehind; l != nil && *l > 0 {
						more := *l + 50
						i.Channels[c].SecondsBehind = &more
					}
					i.Channels[c].ExecSourceLogPos += 1000
					i.Channels[c].IOStateText = "Waiting for master to send event"
				}
			}
			s := snapshotOfInstances(in)
			if len(s.Problems) == 0 {
				t.Fatal("the lagging replica has no problem")
			}
			for i := range s.Problems {
				s.Problems[i].Message += " (50 s more)"
			}
			return s
		},
		want: "",
	}, {
		name: "SQL thread stopped",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot { return snapshotOf(t, "sql-stopped") },
		want: `instance 127.0.0.1:21003: 127.0.0.1:21003: SQL thread stopped (error 1062: Could not execute Write_rows_v1 event on table app.orders; Duplicate entry '1005' for key 'PRIMARY', Error_code: 1062; …)
cluster: problem raised: ReplicationSQLStopped on 127.0.0.1:21003 (critical)
`,
	}, {
		name: "SQL thread started",
		prev: func() Snapshot { return snapshotOf(t, "sql-stopped") },
		next: func() Snapshot { return snapshotOf(t, "healthy") },
		want: `instance 127.0.0.1:21003: 127.0.0.1:21003: SQL thread started
cluster: problem cleared: ReplicationSQLStopped on 127.0.0.1:21003 (critical)
`,
	}, {
		name: "IO thread stopped, semi-sync replica gone",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot { return snapshotOf(t, "io-stopped") },
		want: `instance 127.0.0.1:21001: 127.0.0.1:21001: semi-sync replicas 2 → 1
instance 127.0.0.1:21002: 127.0.0.1:21002: IO thread stopped (error 1236: Got fatal error 1236 from master when reading data from binary log: 'Could not find GTID state requested by slave in an…); semi-sync replica inactive
cluster: problem raised: ReplicationIOStopped on 127.0.0.1:21002 (critical)
`,
	}, {
		// What an unreachable server seems to say (read_only off, no
		// semi-sync) is not reported: only that it became unreachable.
		name: "primary unreachable",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot { return snapshotOf(t, "unreachable-primary") },
		want: `instance 127.0.0.1:21001: 127.0.0.1:21001: became unreachable
instance 127.0.0.1:21002: 127.0.0.1:21002: IO thread connecting (error 2003: error reconnecting to master 'repl@127.0.0.1:21001' - retry-time: 1 maximum-retries: 100000 message: Can't connect to s…); semi-sync replica inactive
instance 127.0.0.1:21003: 127.0.0.1:21003: IO thread connecting (error 2003: error reconnecting to master 'repl@127.0.0.1:21001' - retry-time: 1 maximum-retries: 100000 message: Can't connect to s…); semi-sync replica inactive
cluster: problems raised: DeadPrimary on 127.0.0.1:21001 (critical), Unreachable on 127.0.0.1:21001 (critical), ReplicationIOStopped on 127.0.0.1:21002 (critical), ReplicationIOStopped on 127.0.0.1:21003 (critical)
`,
	}, {
		name: "reachable again",
		prev: func() Snapshot { return snapshotOf(t, "unreachable-primary") },
		next: func() Snapshot { return snapshotOf(t, "healthy") },
		want: `instance 127.0.0.1:21001: 127.0.0.1:21001: reachable again
instance 127.0.0.1:21002: 127.0.0.1:21002: IO thread started; semi-sync replica active
instance 127.0.0.1:21003: 127.0.0.1:21003: IO thread started; semi-sync replica active
cluster: problems cleared: DeadPrimary on 127.0.0.1:21001 (critical), Unreachable on 127.0.0.1:21001 (critical), ReplicationIOStopped on 127.0.0.1:21002 (critical), ReplicationIOStopped on 127.0.0.1:21003 (critical)
`,
	}, {
		name: "relocation",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot {
			in := clone(t, healthy)
			in[2].Channels[0].Source = p2
			return snapshotOfInstances(in)
		},
		want: `instance 127.0.0.1:21003: 127.0.0.1:21003: source 127.0.0.1:21001 → 127.0.0.1:21002 (relocated)
`,
	}, {
		// The old primary is gone (detached after the failover), the
		// candidate promoted and writable, the other replica re-pointed.
		name: "failover",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot {
			in := clone(t, healthy)
			in[1].Channels, in[1].ReadOnly = nil, false
			in[1].SemiSync = in[0].SemiSync
			in[1].SemiSync.PrimaryClients = 1
			in[2].Channels[0].Source = p2
			return NewSnapshot(p2, in[1:], nil)
		},
		want: `left 127.0.0.1:21001: 127.0.0.1:21001 left the cluster
instance 127.0.0.1:21002: 127.0.0.1:21002: replication from 127.0.0.1:21001 removed; read_only off; semi-sync primary side on; semi-sync replicas 0 → 1; semi-sync timeout 0s → 10s; semi-sync replica side off
instance 127.0.0.1:21003: 127.0.0.1:21003: source 127.0.0.1:21001 → 127.0.0.1:21002 (relocated)
cluster: primary 127.0.0.1:21001 → 127.0.0.1:21002
`,
	}, {
		name: "replication set up, read_only on, server replaced",
		prev: func() Snapshot { return snapshotOf(t, "healthy") },
		next: func() Snapshot {
			in := clone(t, healthy)
			in[0].ReadOnly = true
			in[0].ServerID = 9
			in[0].Channels = []dbpilot.ReplicationChannel{{Source: p3, IORunning: dbpilot.IOConnecting, SQLRunning: true}}
			return NewSnapshot(p1, in, nil)
		},
		want: `instance 127.0.0.1:21001: 127.0.0.1:21001: server_id 1 → 9 (another server at this address); now replicates from 127.0.0.1:21003; read_only on
`,
	}, {
		// A problem whose severity changes is another problem.
		name: "problem severity changed",
		prev: func() Snapshot {
			return NewSnapshot(p1, healthy, []dbpilot.Problem{{Code: dbpilot.ProblemReplicaLagging, Severity: dbpilot.SeverityWarning, Instance: p3, Message: "lag 40 s"}})
		},
		next: func() Snapshot {
			return NewSnapshot(p1, healthy, []dbpilot.Problem{{Code: dbpilot.ProblemReplicaLagging, Severity: dbpilot.SeverityCritical, Instance: p3, Message: "lag 400 s"}})
		},
		want: `cluster: problem raised: ReplicaLagging on 127.0.0.1:21003 (critical); problem cleared: ReplicaLagging on 127.0.0.1:21003 (warning)
`,
	}, {
		name: "Galera node desynced",
		prev: func() Snapshot { return snapshotOf(t, "galera-synced") },
		next: func() Snapshot { return snapshotOf(t, "galera-desynced") },
		want: `instance 127.0.0.1:27303: 127.0.0.1:27303: Galera state Synced → Donor/Desynced; Galera desync count 0 → 1
cluster: problems raised: DesyncLeftOn on 127.0.0.1:27303 (warning), NodeDesynced on 127.0.0.1:27303 (warning)
`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
			prev, next := c.prev(), c.next()
			got := Diff("main", at, prev, next)
			if s := changeLines(got); s != c.want {
				t.Errorf("changes:\n%s\nwant:\n%s", s, c.want)
			}
			for _, ch := range got {
				if ch.Cluster != "main" || !ch.Time.Equal(at) || strings.Contains(ch.Summary, "\n") {
					t.Errorf("change %+v", ch)
				}
				switch ch.Kind {
				case dbpilot.ChangeInstance:
					if !reflect.DeepEqual(ch.State, next.Members[ch.Instance.Normalized()].Shape()) {
						t.Errorf("%s: state %+v is not the shape of the member", ch.Instance, ch.State)
					}
				case dbpilot.ChangeCluster:
					if ch.Primary != next.Primary || len(ch.Problems) != len(next.Problems) {
						t.Errorf("cluster change %+v: want the primary and problems after it", ch)
					}
				}
			}
			// Replayed on prev, the changes give next.
			replayed := Rebuild(append(changesOf(prev), got...))
			if !sameSnapshot(replayed, next) {
				t.Errorf("prev and its changes rebuild %+v\nwant %+v", replayed, next)
			}
		})
	}
}

// changesOf records s as a first observation.
func changesOf(s Snapshot) []dbpilot.TopologyChange {
	return Diff("main", time.Time{}, Snapshot{}, s)
}

// sameSnapshot compares snapshots as the history does: members by shape,
// problems by what tells them apart.
func sameSnapshot(a, b Snapshot) bool {
	if !a.Primary.Equal(b.Primary) || len(a.Members) != len(b.Members) {
		return false
	}
	for k, m := range a.Members {
		if !m.SameShape(b.Members[k]) {
			return false
		}
	}
	raised, cleared := problemsDiff(a.Problems, b.Problems)
	return len(raised) == 0 && len(cleared) == 0
}

// TestRebuild: what ChangesAt returns (the newest record of each instance
// and of the cluster, left ones included) makes up the cluster.
func TestRebuild(t *testing.T) {
	healthy := loadCase(t, "healthy")
	shape := func(i int) *dbpilot.Instance { return healthy[i].Shape() }
	problem := dbpilot.Problem{Code: dbpilot.ProblemReplicationSQLStopped, Severity: dbpilot.SeverityCritical, Instance: healthy[2].Key}
	s := Rebuild([]dbpilot.TopologyChange{
		{Kind: dbpilot.ChangeInstance, Instance: healthy[0].Key, State: shape(0)},
		{Kind: dbpilot.ChangeCluster, Primary: healthy[0].Key, Problems: []dbpilot.Problem{problem}},
		{Kind: dbpilot.ChangeLeft, Instance: healthy[1].Key},
		{Kind: dbpilot.ChangeInstance, Instance: healthy[2].Key, State: shape(2)},
	})
	if s.Primary != healthy[0].Key || !reflect.DeepEqual(s.Problems, []dbpilot.Problem{problem}) {
		t.Errorf("rebuilt primary %s, problems %+v", s.Primary, s.Problems)
	}
	got := s.Instances()
	if len(got) != 2 || got[0] != s.Members[healthy[0].Key] || !reflect.DeepEqual(got[1], shape(2)) {
		t.Errorf("rebuilt instances %+v", got)
	}
	if e := Rebuild(nil); len(e.Members) != 0 || !e.Primary.IsZero() || e.Instances() == nil {
		t.Errorf("nothing rebuilds %+v", e)
	}
}

// BenchmarkDiffUnchanged is the cost serve pays every second per cluster
// when nothing changed (100 members).
func BenchmarkDiffUnchanged(b *testing.B) {
	healthy := loadCase(b, "healthy")
	var members []*dbpilot.Instance
	for i := 0; i < 100; i++ {
		m := *healthy[1+i%2]
		m.Key.Port = 30000 + i
		members = append(members, &m)
	}
	prev := NewSnapshot(healthy[0].Key, members, nil)
	b.ReportAllocs()
	for b.Loop() {
		next := NewSnapshot(healthy[0].Key, members, nil)
		if Diff("main", time.Time{}, prev, next) != nil {
			b.Fatal("changes")
		}
	}
}
