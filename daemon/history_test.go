package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// memHistory is a topology history in memory. ChangesAt returns every
// change up to t (Rebuild replays them), which makes up the same cluster
// as the newest of each.
type memHistory struct {
	mu      sync.Mutex
	changes []dbpilot.TopologyChange
	fail    error // RecordChanges fails with it
	writes  int   // RecordChanges calls that stored
}

func (h *memHistory) RecordChanges(_ context.Context, cs []dbpilot.TopologyChange) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail != nil {
		return h.fail
	}
	for i := range cs {
		cs[i].ID = int64(len(h.changes) + 1)
		h.changes = append(h.changes, cs[i])
	}
	h.writes++
	return nil
}

func (h *memHistory) TopologyChanges(_ context.Context, f dbpilot.ChangeFilter) ([]dbpilot.TopologyChange, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []dbpilot.TopologyChange
	for _, c := range h.changes {
		if c.Cluster == f.Cluster && (f.From.IsZero() || !c.Time.Before(f.From)) && (f.To.IsZero() || !c.Time.After(f.To)) {
			out = append(out, c)
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = dbpilot.DefaultChangeLimit
	}
	if len(out) > limit {
		if f.Newest {
			out = out[len(out)-limit:]
		} else {
			out = out[:limit]
		}
	}
	return out, nil
}

func (h *memHistory) ChangesAt(ctx context.Context, cluster string, t time.Time) ([]dbpilot.TopologyChange, error) {
	return h.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: cluster, To: t, Limit: 1 << 30})
}

func (h *memHistory) HistoryStart(_ context.Context, cluster string) (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.changes {
		if c.Cluster == cluster {
			return c.Time, nil
		}
	}
	return time.Time{}, nil
}

func (h *memHistory) summaries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.changes {
		out = append(out, c.Summary)
	}
	return out
}

// withHistory gives a test daemon the topology history h.
func withHistory(d *Daemon, h dbpilot.TopologyHistory) {
	d.history = h
	d.changes = newChangeBatcher(h, slog.New(slog.DiscardHandler))
}

// TestHistoryRecordsChanges: serve records the cluster at its first
// observation, nothing while it holds still, a stopped SQL thread with its
// problem, and a failover; ClusterAt rebuilds each moment; a restarted
// serve goes on from what was recorded.
func TestHistoryRecordsChanges(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 10, 2, 3)
	h := &memHistory{}
	d, cs := w.daemon(func(c *Config) { c.Clusters[0].AutoFailover = true })
	withHistory(d, h)
	observe := func() []string {
		t.Helper()
		w.advance(time.Second)
		before := len(h.summaries())
		d.tick(ctx, cs, true)
		d.changes.flush(ctx)
		return h.summaries()[before:]
	}
	if got := observe(); !slices.Equal(got, []string{
		"10.0.0.1:1 joined as primary", "10.0.0.1:2 joined as replica of 10.0.0.1:1", "10.0.0.1:3 joined as replica of 10.0.0.1:1", "primary 10.0.0.1:1",
	}) {
		t.Fatalf("first observation recorded %q", got)
	}
	t0 := w.clock()
	// Writes move positions, not the shape.
	w.mu.Lock()
	for _, i := range w.inst {
		i.GTID.CurrentPos, i.GTID.BinlogPos = "0-1-11", "0-1-11"
	}
	w.mu.Unlock()
	if got := observe(); len(got) != 0 {
		t.Fatalf("an unchanged cluster recorded %q", got)
	}
	if h.writes != 1 {
		t.Errorf("%d writes, want 1 (nothing written when nothing changed)", h.writes)
	}

	w.mu.Lock()
	ch := &w.inst[wkey(3)].Channels[0]
	ch.SQLRunning, ch.LastSQLErrno, ch.LastSQLError = false, 1062, "Duplicate entry '5' for key 'PRIMARY'"
	w.mu.Unlock()
	if got := observe(); !slices.Equal(got, []string{
		"10.0.0.1:3: SQL thread stopped (error 1062: Duplicate entry '5' for key 'PRIMARY')",
		"problem raised: ReplicationSQLStopped on 10.0.0.1:3 (critical)",
	}) {
		t.Fatalf("SQL thread stopped: recorded %q", got)
	}
	t1 := w.clock()

	for _, c := range []struct {
		at      time.Time
		sql     bool
		problem bool
	}{{t0, true, false}, {t1, false, true}} {
		at, err := d.ClusterAt(ctx, "c", c.at)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Recorded || at.Primary != wkey(1) || len(at.Instances) != 3 || at.Instances[2].Key != wkey(3) {
			t.Fatalf("at %s: %+v", c.at, at)
		}
		if got := at.Instances[2].Channels[0].SQLRunning; got != c.sql {
			t.Errorf("at %s: SQL running %t, want %t", c.at, got, c.sql)
		}
		if got := len(at.Problems) > 0 && at.Problems[0].Code == dbpilot.ProblemReplicationSQLStopped; got != c.problem {
			t.Errorf("at %s: problems %+v", c.at, at.Problems)
		}
	}
	at, _ := d.ClusterAt(ctx, "c", t1)
	if len(at.Changes) != 2 || !at.Prev.Equal(t0) || !at.Next.IsZero() {
		t.Errorf("at the stop: changes %d, prev %s, next %s", len(at.Changes), at.Prev, at.Next)
	}
	if at, _ := d.ClusterAt(ctx, "c", t0.Add(-time.Hour)); at.Recorded || len(at.Instances) != 0 || !at.Next.Equal(t0) {
		t.Errorf("before the history: %+v", at)
	}
	if at, _ := d.ClusterAt(ctx, "c", w.clock().Add(time.Hour)); at.Recorded || len(at.Instances) != 0 || !at.Prev.Equal(t1) {
		t.Errorf("in the future: %+v", at)
	}

	// A restarted serve reads what was recorded and records nothing for
	// the unchanged cluster.
	d2, cs2 := w.daemon(nil)
	withHistory(d2, h)
	before := len(h.summaries())
	w.advance(time.Second)
	d2.tick(ctx, cs2, false)
	d2.changes.flush(ctx)
	if got := h.summaries()[before:]; len(got) != 0 {
		t.Fatalf("a restarted serve recorded %q", got)
	}

	// The primary dies and is replaced.
	w.mu.Lock()
	ch = &w.inst[wkey(3)].Channels[0]
	ch.SQLRunning, ch.LastSQLErrno, ch.LastSQLError = true, 0, ""
	w.mu.Unlock()
	observe()
	w.kill(1)
	var got []string
	for i := 0; i < 10 && len(w.recoveries()) == 0; i++ {
		got = append(got, observe()...)
	}
	got = append(got, observe()...)
	if len(w.recoveries()) != 1 || !w.recoveries()[0].Success {
		t.Fatalf("no recovery: %+v", w.recoveries())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"10.0.0.1:1: became unreachable", "problems raised: DeadPrimary on 10.0.0.1:1 (critical)", "primary 10.0.0.1:1 → 10.0.0.1:2"} {
		if !strings.Contains(all, want) {
			t.Errorf("the failover's changes lack %q:\n%s", want, all)
		}
	}
	t.Logf("failover recorded:\n%s", all)
	now, _ := d.ClusterAt(ctx, "c", w.clock())
	if now.Primary != wkey(2) {
		t.Errorf("after the failover the primary is %s:\n%s", now.Primary, all)
	}
	if old, _ := d.ClusterAt(ctx, "c", t1); old.Primary != wkey(1) {
		t.Errorf("before it, %s", old.Primary)
	}
}

// A partial crawl's members that were not inspected keep their recorded
// state and problems: nothing is recorded for them.
func TestKeepUninspected(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	replica := func(p int, sql bool) *dbpilot.Instance {
		return &dbpilot.Instance{Key: k(p), Reachable: true, Channels: []dbpilot.ReplicationChannel{{Source: k(1), IORunning: dbpilot.IORunning, SQLRunning: sql}}}
	}
	stopped := dbpilot.Problem{Code: dbpilot.ProblemReplicationSQLStopped, Severity: dbpilot.SeverityCritical, Instance: k(2)}
	prev := topology.NewSnapshot(k(1), []*dbpilot.Instance{{Key: k(1), Reachable: true}, replica(2, false), replica(3, true)}, []dbpilot.Problem{stopped})
	// 2 was not inspected (its last observation, older than the record,
	// says the thread runs); 4 was not inspected and was never recorded;
	// 3 was, and stopped.
	next := topology.NewSnapshot(k(1), []*dbpilot.Instance{{Key: k(1), Reachable: true}, replica(2, true), replica(3, false), replica(4, true)},
		[]dbpilot.Problem{{Code: dbpilot.ProblemReplicationSQLStopped, Severity: dbpilot.SeverityCritical, Instance: k(3)}})
	keepUninspected(&next, prev, map[dbpilot.InstanceKey]bool{k(2): true, k(4): true})
	var got []string
	for _, c := range topology.Diff("c", time.Time{}, prev, next) {
		got = append(got, c.Summary)
	}
	if want := []string{"127.0.0.1:3: SQL thread stopped", "problem raised: ReplicationSQLStopped on 127.0.0.1:3 (critical)"}; !slices.Equal(got, want) {
		t.Errorf("recorded %q, want %q", got, want)
	}
}

// The batcher writes every cluster's changes of a second at once; a failed
// write is tried again in order; a full queue refuses, and the cluster
// then keeps its last recorded snapshot (recordHistory).
func TestChangeBatcher(t *testing.T) {
	ctx := context.Background()
	h := &memHistory{fail: errors.New("database is locked")}
	b := newChangeBatcher(h, slog.New(slog.DiscardHandler))
	change := func(cluster, summary string) []dbpilot.TopologyChange {
		return []dbpilot.TopologyChange{{Cluster: cluster, Kind: dbpilot.ChangeCluster, Summary: summary}}
	}
	b.add(change("a", "1")...)
	b.flush(ctx)
	b.add(change("b", "2")...)
	h.fail = nil
	b.flush(ctx)
	if got := h.summaries(); !slices.Equal(got, []string{"1", "2"}) || h.writes != 1 {
		t.Errorf("stored %q in %d writes, want 1 and 2 in one", got, h.writes)
	}
	b.pending = make([]dbpilot.TopologyChange, changeBatchMax)
	if ok, waiting := b.add(change("a", "3")...); ok || waiting != changeBatchMax {
		t.Error("a full queue took more changes")
	}
}

// TestHistoryRecordsDetectedDeath: a recovery's detection records its
// dead primary at once, so that a failover that ends before the next
// observation still has the moment the primary was down in the history.
func TestHistoryRecordsDetectedDeath(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 10, 2, 3)
	h := &memHistory{}
	d, cs := w.daemon(nil)
	withHistory(d, h)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	d.changes.flush(ctx)
	before := len(h.summaries())

	env := engineEnv{d: d, cs: cs}
	detect := dbpilot.AuditEvent{Cluster: "c", Instance: wkey(1), Event: dbpilot.AuditDetect, Message: "primary 10.0.0.1:1 is dead; starting failover-auto"}
	env.Audit(ctx, detect)
	env.Audit(ctx, detect) // recorded once
	env.Audit(ctx, dbpilot.AuditEvent{Cluster: "c", Instance: wkey(2), Event: dbpilot.AuditPlan, Message: "plan"})
	d.changes.flush(ctx)
	got := h.summaries()[before:]
	if !slices.Equal(got, []string{"10.0.0.1:1: became unreachable", "problem raised: DeadPrimary on 10.0.0.1:1 (critical)"}) {
		t.Fatalf("the detection recorded %q", got)
	}
	at, err := d.ClusterAt(ctx, "c", w.clock())
	if err != nil {
		t.Fatal(err)
	}
	if at.Instances[0].Key != wkey(1) || at.Instances[0].Reachable || len(at.Problems) != 1 || at.Problems[0].Code != dbpilot.ProblemDeadPrimary {
		t.Errorf("at the detection: %+v, problems %+v", at.Instances[0], at.Problems)
	}
}
