package daemon

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/mock"
	"github.com/dbpilot/dbpilot/mysql"
)

// Unit tests of the heartbeat gate (heartbeat.go): with coordination the
// heartbeat row is written by the cluster's leader alone, each statement
// under a fencing check; never on an instance the last observation did
// not reach; and a follower, which only reads the rows, adopts the new
// primary of another serve's recovery at once.

// hbServer is a MariaDB server as the heartbeat collector sees it through
// one connection; it records every statement written.
type hbServer struct {
	mu    sync.Mutex
	execs []string
}

func (s *hbServer) Query(_ context.Context, q string, _ ...any) (*mysql.Rows, error) {
	row := func(vals ...string) *mysql.Rows {
		r := &mysql.Rows{Columns: make([]string, len(vals)), Values: [][]*string{make([]*string, len(vals))}}
		for i := range vals {
			r.Values[0][i] = &vals[i]
		}
		return r
	}
	switch {
	case strings.Contains(q, "@@global.read_only"):
		return row("0"), nil
	case strings.Contains(q, "@@global.server_id"):
		return row("1", "0"), nil
	case strings.Contains(q, "FROM dbpilot.heartbeat"):
		now := time.Now()
		ts := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', 6, 64) }
		return row("1", ts(now.Add(-2*time.Second)), ts(now)), nil
	}
	return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "unexpected query %q", q)
}

func (s *hbServer) Exec(_ context.Context, stmts ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs = append(s.execs, stmts...)
	return nil
}

// writes returns the statements written since the last call.
func (s *hbServer) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.execs
	s.execs = nil
	return out
}

// gatedHeartbeatOf returns the heartbeat collector as serve runs it (the
// collector starter's wiring) behind gate.
func gatedHeartbeatOf(t *testing.T, gate *HeartbeatGate) collector.Collector {
	t.Helper()
	s := &collectorStarter{enabled: map[string]bool{"heartbeat": true}}
	cs := s.collectors(gate)
	if len(cs) != 1 {
		t.Fatalf("collectors = %d, want the heartbeat alone", len(cs))
	}
	if _, ok := cs[0].(gatedHeartbeat); !ok {
		t.Fatalf("the heartbeat collector is not gated: %T", cs[0])
	}
	return cs[0]
}

func sampleNames(samples []dbpilot.Sample) []string {
	var out []string
	for _, s := range samples {
		out = append(out, s.Name)
	}
	return out
}

// TestHeartbeatWrittenByTheLeaderOnly: a follower issues no heartbeat
// write on the primary and still reads the lag; the leader writes, each
// statement after a fencing check; once the check fails (leadership lost
// while Lead still answered from its cache) and once Lead says another
// serve leads, nothing is written; with coordination unavailable nothing
// is written and the lag is left out.
func TestHeartbeatWrittenByTheLeaderOnly(t *testing.T) {
	const (
		follower = iota
		leader
		lostAtCheck // Lead still returns the fence; Check fails
		unavailable
	)
	var mu sync.Mutex
	state, checks := follower, 0
	fence := dbpilot.Fence{Cluster: "c", Member: "self", Token: 7}
	co := &mock.Coordinator{
		LeadFn: func(cluster string) (dbpilot.Fence, error) {
			mu.Lock()
			defer mu.Unlock()
			if cluster != "c" {
				t.Errorf("Lead(%q)", cluster)
			}
			switch state {
			case leader, lostAtCheck:
				return fence, nil
			case unavailable:
				return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.EUNAVAIL, "coordination unavailable: etcd unreachable")
			}
			return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster c is led by serve %q", "b")
		},
		CheckFn: func(_ context.Context, f dbpilot.Fence) error {
			mu.Lock()
			defer mu.Unlock()
			checks++
			if f != fence {
				t.Errorf("checked fence %+v, want %+v", f, fence)
			}
			if state != leader {
				return &dbpilot.Error{Code: dbpilot.ECONFLICT, Message: "fencing token 7 is no longer current", Err: dbpilot.ErrLeadershipLost}
			}
			return nil
		},
	}
	set := func(s int) {
		mu.Lock()
		state, checks = s, 0
		mu.Unlock()
	}
	gate := newHeartbeatGate(co, "c")
	hb := gatedHeartbeatOf(t, gate)
	srv := &hbServer{}
	primary := dbpilot.MonitorTarget{Key: wkey(1), Flavor: dbpilot.FlavorMariaDB, Role: "primary", ServerID: 1, PrimaryServerID: 1}
	replica := dbpilot.MonitorTarget{Key: wkey(2), Flavor: dbpilot.FlavorMariaDB, Role: "replica", ServerID: 2, PrimaryServerID: 1}
	ctx := context.Background()
	run := func(what string, tg dbpilot.MonitorTarget) ([]string, []string) {
		t.Helper()
		samples, err := hb.Collect(ctx, srv, tg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return srv.writes(), sampleNames(samples)
	}

	for i := range 3 {
		w, names := run("follower", primary)
		if len(w) != 0 {
			t.Fatalf("follower, run %d: wrote %q", i, w)
		}
		if !slices.Contains(names, metricHeartbeatLag) {
			t.Errorf("follower: no lag read: %v", names)
		}
	}
	if w, names := run("follower on a replica", replica); len(w) != 0 || !slices.Contains(names, metricHeartbeatLag) {
		t.Errorf("follower on a replica: wrote %q, samples %v", w, names)
	}

	set(leader)
	w, _ := run("leader", primary)
	if !slices.ContainsFunc(w, func(s string) bool { return strings.HasPrefix(s, "REPLACE INTO dbpilot.heartbeat") }) ||
		!slices.ContainsFunc(w, func(s string) bool { return strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS dbpilot.heartbeat") }) {
		t.Fatalf("leader: writes %q, want the table made and the row replaced", w)
	}
	mu.Lock()
	if checks != 2 { // one Exec for the table, one for the row
		t.Errorf("leader: %d fencing checks for the first run, want 2 (one per write)", checks)
	}
	mu.Unlock()
	set(leader)
	if w, _ := run("leader, second run", primary); len(w) != 1 || !strings.HasPrefix(w[0], "REPLACE INTO dbpilot.heartbeat") {
		t.Errorf("leader, second run: writes %q, want the row replaced (table made once per connection)", w)
	}
	mu.Lock()
	if checks != 1 {
		t.Errorf("leader, second run: %d fencing checks, want 1", checks)
	}
	mu.Unlock()
	if w, _ := run("leader on a replica", replica); len(w) != 0 {
		t.Errorf("leader wrote on a replica: %q", w)
	}

	set(lostAtCheck)
	w, names := run("leadership lost at the check", primary)
	if len(w) != 0 {
		t.Fatalf("leadership lost: wrote %q", w)
	}
	if !slices.Contains(names, metricHeartbeatLag) {
		t.Errorf("leadership lost: no lag read: %v", names)
	}
	mu.Lock()
	if checks == 0 {
		t.Errorf("leadership lost: no fencing check before the write")
	}
	mu.Unlock()

	set(follower)
	if w, _ := run("leadership lost", primary); len(w) != 0 {
		t.Fatalf("after losing leadership: wrote %q", w)
	}

	set(unavailable)
	w, names = run("coordination unavailable", primary)
	if len(w) != 0 {
		t.Fatalf("coordination unavailable: wrote %q", w)
	}
	if slices.Contains(names, metricHeartbeatLag) || !slices.Contains(names, "mysql_heartbeat_stored_timestamp_seconds") {
		t.Errorf("coordination unavailable: samples %v, want the rows read and the lag left out", names)
	}
	if _, names := run("coordination unavailable, replica", replica); slices.Contains(names, metricHeartbeatLag) {
		t.Errorf("coordination unavailable: a replica's lag is reported: %v", names)
	}

	// Leader again, but the instance was unreachable at the last observation.
	set(leader)
	gate.reachable.Store(false)
	if w, _ := run("leader, instance not observed", primary); len(w) != 0 {
		t.Fatalf("wrote on an instance the last observation did not reach: %q", w)
	}
	gate.reachable.Store(true)
	if w, _ := run("leader, instance observed again", primary); len(w) == 0 {
		t.Fatalf("leader: no write once the instance is observed again")
	}
}

// TestHeartbeatWithoutCoordination: a serve alone writes on the primary as
// before (no fence), and not on an instance the last observation did not
// reach.
func TestHeartbeatWithoutCoordination(t *testing.T) {
	gate := newHeartbeatGate(nil, "c")
	hb := gatedHeartbeatOf(t, gate)
	srv := &hbServer{}
	primary := dbpilot.MonitorTarget{Key: wkey(1), Flavor: dbpilot.FlavorMariaDB, Role: "primary", ServerID: 1, PrimaryServerID: 1}
	ctx := context.Background()
	samples, err := hb.Collect(ctx, srv, primary)
	if w := srv.writes(); err != nil || len(w) == 0 || !slices.Contains(sampleNames(samples), metricHeartbeatLag) {
		t.Fatalf("serve alone: %v, writes %q, samples %v", err, w, sampleNames(samples))
	}
	gate.reachable.Store(false)
	if _, err := hb.Collect(ctx, srv, primary); err != nil || len(srv.writes()) != 0 {
		t.Fatalf("serve alone wrote on an instance the last observation did not reach (%v)", err)
	}
}

// gateStarter records the gate the monitor gives each instance's runner.
type gateStarter struct {
	mu      sync.Mutex
	gates   map[dbpilot.InstanceKey]*HeartbeatGate
	roles   map[dbpilot.InstanceKey]string
	targets map[dbpilot.InstanceKey]dbpilot.MonitorTarget // nil: not kept
}

type nopRunner struct {
	s   *gateStarter
	key dbpilot.InstanceKey
}

func (r nopRunner) SetTarget(t dbpilot.MonitorTarget) {
	r.s.mu.Lock()
	r.s.roles[r.key] = t.Role
	if r.s.targets != nil {
		r.s.targets[r.key] = t
	}
	r.s.mu.Unlock()
}
func (nopRunner) Stop() {}

func (s *gateStarter) Start(_ context.Context, t dbpilot.MonitorTarget, _ dbpilot.Batch, gate *HeartbeatGate) MetricsCollector {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gates[t.Key], s.roles[t.Key] = gate, t.Role
	if s.targets != nil {
		s.targets[t.Key] = t
	}
	return nopRunner{s: s, key: t.Key}
}

func (s *gateStarter) gate(k dbpilot.InstanceKey) *HeartbeatGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gates[k]
}

// TestHeartbeatNotWrittenOnAReturningPrimary: the primary dies and is
// failed over; its runner keeps the primary role, but no heartbeat is
// written on it when it comes back writable before the next observation.
func TestHeartbeatNotWrittenOnAReturningPrimary(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(nil)
	st := &gateStarter{gates: map[dbpilot.InstanceKey]*HeartbeatGate{}, roles: map[dbpilot.InstanceKey]string{}}
	d.mon = &monitor{d: d, start: st, runners: map[dbpilot.InstanceKey]*runnerEntry{}}
	ctx := context.Background()
	d.tick(ctx, cs, true)
	g := st.gate(wkey(1))
	if g == nil || st.roles[wkey(1)] != "primary" {
		t.Fatalf("no runner for the primary: %v", st.roles)
	}
	if m, _ := g.mode(); m != hbWrite {
		t.Fatalf("healthy primary: mode %d, want a write", m)
	}
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if _, p := cs.state(); p != wkey(2) {
		t.Fatalf("no failover: primary %s", p)
	}
	// Node 1 is started again, writable, before serve looks at it.
	w.mu.Lock()
	delete(w.dead, wkey(1))
	w.mu.Unlock()
	if m, _ := g.mode(); m == hbWrite || st.roles[wkey(1)] != "primary" {
		t.Fatalf("the returning old primary (role %q) may be written: mode %d", st.roles[wkey(1)], m)
	}
	hb := gatedHeartbeatOf(t, g)
	srv := &hbServer{}
	if _, err := hb.Collect(ctx, srv, dbpilot.MonitorTarget{Key: wkey(1), Flavor: dbpilot.FlavorMariaDB, Role: "primary", ServerID: 1, PrimaryServerID: 1}); err != nil || len(srv.writes()) != 0 {
		t.Fatalf("heartbeat written on the returning old primary (%v)", err)
	}
	if m, _ := st.gate(wkey(2)).mode(); m != hbWrite || st.roles[wkey(2)] != "primary" {
		t.Errorf("new primary: role %q, mode %d", st.roles[wkey(2)], m)
	}
}

// TestCoordFollowerAdoptsTheSharedRecovery: a follower watched the primary
// die; the leader fails over and records it; the killed primary is started
// again writable. The follower takes the recorded new primary, never the
// one that came back: from the recovery's watch event (mirror), or, when
// that event was missed, from the recovery read when the old primary
// answers again; an event that arrives while a crawl runs is not undone
// by that crawl.
func TestCoordFollowerAdoptsTheSharedRecovery(t *testing.T) {
	for _, when := range []string{"event", "event missed", "event during the crawl"} {
		t.Run(when, func(t *testing.T) {
			w := newWorld(t, 10, 2, 3)
			sr := &dbpilot.SharedRecovery{ID: 4, Cluster: "c", Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: wkey(1), Candidate: wkey(2),
				Member: "b", Token: 3, State: dbpilot.SharedDone, Started: w.clock(), Ended: w.clock()}
			var mu sync.Mutex
			recorded := false
			co := &mock.Coordinator{
				LeadFn: func(c string) (dbpilot.Fence, error) {
					return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s is led by serve %q", c, "b")
				},
				RecoveryFn: func(context.Context, string) (*dbpilot.SharedRecovery, error) {
					mu.Lock()
					defer mu.Unlock()
					if !recorded {
						return nil, nil
					}
					c := *sr
					return &c, nil
				},
			}
			d, cs := coordDaemon(w, co, &forwarded{})
			ctx := context.Background()
			d.tick(ctx, cs, true)
			w.kill(1)
			w.advance(time.Second)
			d.tick(ctx, cs, true)
			if st, p := cs.state(); st != dbpilot.ClusterDead || p != wkey(1) {
				t.Fatalf("follower: state %s, primary %s", st, p)
			}
			// The leader promotes node 2 and moves node 3 below it.
			w.mu.Lock()
			w.inst[wkey(2)].Channels, w.inst[wkey(2)].ReadOnly = nil, false
			w.inst[wkey(3)].Channels[0].Source = wkey(2)
			w.inst[wkey(3)].Channels[0].IORunning, w.inst[wkey(3)].Channels[0].LastIOErrno = dbpilot.IORunning, 0
			w.mu.Unlock()
			mu.Lock()
			recorded = true
			mu.Unlock()
			if when == "event" {
				d.mirror(sr)
				if _, p := cs.state(); p != wkey(2) {
					t.Fatalf("the recorded recovery is not adopted: primary %s", p)
				}
			}
			// The killed node is started again: writable, alone.
			w.mu.Lock()
			delete(w.dead, wkey(1))
			w.mu.Unlock()
			if when == "event during the crawl" {
				var once sync.Once
				d.probe = &mock.Inspector{InspectFn: func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
					i, err := w.inspect(ctx, k)
					once.Do(func() { d.mirror(sr) })
					return i, err
				}}
			}
			for range 2 { // the adoption wakes the loop for a tick at once
				w.advance(time.Second)
				d.tick(ctx, cs, true)
			}
			cs.mu.Lock()
			primary, statusPrimary, fenced := cs.primary, cs.status.Primary, cs.eng.IsFenced(wkey(1))
			var detached []dbpilot.InstanceKey
			for _, i := range cs.detached {
				detached = append(detached, i.Key)
			}
			cs.mu.Unlock()
			if primary != wkey(2) || statusPrimary != wkey(2) {
				t.Fatalf("follower's primary %s (status %s), want %s: the old primary that came back was taken", primary, statusPrimary, wkey(2))
			}
			if !fenced || !slices.Contains(detached, wkey(1)) {
				t.Errorf("old primary: fenced %v, detached %v", fenced, detached)
			}
			// A follower fences the old primary that came back (fencing
			// only takes writes away: any serve does it), and changes
			// nothing else.
			if !slices.Equal(w.calls, []string{"KillClientConnections 1", "SetSemiSync 1", "SetReadOnly 1", "KillClientConnections 1"}) {
				t.Errorf("a follower changed servers: %v, want only the old primary fenced", w.calls)
			}
			select {
			case <-cs.wake:
			default:
			}
		})
	}
}

// TestMonitorTargetsNameThePrimary: every runner's target names the
// cluster's primary by server_id and address (the heartbeat lag is measured
// against the heartbeats read on that instance), and names the new one
// after a failover.
func TestMonitorTargetsNameThePrimary(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(nil)
	st := &gateStarter{gates: map[dbpilot.InstanceKey]*HeartbeatGate{}, roles: map[dbpilot.InstanceKey]string{},
		targets: map[dbpilot.InstanceKey]dbpilot.MonitorTarget{}}
	d.mon = &monitor{d: d, start: st, runners: map[dbpilot.InstanceKey]*runnerEntry{}}
	ctx := context.Background()
	d.tick(ctx, cs, true)
	check := func(primary dbpilot.InstanceKey, of ...dbpilot.InstanceKey) {
		t.Helper()
		st.mu.Lock()
		defer st.mu.Unlock()
		for _, k := range of {
			tg, ok := st.targets[k]
			if !ok || tg.PrimaryKey != primary || tg.PrimaryServerID == 0 {
				t.Errorf("target of %s: %+v, want primary %s", k, tg, primary)
			}
		}
	}
	check(wkey(1), wkey(1), wkey(2), wkey(3))
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if _, p := cs.state(); p != wkey(2) {
		t.Fatalf("no failover: primary %s", p)
	}
	d.tick(ctx, cs, true)
	check(wkey(2), wkey(2), wkey(3))
}

// TestCollectorStarterSharesHeartbeat: the runners of one serve share one
// heartbeat collector, gated or not, so that a replica's lag is measured
// against what its primary's runner read.
func TestCollectorStarterSharesHeartbeat(t *testing.T) {
	s := &collectorStarter{enabled: map[string]bool{"heartbeat": true}}
	a := s.collectors(nil)
	b := s.collectors(newHeartbeatGate(nil, "c"))
	g, ok := b[0].(gatedHeartbeat)
	if len(a) != 1 || !ok || a[0] != g.Collector {
		t.Fatalf("two runners got different heartbeat collectors: %T %T", a[0], b[0])
	}
}
