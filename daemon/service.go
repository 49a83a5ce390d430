package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/recovery"
	"github.com/dbpilot/dbpilot/topology"
)

var _ dbpilot.ClusterService = (*Daemon)(nil)

// Health reports the daemon's own state.
func (d *Daemon) Health(context.Context) (*dbpilot.Health, error) {
	h := &dbpilot.Health{Status: "ok", Version: d.version, Started: d.started, Clusters: len(d.clusters), Monitored: d.Monitored()}
	if d.mon != nil {
		if b, ok := d.mon.start.(interface{ Backlog() int64 }); ok {
			h.CollectionBacklog = b.Backlog()
		}
	}
	return h, nil
}

func (d *Daemon) cluster(name string) (*clusterState, error) {
	cs, ok := d.clusters[name]
	if !ok {
		_, err := d.cfg.Cluster(name)
		return nil, err
	}
	return cs, nil
}

// refresh observes a cluster when the watch loop does not run (the CLI
// acting directly), so that answers are never stale.
func (d *Daemon) refresh(ctx context.Context, cs *clusterState) {
	if d.running.Load() {
		return
	}
	d.tick(ctx, cs, false)
}

func (d *Daemon) snapshot(ctx context.Context, cs *clusterState) *dbpilot.ClusterStatus {
	cs.mu.Lock()
	st := cs.status
	st.Instances = append([]*dbpilot.Instance(nil), cs.status.Instances...)
	st.Problems = append([]dbpilot.Problem(nil), cs.status.Problems...)
	st.Detached = append([]*dbpilot.Instance(nil), cs.status.Detached...)
	st.Fenced = append([]dbpilot.FencedInstance(nil), cs.status.Fenced...)
	st.ReplicaApply = append([]dbpilot.ReplicaApply(nil), cs.status.ReplicaApply...)
	cs.mu.Unlock()
	if st.Instances == nil {
		st.Instances = []*dbpilot.Instance{}
	}
	if st.Problems == nil {
		st.Problems = []dbpilot.Problem{}
	}
	st.BlockedUntil = cs.eng.BlockedUntil(ctx)
	if d.coord != nil {
		st.Owner, _ = d.coord.Owner(cs.cfg.Name)
	}
	if len(cs.cfg.rules) > 0 {
		st.PromotionRules = make(map[string]dbpilot.PromotionRule, len(cs.cfg.rules))
		for k, r := range cs.cfg.rules {
			st.PromotionRules[k.String()] = r
		}
	}
	if d.store != nil {
		limit := 1
		if len(st.Fenced) > 0 {
			limit = 20 // the failovers that fenced them
		}
		if recs, err := d.store.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: cs.cfg.Name, Limit: limit}); err == nil && len(recs) > 0 {
			st.LastRecovery = recs[0]
			for i := range st.Fenced {
				f := &st.Fenced[i]
				for _, r := range recs {
					if r.Success && (r.Kind == dbpilot.RecoveryFailoverAuto || r.Kind == dbpilot.RecoveryFailoverManual) && r.OldPrimary.Equal(f.Key) {
						f.Since, f.RecoveryID = r.Ended, r.ID
						break
					}
				}
			}
		}
	}
	return &st
}

// ClusterChanged returns a channel closed at the cluster's next status
// change (dbpilot.ClusterWatcher).
func (d *Daemon) ClusterChanged(ctx context.Context, name string) (<-chan struct{}, error) {
	cs, err := d.cluster(name)
	if err != nil {
		return nil, err
	}
	if d.fromOwner(ctx, name) != nil {
		// Observed by another serve: its status is asked of it again
		// after a poll interval.
		ch := make(chan struct{})
		time.AfterFunc(max(d.cfg.PollInterval.D(), time.Second), func() { close(ch) })
		return ch, nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.changed, nil
}

// Clusters returns every cluster's status.
func (d *Daemon) Clusters(ctx context.Context) ([]*dbpilot.ClusterStatus, error) {
	out := make([]*dbpilot.ClusterStatus, 0, len(d.order))
	asked := map[string][]*dbpilot.ClusterStatus{} // by owner's API
	for _, name := range d.order {
		cs := d.clusters[name]
		if dbpilot.IsPeerRead(ctx) && !d.observes(name) {
			continue // a peer asks for what this serve observes
		}
		if fwd := d.fromOwner(ctx, name); fwd != nil {
			_, api := d.coord.Owner(name)
			got, ok := asked[api]
			if !ok {
				got, _ = fwd.Clusters(dbpilot.WithPeerRead(ctx))
				asked[api] = got
			}
			if st := pick(got, name); st != nil {
				out = append(out, st)
				continue
			}
		}
		d.refresh(ctx, cs)
		out = append(out, d.snapshot(ctx, cs))
	}
	return out, nil
}

// fromOwner returns a client of the serve that observes the cluster when
// it is not this one (coordination): the status is asked of it. nil: this
// serve answers itself (alone, the owner, a peer's read, no owner known).
func (d *Daemon) fromOwner(ctx context.Context, name string) dbpilot.ClusterService {
	if d.coord == nil || d.forward == nil || !d.running.Load() || dbpilot.IsPeerRead(ctx) || d.observes(name) {
		return nil
	}
	if _, api := d.coord.Owner(name); api != "" {
		return d.forward(api)
	}
	return nil
}

// pick returns the status of cluster name in sts, nil when absent.
func pick(sts []*dbpilot.ClusterStatus, name string) *dbpilot.ClusterStatus {
	for _, st := range sts {
		if st.Name == name {
			return st
		}
	}
	return nil
}

// ClusterStatus returns one cluster's status.
func (d *Daemon) ClusterStatus(ctx context.Context, name string) (*dbpilot.ClusterStatus, error) {
	cs, err := d.cluster(name)
	if err != nil {
		return nil, err
	}
	if fwd := d.fromOwner(ctx, name); fwd != nil {
		if st, err := fwd.ClusterStatus(dbpilot.WithPeerRead(ctx), name); err == nil {
			return st, nil
		}
		// The owner does not answer (killed: its lease not yet expired):
		// this serve's last view, with the owner named.
	}
	d.refresh(ctx, cs)
	return d.snapshot(ctx, cs), nil
}

// Recoveries lists recoveries, newest first.
func (d *Daemon) Recoveries(ctx context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
	if f.Cluster != "" {
		if _, err := d.cluster(f.Cluster); err != nil {
			return nil, err
		}
	}
	if d.store == nil {
		return []*dbpilot.Recovery{}, nil
	}
	return d.store.Recoveries(ctx, f)
}

// AuditEvents lists audit events, oldest first.
func (d *Daemon) AuditEvents(ctx context.Context, f dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error) {
	if d.store == nil {
		return []dbpilot.AuditEvent{}, nil
	}
	return d.store.AuditEvents(ctx, f)
}

// operation is an operation's opening done: this serve may change the
// cluster (fence; nil for a serve alone), it holds the operation lock (cs.eng.TryLock), and the cluster
// was just observed (members, primary).
type operation struct {
	cs      *clusterState
	fence   *dbpilot.Fence
	members []*dbpilot.Instance
	primary *dbpilot.Instance
}

// opening is what an operation tells operate of itself.
type opening struct {
	what    string                                                  // "failover of c": the start of its refusals
	lead    dbpilot.OperationOptions                                // what leadership weighs (forwarded, dry run, forced)
	forward func(dbpilot.ClusterService) (*dbpilot.Recovery, error) // the same request, to the leader
	prepare func(context.Context)                                   // before the lock (nil: nothing)
}

// operate is the opening every operation repeats, written once:
// leadership, or the request forwarded to the serve that leads the
// cluster; the operation lock taken (another operation running refuses); the cluster
// observed. run then does the operation with the lock held.
func (d *Daemon) operate(ctx context.Context, cs *clusterState, o opening, run func(*operation) (*dbpilot.Recovery, error)) (*dbpilot.Recovery, error) {
	fence, fwd, err := d.leadership(ctx, cs, o.what, o.lead)
	// A leader that has just handed the cluster over (or lost it) refuses
	// the forwarded request as not its leader: it is forwarded again to
	// the new leader, for up to about 3 s.
	for try := 0; err == nil && fwd != nil; try++ {
		rec, ferr := o.forward(fwd)
		if try == 10 || !notLeader(ferr) || ctx.Err() != nil {
			return rec, ferr
		}
		sleepCtx(ctx, 300*time.Millisecond)
		fence, fwd, err = d.leadership(ctx, cs, o.what, o.lead)
	}
	if err != nil {
		return nil, err
	}
	if o.prepare != nil {
		o.prepare(ctx)
	}
	if err := lockOp(cs); err != nil {
		return nil, err
	}
	defer cs.eng.Unlock()
	members, primary, err := d.observe(ctx, cs)
	if err != nil {
		return nil, err
	}
	return run(&operation{cs: cs, fence: fence, members: members, primary: primary})
}

// notLeader reports whether err is a serve's refusal of a forwarded
// request because it does not lead the cluster (any more).
func notLeader(err error) bool {
	return dbpilot.ErrorCode(err) == dbpilot.ECONFLICT && strings.Contains(err.Error(), notLeaderText)
}

func lockOp(cs *clusterState) error {
	if !cs.eng.TryLock() {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s: another recovery or operation is running; see 'dbpilot recoveries'", cs.cfg.Name)
	}
	return nil
}

// Failover recovers a dead primary on request. It refuses a primary that is
// alive or still feeding its replicas (use switchover), and ignores the
// anti-flapping block: a person asked.
func (d *Daemon) Failover(ctx context.Context, name string, opt dbpilot.OperationOptions) (rec *dbpilot.Recovery, err error) {
	defer func() { d.auditOperation(ctx, name, "failover of "+name, opt, rec, err) }()
	cs, err := d.cluster(name)
	if err != nil {
		return nil, err
	}
	forward := func(fwd dbpilot.ClusterService) (*dbpilot.Recovery, error) {
		opt.Forwarded = true
		return fwd.Failover(ctx, name, opt)
	}
	return d.operate(ctx, cs, opening{what: "failover of " + name, lead: opt, forward: forward}, func(o *operation) (*dbpilot.Recovery, error) {
		return d.manualFailover(ctx, o, opt)
	})
}

// manualFailover is Failover once the operation is open.
func (d *Daemon) manualFailover(ctx context.Context, o *operation, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	cs, name, members, primary := o.cs, o.cs.cfg.Name, o.members, o.primary
	if err := noServerAnswers(name, primary, members); err != nil {
		return nil, err
	}
	if primary == nil {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "cluster %s: no primary found", name)
	}
	if primary.IsGalera() {
		return nil, galeraRefusal(name, "failover")
	}
	v := cs.eng.Assess(ctx, primary, members)
	if v.State != dbpilot.ClusterDead && !opt.DryRun {
		if !opt.Force || v.State == dbpilot.ClusterOK {
			hint := ""
			if v.State != dbpilot.ClusterOK {
				hint = "; if you know it is down or fenced, add --force (audited)"
			}
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s: not failing over: %s; for a planned change use 'dbpilot switchover %s'%s", name, v.Reason, name, hint)
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: name, Instance: primary.Key, Event: dbpilot.AuditForced,
			Message: fmt.Sprintf("forced failover of %s, which is not confirmed dead: %s", primary.Key, v.Reason)})
	}
	rec, err := cs.eng.Failover(ctx, dbpilot.RecoveryFailoverManual, opt.DryRun, o.fence)
	if err == nil && opt.DryRun && v.State != dbpilot.ClusterDead {
		rec.Plan = fmt.Sprintf("note: the primary is not dead (%s): a real failover would be refused\n", v.Reason) + rec.Plan
	}
	return rec, err
}

// Switchover replaces a live primary.
func (d *Daemon) Switchover(ctx context.Context, name string, opt dbpilot.OperationOptions) (rec *dbpilot.Recovery, err error) {
	defer func() { d.auditOperation(ctx, name, "switchover of "+name+toOf(opt), opt, rec, err) }()
	cs, err := d.cluster(name)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(opt, d.cfg.Recovery.KillGrace.D()); err != nil {
		return nil, err
	}
	forward := func(fwd dbpilot.ClusterService) (*dbpilot.Recovery, error) {
		opt.Forwarded = true
		return fwd.Switchover(ctx, name, opt)
	}
	lead := dbpilot.OperationOptions{Forwarded: opt.Forwarded, DryRun: opt.DryRun}
	return d.operate(ctx, cs, opening{what: "switchover of " + name, lead: lead, forward: forward}, func(o *operation) (*dbpilot.Recovery, error) {
		return d.switchover(ctx, o, opt)
	})
}

// switchover is Switchover once the operation is open.
func (d *Daemon) switchover(ctx context.Context, o *operation, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	cs, name, members, primary, fence := o.cs, o.cs.cfg.Name, o.members, o.primary, o.fence
	if err := noServerAnswers(name, primary, members); err != nil {
		return nil, err
	}
	if primary != nil && primary.IsGalera() {
		return nil, galeraRefusal(name, "switchover")
	}
	if primary == nil || !primary.Reachable {
		return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s: the primary is not reachable: a switchover needs a live primary; see 'dbpilot failover %s'", name, name)
	}
	if cs.multiPrimary() {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "cluster %s has several writers (ring or multi-source): switchover is not supported", name)
	}
	fresh := d.inspectAll(ctx, keysOf(members))
	var p *dbpilot.Instance
	for _, i := range fresh {
		if i.Key.Equal(primary.Key) {
			p = i
		}
	}
	exec := d.executor(fence)
	exec.Opt.SemiSync = cs.cfg.SemiSync
	if opt.MaxLag > 0 {
		exec.Opt.MaxLag = opt.MaxLag
	}
	if opt.DrainTimeout > 0 {
		exec.Opt.DrainTimeout = opt.DrainTimeout
	}
	plan, err := recovery.PlanSwitchover(name, p, fresh, opt.To, recovery.Rules(cs.cfg.rules), recovery.SwitchoverOptions{MaxLag: exec.Opt.MaxLag})
	if err != nil {
		return nil, err
	}
	rec := &dbpilot.Recovery{Cluster: name, Kind: dbpilot.RecoverySwitchover, OldPrimary: primary.Key, NewPrimary: plan.Candidate, Started: d.now(), Plan: plan.String()}
	if opt.DryRun {
		return rec, nil
	}
	shared, err := d.sharedBegin(ctx, fence, rec, nil)
	if err != nil {
		return nil, err
	}
	if d.store != nil {
		if err := d.store.CreateRecovery(ctx, rec); err != nil {
			return nil, err
		}
	}
	d.audit(ctx, dbpilot.AuditEvent{Cluster: name, RecoveryID: rec.ID, Instance: plan.Candidate, Event: dbpilot.AuditPlan, Message: plan.Reason,
		Detail: map[string]string{"plan": rec.Plan, "max_lag": exec.Opt.MaxLag.String(), "drain_timeout": exec.Opt.DrainTimeout.String()}})
	err = exec.Switchover(ctx, plan, rec)
	if err == nil {
		cs.mu.Lock()
		cs.setPrimary(plan.Candidate)
		cs.status.Primary = plan.Candidate
		cs.touch()
		cs.mu.Unlock()
	}
	cs.eng.EndRecovery(ctx, rec, err)
	d.sharedUpdate(ctx, fence, shared, rec, "")
	return rec, err
}

// Relocate moves a replica below another server of its cluster.
func (d *Daemon) Relocate(ctx context.Context, replica dbpilot.InstanceKey, opt dbpilot.OperationOptions) (rec *dbpilot.Recovery, err error) {
	var cs *clusterState
	defer func() {
		cluster := ""
		if cs != nil {
			cluster = cs.cfg.Name
		}
		d.auditOperation(ctx, cluster, fmt.Sprintf("relocate %s below %s", replica, opt.To), opt, rec, err)
	}()
	if opt.To.IsZero() {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "relocate: name the new source (--below HOST:PORT)")
	}
	if err := checkBounds(opt, d.cfg.Recovery.KillGrace.D()); err != nil {
		return nil, err
	}
	for _, name := range d.order {
		c := d.clusters[name]
		d.refresh(ctx, c)
		c.mu.Lock()
		instances := c.instances
		c.mu.Unlock()
		if fwd := d.fromOwner(ctx, name); fwd != nil {
			// Observed by another serve: its members as the owner sees them
			// (the operation itself is forwarded to the leader).
			if st, err := fwd.ClusterStatus(dbpilot.WithPeerRead(ctx), name); err == nil {
				instances = st.Instances
			}
		}
		for _, i := range instances {
			if i.Key.Equal(replica) {
				cs = c
			}
		}
		down := noServerAnswers(c.cfg.Name, nil, instances)
		if cs != nil {
			if down != nil && !d.running.Load() {
				// Acting directly, the crawl just now reached nothing.
				return nil, down
			}
			break
		}
	}
	if cs == nil {
		// Seen outside a cluster's tree (a fenced old primary): rejoin
		// attaches it; relocate moves members only.
		for _, name := range d.order {
			c := d.clusters[name]
			c.mu.Lock()
			for _, i := range c.detached {
				if i.Key.Equal(replica) {
					cs = c
				}
			}
			c.mu.Unlock()
			if cs != nil {
				return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "relocate: %s is outside cluster %s's replication tree (a fenced old primary, or a server that does not replicate): attach it below the primary with 'dbpilot rejoin %s --cluster %s'", replica, cs.cfg.Name, replica, cs.cfg.Name)
			}
		}
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "relocate: %s is not part of any watched cluster; a server outside a cluster's tree (a fenced old primary) is attached with 'dbpilot rejoin %s'", replica, replica)
	}
	forward := func(fwd dbpilot.ClusterService) (*dbpilot.Recovery, error) {
		opt.Forwarded = true
		return fwd.Relocate(ctx, replica, opt)
	}
	lead := dbpilot.OperationOptions{Forwarded: opt.Forwarded, DryRun: opt.DryRun}
	return d.operate(ctx, cs, opening{what: fmt.Sprintf("relocate %s", replica), lead: lead, forward: forward}, func(o *operation) (*dbpilot.Recovery, error) {
		return d.relocate(ctx, o, replica, opt)
	})
}

// relocate is Relocate once the operation is open.
func (d *Daemon) relocate(ctx context.Context, o *operation, replica dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	cs, fence := o.cs, o.fence
	fresh := d.inspectAll(ctx, keysOf(o.members))
	exec := d.executor(fence)
	if opt.MaxLag > 0 {
		exec.Opt.MaxLag = opt.MaxLag
	}
	plan, err := recovery.PlanRelocate(cs.cfg.Name, replica, opt.To, fresh, exec.Opt.MaxLag, opt.DryRun)
	if err != nil {
		return nil, err
	}
	rec := &dbpilot.Recovery{Cluster: cs.cfg.Name, Kind: dbpilot.RecoveryRelocate, OldPrimary: replica, NewPrimary: opt.To, Started: d.now(), Plan: plan}
	if opt.DryRun {
		return rec, nil
	}
	shared, err := d.sharedBegin(ctx, fence, rec, nil)
	if err != nil {
		return nil, err
	}
	if d.store != nil {
		if err := d.store.CreateRecovery(ctx, rec); err != nil {
			return nil, err
		}
	}
	err = exec.Relocate(ctx, replica, opt.To, rec)
	cs.eng.EndRecovery(ctx, rec, err)
	d.sharedUpdate(ctx, fence, shared, rec, "")
	return rec, err
}

// Rejoin attaches a server seen beside the cluster but outside its tree
// (a fenced old primary) below the cluster's primary as a read_only
// replica; with opt.Reclone it re-provisions it from a replica first.
// A server with errant transactions is refused without opt.Reclone.
func (d *Daemon) Rejoin(ctx context.Context, name string, instance dbpilot.InstanceKey, opt dbpilot.OperationOptions) (rec *dbpilot.Recovery, err error) {
	what := "rejoin " + instance.String()
	if opt.Reclone {
		what += " --reclone"
	}
	defer func() { d.auditOperation(ctx, name, what, opt, rec, err) }()
	if instance.IsZero() {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "rejoin: name the server to attach (HOST:PORT)")
	}
	cs, err := d.cluster(name)
	if err != nil {
		return nil, err
	}
	forward := func(fwd dbpilot.ClusterService) (*dbpilot.Recovery, error) {
		opt.Forwarded = true
		return fwd.Rejoin(ctx, name, instance, opt)
	}
	prepare := func(ctx context.Context) {
		if !d.running.Load() {
			// Acting directly: the old primaries the state remembers are
			// crawled and known as such, as serve knows them.
			cs.eng.RestoreFences(ctx)
		}
	}
	lead := dbpilot.OperationOptions{Forwarded: opt.Forwarded, DryRun: opt.DryRun}
	return d.operate(ctx, cs, opening{what: what, lead: lead, forward: forward, prepare: prepare}, func(o *operation) (*dbpilot.Recovery, error) {
		return d.rejoin(ctx, o, instance, opt)
	})
}

// rejoin is Rejoin once the operation is open.
func (d *Daemon) rejoin(ctx context.Context, op *operation, instance dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	cs, name, members, primary, fence := op.cs, op.cs.cfg.Name, op.members, op.primary, op.fence
	switch {
	case primary == nil:
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "cluster %s: no primary found: nothing to attach %s to", name, instance)
	case primary.IsGalera():
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "cluster %s is a Galera cluster: a node rejoins by state transfer when it starts; 'dbpilot rejoin' attaches servers to a replication tree", name)
	case cs.multiPrimary():
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "cluster %s has several writers (ring or multi-source): rejoin is not supported; attach %s by hand", name, instance)
	case !primary.Reachable:
		return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s: the primary %s is not reachable: nothing to attach %s to; see 'dbpilot failover %s'", name, primary.Key, instance, name)
	}
	for _, m := range members {
		if m.Key.Equal(instance) {
			src := "it is the primary"
			if len(m.Channels) > 0 {
				src = "it replicates from " + m.Channels[0].Source.String()
			}
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "rejoin: %s is already in cluster %s (%s): nothing to rejoin; to move it use 'dbpilot relocate %s --below HOST:PORT'", instance, name, src, instance)
		}
	}
	cs.mu.Lock()
	var old *dbpilot.Instance
	for _, i := range cs.detached {
		if i.Key.Equal(instance) {
			old = i
		}
	}
	cs.mu.Unlock()
	if old == nil {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "rejoin: %s is not seen beside cluster %s: rejoin attaches the cluster's fenced old primaries and the servers discovered outside its tree (see 'dbpilot topology'); check the address, or --cluster", instance, name)
	}
	fresh := d.inspectAll(ctx, append(keysOf(members), instance))
	o, p := fresh[len(fresh)-1], (*dbpilot.Instance)(nil)
	for _, i := range fresh {
		if i.Key.Equal(primary.Key) {
			p = i
		}
	}
	if !o.Reachable {
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "rejoin: %s is unreachable (%s): start it (serve fences it when it answers), then rejoin it", instance, o.LastError)
	}
	errant := ""
	if e, err := topology.Errant(o, p); err == nil {
		errant = e
	}
	var source dbpilot.InstanceKey
	if opt.Reclone {
		if d.recloner == nil {
			return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "rejoin --reclone: this dbpilot cannot re-provision servers")
		}
		source, _ = recovery.RecloneSource(instance, p.Key, fresh)
	} else if err := recovery.CheckRejoin(o, p); err != nil {
		return nil, err
	}
	rec := &dbpilot.Recovery{Cluster: name, Kind: dbpilot.RecoveryRejoin, OldPrimary: instance, NewPrimary: p.Key, Started: d.now(),
		Plan: recovery.RejoinPlan(instance, p.Key, source, errant, opt.Reclone, cs.cfg.SemiSync)}
	if opt.DryRun {
		return rec, nil
	}
	run := ctx
	if opt.Reclone {
		// A copy cut half way (the client gone) would leave the server
		// half restored: it runs to its end, recorded in the audit.
		run = context.WithoutCancel(ctx)
	}
	err := cs.eng.Rejoin(run, fence, rec, recovery.RejoinOptions{Reclone: opt.Reclone, Source: source})
	return rec, err
}

// Ack acknowledges a cluster's recoveries, lifting the anti-flapping block.
func (d *Daemon) Ack(ctx context.Context, name, by, comment string) (n int, err error) {
	defer func() {
		if err != nil { // a done ack is audited below, with its count
			d.auditOperation(ctx, name, "ack of "+name, dbpilot.OperationOptions{}, nil, err)
		}
	}()
	cs, err := d.cluster(name)
	if err != nil {
		return 0, err
	}
	if d.store == nil {
		return 0, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "no state store")
	}
	if by == "" {
		by = dbpilot.ActorOf(ctx) // the API token's name, when it says no more
	}
	n, err = d.store.AckRecoveries(ctx, name, by, comment)
	if err != nil {
		return 0, err
	}
	if d.coord != nil {
		// Every serve blocks on the shared recovery: lift it for all.
		if err := d.coord.Ack(ctx, name, by, comment); err != nil {
			return n, err
		}
	}
	d.audit(ctx, dbpilot.AuditEvent{Cluster: name, Event: dbpilot.AuditAck, Message: fmt.Sprintf("%d recoveries acknowledged by %s: %s", n, by, comment)})
	cs.eng.ClearNote()
	cs.notify() // the block is lifted
	return n, nil
}

// auditOperation records a person's request and its outcome, refusals
// included, so that the audit log shows every action whoever refused it. A
// dry run changes nothing and is not recorded.
func (d *Daemon) auditOperation(ctx context.Context, cluster, what string, opt dbpilot.OperationOptions, rec *dbpilot.Recovery, err error) {
	if opt.DryRun {
		return
	}
	e := dbpilot.AuditEvent{Cluster: cluster, Event: dbpilot.AuditOperation, Message: what + ": done", Detail: map[string]string{"outcome": "done"}}
	if rec != nil {
		e.RecoveryID = rec.ID
	}
	if err != nil {
		e.Message = what + ": " + err.Error()
		e.Detail = map[string]string{"outcome": "refused", "code": dbpilot.ErrorCode(err)}
		if rec != nil && rec.ID != 0 {
			e.Detail["outcome"] = "failed"
		}
	}
	d.audit(context.WithoutCancel(ctx), e)
}

// checkBounds refuses negative per-operation bounds, and a drain that
// would not outlast killGrace.
func checkBounds(opt dbpilot.OperationOptions, killGrace time.Duration) error {
	switch {
	case opt.MaxLag < 0:
		return dbpilot.Errorf(dbpilot.EINVALID, "max lag %s is negative: give a positive duration such as 10s, or none for switchover.max_lag", opt.MaxLag)
	case opt.DrainTimeout < 0:
		return dbpilot.Errorf(dbpilot.EINVALID, "drain timeout %s is negative: give a positive duration such as 5s, or none for switchover.drain_timeout", opt.DrainTimeout)
	case opt.DrainTimeout > 0 && opt.DrainTimeout <= killGrace:
		return dbpilot.Errorf(dbpilot.EINVALID, "drain timeout %s is not longer than recovery.kill_grace %s, which it includes: give a longer one", opt.DrainTimeout, killGrace)
	}
	return nil
}

func toOf(opt dbpilot.OperationOptions) string {
	if opt.To.IsZero() {
		return ""
	}
	return " to " + opt.To.String()
}

// galeraRefusal is the error of a failover or switchover asked of a Galera
// cluster: every node takes writes, a lost node's clients reconnect to
// another, and a node that comes back rejoins by state transfer.
func galeraRefusal(name, op string) error {
	return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "cluster %s is a Galera cluster: every node takes writes, so there is no %s; point clients at another node, and start a lost one again to rejoin ('dbpilot galera bootstrap' when all are down)", name, op)
}

// noServerAnswers is the error of an operation whose crawl reached no
// server of the cluster (each was given its connect timeout): nothing can
// be changed, and probing again would only wait as long once more. It
// carries the first server's error (which names it and says why: refused,
// timed out, access denied); nil when a server answered.
func noServerAnswers(name string, primary *dbpilot.Instance, members []*dbpilot.Instance) error {
	if recovery.AnyReachable(primary, members) {
		return nil
	}
	var down []*dbpilot.Instance
	seen := map[dbpilot.InstanceKey]bool{}
	for _, i := range append([]*dbpilot.Instance{primary}, members...) {
		if i == nil || seen[i.Key.Normalized()] {
			continue
		}
		seen[i.Key.Normalized()] = true
		down = append(down, i)
	}
	if len(down) == 0 {
		return nil
	}
	why := down[0].LastError
	if why == "" {
		why = down[0].Key.String() + " unreachable"
	}
	if len(down) > 1 {
		why += fmt.Sprintf(" (and %d more servers unreachable)", len(down)-1)
	}
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "cluster %s: no server answers: %s", name, why)
}
