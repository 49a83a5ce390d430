package daemon

// Unit tests of the failover engine: the daemon's tick and its operations
// driven through mocks of the root interfaces (package mock) over a small
// in-memory replication world, with a fake clock and no sleeps. What only a
// real server proves stays in the integration tests.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mock"
	"github.com/dbpilot/dbpilot/recovery"
	"go.uber.org/goleak"
)

func wkey(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "10.0.0.1", Port: port} }

// world is a MariaDB replication topology in memory. Inspect and the
// controller's calls read and change it as servers would: a dead server
// refuses connections and its replicas' IO threads reconnect in vain; a
// server cut from dbpilot only refuses dbpilot while replication goes on.
type world struct {
	t   *testing.T
	mu  sync.Mutex
	now time.Time

	inst map[dbpilot.InstanceKey]*dbpilot.Instance
	dead map[dbpilot.InstanceKey]bool // the server is down
	cut  map[dbpilot.InstanceKey]bool // dbpilot cannot reach it; replication can

	calls []string // controller calls that change servers, "Op port"
	// before, when set, runs before every controller call that changes a
	// server; an error fails the call.
	before func(op string, key dbpilot.InstanceKey) error

	recs   []*dbpilot.Recovery
	audits []dbpilot.AuditEvent
}

// newWorld returns a primary on port 1 with replicas on the other ports,
// all at GTID 0-1-<seq>.
func newWorld(t *testing.T, seq int, replicas ...int) *world {
	w := &world{t: t, now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		inst: map[dbpilot.InstanceKey]*dbpilot.Instance{}, dead: map[dbpilot.InstanceKey]bool{}, cut: map[dbpilot.InstanceKey]bool{}}
	pos := fmt.Sprintf("0-1-%d", seq)
	w.inst[wkey(1)] = w.server(1, pos)
	for _, p := range replicas {
		r := w.server(p, pos)
		r.ReadOnly = true
		r.Channels = []dbpilot.ReplicationChannel{{Source: wkey(1), IORunning: dbpilot.IORunning, SQLRunning: true,
			UsingGTID: "Slave_Pos", GTIDIOPos: pos, HeartbeatPeriod: time.Second}}
		w.inst[wkey(p)] = r
	}
	return w
}

func (w *world) server(port int, pos string) *dbpilot.Instance {
	v, _ := dbpilot.ParseVersion("10.11.6-MariaDB-log")
	return &dbpilot.Instance{Key: wkey(port), Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: v,
		ServerID: uint32(port), LogBin: true, LogReplicaUpdates: true, BinlogFormat: "ROW", SlaveNetTimeout: 10 * time.Second,
		GTID: dbpilot.GTIDState{Mode: "ON", BinlogPos: pos, SlavePos: pos, CurrentPos: pos, BinlogState: pos, StrictMode: true}}
}

// at sets what a replica applied (its GTID positions and binlog) and
// received (its IO thread's position).
func (w *world) at(port int, applied, received string) {
	i := w.inst[wkey(port)]
	i.GTID.SlavePos, i.GTID.CurrentPos, i.GTID.BinlogPos, i.GTID.BinlogState = applied, applied, applied, applied
	i.Channels[0].GTIDIOPos = received
}

// clock is the daemon's clock.
func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// sleep is a daemon Sleep on the fake clock: it advances it at once.
func (w *world) sleep(ctx context.Context, d time.Duration) error {
	w.advance(d)
	return ctx.Err()
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

// kill stops a server: its replicas lose it.
func (w *world) kill(port int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := wkey(port)
	w.dead[k] = true
	for _, i := range w.inst {
		for c := range i.Channels {
			if i.Channels[c].Source == k && i.Channels[c].IORunning == dbpilot.IORunning {
				i.Channels[c].IORunning, i.Channels[c].LastIOErrno, i.Channels[c].LastIOError = dbpilot.IOConnecting, 2003, "Can't connect to server"
			}
		}
	}
}

// inspect reads a server as the probe and the controller see it.
func (w *world) inspect(_ context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.inst[k]
	if !ok || w.dead[k] || w.cut[k] {
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: connect on %s: connection refused", k)
	}
	c := *i
	c.Channels = slices.Clone(i.Channels)
	c.Replicas = nil
	for _, o := range w.inst {
		if !w.dead[o.Key] && o.Channel(k) != nil {
			c.Replicas = append(c.Replicas, o.Key)
		}
	}
	slices.SortFunc(c.Replicas, func(a, b dbpilot.InstanceKey) int { return a.Port - b.Port })
	c.ObservedAt = w.now
	return &c, nil
}

// change applies a controller call to a live server.
func (w *world) change(op string, k dbpilot.InstanceKey, fn func(i *dbpilot.Instance)) error {
	if w.before != nil {
		if err := w.before(op, k); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf("%s %d", op, k.Port))
	i, ok := w.inst[k]
	if !ok || w.dead[k] || w.cut[k] {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: %s on %s: connection refused", op, k)
	}
	if fn != nil {
		fn(i)
	}
	return nil
}

func (w *world) controller() *mock.ReplicationController {
	return &mock.ReplicationController{
		InspectFn: w.inspect,
		StopReplicaFn: func(_ context.Context, k dbpilot.InstanceKey) error {
			return w.change("StopReplica", k, func(i *dbpilot.Instance) {
				for c := range i.Channels {
					i.Channels[c].IORunning, i.Channels[c].SQLRunning = dbpilot.IOStopped, false
				}
			})
		},
		StartReplicaFn: func(_ context.Context, k dbpilot.InstanceKey) error {
			return w.change("StartReplica", k, func(i *dbpilot.Instance) {
				for c := range i.Channels {
					ch := &i.Channels[c]
					ch.IORunning, ch.SQLRunning, ch.LastIOErrno, ch.LastIOError = dbpilot.IORunning, true, 0, ""
					if w.dead[ch.Source] {
						ch.IORunning, ch.LastIOErrno = dbpilot.IOConnecting, 2003
					}
				}
			})
		},
		ResetReplicaAllFn: func(_ context.Context, k dbpilot.InstanceKey) error {
			return w.change("ResetReplicaAll", k, func(i *dbpilot.Instance) { i.Channels = nil })
		},
		ChangeSourceFn: func(_ context.Context, k, src dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error {
			return w.change("ChangeSource", k, func(i *dbpilot.Instance) {
				for c := range i.Channels {
					if i.Channels[c].Name == opt.Channel {
						i.Channels[c].Source = src
						return
					}
				}
				i.Channels = append(i.Channels, dbpilot.ReplicationChannel{Name: opt.Channel, Source: src, IORunning: dbpilot.IOStopped,
					UsingGTID: "Slave_Pos", GTIDIOPos: i.GTID.SlavePos, HeartbeatPeriod: time.Second})
			})
		},
		SetReadOnlyFn: func(_ context.Context, k dbpilot.InstanceKey, ro bool) error {
			return w.change("SetReadOnly", k, func(i *dbpilot.Instance) { i.ReadOnly = ro })
		},
		WaitForGTIDFn: func(_ context.Context, k dbpilot.InstanceKey, pos string, _ time.Duration) error {
			return w.change("WaitForGTID", k, nil)
		},
		KillClientConnectionsFn: func(_ context.Context, k dbpilot.InstanceKey) (int, error) {
			return 0, w.change("KillClientConnections", k, nil)
		},
		SetSemiSyncFn: func(_ context.Context, k dbpilot.InstanceKey, primary, replica bool) error {
			return w.change("SetSemiSync", k, nil)
		},
		SetReplicaPositionFn: func(_ context.Context, k dbpilot.InstanceKey, pos string) error {
			return w.change("SetReplicaPosition", k, func(i *dbpilot.Instance) { i.GTID.SlavePos = pos })
		},
	}
}

// store is a state store in memory.
func (w *world) store() *mock.StateStore {
	return &mock.StateStore{
		AuditFn: func(_ context.Context, e dbpilot.AuditEvent) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.audits = append(w.audits, e)
			return nil
		},
		SaveInstancesFn:  func(context.Context, string, []*dbpilot.Instance) error { return nil },
		KnownInstancesFn: func(context.Context, string, time.Time) ([]*dbpilot.Instance, error) { return nil, nil },
		ForgetInstanceFn: func(context.Context, string, dbpilot.InstanceKey) error { return nil },
		CreateRecoveryFn: func(_ context.Context, r *dbpilot.Recovery) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if r.ID == 0 { // an ID given by coordination is kept, as sqlite does
				r.ID = int64(len(w.recs) + 1)
			}
			c := *r
			w.recs = append(w.recs, &c)
			return nil
		},
		UpdateRecoveryFn: func(_ context.Context, r *dbpilot.Recovery) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			for i, old := range w.recs {
				if old.ID == r.ID {
					c := *r
					c.Acked, c.AckedBy = old.Acked, old.AckedBy
					w.recs[i] = &c
					return nil
				}
			}
			return dbpilot.Errorf(dbpilot.ENOTFOUND, "no recovery %d", r.ID)
		},
		RecoveriesFn: func(_ context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			var out []*dbpilot.Recovery
			for i := len(w.recs) - 1; i >= 0 && (f.Limit == 0 || len(out) < f.Limit); i-- {
				c := *w.recs[i]
				out = append(out, &c)
			}
			return out, nil
		},
		AckRecoveriesFn: func(_ context.Context, _ string, by, _ string) (int, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			n := 0
			for _, r := range w.recs {
				if !r.Acked {
					r.Acked, r.AckedBy = true, by
					n++
				}
			}
			return n, nil
		},
	}
}

// events returns the audit event kinds, in order.
func (w *world) events() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.audits {
		out = append(out, e.Event)
	}
	return out
}

func (w *world) recoveries() []*dbpilot.Recovery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.recs)
}

// daemon returns a daemon on the world's cluster "c" (seeds: the primary),
// not running: tests call tick themselves.
func (w *world) daemon(mutate func(*Config)) (*Daemon, *clusterState) {
	w.t.Helper()
	cfg := &Config{
		State:       filepath.Join(w.t.TempDir(), "state.db"),
		Credentials: CredentialsConfig{User: "admin"},
		Replication: ReplicationConfig{CredentialsConfig: CredentialsConfig{User: "repl"}},
		Clusters:    []ClusterConfig{{Name: "c", Seeds: []string{wkey(1).String()}, AutoFailover: true}},
		Recovery:    RecoveryConfig{RepointVerify: Duration(time.Second), ApplyTimeout: Duration(time.Second)},
	}
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	d := New(cfg, Options{Inspector: &mock.Inspector{InspectFn: w.inspect}, Controller: w.controller(), Store: w.store(), Now: w.clock})
	d.running.Store(true) // as under Run: service calls read the watch loop's state
	return d, d.clusters["c"]
}

func (cs *clusterState) state() (string, dbpilot.InstanceKey) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.status.State, cs.primary
}

func TestTickDeadPrimaryRecovers(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	w.at(3, "0-1-9", "0-1-9") // node 3 lags: node 2 is the candidate
	d, cs := w.daemon(nil)
	ctx := context.Background()

	d.tick(ctx, cs, true)
	if st, p := cs.state(); st != dbpilot.ClusterOK || p != wkey(1) {
		t.Fatalf("healthy cluster: state %s, primary %s", st, p)
	}
	if len(w.recoveries()) != 0 {
		t.Fatal("a recovery of a healthy cluster")
	}

	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 1 || !recs[0].Success || recs[0].Kind != dbpilot.RecoveryFailoverAuto || recs[0].NewPrimary != wkey(2) || recs[0].OldPrimary != wkey(1) {
		t.Fatalf("recoveries = %+v; audit %v", recs, w.events())
	}
	if st, p := cs.state(); st != dbpilot.ClusterOK || p != wkey(2) {
		t.Errorf("after failover: state %s, primary %s", st, p)
	}
	if w.inst[wkey(2)].ReadOnly || len(w.inst[wkey(2)].Channels) != 0 {
		t.Errorf("new primary: read_only=%v channels=%v", w.inst[wkey(2)].ReadOnly, w.inst[wkey(2)].Channels)
	}
	if ch := w.inst[wkey(3)].Channel(wkey(2)); ch == nil || ch.IORunning != dbpilot.IORunning {
		t.Errorf("node 3 does not replicate from node 2: %+v", w.inst[wkey(3)].Channels)
	}
	ev := w.events()
	for _, want := range []string{dbpilot.AuditDetect, dbpilot.AuditPlan, dbpilot.AuditPromote, dbpilot.AuditRepoint, dbpilot.AuditDone, dbpilot.AuditRecovered} {
		if !slices.Contains(ev, want) {
			t.Errorf("audit %v lacks %q", ev, want)
		}
	}
	if i := slices.Index(ev, dbpilot.AuditDetect); i < 0 || i > slices.Index(ev, dbpilot.AuditPromote) {
		t.Errorf("detect after promote: %v", ev)
	}
	// The fake clock reaches the record: detection started at the failed probe.
	if want := w.clock(); !recs[0].DetectedAt.Equal(want) || !recs[0].Started.Equal(want) {
		t.Errorf("detected %s, started %s, want the fake clock %s", recs[0].DetectedAt, recs[0].Started, want)
	}

	// The next tick sees the new topology and does nothing more.
	d.tick(ctx, cs, true)
	if n := len(w.recoveries()); n != 1 {
		t.Errorf("%d recoveries after a healthy tick", n)
	}
	if p := cs.status.Problems; len(p) != 0 && p[0].Code == dbpilot.ProblemDeadPrimary {
		t.Errorf("problems after recovery: %v", p)
	}
}

func TestTickUnreachablePrimaryNoRecovery(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(nil)
	ctx := context.Background()
	d.tick(ctx, cs, true)

	// dbpilot loses the primary, its replicas do not: no failover.
	w.cut[wkey(1)] = true
	d.tick(ctx, cs, true)
	if st, p := cs.state(); st != dbpilot.ClusterUnreachable || p != wkey(1) {
		t.Errorf("state %s, primary %s; want unreachable, primary unchanged", st, p)
	}
	if len(w.recoveries()) != 0 || len(w.calls) != 0 {
		t.Errorf("recoveries %v, controller calls %v: want none", w.recoveries(), w.calls)
	}
	problems := cs.status.Problems
	if !slices.ContainsFunc(problems, func(p dbpilot.Problem) bool { return p.Code == dbpilot.ProblemUnreachablePrimary }) {
		t.Errorf("problems %v lack UnreachablePrimary", problems)
	}

	// A manual failover is refused too: the primary still feeds its replicas.
	if _, err := d.Failover(ctx, "c", dbpilot.OperationOptions{}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "still see it alive") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("manual failover: %v", err)
	}

	// Only one replica reachable and it has lost the primary: dead.
	w.mu.Lock()
	w.dead[wkey(3)] = true
	w.mu.Unlock()
	w.kill(1)
	d.tick(ctx, cs, true)
	if recs := w.recoveries(); len(recs) != 1 || !recs[0].Success || recs[0].NewPrimary != wkey(2) {
		t.Errorf("recoveries = %+v", recs)
	}
}

// failedOver returns a daemon on a primary and three replicas whose
// primary died and was failed over automatically, and the new primary.
func failedOver(t *testing.T) (*world, *Daemon, *clusterState, dbpilot.InstanceKey) {
	t.Helper()
	w := newWorld(t, 10, 2, 3, 4)
	d, cs := w.daemon(nil)
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	d.tick(ctx, cs, true)
	if recs := w.recoveries(); len(recs) != 1 || !recs[0].Success {
		t.Fatalf("first failover: %+v", recs)
	}
	_, p := cs.state()
	return w, d, cs, p
}

func TestTickBlockedUntilAck(t *testing.T) {
	w, d, cs, newPrimary := failedOver(t)
	ctx := context.Background()

	// The new primary dies within the block period: no recovery.
	w.advance(DefaultBlockPeriod / 2)
	w.kill(newPrimary.Port)
	d.tick(ctx, cs, true)
	if n := len(w.recoveries()); n != 1 {
		t.Fatalf("%d recoveries while blocked", n)
	}
	if st, _ := cs.state(); st != dbpilot.ClusterDead {
		t.Errorf("state %s, want dead", st)
	}
	if until := cs.eng.BlockedUntil(ctx); !until.Equal(w.recoveries()[0].Ended.Add(DefaultBlockPeriod)) {
		t.Errorf("blocked until %s", until)
	}

	// Acknowledged: the next tick recovers.
	if n, err := d.Ack(ctx, "c", "dba", "seen"); err != nil || n != 1 {
		t.Fatalf("ack: %d, %v", n, err)
	}
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 2 || !recs[1].Success {
		t.Fatalf("after ack: %+v", recs)
	}
	if _, p := cs.state(); p == newPrimary || p == wkey(1) {
		t.Errorf("primary %s after the second failover", p)
	}
}

func TestTickBlockExpires(t *testing.T) {
	w, d, cs, p := failedOver(t)
	ctx := context.Background()
	w.advance(DefaultBlockPeriod + time.Second)
	w.kill(p.Port)
	d.tick(ctx, cs, true)
	if recs := w.recoveries(); len(recs) != 2 || !recs[1].Success {
		t.Errorf("after the block period: %+v", recs)
	}
}

func TestTickVetoingHook(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(func(c *Config) {
		c.Hooks.PreFailover = []string{"echo checking; exit 3"}
		c.Hooks.PostUnsuccessfulFailover = []string{"true"}
	})
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 1 || recs[0].Success || !strings.Contains(recs[0].Error, "vetoed by pre-failover hook") {
		t.Fatalf("recoveries = %+v", recs)
	}
	if len(w.calls) != 0 {
		t.Errorf("a vetoed failover changed servers: %v", w.calls)
	}
	if st, p := cs.state(); st != dbpilot.ClusterDead || p != wkey(1) {
		t.Errorf("state %s, primary %s", st, p)
	}
	var hooks []string
	for _, e := range w.audits {
		if e.Event == dbpilot.AuditHook && e.Detail["state"] != "starting" {
			hooks = append(hooks, e.Detail["exit_code"]+" "+e.Detail["output"])
		}
	}
	if !slices.Equal(hooks, []string{"3 checking", "0 "}) {
		t.Errorf("hook audit = %q", hooks)
	}
}

func TestFailoverCandidateDiesMidRecovery(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	// Node 2 is the best candidate: it received 0-1-10 but applied only
	// 0-1-9. It dies when asked to apply its relay log.
	w.at(2, "0-1-9", "0-1-10")
	w.at(3, "0-1-9", "0-1-9")
	w.before = func(op string, k dbpilot.InstanceKey) error {
		if k == wkey(2) && op == "WaitForGTID" {
			w.kill(2)
		}
		return nil
	}
	d, cs := w.daemon(nil)
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 1 || !recs[0].Success || recs[0].NewPrimary != wkey(3) {
		t.Fatalf("recoveries = %+v; audit %v", recs[0], w.events())
	}
	if !slices.Contains(w.events(), dbpilot.AuditCandidateFailed) {
		t.Errorf("audit %v lacks candidate-failed", w.events())
	}
	if _, p := cs.state(); p != wkey(3) {
		t.Errorf("primary %s, want node 3", p)
	}
}

func TestConcurrentOperationRefused(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(func(c *Config) { c.Recovery.KillGrace = Duration(time.Millisecond) })
	ctx := context.Background()
	d.tick(ctx, cs, true)

	// A switchover holds the cluster while its first change is in flight.
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.before = func(op string, k dbpilot.InstanceKey) error {
		once.Do(func() {
			close(inFlight)
			<-release
		})
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{To: wkey(2)})
		done <- err
	}()
	<-inFlight
	for name, op := range map[string]func() error{
		"failover":   func() error { _, err := d.Failover(ctx, "c", dbpilot.OperationOptions{}); return err },
		"switchover": func() error { _, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{}); return err },
		"relocate":   func() error { _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2)}); return err },
	} {
		if err := op(); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "another recovery or operation is running") {
			t.Errorf("%s during a switchover: %v", name, err)
		}
	}
	// The watch loop's automatic recovery waits too: a dead primary now is
	// not failed over while the operation holds the cluster.
	w.mu.Lock()
	w.dead[wkey(1)] = true
	w.mu.Unlock()
	d.tick(ctx, cs, true)
	if n := len(w.recoveries()); n != 1 {
		t.Errorf("%d recoveries; want only the switchover's", n)
	}
	w.mu.Lock()
	w.dead[wkey(1)] = false
	w.mu.Unlock()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("switchover: %v; audit %v", err, w.events())
	}
	if _, p := cs.state(); p != wkey(2) {
		t.Errorf("primary %s after the switchover", p)
	}
}

func TestAgeOut(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	now := time.Now()
	cs := &clusterState{
		cfg:      &ClusterConfig{seeds: []dbpilot.InstanceKey{k(1)}},
		known:    []dbpilot.InstanceKey{k(1), k(2), k(3), k(4), k(5)},
		eng:      recovery.NewEngine("c", recovery.Settings{}, nil, nil, nil),
		lastSeen: map[dbpilot.InstanceKey]time.Time{k(1): now.Add(-2 * time.Hour), k(2): now.Add(-2 * time.Hour), k(3): now.Add(-time.Minute), k(4): now.Add(-2 * time.Hour)},
	}
	cs.eng.MarkFenced(k(4))
	gone := cs.ageOut(now, time.Hour, &dbpilot.Instance{Key: k(9)})
	if len(gone) != 1 || gone[0] != k(2) {
		t.Errorf("aged out %v, want only 127.0.0.1:2 (seed 1, recent 3, fenced 4 and new 5 stay)", gone)
	}
	if len(cs.known) != 4 {
		t.Errorf("known = %v", cs.known)
	}
}

// within waits for ch or fails the test after a generous bound (a stuck
// engine, not a timing assertion).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// run starts a daemon with a liveness session on the world's cluster, its
// polls a minute apart (only the liveness session starts a tick soon); done
// is closed when Run returns after cancel.
func (w *world) run(probe *mock.Inspector, live *mock.Liveness) (*Daemon, <-chan struct{}, context.CancelFunc) {
	w.t.Helper()
	cfg := &Config{
		State:        filepath.Join(w.t.TempDir(), "state.db"),
		Credentials:  CredentialsConfig{User: "admin"},
		Replication:  ReplicationConfig{CredentialsConfig: CredentialsConfig{User: "repl"}},
		PollInterval: Duration(time.Minute),
		Clusters:     []ClusterConfig{{Name: "c", Seeds: []string{wkey(1).String()}}},
	}
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	d := New(cfg, Options{Inspector: probe, Controller: w.controller(), Liveness: live, Store: w.store(), Now: w.clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		d.Run(ctx)
		close(done)
	}()
	return d, done, cancel
}

func TestRunOwnsLiveness(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	w := newWorld(t, 10, 2, 3)
	held := make(chan dbpilot.InstanceKey, 10)
	lose := make(chan struct{})
	inspected := make(chan dbpilot.InstanceKey, 100)
	// On cancellation a session ends only when the test releases it: Run
	// must not return before.
	cancelled, release := make(chan struct{}, 10), make(chan struct{})
	live := &mock.Liveness{HoldFn: func(ctx context.Context, k dbpilot.InstanceKey, connected func()) error {
		connected()
		held <- k
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			<-release
			return nil
		case <-lose:
			return fmt.Errorf("liveness session on %s: connection reset", k)
		}
	}}
	probe := &mock.Inspector{InspectFn: func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
		select {
		case inspected <- k:
		default:
		}
		return w.inspect(ctx, k)
	}}
	_, done, cancel := w.run(probe, live)
	if k := within(t, held, "the liveness session on the primary"); k != wkey(1) {
		t.Fatalf("liveness holds %s, want the primary", k)
	}
	for len(inspected) > 0 {
		<-inspected
	}
	// The session is lost: the watch loop ticks at once, not a minute later.
	lose <- struct{}{}
	within(t, inspected, "a tick after the lost liveness session")
	within(t, held, "the liveness session again")
	cancel()
	within(t, cancelled, "the session to see the cancellation")
	select {
	case <-done:
		t.Fatal("Run returned while its liveness session still ran")
	default:
	}
	close(release)
	within(t, done, "Run to return")
	// goleak (deferred) proves Run waited for the watch loop, the liveness
	// goroutine and its helper.
}

func TestLivenessFollowsThePrimary(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	w := newWorld(t, 10, 2, 3)
	held := make(chan dbpilot.InstanceKey, 10)
	live := &mock.Liveness{HoldFn: func(ctx context.Context, k dbpilot.InstanceKey, connected func()) error {
		connected()
		held <- k
		<-ctx.Done()
		return nil
	}}
	d, done, cancel := w.run(&mock.Inspector{InspectFn: w.inspect}, live)
	defer cancel()
	ctx := context.Background()
	within(t, held, "the first liveness session")
	// A planned switchover makes node 2 the primary: the session moves.
	if _, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{To: wkey(2)}); err != nil {
		t.Fatal(err)
	}
	if k := within(t, held, "the session on the new primary"); k != wkey(2) {
		t.Errorf("liveness holds %s after the switchover, want 10.0.0.1:2", k)
	}
	cancel()
	within(t, done, "Run to return")
}

// A person's operation is audited with its outcome, refusals included, and
// every event of the request carries its source; a dry run is not recorded.
func TestOperationAudit(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(nil)
	ctx := dbpilot.WithSource(context.Background(), dbpilot.SourceWeb)
	d.tick(ctx, cs, true)

	if _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2), DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Relocate(ctx, wkey(1), dbpilot.OperationOptions{To: wkey(2)}); err == nil {
		t.Fatal("relocating the primary below its replica was not refused")
	}
	if _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2)}); err != nil {
		t.Fatalf("relocate: %v; audit %v", err, w.events())
	}
	w.mu.Lock()
	audits := append([]dbpilot.AuditEvent(nil), w.audits...)
	w.mu.Unlock()
	var ops []dbpilot.AuditEvent
	for _, e := range audits {
		if e.Detail["source"] != dbpilot.SourceWeb {
			t.Errorf("event %s %q has source %q, want web", e.Event, e.Message, e.Detail["source"])
		}
		if e.Event == dbpilot.AuditOperation {
			ops = append(ops, e)
		}
	}
	if len(ops) != 2 {
		t.Fatalf("operation events %+v; want the refusal and the relocation (not the dry run)", ops)
	}
	if ops[0].Detail["outcome"] != "refused" || ops[0].Cluster != "c" || !strings.Contains(ops[0].Message, "relocate 10.0.0.1:1 below 10.0.0.1:2") {
		t.Errorf("refusal audited as %+v", ops[0])
	}
	if ops[1].Detail["outcome"] != "done" || ops[1].RecoveryID == 0 {
		t.Errorf("relocation audited as %+v", ops[1])
	}
}

// TestClusterChanged: a watcher's channel is closed by every status change
// (an observation, a failover, an ack), and an unknown cluster is ENOTFOUND.
func TestClusterChanged(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	d, cs := w.daemon(nil)
	ctx := context.Background()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	watch := func() <-chan struct{} {
		t.Helper()
		ch, err := d.ClusterChanged(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}

	ch := watch()
	if closed(ch) {
		t.Fatal("closed before any change")
	}
	d.tick(ctx, cs, true)
	if !closed(ch) {
		t.Error("an observation did not close the channel")
	}

	ch = watch()
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if !closed(ch) {
		t.Error("a failover did not close the channel")
	}
	if st, p := cs.state(); st != dbpilot.ClusterOK || p == wkey(1) {
		t.Errorf("after the failover: %s, primary %s", st, p)
	}
	ch = watch()
	if closed(ch) {
		t.Error("a new channel is closed before the next change")
	}
	if _, err := d.Ack(ctx, "c", "dba", "seen"); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Error("an ack (the block lifted) did not close the channel")
	}

	if _, err := d.ClusterChanged(ctx, "nosuch"); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Errorf("unknown cluster: %v", err)
	}
}

// pruningStore is the world's store that can prune (dbpilot.Pruner).
type pruningStore struct {
	*mock.StateStore
	before []time.Time
}

func (p *pruningStore) Prune(_ context.Context, before time.Time) (dbpilot.Pruned, error) {
	p.before = append(p.before, before)
	return dbpilot.Pruned{Audit: 3}, nil
}

// TestPruneByRetention: the daemon prunes what is older than the
// configured retention, by its own clock.
func TestPruneByRetention(t *testing.T) {
	w := newWorld(t, 10, 2)
	d, _ := w.daemon(func(c *Config) { c.Retention = Duration(48 * time.Hour) })
	ps := &pruningStore{StateStore: w.store()}
	d.store = ps
	d.prune(context.Background())
	if len(ps.before) != 1 || !ps.before[0].Equal(w.clock().Add(-48*time.Hour)) {
		t.Errorf("pruned before %v, want %s", ps.before, w.clock().Add(-48*time.Hour))
	}
	// Without a retention set, the default keeps 90 days.
	d2, _ := w.daemon(nil)
	if got := d2.cfg.Retention.D(); got != DefaultRetention {
		t.Errorf("default retention %s", got)
	}
}

// TestSwitchoverBounds: switchover.max_lag refuses a lagging candidate
// (and relocate a lagging target) before anything changes, audited as a
// refused operation; --max-lag raises it for one operation; negative
// bounds and a drain not longer than kill_grace are refused.
// TestFailoverApplyTimeoutOnFakeClock: the executor's apply timeout runs on
// the daemon's clock. A candidate that never applies its relay log fails
// when the fake clock passes recovery.apply_timeout (30 s here, without
// waiting for it), and the failover goes on with the next candidate.
func TestFailoverApplyTimeoutOnFakeClock(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	w.at(2, "0-1-9", "0-1-10") // node 2 is the candidate: it has 0-1-10 to apply
	w.at(3, "0-1-9", "0-1-9")
	d, cs := w.daemon(func(c *Config) { c.Recovery.ApplyTimeout = Duration(30 * time.Second) })
	d.sleep = w.sleep // the executor's polls advance the fake clock too
	ctl := d.ctl.(*mock.ReplicationController)
	var waited time.Duration
	ctl.WaitForGTIDFn = func(_ context.Context, k dbpilot.InstanceKey, pos string, timeout time.Duration) error {
		if k == wkey(2) {
			// The server waits its timeout and does not get there.
			waited += timeout
			w.advance(timeout)
			return dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: %s did not reach %s within %s", k, pos, timeout)
		}
		return w.change("WaitForGTID", k, nil)
	}
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	start := w.clock()
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 1 || !recs[0].Success || recs[0].NewPrimary != wkey(3) {
		t.Fatalf("recoveries = %+v; audit %v", recs, w.events())
	}
	if waited < 30*time.Second || waited > 32*time.Second {
		t.Errorf("node 2 was waited for %s on the fake clock, want the apply timeout (30s)", waited)
	}
	if took := w.clock().Sub(start); took < 30*time.Second {
		t.Errorf("the fake clock moved %s during the failover, want at least the apply timeout", took)
	}
	var failed string
	w.mu.Lock()
	for _, e := range w.audits {
		if e.Event == dbpilot.AuditCandidateFailed {
			failed = e.Message
		}
	}
	w.mu.Unlock()
	if !strings.Contains(failed, "did not reach 0-1-10 within 30s") {
		t.Errorf("candidate-failed audit %q does not name the apply timeout", failed)
	}
}

func TestSwitchoverBounds(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	w.at(2, "0-1-4", "0-1-10")
	lag := int64(30)
	w.inst[wkey(2)].Channels[0].SecondsBehind = &lag
	d, cs := w.daemon(func(c *Config) { c.Switchover.MaxLag = Duration(20 * time.Second) })
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.mu.Lock()
	w.calls = nil
	w.mu.Unlock()

	want := "cannot switch over 10.0.0.1:1 to 10.0.0.1:2: 30s behind its source (Seconds_Behind_Master) with 6 transactions to apply: over switchover.max_lag (20s)"
	if _, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{To: wkey(2)}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), want) {
		t.Fatalf("switchover to a lagging candidate: %v", err)
	}
	var refused *dbpilot.AuditEvent
	w.mu.Lock()
	for i, e := range w.audits {
		if e.Event == dbpilot.AuditOperation {
			refused = &w.audits[i]
		}
	}
	calls := slices.Clone(w.calls)
	w.mu.Unlock()
	if refused == nil || refused.Detail["outcome"] != "refused" || !strings.Contains(refused.Message, want) {
		t.Errorf("refusal audited as %+v", refused)
	}
	if len(calls) != 0 || len(w.recoveries()) != 0 {
		t.Errorf("the refused switchover changed %v, recorded %v", calls, w.recoveries())
	}
	// Without --to the one that keeps up is chosen.
	rec, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{DryRun: true})
	if err != nil || rec.NewPrimary != wkey(3) {
		t.Errorf("best candidate: %v, %+v", err, rec)
	}
	// A larger bound for this one operation.
	if _, err := d.Switchover(ctx, "c", dbpilot.OperationOptions{To: wkey(2), DryRun: true, MaxLag: time.Minute}); err != nil {
		t.Errorf("switchover with --max-lag 1m: %v", err)
	}
	// Relocation below the lagging replica.
	if _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2), DryRun: true}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT ||
		!strings.Contains(err.Error(), "relocate: target 10.0.0.1:2 is not ready: 30s behind") {
		t.Errorf("dry-run relocation below a lagging target: %v", err)
	}
	if _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2)}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT ||
		!strings.Contains(err.Error(), "relocate: target 10.0.0.1:2 is not ready, nothing changed: 30s behind") {
		t.Errorf("relocation below a lagging target: %v", err)
	}
	w.mu.Lock()
	calls = slices.Clone(w.calls)
	w.mu.Unlock()
	if len(calls) != 0 {
		t.Errorf("the refused relocation changed %v", calls)
	}
	if _, err := d.Relocate(ctx, wkey(3), dbpilot.OperationOptions{To: wkey(2), DryRun: true, MaxLag: time.Minute}); err != nil {
		t.Errorf("relocation with --max-lag 1m: %v", err)
	}
	for _, opt := range []dbpilot.OperationOptions{{MaxLag: -time.Second}, {DrainTimeout: -time.Second}, {DrainTimeout: 50 * time.Millisecond}} {
		if _, err := d.Switchover(ctx, "c", opt); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("switchover with %+v: %v", opt, err)
		}
	}
}
