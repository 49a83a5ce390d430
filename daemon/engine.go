package daemon

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/recovery"
)

// engineEnv is what a cluster's recovery.Engine acts through: the daemon's
// services (recovery.Env), the cluster's state as the daemon observes it
// (recovery.View) and its hooks (recovery.Hooks). Every method reads the
// daemon's fields when called.
type engineEnv struct {
	d  *Daemon
	cs *clusterState
}

// newEngine returns the recovery engine of cs.
func (d *Daemon) newEngine(cs *clusterState) *recovery.Engine {
	cl := cs.cfg
	set := recovery.Settings{
		AutoFailover:   cl.AutoFailover,
		Rejoin:         cl.Rejoin,
		SemiSync:       cl.SemiSync,
		Rules:          recovery.Rules(cl.rules),
		ConfirmTimeout: d.cfg.Detection.ConfirmTimeout.D(),
		BlockPeriod:    d.cfg.Recovery.BlockPeriod.D(),
		ForgetAfter:    d.cfg.ForgetAfter.D(),
	}
	env := engineEnv{d: d, cs: cs}
	return recovery.NewEngine(cl.Name, set, env, env, env)
}

// recovery.Env

func (e engineEnv) Now() time.Time       { return e.d.now() }
func (e engineEnv) Logger() *slog.Logger { return e.d.log }
func (e engineEnv) Audit(ctx context.Context, ev dbpilot.AuditEvent) {
	e.d.audit(ctx, ev)
	if ev.Event == dbpilot.AuditDetect {
		e.d.recordDeadPrimary(e.cs, ev)
	}
}
func (e engineEnv) Executor(fence *dbpilot.Fence) *recovery.Executor {
	return e.d.executor(fence)
}
func (e engineEnv) Probe(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	return e.d.detect.Inspect(ctx, k)
}

// ProbeReplica re-reads what a confirmation needs of a replica (its
// channels) when the detector can do it in one statement, else inspects it.
func (e engineEnv) ProbeReplica(ctx context.Context, last *dbpilot.Instance) (*dbpilot.Instance, error) {
	if r, ok := e.d.detect.(interface {
		InspectReplica(ctx context.Context, last *dbpilot.Instance) (*dbpilot.Instance, error)
	}); ok {
		return r.InspectReplica(ctx, last)
	}
	return e.d.detect.Inspect(ctx, last.Key)
}

func (e engineEnv) Reader() dbpilot.Inspector             { return e.d.ctl }
func (e engineEnv) Coordinator() dbpilot.Coordinator      { return e.d.coord }
func (e engineEnv) Store() dbpilot.StateStore             { return e.d.store }
func (e engineEnv) Running() bool                         { return e.d.running.Load() }
func (e engineEnv) NoteSilence(fresh []*dbpilot.Instance) { e.d.silence.note(fresh, e.d.now()) }
func (e engineEnv) Fault(step string)                     { faultPoint(step) }

// HoldMonitoring holds the collectors' new runs (CollectionHolder) while
// a failure is confirmed; without collection it holds nothing.
func (e engineEnv) HoldMonitoring(max time.Duration) func() {
	if m := e.d.mon; m != nil {
		if h, ok := m.start.(CollectionHolder); ok {
			return h.Hold(max)
		}
	}
	return func() {}
}

// Go runs fn under Run's context, owned by Run (d.bg), while the watch
// loops run.
func (e engineEnv) Go(fn func(bg context.Context)) bool {
	d := e.d
	ctx := d.bgCtx
	if ctx == nil || !d.running.Load() {
		return false
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		fn(ctx)
	}()
	return true
}

// recovery.View

func (e engineEnv) Primary() dbpilot.InstanceKey {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return e.cs.primary
}

func (e engineEnv) Members() []*dbpilot.Instance {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return slices.Clone(e.cs.instances)
}

func (e engineEnv) Detached() []*dbpilot.Instance {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return slices.Clone(e.cs.detached)
}

func (e engineEnv) Known() []dbpilot.InstanceKey {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return slices.Clone(e.cs.known)
}

func (e engineEnv) Overlap() []dbpilot.Problem {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return slices.Clone(e.cs.overlap)
}

func (e engineEnv) State() string {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	return e.cs.status.State
}

func (e engineEnv) SetState(state string) {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	e.cs.status.State = state
	e.cs.touch()
}

func (e engineEnv) SetPrimary(k dbpilot.InstanceKey) {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	e.cs.promoted(k)
}

func (e engineEnv) AddKnown(k dbpilot.InstanceKey) {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	e.cs.known = appendKey(e.cs.known, k)
}

func (e engineEnv) Recovered(k dbpilot.InstanceKey) {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	e.cs.promoted(k)
	e.cs.known = appendKey(e.cs.known, k)
	e.cs.status.State = dbpilot.ClusterOK
	e.cs.status.Primary = k
}

func (e engineEnv) Notify() { e.cs.notify() }

func (e engineEnv) Observe(ctx context.Context) error {
	_, _, err := e.d.observe(ctx, e.cs)
	return err
}

func (e engineEnv) FencedBack(back []*dbpilot.Instance) {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	e.cs.status.Problems = withoutFenced(e.cs.status.Problems, back)
	e.cs.touch()
}

// recovery.Hooks

// hookCommands returns the cluster's hooks of phase.
func (e engineEnv) hookCommands(phase string) ([]string, HooksConfig) {
	hooks := e.d.cfg.HooksFor(e.cs.cfg)
	switch phase {
	case "pre-failover":
		return hooks.PreFailover, hooks
	case "post-failover":
		return hooks.PostFailover, hooks
	case "post-unsuccessful-failover":
		return hooks.PostUnsuccessfulFailover, hooks
	}
	return nil, hooks
}

func (e engineEnv) Has(phase string) bool {
	cmds, _ := e.hookCommands(phase)
	return len(cmds) > 0
}

func (e engineEnv) Run(ctx context.Context, rec *dbpilot.Recovery, phase string) error {
	cmds, hooks := e.hookCommands(phase)
	return e.d.runHooks(ctx, e.cs, rec, phase, cmds, hooks)
}

func (e engineEnv) Started(ctx context.Context, id int64, phase string) bool {
	return e.d.hooksStarted(ctx, e.cs.cfg.Name, id, phase)
}
