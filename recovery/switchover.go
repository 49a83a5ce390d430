package recovery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Switchover replaces a healthy primary by the plan's candidate. Before
// anything changes the candidate must be ready: replicating from the old
// primary and able to apply what it has left within Opt.MaxLag, its
// applier progressing (precheckApplier); else it is refused, nothing
// changed. Then the old primary turns read-only and, after Opt.KillGrace,
// its client connections are killed; the candidate reaches the old
// primary's final position within Opt.DrainTimeout of read_only, else the
// old primary is made writable again, nothing else changed, and the
// switchover fails with one message naming switchover.drain_timeout; the
// candidate takes the primary role still read-only, the other replicas and
// the old primary (read-only) start replicating from it, and only then,
// with a semi-sync acknowledger connected, it becomes writable: its first
// commits never wait rpl_semi_sync_master_timeout for a replica that is
// not there yet. The replicas are verified after. The write-unavailable
// window, from read_only on the old primary to the new one writable, is
// audited (detail "write_unavailable_ms" of "promote" and "done").
func (e *Executor) Switchover(ctx context.Context, p *Plan, rec *dbpilot.Recovery) error {
	r := e.newPlanRun(p, "switchover", rec)
	detail := map[string]string{}
	return r.finish(ctx, r.switchover(ctx, p, detail), detail)
}

// execPrimaryPosition is what a primary has written: MariaDB gtid_binlog_pos,
// MySQL gtid_executed.
func execPrimaryPosition(inst *dbpilot.Instance) string {
	if inst.Flavor.IsMySQLFamily() {
		return inst.GTID.Executed
	}
	return inst.GTID.BinlogPos
}

// execWaitTarget is what to pass WaitForGTID for the candidate to reach target:
// on MariaDB only the domains it has not reached (MASTER_GTID_WAIT waits on
// gtid_slave_pos and would never see a domain held only by its binlog).
func execWaitTarget(cand *dbpilot.Instance, target string) (string, error) {
	if cand.Flavor.IsMySQLFamily() {
		return target, nil
	}
	have, err := posMax(cand.GTID.BinlogPos, cand.GTID.SlavePos)
	if err != nil {
		return "", err
	}
	return posRemaining(target, have)
}

// switchover runs the switchover's phases: check the candidate replicates
// from the old primary, stop writes on the old primary, let the candidate
// reach its final position, promote the candidate, then repoint the
// replicas and demote the old primary. A failure after writes stopped
// rolls back.
func (r *execRun) switchover(ctx context.Context, p *Plan, detail map[string]string) error {
	if err := r.validate(p); err != nil {
		return err
	}
	old, cand, candChannel, err := r.switchoverPreflight(ctx, p)
	if err != nil {
		return err
	}
	// A switchover that fails gives every server quieted its semi-sync
	// primary side back (the old primary's too, when it was attached to the
	// candidate before the rollback).
	defer func() {
		if r.rec.NewPrimary.IsZero() {
			r.giveBackPrimarySides(ctx)
		}
	}()
	if err := r.quietPrimarySides(ctx, cand, otherThan(p.Repoint, p.Candidate, p.OldPrimary)); err != nil {
		return err
	}

	// From here on writes are refused: the window is measured from t0,
	// and the drain must end by drainBy.
	t0 := r.now()
	drainBy := t0.Add(r.opt.DrainTimeout)
	if err := r.stopWrites(ctx, p.OldPrimary, drainBy); err != nil {
		return r.rollbackSwitchover(ctx, p, t0, err, false, false)
	}
	if err := r.reachFinalPosition(ctx, p, candChannel, drainBy); err != nil {
		var dt *drainTimeout
		if errors.As(err, &dt) {
			return r.rollbackDrain(ctx, p, t0, candChannel, dt.target)
		}
		return r.rollbackSwitchover(ctx, p, t0, err, false, false)
	}
	if err := r.takePrimaryRole(ctx, p.Candidate); err != nil {
		return r.rollbackSwitchover(ctx, p, t0, err, true, false)
	}
	joined := r.attachAll(ctx, p, old)
	r.waitAcknowledger(ctx, p.Candidate, joined)
	if err := r.promoteCandidate(ctx, p, t0, detail); err != nil {
		return r.rollbackSwitchover(ctx, p, t0, err, true, joined.hasFormer())
	}
	r.confirmAll(ctx, p.Candidate, p.OldPrimary, joined)
	r.restorePrimarySides(ctx, p.Candidate)
	return nil
}

// joinedSet is what attachAll attached to the candidate before it became
// writable.
type joinedSet []joined

type joined struct {
	key     dbpilot.InstanceKey
	channel string
	former  bool              // the old primary
	detail  map[string]string // the former primary's repoint detail
	start   time.Time
}

func (js joinedSet) hasFormer() bool {
	for _, j := range js {
		if j.former {
			return true
		}
	}
	return false
}

// attachAll points the other replicas and the old primary at the candidate
// in parallel; each that fails is lost.
func (r *execRun) attachAll(ctx context.Context, p *Plan, old *dbpilot.Instance) joinedSet {
	var (
		mu  sync.Mutex
		out joinedSet
	)
	add := func(j joined) { mu.Lock(); out = append(out, j); mu.Unlock() }
	former := func() {
		start := r.now()
		detail, reason := r.demoteAttach(ctx, old, p.Candidate)
		if reason != "" {
			r.lose(ctx, p.OldPrimary, reason)
			return
		}
		add(joined{key: p.OldPrimary, former: true, detail: detail, start: start})
	}
	execEach(otherThan(p.Repoint, p.Candidate, p.OldPrimary), former, func(k dbpilot.InstanceKey) {
		start := r.now()
		channel, reason := r.attach(ctx, k, p.Candidate, p.OldPrimary)
		if reason != "" {
			r.lose(ctx, k, reason)
			return
		}
		add(joined{key: k, channel: channel, start: start})
	})
	return out
}

// execAckWait bounds the wait for a semi-sync acknowledger before the
// candidate becomes writable; execAckPoll is how often it looks.
const (
	execAckWait = time.Second
	execAckPoll = 10 * time.Millisecond
)

// waitAcknowledger waits, on a semi-sync cluster, until a replica is
// connected to the candidate as a semi-sync replica (or execAckWait passed:
// the candidate is made writable anyway, and the audit says its first
// commits may wait for an acknowledgement).
func (r *execRun) waitAcknowledger(ctx context.Context, cand dbpilot.InstanceKey, js joinedSet) {
	if !r.primarySide() || len(js) == 0 {
		return
	}
	deadline := r.now().Add(execAckWait)
	for {
		inst, err := r.e.Ctl.Inspect(ctx, cand)
		if err == nil && inst.SemiSync.PrimaryClients > 0 {
			return
		}
		if r.now().After(deadline) {
			r.audit(ctx, cand, dbpilot.AuditRepoint, fmt.Sprintf("no semi-sync replica connected to %s within %s; it becomes writable anyway, and its first commits may wait rpl_semi_sync_master_timeout for an acknowledgement", cand, execAckWait), nil)
			return
		}
		if err := r.sleep(ctx, execAckPoll); err != nil {
			return
		}
	}
}

// confirmAll verifies, in parallel, every replica attached before the
// candidate became writable; each that does not replicate is lost.
func (r *execRun) confirmAll(ctx context.Context, primary, oldPrimary dbpilot.InstanceKey, js joinedSet) {
	execEach(js, nil, func(j joined) {
		reason := ""
		if j.former {
			reason = r.demoteConfirm(ctx, j.key, primary, j.detail, j.start)
		} else {
			reason = r.confirmRepoint(ctx, j.key, j.channel, primary, oldPrimary, j.start)
		}
		if reason != "" {
			r.lose(ctx, j.key, reason)
		}
	})
}

// preflightConnectWait is how long the preflight waits for a candidate
// whose IO thread is still connecting.
const preflightConnectWait = 3 * time.Second

// switchoverPreflight checks, before anything changes, that the old primary
// and the candidate are reachable, that the candidate replicates from the
// old primary in good health, and that it is ready (precheckApplier: it
// can apply what it has left within Opt.MaxLag, and its applier
// progresses). It returns the old primary and the name of the candidate's
// channel from it.
func (r *execRun) switchoverPreflight(ctx context.Context, p *Plan) (old, cand *dbpilot.Instance, channel string, err error) {
	ctl := r.e.Ctl
	oldKey, candKey := p.OldPrimary, p.Candidate
	old, err = ctl.Inspect(ctx, oldKey)
	if err != nil {
		return nil, nil, "", dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: old primary %s unreachable, nothing changed (use failover for a dead primary)", oldKey)
	}
	cand, err = ctl.Inspect(ctx, candKey)
	if err != nil {
		return nil, nil, "", dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: candidate %s unreachable, nothing changed", candKey)
	}
	ch := cand.Channel(oldKey)
	// A channel just started (IO Connecting or Preparing) gets a moment to
	// connect rather than a refusal.
	for deadline := r.now().Add(preflightConnectWait); ch != nil && ch.Starting() && r.now().Before(deadline); ch = cand.Channel(oldKey) {
		if err = r.sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, nil, "", err
		}
		if cand, err = ctl.Inspect(ctx, candKey); err != nil {
			return nil, nil, "", dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: candidate %s unreachable, nothing changed", candKey)
		}
	}
	if ch != nil && ch.IORunning == dbpilot.IORunning {
		// A receiving candidate with a backlog is refused for that, its
		// SQL thread stopped or not.
		rd, err := r.precheckApplier(ctx, cand, oldKey)
		if err != nil {
			return nil, nil, "", dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: candidate %s unreachable, nothing changed", candKey)
		}
		if rd.Refusal != "" {
			return nil, nil, "", dbpilot.Errorf(dbpilot.ECONFLICT, "switchover: candidate %s is not ready, nothing changed: %s; let it catch up, or choose another candidate", candKey, rd.Refusal)
		}
	}
	if ch == nil || !ch.Healthy() {
		state := "no channel from it"
		if ch != nil {
			state = execDescribeChannel(ch)
		}
		return nil, nil, "", dbpilot.Errorf(dbpilot.EINVALID, "switchover: candidate %s does not replicate from %s (%s), nothing changed", candKey, oldKey, state)
	}
	return old, cand, ch.Name, nil
}

// stopWrites makes the old primary read-only and, after Opt.KillGrace for
// writers to finish (no later than drainBy), kills its client connections.
func (r *execRun) stopWrites(ctx context.Context, oldKey dbpilot.InstanceKey, drainBy time.Time) error {
	ctl := r.e.Ctl
	if err := ctl.SetReadOnly(ctx, oldKey, true); err != nil {
		return err
	}
	grace := max(0, min(r.opt.KillGrace, r.until(drainBy)))
	r.audit(ctx, oldKey, dbpilot.AuditReadOnly, fmt.Sprintf("%s is read-only; waiting %s for writers to finish", oldKey, grace), nil)
	if err := r.sleep(ctx, grace); err != nil {
		return err
	}
	killed, err := ctl.KillClientConnections(ctx, oldKey)
	if err != nil {
		return err
	}
	r.audit(ctx, oldKey, dbpilot.AuditKill, fmt.Sprintf("killed %d client connection(s) of %s", killed, oldKey), map[string]string{"killed": strconv.Itoa(killed)})
	return nil
}

// drainTimeout is reachFinalPosition's error when the candidate had not
// reached target by the drain's deadline.
type drainTimeout struct{ target string }

func (e *drainTimeout) Error() string { return "drain timed out short of " + e.target }

// reachFinalPosition waits, until deadline, for the candidate to reach the
// old primary's final position through its channel candChannel, re-reading
// the position after each wait in case a write slipped in. Past the
// deadline the error is a *drainTimeout.
func (r *execRun) reachFinalPosition(ctx context.Context, p *Plan, candChannel string, deadline time.Time) error {
	ctl := r.e.Ctl
	oldKey, candKey := p.OldPrimary, p.Candidate
	var target string
	for {
		o, err := ctl.Inspect(ctx, oldKey)
		if err != nil {
			return err
		}
		pos := execPrimaryPosition(o)
		if pos == target {
			break
		}
		target = pos
		c, err := ctl.Inspect(ctx, candKey)
		if err != nil {
			return err
		}
		wait, err := execWaitTarget(c, target)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions")
		}
		left := r.until(deadline)
		if left <= 0 && wait != "" {
			return &drainTimeout{target: target}
		}
		if err := r.waitApplied(ctx, candKey, wait, left, candChannel, true); err != nil {
			if ctx.Err() == nil && dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL && !r.now().Before(deadline) {
				return &drainTimeout{target: target}
			}
			return err
		}
	}
	r.audit(ctx, candKey, dbpilot.AuditCatchUp, fmt.Sprintf("%s reached %s's position %s", candKey, oldKey, execOrNone(target)), map[string]string{"target": target})
	return nil
}

// promoteCandidate promotes the candidate and audits the write-unavailable
// window, from t0 to the candidate writable (also in detail). When the
// promotion fails the run has no new primary.
func (r *execRun) promoteCandidate(ctx context.Context, p *Plan, t0 time.Time, detail map[string]string) error {
	oldKey, candKey := p.OldPrimary, p.Candidate
	writable, err := r.makeWritable(ctx, candKey, "switchover")
	if err != nil {
		r.rec.NewPrimary = dbpilot.InstanceKey{}
		return err
	}
	window := writable.Sub(t0)
	detail["write_unavailable_ms"] = execMillis(window)
	r.audit(ctx, candKey, dbpilot.AuditWriteWindow, fmt.Sprintf("writes were refused for %s (read_only on %s to %s writable)", window.Round(time.Millisecond), oldKey, candKey),
		map[string]string{"write_unavailable_ms": execMillis(window)})
	return nil
}

// rollbackSwitchover undoes a switchover that failed with cause after
// writes stopped at t0: the old primary becomes writable again (first
// leaving the candidate's replication when oldAttached) and, when
// candReset (the candidate lost its channel), the candidate, read-only,
// replicates from it again; replicas already attached to the candidate stay
// below it. The rollback outlives a cancelled ctx. The error returned
// carries cause's code and says whether the rollback worked.
func (r *execRun) rollbackSwitchover(ctx context.Context, p *Plan, t0 time.Time, cause error, candReset, oldAttached bool) error {
	ctl := r.e.Ctl
	oldKey, candKey := p.OldPrimary, p.Candidate
	rctx := context.WithoutCancel(ctx)
	var errs []error
	if oldAttached {
		if err := ctl.StopReplica(rctx, oldKey); err != nil {
			errs = append(errs, err)
		} else if err := ctl.ResetReplicaAll(rctx, oldKey); err != nil {
			errs = append(errs, err)
		}
	}
	if candReset {
		// The candidate lost its channel: put it back under the old primary.
		if err := ctl.SetReadOnly(rctx, candKey, true); err != nil {
			errs = append(errs, err)
		}
		if err := ctl.ChangeSource(rctx, candKey, oldKey, dbpilot.ChangeSourceOptions{}); err != nil {
			errs = append(errs, err)
		} else if err := ctl.StartReplica(rctx, candKey); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ctl.SetReadOnly(rctx, oldKey, false); err != nil {
		errs = append(errs, err)
	}
	d := map[string]string{"write_unavailable_ms": execMillis(r.since(t0))}
	if len(errs) > 0 {
		rerr := errors.Join(errs...)
		d["error"] = rerr.Error()
		r.audit(ctx, oldKey, dbpilot.AuditRollback, fmt.Sprintf("rollback incomplete: %v", rerr), d)
		return dbpilot.WrapError(dbpilot.ErrorCode(cause), cause, "switchover to %s failed and the rollback failed too (%v); check %s and %s by hand", candKey, rerr, oldKey, candKey)
	}
	r.audit(ctx, oldKey, dbpilot.AuditRollback, fmt.Sprintf("%s is writable again; %s still replicates from it", oldKey, candKey), d)
	return dbpilot.WrapError(dbpilot.ErrorCode(cause), cause, "switchover to %s failed; rolled back, %s is the primary again", candKey, oldKey)
}

// rollbackDrain undoes a switchover whose candidate had not reached target
// (through its channel candChannel) when Opt.DrainTimeout ran out, writes
// refused since t0: the old primary becomes writable again; nothing else
// had changed. The rollback outlives a cancelled ctx. The error, the
// rollback's audit and so the failure's say the same line, naming
// switchover.drain_timeout and what the candidate had left.
func (r *execRun) rollbackDrain(ctx context.Context, p *Plan, t0 time.Time, candChannel, target string) error {
	oldKey, candKey := p.OldPrimary, p.Candidate
	rctx := context.WithoutCancel(ctx)
	err := r.e.Ctl.SetReadOnly(rctx, oldKey, false)
	d := map[string]string{"write_unavailable_ms": execMillis(r.since(t0)), "drain_timeout_ms": execMillis(r.opt.DrainTimeout), "target": target}
	msg := fmt.Sprintf("switchover: %s had not applied %s's last transactions when %s (%s) ran out%s", candKey, oldKey, DrainTimeoutSetting, r.opt.DrainTimeout, r.describeLeft(rctx, candKey, candChannel, target))
	if err != nil {
		d["error"] = err.Error()
		msg += fmt.Sprintf("; the rollback failed too: check %s by hand, it may still be read_only", oldKey)
		werr := dbpilot.WrapError(dbpilot.EUNAVAIL, err, "%s", msg)
		r.audit(ctx, oldKey, dbpilot.AuditRollback, werr.Error(), d)
		return werr
	}
	msg += fmt.Sprintf("; rolled back: %s is writable again, nothing else changed", oldKey)
	r.audit(ctx, oldKey, dbpilot.AuditRollback, msg, d)
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", msg)
}

// demoteAttach makes the former primary (read-only already) replicate from
// the new one. It returns the repoint's audit detail, or why it failed.
func (r *execRun) demoteAttach(ctx context.Context, old *dbpilot.Instance, primary dbpilot.InstanceKey) (map[string]string, string) {
	ctl := r.e.Ctl
	key := old.Key
	if err := ctl.StopReplica(ctx, key); err != nil {
		return nil, "stop replication: " + err.Error()
	}
	detail := map[string]string{"source": primary.String()}
	if pos, ok := ctl.(dbpilot.ReplicaPositioner); ok && old.Flavor == dbpilot.FlavorMariaDB {
		// Its own transactions are in its binlog, not in gtid_slave_pos.
		now, err := ctl.Inspect(ctx, key)
		if err != nil {
			return nil, "unreachable: " + err.Error()
		}
		sp, err := posMax(now.GTID.BinlogPos, now.GTID.SlavePos)
		if err != nil {
			return nil, "read GTID position: " + err.Error()
		}
		if sp != now.GTID.SlavePos {
			if err := pos.SetReplicaPosition(ctx, key, sp); err != nil {
				return nil, "set replica position: " + err.Error()
			}
			detail["slave_pos"] = sp
		}
	}
	if err := ctl.ChangeSource(ctx, key, primary, dbpilot.ChangeSourceOptions{}); err != nil {
		return nil, "change source: " + err.Error()
	}
	// Its primary side goes off: no acknowledgement comes to a replica.
	// Given back if the switchover rolls back, and after it when it had
	// both sides on (the DBA's setting).
	if err := ctl.SetSemiSync(ctx, key, false, r.primarySide() || old.SemiSync.ReplicaEnabled); err != nil {
		return nil, "set semi-sync: " + err.Error()
	}
	if old.SemiSync.PrimaryEnabled {
		r.quiet(key, old.SemiSync.ReplicaEnabled, old.SemiSync.ReplicaEnabled)
	}
	if err := ctl.StartReplica(ctx, key); err != nil {
		return nil, "start replication: " + err.Error()
	}
	return detail, ""
}

// demoteConfirm verifies the former primary attached by demoteAttach and
// audits it; it returns why it failed, or "".
func (r *execRun) demoteConfirm(ctx context.Context, key, primary dbpilot.InstanceKey, detail map[string]string, start time.Time) string {
	if reason := r.verify(ctx, key, "", primary); reason != "" {
		return reason
	}
	detail["elapsed_ms"] = execMillis(r.since(start))
	r.audit(ctx, key, dbpilot.AuditRepoint, fmt.Sprintf("former primary %s replicates from %s (read-only)", key, primary), detail)
	return ""
}
