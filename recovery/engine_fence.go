package recovery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// This file is what the engine does with the old primaries of its
// failovers: fence them when they answer again (at once, then every
// observation), report their errant transactions, rejoin them.

// FenceRetry is how often the watch of a failover's old primary tries a
// dead one again.
const FenceRetry = 100 * time.Millisecond

// MarkFenced adds k to the old primaries to fence when they return.
func (e *Engine) MarkFenced(k dbpilot.InstanceKey) {
	e.mu.Lock()
	e.fenced[k] = true
	e.mu.Unlock()
}

// IsFenced reports whether k is an old primary to fence.
func (e *Engine) IsFenced(k dbpilot.InstanceKey) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fenced[k]
}

// Fenced returns the old primaries to fence.
func (e *Engine) Fenced() []dbpilot.InstanceKey {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]dbpilot.InstanceKey, 0, len(e.fenced))
	for k := range e.fenced {
		out = append(out, k)
	}
	return out
}

// unfence takes k out of the old primaries to fence.
func (e *Engine) unfence(k dbpilot.InstanceKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for f := range e.fenced {
		if f.Equal(k) {
			delete(e.fenced, f)
		}
	}
	for f := range e.fenceNoted {
		if f.Equal(k) {
			delete(e.fenceNoted, f)
		}
	}
}

// RestoreFences takes the cluster's primary from its newest successful
// failover or switchover in the state store, and re-arms fencing of the
// old primaries that failovers of the last 24 hours replaced and no later
// rejoin attached. A serve runs it once, before its first observation.
func (e *Engine) RestoreFences(ctx context.Context) {
	st := e.env.Store()
	if st == nil {
		return
	}
	recs, err := st.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: e.cluster, Limit: 20})
	if err != nil {
		e.log().Warn("read recoveries", "cluster", e.cluster, "err", err)
		return
	}
	primarySet := false
	rejoined := map[dbpilot.InstanceKey]bool{}
	for _, r := range recs { // newest first
		if !r.Success {
			continue
		}
		failover := r.Kind == dbpilot.RecoveryFailoverAuto || r.Kind == dbpilot.RecoveryFailoverManual
		if !primarySet && (failover || r.Kind == dbpilot.RecoverySwitchover) && !r.NewPrimary.IsZero() {
			primarySet = true
			e.view.SetPrimary(r.NewPrimary)
			e.view.AddKnown(r.NewPrimary)
		}
		if r.Kind == dbpilot.RecoveryRejoin {
			rejoined[r.OldPrimary.Normalized()] = true
		}
		if failover && !rejoined[r.OldPrimary.Normalized()] && e.env.Now().Sub(r.Ended) < 24*time.Hour {
			e.MarkFenced(r.OldPrimary)
			e.view.AddKnown(r.OldPrimary)
		}
	}
}

// returned returns the detached old primaries to fence that answer; with
// writable, only those still writable.
func (e *Engine) returned(writable bool) []*dbpilot.Instance {
	detached := e.view.Detached()
	e.mu.Lock()
	defer e.mu.Unlock()
	var back []*dbpilot.Instance
	for _, i := range detached {
		if i.Reachable && e.fenced[i.Key] && (!writable || !i.ReadOnly) {
			back = append(back, i)
		}
	}
	return back
}

// FenceReturning makes every old primary that answers again read_only at
// once. Fencing only takes writes away, so every serve does it, leader or
// not, with coordination or without (etcd down): no fencing token guards
// it.
func (e *Engine) FenceReturning(ctx context.Context) {
	back := e.returned(true)
	for _, old := range back {
		n, done, err := e.fenceUnlessSince(ctx, old.Key, old.ObservedAt)
		if err != nil {
			e.log().Warn("fence: set read_only", "instance", old.Key.String(), "err", err)
			continue
		}
		if done {
			continue // fenced after this observation (watchOldPrimary)
		}
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: e.cluster, Instance: old.Key, Event: dbpilot.AuditFence,
			Message: fmt.Sprintf("old primary %s is back: set read_only and ended %d client sessions", old.Key, n)})
	}
	if len(back) > 0 {
		// The problems said MultipleWritable a moment ago: say it is fenced.
		e.view.FencedBack(back)
	}
}

// Returned handles the old primaries FenceReturning made read_only: the
// errant transactions of one that is back (GTIDs the new primary lacks)
// are reported, and with rejoin it becomes a replica of the new primary
// (autoRejoin). Only the leader calls it (fence is its fence, nil alone).
func (e *Engine) Returned(ctx context.Context, fence *dbpilot.Fence) {
	back := e.returned(false)
	primary := e.view.Primary()
	var newPrimary *dbpilot.Instance
	for _, i := range e.view.Members() {
		if i.Key.Equal(primary) {
			newPrimary = i
		}
	}
	for _, old := range back {
		if newPrimary == nil || !newPrimary.Reachable {
			continue
		}
		r, err := DecideReturning(old, newPrimary, e.set.Rejoin)
		if err != nil {
			e.log().Warn("fence: compare GTIDs", "instance", old.Key.String(), "err", err)
			continue
		}
		if !r.Rejoin {
			e.fenceNote(ctx, old.Key, r.Note, r.Detail)
			continue
		}
		if err := e.autoRejoin(ctx, fence, old.Key, newPrimary.Key); err != nil {
			e.log().Warn("rejoin failed", "instance", old.Key.String(), "err", err)
		}
	}
}

// autoRejoin makes the old primary old, with no errant transactions, a
// replica of primary (the cluster's setting rejoin), recorded as a
// recovery of kind rejoin. It does nothing while another operation runs.
func (e *Engine) autoRejoin(ctx context.Context, fence *dbpilot.Fence, old, primary dbpilot.InstanceKey) error {
	if !e.op.TryLock() {
		return nil // the next tick
	}
	defer e.op.Unlock()
	rec := &dbpilot.Recovery{Cluster: e.cluster, Kind: dbpilot.RecoveryRejoin, OldPrimary: old, NewPrimary: primary, Started: e.env.Now(),
		Plan: "automatic (rejoin: true), no errant transactions\n" + RejoinPlan(old, primary, dbpilot.InstanceKey{}, "", false, e.set.SemiSync)}
	return e.Rejoin(ctx, fence, rec, RejoinOptions{})
}

// Rejoin records rec, attaches rec.OldPrimary below rec.NewPrimary
// (Executor.Rejoin) and, when it replicates, takes it out of the fenced
// set: a normal replica. The caller holds the operation lock.
func (e *Engine) Rejoin(ctx context.Context, fence *dbpilot.Fence, rec *dbpilot.Recovery, opt RejoinOptions) error {
	shared, err := e.shared().Begin(ctx, fence, rec, nil)
	if err != nil {
		return err
	}
	if st := e.env.Store(); st != nil {
		if err := st.CreateRecovery(ctx, rec); err != nil {
			return err
		}
	}
	exec := e.env.Executor(fence)
	exec.Opt.SemiSync = e.set.SemiSync
	err = exec.Rejoin(ctx, rec.OldPrimary, rec.NewPrimary, opt, rec)
	if err == nil {
		e.unfence(rec.OldPrimary)
	}
	e.EndRecovery(ctx, rec, err)
	e.shared().Update(ctx, fence, shared, rec, "")
	if err == nil {
		// Observe now: watchers see it in the tree, no longer fenced.
		if oerr := e.view.Observe(ctx); oerr != nil {
			e.view.Notify()
		}
	}
	return err
}

// fenceNote audits a fencing finding once: again only when it changes.
func (e *Engine) fenceNote(ctx context.Context, k dbpilot.InstanceKey, msg string, detail map[string]string) {
	e.mu.Lock()
	same := e.fenceNoted[k] == msg
	e.fenceNoted[k] = msg
	e.mu.Unlock()
	if !same {
		e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: e.cluster, Instance: k, Event: dbpilot.AuditFence, Message: msg, Detail: detail})
	}
}

// watchOldPrimary keeps a connection attempt open to the old primary of a
// failover until it answers, then makes it read_only and ends its client
// sessions. A hung primary (SIGSTOP, a stalled disk) accepts TCP
// connections and greets nobody: the attempt waits in its listen queue and
// is served the moment the server runs again, before serve's next poll —
// the earliest any SQL fence can act. A dead one refuses, and the attempt
// is retried every FenceRetry. It gives up after forget_after; the
// observations' fencing (FenceReturning) covers the rest. Acting directly
// (no watch loops) it does nothing.
func (e *Engine) watchOldPrimary(old dbpilot.InstanceKey) {
	e.env.Go(func(ctx context.Context) {
		started := e.env.Now()
		deadline := started.Add(e.set.ForgetAfter)
		for ctx.Err() == nil && e.env.Now().Before(deadline) {
			if !e.IsFenced(old) {
				return // rejoined, or forgotten
			}
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			n, done, err := e.fenceUnlessSince(actx, old, started)
			if err == nil {
				cancel()
				if done {
					return // the observations' fencing got there first
				}
				e.env.Audit(ctx, dbpilot.AuditEvent{Cluster: e.cluster, Instance: old, Event: dbpilot.AuditFence,
					Message: fmt.Sprintf("old primary %s answers again: set read_only at once and ended %d client sessions", old, n)})
				return
			}
			cancel()
			sleepCtx(ctx, FenceRetry)
		}
	})
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// fenceNow takes writes away from an old primary that answers again,
// through the executor (Executor.Fence: sessions ended, semi-sync primary
// side off, read_only on, sessions ended again). Fencing is always
// allowed: no fencing token guards it. It returns how many sessions it
// ended.
func (e *Engine) fenceNow(ctx context.Context, old dbpilot.InstanceKey) (int, error) {
	return e.env.Executor(nil).Fence(ctx, old)
}

// fenceUnlessSince fences old (fenceNow) unless a fence of it ended after
// since — the time of the observation that found it writable, or the start
// of the watch for its return — which it then reports as done. Fences of
// one instance run one at a time. The watch of a returning old primary and
// the observations' fencing both find it when it answers again; without
// this the second fence would end, moments after the first, the sessions
// that connected to a server already read_only (a DBA's, looking at it).
// An observation taken after the last fence ended still fences again.
func (e *Engine) fenceUnlessSince(ctx context.Context, old dbpilot.InstanceKey, since time.Time) (n int, done bool, err error) {
	e.mu.Lock()
	if e.fencing == nil {
		e.fencing = map[dbpilot.InstanceKey]*sync.Mutex{}
		e.fenceDone = map[dbpilot.InstanceKey]time.Time{}
	}
	m := e.fencing[old]
	if m == nil {
		m = &sync.Mutex{}
		e.fencing[old] = m
	}
	e.mu.Unlock()
	m.Lock()
	defer m.Unlock()
	e.mu.Lock()
	last := e.fenceDone[old]
	e.mu.Unlock()
	if !since.IsZero() && last.After(since) {
		return 0, true, nil
	}
	n, err = e.fenceNow(ctx, old)
	if err == nil {
		e.mu.Lock()
		e.fenceDone[old] = e.env.Now()
		e.mu.Unlock()
	}
	return n, false, err
}

// fenceStandby sends read_only to the old primary of a failover about to
// run, on the idle session the liveness adapter keeps on it (the
// executor's Standby): a primary that hangs (SIGSTOP, a frozen host) and
// later runs again reads that statement first, before any client can
// connect, so it is read_only within moments instead of after serve's next
// connection is greeted. A primary that is really gone fails the statement
// at once. The outcome is audited when it comes; fenceNow still ends the
// sessions of a primary that answers again (watchOldPrimary).
func (e *Engine) fenceStandby(ctx context.Context, rec *dbpilot.Recovery) {
	exec := e.env.Executor(nil)
	if exec.Standby == nil || rec.OldPrimary.IsZero() {
		return
	}
	done := exec.FenceStandby(rec.OldPrimary)
	if done == nil {
		e.log().Info("no standby session on the old primary: it is fenced when it answers again", "cluster", e.cluster, "instance", rec.OldPrimary.String())
		return
	}
	outcome := func(bg context.Context) {
		select {
		case err := <-done:
			if err == nil {
				e.env.Audit(bg, dbpilot.AuditEvent{Cluster: e.cluster, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditFence,
					Message: fmt.Sprintf("old primary %s ran the read_only sent on serve's standby session during the failover", rec.OldPrimary)})
			} else {
				e.log().Info("read_only sent on the standby session did not run (a primary that is gone closes it)", "cluster", e.cluster, "instance", rec.OldPrimary.String(), "err", err)
			}
		case <-bg.Done():
		}
	}
	if !e.env.Go(outcome) {
		// Acting directly: nobody waits for the outcome, which the
		// channel receives in any case.
		go outcome(context.WithoutCancel(ctx))
	}
}
