package recovery

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Failover applies a failover plan: the candidate catches up from replicas
// that received more in some domains and applies everything it received,
// is promoted (replication removed, writable, semi-sync primary side as
// Opt.SemiSync says), and the replicas of p.Repoint are moved under it in
// parallel, each verified to replicate. A replica that cannot be moved, and
// every replica of p.Lost, goes to rec.LostReplicas with the reason audited.
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
	cluster := ""
	if p != nil {
		cluster = p.Cluster
	}
	r := e.newRun(cluster, "failover", rec)
	r.rec.NewPrimary, r.rec.LostReplicas = dbpilot.InstanceKey{}, nil
	if p != nil {
		r.subject = p.Candidate
	}
	return r.finish(ctx, r.failover(ctx, p), nil)
}

// notPromoted is a failure before the candidate became writable.
func (r *execRun) notPromoted(p *Plan, step string, err error) error {
	return dbpilot.WrapError(dbpilot.EUNAVAIL, err,
		"failover: %s failed on the way to promote %s; no replica promoted, replicas still point at the dead primary %s (plan again without this candidate)",
		step, p.Candidate, p.OldPrimary)
}

func (r *execRun) failover(ctx context.Context, p *Plan) error {
	if err := r.validate(p); err != nil {
		return err
	}
	ctl := r.e.Ctl
	for _, l := range p.Lost {
		r.lose(ctx, l.Key, l.Reason)
	}
	cand, err := ctl.Inspect(ctx, p.Candidate)
	if err != nil {
		return r.notPromoted(p, "inspect candidate", err)
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
	r.repointAll(ctx, p.Candidate, p.OldPrimary, p.Repoint, nil)
	return nil
}

// applyRelayLog waits for the candidate to apply everything it received
// from the old primary. It runs before any catch-up, because CHANGE MASTER
// deletes the relay log. The IO thread may keep retrying the dead primary
// meanwhile; that is harmless.
func (r *execRun) applyRelayLog(ctx context.Context, p *Plan, cand *dbpilot.Instance) error {
	start := time.Now()
	key := p.Candidate
	ch := execSourceChannel(cand, p.OldPrimary)
	var chans []dbpilot.ReplicationChannel
	if ch != nil {
		chans = []dbpilot.ReplicationChannel{*ch}
	} else {
		chans = cand.Channels
	}
	var target, received string
	sqlStopped := false
	if cand.Flavor.IsMySQLFamily() {
		sets := make([]string, 0, len(chans))
		for _, c := range chans {
			if c.RetrievedGTIDSet != "" {
				sets = append(sets, c.RetrievedGTIDSet)
			}
			sqlStopped = sqlStopped || !c.SQLRunning
		}
		received = strings.Join(sets, ",")
		if received != "" {
			set, err := gtid.ParseMySQLSet(received)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Retrieved_Gtid_Set of %s", key)
			}
			executed, err := gtid.ParseMySQLSet(cand.GTID.Executed)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read gtid_executed of %s", key)
			}
			if missing := set.Subtract(executed); !missing.IsEmpty() {
				target = set.String()
			}
		}
	} else {
		ios := make([]string, 0, len(chans))
		for _, c := range chans {
			ios = append(ios, c.GTIDIOPos)
			sqlStopped = sqlStopped || !c.SQLRunning
		}
		var err error
		received, err = posMax(ios...)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Gtid_IO_Pos of %s", key)
		}
		// MASTER_GTID_WAIT waits on gtid_slave_pos: wait only for what the
		// candidate has not applied yet, or a domain it holds through its
		// own binlog alone would never be reached.
		have, err := posMax(cand.GTID.BinlogPos, cand.GTID.SlavePos)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read GTID position of %s", key)
		}
		if target, err = posRemaining(received, have); err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions of %s", key)
		}
	}
	detail := map[string]string{"received": received}
	if target == "" {
		r.audit(ctx, key, dbpilot.AuditApplyRelayLog, fmt.Sprintf("%s has applied everything it received (%s)", key, execOrNone(received)), detail)
		return nil
	}
	detail["waiting_for"] = target
	if sqlStopped {
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
	detail["elapsed_ms"] = execMillis(time.Since(start))
	r.audit(ctx, key, dbpilot.AuditApplyRelayLog, fmt.Sprintf("%s applied its relay log up to %s", key, target), detail)
	return nil
}

// catchUp replicates the candidate from cu.From until it reaches cu.Until in
// the catch-up domains, ignoring every other domain (MariaDB), then removes
// that replication.
func (r *execRun) catchUp(ctx context.Context, p *Plan, cu CatchUp) error {
	ctl := r.e.Ctl
	key := p.Candidate
	start := time.Now()
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
		all, err := posDomains(cand.GTID.BinlogPos, cand.GTID.SlavePos, cand.GTID.CurrentPos,
			from.GTID.BinlogPos, from.GTID.SlavePos, from.GTID.CurrentPos, cu.Until)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read GTID positions")
		}
		for _, c := range cand.Channels {
			ds, err := posDomains(c.GTIDIOPos)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read Gtid_IO_Pos")
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
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "read catch-up position %q", cu.Until)
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
		stopped, err := ctl.Inspect(ctx, key)
		if err != nil {
			return err
		}
		temp, err := posBorrow(stopped.GTID.SlavePos, from.GTID.BinlogPos, ignore)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions")
		}
		if temp != stopped.GTID.SlavePos {
			if err := pos.SetReplicaPosition(ctx, key, temp); err != nil {
				return err
			}
			saved = stopped.GTID.SlavePos
			detail["slave_pos_saved"] = saved
			detail["slave_pos_during_catch_up"] = temp
		}
	}
	if err := ctl.ChangeSource(ctx, key, cu.From, dbpilot.ChangeSourceOptions{IgnoreDomains: ignore}); err != nil {
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
	if err := ctl.ResetReplicaAll(ctx, key); err != nil {
		return err
	}
	if saved != "" {
		after, err := ctl.Inspect(ctx, key)
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
	}
	detail["elapsed_ms"] = execMillis(time.Since(start))
	r.audit(ctx, key, dbpilot.AuditCatchUp, fmt.Sprintf("%s caught up from %s to %s", key, cu.From, execOrNone(until)), detail)
	return nil
}

func execJoinDomains(ds []uint32) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatUint(uint64(d), 10)
	}
	return strings.Join(s, ",")
}
