package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/recovery"
)

// Several serves on the same clusters (coordination.etcd) share them: the
// owner of a cluster (its leader; while nobody leads it, the live member
// rendezvous hashing ranks first) alone observes it, assesses it and
// collects the metrics of its instances; the others query none of its
// servers and ask the owner for its status (peerStatus). The leader alone
// changes its topology, and each of its mutating statements is preceded by
// a fencing check (fencedCtl). A request for a cluster another serve leads
// is forwarded to that serve. While coordination is unavailable every
// serve observes and collects every cluster, as a serve alone does.

// observes reports whether this serve observes the cluster now: alone, as
// its owner, or while coordination is unavailable.
func (d *Daemon) observes(cluster string) bool {
	if d.coord == nil {
		return true
	}
	owner, _ := d.coord.Owner(cluster)
	return owner == "" || owner == d.coord.Member()
}

// release gives up a cluster another serve owns: its metric collection
// stops here (the owner's runners take it over) and its watchers are told.
func (d *Daemon) release(ctx context.Context, cs *clusterState) {
	if d.mon != nil {
		d.mon.reconcile(ctx, cs.cfg.Name, nil, nil)
	}
	owner, _ := d.coord.Owner(cs.cfg.Name)
	d.log.Info("coordination: another serve observes the cluster; its servers are not queried here", "cluster", cs.cfg.Name, "owner", owner)
	cs.notify()
}

// fencedCtl is a ReplicationController that checks, before every mutating
// call, that the fence still holds; reads pass through.
type fencedCtl struct {
	dbpilot.ReplicationController
	check func(ctx context.Context) error
}

func (c fencedCtl) StopReplica(ctx context.Context, k dbpilot.InstanceKey) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.StopReplica(ctx, k)
}

func (c fencedCtl) StartReplica(ctx context.Context, k dbpilot.InstanceKey) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.StartReplica(ctx, k)
}

func (c fencedCtl) ResetReplicaAll(ctx context.Context, k dbpilot.InstanceKey) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.ResetReplicaAll(ctx, k)
}

func (c fencedCtl) ChangeSource(ctx context.Context, k, src dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.ChangeSource(ctx, k, src, opt)
}

func (c fencedCtl) SetReadOnly(ctx context.Context, k dbpilot.InstanceKey, ro bool) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.SetReadOnly(ctx, k, ro)
}

func (c fencedCtl) KillClientConnections(ctx context.Context, k dbpilot.InstanceKey) (int, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	return c.ReplicationController.KillClientConnections(ctx, k)
}

func (c fencedCtl) SetSemiSync(ctx context.Context, k dbpilot.InstanceKey, primary, replica bool) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.ReplicationController.SetSemiSync(ctx, k, primary, replica)
}

// StopReceivers stops the IO threads under the fence when the controller
// can (dbpilot.ReceiverStopper); otherwise it stops nothing and the
// failover's STOP SLAVE does it later.
func (c fencedCtl) StopReceivers(ctx context.Context, k dbpilot.InstanceKey) error {
	rs, ok := c.ReplicationController.(dbpilot.ReceiverStopper)
	if !ok {
		return nil
	}
	if err := c.check(ctx); err != nil {
		return err
	}
	return rs.StopReceivers(ctx, k)
}

// ApplierThreads passes the read through when the controller can read
// applier threads (dbpilot.ApplierInspector); otherwise it knows none.
func (c fencedCtl) ApplierThreads(ctx context.Context, k dbpilot.InstanceKey) ([]dbpilot.ApplierThread, error) {
	if ai, ok := c.ReplicationController.(dbpilot.ApplierInspector); ok {
		return ai.ApplierThreads(ctx, k)
	}
	return nil, nil
}

// fencedPosCtl is fencedCtl over a controller that can set positions.
type fencedPosCtl struct {
	fencedCtl
	pos dbpilot.ReplicaPositioner
}

func (c fencedPosCtl) SetReplicaPosition(ctx context.Context, k dbpilot.InstanceKey, pos string) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.pos.SetReplicaPosition(ctx, k, pos)
}

// controller returns the controller for a change made under fence: d.ctl
// itself when the serve acts alone (fence nil).
func (d *Daemon) controller(fence *dbpilot.Fence) dbpilot.ReplicationController {
	if fence == nil || d.coord == nil {
		return d.ctl
	}
	f := *fence
	fc := fencedCtl{ReplicationController: d.ctl, check: func(ctx context.Context) error {
		err := d.coord.Check(ctx, f)
		if err != nil {
			d.log.Warn("fencing check failed: not changing the cluster", "cluster", f.Cluster, "token", f.Token, "err", err)
		}
		return err
	}}
	if p, ok := d.ctl.(dbpilot.ReplicaPositioner); ok {
		return fencedPosCtl{fencedCtl: fc, pos: p}
	}
	return fc
}

// notLeaderText is in the refusal of a forwarded request by a serve that
// does not lead the cluster (notLeader).
const notLeaderText = "does not lead cluster"

// leadership decides how a requested change of cs proceeds: under this
// serve's fence (leader), forwarded to the leader (fwd), or refused. A
// serve alone gets (nil, nil, nil).
func (d *Daemon) leadership(ctx context.Context, cs *clusterState, what string, opt dbpilot.OperationOptions) (*dbpilot.Fence, dbpilot.ClusterService, error) {
	if d.coord == nil {
		return nil, nil, nil
	}
	f, err := d.coord.Lead(cs.cfg.Name)
	if err == nil {
		return &f, nil, nil
	}
	if opt.DryRun && dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL {
		return nil, nil, nil // a plan changes nothing
	}
	switch dbpilot.ErrorCode(err) {
	case dbpilot.ECONFLICT:
		member, api := d.coord.LeaderOf(cs.cfg.Name)
		if opt.Forwarded || api == "" || d.forward == nil {
			return nil, nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "%s: this serve (%s) "+notLeaderText+" %s and cannot forward the request (leader %q, api %q); retry in a few seconds", what, d.coord.Member(), cs.cfg.Name, member, api)
		}
		return nil, d.forward(api), nil
	default:
		if opt.ForceWithoutCoordination {
			d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Event: dbpilot.AuditCoordination,
				Message: fmt.Sprintf("%s forced without coordination (%v): another serve may act on the cluster too", what, err),
				Detail:  map[string]string{"forced": "true", "member": d.coord.Member()}})
			return nil, nil, nil
		}
		return nil, nil, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "%s refused: %v; with etcd unreachable no serve may change the cluster (use --force-without-coordination to act anyway, at the risk that another serve acts too)", what, err)
	}
}

// sharedBegin records a recovery in the coordination state before its
// first mutating step (recovery.Shared.Begin).
func (d *Daemon) sharedBegin(ctx context.Context, fence *dbpilot.Fence, rec *dbpilot.Recovery, resumed *dbpilot.SharedRecovery) (*dbpilot.SharedRecovery, error) {
	return d.shared().Begin(ctx, fence, rec, resumed)
}

// sharedUpdate records the recovery's progress or end
// (recovery.Shared.Update); a serve alone resumes from its state store
// (recovery.Engine.Resume).
func (d *Daemon) sharedUpdate(ctx context.Context, fence *dbpilot.Fence, sr *dbpilot.SharedRecovery, rec *dbpilot.Recovery, step string) {
	d.shared().Update(ctx, fence, sr, rec, step)
}

// shared is the shared-recovery bookkeeping over this serve's coordinator.
func (d *Daemon) shared() recovery.Shared {
	return recovery.Shared{Coord: d.coord, Log: d.log}
}

// mirror copies a recovery another serve recorded into this serve's state
// store, so that every serve lists it and blocks on it.
func (d *Daemon) mirror(sr *dbpilot.SharedRecovery) {
	if d.store == nil || d.coord == nil || sr.ID == 0 {
		return
	}
	if _, ok := d.clusters[sr.Cluster]; !ok {
		return
	}
	rec := &dbpilot.Recovery{ID: sr.ID, Cluster: sr.Cluster, Kind: sr.Kind, OldPrimary: sr.OldPrimary, Started: sr.Started, Ended: sr.Ended,
		Success: sr.State == dbpilot.SharedDone, Error: sr.Error, Acked: sr.Acked, AckedAt: sr.AckedAt, AckedBy: sr.AckedBy, AckComment: sr.AckComment,
		Plan: fmt.Sprintf("run by serve %s (fencing token %d)", sr.Member, sr.Token)}
	if sr.State == dbpilot.SharedDone {
		rec.NewPrimary = sr.Candidate
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sr.Member == d.coord.Member() {
		// Our own recovery: the local record is the full one; only an ack
		// made on another serve is copied.
		if sr.Acked {
			if _, err := d.store.AckRecoveries(ctx, sr.Cluster, sr.AckedBy, sr.AckComment); err != nil {
				d.log.Warn("coordination: copy ack", "cluster", sr.Cluster, "err", err)
			}
		}
		return
	}
	err := d.store.UpdateRecovery(ctx, rec)
	if dbpilot.ErrorCode(err) == dbpilot.ENOTFOUND {
		err = d.store.CreateRecovery(ctx, rec)
	}
	if err != nil {
		d.log.Warn("coordination: copy recovery", "cluster", sr.Cluster, "recovery", sr.ID, "err", err)
	}
	if cs := d.clusters[sr.Cluster]; cs != nil {
		cs.notify()
		d.adopt(cs, sr)
	}
}

// adopt makes this serve take the new primary of a recovery that another
// serve finished (a failover or switchover, state done), once per
// recovery: the new primary becomes the cluster's primary, a failed-over
// old primary is to be fenced should this serve lead when it returns, and
// the watch loop observes the cluster at once. Without it a follower kept
// the old primary until its next crawl found the new one, and a killed
// primary started again writable in between (a standalone server) was
// taken for the primary that had come back. It reports whether it adopted.
func (d *Daemon) adopt(cs *clusterState, sr *dbpilot.SharedRecovery) bool {
	if sr.State != dbpilot.SharedDone || sr.Candidate.IsZero() || sr.OldPrimary.Equal(sr.Candidate) {
		return false
	}
	failover := sr.Kind == dbpilot.RecoveryFailoverAuto || sr.Kind == dbpilot.RecoveryFailoverManual
	if !failover && sr.Kind != dbpilot.RecoverySwitchover {
		return false
	}
	cs.mu.Lock()
	if cs.adopted == sr.ID {
		cs.mu.Unlock()
		return false
	}
	cs.adopted = sr.ID
	cs.promoted(sr.Candidate)
	cs.known = appendKey(cs.known, sr.Candidate)
	if failover {
		cs.eng.MarkFenced(sr.OldPrimary)
		cs.known = appendKey(cs.known, sr.OldPrimary)
	}
	cs.mu.Unlock()
	d.log.Info("coordination: new primary adopted from a recovery of another serve", "cluster", cs.cfg.Name, "recovery", sr.ID,
		"old_primary", sr.OldPrimary.String(), "primary", sr.Candidate.String(), "member", sr.Member)
	select {
	case cs.wake <- struct{}{}:
	default:
	}
	return true
}

// replacedShared is checked when the primary this serve watched answers
// again after a failure: when the cluster's last shared recovery replaced
// that primary (its watch event may have been missed), the recovery's new
// primary is adopted and the primary that came back is not taken for the
// primary. It reads etcd on that transition only.
func (d *Daemon) replacedShared(ctx context.Context, cs *clusterState, primary dbpilot.InstanceKey) bool {
	if !cs.eng.Failing() {
		return false
	}
	sr, err := d.coord.Recovery(ctx, cs.cfg.Name)
	if err != nil || sr == nil || !sr.OldPrimary.Equal(primary) || sr.Member == d.coord.Member() {
		return false // no record of its replacement, or our own (applied as it ran)
	}
	return d.adopt(cs, sr)
}

// CoordinationStatus is what GET /api/coordination shows.
func (d *Daemon) CoordinationStatus(ctx context.Context) *dbpilot.CoordinationStatus {
	if d.coord == nil {
		return &dbpilot.CoordinationStatus{State: dbpilot.CoordinationSingle, Members: []dbpilot.CoordMember{}, Leaders: []dbpilot.ClusterLeader{}}
	}
	st := d.coord.Status(ctx)
	st.Collecting = d.Monitored()
	return st
}

// handover ends this serve's leadership of cluster (give) when no
// recovery or operation runs on it: the operation lock is held meanwhile,
// so none starts under a leadership being given up.
func (d *Daemon) handover(cluster string, give func()) bool {
	cs := d.clusters[cluster]
	if cs == nil {
		give()
		return true
	}
	// Only a healthy cluster is handed over: the primary answers, no
	// recovery is blocked or running, so the new leader's first
	// observation finds the cluster as this serve knows it.
	cs.mu.Lock()
	healthy := cs.status.State == dbpilot.ClusterOK
	cs.mu.Unlock()
	if !healthy || cs.eng.Failing() || cs.eng.BlockedUntil(context.Background()).After(d.now()) {
		return false
	}
	if !cs.eng.TryLock() {
		return false
	}
	defer cs.eng.Unlock()
	give()
	return true
}

// shadowEvery is how often a serve reads, from their owners, the status
// of the clusters it does not observe (shadowLoop).
const shadowEvery = 5 * time.Second

// shadowLoop keeps, until ctx ends, what this serve knows of the clusters
// another serve observes: every shadowEvery (or poll interval, when
// longer) it asks each owner for the status of its clusters (one request
// per owner) and takes their members, primary and status (shadow). A serve
// that becomes a cluster's owner (its owner killed) then starts from the
// members the owner knew, a dead primary's replicas included, not from
// the seeds of its configuration; and its API answers with that status
// while the dead owner's lease runs.
func (d *Daemon) shadowLoop(ctx context.Context) {
	every := max(shadowEvery, d.cfg.PollInterval.D())
	t := time.NewTimer(2 * d.cfg.PollInterval.D()) // the owners known by then
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(every)
		}
		asked := map[string][]*dbpilot.ClusterStatus{}
		for _, name := range d.order {
			if d.observes(name) {
				continue
			}
			_, api := d.coord.Owner(name)
			if api == "" {
				continue
			}
			got, ok := asked[api]
			if !ok {
				rctx, cancel := context.WithTimeout(ctx, shadowEvery)
				got, _ = d.forward(api).Clusters(dbpilot.WithPeerRead(rctx))
				cancel()
				asked[api] = got
			}
			if st := pick(got, name); st != nil && !d.observes(name) {
				d.clusters[name].shadow(st)
			}
		}
	}
}

// shadow takes the owner's status of a cluster this serve does not
// observe: its members become known (the crawl seeds, and the places of
// members that do not answer at this serve's first observation), its
// primary this serve's.
func (cs *clusterState) shadow(st *dbpilot.ClusterStatus) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.placed == nil {
		cs.placed = map[dbpilot.InstanceKey]*dbpilot.Instance{}
	}
	for _, i := range st.Instances {
		cs.known = appendKey(cs.known, i.Key)
		switch {
		case !i.Reachable:
		case len(i.Channels) > 0:
			cs.placed[i.Key.Normalized()] = i
		default:
			delete(cs.placed, i.Key.Normalized())
		}
	}
	if !st.Primary.IsZero() {
		cs.known = appendKey(cs.known, st.Primary)
		cs.setPrimary(st.Primary)
	}
	cs.instances, cs.detached = st.Instances, st.Detached
	cs.status.State, cs.status.Primary = st.State, st.Primary
	cs.status.Instances, cs.status.Detached, cs.status.Fenced = st.Instances, st.Detached, st.Fenced
	cs.status.Problems, cs.status.ObservedAt = st.Problems, st.ObservedAt
	cs.touch()
}

// PeerAPIs are the API addresses of the other live serves, for the
// fleet-wide metric queries (httpapi.FleetMetrics); nil for a serve alone.
func (d *Daemon) PeerAPIs() []string {
	if d.coord == nil {
		return nil
	}
	var out []string
	for _, m := range d.coord.Peers() {
		if m.API != "" {
			out = append(out, m.API)
		}
	}
	return out
}

// Coordinated reports whether this serve is one of several (coordination).
func (d *Daemon) Coordinated() bool { return d.coord != nil }
