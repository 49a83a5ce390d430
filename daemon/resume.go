package daemon

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
)

// reloadKnown gives every cluster, before its first crawl, the instances
// the state store knew of it within forget_after — not only the seeds — with
// their last observation. A serve restarted while a cluster's primary is
// dead then still finds the replicas it cannot reach from the seeds (before,
// a cluster seeded from its dead primary showed "none of its 0 replicas can
// be read", and nothing could recover it).
func (d *Daemon) reloadKnown(ctx context.Context) {
	if d.store == nil {
		return
	}
	since := d.now().Add(-d.cfg.ForgetAfter.D())
	for _, name := range d.order {
		cs := d.clusters[name]
		insts, err := d.store.KnownInstances(ctx, name, since)
		if err != nil {
			d.log.Warn("reload known instances", "cluster", name, "err", err)
			continue
		}
		cs.mu.Lock()
		for _, i := range insts {
			cs.known = appendKey(cs.known, i.Key)
		}
		if len(cs.instances) == 0 {
			// The last observation of each, as the previous one: an
			// instance that does not answer keeps its place (withLastKnown).
			cs.instances = insts
		}
		cs.mu.Unlock()
	}
}

// resumeLocal closes, on the first tick after a start, a recovery of the
// cluster that a previous serve left running (killed mid-way) — the
// single-serve counterpart of resume, which reads etcd. From the servers'
// state, never by replaying a step:
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
// It reports whether it acted (the tick then ends; the next observes).
func (d *Daemon) resumeLocal(ctx context.Context, cs *clusterState) bool {
	if d.store == nil || d.coord != nil {
		return false
	}
	recs, err := d.store.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: cs.cfg.Name, Limit: 5})
	if err != nil {
		d.log.Warn("read recoveries", "cluster", cs.cfg.Name, "err", err)
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
			d.postHooksLeft(ctx, cs, recs[0])
		}
		return false
	}
	if !cs.op.TryLock() {
		return false
	}
	defer cs.op.Unlock()
	name := cs.cfg.Name
	d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditResume,
		Message: fmt.Sprintf("recovery #%d (%s of %s) was left running by a serve that stopped; this serve closes it from the servers' state", rec.ID, rec.Kind, rec.OldPrimary)})
	sr := &dbpilot.SharedRecovery{ID: rec.ID, Cluster: name, Kind: rec.Kind, OldPrimary: rec.OldPrimary, Candidate: rec.NewPrimary, Started: rec.Started}
	var cand *dbpilot.Instance
	if !rec.NewPrimary.IsZero() && !rec.NewPrimary.Equal(rec.OldPrimary) {
		if c, err := d.ctl.Inspect(ctx, rec.NewPrimary); err == nil && c.Reachable && !c.IsReplica() {
			cand = c
		}
	}
	switch rec.Kind {
	case dbpilot.RecoveryFailoverAuto, dbpilot.RecoveryFailoverManual:
		if cand != nil {
			d.finishPromoted(ctx, cs, nil, sr, cand)
			return true
		}
		if old, err := d.ctl.Inspect(ctx, rec.OldPrimary); err == nil && old.Reachable {
			d.endRecovery(ctx, rec, fmt.Errorf("recovery interrupted and abandoned: the old primary %s answers again and no candidate was promoted", rec.OldPrimary))
			return true
		}
		cs.mu.Lock()
		cs.setPrimary(rec.OldPrimary)
		cs.mu.Unlock()
		if _, err := d.failoverRun(ctx, cs, rec.Kind, nil, sr); err != nil {
			d.log.Error("resumed failover failed", "cluster", name, "err", err)
		}
		return true
	case dbpilot.RecoverySwitchover:
		if cand != nil {
			d.finishPromoted(ctx, cs, nil, sr, cand)
			return true
		}
		msg := fmt.Sprintf("switchover interrupted: serve stopped during it; %s was not promoted", rec.NewPrimary)
		if old, err := d.ctl.Inspect(ctx, rec.OldPrimary); err == nil && old.Reachable && !old.IsReplica() && old.ReadOnly {
			if err := d.executor(nil).GiveWrites(ctx, rec.OldPrimary); err != nil {
				msg += fmt.Sprintf("; giving %s its writes back failed: %v", rec.OldPrimary, err)
			} else {
				msg += fmt.Sprintf("; %s, left read_only, takes writes again", rec.OldPrimary)
				d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditRollback, Message: msg})
			}
		}
		d.endRecovery(ctx, rec, fmt.Errorf("%s", msg))
		return true
	default:
		d.endRecovery(ctx, rec, fmt.Errorf("%s interrupted: serve stopped during it; check the cluster (dbpilot topology) and run it again if needed", rec.Kind))
		return true
	}
}

// postHooksLeft runs the post hooks of the cluster's last failover when
// the serve that ran it ended it and stopped before they started (a VIP
// never moved is worse than one moved late). Hooks already started are not
// run again.
func (d *Daemon) postHooksLeft(ctx context.Context, cs *clusterState, rec *dbpilot.Recovery) {
	if rec.Kind != dbpilot.RecoveryFailoverAuto && rec.Kind != dbpilot.RecoveryFailoverManual {
		return
	}
	if d.now().Sub(rec.Ended) > d.cfg.Recovery.BlockPeriod.D() {
		return // long ago: not this serve's business any more
	}
	hooks := d.cfg.HooksFor(cs.cfg)
	phase, cmds := "post-failover", hooks.PostFailover
	if !rec.Success {
		phase, cmds = "post-unsuccessful-failover", hooks.PostUnsuccessfulFailover
	}
	if len(cmds) == 0 || d.hooksStarted(ctx, cs.cfg.Name, rec.ID, phase) {
		return
	}
	d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Event: dbpilot.AuditResume,
		Message: fmt.Sprintf("recovery #%d ended but the serve that ran it stopped before its %s hooks: running them now", rec.ID, phase)})
	d.runHooks(ctx, cs, rec, phase, cmds, hooks)
}

// FaultEnv names the environment variable of the fault-injection switch:
// a serve started with DBPILOT_FAULT_EXIT_AT=STEP kills itself with
// SIGKILL when a recovery reaches STEP, as a crash would. Steps:
// before-hooks, in-pre-failover-hook, after-promotion, before-post-hooks.
// For tests and bench/faults.sh only.
const FaultEnv = "DBPILOT_FAULT_EXIT_AT"

// faultPoint kills this process when the fault-injection switch names step.
func faultPoint(step string) {
	if os.Getenv(FaultEnv) != step {
		return
	}
	fmt.Fprintf(os.Stderr, "dbpilot: %s=%s: killing this serve (fault injection)\n", FaultEnv, step)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Hour) // the signal is on its way
}

// hookGroups records the process groups of the hooks running now in a file
// beside the state (STATE.hooks), one per line.
type hookGroups struct {
	path string
	mu   sync.Mutex
	live map[int]bool
}

func (h *hookGroups) track(pgid int, started bool) {
	if h == nil || h.path == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live == nil {
		h.live = map[int]bool{}
	}
	if started {
		h.live[pgid] = true
	} else {
		delete(h.live, pgid)
	}
	var b strings.Builder
	for p := range h.live {
		fmt.Fprintln(&b, p)
	}
	_ = os.WriteFile(h.path, []byte(b.String()), 0o600)
}

// killLeftoverHooks kills the process groups of hooks a previous serve
// started and did not see end (it was killed): a hook never outlives the
// recovery it belongs to. A group is killed only while its leader still
// carries dbpilot's hook environment (the pid was not reused).
func (d *Daemon) killLeftoverHooks(ctx context.Context) {
	if d.hooks == nil || d.hooks.path == "" {
		return
	}
	b, err := os.ReadFile(d.hooks.path)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		pgid, err := strconv.Atoi(f)
		if err != nil || pgid <= 1 {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pgid))
		if err != nil {
			// The shell is gone (killed with serve): its group may live on.
			env = nil
		}
		if env != nil && !strings.Contains(string(env), "DBPILOT_RECOVERY_ID=") {
			continue // the pid was reused by another program
		}
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err == nil {
			d.audit(ctx, dbpilot.AuditEvent{Event: dbpilot.AuditHook,
				Message: fmt.Sprintf("hook process group %d, left running by a serve that stopped, was killed", pgid)})
		}
	}
	_ = os.Remove(d.hooks.path)
}

// hooksStarted reports whether the hooks of phase were started for the
// recovery (runHooks audits it before the first one).
func (d *Daemon) hooksStarted(ctx context.Context, cluster string, id int64, phase string) bool {
	if d.store == nil || id == 0 {
		return false
	}
	evs, err := d.store.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: cluster, RecoveryID: id})
	if err != nil {
		return true // unknown: never run twice
	}
	for _, e := range evs {
		if e.Event == dbpilot.AuditHook && e.Detail["phase"] == phase && e.Detail["state"] == "starting" {
			return true
		}
	}
	return false
}

// watchOldPrimary keeps a connection attempt open to the old primary of a
// failover until it answers, then makes it read_only and ends its client
// sessions. A hung primary (SIGSTOP, a stalled disk) accepts TCP
// connections and greets nobody: the attempt waits in its listen queue and
// is served the moment the server runs again, before serve's next poll —
// the earliest any SQL fence can act. A dead one refuses, and the attempt
// is retried every fenceRetry. It gives up after forget_after; the watch
// loop's fencing (fenceReturning) covers the rest.
func (d *Daemon) watchOldPrimary(cs *clusterState, old dbpilot.InstanceKey) {
	ctx := d.bgCtx
	if ctx == nil || !d.running.Load() {
		return
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		deadline := d.now().Add(d.cfg.ForgetAfter.D())
		for ctx.Err() == nil && d.now().Before(deadline) {
			cs.mu.Lock()
			still := cs.fenced[old]
			cs.mu.Unlock()
			if !still {
				return // rejoined, or forgotten
			}
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			n, err := d.fenceNow(actx, old)
			if err == nil {
				cancel()
				d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Instance: old, Event: dbpilot.AuditFence,
					Message: fmt.Sprintf("old primary %s answers again: set read_only at once and ended %d client sessions", old, n)})
				return
			}
			cancel()
			sleepCtx(ctx, fenceRetry)
		}
	}()
}

// fenceRetry is how often watchOldPrimary tries a dead old primary again.
const fenceRetry = 100 * time.Millisecond

// fenceNow takes writes away from an old primary that answers again,
// through the executor (recovery.Executor.Fence: sessions ended, semi-sync
// primary side off, read_only on, sessions ended again). Fencing is always
// allowed: no fencing token guards it. It returns how many sessions it
// ended.
func (d *Daemon) fenceNow(ctx context.Context, old dbpilot.InstanceKey) (int, error) {
	return d.executor(nil).Fence(ctx, old)
}

// fenceStandby sends read_only to the old primary of a failover about to
// run, on the idle session the liveness adapter keeps on it
// (StandbyFencer): a primary that hangs (SIGSTOP, a frozen host) and later
// runs again reads that statement first, before any client can connect, so
// it is read_only within moments instead of after serve's next connection
// is greeted. A primary that is really gone fails the statement at once.
// The outcome is audited when it comes; fenceNow still ends the sessions
// of a primary that answers again (watchOldPrimary).
func (d *Daemon) fenceStandby(ctx context.Context, cs *clusterState, rec *dbpilot.Recovery) {
	if _, ok := d.live.(StandbyFencer); !ok || rec.OldPrimary.IsZero() {
		return
	}
	done := d.executor(nil).FenceStandby(rec.OldPrimary)
	if done == nil {
		d.log.Info("no standby session on the old primary: it is fenced when it answers again", "cluster", cs.cfg.Name, "instance", rec.OldPrimary.String())
		return
	}
	bg := d.bgCtx
	if bg == nil {
		bg = context.WithoutCancel(ctx)
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		select {
		case err := <-done:
			if err == nil {
				d.audit(bg, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Instance: rec.OldPrimary, Event: dbpilot.AuditFence,
					Message: fmt.Sprintf("old primary %s ran the read_only sent on serve's standby session during the failover", rec.OldPrimary)})
			} else {
				d.log.Info("read_only sent on the standby session did not run (a primary that is gone closes it)", "cluster", cs.cfg.Name, "instance", rec.OldPrimary.String(), "err", err)
			}
		case <-bg.Done():
		}
	}()
}
