package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// Engine is the failover engine of one cluster. It owns the cluster's
// detection state (when its primary first failed, the confirmation rounds'
// re-probe, the last verdict noted), the old primaries to fence, and the
// bookkeeping of recoveries resumed after a serve stopped. The daemon feeds
// it each observation (Assess, RecoverDead, FenceReturning, Returned,
// Resume) and it answers recover now, wait or hold (Decide); a failover
// goes from there to the promotion statements through the Executor the
// daemon gives it (Env.Executor).
//
// The Engine depends on root interfaces only: the daemon's services come
// through Env, the cluster as the daemon observes it through View, and the
// cluster's hooks through Hooks.
type Engine struct {
	cluster string
	set     Settings
	env     Env
	view    View
	hooks   Hooks

	// op serializes topology changes (automatic and requested) of the cluster.
	op sync.Mutex

	mu           sync.Mutex
	failingSince time.Time // first failed probe of the primary in this failure
	// deadVerdict is the verdict that confirmed the primary dead in this
	// failure (the replicas' votes), for the detect event of its recovery.
	deadVerdict  topology.Verdict
	lastVerdict  string // the last event and message noted (Note)
	reprobe      PrimaryProbe
	fenced       map[dbpilot.InstanceKey]bool        // old primaries to fence when they return
	fenceNoted   map[dbpilot.InstanceKey]string      // the last fencing finding audited per old primary
	fencing      map[dbpilot.InstanceKey]*sync.Mutex // one fence of an old primary at a time
	fenceDone    map[dbpilot.InstanceKey]time.Time   // when the last fence of an old primary ended
	resumedToken int64                               // the leadership (fence token) whose takeover check ran
	resumedLocal bool                                // ResumeLocal ran (the first automatic tick of a serve alone)
	// fast is set while SessionLost confirms: the watch loop's tick then
	// leaves the decision to it.
	fast atomic.Bool
}

// Settings are a cluster's recovery settings (from its configuration).
type Settings struct {
	// AutoFailover: a dead primary is failed over without a person asking.
	AutoFailover bool
	// Rejoin: an old primary that returns without errant transactions
	// becomes a replica of the new primary.
	Rejoin bool
	// SemiSync: the executor's Options.SemiSync.
	SemiSync bool
	// Rules are the cluster's promotion rules.
	Rules Rules
	// ConfirmTimeout bounds a confirmation round (detection.confirm_timeout).
	ConfirmTimeout time.Duration
	// BlockPeriod is the anti-flapping block after a failover
	// (recovery.block_period).
	BlockPeriod time.Duration
	// ForgetAfter bounds how long an old primary's return is watched
	// (forget_after).
	ForgetAfter time.Duration
}

// Env is what an Engine acts through: the daemon's services.
type Env interface {
	// Now is the clock.
	Now() time.Time
	// Logger logs (never a password).
	Logger() *slog.Logger
	// Audit records an event (log and state store).
	Audit(ctx context.Context, e dbpilot.AuditEvent)
	// Executor returns the executor that changes the cluster under fence
	// (nil: a serve alone, or a change always allowed such as fencing).
	Executor(fence *dbpilot.Fence) *Executor
	// Probe reads an instance to confirm a failure (short timeouts, its
	// own connections, never queued behind monitoring): the confirmation
	// rounds' re-probe and replica reads.
	Probe(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error)
	// ProbeReplica re-reads what a confirmation needs of a replica last
	// observed as last: whether it answers and its channels (the rest of
	// last kept), in as few statements as the adapter can.
	ProbeReplica(ctx context.Context, last *dbpilot.Instance) (*dbpilot.Instance, error)
	// Reader reads servers afresh before a change (the controller).
	Reader() dbpilot.Inspector
	// Coordinator is the coordination of several serves (nil: alone).
	Coordinator() dbpilot.Coordinator
	// Store is the state store (nil: none).
	Store() dbpilot.StateStore
	// Running reports whether the watch loops run (serve); acting
	// directly, nothing is left running in the background.
	Running() bool
	// Go runs fn in a goroutine the daemon owns and waits for on its way
	// out, bg the serve's context, and reports true; while the watch loops
	// do not run (a command acting directly) it runs nothing and reports
	// false.
	Go(fn func(bg context.Context)) bool
	// NoteSilence notes, on replicas just read, for how long each channel
	// has received nothing (Confirm's annotate).
	NoteSilence(fresh []*dbpilot.Instance)
	// Fault is the fault-injection point named step (tests and
	// bench/faults.sh).
	Fault(step string)
	// HoldMonitoring keeps new monitoring work (collector runs) from
	// starting while a failure is confirmed, for at most max, until
	// release: the confirmation never waits for the cores behind
	// collection.
	HoldMonitoring(max time.Duration) (release func())
}

// View is the cluster as the daemon observes it, and the changes the
// engine makes to that view.
type View interface {
	// Primary is the cluster's current primary, as last decided.
	Primary() dbpilot.InstanceKey
	// Members are the cluster's instances at the last observation.
	Members() []*dbpilot.Instance
	// Detached are the instances seen outside the cluster (a fenced old
	// primary, a lone seed).
	Detached() []*dbpilot.Instance
	// Known are every instance seen, crawled each observation.
	Known() []dbpilot.InstanceKey
	// Overlap are the ClusterOverlap problems of the last observation.
	Overlap() []dbpilot.Problem
	// State is the cluster's state (dbpilot.Cluster*).
	State() string
	// SetState sets the cluster's state and tells its watchers.
	SetState(state string)
	// SetPrimary makes k the cluster's primary (its status unchanged).
	SetPrimary(k dbpilot.InstanceKey)
	// AddKnown adds k to the known instances.
	AddKnown(k dbpilot.InstanceKey)
	// Recovered makes k the cluster's primary after a recovery: known, in
	// the status, and the state ok. Watchers are told at the next
	// observation (or Notify).
	Recovered(k dbpilot.InstanceKey)
	// Notify tells the status's watchers that something changed.
	Notify()
	// Observe observes the cluster now.
	Observe(ctx context.Context) error
	// FencedBack drops the problems of old primaries just made read_only.
	FencedBack(back []*dbpilot.Instance)
}

// Hooks runs a cluster's hooks. Phases: "pre-failover", "post-failover",
// "post-unsuccessful-failover".
type Hooks interface {
	// Has reports whether the cluster has hooks of phase.
	Has(phase string) bool
	// Run runs the hooks of phase for rec; for pre-failover, a failure
	// vetoes (the error).
	Run(ctx context.Context, rec *dbpilot.Recovery, phase string) error
	// Started reports whether the hooks of phase were started for
	// recovery id (by this serve or one that stopped).
	Started(ctx context.Context, id int64, phase string) bool
}

// ConfirmEvery is how often a cluster whose primary does not answer is
// confirmed until the failure is confirmed or over; a re-probe that got no
// answer before waits that long for the attempt in flight.
const ConfirmEvery = 250 * time.Millisecond

// NewEngine returns the engine of cluster.
func NewEngine(cluster string, set Settings, env Env, view View, hooks Hooks) *Engine {
	return &Engine{cluster: cluster, set: set, env: env, view: view, hooks: hooks,
		fenced: map[dbpilot.InstanceKey]bool{}, fenceNoted: map[dbpilot.InstanceKey]string{}}
}

// TryLock takes the cluster's operation lock: one topology change at a
// time, automatic or requested. It reports false while another runs.
func (e *Engine) TryLock() bool { return e.op.TryLock() }

// Unlock releases the operation lock.
func (e *Engine) Unlock() { e.op.Unlock() }

func (e *Engine) log() *slog.Logger {
	if l := e.env.Logger(); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// Failing reports whether the primary failed a probe and has not answered
// since.
func (e *Engine) Failing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.failingSince.IsZero()
}

// Confirming reports whether the primary fails to answer and is not yet
// confirmed dead: the watch loop then confirms every ConfirmEvery rather
// than at the next poll.
func (e *Engine) Confirming() bool {
	return e.Failing() && e.view.State() == dbpilot.ClusterUnreachable
}

// Note logs a message once per distinct text for the cluster's current
// failure.
func (e *Engine) Note(event, msg string) {
	e.mu.Lock()
	same := e.lastVerdict == event+msg
	e.lastVerdict = event + msg
	e.mu.Unlock()
	if same {
		return
	}
	if event == dbpilot.ClusterOK {
		// The primary answers after all (a liveness session that dropped):
		// nothing to act on.
		e.log().Info(msg, "cluster", e.cluster, "event", event)
		return
	}
	e.log().Warn(msg, "cluster", e.cluster, "event", event)
}

// ClearNote forgets the last message noted: the next is logged even when
// the same (a block lifted by an ack).
func (e *Engine) ClearNote() {
	e.mu.Lock()
	e.lastVerdict = ""
	e.mu.Unlock()
}

// Lead returns the fence under which the automatic recovery may change the
// cluster, or false with the reason noted once (not the leader,
// coordination unavailable). A serve alone always may (fence nil, true).
func (e *Engine) Lead() (*dbpilot.Fence, bool) {
	co := e.env.Coordinator()
	if co == nil {
		return nil, true
	}
	f, err := co.Lead(e.cluster)
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL {
			e.Note("coordination", fmt.Sprintf("no automatic recovery: %v (monitoring continues; the primary is left as it is)", err))
		}
		return nil, false
	}
	return &f, true
}

// Assess confirms a failed probe at once: the primary re-probed and every
// replica of it asked in parallel (Confirm), then decided with
// topology.AssessPrimary. A primary that answers ends the failure. The
// verdict becomes the cluster's state.
func (e *Engine) Assess(ctx context.Context, primary *dbpilot.Instance, members []*dbpilot.Instance) topology.Verdict {
	if primary.Reachable {
		e.reprobe.Answered()
		e.mu.Lock()
		wasFailing := !e.failingSince.IsZero()
		e.failingSince = time.Time{}
		e.deadVerdict = topology.Verdict{}
		e.lastVerdict = ""
		e.mu.Unlock()
		e.view.SetState(dbpilot.ClusterOK)
		if wasFailing {
			e.log().Info("primary reachable again", "cluster", e.cluster, "primary", primary.Key.String())
		}
		return topology.AssessPrimary(primary, nil)
	}
	e.mu.Lock()
	if e.failingSince.IsZero() {
		e.failingSince = primary.ObservedAt
	}
	e.mu.Unlock()
	if !e.env.Running() && !AnyReachable(primary, members) {
		// A command acting directly (no serve loop) whose crawl just now
		// reached no server: a confirmation round would wait the probe
		// timeout once more for the same answer, and with no replica
		// answering the verdict cannot be "dead" anyway. Not logged: the
		// command reports the servers' errors itself, in one line.
		v := topology.AssessPrimary(primary, replicasOf(primary.Key, members))
		e.view.SetState(v.State)
		return v
	}
	cctx, cancel := context.WithTimeout(ctx, e.set.ConfirmTimeout)
	defer cancel()
	reprobe := func(ctx context.Context) *dbpilot.Instance { return e.reprobePrimary(ctx, primary.Key) }
	last := make(map[dbpilot.InstanceKey]*dbpilot.Instance, len(members))
	for _, m := range members {
		last[m.Key.Normalized()] = m
	}
	readReplica := func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
		if l := last[k.Normalized()]; l != nil && l.Reachable {
			return e.env.ProbeReplica(ctx, l)
		}
		return e.env.Probe(ctx, k)
	}
	// The silence of each replica's source is noted before the verdict:
	// a hung primary's replicas vote dead on it (topology.Silent).
	v, _ := Confirm(cctx, primary, members, reprobe, readReplica, e.env.Now, e.env.NoteSilence)
	if v.State == dbpilot.ClusterDead {
		e.mu.Lock()
		e.deadVerdict = v
		e.mu.Unlock()
	}
	e.view.SetState(v.State)
	e.Note(v.State, v.Reason)
	return v
}

// reprobePrimary returns what the primary key answered: the cluster's
// PrimaryProbe, one attempt in flight shared by the confirmation rounds,
// bounded by the confirm timeout, and no answer after ConfirmEvery when
// the previous attempt got none.
func (e *Engine) reprobePrimary(ctx context.Context, key dbpilot.InstanceKey) *dbpilot.Instance {
	inspect := func(ctx context.Context, k dbpilot.InstanceKey) error {
		_, err := e.env.Probe(ctx, k)
		return err
	}
	return e.reprobe.Probe(ctx, key, inspect, e.set.ConfirmTimeout, ConfirmEvery)
}

// ConfirmRound is the round between polls while the primary fails to
// answer and is not confirmed dead: assess again from the last observation
// (the replicas inspected afresh, the primary re-probed) without a crawl,
// which would wait the probe timeout on the hung primary each time; then
// recover when it is dead. Anything else (the primary moved, answered, or
// a cluster without one) waits for the next observation.
func (e *Engine) ConfirmRound(ctx context.Context) Decision {
	key := e.view.Primary()
	members := e.view.Members()
	if !e.Confirming() {
		return Decision{}
	}
	var primary *dbpilot.Instance
	for _, m := range members {
		if m.Key.Equal(key) {
			primary = m
		}
	}
	if primary == nil || primary.Reachable {
		return Decision{}
	}
	fence, leader := e.Lead()
	v := e.Assess(ctx, primary, members)
	return e.RecoverDead(ctx, primary, v, fence, leader)
}

// SessionLost is the failure path of a lost liveness session on the
// primary key (cause: how it was lost). It does not wait for a crawl of
// the cluster, which would queue behind monitoring and, on a hung
// primary, wait out the probe timeout: it assesses at once from the last
// observation, the primary re-probed and its replicas read afresh through
// Env.Probe (connections of their own), then recovers when the primary is
// confirmed dead, as ConfirmRound does. A primary the last observation
// already saw failing, or that is no longer the cluster's, is left to the
// watch loop (Decision{}).
func (e *Engine) SessionLost(ctx context.Context, key dbpilot.InstanceKey, cause error) Decision {
	if !e.view.Primary().Equal(key) || e.Failing() {
		return Decision{}
	}
	members := e.view.Members()
	var last *dbpilot.Instance
	for _, m := range members {
		if m.Key.Equal(key) {
			last = m
		}
	}
	if last == nil || !last.Reachable {
		return Decision{}
	}
	e.fast.Store(true)
	defer e.fast.Store(false)
	lost := *last
	lost.Reachable = false
	lost.ObservedAt = e.env.Now()
	if cause != nil {
		lost.LastError = cause.Error()
	}
	fence, leader := e.Lead()
	release := e.env.HoldMonitoring(e.set.ConfirmTimeout)
	v := e.Assess(ctx, &lost, members)
	release()
	return e.RecoverDead(ctx, &lost, v, fence, leader)
}

// Deciding reports whether SessionLost is confirming or recovering the
// cluster's primary now: a tick's observation, older than what it reads,
// leaves the decision to it.
func (e *Engine) Deciding() bool { return e.fast.Load() }

// Action is what the engine answers for an assessed primary.
type Action int

const (
	// Wait: nothing to recover now (alive, not confirmed dead, automatic
	// recovery off, not the leader, already recovered).
	Wait Action = iota
	// Held: dead, but the automatic recovery waits (Decision.Hold says
	// why; an operation running holds without a reason).
	Held
	// Recover: fail the primary over now.
	Recover
)

// Decision is the engine's answer for an assessed primary.
type Decision struct {
	Action Action
	// Hold is why the recovery waits (Action Held).
	Hold Hold
}

// Decide answers for primary, assessed v: recover now, wait or hold.
// fence and leader are Lead's. A hold is noted once.
func (e *Engine) Decide(ctx context.Context, primary *dbpilot.Instance, v topology.Verdict, fence *dbpilot.Fence, leader bool) Decision {
	if v.State != dbpilot.ClusterDead || !e.set.AutoFailover || !leader {
		return Decision{}
	}
	if fence != nil && e.recoveredAlready(ctx, primary.Key) {
		return Decision{}
	}
	if h := HoldAutomatic(e.cluster, e.view.Overlap(), e.view.Members(), func() time.Time { return e.BlockedUntil(ctx) }); h.Event != "" {
		e.Note(h.Event, h.Message)
		return Decision{Action: Held, Hold: h}
	}
	return Decision{Action: Recover}
}

// RecoverDead starts the automatic recovery of a primary assessed dead
// when Decide says so and no operation runs on the cluster. It returns the
// decision (Held when an operation ran).
func (e *Engine) RecoverDead(ctx context.Context, primary *dbpilot.Instance, v topology.Verdict, fence *dbpilot.Fence, leader bool) Decision {
	dec := e.Decide(ctx, primary, v, fence, leader)
	if dec.Action != Recover {
		return dec
	}
	if !e.op.TryLock() {
		return Decision{Action: Held}
	}
	defer e.op.Unlock()
	if _, err := e.Failover(ctx, dbpilot.RecoveryFailoverAuto, false, fence); err != nil {
		e.log().Error("automatic failover failed", "cluster", e.cluster, "err", err)
	}
	return dec
}

// BlockedUntil returns when automatic recovery of the cluster is allowed
// again, or zero when it is not blocked: block_period after the newest
// failover not acknowledged (the function BlockedUntil over its last
// recoveries).
func (e *Engine) BlockedUntil(ctx context.Context) time.Time {
	st := e.env.Store()
	if st == nil {
		return time.Time{}
	}
	recs, err := st.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: e.cluster, Limit: 20})
	if err != nil {
		return time.Time{}
	}
	return BlockedUntil(recs, e.set.BlockPeriod, e.env.Now())
}

// recoveredAlready reports whether the last shared recovery of the cluster
// already replaced primary (its successor is then observed at the next
// tick): a new leader must not fail over a second time for the same
// failure.
func (e *Engine) recoveredAlready(ctx context.Context, primary dbpilot.InstanceKey) bool {
	co := e.env.Coordinator()
	sr, err := co.Recovery(ctx, e.cluster)
	if err != nil {
		e.Note("coordination", fmt.Sprintf("no automatic recovery: cannot read the cluster's last recovery from etcd: %v", err))
		return true
	}
	if sr != nil && sr.OldPrimary.Equal(primary) && sr.State == dbpilot.SharedDone {
		e.Note("coordination", fmt.Sprintf("primary %s was already replaced by %s in recovery #%d (serve %s); waiting to observe the new topology", primary, sr.Candidate, sr.ID, sr.Member))
		e.view.SetPrimary(sr.Candidate)
		e.view.AddKnown(sr.Candidate)
		e.MarkFenced(primary)
		return true
	}
	return false
}

// AnyReachable reports whether the primary or a member answered.
func AnyReachable(primary *dbpilot.Instance, members []*dbpilot.Instance) bool {
	if primary != nil && primary.Reachable {
		return true
	}
	for _, m := range members {
		if m.Reachable {
			return true
		}
	}
	return false
}

// replicasOf returns the members with a channel from primary.
func replicasOf(primary dbpilot.InstanceKey, members []*dbpilot.Instance) []*dbpilot.Instance {
	var out []*dbpilot.Instance
	for _, m := range members {
		if m.Channel(primary) != nil {
			out = append(out, m)
		}
	}
	return out
}
