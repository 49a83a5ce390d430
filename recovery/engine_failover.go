package recovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// PreHooksStep is the step a shared recovery records before its
// pre-failover hooks start.
const PreHooksStep = "pre-failover-hooks-started"

// Failover recovers the cluster's dead primary under fence (nil: a serve
// alone or a forced failover). The caller holds the operation lock
// (TryLock). With dryRun it only plans and returns the plan unexecuted.
func (e *Engine) Failover(ctx context.Context, kind string, dryRun bool, fence *dbpilot.Fence) (*dbpilot.Recovery, error) {
	if dryRun {
		p := e.planFailover(ctx, kind)
		if p.err != nil {
			return nil, p.err
		}
		return p.rec, nil
	}
	return e.failoverRun(ctx, kind, fence, nil)
}

// failoverRun plans and executes a failover under fence; resumed is the
// shared recovery of a previous leader this one takes over (its ID is
// kept).
func (e *Engine) failoverRun(ctx context.Context, kind string, fence *dbpilot.Fence, resumed *dbpilot.SharedRecovery) (*dbpilot.Recovery, error) {
	return e.executeFailover(ctx, e.planFailover(ctx, kind), fence, resumed)
}

// failoverPlanned is a failover planned over a fresh read of the cluster's
// members: the recovery it would record and the plan, or why there is none.
type failoverPlanned struct {
	old        dbpilot.InstanceKey
	members    []*dbpilot.Instance // as last observed (planning again reads them afresh)
	detectedAt time.Time
	// verdict confirmed the primary dead (zero when no confirmation
	// round ran: a forced or resumed failover).
	verdict topology.Verdict
	plan    *Plan // nil when err is set
	err     error // no plan
	rec     *dbpilot.Recovery
}

// planFailover plans the failover of the cluster's dead primary; it
// changes nothing.
func (e *Engine) planFailover(ctx context.Context, kind string) *failoverPlanned {
	p := &failoverPlanned{old: e.view.Primary(), members: e.view.Members()}
	e.mu.Lock()
	p.detectedAt, p.verdict = e.failingSince, e.deadVerdict
	e.mu.Unlock()
	fresh := e.readMembers(ctx, p.members, p.old)
	p.plan, p.err = PlanFailover(e.cluster, p.old, fresh, e.set.Rules)
	p.rec = &dbpilot.Recovery{Cluster: e.cluster, Kind: kind, OldPrimary: p.old, DetectedAt: p.detectedAt, Started: e.env.Now()}
	if p.plan != nil {
		p.rec.Plan = p.plan.String()
		p.rec.NewPrimary = p.plan.Candidate
	}
	return p
}

// readMembers reads the members afresh for a failover plan, the dead old
// primary kept as last observed (ReadMembers).
func (e *Engine) readMembers(ctx context.Context, members []*dbpilot.Instance, old dbpilot.InstanceKey) []*dbpilot.Instance {
	return ReadMembers(ctx, e.env.Reader(), members, old, e.env.Now)
}

// executeFailover records and carries out the planned failover p: shared
// and durable records, pre-failover hooks, the standby fence, then the
// executor's failover, planning again without a candidate that fails
// before its promotion (up to MaxCandidates), and the end (finishFailover).
func (e *Engine) executeFailover(ctx context.Context, p *failoverPlanned, fence *dbpilot.Fence, resumed *dbpilot.SharedRecovery) (*dbpilot.Recovery, error) {
	rec, name, old := p.rec, e.cluster, p.old
	if resumed != nil {
		rec.Started, rec.DetectedAt = resumed.Started, time.Time{}
	}
	shared, err := e.shared().Begin(ctx, fence, rec, resumed)
	if err != nil {
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, Instance: old, Event: dbpilot.AuditCoordination,
			Message: fmt.Sprintf("%s of %s not started: %v", rec.Kind, old, err)})
		return nil, err
	}
	if st := e.env.Store(); st != nil {
		if resumed != nil {
			local := e.sharedLocal(ctx, resumed)
			rec.ID, rec.Started = local.ID, local.Started
		} else if err := st.CreateRecovery(ctx, rec); err != nil {
			return nil, err
		}
	}
	e.view.SetState(dbpilot.ClusterRecovering)
	detail := map[string]string{"kind": rec.Kind}
	if !p.detectedAt.IsZero() {
		detail["detection_ms"] = fmt.Sprint(e.env.Now().Sub(p.detectedAt).Milliseconds())
	}
	if v := p.verdict; v.State == dbpilot.ClusterDead && resumed == nil {
		// The evidence: the replicas' votes of the confirmation.
		detail["evidence"] = v.Reason
		detail["replicas_asked"] = fmt.Sprint(v.Replicas)
		detail["replicas_answered"] = fmt.Sprint(v.Reachable)
		detail["replicas_lost_primary"] = fmt.Sprint(v.Lost)
	}
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: old, Event: dbpilot.AuditDetect,
		Message: fmt.Sprintf("primary %s is dead; starting %s", old, rec.Kind), Detail: detail})

	finish := func(err error) (*dbpilot.Recovery, error) {
		e.finishFailover(ctx, fence, shared, rec, err)
		return rec, err
	}
	if p.err != nil {
		return finish(p.err)
	}
	if err := e.preFailoverHooks(ctx, fence, shared, rec, resumed); err != nil {
		return finish(err)
	}
	// The hooks may have taken long: still the leader?
	if fence != nil {
		if err := e.env.Coordinator().Check(ctx, *fence); err != nil {
			return finish(err)
		}
	}
	e.fenceStandby(ctx, rec)
	return finish(e.promoteWithRetries(ctx, p, fence, shared))
}

// promoteWithRetries runs the executor's failover of p's plan; a candidate
// that dies before its promotion is replaced by a new plan without it
// (Executor.FailoverRetrying), each new plan shared.
func (e *Engine) promoteWithRetries(ctx context.Context, p *failoverPlanned, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery) error {
	exec := e.env.Executor(fence)
	exec.Opt.SemiSync = e.set.SemiSync
	return exec.FailoverRetrying(ctx, p.plan, p.rec, Retry{Cluster: e.cluster, OldPrimary: p.old, Rules: e.set.Rules,
		Members:   func(ctx context.Context) []*dbpilot.Instance { return e.readMembers(ctx, p.members, p.old) },
		Replanned: func(ctx context.Context) { e.shared().Update(ctx, fence, shared, p.rec, "replanned") }})
}

// preFailoverHooks runs the cluster's pre-failover hooks once per
// recovery: a recovery resumed from a serve that started them skips them.
// A failing hook vetoes the failover (its error).
func (e *Engine) preFailoverHooks(ctx context.Context, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery, rec *dbpilot.Recovery, resumed *dbpilot.SharedRecovery) error {
	const phase = "pre-failover"
	has := e.hooks.Has(phase)
	e.env.Fault("before-hooks")
	if resumed != nil && has && (slices.Contains(resumed.Steps, PreHooksStep) || e.hooks.Started(ctx, rec.ID, phase)) {
		// The serve that began it ran (or was killed in) these hooks: a
		// step never runs twice.
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: e.cluster, RecoveryID: rec.ID, Event: dbpilot.AuditHook,
			Message: "pre-failover hooks not run again: the serve that began the recovery started them before it stopped"})
		return nil
	}
	if has {
		// Shared before they start: another serve that takes the
		// recovery over does not run them again.
		e.shared().Update(ctx, fence, shared, rec, PreHooksStep)
	}
	return e.hooks.Run(ctx, rec, phase)
}

// finishFailover ends a failover with err (nil: done): the durable and
// shared records, the post hooks, the cluster's new primary (or its dead
// state), and an observation of the new topology.
func (e *Engine) finishFailover(ctx context.Context, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery, rec *dbpilot.Recovery, err error) {
	name, old := e.cluster, rec.OldPrimary
	e.EndRecovery(ctx, rec, err)
	e.shared().Update(ctx, fence, shared, rec, "")
	if err != nil {
		e.hooks.Run(ctx, rec, "post-unsuccessful-failover")
		e.view.SetState(dbpilot.ClusterDead)
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: old, Event: dbpilot.AuditFailed, Message: "recovery failed: " + err.Error()})
		return
	}
	e.env.Fault("before-post-hooks")
	e.hooks.Run(ctx, rec, "post-failover")
	e.MarkFenced(old)
	e.mu.Lock()
	e.failingSince = time.Time{}
	e.mu.Unlock()
	e.view.Recovered(rec.NewPrimary)
	e.watchOldPrimary(old)
	// Observe the new topology now, so that watchers are told of the new
	// primary together with its replicas moved under it, not of a new
	// primary over the old tree until the next tick.
	if err := e.view.Observe(ctx); err != nil {
		e.view.Notify()
	}
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.NewPrimary, Event: dbpilot.AuditRecovered,
		Message: fmt.Sprintf("%s promoted in place of %s in %s", rec.NewPrimary, old, rec.Ended.Sub(rec.Started).Round(time.Millisecond))})
}

// EndRecovery records a recovery's outcome in the state store and tells
// the status's watchers (its last recovery changed).
func (e *Engine) EndRecovery(ctx context.Context, rec *dbpilot.Recovery, err error) {
	rec.Ended = e.env.Now()
	rec.Success = err == nil
	if err != nil {
		rec.Error = err.Error()
	}
	if st := e.env.Store(); st != nil {
		if uerr := st.UpdateRecovery(context.WithoutCancel(ctx), rec); uerr != nil {
			e.log().Warn("update recovery", "err", uerr)
		}
	}
	e.view.Notify()
}

// shared is the shared-recovery bookkeeping over the coordinator.
func (e *Engine) shared() Shared {
	return Shared{Coord: e.env.Coordinator(), Log: e.env.Logger()}
}

// sharedLocal returns this serve's record of a shared recovery, created
// from it when missing.
func (e *Engine) sharedLocal(ctx context.Context, sr *dbpilot.SharedRecovery) *dbpilot.Recovery {
	rec := &dbpilot.Recovery{ID: sr.ID, Cluster: sr.Cluster, Kind: sr.Kind, OldPrimary: sr.OldPrimary, NewPrimary: sr.Candidate, Started: sr.Started}
	if st := e.env.Store(); st != nil {
		if recs, err := st.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: sr.Cluster, Limit: 5}); err == nil {
			for _, r := range recs {
				if r.ID == sr.ID {
					return r
				}
			}
		}
		if err := st.CreateRecovery(ctx, rec); err != nil {
			e.log().Warn("coordination: record resumed recovery", "recovery", sr.ID, "err", err)
		}
	}
	return rec
}
