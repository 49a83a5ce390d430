package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// figureStore answers the figure queries with one series per instance
// and counts them.
type figureStore struct {
	MetricsBackend
	mu      sync.Mutex
	queries []string
	values  map[string]map[string]float64 // expression → instance → value
}

func (s *figureStore) QueryInstant(_ context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, expr)
	var out []dbpilot.Series
	for inst, v := range s.values[expr] {
		out = append(out, dbpilot.Series{Labels: map[string]string{"instance": inst}, Points: []dbpilot.Point{{T: t, V: v}}})
	}
	return out, nil
}

func (s *figureStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queries)
}

// TestFigureSnapshot: the fleet's figures are read with one query per
// figure for every cluster at once, again only after figuresEvery, and
// each cluster takes its primary's group commit and its replicas'
// workers from them.
func TestFigureSnapshot(t *testing.T) {
	st := &figureStore{values: map[string]map[string]float64{
		figureExprs["busy"]:       {"10.0.0.2:3306": 3, "10.0.1.2:3306": 1},
		figureExprs["total"]:      {"10.0.0.2:3306": 4, "10.0.1.2:3306": 4},
		figureExprs["retries"]:    {"10.0.0.2:3306": 0.5},
		figureExprs["commits"]:    {"10.0.0.1:3306": 100, "10.0.1.1:3306": 40},
		figureExprs["groups"]:     {"10.0.0.1:3306": 25, "10.0.1.1:3306": 40},
		figureExprs["count"]:      {"10.0.0.1:3306": 20},
		figureExprs["timeout"]:    {"10.0.0.1:3306": 5},
		figureExprs["wait_count"]: {"10.0.0.1:3306": 4, "10.0.1.1:3306": 0},
		figureExprs["wait_usec"]:  {"10.0.0.1:3306": 100000, "10.0.1.1:3306": 100000},
	}}
	d := &Daemon{metrics: st}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	s := d.figureSnapshot(ctx, t0)
	if n := st.count(); n != len(figureExprs) {
		t.Fatalf("%d queries for the fleet, want %d (one a figure)", n, len(figureExprs))
	}
	// A second cluster, and the first again, within figuresEvery: no query.
	if s2 := d.figureSnapshot(ctx, t0.Add(figuresEvery-time.Millisecond)); s2 != s || st.count() != len(figureExprs) {
		t.Errorf("read again within %s: %d queries", figuresEvery, st.count())
	}
	if d.figureSnapshot(ctx, t0.Add(figuresEvery)); st.count() != 2*len(figureExprs) {
		t.Errorf("not read again after %s: %d queries", figuresEvery, st.count())
	}

	maria := func(addr string) *dbpilot.Instance {
		k, _ := dbpilot.ParseInstanceKey(addr)
		return &dbpilot.Instance{Key: k, Flavor: dbpilot.FlavorMariaDB}
	}
	a := s.of(maria("10.0.0.1:3306"))
	if a.group == nil {
		t.Fatal("no group commit for cluster A's primary")
	}
	if g := a.group; g.CommitRate != 100 || g.GroupRate != 25 || g.CommitsPerGroup != 4 || g.TriggerCountRate != 20 || g.TriggerTimeoutRate != 5 || g.WaitCount != 4 || g.WaitUsec != 100000 {
		t.Errorf("cluster A's group commit: %+v", *g)
	}
	r, _ := dbpilot.ParseInstanceKey("10.0.0.2:3306")
	if a.busy[r.Normalized()] != 3 || a.total[r.Normalized()] != 4 || a.retries[r.Normalized()] != 0.5 {
		t.Errorf("cluster A's replica: busy %v total %v retries %v", a.busy, a.total, a.retries)
	}
	b := s.of(maria("10.0.1.1:3306"))
	if b.group == nil || b.group.CommitsPerGroup != 1 || b.group.WaitCount != 0 {
		t.Errorf("cluster B's group commit: %+v", b.group)
	}
	// A primary without counters (another flavor, or not collected yet):
	// no group commit.
	if c := s.of(maria("10.0.2.1:3306")); c.group != nil {
		t.Errorf("group commit without counters: %+v", *c.group)
	}
	my := maria("10.0.0.1:3306")
	my.Flavor = dbpilot.FlavorMySQL
	if c := s.of(my); c.group != nil {
		t.Errorf("group commit of a MySQL primary: %+v", *c.group)
	}
}
