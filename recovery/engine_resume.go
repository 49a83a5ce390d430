package recovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
)

// This file is how the engine takes over a recovery that a serve left
// running (killed, paused or cut off mid-way): from the coordination state
// when serves coordinate (resume), from the state store when a serve acts
// alone (resumeLocal); always from the servers' state, never by replaying
// a step.

// Resume takes over, at an automatic observation, a recovery left running:
// with coordination, once per leadership, the shared recovery of the
// previous leader (fence and leader are Lead's); alone, once after the
// serve started, the recovery its state store holds unended. It reports
// whether it acted (the observation then ends; the next observes afresh).
func (e *Engine) Resume(ctx context.Context, fence *dbpilot.Fence, leader bool) bool {
	if leader && fence != nil && e.resume(ctx, *fence) {
		return true
	}
	if e.env.Coordinator() != nil {
		return false
	}
	e.mu.Lock()
	done := e.resumedLocal
	e.resumedLocal = true
	e.mu.Unlock()
	return !done && e.resumeLocal(ctx)
}

// resume takes over, once per leadership, a recovery the cluster's
// previous leader left running: a failover whose candidate is already
// writable is finished (the other replicas moved under it); one whose
// candidate was not promoted is planned again under the same recovery ID;
// a switchover or relocation is reported, not redone. It returns true when
// it acted.
func (e *Engine) resume(ctx context.Context, f dbpilot.Fence) bool {
	e.mu.Lock()
	if e.resumedToken == f.Token {
		e.mu.Unlock()
		return false
	}
	e.resumedToken = f.Token
	e.mu.Unlock()
	sr, err := e.env.Coordinator().Recovery(ctx, e.cluster)
	if err != nil {
		e.mu.Lock()
		e.resumedToken = 0 // try again next tick
		e.mu.Unlock()
		e.log().Warn("coordination: read the cluster's recovery", "cluster", e.cluster, "err", err)
		return false
	}
	if sr == nil || sr.State != dbpilot.SharedRunning || (sr.Member == f.Member && sr.Token == f.Token) {
		return false
	}
	if !e.op.TryLock() {
		return false
	}
	defer e.op.Unlock()
	name := e.cluster
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: sr.ID, Instance: sr.OldPrimary, Event: dbpilot.AuditCoordination,
		Message: fmt.Sprintf("recovery #%d (%s) begun by serve %s (token %d) was left running; serve %s (token %d) takes it over", sr.ID, sr.Kind, sr.Member, sr.Token, f.Member, f.Token),
		Detail:  map[string]string{"previous_member": sr.Member, "steps": fmt.Sprint(sr.Steps)}})
	fence := f
	switch sr.Kind {
	case dbpilot.RecoveryFailoverAuto, dbpilot.RecoveryFailoverManual:
	default:
		rec := e.sharedLocal(ctx, sr)
		e.EndRecovery(ctx, rec, fmt.Errorf("%s interrupted: serve %s stopped during it; check the cluster (dbpilot topology) and run it again if needed", sr.Kind, sr.Member))
		e.shared().Update(ctx, &fence, sr, rec, "interrupted")
		return true
	}
	rd := e.env.Reader()
	if !sr.Candidate.IsZero() {
		// Replication removed from the candidate: the promotion began.
		if cand, err := rd.Inspect(ctx, sr.Candidate); err == nil && cand.Reachable && !cand.IsReplica() {
			e.finishPromoted(ctx, &fence, sr, cand)
			return true
		}
	}
	if old, err := rd.Inspect(ctx, sr.OldPrimary); err == nil && old.Reachable {
		rec := e.sharedLocal(ctx, sr)
		e.EndRecovery(ctx, rec, fmt.Errorf("recovery abandoned: the old primary %s answers again and no candidate was promoted", sr.OldPrimary))
		e.shared().Update(ctx, &fence, sr, rec, "abandoned")
		return true
	}
	if _, err := e.failoverRun(ctx, sr.Kind, &fence, sr); err != nil {
		e.log().Error("resumed failover failed", "cluster", name, "err", err)
	}
	return true
}

// resumeLocal closes, on the first automatic observation after a start, a
// recovery of the cluster that a previous serve left running (killed
// mid-way) — the single-serve counterpart of resume, which reads etcd.
// From the servers' state, never by replaying a step:
//   - a failover whose candidate is already promoted (writable, no
//     replication) is finished: the other replicas move below it, no second
//     promotion;
//   - a failover whose candidate was not promoted is planned again under the
//     same recovery ID while the old primary is still dead (its pre-failover
//     hooks are not run again), or abandoned when it answers again;
//   - an interrupted switchover or relocation is closed as interrupted; a
//     switchover that left the old primary read_only without promoting the
//     candidate gives the old primary its writes back.
//
// It reports whether it acted.
func (e *Engine) resumeLocal(ctx context.Context) bool {
	st := e.env.Store()
	if st == nil || e.env.Coordinator() != nil {
		return false
	}
	recs, err := st.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: e.cluster, Limit: 5})
	if err != nil {
		e.log().Warn("read recoveries", "cluster", e.cluster, "err", err)
		return false
	}
	var rec *dbpilot.Recovery
	for _, r := range recs {
		if r.Ended.IsZero() {
			rec = r
			break
		}
	}
	if rec == nil {
		if len(recs) > 0 {
			e.postHooksLeft(ctx, recs[0])
		}
		return false
	}
	if !e.op.TryLock() {
		return false
	}
	defer e.op.Unlock()
	name := e.cluster
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditResume,
		Message: fmt.Sprintf("recovery #%d (%s of %s) was left running by a serve that stopped; this serve closes it from the servers' state", rec.ID, rec.Kind, rec.OldPrimary)})
	sr := &dbpilot.SharedRecovery{ID: rec.ID, Cluster: name, Kind: rec.Kind, OldPrimary: rec.OldPrimary, Candidate: rec.NewPrimary, Started: rec.Started}
	rd := e.env.Reader()
	var cand *dbpilot.Instance
	if !rec.NewPrimary.IsZero() && !rec.NewPrimary.Equal(rec.OldPrimary) {
		if c, err := rd.Inspect(ctx, rec.NewPrimary); err == nil && c.Reachable && !c.IsReplica() {
			cand = c
		}
	}
	switch rec.Kind {
	case dbpilot.RecoveryFailoverAuto, dbpilot.RecoveryFailoverManual:
		if cand != nil {
			e.finishPromoted(ctx, nil, sr, cand)
			return true
		}
		if old, err := rd.Inspect(ctx, rec.OldPrimary); err == nil && old.Reachable {
			e.EndRecovery(ctx, rec, fmt.Errorf("recovery interrupted and abandoned: the old primary %s answers again and no candidate was promoted", rec.OldPrimary))
			return true
		}
		e.view.SetPrimary(rec.OldPrimary)
		if _, err := e.failoverRun(ctx, rec.Kind, nil, sr); err != nil {
			e.log().Error("resumed failover failed", "cluster", name, "err", err)
		}
		return true
	case dbpilot.RecoverySwitchover:
		if cand != nil {
			e.finishPromoted(ctx, nil, sr, cand)
			return true
		}
		msg := fmt.Sprintf("switchover interrupted: serve stopped during it; %s was not promoted", rec.NewPrimary)
		if old, err := rd.Inspect(ctx, rec.OldPrimary); err == nil && old.Reachable && !old.IsReplica() && old.ReadOnly {
			if err := e.env.Executor(nil).GiveWrites(ctx, rec.OldPrimary); err != nil {
				msg += fmt.Sprintf("; giving %s its writes back failed: %v", rec.OldPrimary, err)
			} else {
				msg += fmt.Sprintf("; %s, left read_only, takes writes again", rec.OldPrimary)
				e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditRollback, Message: msg})
			}
		}
		e.EndRecovery(ctx, rec, fmt.Errorf("%s", msg))
		return true
	default:
		e.EndRecovery(ctx, rec, fmt.Errorf("%s interrupted: serve stopped during it; check the cluster (dbpilot topology) and run it again if needed", rec.Kind))
		return true
	}
}

// postHooksLeft runs the post hooks of the cluster's last failover when
// the serve that ran it ended it and stopped before they started (a VIP
// never moved is worse than one moved late). Hooks already started are not
// run again.
func (e *Engine) postHooksLeft(ctx context.Context, rec *dbpilot.Recovery) {
	if rec.Kind != dbpilot.RecoveryFailoverAuto && rec.Kind != dbpilot.RecoveryFailoverManual {
		return
	}
	if e.env.Now().Sub(rec.Ended) > e.set.BlockPeriod {
		return // long ago: not this serve's business any more
	}
	phase := "post-failover"
	if !rec.Success {
		phase = "post-unsuccessful-failover"
	}
	if !e.hooks.Has(phase) || e.hooks.Started(ctx, rec.ID, phase) {
		return
	}
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: e.cluster, RecoveryID: rec.ID, Event: dbpilot.AuditResume,
		Message: fmt.Sprintf("recovery #%d ended but the serve that ran it stopped before its %s hooks: running them now", rec.ID, phase)})
	e.hooks.Run(ctx, rec, phase)
}

// finishPromoted ends a failover whose candidate a previous serve
// promoted: every reachable replica still on the old primary is moved
// below the new one, and the cluster's primary becomes the candidate.
func (e *Engine) finishPromoted(ctx context.Context, fence *dbpilot.Fence, sr *dbpilot.SharedRecovery, cand *dbpilot.Instance) {
	name := e.cluster
	rec := e.sharedLocal(ctx, sr)
	rec.NewPrimary = cand.Key
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: cand.Key, Event: dbpilot.AuditCoordination,
		Message: fmt.Sprintf("candidate %s is already writable: finishing the failover (no second promotion)", cand.Key)})
	keys := e.view.Known()
	exec := e.env.Executor(fence)
	if cand.ReadOnly {
		if err := exec.GiveWrites(ctx, cand.Key); err != nil {
			e.EndRecovery(ctx, rec, err)
			e.shared().Update(ctx, fence, sr, rec, "")
			return
		}
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: cand.Key, Event: dbpilot.AuditPromote, Message: fmt.Sprintf("%s made writable (its replication was already removed)", cand.Key)})
	}
	var lost []dbpilot.InstanceKey
	var firstErr error
	for _, inst := range ReadAll(ctx, e.env.Reader(), keys, e.env.Now) {
		if inst.Key.Equal(cand.Key) || inst.Key.Equal(sr.OldPrimary) || !inst.Reachable || inst.Channel(sr.OldPrimary) == nil {
			continue
		}
		if err := exec.Reattach(ctx, inst.Key, cand.Key); err != nil {
			lost = append(lost, inst.Key)
			if firstErr == nil {
				firstErr = err
			}
			e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: inst.Key, Event: dbpilot.AuditLost, Message: fmt.Sprintf("%s not moved below %s: %v", inst.Key, cand.Key, err)})
			if errors.Is(err, dbpilot.ErrLeadershipLost) {
				break
			}
			continue
		}
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: inst.Key, Event: dbpilot.AuditRepoint, Message: fmt.Sprintf("%s now replicates from %s", inst.Key, cand.Key)})
	}
	rec.LostReplicas = lost
	var err error
	if errors.Is(firstErr, dbpilot.ErrLeadershipLost) {
		err = firstErr
	}
	e.EndRecovery(ctx, rec, err)
	member := "restarted"
	if fence != nil {
		member = fence.Member
	}
	e.shared().Update(ctx, fence, sr, rec, "finished-by-"+member)
	if err != nil {
		return
	}
	e.MarkFenced(sr.OldPrimary)
	e.mu.Lock()
	e.failingSince = time.Time{}
	e.mu.Unlock()
	e.view.Recovered(cand.Key)
	e.view.Notify()
	e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: cand.Key, Event: dbpilot.AuditRecovered,
		Message: fmt.Sprintf("%s promoted in place of %s (finished by serve %s)", cand.Key, sr.OldPrimary, member)})
	if rec.Kind == dbpilot.RecoveryFailoverAuto || rec.Kind == dbpilot.RecoveryFailoverManual {
		// The serve that promoted it stopped before its post hooks.
		e.hooks.Run(ctx, rec, "post-failover")
	}
}
