package recovery

import (
	"context"
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
	// ApplyTimeout bounds each wait of a failover's candidate: applying its
	// relay log, catching up from another replica. Default 30 s.
	ApplyTimeout time.Duration
	// RepointVerify bounds the wait for each repointed replica to replicate
	// (both threads running, no error). Default 10 s.
	RepointVerify time.Duration
	// KillGrace is, in a switchover, how long writers may finish after
	// read_only before their connections are killed. Default 1 s.
	KillGrace time.Duration
	// SemiSync enables the semi-sync primary side on the new primary, and the
	// replica side on repointed replicas. Without it, a new primary that had
	// the primary side on before keeps it (a DBA's own setting), and the
	// repointed replicas get the replica side then too.
	SemiSync bool
	// MaxLag (switchover.max_lag) bounds, before a switchover or a
	// relocation changes anything, how far behind its source the candidate
	// (or the relocation's target) may be: see CheckApplier. Default
	// DefaultMaxLag.
	MaxLag time.Duration
	// DrainTimeout (switchover.drain_timeout) bounds how long a switchover
	// keeps writes refused on the old primary (KillGrace included) while
	// the candidate applies its last transactions; then it rolls back.
	// Default DefaultDrainTimeout.
	DrainTimeout time.Duration
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
	if o.MaxLag <= 0 {
		o.MaxLag = DefaultMaxLag
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	return o
}

// Executor applies plans through a dbpilot.ReplicationController and
// audits every step.
type Executor struct {
	Ctl   dbpilot.ReplicationController
	Audit dbpilot.Auditor // may be nil
	Opt   Options
	// Recloner re-provisions a server for a rejoin with Reclone (nil:
	// such a rejoin is refused).
	Recloner dbpilot.Recloner
	// Clock is the run's time (the zero Clock: the wall clock).
	Clock Clock
	// Standby sends read_only on an idle session kept on a primary (nil:
	// none): FenceStandby.
	Standby StandbyFencer
}

// StandbyFencer is implemented by liveness adapters that keep an idle
// session on each primary they hold (mysql.Liveness): Fence sends SET
// GLOBAL read_only=ON on it without waiting, so that a hung primary runs it
// first when it runs again, before any client can open a session. The
// channel receives the outcome; it is nil when no session is held.
type StandbyFencer interface {
	Fence(key dbpilot.InstanceKey) <-chan error
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
	verb    string              // "failover", "switchover", "relocate", "rejoin": the start of error messages
	subject dbpilot.InstanceKey // the candidate, or the replica relocated or rejoined: the instance of "done" and "failed"

	// candSemi is the candidate's semi-sync state before the run changed it.
	candSemi dbpilot.SemiSyncState

	mu      sync.Mutex      // guards rec.LostReplicas, quieted and receiversStopped while servers are handled in parallel
	quieted []quietedServer // servers whose semi-sync primary side the run turned off

	// receiversStopped are the servers whose IO threads a failover stopped
	// before the promotion (stopReceivers).
	receiversStopped []dbpilot.InstanceKey
}

func (e *Executor) newRun(cluster, verb string, rec *dbpilot.Recovery) *execRun {
	if rec == nil {
		rec = &dbpilot.Recovery{}
	}
	if rec.Started.IsZero() {
		rec.Started = e.Clock.now()
	}
	if rec.Cluster == "" {
		rec.Cluster = cluster
	}
	return &execRun{e: e, opt: e.Opt.withDefaults(), rec: rec, cluster: cluster, verb: verb}
}

// newPlanRun starts a run that applies plan p (failover, switchover): rec's
// outcome fields of an earlier attempt are cleared, and the candidate is the
// run's subject.
func (e *Executor) newPlanRun(p *Plan, verb string, rec *dbpilot.Recovery) *execRun {
	cluster := ""
	if p != nil {
		cluster = p.Cluster
	}
	r := e.newRun(cluster, verb, rec)
	r.rec.NewPrimary, r.rec.LostReplicas = dbpilot.InstanceKey{}, nil
	if p != nil {
		r.subject = p.Candidate
	}
	return r
}

// audit records one event; a failing auditor is logged, never fatal.
func (r *execRun) audit(ctx context.Context, key dbpilot.InstanceKey, event, msg string, detail map[string]string) {
	if r.e.Audit == nil {
		return
	}
	ev := dbpilot.AuditEvent{Time: r.now(), Cluster: r.cluster, RecoveryID: r.rec.ID, Instance: key, Event: event, Message: msg, Detail: detail}
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
	r.rec.Ended = r.now()
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
	if !r.rec.NewPrimary.IsZero() && r.verb != "relocate" && r.verb != "rejoin" {
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

// execSleep waits d or until ctx ends (the wall clock's Sleep).
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

// Clock is the executor's time. Now stamps records and audit events and
// measures every deadline of a run (apply, repoint verification, drain,
// acknowledgement waits); Sleep waits between polls, until ctx ends. A nil
// field is the wall clock's. Tests drive a run's timeouts with a fake one.
type Clock struct {
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

func (c Clock) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c Clock) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep == nil {
		return execSleep(ctx, d)
	}
	return c.Sleep(ctx, d)
}

// now, since, until and sleep are the run's clock (Executor.Clock).
func (r *execRun) now() time.Time                  { return r.e.Clock.now() }
func (r *execRun) since(t time.Time) time.Duration { return r.now().Sub(t) }
func (r *execRun) until(t time.Time) time.Duration { return t.Sub(r.now()) }
func (r *execRun) sleep(ctx context.Context, d time.Duration) error {
	return r.e.Clock.sleep(ctx, d)
}

// validate refuses, before anything is done, a plan a failover or a
// switchover cannot run: none, without a candidate, promoting the old
// primary, or an executor without a controller.
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

// execSourceChannel returns the channel of inst replicating from source: by
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
	deadline := r.now().Add(timeout)
	step := 250 * time.Millisecond
	for {
		slice := min(r.until(deadline), step)
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
		if !r.now().Before(deadline) {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "%s did not reach %s within %s", key, pos, timeout.Round(time.Millisecond))
		}
	}
}

// promote makes key a writable primary: replication removed, semi-sync
// primary side as primarySide says (before writes are allowed, so that none
// escapes it), read_only off. It returns when key became writable.
func (r *execRun) promote(ctx context.Context, key dbpilot.InstanceKey, why string) (time.Time, error) {
	if err := r.takePrimaryRole(ctx, key); err != nil {
		return time.Time{}, err
	}
	return r.makeWritable(ctx, key, why)
}

// takePrimaryRole removes key's replication and sets its semi-sync sides
// for a primary (primarySide, newPrimaryReplicaSide); it stays read-only.
func (r *execRun) takePrimaryRole(ctx context.Context, key dbpilot.InstanceKey) error {
	ctl := r.e.Ctl
	if err := ctl.StopReplica(ctx, key); err != nil {
		return err
	}
	if err := ctl.ResetReplicaAll(ctx, key); err != nil {
		return err
	}
	return ctl.SetSemiSync(ctx, key, r.primarySide(), r.newPrimaryReplicaSide())
}

// makeWritable turns read_only off on the new primary key and records it
// as the run's new primary; it returns when key became writable.
func (r *execRun) makeWritable(ctx context.Context, key dbpilot.InstanceKey, why string) (time.Time, error) {
	if err := r.e.Ctl.SetReadOnly(ctx, key, false); err != nil {
		return time.Time{}, err
	}
	writable := r.now()
	r.rec.NewPrimary, r.rec.WritesOpen = key, writable
	r.audit(ctx, key, dbpilot.AuditPromote, fmt.Sprintf("%s promoted (%s): replication removed, writable", key, why),
		map[string]string{"semi_sync": strconv.FormatBool(r.primarySide())})
	return writable, nil
}

// repointAll moves replicas under primary in parallel; each that fails is
// lost. extra, when not nil, runs alongside (a former primary joining).
func (r *execRun) repointAll(ctx context.Context, primary, oldSource dbpilot.InstanceKey, replicas []dbpilot.InstanceKey, extra func()) {
	execEach(otherThan(replicas, primary, oldSource), extra, func(k dbpilot.InstanceKey) {
		if reason := r.repoint(ctx, k, primary, oldSource); reason != "" {
			r.lose(ctx, k, reason)
		}
	})
}

// otherThan is keys without those equal to any of skip.
func otherThan(keys []dbpilot.InstanceKey, skip ...dbpilot.InstanceKey) []dbpilot.InstanceKey {
	var out []dbpilot.InstanceKey
	for _, k := range keys {
		if !slices.ContainsFunc(skip, k.Equal) {
			out = append(out, k)
		}
	}
	return out
}

// execEach runs f for every item, execMaxParallel at a time, and extra
// (when not nil) alongside them, and returns when all are done.
func execEach[T any](items []T, extra func(), f func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, execMaxParallel)
	if extra != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra()
		}()
	}
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			f(it)
		}()
	}
	wg.Wait()
}

// repoint moves one replica's channel from oldSource to primary and verifies
// it; it returns why it failed, or "".
func (r *execRun) repoint(ctx context.Context, key, primary, oldSource dbpilot.InstanceKey) string {
	start := r.now()
	channel, reason := r.attach(ctx, key, primary, oldSource)
	if reason != "" {
		return reason
	}
	return r.confirmRepoint(ctx, key, channel, primary, oldSource, start)
}

// attach points key's channel from oldSource at primary and starts it
// (semi-sync replica side on when the new primary has the primary side);
// it returns the channel's name, or why it failed.
func (r *execRun) attach(ctx context.Context, key, primary, oldSource dbpilot.InstanceKey) (channel, reason string) {
	ctl := r.e.Ctl
	inst, err := ctl.Inspect(ctx, key)
	if err != nil {
		return "", "unreachable: " + err.Error()
	}
	if ch := execSourceChannel(inst, oldSource); ch != nil {
		channel = ch.Name
	} else if len(inst.Channels) > 1 {
		return "", fmt.Sprintf("none of its %d channels replicates from %s", len(inst.Channels), oldSource)
	}
	if err := ctl.StopReplica(ctx, key); err != nil {
		return "", "stop replication: " + err.Error()
	}
	if err := ctl.ChangeSource(ctx, key, primary, dbpilot.ChangeSourceOptions{Channel: channel}); err != nil {
		return "", "change source: " + err.Error()
	}
	if r.primarySide() {
		if err := ctl.SetSemiSync(ctx, key, inst.SemiSync.PrimaryEnabled, true); err != nil {
			return "", "enable semi-sync: " + err.Error()
		}
	}
	if err := ctl.StartReplica(ctx, key); err != nil {
		return "", "start replication: " + err.Error()
	}
	return channel, ""
}

// confirmRepoint verifies an attached replica and audits it; it returns
// why it failed, or "".
func (r *execRun) confirmRepoint(ctx context.Context, key dbpilot.InstanceKey, channel string, primary, oldSource dbpilot.InstanceKey, start time.Time) string {
	if reason := r.verify(ctx, key, channel, primary); reason != "" {
		return reason
	}
	r.audit(ctx, key, dbpilot.AuditRepoint, fmt.Sprintf("%s replicates from %s", key, primary), map[string]string{
		"channel": channel, "source": primary.String(), "old_source": oldSource.String(), "elapsed_ms": execMillis(r.since(start))})
	return ""
}

// verify polls key until its channel replicates from source with both
// threads running and no error, seen twice in a row (a source that refuses
// the replica's position answers right after the connection is up), for at
// most RepointVerify. It returns why it failed, or "".
func (r *execRun) verify(ctx context.Context, key dbpilot.InstanceKey, channel string, source dbpilot.InstanceKey) string {
	deadline := r.now().Add(r.opt.RepointVerify)
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
		if r.now().After(deadline) {
			return fmt.Sprintf("not replicating from %s after %s: %s", source, r.opt.RepointVerify, last)
		}
		if err := r.sleep(ctx, execPollInterval); err != nil {
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

// The statements below are the ones a recovery sends outside a planned run
// (Failover, Switchover, Relocate, Rejoin): fencing an old primary that
// answers again, and finishing or rolling back a run a stopped serve left
// half done. They go through the executor's controller like every other
// (under the fencing check when the executor's controller has one); the
// caller audits them.

// Fence takes writes away from old, a primary replaced by a recovery that
// answers again: its client sessions are ended first (one waiting for a
// semi-sync acknowledgement nobody will send would hold SET GLOBAL
// read_only back for rpl_semi_sync_master_timeout, then tell its client
// the commit succeeded); then the semi-sync primary side goes off, which
// releases the killed sessions' commits still waiting (their clients are
// gone), read_only goes on, and sessions that connected meanwhile are ended
// too. It returns how many sessions it ended.
func (e *Executor) Fence(ctx context.Context, old dbpilot.InstanceKey) (int, error) {
	ctl := e.Ctl
	n, err := ctl.KillClientConnections(ctx, old)
	if err != nil {
		return n, err
	}
	if err := ctl.SetSemiSync(ctx, old, false, false); err != nil {
		return n, err
	}
	if err := ctl.SetReadOnly(ctx, old, true); err != nil {
		return n, err
	}
	n2, err := ctl.KillClientConnections(ctx, old)
	return n + n2, err
}

// FenceStandby sends read_only to old, the primary of a failover about to
// run, on the standby session (Standby) without waiting; the channel
// receives the outcome. It is nil when there is no standby session.
func (e *Executor) FenceStandby(old dbpilot.InstanceKey) <-chan error {
	if e.Standby == nil {
		return nil
	}
	return e.Standby.Fence(old)
}

// GiveWrites sets read_only off on key: a candidate whose replication a
// stopped serve removed before it made it writable, or a switchover's old
// primary left read_only by a serve that stopped before the promotion.
func (e *Executor) GiveWrites(ctx context.Context, key dbpilot.InstanceKey) error {
	return e.Ctl.SetReadOnly(ctx, key, false)
}

// Reattach points replica at source (GTID auto-positioning): replication
// stopped, the source changed, replication started; the first error ends
// it. It finishes the repointing of a failover a stopped serve promoted.
func (e *Executor) Reattach(ctx context.Context, replica, source dbpilot.InstanceKey) error {
	ctl := e.Ctl
	err := ctl.StopReplica(ctx, replica)
	if err == nil {
		err = ctl.ChangeSource(ctx, replica, source, dbpilot.ChangeSourceOptions{})
	}
	if err == nil {
		err = ctl.StartReplica(ctx, replica)
	}
	return err
}
