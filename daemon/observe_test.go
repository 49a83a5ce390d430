package daemon

import (
	"testing"

	"github.com/dbpilot/dbpilot"
)

// TestKeepUninspected: after a partial crawl, members it did not return
// stay with their last observation, and the primary is taken from them
// when the crawl missed it; inspected instances are not duplicated.
func TestKeepUninspected(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	inst := func(p int) *dbpilot.Instance { return &dbpilot.Instance{Key: k(p), Reachable: true} }
	prev := []*dbpilot.Instance{inst(1), inst(2), inst(3)}
	crawled := []*dbpilot.Instance{inst(2)}
	members, primary := keepUninspected(crawled, nil, prev, crawled, k(1))
	var got []int
	for _, m := range members {
		got = append(got, m.Key.Port)
	}
	if len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 3 {
		t.Errorf("members %v, want 2 then the uninspected 1 and 3", got)
	}
	if primary == nil || primary != prev[0] {
		t.Errorf("primary %v, want the previous observation of 127.0.0.1:1", primary)
	}
	// A crawl that returned the primary unreachable keeps that verdict.
	down := &dbpilot.Instance{Key: k(1)}
	members, primary = keepUninspected([]*dbpilot.Instance{inst(2)}, nil, prev, []*dbpilot.Instance{down, inst(2)}, k(1))
	if primary != nil || len(members) != 2 {
		t.Errorf("an unreachable primary was replaced by its old observation: %v, %d members", primary, len(members))
	}
}
