package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Options tune the executor. Zero fields take their defaults.
type Options struct {
	// ApplyTimeout bounds each wait of the candidate: applying its relay log,
	// catching up from another replica, reaching the old primary's position
	// in a switchover. Default 30 s.
	ApplyTimeout time.Duration
	// RepointVerify bounds the wait for each repointed replica to replicate
	// (both threads running, no error). Default 10 s.
	RepointVerify time.Duration
	// KillGrace is, in a switchover, how long writers may finish after
	// read_only before their connections are killed. Default 1 s.
	KillGrace time.Duration
	// SemiSync enables the semi-sync primary side on the new primary, and the
	// replica side on repointed replicas.
	SemiSync bool
}

// Option defaults.
const (
	DefaultApplyTimeout  = 30 * time.Second
	DefaultRepointVerify = 10 * time.Second
	DefaultKillGrace     = time.Second
)

func (o Options) withDefaults() Options {
	if o.ApplyTimeout <= 0 {
		o.ApplyTimeout = DefaultApplyTimeout
	}
	if o.RepointVerify <= 0 {
		o.RepointVerify = DefaultRepointVerify
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	return o
}

// Executor applies plans through a dbpilot.ReplicationController and
// audits every step.
type Executor struct {
	Ctl   dbpilot.ReplicationController
	Audit dbpilot.Auditor // may be nil
	Opt   Options
}

// execMaxParallel bounds how many replicas are repointed at once.
const execMaxParallel = 8

// execPollInterval is how often repointed replicas are inspected while verified.
const execPollInterval = 100 * time.Millisecond

// execRun is one recovery being executed.
type execRun struct {
	e       *Executor
	opt     Options
	rec     *dbpilot.Recovery
	cluster string
	verb    string              // "failover", "switchover", "relocate": the start of error messages
	subject dbpilot.InstanceKey // the candidate, or the replica relocated: the instance of "done" and "failed"

	mu sync.Mutex // guards rec.LostReplicas while repointing in parallel
}

func (e *Executor) newRun(cluster, verb string, rec *dbpilot.Recovery) *execRun {
	if rec == nil {
		rec = &dbpilot.Recovery{}
	}
	if rec.Started.IsZero() {
		rec.Started = time.Now()
	}
	if rec.Cluster == "" {
		rec.Cluster = cluster
	}
	return &execRun{e: e, opt: e.Opt.withDefaults(), rec: rec, cluster: cluster, verb: verb}
}

// audit records one event; a failing auditor is logged, never fatal.
func (r *execRun) audit(ctx context.Context, key dbpilot.InstanceKey, event, msg string, detail map[string]string) {
	if r.e.Audit == nil {
		return
	}
	ev := dbpilot.AuditEvent{Time: time.Now(), Cluster: r.cluster, RecoveryID: r.rec.ID, Instance: key, Event: event, Message: msg, Detail: detail}
	// The audit outlives a cancelled recovery: the record of what was done
	// matters most then.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.e.Audit.Audit(actx, ev); err != nil {
		slog.Warn("audit failed", "event", event, "instance", key.String(), "err", err)
	}
}

// finish completes rec and audits "done" or "failed".
func (r *execRun) finish(ctx context.Context, err error, detail map[string]string) error {
	r.rec.Ended = time.Now()
	if detail == nil {
		detail = map[string]string{}
	}
	detail["duration_ms"] = execMillis(r.rec.Ended.Sub(r.rec.Started))
	if !r.rec.NewPrimary.IsZero() {
		detail["new_primary"] = r.rec.NewPrimary.String()
	}
	if len(r.rec.LostReplicas) > 0 {
		detail["lost_replicas"] = execKeyList(r.rec.LostReplicas)
	}
	if err != nil {
		r.rec.Success = false
		r.rec.Error = err.Error()
		detail["error"] = err.Error()
		msg := err.Error()
		if !strings.HasPrefix(msg, r.verb+":") {
			msg = r.verb + " failed: " + msg
		}
		r.audit(ctx, r.subject, dbpilot.AuditFailed, msg, detail)
		return err
	}
	r.rec.Success = true
	r.rec.Error = ""
	msg := r.verb + " done"
	if !r.rec.NewPrimary.IsZero() && r.verb != "relocate" {
		msg += ": " + r.rec.NewPrimary.String() + " is the primary"
	}
	if n := len(r.rec.LostReplicas); n > 0 {
		msg += fmt.Sprintf("; %d replica(s) lost: %s", n, execKeyList(r.rec.LostReplicas))
	}
	r.audit(ctx, r.subject, dbpilot.AuditDone, msg, detail)
	return nil
}

// lose records a replica that cannot follow the new primary.
func (r *execRun) lose(ctx context.Context, key dbpilot.InstanceKey, reason string) {
	r.mu.Lock()
	r.rec.LostReplicas = append(r.rec.LostReplicas, key)
	r.mu.Unlock()
	r.audit(ctx, key, dbpilot.AuditLost, fmt.Sprintf("%s is lost: %s", key, reason), map[string]string{"reason": reason})
}

func execMillis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func execKeyList(keys []dbpilot.InstanceKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.String()
	}
	return strings.Join(s, ",")
}

// sleep waits d or until ctx ends.
func execSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

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

func (r *execRun) validate(p *Plan) error {
	switch {
	case p == nil:
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: no plan", r.verb)
	case p.Candidate.IsZero():
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: the plan names no candidate", r.verb)
	case p.Candidate.Equal(p.OldPrimary):
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: the candidate %s is the old primary", r.verb, p.Candidate)
	case r.e.Ctl == nil:
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: no controller", r.verb)
	}
	return nil
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

// fromChannel returns the channel of inst replicating from source: by
// source, else the only channel, else nil.
func execSourceChannel(inst *dbpilot.Instance, source dbpilot.InstanceKey) *dbpilot.ReplicationChannel {
	if ch := inst.Channel(source); ch != nil {
		return ch
	}
	if len(inst.Channels) == 1 {
		return &inst.Channels[0]
	}
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

func execOrNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// waitApplied waits, at most timeout, for key to apply pos: WaitForGTID in
// slices (a quarter of a second, growing to a second), checking between
// slices that the channel named watch ("-": none) still works, so that a
// channel that cannot get there (SQL thread stopped; with checkIO, an IO
// thread stopped by an error such as a source refusing the replica's
// position) fails at once rather than at the timeout.
func (r *execRun) waitApplied(ctx context.Context, key dbpilot.InstanceKey, pos string, timeout time.Duration, watch string, checkIO bool) error {
	if pos == "" {
		return nil
	}
	ctl := r.e.Ctl
	deadline := time.Now().Add(timeout)
	step := 250 * time.Millisecond
	for {
		slice := min(time.Until(deadline), step)
		step = min(2*step, time.Second)
		if slice < 10*time.Millisecond {
			slice = 10 * time.Millisecond
		}
		err := ctl.WaitForGTID(ctx, key, pos, slice)
		if err == nil {
			return nil
		}
		if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || ctx.Err() != nil {
			return err
		}
		inst, ierr := ctl.Inspect(ctx, key)
		if ierr != nil {
			return err
		}
		if watch != "-" {
			ch := execChannelNamed(inst, watch)
			switch {
			case ch == nil:
				return dbpilot.Errorf(dbpilot.EUNAVAIL, "%s cannot reach %s: replication channel %q is gone", key, pos, watch)
			case !ch.SQLRunning:
				return dbpilot.Errorf(dbpilot.EUNAVAIL, "%s cannot reach %s: its SQL thread stopped (%s)", key, pos, execDescribeChannel(ch))
			case checkIO && ch.IORunning != dbpilot.IORunning && ch.LastIOErrno != 0:
				return dbpilot.Errorf(dbpilot.EUNAVAIL, "%s cannot reach %s: its IO thread failed (%s)", key, pos, execDescribeChannel(ch))
			}
		}
		if !time.Now().Before(deadline) {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "%s did not reach %s within %s", key, pos, timeout.Round(time.Millisecond))
		}
	}
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

// promote makes key a writable primary: replication removed, semi-sync
// primary side as Opt.SemiSync says (before writes are allowed, so that none
// escapes it), read_only off. It returns when key became writable.
func (r *execRun) promote(ctx context.Context, key dbpilot.InstanceKey, why string) (time.Time, error) {
	ctl := r.e.Ctl
	if err := ctl.StopReplica(ctx, key); err != nil {
		return time.Time{}, err
	}
	if err := ctl.ResetReplicaAll(ctx, key); err != nil {
		return time.Time{}, err
	}
	if err := ctl.SetSemiSync(ctx, key, r.opt.SemiSync, false); err != nil {
		return time.Time{}, err
	}
	if err := ctl.SetReadOnly(ctx, key, false); err != nil {
		return time.Time{}, err
	}
	writable := time.Now()
	r.rec.NewPrimary = key
	r.audit(ctx, key, dbpilot.AuditPromote, fmt.Sprintf("%s promoted (%s): replication removed, writable", key, why),
		map[string]string{"semi_sync": strconv.FormatBool(r.opt.SemiSync)})
	return writable, nil
}

// repointAll moves replicas under primary in parallel; each that fails is
// lost. extra, when not nil, runs alongside (a former primary joining).
func (r *execRun) repointAll(ctx context.Context, primary, oldSource dbpilot.InstanceKey, replicas []dbpilot.InstanceKey, extra func()) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, execMaxParallel)
	if extra != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra()
		}()
	}
	for _, k := range replicas {
		if k.Equal(primary) || k.Equal(oldSource) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if reason := r.repoint(ctx, k, primary, oldSource); reason != "" {
				r.lose(ctx, k, reason)
			}
		}()
	}
	wg.Wait()
}

// repoint moves one replica's channel from oldSource to primary and verifies
// it; it returns why it failed, or "".
func (r *execRun) repoint(ctx context.Context, key, primary, oldSource dbpilot.InstanceKey) string {
	ctl := r.e.Ctl
	start := time.Now()
	inst, err := ctl.Inspect(ctx, key)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	channel := ""
	if ch := execSourceChannel(inst, oldSource); ch != nil {
		channel = ch.Name
	} else if len(inst.Channels) > 1 {
		return fmt.Sprintf("none of its %d channels replicates from %s", len(inst.Channels), oldSource)
	}
	if err := ctl.StopReplica(ctx, key); err != nil {
		return "stop replication: " + err.Error()
	}
	if err := ctl.ChangeSource(ctx, key, primary, dbpilot.ChangeSourceOptions{Channel: channel}); err != nil {
		return "change source: " + err.Error()
	}
	if r.opt.SemiSync {
		if err := ctl.SetSemiSync(ctx, key, inst.SemiSync.PrimaryEnabled, true); err != nil {
			return "enable semi-sync: " + err.Error()
		}
	}
	if err := ctl.StartReplica(ctx, key); err != nil {
		return "start replication: " + err.Error()
	}
	if reason := r.verify(ctx, key, channel, primary); reason != "" {
		return reason
	}
	r.audit(ctx, key, dbpilot.AuditRepoint, fmt.Sprintf("%s replicates from %s", key, primary), map[string]string{
		"channel": channel, "source": primary.String(), "old_source": oldSource.String(), "elapsed_ms": execMillis(time.Since(start))})
	return ""
}

// verify polls key until its channel replicates from source with both
// threads running and no error, seen twice in a row (a source that refuses
// the replica's position answers right after the connection is up), for at
// most RepointVerify. It returns why it failed, or "".
func (r *execRun) verify(ctx context.Context, key dbpilot.InstanceKey, channel string, source dbpilot.InstanceKey) string {
	deadline := time.Now().Add(r.opt.RepointVerify)
	good := 0
	last := "not inspected"
	for {
		inst, err := r.e.Ctl.Inspect(ctx, key)
		switch {
		case err != nil:
			good, last = 0, "unreachable: "+err.Error()
		default:
			ch := execChannelNamed(inst, channel)
			switch {
			case ch == nil:
				good, last = 0, fmt.Sprintf("channel %q missing", channel)
			case !ch.Source.Equal(source):
				good, last = 0, fmt.Sprintf("channel %q replicates from %s", channel, ch.Source)
			case ch.LastIOErrno != 0 || ch.LastSQLErrno != 0 || !ch.Healthy():
				good, last = 0, execDescribeChannel(ch)
			default:
				good++
			}
		}
		if good >= 2 {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("not replicating from %s after %s: %s", source, r.opt.RepointVerify, last)
		}
		if err := execSleep(ctx, execPollInterval); err != nil {
			return "verification interrupted: " + err.Error()
		}
	}
}

func execChannelNamed(inst *dbpilot.Instance, name string) *dbpilot.ReplicationChannel {
	for i := range inst.Channels {
		if inst.Channels[i].Name == name {
			return &inst.Channels[i]
		}
	}
	return nil
}

func execDescribeChannel(ch *dbpilot.ReplicationChannel) string {
	s := fmt.Sprintf("IO %s, SQL %s", ch.IORunning, map[bool]string{true: "Yes", false: "No"}[ch.SQLRunning])
	if ch.LastIOError != "" {
		s += fmt.Sprintf("; IO error %d: %s", ch.LastIOErrno, ch.LastIOError)
	}
	if ch.LastSQLError != "" {
		s += fmt.Sprintf("; SQL error %d: %s", ch.LastSQLErrno, ch.LastSQLError)
	}
	return s
}

// Switchover replaces a healthy primary by the plan's candidate: the old
// primary turns read-only and, after Opt.KillGrace, its client connections
// are killed; the candidate reaches the old primary's final position (else
// the old primary is made writable again and the switchover fails); the
// candidate is promoted; the other replicas and the old primary (read-only)
// replicate from it. The write-unavailable window, from read_only on the
// old primary to the new one writable, is audited (detail
// "write_unavailable_ms" of "promote" and "done").
func (e *Executor) Switchover(ctx context.Context, p *Plan, rec *dbpilot.Recovery) error {
	cluster := ""
	if p != nil {
		cluster = p.Cluster
	}
	r := e.newRun(cluster, "switchover", rec)
	r.rec.NewPrimary, r.rec.LostReplicas = dbpilot.InstanceKey{}, nil
	if p != nil {
		r.subject = p.Candidate
	}
	detail := map[string]string{}
	return r.finish(ctx, r.switchover(ctx, p, detail), detail)
}

// primaryPosition is what a primary has written: MariaDB gtid_binlog_pos,
// MySQL gtid_executed.
func execPrimaryPosition(inst *dbpilot.Instance) string {
	if inst.Flavor.IsMySQLFamily() {
		return inst.GTID.Executed
	}
	return inst.GTID.BinlogPos
}

// waitTarget is what to pass WaitForGTID for the candidate to reach target:
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

func (r *execRun) switchover(ctx context.Context, p *Plan, detail map[string]string) error {
	if err := r.validate(p); err != nil {
		return err
	}
	ctl := r.e.Ctl
	oldKey, candKey := p.OldPrimary, p.Candidate
	old, err := ctl.Inspect(ctx, oldKey)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: old primary %s unreachable, nothing changed (use failover for a dead primary)", oldKey)
	}
	cand, err := ctl.Inspect(ctx, candKey)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "switchover: candidate %s unreachable, nothing changed", candKey)
	}
	ch := cand.Channel(oldKey)
	if ch == nil || !ch.Healthy() {
		state := "no channel from it"
		if ch != nil {
			state = execDescribeChannel(ch)
		}
		return dbpilot.Errorf(dbpilot.EINVALID, "switchover: candidate %s does not replicate from %s (%s), nothing changed", candKey, oldKey, state)
	}
	candChannel := ch.Name

	// From here on writes are refused: the window is measured from t0.
	t0 := time.Now()
	rollback := func(cause error, candReset bool) error {
		rctx := context.WithoutCancel(ctx)
		var errs []error
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
		d := map[string]string{"write_unavailable_ms": execMillis(time.Since(t0))}
		if len(errs) > 0 {
			rerr := errors.Join(errs...)
			d["error"] = rerr.Error()
			r.audit(ctx, oldKey, dbpilot.AuditRollback, fmt.Sprintf("rollback incomplete: %v", rerr), d)
			return dbpilot.WrapError(dbpilot.ErrorCode(cause), cause, "switchover to %s failed and the rollback failed too (%v); check %s and %s by hand", candKey, rerr, oldKey, candKey)
		}
		r.audit(ctx, oldKey, dbpilot.AuditRollback, fmt.Sprintf("%s is writable again; %s still replicates from it", oldKey, candKey), d)
		return dbpilot.WrapError(dbpilot.ErrorCode(cause), cause, "switchover to %s failed; rolled back, %s is the primary again", candKey, oldKey)
	}

	if err := ctl.SetReadOnly(ctx, oldKey, true); err != nil {
		return rollback(err, false)
	}
	r.audit(ctx, oldKey, dbpilot.AuditReadOnly, fmt.Sprintf("%s is read-only; waiting %s for writers to finish", oldKey, r.opt.KillGrace), nil)
	if err := execSleep(ctx, r.opt.KillGrace); err != nil {
		return rollback(err, false)
	}
	killed, err := ctl.KillClientConnections(ctx, oldKey)
	if err != nil {
		return rollback(err, false)
	}
	r.audit(ctx, oldKey, dbpilot.AuditKill, fmt.Sprintf("killed %d client connection(s) of %s", killed, oldKey), map[string]string{"killed": strconv.Itoa(killed)})

	// Wait for the candidate to reach the old primary's final position,
	// re-reading it after each wait in case a write slipped in.
	deadline := time.Now().Add(r.opt.ApplyTimeout)
	var target string
	for {
		o, err := ctl.Inspect(ctx, oldKey)
		if err != nil {
			return rollback(err, false)
		}
		pos := execPrimaryPosition(o)
		if pos == target {
			break
		}
		target = pos
		c, err := ctl.Inspect(ctx, candKey)
		if err != nil {
			return rollback(err, false)
		}
		wait, err := execWaitTarget(c, target)
		if err != nil {
			return rollback(dbpilot.WrapError(dbpilot.EINTERNAL, err, "compare GTID positions"), false)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return rollback(dbpilot.Errorf(dbpilot.EUNAVAIL, "%s did not reach %s within %s", candKey, target, r.opt.ApplyTimeout), false)
		}
		if err := r.waitApplied(ctx, candKey, wait, left, candChannel, true); err != nil {
			return rollback(err, false)
		}
	}
	r.audit(ctx, candKey, dbpilot.AuditCatchUp, fmt.Sprintf("%s reached %s's position %s", candKey, oldKey, execOrNone(target)), map[string]string{"target": target})

	writable, err := r.promote(ctx, candKey, "switchover")
	if err != nil {
		r.rec.NewPrimary = dbpilot.InstanceKey{}
		return rollback(err, true)
	}
	window := writable.Sub(t0)
	detail["write_unavailable_ms"] = execMillis(window)
	r.audit(ctx, candKey, dbpilot.AuditWriteWindow, fmt.Sprintf("writes were refused for %s (read_only on %s to %s writable)", window.Round(time.Millisecond), oldKey, candKey),
		map[string]string{"write_unavailable_ms": execMillis(window)})

	r.repointAll(ctx, candKey, oldKey, p.Repoint, func() {
		if reason := r.demote(ctx, old, candKey); reason != "" {
			r.lose(ctx, oldKey, reason)
		}
	})
	return nil
}

// demote makes the former primary (read-only already) replicate from the
// new one. It returns why it failed, or "".
func (r *execRun) demote(ctx context.Context, old *dbpilot.Instance, primary dbpilot.InstanceKey) string {
	ctl := r.e.Ctl
	key := old.Key
	start := time.Now()
	if err := ctl.StopReplica(ctx, key); err != nil {
		return "stop replication: " + err.Error()
	}
	detail := map[string]string{"source": primary.String()}
	if pos, ok := ctl.(dbpilot.ReplicaPositioner); ok && old.Flavor == dbpilot.FlavorMariaDB {
		// Its own transactions are in its binlog, not in gtid_slave_pos.
		now, err := ctl.Inspect(ctx, key)
		if err != nil {
			return "unreachable: " + err.Error()
		}
		sp, err := posMax(now.GTID.BinlogPos, now.GTID.SlavePos)
		if err != nil {
			return "read GTID position: " + err.Error()
		}
		if sp != now.GTID.SlavePos {
			if err := pos.SetReplicaPosition(ctx, key, sp); err != nil {
				return "set replica position: " + err.Error()
			}
			detail["slave_pos"] = sp
		}
	}
	if err := ctl.ChangeSource(ctx, key, primary, dbpilot.ChangeSourceOptions{}); err != nil {
		return "change source: " + err.Error()
	}
	if err := ctl.SetSemiSync(ctx, key, false, r.opt.SemiSync); err != nil {
		return "set semi-sync: " + err.Error()
	}
	if err := ctl.StartReplica(ctx, key); err != nil {
		return "start replication: " + err.Error()
	}
	if reason := r.verify(ctx, key, "", primary); reason != "" {
		return reason
	}
	detail["elapsed_ms"] = execMillis(time.Since(start))
	r.audit(ctx, key, dbpilot.AuditRepoint, fmt.Sprintf("former primary %s replicates from %s (read-only)", key, primary), detail)
	return ""
}

// Relocate moves a single-channel replica under target: stop, change
// source, start, verify for Opt.RepointVerify. When the replica does not
// replicate from target in time it is pointed back at its former source.
// Multi-source replicas are refused (EINVALID). rec receives Success, Error,
// Ended, and LostReplicas when the replica could not be put back.
func (e *Executor) Relocate(ctx context.Context, replica, target dbpilot.InstanceKey, rec *dbpilot.Recovery) error {
	cluster := ""
	if rec != nil {
		cluster = rec.Cluster
	}
	r := e.newRun(cluster, "relocate", rec)
	r.subject = replica
	detail := map[string]string{"replica": replica.String(), "target": target.String()}
	return r.finish(ctx, r.relocate(ctx, replica, target, detail), detail)
}

func (r *execRun) relocate(ctx context.Context, replica, target dbpilot.InstanceKey, detail map[string]string) error {
	ctl := r.e.Ctl
	switch {
	case ctl == nil:
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: no controller")
	case replica.IsZero() || target.IsZero():
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: a replica and a target are needed")
	case replica.Equal(target):
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s cannot replicate from itself", replica)
	}
	inst, err := ctl.Inspect(ctx, replica)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: %s unreachable, nothing changed", replica)
	}
	if len(inst.Channels) != 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s has %d replication channels; relocate moves single-channel replicas only", replica, len(inst.Channels))
	}
	ch := inst.Channels[0]
	detail["old_source"] = ch.Source.String()
	if ch.Source.Equal(target) {
		r.audit(ctx, replica, dbpilot.AuditRelocate, fmt.Sprintf("%s already replicates from %s", replica, target), nil)
		return nil
	}
	t, err := ctl.Inspect(ctx, target)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: target %s unreachable, nothing changed", target)
	}
	if t.Channel(replica) != nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s replicates from %s; moving %s below it would make a loop", target, replica, replica)
	}
	start := time.Now()
	if err := ctl.StopReplica(ctx, replica); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: cannot stop replication on %s", replica)
	}
	var reason string
	if err := ctl.ChangeSource(ctx, replica, target, dbpilot.ChangeSourceOptions{Channel: ch.Name}); err != nil {
		reason = "change source: " + err.Error()
	} else if err := ctl.StartReplica(ctx, replica); err != nil {
		reason = "start replication: " + err.Error()
	} else {
		reason = r.verify(ctx, replica, ch.Name, target)
	}
	if reason == "" {
		detail["elapsed_ms"] = execMillis(time.Since(start))
		r.audit(ctx, replica, dbpilot.AuditRelocate, fmt.Sprintf("%s replicates from %s (was %s)", replica, target, ch.Source), detail)
		return nil
	}
	// Put it back where it was.
	rctx := context.WithoutCancel(ctx)
	back := ctl.StopReplica(rctx, replica)
	if back == nil {
		back = ctl.ChangeSource(rctx, replica, ch.Source, dbpilot.ChangeSourceOptions{Channel: ch.Name})
	}
	if back == nil {
		back = ctl.StartReplica(rctx, replica)
	}
	if back != nil {
		r.lose(ctx, replica, reason+"; putting it back failed: "+back.Error())
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "relocate: %s does not replicate from %s (%s), and pointing it back at %s failed: %v", replica, target, reason, ch.Source, back)
	}
	r.audit(ctx, replica, dbpilot.AuditRollback, fmt.Sprintf("%s points at %s again", replica, ch.Source), map[string]string{"reason": reason})
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "relocate: %s does not replicate from %s (%s); pointed it back at %s", replica, target, reason, ch.Source)
}

// MariaDB position arithmetic. A position is a GTID list with one entry per
// domain (gtid_binlog_pos, gtid_slave_pos, Gtid_IO_Pos); within a domain
// sequence numbers grow, so positions compare domain by domain.

// posParse parses every list.
func posParse(lists ...string) ([]gtid.MariaList, error) {
	out := make([]gtid.MariaList, 0, len(lists))
	for _, s := range lists {
		l, err := gtid.ParseMariaList(s)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// posMax returns, for each domain of the lists, the GTID with the highest
// sequence number (the earlier list wins a tie).
func posMax(lists ...string) (string, error) {
	ls, err := posParse(lists...)
	if err != nil {
		return "", err
	}
	return gtid.HighestPerDomain(ls...).String(), nil
}

// posDomains returns the domains present in the lists.
func posDomains(lists ...string) ([]uint32, error) {
	ls, err := posParse(lists...)
	if err != nil {
		return nil, err
	}
	var ds []uint32
	for _, l := range ls {
		for _, d := range l.Domains() {
			if !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		}
	}
	slices.Sort(ds)
	return ds, nil
}

// posRemaining returns the domains' positions of target that have does not
// reach.
func posRemaining(target, have string) (string, error) {
	ls, err := posParse(target, have)
	if err != nil {
		return "", err
	}
	var out []gtid.MariaGTID
	for _, d := range ls[0].Domains() {
		t, _ := ls[0].DomainSeq(d)
		if h, ok := ls[1].DomainSeq(d); !ok || h.Seq < t.Seq {
			out = append(out, t)
		}
	}
	return gtid.NewMariaList(out...).String(), nil
}

// posRestrict keeps the domains' entries of pos.
func posRestrict(pos string, domains []uint32) (string, error) {
	ls, err := posParse(pos)
	if err != nil {
		return "", err
	}
	var out []gtid.MariaGTID
	for _, g := range ls[0] {
		if slices.Contains(domains, g.Domain) {
			out = append(out, g)
		}
	}
	return gtid.NewMariaList(out...).String(), nil
}

// posBorrow returns replicaPos with, in each of the domains, the source's
// position where the replica is ahead of it.
func posBorrow(replicaPos, sourcePos string, domains []uint32) (string, error) {
	ls, err := posParse(replicaPos, sourcePos)
	if err != nil {
		return "", err
	}
	rep, src := ls[0], ls[1]
	var out []gtid.MariaGTID
	for _, d := range rep.Domains() {
		g, _ := rep.DomainSeq(d)
		if s, ok := src.DomainSeq(d); ok && slices.Contains(domains, d) && g.Seq > s.Seq {
			g = s
		}
		out = append(out, g)
	}
	return gtid.NewMariaList(out...).String(), nil
}

// posReplace returns pos with the domains' entries taken from saved (or
// removed where saved has none).
func posReplace(pos, saved string, domains []uint32) (string, error) {
	ls, err := posParse(pos, saved)
	if err != nil {
		return "", err
	}
	var out []gtid.MariaGTID
	for _, d := range ls[0].Domains() {
		if !slices.Contains(domains, d) {
			g, _ := ls[0].DomainSeq(d)
			out = append(out, g)
		}
	}
	for _, d := range domains {
		if g, ok := ls[1].DomainSeq(d); ok {
			out = append(out, g)
		}
	}
	return gtid.NewMariaList(out...).String(), nil
}
