package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func hkey(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: port} }

// replica is an instance replicating from source, with positions and lag
// that the history leaves out.
func replica(port, source int, sql bool) *dbpilot.Instance {
	lag := int64(7)
	return &dbpilot.Instance{Key: hkey(port), Reachable: true, ObservedAt: ts(1, 0), ReadOnly: true, ServerID: uint32(port),
		Uptime: time.Hour, GTID: dbpilot.GTIDState{CurrentPos: "0-1-99"},
		Channels: []dbpilot.ReplicationChannel{{Source: hkey(source), IORunning: dbpilot.IORunning, SQLRunning: sql,
			SecondsBehind: &lag, ExecSourceLogPos: 1234, GTIDIOPos: "0-1-99"}}}
}

func instChange(sec int64, cluster string, in *dbpilot.Instance, summary string) dbpilot.TopologyChange {
	return dbpilot.TopologyChange{Time: ts(sec, 0), Cluster: cluster, Kind: dbpilot.ChangeInstance, Instance: in.Key, State: in, Summary: summary}
}

func leftChange(sec int64, cluster string, k dbpilot.InstanceKey) dbpilot.TopologyChange {
	return dbpilot.TopologyChange{Time: ts(sec, 0), Cluster: cluster, Kind: dbpilot.ChangeLeft, Instance: k, Summary: k.String() + " left"}
}

func clusterChange(sec int64, cluster string, primary int, problems ...dbpilot.Problem) dbpilot.TopologyChange {
	return dbpilot.TopologyChange{Time: ts(sec, 0), Cluster: cluster, Kind: dbpilot.ChangeCluster, Primary: hkey(primary), Problems: problems,
		Summary: fmt.Sprintf("primary %d", primary)}
}

// summaries lists what changes say, to compare in one line.
func summaries(cs []dbpilot.TopologyChange) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Summary)
	}
	return strings.Join(s, ", ")
}

func record(t *testing.T, d *DB, cs ...dbpilot.TopologyChange) []dbpilot.TopologyChange {
	t.Helper()
	if err := d.RecordChanges(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestTopologyChanges: changes are stored with their IDs, instances as
// their shape (no positions, lag or times), and read back by cluster and
// span, oldest first, the oldest or the newest of them.
func TestTopologyChanges(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	sqlStopped := dbpilot.Problem{Code: dbpilot.ProblemReplicationSQLStopped, Severity: dbpilot.SeverityCritical, Instance: hkey(3307), Message: "SQL thread stopped"}
	cs := record(t, d,
		instChange(10, "a", replica(3307, 3306, true), "3307 joined"),
		clusterChange(10, "a", 3306),
		instChange(10, "b", replica(4407, 4406, true), "b joined"),
		instChange(20, "a", replica(3307, 3306, false), "3307 SQL stopped"),
		clusterChange(20, "a", 3306, sqlStopped),
	)
	for i, c := range cs {
		if c.ID == 0 || i > 0 && c.ID <= cs[i-1].ID {
			t.Fatalf("IDs %d: want increasing, set by the store", c.ID)
		}
	}
	got, err := d.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if s := summaries(got); s != "3307 joined, primary 3306, 3307 SQL stopped, primary 3306" {
		t.Fatalf("changes of a: %s", s)
	}
	want := cs[3]
	want.State = replica(3307, 3306, false).Shape()
	if !reflect.DeepEqual(got[2], want) {
		t.Errorf("read back %+v\nwant %+v", got[2], want)
	}
	if got[2].State.Channels[0].SecondsBehind != nil || got[2].State.GTID.CurrentPos != "" || !got[2].State.ObservedAt.IsZero() {
		t.Errorf("state kept more than the shape: %+v", got[2].State)
	}
	if !reflect.DeepEqual(got[3].Problems, []dbpilot.Problem{sqlStopped}) || got[3].Primary != hkey(3306) || got[3].State != nil {
		t.Errorf("cluster change read back %+v", got[3])
	}
	for _, c := range []struct {
		f    dbpilot.ChangeFilter
		want string
	}{
		{dbpilot.ChangeFilter{Cluster: "a", From: ts(20, 0)}, "3307 SQL stopped, primary 3306"},
		{dbpilot.ChangeFilter{Cluster: "a", To: ts(19, 0)}, "3307 joined, primary 3306"},
		{dbpilot.ChangeFilter{Cluster: "a", Limit: 3}, "3307 joined, primary 3306, 3307 SQL stopped"},
		{dbpilot.ChangeFilter{Cluster: "a", Limit: 1, Newest: true}, "primary 3306"},
		{dbpilot.ChangeFilter{Cluster: "a", Limit: 3, Newest: true, To: ts(19, 0)}, "3307 joined, primary 3306"},
		{dbpilot.ChangeFilter{Cluster: "b"}, "b joined"},
		{dbpilot.ChangeFilter{Cluster: "c"}, ""},
		{dbpilot.ChangeFilter{}, "3307 joined, primary 3306, b joined, 3307 SQL stopped, primary 3306"},
	} {
		got, err := d.TopologyChanges(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		if s := summaries(got); s != c.want {
			t.Errorf("%+v: %q, want %q", c.f, s, c.want)
		}
	}
	// A zero time is now.
	d.Now = func() time.Time { return ts(30, 0) }
	c := instChange(0, "b", replica(4408, 4406, true), "now")
	c.Time = time.Time{}
	now := record(t, d, c)
	if got, _ := d.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "b", From: ts(30, 0)}); len(got) != 1 || !got[0].Time.Equal(ts(30, 0)) || got[0].ID != now[0].ID {
		t.Errorf("a change without a time: %+v", got)
	}
}

func TestRecordChangesRefusesMalformed(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	for name, c := range map[string]dbpilot.TopologyChange{
		"no cluster":    {Kind: dbpilot.ChangeCluster},
		"unknown kind":  {Cluster: "a", Kind: "moved"},
		"no instance":   {Cluster: "a", Kind: dbpilot.ChangeLeft},
		"no state":      {Cluster: "a", Kind: dbpilot.ChangeInstance, Instance: hkey(1)},
		"time too late": {Cluster: "a", Kind: dbpilot.ChangeCluster, Time: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		good := clusterChange(1, "a", 1)
		if err := d.RecordChanges(ctx, []dbpilot.TopologyChange{good, c}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("%s: %v, want an invalid error", name, err)
		}
	}
	if got, _ := d.TopologyChanges(ctx, dbpilot.ChangeFilter{}); len(got) != 0 {
		t.Errorf("a refused batch stored %d changes", len(got))
	}
	if err := d.RecordChanges(ctx, nil); err != nil {
		t.Errorf("no changes: %v", err)
	}
	d.Close()
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.RecordChanges(ctx, []dbpilot.TopologyChange{clusterChange(1, "a", 1)}); err == nil {
		t.Error("a read-only store recorded changes")
	}
}

// TestChangesAt: the cluster at an instant is the newest record of each
// instance and of the cluster at or before it; an instance that left is
// its left record; one server under two names is one instance.
func TestChangesAt(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	localhost := replica(3308, 3306, true)
	localhost.Key.Host = "localhost"
	record(t, d,
		instChange(10, "a", replica(3306, 0, true), "3306 joined"),
		instChange(10, "a", replica(3307, 3306, true), "3307 joined"),
		instChange(10, "a", localhost, "3308 joined"),
		clusterChange(10, "a", 3306),
		instChange(10, "b", replica(3307, 3306, true), "b's 3307"),
		instChange(20, "a", replica(3307, 3306, false), "3307 SQL stopped"),
		instChange(30, "a", replica(3308, 3307, true), "3308 relocated"),
		leftChange(40, "a", hkey(3307)),
		clusterChange(40, "a", 3308),
	)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{ts(9, 0), ""},
		{ts(10, 0), "3306 joined, 3307 joined, 3308 joined, primary 3306"},
		{ts(25, 0), "3306 joined, 3308 joined, primary 3306, 3307 SQL stopped"},
		{ts(30, 0), "3306 joined, primary 3306, 3307 SQL stopped, 3308 relocated"},
		{ts(50, 0), "3306 joined, 3308 relocated, 127.0.0.1:3307 left, primary 3308"},
	} {
		got, err := d.ChangesAt(ctx, "a", c.at)
		if err != nil {
			t.Fatal(err)
		}
		if s := summaries(got); s != c.want {
			t.Errorf("at %s: %q\nwant %q", c.at.Sub(ts(0, 0)), s, c.want)
		}
	}
	if got, _ := d.ChangesAt(ctx, "none", ts(50, 0)); len(got) != 0 {
		t.Errorf("a cluster without history: %s", summaries(got))
	}
	if s, _ := d.HistoryStart(ctx, "a"); !s.Equal(ts(10, 0)) {
		t.Errorf("history of a starts %v", s)
	}
	if s, _ := d.HistoryStart(ctx, "none"); !s.IsZero() {
		t.Errorf("history of none starts %v", s)
	}
}

// TestPruneTopologyChanges: a prune deletes the changes older than the
// cut-off but those that make up each cluster then, so that the cluster at
// the cut-off (and after) reads the same; an instance that had left is
// gone whole; the history then starts where it can be rebuilt.
func TestPruneTopologyChanges(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	record(t, d,
		instChange(10, "a", replica(3306, 0, true), "3306 joined"),
		instChange(10, "a", replica(3307, 3306, true), "3307 joined"),
		instChange(10, "a", replica(3309, 3306, true), "3309 joined"),
		clusterChange(10, "a", 3306),
		instChange(20, "a", replica(3307, 3306, false), "3307 SQL stopped"),
		clusterChange(20, "a", 3306, dbpilot.Problem{Code: dbpilot.ProblemReplicationSQLStopped, Instance: hkey(3307)}),
		leftChange(30, "a", hkey(3309)),
		instChange(60, "a", replica(3307, 3306, true), "3307 SQL started"),
		clusterChange(60, "a", 3306),
		instChange(10, "b", replica(4406, 0, true), "b joined"),
		clusterChange(10, "b", 4406),
	)
	// What makes up the cluster: the left records are no part of it.
	present := func(t0 time.Time) []dbpilot.TopologyChange {
		t.Helper()
		got, err := d.ChangesAt(ctx, "a", t0)
		if err != nil {
			t.Fatal(err)
		}
		var out []dbpilot.TopologyChange
		for _, c := range got {
			if c.Kind != dbpilot.ChangeLeft {
				out = append(out, c)
			}
		}
		return out
	}
	var before [][]dbpilot.TopologyChange
	at := []time.Time{ts(50, 0), ts(60, 0), ts(70, 0)}
	for _, t0 := range at {
		before = append(before, present(t0))
	}
	p, err := d.Prune(ctx, ts(50, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Deleted: 3307's join, the first cluster record, and 3309 whole.
	if p.Changes != 4 {
		t.Errorf("pruned %d changes, want 4: %+v", p.Changes, p)
	}
	for i, t0 := range at {
		if got := present(t0); !reflect.DeepEqual(got, before[i]) {
			t.Errorf("at %s after the prune: %s\nbefore: %s", t0.Sub(ts(0, 0)), summaries(got), summaries(before[i]))
		}
	}
	all, _ := d.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: "a"})
	if s := summaries(all); s != "3306 joined, 3307 SQL stopped, primary 3306, 3307 SQL started, primary 3306" {
		t.Errorf("kept: %s", s)
	}
	// a is whole from 3309's leaving on (the newest record lost), b lost
	// nothing.
	if s, _ := d.HistoryStart(ctx, "a"); !s.Equal(ts(30, 0)) {
		t.Errorf("history of a starts %s, want at 30s", s.Sub(ts(0, 0)))
	}
	if s, _ := d.HistoryStart(ctx, "b"); !s.Equal(ts(10, 0)) {
		t.Errorf("history of b starts %s, want at 10s", s.Sub(ts(0, 0)))
	}
	if got, _ := d.ChangesAt(ctx, "a", ts(25, 0)); len(got) != 0 {
		t.Errorf("before the history's start: %s", summaries(got))
	}
	// Pruning again at the same cut-off deletes nothing more.
	if p, err := d.Prune(ctx, ts(50, 0)); err != nil || p.Changes != 0 {
		t.Errorf("second prune: %+v, %v", p, err)
	}
	// A later cut-off moves the start on.
	if _, err := d.Prune(ctx, ts(65, 0)); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.HistoryStart(ctx, "a"); !s.Equal(ts(60, 0)) {
		t.Errorf("history of a starts %s after the second prune, want at 60s", s.Sub(ts(0, 0)))
	}
	if got := present(ts(70, 0)); !reflect.DeepEqual(got, before[2]) {
		t.Errorf("at 70s after the second prune: %s\nwant %s", summaries(got), summaries(before[2]))
	}
}

// The state kept is the shape without its zero members: it decodes back to
// the same shape, at well under the size of its plain JSON (every recorded
// instance of topology's test cases, Galera nodes included).
func TestCompactState(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "topology", "testdata", "analyze", "*", "instances.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("recorded instances: %v, %v", files, err)
	}
	var plain, compact int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in []*dbpilot.Instance
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, i := range in {
			shape := i.Shape()
			p, _ := json.Marshal(shape)
			c, err := compactJSON(shape)
			if err != nil {
				t.Fatal(err)
			}
			back := new(dbpilot.Instance)
			if err := json.Unmarshal(c, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, shape) {
				t.Errorf("%s %s: decoded %+v\nwant %+v", f, i.Key, back, shape)
			}
			plain, compact = plain+len(p), compact+len(c)
		}
	}
	t.Logf("shapes: %d bytes of JSON, %d compact", plain, compact)
	if compact*10 > plain*6 {
		t.Errorf("compact state %d bytes against %d: want at most 60%%", compact, plain)
	}
}
