package recovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Semi-sync during a failover or a switchover.
//
// DBAs who want any server to be promotable enable both semi-sync sides on
// every server (rpl_semi_sync_master_enabled and rpl_semi_sync_slave_enabled).
// A server whose primary side is on and that has no semi-sync replica of its
// own makes each transaction it writes to its binary log (its applier's too,
// with log_slave_updates) wait rpl_semi_sync_master_timeout for an
// acknowledgement nobody sends, from the moment the side is turned on until
// the first timeout makes it fall back to asynchronous (with
// rpl_semi_sync_master_wait_no_slave=ON, the default). In a recovery
// that wait would be paid by the candidate applying its relay log and by
// the STOP SLAVE of every replica moved (it waits for the applier). So a run:
//
//  1. turns the primary side off, in parallel, on the candidate and on every
//     replica it will move that has it on without a semi-sync replica
//     connected (quietPrimarySides), before anything else;
//  2. gives the new primary its primary side when the cluster uses semi-sync
//     (Options.SemiSync) or it had the side on before (the DBA's setting), and
//     the replica side it had when it had both (takePrimaryRole); the moved
//     replicas get their replica side on. Writes are acknowledged only once a
//     semi-sync replica has them: the new primary never runs with the side
//     off;
//  3. once the run succeeded, turns the primary side back on at each
//     quieted replica that replicates from the new primary and has applied
//     the new primary's position (restorePrimarySides); a run that fails
//     gives every quieted server its side back at once
//     (giveBackPrimarySides).
//
// Turning the side back on at a replica makes its applier wait
// rpl_semi_sync_master_timeout once, as when the DBA turned it on: the
// writes on the new primary do not wait, since replicas acknowledge from
// their IO threads, and a later recovery turns the side off first.

// quietedServer is a server whose semi-sync primary side a run turned off.
type quietedServer struct {
	key     dbpilot.InstanceKey
	replica bool // its replica side, to keep when the primary side goes back on
	// restore: turn the side back on after a successful run (a replica
	// moved under the new primary; a demoted primary that had both sides).
	// Every quieted server gets it back when the run fails.
	restore bool
}

// quietPrimarySides turns the semi-sync primary side off on the candidate
// cand (inspected) and, in parallel, on every server of others, where it is
// on with no semi-sync replica connected. An unreachable server of others is
// skipped (the step that moves it reports it); a failure on one of them is
// audited. Only the candidate's failure is returned.
func (r *execRun) quietPrimarySides(ctx context.Context, cand *dbpilot.Instance, others []dbpilot.InstanceKey) error {
	r.candSemi = cand.SemiSync
	var candErr error
	execEach(others, func() { candErr = r.quietSemiSyncPrimary(ctx, cand, true) }, func(k dbpilot.InstanceKey) {
		inst, err := r.e.Ctl.Inspect(ctx, k)
		if err != nil {
			return
		}
		if err := r.quietSemiSyncPrimary(ctx, inst, false); err != nil {
			r.audit(ctx, k, dbpilot.AuditSemiSync, fmt.Sprintf("could not turn the semi-sync primary side of %s off (%v): moving it may wait up to %s", k, err, inst.SemiSync.PrimaryTimeout), nil)
		}
	})
	return candErr
}

// quietSemiSyncPrimary turns inst's semi-sync primary side off while no
// semi-sync replica is connected to it, and records it for
// restorePrimarySides or giveBackPrimarySides.
func (r *execRun) quietSemiSyncPrimary(ctx context.Context, inst *dbpilot.Instance, candidate bool) error {
	ss := inst.SemiSync
	if !ss.PrimaryEnabled || ss.PrimaryClients > 0 {
		return nil
	}
	if err := r.e.Ctl.SetSemiSync(ctx, inst.Key, false, ss.ReplicaEnabled); err != nil {
		return err
	}
	r.quiet(inst.Key, ss.ReplicaEnabled, !candidate)
	msg := fmt.Sprintf("%s had its semi-sync primary side on with no semi-sync replica: turned off until it has replicas, so that what it applies does not wait %s for an acknowledgement", inst.Key, ss.PrimaryTimeout)
	if !candidate {
		msg = fmt.Sprintf("%s had its semi-sync primary side on with no semi-sync replica: turned off until it replicates from the new primary, so that its applier (and STOP SLAVE with it) does not wait %s for an acknowledgement", inst.Key, ss.PrimaryTimeout)
	}
	r.audit(ctx, inst.Key, dbpilot.AuditSemiSync, msg, map[string]string{"timeout": ss.PrimaryTimeout.String()})
	return nil
}

// quiet records a server whose primary side the run turned off.
func (r *execRun) quiet(key dbpilot.InstanceKey, replica, restore bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quieted = append(r.quieted, quietedServer{key: key, replica: replica, restore: restore})
}

// primarySide reports whether the new primary gets the semi-sync primary
// side: the cluster uses semi-sync, or the candidate had it on before the run.
func (r *execRun) primarySide() bool { return r.opt.SemiSync || r.candSemi.PrimaryEnabled }

// newPrimaryReplicaSide reports whether the new primary keeps its
// semi-sync replica side: only a candidate that had both sides on (a DBA's
// "any server can be promoted" setting) keeps it.
func (r *execRun) newPrimaryReplicaSide() bool {
	return r.candSemi.PrimaryEnabled && r.candSemi.ReplicaEnabled
}

// giveBackPrimarySides turns the primary side back on, at once, at every
// server the run quieted: the run failed, and the servers are where they
// were (or, in a rolled back switchover, below the old primary again or
// still below the candidate). It outlives a cancelled ctx; failures are
// audited.
func (r *execRun) giveBackPrimarySides(ctx context.Context) {
	r.mu.Lock()
	qs := append([]quietedServer(nil), r.quieted...)
	r.quieted = nil
	r.mu.Unlock()
	if len(qs) == 0 {
		return
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	execEach(qs, nil, func(q quietedServer) {
		if err := r.e.Ctl.SetSemiSync(gctx, q.key, true, q.replica); err != nil {
			r.audit(ctx, q.key, dbpilot.AuditSemiSync, fmt.Sprintf("could not turn the semi-sync primary side of %s back on (%v); turn it on by hand: SET GLOBAL rpl_semi_sync_master_enabled=ON", q.key, err), nil)
			return
		}
		r.audit(ctx, q.key, dbpilot.AuditSemiSync, fmt.Sprintf("%s: semi-sync primary side on again, as before the %s", q.key, r.verb), nil)
	})
}

// restorePrimarySides turns the primary side back on, in parallel, at
// every server the run quieted for a later restore that now replicates
// from primary (neither the new primary nor lost), once it has applied
// primary's position as read here (each waits at most RepointVerify). A
// server that does not get there keeps the side off, audited with what to
// do.
func (r *execRun) restorePrimarySides(ctx context.Context, primary dbpilot.InstanceKey) {
	r.mu.Lock()
	var qs []quietedServer
	for _, q := range r.quieted {
		if q.restore && !q.key.Equal(primary) && !slices.ContainsFunc(r.rec.LostReplicas, q.key.Equal) {
			qs = append(qs, q)
		}
	}
	r.quieted = nil
	r.mu.Unlock()
	if len(qs) == 0 {
		return
	}
	p, err := r.e.Ctl.Inspect(ctx, primary)
	if err != nil {
		for _, q := range qs {
			r.leftOff(ctx, q.key, fmt.Sprintf("the new primary %s could not be inspected (%v)", primary, err))
		}
		return
	}
	target := execPrimaryPosition(p)
	execEach(qs, nil, func(q quietedServer) { r.restorePrimarySide(ctx, q.key, primary, target) })
}

// restorePrimarySide waits for key to apply target, then turns its
// primary side on, keeping its replica side as it is now.
func (r *execRun) restorePrimarySide(ctx context.Context, key, primary dbpilot.InstanceKey, target string) {
	start := r.now()
	inst, err := r.e.Ctl.Inspect(ctx, key)
	if err != nil {
		r.leftOff(ctx, key, "unreachable: "+err.Error())
		return
	}
	wait, err := execWaitTarget(inst, target)
	if err != nil {
		r.leftOff(ctx, key, "compare GTID positions: "+err.Error())
		return
	}
	if err := r.waitApplied(ctx, key, wait, r.opt.RepointVerify, "-", false); err != nil {
		r.leftOff(ctx, key, fmt.Sprintf("it did not apply %s's position %s within %s (%v)", primary, target, r.opt.RepointVerify, err))
		return
	}
	if err := r.e.Ctl.SetSemiSync(ctx, key, true, inst.SemiSync.ReplicaEnabled); err != nil {
		r.leftOff(ctx, key, err.Error())
		return
	}
	r.audit(ctx, key, dbpilot.AuditSemiSync, fmt.Sprintf("%s replicates from %s and applied its position: semi-sync primary side on again, as before the %s", key, primary, r.verb),
		map[string]string{"position": target, "elapsed_ms": execMillis(r.since(start))})
}

// leftOff audits a quieted server whose primary side stays off.
func (r *execRun) leftOff(ctx context.Context, key dbpilot.InstanceKey, why string) {
	r.audit(ctx, key, dbpilot.AuditSemiSync, fmt.Sprintf("%s keeps its semi-sync primary side off: %s; turn it on once it has caught up: SET GLOBAL rpl_semi_sync_master_enabled=ON", key, why),
		map[string]string{"reason": why})
}
