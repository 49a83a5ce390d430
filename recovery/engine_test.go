package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// enWorld is an Engine's surroundings in memory: the servers (exFakeCtl),
// a fake clock, the cluster's view, the audit and the hooks run. It
// implements Env, View and Hooks.
type enWorld struct {
	t    *testing.T
	ctl  *exFakeCtl
	exec *Executor

	mu        sync.Mutex
	now       time.Time
	primary   dbpilot.InstanceKey
	members   []*dbpilot.Instance
	detached  []*dbpilot.Instance
	known     []dbpilot.InstanceKey
	overlap   []dbpilot.Problem
	state     string
	statusP   dbpilot.InstanceKey
	audit     []dbpilot.AuditEvent
	hooksRun  []string
	observed  int
	notified  int
	probe     func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error)
	running   bool
	hasHooks  map[string]bool
	fencedBck []*dbpilot.Instance
	holds     int
}

func (w *enWorld) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}
func (w *enWorld) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}
func (w *enWorld) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (w *enWorld) Audit(_ context.Context, e dbpilot.AuditEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.audit = append(w.audit, e)
}
func (w *enWorld) Executor(*dbpilot.Fence) *Executor { c := *w.exec; return &c }
func (w *enWorld) Probe(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	if w.probe != nil {
		return w.probe(ctx, k)
	}
	return w.ctl.Inspect(ctx, k)
}
func (w *enWorld) ProbeReplica(ctx context.Context, last *dbpilot.Instance) (*dbpilot.Instance, error) {
	return w.Probe(ctx, last.Key)
}
func (w *enWorld) Reader() dbpilot.Inspector             { return w.ctl }
func (w *enWorld) Coordinator() dbpilot.Coordinator      { return nil }
func (w *enWorld) Store() dbpilot.StateStore             { return nil }
func (w *enWorld) Running() bool                         { return w.running }
func (w *enWorld) Go(func(context.Context)) bool         { return false }
func (w *enWorld) NoteSilence(fresh []*dbpilot.Instance) {}
func (w *enWorld) Fault(string)                          {}
func (w *enWorld) HoldMonitoring(time.Duration) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holds++
	return func() {}
}

func (w *enWorld) Primary() dbpilot.InstanceKey {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.primary
}
func (w *enWorld) Members() []*dbpilot.Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.members)
}
func (w *enWorld) Detached() []*dbpilot.Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.detached)
}
func (w *enWorld) Known() []dbpilot.InstanceKey {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.known)
}
func (w *enWorld) Overlap() []dbpilot.Problem {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overlap
}
func (w *enWorld) State() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}
func (w *enWorld) SetState(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = s
}
func (w *enWorld) SetPrimary(k dbpilot.InstanceKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.primary = k
}
func (w *enWorld) AddKnown(k dbpilot.InstanceKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.known, k) {
		w.known = append(w.known, k)
	}
}
func (w *enWorld) Recovered(k dbpilot.InstanceKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.primary, w.statusP, w.state = k, k, dbpilot.ClusterOK
}
func (w *enWorld) Notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notified++
}
func (w *enWorld) Observe(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed++
	return nil
}
func (w *enWorld) FencedBack(back []*dbpilot.Instance) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fencedBck = append(w.fencedBck, back...)
}

func (w *enWorld) Has(phase string) bool { return w.hasHooks[phase] }
func (w *enWorld) Run(_ context.Context, _ *dbpilot.Recovery, phase string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hasHooks[phase] {
		w.hooksRun = append(w.hooksRun, phase)
	}
	return nil
}
func (w *enWorld) Started(context.Context, int64, string) bool { return false }

// enAuditor records the executor's events in the world's audit.
type enAuditor struct{ w *enWorld }

func (a enAuditor) Audit(ctx context.Context, e dbpilot.AuditEvent) error {
	a.w.Audit(ctx, e)
	return nil
}

func (w *enWorld) events() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.audit {
		out = append(out, e.Event)
	}
	return out
}

// enDeadPrimary is a world whose primary exOld is gone (refused) and whose
// replicas exCand and exR1 lost it (IO thread connecting, 2003): exCand
// applied more, so it is the candidate.
func enDeadPrimary(t *testing.T) (*enWorld, *Engine) {
	lost := func(i *dbpilot.Instance) *dbpilot.Instance {
		i.LogBin, i.LogReplicaUpdates, i.Channels[0].UsingGTID = true, true, "Slave_Pos"
		i.Channels[0].IORunning, i.Channels[0].LastIOErrno, i.Channels[0].LastIOError = dbpilot.IOConnecting, 2003, "Can't connect to server"
		return i
	}
	cand := lost(exMaria(2, "0-1-10", "0-1-10", exOld))
	r1 := lost(exMaria(3, "0-1-9", "0-1-9", exOld))
	old := &dbpilot.Instance{Key: exOld, Flavor: dbpilot.FlavorMariaDB, LastError: "connection refused"}
	f := exNewFake(cand, r1)
	w := &enWorld{t: t, ctl: f, now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), running: true,
		primary: exOld, state: dbpilot.ClusterOK, known: []dbpilot.InstanceKey{exOld, exCand, exR1}, hasHooks: map[string]bool{"post-failover": true}}
	old.ObservedAt = w.now
	w.members = []*dbpilot.Instance{old, cand, r1}
	w.exec = &Executor{Ctl: f, Audit: enAuditor{w}, Opt: exOptions(), Clock: Clock{Now: w.Now, Sleep: func(ctx context.Context, d time.Duration) error { w.advance(d); return ctx.Err() }}}
	e := NewEngine("c", Settings{AutoFailover: true, ConfirmTimeout: time.Second, BlockPeriod: time.Hour, ForgetAfter: time.Hour}, w, w, w)
	return w, e
}

// TestEngineRecoversADeadPrimary follows a failure from the observation to
// the promotion: the engine assesses the primary dead (its replicas lost
// it), decides to recover, fails over through the executor, and keeps the
// old primary to fence; a primary that answers again ends the failure.
func TestEngineRecoversADeadPrimary(t *testing.T) {
	w, e := enDeadPrimary(t)
	ctx := context.Background()
	detected := w.Now()
	primary := w.Members()[0]

	v := e.Assess(ctx, primary, w.Members())
	if v.State != dbpilot.ClusterDead || w.State() != dbpilot.ClusterDead || !e.Failing() {
		t.Fatalf("verdict %+v, state %s, failing %v", v, w.State(), e.Failing())
	}
	w.advance(time.Second) // detection took a second on the fake clock
	if d := e.Decide(ctx, primary, v, nil, true); d.Action != Recover {
		t.Fatalf("decision %+v, want recover", d)
	}
	if d := e.RecoverDead(ctx, primary, v, nil, true); d.Action != Recover {
		t.Fatalf("decision %+v, want recover", d)
	}
	if w.Primary() != exCand || w.statusP != exCand || w.State() != dbpilot.ClusterOK {
		t.Errorf("after the failover: primary %s (status %s), state %s", w.Primary(), w.statusP, w.State())
	}
	if got := w.ctl.callsOf(exCand); !slices.Contains(got, "ResetReplicaAll") || !slices.Contains(got, "SetReadOnly false") {
		t.Errorf("candidate calls %v: not promoted", got)
	}
	if !e.IsFenced(exOld) || e.Failing() {
		t.Errorf("fenced %v, failing %v: want the old primary fenced, the failure over", e.IsFenced(exOld), e.Failing())
	}
	ev := w.events()
	for _, want := range []string{dbpilot.AuditDetect, dbpilot.AuditPlan, dbpilot.AuditPromote, dbpilot.AuditRecovered} {
		if !slices.Contains(ev, want) {
			t.Errorf("audit %v lacks %s", ev, want)
		}
	}
	for _, a := range w.audit {
		if a.Event == dbpilot.AuditDetect && a.Detail["detection_ms"] != "1000" {
			t.Errorf("detection_ms %q, want 1000 (the fake clock since %s)", a.Detail["detection_ms"], detected)
		}
		// The replicas' votes that confirmed it dead, as the verdict said.
		if a.Event == dbpilot.AuditDetect && (a.Detail["evidence"] != v.Reason || v.Reason == "" ||
			a.Detail["replicas_asked"] != "2" || a.Detail["replicas_answered"] != "2" || a.Detail["replicas_lost_primary"] != "2") {
			t.Errorf("detect detail %v; want the verdict %+v (2 replicas asked, answered and lost the primary)", a.Detail, v)
		}
	}
	if !slices.Equal(w.hooksRun, []string{"post-failover"}) || w.observed != 1 {
		t.Errorf("hooks run %v, observations %d; want post-failover once, one observation", w.hooksRun, w.observed)
	}
	// The new primary answers: no failure, nothing to recover.
	np := &dbpilot.Instance{Key: exCand, Reachable: true}
	if v := e.Assess(ctx, np, w.Members()); v.State != dbpilot.ClusterOK || e.Failing() {
		t.Errorf("verdict %+v, failing %v", v, e.Failing())
	}
	if d := e.Decide(ctx, np, topology.Verdict{State: dbpilot.ClusterOK}, nil, true); d.Action != Wait {
		t.Errorf("decision %+v for a live primary, want wait", d)
	}
}

// TestEngineDecides: a dead primary is held (overlap, several writers, an
// operation running) or waited on (automatic recovery off, not the
// leader), each hold said once.
func TestEngineDecides(t *testing.T) {
	ctx := context.Background()
	w, e := enDeadPrimary(t)
	primary := w.Members()[0]
	v := e.Assess(ctx, primary, w.Members())
	if v.State != dbpilot.ClusterDead {
		t.Fatalf("verdict %+v", v)
	}
	if d := e.Decide(ctx, primary, v, nil, false); d.Action != Wait {
		t.Errorf("not the leader: %+v, want wait", d)
	}
	w.overlap = []dbpilot.Problem{{Code: dbpilot.ProblemClusterOverlap, Message: "10.0.0.1:3 is in cluster d too"}}
	if d := e.Decide(ctx, primary, v, nil, true); d.Action != Held || d.Hold.Event != "auto-failover-suspended" {
		t.Errorf("overlap: %+v, want held", d)
	}
	w.overlap = nil
	if !e.TryLock() {
		t.Fatal("operation lock taken")
	}
	if d := e.RecoverDead(ctx, primary, v, nil, true); d.Action != Held || len(w.ctl.calls) != 0 {
		t.Errorf("operation running: %+v, calls %v; want held, nothing changed", d, w.ctl.calls)
	}
	e.Unlock()

	_, off := enDeadPrimary(t)
	off.set.AutoFailover = false
	if d := off.Decide(ctx, primary, v, nil, true); d.Action != Wait {
		t.Errorf("auto_failover off: %+v, want wait", d)
	}
}

// TestEngineFencesAReturningOldPrimary: an old primary of a failover that
// answers again writable is made read_only (every serve does it); without
// rejoin the leader notes once that it stays out.
func TestEngineFencesAReturningOldPrimary(t *testing.T) {
	ctx := context.Background()
	back := exMaria(1, "0-1-10", "")
	back.GTID.BinlogState = "0-1-10"
	np := exMaria(2, "0-1-10", "0-1-10")
	np.GTID.BinlogState = "0-1-10"
	f := exNewFake(back, np)
	w := &enWorld{t: t, ctl: f, now: time.Now(), primary: exCand, state: dbpilot.ClusterOK,
		members: []*dbpilot.Instance{np}, detached: []*dbpilot.Instance{back}}
	w.exec = &Executor{Ctl: f, Opt: exOptions()}
	e := NewEngine("c", Settings{}, w, w, w)
	e.MarkFenced(exOld)

	e.FenceReturning(ctx)
	if got := f.callsOf(exOld); !slices.Contains(got, "SetReadOnly true") {
		t.Errorf("old primary calls %v: not made read_only", got)
	}
	if len(w.fencedBck) != 1 || w.fencedBck[0].Key != exOld {
		t.Errorf("fenced back %v", w.fencedBck)
	}
	// An observation older than that fence (still saying writable) does
	// not fence again — it would end the sessions of people already on a
	// read_only server; one taken after it does.
	readOnlies := func() int {
		return len(slices.DeleteFunc(f.callsOf(exOld), func(c string) bool { return c != "SetReadOnly true" }))
	}
	back.ReadOnly, back.ObservedAt = false, w.now.Add(-time.Second)
	e.FenceReturning(ctx)
	if n := readOnlies(); n != 1 {
		t.Errorf("a stale observation fenced again: %d read_only calls, want 1", n)
	}
	back.ReadOnly, back.ObservedAt = false, w.now.Add(time.Second)
	e.FenceReturning(ctx)
	if n := readOnlies(); n != 2 {
		t.Errorf("a fresh observation of a writable old primary: %d read_only calls, want 2", n)
	}
	for range 2 {
		e.Returned(ctx, nil)
	}
	n := 0
	for _, a := range w.audit {
		if a.Event == dbpilot.AuditFence && a.Instance == exOld && strings.Contains(a.Message, "rejoin is off") {
			n++
		}
	}
	if n != 1 || !e.IsFenced(exOld) {
		t.Errorf("audit %v: want the rejoin-off note once; fenced %v", w.audit, e.IsFenced(exOld))
	}
}

// TestReprobeHungPrimary: the re-probe of a failing primary whose probes
// never answer (a hung server: each lasts the whole timeout). The first
// round waits for its attempt; once one attempt got no answer, a round
// returns "no answer" after ConfirmEvery while the attempt in flight goes
// on, and no second attempt is started beside it. An answer, an error
// packet included, is proof of life and resets that.
func TestReprobeHungPrimary(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	var attempts, inflight, most atomic.Int32
	w := &enWorld{t: t}
	w.probe = func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
		attempts.Add(1)
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if hung.Load() {
			<-ctx.Done()
			return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, ctx.Err(), "mysql: connect on %s: timed out", k)
		}
		return nil, &dbpilot.Error{Code: dbpilot.EAUTH, Errno: 4151, Message: "Access denied, this account is locked"}
	}
	// An attempt lasts attempt; a round that does not wait for it returns
	// after ConfirmEvery (250 ms), with the attempt still in flight. The
	// checks look at that, not at the clock: a round that waited has no
	// attempt in flight when it returns.
	const attempt = 1500 * time.Millisecond
	e := NewEngine("c", Settings{ConfirmTimeout: attempt}, w, w, w)
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	ctx := context.Background()

	r := e.reprobePrimary(ctx, key)
	if r.Answers() || inflight.Load() != 0 || attempts.Load() != 1 {
		t.Fatalf("first round: %+v with %d attempts, %d in flight; want no answer after the whole attempt", r, attempts.Load(), inflight.Load())
	}
	for i := 0; i < 3; i++ {
		r = e.reprobePrimary(ctx, key)
		if r.Answers() || inflight.Load() != 1 {
			t.Fatalf("round %d: %+v with %d in flight; want no answer while the attempt goes on", i+2, r, inflight.Load())
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d attempts in flight at once, want 1", m)
	}
	// The server answers with an error packet: alive.
	hung.Store(false)
	deadline := time.Now().Add(2 * attempt)
	for inflight.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the attempt in flight did not end: %d in flight", inflight.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	r = e.reprobePrimary(ctx, key)
	if !r.Answers() || r.RefusedErrno != 4151 {
		t.Fatalf("after the server answered: %+v, want an answer (4151)", r)
	}
	// After an answer the next failure gets a whole attempt again.
	hung.Store(true)
	if r = e.reprobePrimary(ctx, key); r.Answers() || inflight.Load() != 0 {
		t.Fatalf("after an answer: %+v with %d in flight; want a whole attempt", r, inflight.Load())
	}
	t.Log(fmt.Sprint(attempts.Load(), " attempts"))
}

// TestEngineSessionLost: a lost liveness session is confirmed from the last
// observation (the primary re-probed, the replicas read through Probe)
// without waiting for an observation of the cluster, and a dead primary is
// recovered at once; a primary that answers the re-probe is left alone,
// and a primary already failing is left to the watch loop.
func TestEngineSessionLost(t *testing.T) {
	ctx := context.Background()
	t.Run("dead", func(t *testing.T) {
		w, e := enDeadPrimary(t)
		w.members[0].Reachable = true // the last observation saw it answer
		var probed []dbpilot.InstanceKey
		w.probe = func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
			w.mu.Lock()
			probed = append(probed, k)
			w.mu.Unlock()
			return w.ctl.Inspect(ctx, k)
		}
		d := e.SessionLost(ctx, exOld, errors.New("invalid connection"))
		if d.Action != Recover {
			t.Fatalf("decision %+v, want recover", d)
		}
		if w.Primary() != exCand || w.State() != dbpilot.ClusterOK {
			t.Errorf("after the failover: primary %s, state %s", w.Primary(), w.State())
		}
		if !slices.Contains(probed, exOld) || !slices.Contains(probed, exCand) || !slices.Contains(probed, exR1) {
			t.Errorf("probed %v: want the primary re-probed and both replicas read", probed)
		}
		if w.observed != 1 {
			t.Errorf("%d observations: want none before the decision, one after the failover", w.observed)
		}
		if e.Deciding() {
			t.Error("still deciding after SessionLost returned")
		}
		if w.holds != 1 {
			t.Errorf("monitoring held %d times during the confirmation, want 1", w.holds)
		}
	})
	t.Run("answers", func(t *testing.T) {
		w, e := enDeadPrimary(t)
		w.members[0].Reachable = true
		w.probe = func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
			if k == exOld {
				return &dbpilot.Instance{Key: exOld, Reachable: true, Flavor: dbpilot.FlavorMariaDB}, nil
			}
			return w.ctl.Inspect(ctx, k)
		}
		if d := e.SessionLost(ctx, exOld, errors.New("invalid connection")); d.Action != Wait {
			t.Fatalf("decision %+v for a primary that answers, want wait", d)
		}
		if w.Primary() != exOld || len(w.ctl.callsOf(exCand)) != 0 {
			t.Errorf("primary %s, candidate calls %v: nothing must change", w.Primary(), w.ctl.callsOf(exCand))
		}
	})
	t.Run("already failing", func(t *testing.T) {
		w, e := enDeadPrimary(t)
		called := false
		w.probe = func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
			called = true
			return w.ctl.Inspect(ctx, k)
		}
		// members[0] is unreachable in the last observation: the watch
		// loop's confirmation rounds own it.
		if d := e.SessionLost(ctx, exOld, errors.New("invalid connection")); d.Action != Wait || called {
			t.Errorf("decision %+v, probed %v: want nothing done", d, called)
		}
	})
}
