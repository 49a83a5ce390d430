package applyrate

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// recorded reads the instances of one of analysis's recorded cases
// (topology/testdata/analyze/CASE/instances.json), by port.
func recorded(t *testing.T, name string) map[int]*dbpilot.Instance {
	t.Helper()
	b, err := os.ReadFile("../topology/testdata/analyze/" + name + "/instances.json")
	if err != nil {
		t.Fatal(err)
	}
	var is []*dbpilot.Instance
	if err := json.Unmarshal(b, &is); err != nil {
		t.Fatal(err)
	}
	out := map[int]*dbpilot.Instance{}
	for _, i := range is {
		out[i.Key.Port] = i
	}
	return out
}

// TestRecordedBacklog computes backlogs from recorded observations: a
// MariaDB replica 475 transactions behind (lagging-replica), and MySQL
// replicas level with their primary, one with errant GTIDs of its own
// that do not count as backlog (errant-mysql).
func TestRecordedBacklog(t *testing.T) {
	m := recorded(t, "lagging-replica")
	for port, want := range map[int]int64{21002: 0, 21003: 9817 - 9342} {
		got, ok := Backlog(m[21001], m[port])
		if !ok || got != want {
			t.Errorf("lagging-replica %d: backlog %d %t, want %d", port, got, ok, want)
		}
	}
	if got := BacklogBytes(m[21003]); got != 48213377-45880122 {
		t.Errorf("lagging-replica 21003: %d relay log bytes to apply, want %d", got, 48213377-45880122)
	}
	p := ReplicaPoint(m[21001], m[21003])
	if !p.Known || !p.Running || p.Backlog != 475 || p.Count != 9342 {
		t.Errorf("point of 21003: %+v", p)
	}

	my := recorded(t, "errant-mysql")
	for _, port := range []int{21002, 21003} {
		got, ok := Backlog(my[21001], my[port])
		if !ok || got != 0 {
			t.Errorf("errant-mysql %d: backlog %d %t, want 0", port, got, ok)
		}
	}
	// The primary ahead by 5: the replica's errant GTIDs do not offset it.
	ahead := *my[21001]
	ahead.GTID.Executed = "3f1e7a52-3f5c-11f0-8d2b-0242ac120002:1-62"
	if got, _ := Backlog(&ahead, my[21002]); got != 5 {
		t.Errorf("errant-mysql 21002 behind a primary 5 ahead: backlog %d, want 5", got)
	}
	if n, ok := Applied(my[21002]); !ok || n != 60 {
		t.Errorf("errant-mysql 21002 applied counter %d %t, want 60 (57 + 3 of its own)", n, ok)
	}
}
