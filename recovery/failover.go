package recovery

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Failover applies a failover plan: the candidate catches up from replicas
// that received more in some domains and applies everything it received,
// is promoted (replication removed, writable, semi-sync primary side on
// when Opt.SemiSync says so or it had it on before), and the replicas of
// p.Repoint are moved under it in parallel, each verified to replicate. A
// replica that cannot be moved, and every replica of p.Lost, goes to
// rec.LostReplicas with the reason audited.
//
// Semi-sync primary sides on servers without semi-sync replicas are turned
// off first, in parallel, so that no step waits rpl_semi_sync_master_timeout,
// and turned back on at the replicas once they follow the new primary and
// have caught up (see quietPrimarySides); a failover that fails turns them
// back on at once.
//
// rec, created by the caller, receives NewPrimary (set once the candidate is
// writable, cleared before), LostReplicas (this run's), Success, Error and
// Ended; Started is set when zero. Every step is audited ("apply-relay-log", "catch-up",
// "promote", "repoint", "lost", then "done" or "failed").
//
// When anything fails before the candidate is writable, the error has code
// EUNAVAIL and says which step failed, with the cluster left with no
// primary: the caller may plan again without this candidate.
func (e *Executor) Failover(ctx context.Context, p *Plan, rec *dbpilot.Recovery) error {
	r := e.newPlanRun(p, "failover", rec)
	err := r.failover(ctx, p)
	if err != nil {
		r.giveBackReceivers(ctx)
		r.giveBackPrimarySides(ctx)
	}
	return r.finish(ctx, err, nil)
}

// notPromoted is a failure before the candidate became writable.
func (r *execRun) notPromoted(p *Plan, step string, err error) error {
	return dbpilot.WrapError(dbpilot.EUNAVAIL, err,
		"failover: %s failed on the way to promote %s; no replica promoted, replicas still point at the dead primary %s (plan again without this candidate)",
		step, p.Candidate, p.OldPrimary)
}

// failover runs the failover's phases: record the plan's lost replicas,
// quiet the semi-sync primary sides, apply the candidate's relay log, catch
// up from other replicas, promote, repoint the replicas, then restore the
// primary sides quieted. A failure before the promotion is notPromoted.
func (r *execRun) failover(ctx context.Context, p *Plan) error {
	if err := r.validate(p); err != nil {
		return err
	}
	ctl := r.e.Ctl
	for _, l := range p.Lost {
		r.lose(ctx, l.Key, l.Reason)
	}
	r.stopReceivers(ctx, p)
	cand, err := ctl.Inspect(ctx, p.Candidate)
	if err != nil {
		return r.notPromoted(p, "inspect candidate", err)
	}
	if err := r.quietPrimarySides(ctx, cand, failoverMoved(p)); err != nil {
		return r.notPromoted(p, "turn the candidate's semi-sync primary side off", err)
	}
	if err := r.applyRelayLog(ctx, p, cand); err != nil {
		return r.notPromoted(p, "apply relay log", err)
	}
	for _, cu := range p.CatchUp {
		if err := r.catchUp(ctx, p, cu); err != nil {
			return r.notPromoted(p, "catch-up from "+cu.From.String(), err)
		}
	}
	if _, err := r.promote(ctx, p.Candidate, "failover"); err != nil {
		return r.notPromoted(p, "promote", err)
	}
	// With the semi-sync primary side on, the first writes wait for the
	// first replica attached below (milliseconds: no replica's STOP SLAVE
	// waits for its applier any more), never for a write no replica has.
	r.repointAll(ctx, p.Candidate, p.OldPrimary, p.Repoint, nil)
	r.restorePrimarySides(ctx, p.Candidate)
	return nil
}

// failoverMoved lists the servers a failover moves or reads from besides
// the candidate: the replicas to repoint and the catch-up sources.
func failoverMoved(p *Plan) []dbpilot.InstanceKey {
	keys := slices.Clone(p.Repoint)
	for _, cu := range p.CatchUp {
		if !slices.ContainsFunc(keys, cu.From.Equal) {
			keys = append(keys, cu.From)
		}
	}
	return otherThan(keys, p.Candidate, p.OldPrimary)
}

// applyRelayLog waits for the candidate to apply everything it received
// from the old primary. It runs before any catch-up, because CHANGE MASTER
// deletes the relay log. The IO thread may keep retrying the dead primary
// meanwhile; that is harmless.
func (r *execRun) applyRelayLog(ctx context.Context, p *Plan, cand *dbpilot.Instance) error {
	start := r.now()
	key := p.Candidate
	ch := execSourceChannel(cand, p.OldPrimary)
	var chans []dbpilot.ReplicationChannel
	if ch != nil {
		chans = []dbpilot.ReplicationChannel{*ch}
	} else {
		chans = cand.Channels
	}
	var target, received string
	var err error
	if cand.Flavor.IsMySQLFamily() {
		target, received, err = relayLogTargetMySQL(key, cand, chans)
	} else {
		target, received, err = relayLogTargetMariaDB(key, cand, chans)
	}
	if err != nil {
		return err
	}
	detail := map[string]string{"received": received}
	if target == "" {
		r.audit(ctx, key, dbpilot.AuditApplyRelayLog, fmt.Sprintf("%s has applied everything it received (%s)", key, execOrNone(received)), detail)
		return nil
	}
	detail["waiting_for"] = target
	if slices.ContainsFunc(chans, func(c dbpilot.ReplicationChannel) bool { return !c.SQLRunning }) {
		if err := r.e.Ctl.StartReplica(ctx, key); err != nil {
			return err
		}
		detail["started_sql_thread"] = "true"
	}
	// Only the SQL thread matters: the IO thread keeps failing to reach the
	// dead primary.
	watch := "-" // several channels, none from the old primary: no check
	if ch != nil {
		watch = ch.Name
	}
	if err := r.waitApplied(ctx, key, target, r.opt.ApplyTimeout, watch, false); err != nil {
		return err
	}
	detail["elapsed_ms"] = execMillis(r.since(start))
	r.audit(ctx, key, dbpilot.AuditApplyRelayLog, fmt.Sprintf("%s applied its relay log up to %s", key, target), detail)
	return nil
}

// relayLogTargetMySQL returns what the MySQL candidate key received through
// chans (their Retrieved_Gtid_Set) and, when it has not executed all of it,
// the set to wait for ("" when nothing is left).
func relayLogTargetMySQL(key dbpilot.InstanceKey, cand *dbpilot.Instance, chans []dbpilot.ReplicationChannel) (target, received string, err error) {
	sets := make([]string, 0, len(chans))
	for _, c := range chans {
		if c.RetrievedGTIDSet != "" {
			sets = append(sets, c.RetrievedGTIDSet)
		}
	}
	received = strings.Join(sets, ",")
	if received != "" {
		set, err := gtid.ParseMySQLSet(received)
		if err != nil {
			return "", "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Retrieved_Gtid_Set of %s", key)
		}
		executed, err := gtid.ParseMySQLSet(cand.GTID.Executed)
		if err != nil {
			return "", "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "read gtid_executed of %s", key)
		}
		if missing := set.Subtract(executed); !missing.IsEmpty() {
			target = set.String()
		}
	}
	return target, received, nil
}

// relayLogTargetMariaDB returns what the MariaDB candidate key received
// through chans (the highest of their Gtid_IO_Pos) and the domains'
// positions of it that it has not applied yet ("" when none).
func relayLogTargetMariaDB(key dbpilot.InstanceKey, cand *dbpilot.Instance, chans []dbpilot.ReplicationChannel) (target, received string, err error) {
	ios := make([]string, 0, len(chans))
	for _, c := range chans {
		ios = append(ios, c.GTIDIOPos)
	}
	received, err = posMax(ios...)
	if err != nil {
		return "", "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Gtid_IO_Pos of %s", key)
	}
	// MASTER_GTID_WAIT waits on gtid_slave_pos: wait only for what the
	// candidate has not applied yet, or a domain it holds through its
	// own binlog alone would never be reached.
	have, err := posMax(cand.GTID.BinlogPos, cand.GTID.SlavePos)
	if err != nil {
		return "", "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "read GTID position of %s", key)
	}
	if target, err = posRemaining(received, have); err != nil {
		return "", "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions of %s", key)
	}
	return target, received, nil
}

// catchUp replicates the candidate from cu.From until it reaches cu.Until in
// the catch-up domains, ignoring every other domain (MariaDB), then removes
// that replication. Its phases: choose the domains, borrow the source's
// position in the ignored ones, replicate, restore the position.
func (r *execRun) catchUp(ctx context.Context, p *Plan, cu CatchUp) error {
	ctl := r.e.Ctl
	key := p.Candidate
	start := r.now()
	from, err := ctl.Inspect(ctx, cu.From)
	if err != nil {
		return err
	}
	cand, err := ctl.Inspect(ctx, key)
	if err != nil {
		return err
	}
	maria := cand.Flavor == dbpilot.FlavorMariaDB
	detail := map[string]string{"from": cu.From.String(), "until": cu.Until}
	until := cu.Until
	var ignore []uint32
	if maria && len(cu.Domains) > 0 {
		if until, ignore, err = catchUpDomains(cand, from, cu); err != nil {
			return err
		}
		detail["domains"] = execJoinDomains(cu.Domains)
		detail["ignore_domains"] = execJoinDomains(ignore)
	}
	if err := ctl.StopReplica(ctx, key); err != nil {
		return err
	}
	// The source refuses a replica ahead of it in any domain, ignored ones
	// included (see dbpilot.ReplicaPositioner): borrow its position there.
	var saved string
	pos, canPosition := ctl.(dbpilot.ReplicaPositioner)
	if maria && len(ignore) > 0 && canPosition {
		if saved, err = r.borrowPosition(ctx, pos, key, from, ignore, detail); err != nil {
			return err
		}
	}
	if err := r.replicateUntil(ctx, key, cu.From, ignore, until); err != nil {
		return err
	}
	if saved != "" {
		if err := r.restorePosition(ctx, pos, key, saved, ignore, detail); err != nil {
			return err
		}
	}
	detail["elapsed_ms"] = execMillis(r.since(start))
	r.audit(ctx, key, dbpilot.AuditCatchUp, fmt.Sprintf("%s caught up from %s to %s", key, cu.From, execOrNone(until)), detail)
	return nil
}

// catchUpDomains returns, for a MariaDB catch-up limited to cu.Domains, the
// position to wait for (cu.Until in those domains) and the domains to
// ignore: every other domain of the positions of the candidate, its
// channels, the source and cu.Until, sorted.
func catchUpDomains(cand, from *dbpilot.Instance, cu CatchUp) (until string, ignore []uint32, err error) {
	all, err := posDomains(cand.GTID.BinlogPos, cand.GTID.SlavePos, cand.GTID.CurrentPos,
		from.GTID.BinlogPos, from.GTID.SlavePos, from.GTID.CurrentPos, cu.Until)
	if err != nil {
		return "", nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "read GTID positions")
	}
	for _, c := range cand.Channels {
		ds, err := posDomains(c.GTIDIOPos)
		if err != nil {
			return "", nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Gtid_IO_Pos")
		}
		all = append(all, ds...)
	}
	for _, d := range all {
		if !slices.Contains(cu.Domains, d) && !slices.Contains(ignore, d) {
			ignore = append(ignore, d)
		}
	}
	slices.Sort(ignore)
	if until, err = posRestrict(cu.Until, cu.Domains); err != nil {
		return "", nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "read catch-up position %q", cu.Until)
	}
	return until, ignore, nil
}

// borrowPosition sets the stopped candidate's gtid_slave_pos, in the
// ignored domains where it is ahead of the source, to the source's
// gtid_binlog_pos. It returns the position it replaced, to restore after
// the catch-up, or "" when nothing needed borrowing.
func (r *execRun) borrowPosition(ctx context.Context, pos dbpilot.ReplicaPositioner, key dbpilot.InstanceKey, from *dbpilot.Instance, ignore []uint32, detail map[string]string) (string, error) {
	stopped, err := r.e.Ctl.Inspect(ctx, key)
	if err != nil {
		return "", err
	}
	temp, err := posBorrow(stopped.GTID.SlavePos, from.GTID.BinlogPos, ignore)
	if err != nil {
		return "", dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions")
	}
	if temp == stopped.GTID.SlavePos {
		return "", nil
	}
	if err := pos.SetReplicaPosition(ctx, key, temp); err != nil {
		return "", err
	}
	detail["slave_pos_saved"] = stopped.GTID.SlavePos
	detail["slave_pos_during_catch_up"] = temp
	return stopped.GTID.SlavePos, nil
}

// replicateUntil replicates key from source, ignoring the domains ignore,
// until it has applied until, then removes that replication.
func (r *execRun) replicateUntil(ctx context.Context, key, source dbpilot.InstanceKey, ignore []uint32, until string) error {
	ctl := r.e.Ctl
	if err := ctl.ChangeSource(ctx, key, source, dbpilot.ChangeSourceOptions{IgnoreDomains: ignore}); err != nil {
		return err
	}
	if err := ctl.StartReplica(ctx, key); err != nil {
		return err
	}
	if err := r.waitApplied(ctx, key, until, r.opt.ApplyTimeout, "", true); err != nil {
		return err
	}
	if err := ctl.StopReplica(ctx, key); err != nil {
		return err
	}
	return ctl.ResetReplicaAll(ctx, key)
}

// restorePosition puts back, in the ignored domains, the gtid_slave_pos
// borrowPosition saved, keeping the catch-up domains where the catch-up
// brought them.
func (r *execRun) restorePosition(ctx context.Context, pos dbpilot.ReplicaPositioner, key dbpilot.InstanceKey, saved string, ignore []uint32, detail map[string]string) error {
	after, err := r.e.Ctl.Inspect(ctx, key)
	if err != nil {
		return err
	}
	final, err := posReplace(after.GTID.SlavePos, saved, ignore)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions")
	}
	if err := pos.SetReplicaPosition(ctx, key, final); err != nil {
		return err
	}
	detail["slave_pos_restored"] = final
	return nil
}

func execJoinDomains(ds []uint32) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatUint(uint64(d), 10)
	}
	return strings.Join(s, ",")
}

// stopReceivers stops, in parallel, the IO threads of the candidate and of
// every replica the failover repoints, where the controller can stop them
// alone (dbpilot.ReceiverStopper): their source is dead, and an IO thread
// connected or connecting to a hung one (SIGSTOP) made each later STOP
// SLAVE wait seconds, the candidate's before its promotion and each
// replica's before it could follow — on a semi-sync cluster the new
// primary's first writes waited for both.
//
// A server whose applier (SQL thread) does not run keeps its IO thread: on
// MariaDB with GTID, a replica with both threads stopped discards its relay
// log at the next START SLAVE, and the candidate's applier is started to
// apply what it received. The appliers go on; a failure is only audited
// (the later STOP SLAVE stops the thread anyway). The servers stopped are
// remembered, so that a failover that fails before the promotion starts
// their IO threads again (giveBackReceivers): a replica left with a stopped
// IO thread would cast no vote on its source any more.
func (r *execRun) stopReceivers(ctx context.Context, p *Plan) {
	rs, ok := r.e.Ctl.(dbpilot.ReceiverStopper)
	if !ok {
		return
	}
	keys := append([]dbpilot.InstanceKey{p.Candidate}, otherThan(p.Repoint, p.Candidate, p.OldPrimary)...)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := r.e.Ctl.Inspect(ctx, k)
			if err != nil {
				errs[i] = err
				return
			}
			if len(in.Channels) == 0 || slices.ContainsFunc(in.Channels, func(c dbpilot.ReplicationChannel) bool { return !c.SQLRunning }) {
				return
			}
			if errs[i] = rs.StopReceivers(ctx, k); errs[i] == nil {
				r.mu.Lock()
				r.receiversStopped = append(r.receiversStopped, k)
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			r.audit(ctx, keys[i], dbpilot.AuditRepoint, fmt.Sprintf("stopping the IO thread of %s failed (%v); its STOP SLAVE will", keys[i], err), nil)
		}
	}
}

// giveBackReceivers starts again the replication of every server whose IO
// thread stopReceivers stopped, after a failover that failed before the
// promotion: they still point at the old primary and must vote on it.
func (r *execRun) giveBackReceivers(ctx context.Context) {
	r.mu.Lock()
	keys := r.receiversStopped
	r.receiversStopped = nil
	r.mu.Unlock()
	for _, k := range keys {
		if err := r.e.Ctl.StartReplica(ctx, k); err != nil {
			r.audit(ctx, k, dbpilot.AuditRepoint, fmt.Sprintf("starting the IO thread of %s again failed (%v): start it by hand (START ALL SLAVES)", k, err), nil)
		}
	}
}
