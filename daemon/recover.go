package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/recovery"
)

// executor returns the recovery executor acting through the controller
// for fence (see controller).
func (d *Daemon) executor(fence *dbpilot.Fence) *recovery.Executor {
	standby, _ := d.live.(StandbyFencer)
	return &recovery.Executor{Ctl: d.controller(fence), Audit: auditor{d}, Recloner: d.recloner, Standby: standby,
		Clock: recovery.Clock{Now: d.now, Sleep: d.sleep}, Opt: recovery.Options{
			ApplyTimeout:  d.cfg.Recovery.ApplyTimeout.D(),
			RepointVerify: d.cfg.Recovery.RepointVerify.D(),
			KillGrace:     d.cfg.Recovery.KillGrace.D(),
			MaxLag:        d.cfg.Switchover.MaxLag.D(),
			DrainTimeout:  d.cfg.Switchover.DrainTimeout.D(),
		}}
}

// auditor routes the executor's audit events through the daemon's log and store.
type auditor struct{ d *Daemon }

func (a auditor) Audit(ctx context.Context, e dbpilot.AuditEvent) error {
	if e.Event == dbpilot.AuditPromote {
		defer faultPoint("after-promotion") // once the promotion is recorded
	}
	a.d.audit(ctx, e)
	return nil
}

// preHooksStep is the step a shared recovery records before its
// pre-failover hooks start.
const preHooksStep = "pre-failover-hooks-started"

// inspectMembers reads the members of a cluster afresh for a failover
// plan, its dead old primary kept as last observed (recovery.ReadMembers).
func (d *Daemon) inspectMembers(ctx context.Context, members []*dbpilot.Instance, old dbpilot.InstanceKey) []*dbpilot.Instance {
	return recovery.ReadMembers(ctx, d.ctl, members, old, d.now)
}

// inspectAll reads every key afresh through the controller, in parallel,
// each within recovery.ReadTimeout (recovery.ReadAll).
func (d *Daemon) inspectAll(ctx context.Context, keys []dbpilot.InstanceKey) []*dbpilot.Instance {
	return recovery.ReadAll(ctx, d.ctl, keys, d.now)
}

func keysOf(in []*dbpilot.Instance) []dbpilot.InstanceKey {
	out := make([]dbpilot.InstanceKey, len(in))
	for i, x := range in {
		out[i] = x.Key
	}
	return out
}

// failover recovers the cluster's dead primary. The caller holds cs.op.
// With dryRun it only plans (planFailover) and returns the plan unexecuted.
func (d *Daemon) failover(ctx context.Context, cs *clusterState, kind string, dryRun bool, fence *dbpilot.Fence) (*dbpilot.Recovery, error) {
	if dryRun {
		p := d.planFailover(ctx, cs, kind)
		if p.err != nil {
			return nil, p.err
		}
		return p.rec, nil
	}
	return d.failoverRun(ctx, cs, kind, fence, nil)
}

// failoverRun plans and executes a failover under fence (nil: a serve
// alone or a forced failover); resumed is the shared recovery of a previous
// leader this one takes over (its ID is kept).
func (d *Daemon) failoverRun(ctx context.Context, cs *clusterState, kind string, fence *dbpilot.Fence, resumed *dbpilot.SharedRecovery) (*dbpilot.Recovery, error) {
	return d.executeFailover(ctx, cs, d.planFailover(ctx, cs, kind), fence, resumed)
}

// failoverPlanned is a failover planned over a fresh read of the cluster's
// members: the recovery it would record and the plan, or why there is none.
type failoverPlanned struct {
	cs         *clusterState
	old        dbpilot.InstanceKey
	members    []*dbpilot.Instance // as last observed (planning again reads them afresh)
	detectedAt time.Time
	rules      recovery.Rules
	plan       *recovery.Plan // nil when err is set
	err        error          // no plan
	rec        *dbpilot.Recovery
}

// planFailover plans the failover of cs's dead primary; it changes nothing.
func (d *Daemon) planFailover(ctx context.Context, cs *clusterState, kind string) *failoverPlanned {
	cs.mu.Lock()
	p := &failoverPlanned{cs: cs, old: cs.primary, members: append([]*dbpilot.Instance(nil), cs.instances...), detectedAt: cs.failingSince}
	cs.mu.Unlock()
	p.rules = recovery.Rules(cs.cfg.rules)
	fresh := d.inspectMembers(ctx, p.members, p.old)
	p.plan, p.err = recovery.PlanFailover(cs.cfg.Name, p.old, fresh, p.rules)
	p.rec = &dbpilot.Recovery{Cluster: cs.cfg.Name, Kind: kind, OldPrimary: p.old, DetectedAt: p.detectedAt, Started: d.now()}
	if p.plan != nil {
		p.rec.Plan = p.plan.String()
		p.rec.NewPrimary = p.plan.Candidate
	}
	return p
}

// executeFailover records and carries out the planned failover p: shared
// and durable records, pre-failover hooks, the standby fence, then the
// executor's failover, planning again without a candidate that fails
// before its promotion (up to recovery.MaxCandidates), and the end (finishFailover).
func (d *Daemon) executeFailover(ctx context.Context, cs *clusterState, p *failoverPlanned, fence *dbpilot.Fence, resumed *dbpilot.SharedRecovery) (*dbpilot.Recovery, error) {
	rec, name, old := p.rec, cs.cfg.Name, p.old
	if resumed != nil {
		rec.Started, rec.DetectedAt = resumed.Started, time.Time{}
	}
	shared, err := d.sharedBegin(ctx, fence, rec, resumed)
	if err != nil {
		d.audit(ctx, dbpilot.AuditEvent{Cluster: name, Instance: old, Event: dbpilot.AuditCoordination,
			Message: fmt.Sprintf("%s of %s not started: %v", rec.Kind, old, err)})
		return nil, err
	}
	if d.store != nil {
		if resumed != nil {
			local := d.sharedLocal(ctx, resumed)
			rec.ID, rec.Started = local.ID, local.Started
		} else if err := d.store.CreateRecovery(ctx, rec); err != nil {
			return nil, err
		}
	}
	cs.mu.Lock()
	cs.status.State = dbpilot.ClusterRecovering
	cs.touch()
	cs.mu.Unlock()
	detail := map[string]string{"kind": rec.Kind}
	if !p.detectedAt.IsZero() {
		detail["detection_ms"] = fmt.Sprint(d.now().Sub(p.detectedAt).Milliseconds())
	}
	d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: old, Event: dbpilot.AuditDetect,
		Message: fmt.Sprintf("primary %s is dead; starting %s", old, rec.Kind), Detail: detail})

	finish := func(err error) (*dbpilot.Recovery, error) {
		d.finishFailover(ctx, cs, fence, shared, rec, err)
		return rec, err
	}
	if p.err != nil {
		return finish(p.err)
	}
	if err := d.preFailoverHooks(ctx, cs, fence, shared, rec, resumed); err != nil {
		return finish(err)
	}
	// The hooks may have taken long: still the leader?
	if fence != nil {
		if err := d.coord.Check(ctx, *fence); err != nil {
			return finish(err)
		}
	}
	d.fenceStandby(ctx, cs, rec)
	return finish(d.promoteWithRetries(ctx, p, fence, shared))
}

// promoteWithRetries runs the executor's failover of p's plan; a candidate
// that dies before its promotion is replaced by a new plan without it
// (recovery.Executor.FailoverRetrying), each new plan shared.
func (d *Daemon) promoteWithRetries(ctx context.Context, p *failoverPlanned, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery) error {
	exec := d.executor(fence)
	exec.Opt.SemiSync = p.cs.cfg.SemiSync
	return exec.FailoverRetrying(ctx, p.plan, p.rec, recovery.Retry{Cluster: p.cs.cfg.Name, OldPrimary: p.old, Rules: p.rules,
		Members:   func(ctx context.Context) []*dbpilot.Instance { return d.inspectMembers(ctx, p.members, p.old) },
		Replanned: func(ctx context.Context) { d.sharedUpdate(ctx, fence, shared, p.rec, "replanned") }})
}

// preFailoverHooks runs the cluster's pre-failover hooks once per
// recovery: a recovery resumed from a serve that started them skips them.
// A failing hook vetoes the failover (its error).
func (d *Daemon) preFailoverHooks(ctx context.Context, cs *clusterState, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery, rec *dbpilot.Recovery, resumed *dbpilot.SharedRecovery) error {
	name := cs.cfg.Name
	hooks := d.cfg.HooksFor(cs.cfg)
	faultPoint("before-hooks")
	if resumed != nil && len(hooks.PreFailover) > 0 && (slices.Contains(resumed.Steps, preHooksStep) || d.hooksStarted(ctx, name, rec.ID, "pre-failover")) {
		// The serve that began it ran (or was killed in) these hooks: a
		// step never runs twice.
		d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Event: dbpilot.AuditHook,
			Message: "pre-failover hooks not run again: the serve that began the recovery started them before it stopped"})
		return nil
	}
	if len(hooks.PreFailover) > 0 {
		// Shared before they start: another serve that takes the
		// recovery over does not run them again.
		d.sharedUpdate(ctx, fence, shared, rec, preHooksStep)
	}
	return d.runHooks(ctx, cs, rec, "pre-failover", hooks.PreFailover, hooks)
}

// finishFailover ends a failover with err (nil: done): the durable and
// shared records, the post hooks, the cluster's new primary (or its dead
// state), and an observation of the new topology.
func (d *Daemon) finishFailover(ctx context.Context, cs *clusterState, fence *dbpilot.Fence, shared *dbpilot.SharedRecovery, rec *dbpilot.Recovery, err error) {
	name, old := cs.cfg.Name, rec.OldPrimary
	d.endRecovery(ctx, rec, err)
	d.sharedUpdate(ctx, fence, shared, rec, "")
	hooks := d.cfg.HooksFor(cs.cfg)
	if err != nil {
		d.runHooks(ctx, cs, rec, "post-unsuccessful-failover", hooks.PostUnsuccessfulFailover, hooks)
		cs.mu.Lock()
		cs.status.State = dbpilot.ClusterDead
		cs.touch()
		cs.mu.Unlock()
		d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: old, Event: dbpilot.AuditFailed, Message: "recovery failed: " + err.Error()})
		return
	}
	faultPoint("before-post-hooks")
	d.runHooks(ctx, cs, rec, "post-failover", hooks.PostFailover, hooks)
	cs.mu.Lock()
	cs.setPrimary(rec.NewPrimary)
	cs.known = appendKey(cs.known, rec.NewPrimary)
	cs.fenced[old] = true
	cs.failingSince = time.Time{}
	cs.status.State = dbpilot.ClusterOK
	cs.status.Primary = rec.NewPrimary
	cs.mu.Unlock()
	d.watchOldPrimary(cs, old)
	// Observe the new topology now, so that watchers are told of the new
	// primary together with its replicas moved under it, not of a new
	// primary over the old tree until the next tick.
	if _, _, err := d.observe(ctx, cs); err != nil {
		cs.notify()
	}
	d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.NewPrimary, Event: dbpilot.AuditRecovered,
		Message: fmt.Sprintf("%s promoted in place of %s in %s", rec.NewPrimary, old, rec.Ended.Sub(rec.Started).Round(time.Millisecond))})
}

// runHooks runs a hook list; for pre-failover, a failure vetoes (returned
// as an error).
func (d *Daemon) runHooks(ctx context.Context, cs *clusterState, rec *dbpilot.Recovery, phase string, cmds []string, hc HooksConfig) error {
	if len(cmds) == 0 {
		return nil
	}
	var lost []string
	for _, k := range rec.LostReplicas {
		lost = append(lost, k.String())
	}
	env := map[string]string{
		"DBPILOT_CLUSTER":       cs.cfg.Name,
		"DBPILOT_KIND":          rec.Kind,
		"DBPILOT_PHASE":         phase,
		"DBPILOT_RECOVERY_ID":   fmt.Sprint(rec.ID),
		"DBPILOT_OLD_PRIMARY":   rec.OldPrimary.String(),
		"DBPILOT_NEW_PRIMARY":   "",
		"DBPILOT_LOST_REPLICAS": strings.Join(lost, ","),
		"DBPILOT_ERROR":         rec.Error,
	}
	if !rec.NewPrimary.IsZero() {
		env["DBPILOT_NEW_PRIMARY"] = rec.NewPrimary.String()
	}
	// Recorded before the first hook starts: a serve killed while they run
	// has its successor skip them (hooksStarted), never run them twice.
	d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Event: dbpilot.AuditHook,
		Message: fmt.Sprintf("%s hooks starting (%d)", phase, len(cmds)), Detail: map[string]string{"phase": phase, "state": "starting"}})
	for _, c := range cmds {
		res := runHookTracked(ctx, c, env, hc.Timeout.D(), d.hooks.track)
		detail := map[string]string{"command": c, "exit_code": fmt.Sprint(res.ExitCode), "took_ms": fmt.Sprint(res.Took.Milliseconds())}
		if res.Output != "" {
			detail["output"] = res.Output
		}
		msg := fmt.Sprintf("%s hook %q succeeded", phase, c)
		if res.Err != nil {
			msg = fmt.Sprintf("%s hook %q failed: %v", phase, c, res.Err)
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Event: dbpilot.AuditHook, Message: msg, Detail: detail})
		if phase != "pre-failover" || res.Err == nil {
			continue
		}
		if res.TimedOut && hc.OnTimeout == "continue" {
			continue
		}
		return dbpilot.Errorf(dbpilot.ECONFLICT, "vetoed by pre-failover hook %q: %v", c, res.Err)
	}
	return nil
}

// fenceReturning makes every old primary that answers again read_only at
// once. Fencing only takes writes away, so every serve does it, leader or
// not, with coordination or without (etcd down): no fencing token guards
// it. It reports the old primaries that are back.
func (d *Daemon) fenceReturning(ctx context.Context, cs *clusterState) {
	cs.mu.Lock()
	var back []*dbpilot.Instance
	for _, i := range cs.detached {
		if i.Reachable && cs.fenced[i.Key] && !i.ReadOnly {
			back = append(back, i)
		}
	}
	cs.mu.Unlock()
	for _, old := range back {
		n, err := d.fenceNow(ctx, old.Key)
		if err != nil {
			d.log.Warn("fence: set read_only", "instance", old.Key.String(), "err", err)
			continue
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Instance: old.Key, Event: dbpilot.AuditFence,
			Message: fmt.Sprintf("old primary %s is back: set read_only and ended %d client sessions", old.Key, n)})
	}
	if len(back) > 0 {
		// The problems said MultipleWritable a moment ago: say it is fenced.
		cs.mu.Lock()
		cs.status.Problems = withoutFenced(cs.status.Problems, back)
		cs.touch()
		cs.mu.Unlock()
	}
}

// withoutFenced drops the MultipleWritable problems of instances just made
// read_only.
func withoutFenced(ps []dbpilot.Problem, fenced []*dbpilot.Instance) []dbpilot.Problem {
	out := ps[:0:0]
	for _, p := range ps {
		drop := false
		for _, f := range fenced {
			if p.Code == dbpilot.ProblemMultipleWritable && p.Instance.Equal(f.Key) {
				drop = true
			}
		}
		if !drop {
			out = append(out, p)
		}
	}
	return out
}

// fence watches old primaries (fenceReturning made them read_only): the
// errant transactions of one that is back (GTIDs the new primary lacks)
// are reported, and with rejoin it becomes a replica of the new primary
// when it has none (autoRejoin). Only the leader rejoins.
func (d *Daemon) fence(ctx context.Context, cs *clusterState, fence *dbpilot.Fence) {
	cs.mu.Lock()
	var back []*dbpilot.Instance
	for _, i := range cs.detached {
		if i.Reachable && cs.fenced[i.Key] {
			back = append(back, i)
		}
	}
	primary := cs.primary
	var newPrimary *dbpilot.Instance
	for _, i := range cs.instances {
		if i.Key.Equal(primary) {
			newPrimary = i
		}
	}
	cs.mu.Unlock()
	for _, old := range back {
		if newPrimary == nil || !newPrimary.Reachable {
			continue
		}
		r, err := recovery.DecideReturning(old, newPrimary, cs.cfg.Rejoin)
		if err != nil {
			d.log.Warn("fence: compare GTIDs", "instance", old.Key.String(), "err", err)
			continue
		}
		if !r.Rejoin {
			d.fenceNote(ctx, cs, old.Key, r.Note, r.Detail)
			continue
		}
		if err := d.autoRejoin(ctx, cs, fence, old.Key, newPrimary.Key); err != nil {
			d.log.Warn("rejoin failed", "instance", old.Key.String(), "err", err)
		}
	}
}

// autoRejoin makes the old primary old, with no errant transactions, a
// replica of primary (the cluster's setting rejoin), recorded as a
// recovery of kind rejoin. It does nothing while another operation runs.
func (d *Daemon) autoRejoin(ctx context.Context, cs *clusterState, fence *dbpilot.Fence, old, primary dbpilot.InstanceKey) error {
	if !cs.op.TryLock() {
		return nil // the next tick
	}
	defer cs.op.Unlock()
	rec := &dbpilot.Recovery{Cluster: cs.cfg.Name, Kind: dbpilot.RecoveryRejoin, OldPrimary: old, NewPrimary: primary, Started: d.now(),
		Plan: "automatic (rejoin: true), no errant transactions\n" + recovery.RejoinPlan(old, primary, dbpilot.InstanceKey{}, "", false, cs.cfg.SemiSync)}
	return d.runRejoin(ctx, cs, fence, rec, recovery.RejoinOptions{})
}

// runRejoin records rec, attaches rec.OldPrimary below rec.NewPrimary
// (recovery.Executor.Rejoin) and, when it replicates, takes it out of the
// fenced set: a normal replica. The caller holds cs.op.
func (d *Daemon) runRejoin(ctx context.Context, cs *clusterState, fence *dbpilot.Fence, rec *dbpilot.Recovery, opt recovery.RejoinOptions) error {
	shared, err := d.sharedBegin(ctx, fence, rec, nil)
	if err != nil {
		return err
	}
	if d.store != nil {
		if err := d.store.CreateRecovery(ctx, rec); err != nil {
			return err
		}
	}
	exec := d.executor(fence)
	exec.Opt.SemiSync = cs.cfg.SemiSync
	err = exec.Rejoin(ctx, rec.OldPrimary, rec.NewPrimary, opt, rec)
	if err == nil {
		d.unfence(cs, rec.OldPrimary)
	}
	d.endRecovery(ctx, rec, err)
	d.sharedUpdate(ctx, fence, shared, rec, "")
	if err == nil {
		// Observe now: watchers see it in the tree, no longer fenced.
		if _, _, oerr := d.observe(ctx, cs); oerr != nil {
			cs.notify()
		}
	}
	return err
}

// unfence takes k out of the cluster's old primaries to fence.
func (d *Daemon) unfence(cs *clusterState, k dbpilot.InstanceKey) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for f := range cs.fenced {
		if f.Equal(k) {
			delete(cs.fenced, f)
		}
	}
	for f := range cs.fenceNoted {
		if f.Equal(k) {
			delete(cs.fenceNoted, f)
		}
	}
}

// fenceNote audits a fencing finding once: again only when it changes.
func (d *Daemon) fenceNote(ctx context.Context, cs *clusterState, k dbpilot.InstanceKey, msg string, detail map[string]string) {
	cs.mu.Lock()
	same := cs.fenceNoted[k] == msg
	cs.fenceNoted[k] = msg
	cs.mu.Unlock()
	if !same {
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Instance: k, Event: dbpilot.AuditFence, Message: msg, Detail: detail})
	}
}
