package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sqlite"
)

// TestStat: on a state file written by the sqlite store (open, as serve
// keeps it), the rows by kind, the rows of each span and the history's
// pages, which grow with the rows recorded.
func TestStat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	record := func(from, n int) {
		t.Helper()
		var cs []dbpilot.TopologyChange
		for i := from; i < from+n; i++ {
			key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306 + i%5}
			at := base.Add(time.Duration(i) * time.Second)
			cs = append(cs,
				dbpilot.TopologyChange{Time: at, Cluster: "c1", Kind: dbpilot.ChangeInstance, Instance: key,
					State:   &dbpilot.Instance{Key: key, Reachable: i%2 == 0, Flavor: "mariadb", ServerID: uint32(i + 1)},
					Summary: fmt.Sprintf("%s: change %d", key, i)},
				dbpilot.TopologyChange{Time: at, Cluster: "c1", Kind: dbpilot.ChangeCluster,
					Primary: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, Summary: "problem raised"})
		}
		if err := db.RecordChanges(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	record(0, 10)
	small, err := stat(path, spans{{base.UnixNano(), base.Add(5 * time.Second).UnixNano()}})
	if err != nil {
		t.Fatal(err)
	}
	if small.Rows != 20 || small.ByKind[dbpilot.ChangeInstance] != 10 || small.ByKind[dbpilot.ChangeCluster] != 10 {
		t.Errorf("rows %d by kind %v, want 20: 10 instance, 10 cluster", small.Rows, small.ByKind)
	}
	if len(small.InSpan) != 1 || small.InSpan[0] != 10 {
		t.Errorf("in span %v, want [10] (seconds 0-4, two records each)", small.InSpan)
	}
	if len(small.InSpanByKind) != 1 || small.InSpanByKind[0][dbpilot.ChangeInstance] != 5 || small.InSpanByKind[0][dbpilot.ChangeCluster] != 5 {
		t.Errorf("in span by kind %v, want [5 instance, 5 cluster]", small.InSpanByKind)
	}
	want := []Kind{{"HOST: change N", 5}, {"problem raised", 5}}
	if len(small.Kinds) != 1 || !slices.Equal(small.Kinds[0], want) {
		t.Errorf("kinds %v, want [%v]", small.Kinds, want)
	}
	if small.PageBytes <= 0 || small.UsedBytes <= 0 || small.UsedBytes > small.PageBytes {
		t.Errorf("page bytes %d, used %d: want 0 < used <= pages", small.PageBytes, small.UsedBytes)
	}
	for _, o := range []string{"topology_changes", "topology_changes_instance_time", "topology_changes_cluster_time"} {
		if small.ByObject[o] <= 0 {
			t.Errorf("no pages for %s: %v", o, small.ByObject)
		}
	}
	if small.AvgState <= 0 || small.AvgClusterState <= 0 || small.AvgSummary <= 0 {
		t.Errorf("average lengths state %v, cluster state %v, summary %v: want > 0", small.AvgState, small.AvgClusterState, small.AvgSummary)
	}

	record(10, 2000)
	big, err := stat(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if big.Rows != 4020 || len(big.InSpan) != 0 {
		t.Errorf("rows %d, in span %v: want 4020, []", big.Rows, big.InSpan)
	}
	// 4000 more records of some hundred bytes each take more pages: at
	// least their summaries' bytes.
	if grown := big.PageBytes - small.PageBytes; grown < 4000*10 {
		t.Errorf("pages grew by %d bytes for 4000 records", grown)
	}

	if _, err := stat(filepath.Join(t.TempDir(), "none.db"), nil); err == nil {
		t.Error("a missing state file: no error")
	}
}

func TestSpanFlag(t *testing.T) {
	var s spans
	if err := s.Set("10:20"); err != nil || len(s) != 1 || s[0] != (span{10, 20}) {
		t.Errorf("Set(10:20): %v %v", s, err)
	}
	for _, bad := range []string{"10", "a:20", "20:10", "10:"} {
		if err := s.Set(bad); err == nil {
			t.Errorf("Set(%q): no error", bad)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1:26019 joined as replica of 127.0.0.1:26015", "HOST joined as replica of HOST"},
		{"problems raised: ErrantGTID on 127.0.0.1:26021 (warning), ErrantGTID on 127.0.0.1:26022 (warning)",
			"problems raised: ErrantGTID on HOST (warning)"},
		{"primary db1.example.com:3306 → [::1]:3307; problems cleared: DeadPrimary on db1.example.com:3306 (critical)",
			"primary HOST → HOST; problems cleared: DeadPrimary on HOST (critical)"},
		{"problems raised: A on h:1 (warning), B on h:2 (warning), and 3 more", "problems raised: A on HOST (warning), B on HOST (warning), and N more"},
	} {
		if got := kindOf(c.in); got != c.want {
			t.Errorf("kindOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
