package daemon

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mock"
)

// Unit tests of the daemon under coordination: who may change the cluster
// (the leader, under its fence), forwarding, refusal without etcd, and the
// takeover of a recovery left running. The etcd side is in package coord,
// the whole on real servers in cmd/dbpilot's TestCoordinatedServes.

// forwarded is the ClusterService of a leader other than this serve.
type forwarded struct {
	dbpilot.ClusterService
	api string
	opt dbpilot.OperationOptions
	n   int
}

func (f *forwarded) Failover(_ context.Context, cluster string, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	f.n++
	f.opt = opt
	return &dbpilot.Recovery{Cluster: cluster, Plan: "run by " + f.api}, nil
}

func coordDaemon(w *world, co *mock.Coordinator, fwd *forwarded) (*Daemon, *clusterState) {
	d, cs := w.daemon(nil)
	d.coord = co
	d.forward = func(api string) dbpilot.ClusterService { fwd.api = api; return fwd }
	return d, cs
}

func TestCoordFollowerLeavesTheClusterAlone(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	co := &mock.Coordinator{
		LeadFn: func(c string) (dbpilot.Fence, error) {
			return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s is led by serve %q", c, "b")
		},
		LeaderOfFn: func(string) (string, string) { return "b", "http://10.0.0.9:7070" },
	}
	fwd := &forwarded{}
	d, cs := coordDaemon(w, co, fwd)
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if st, _ := cs.state(); st != dbpilot.ClusterDead {
		t.Errorf("a follower still assesses: state %s", st)
	}
	if len(w.calls) != 0 || len(w.recoveries()) != 0 {
		t.Fatalf("a follower changed the cluster: calls %v, recoveries %d", w.calls, len(w.recoveries()))
	}
	rec, err := d.Failover(ctx, "c", dbpilot.OperationOptions{})
	if err != nil || fwd.n != 1 || !fwd.opt.Forwarded || fwd.api != "http://10.0.0.9:7070" || rec.Plan != "run by http://10.0.0.9:7070" {
		t.Fatalf("failover asked of a follower: %v, forwarded %d times to %q with %+v", err, fwd.n, fwd.api, fwd.opt)
	}
	// A request forwarded already is not forwarded again.
	if _, err := d.Failover(ctx, "c", dbpilot.OperationOptions{Forwarded: true}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || fwd.n != 1 {
		t.Errorf("a forwarded request at a follower: %v (forwarded %d)", err, fwd.n)
	}
	if len(w.calls) != 0 {
		t.Errorf("calls %v", w.calls)
	}
}

func TestCoordUnavailableNoAutomaticRecovery(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	co := &mock.Coordinator{LeadFn: func(string) (dbpilot.Fence, error) {
		return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.EUNAVAIL, "coordination unavailable: etcd unreachable")
	}}
	d, cs := coordDaemon(w, co, &forwarded{})
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if len(w.calls) != 0 || len(w.recoveries()) != 0 {
		t.Fatalf("recovered without coordination: calls %v", w.calls)
	}
	_, err := d.Failover(ctx, "c", dbpilot.OperationOptions{})
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "--force-without-coordination") {
		t.Fatalf("manual failover without coordination: %v", err)
	}
	// A plan is still given.
	if rec, err := d.Failover(ctx, "c", dbpilot.OperationOptions{DryRun: true}); err != nil || rec.Plan == "" {
		t.Errorf("dry run without coordination: %v", err)
	}
	rec, err := d.Failover(ctx, "c", dbpilot.OperationOptions{ForceWithoutCoordination: true})
	if err != nil || !rec.Success || rec.NewPrimary != wkey(2) {
		t.Fatalf("forced failover: %v %+v", err, rec)
	}
	forced := false
	for _, e := range w.audits {
		if e.Event == dbpilot.AuditCoordination && e.Detail["forced"] == "true" {
			forced = true
		}
	}
	if !forced {
		t.Errorf("the forced failover is not audited as forced: %v", w.events())
	}
}

// The leader checks its fence before every statement that changes a
// server; once the check fails it stops at once.
func TestCoordFencingStopsTheRecovery(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	var mu sync.Mutex
	checks, allowed := 0, 2
	var begun, updated []*dbpilot.SharedRecovery
	fence := dbpilot.Fence{Cluster: "c", Member: "self", Token: 42}
	co := &mock.Coordinator{
		LeadFn: func(string) (dbpilot.Fence, error) { return fence, nil },
		CheckFn: func(_ context.Context, f dbpilot.Fence) error {
			mu.Lock()
			defer mu.Unlock()
			if f != fence {
				t.Errorf("checked fence %+v", f)
			}
			checks++
			if checks > allowed {
				return &dbpilot.Error{Code: dbpilot.ECONFLICT, Message: "lease lost", Err: dbpilot.ErrLeadershipLost}
			}
			return nil
		},
		BeginRecoveryFn: func(_ context.Context, f dbpilot.Fence, r *dbpilot.SharedRecovery) error {
			if len(w.calls) != 0 {
				t.Errorf("recovery recorded after a change: %v", w.calls)
			}
			r.ID = 7
			c := *r
			begun = append(begun, &c)
			return nil
		},
		UpdateRecoveryFn: func(_ context.Context, f dbpilot.Fence, r *dbpilot.SharedRecovery) error {
			c := *r
			updated = append(updated, &c)
			return nil
		},
	}
	d, cs := coordDaemon(w, co, &forwarded{})
	ctx := context.Background()
	d.tick(ctx, cs, true)
	w.kill(1)
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	recs := w.recoveries()
	if len(recs) != 1 || recs[0].ID != 7 || recs[0].Success || !strings.Contains(recs[0].Error, "lease lost") {
		t.Fatalf("recoveries = %+v; audit %v", *recs[0], w.events())
	}
	// One check after the hooks, then one per change: the changes made are
	// those whose check passed, and none after.
	if got := len(w.calls); got != allowed-1 {
		t.Errorf("changes made = %v, want %d (checks %d)", w.calls, allowed-1, checks)
	}
	if len(begun) != 1 || begun[0].Candidate != wkey(2) || begun[0].OldPrimary != wkey(1) {
		t.Errorf("begun = %+v", begun)
	}
	if n := len(updated); n == 0 || updated[n-1].State != dbpilot.SharedFailed {
		t.Errorf("last update = %+v", updated)
	}
	if ev := w.events(); slices.Contains(ev, dbpilot.AuditCandidateFailed) {
		t.Errorf("a lost leadership was taken for a dead candidate: %v", ev)
	}
	if !errors.Is(&dbpilot.Error{Err: dbpilot.ErrLeadershipLost}, dbpilot.ErrLeadershipLost) {
		t.Fatal("ErrLeadershipLost")
	}
}

// A new leader finds a failover its predecessor left half-done: the
// candidate already promoted is kept, the replica still on the dead
// primary is moved below it, and nothing is promoted a second time.
func TestCoordResumeFinishesAPromotedFailover(t *testing.T) {
	w := newWorld(t, 10, 2, 3)
	fence := dbpilot.Fence{Cluster: "c", Member: "self", Token: 9}
	shared := &dbpilot.SharedRecovery{ID: 5, Cluster: "c", Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: wkey(1), Candidate: wkey(2),
		Member: "gone", Token: 3, State: dbpilot.SharedRunning, Started: w.clock()}
	var updated []*dbpilot.SharedRecovery
	// The first leadership's takeover check reads no recovery left
	// running; the one after the kill below reads shared.
	var left *dbpilot.SharedRecovery
	co := &mock.Coordinator{
		LeadFn:     func(string) (dbpilot.Fence, error) { return fence, nil },
		RecoveryFn: func(context.Context, string) (*dbpilot.SharedRecovery, error) { return left, nil },
		UpdateRecoveryFn: func(_ context.Context, f dbpilot.Fence, r *dbpilot.SharedRecovery) error {
			c := *r
			updated = append(updated, &c)
			return nil
		},
	}
	d, cs := coordDaemon(w, co, &forwarded{})
	ctx := context.Background()
	d.tick(ctx, cs, true)
	// The previous leader promoted node 2, then died.
	w.kill(1)
	w.inst[wkey(2)].Channels, w.inst[wkey(2)].ReadOnly = nil, false
	fence.Token = 10 // a new leadership: its takeover check finds shared
	left = shared
	w.advance(time.Second)
	d.tick(ctx, cs, true)
	if slices.Contains(w.calls, "ResetReplicaAll 2") || slices.ContainsFunc(w.calls, func(c string) bool { return strings.HasPrefix(c, "SetReadOnly 2") }) {
		t.Errorf("node 2 promoted again: %v", w.calls)
	}
	if ch := w.inst[wkey(3)].Channel(wkey(2)); ch == nil {
		t.Errorf("node 3 was not moved below node 2: %+v (calls %v)", w.inst[wkey(3)].Channels, w.calls)
	}
	if _, p := cs.state(); p != wkey(2) {
		t.Errorf("primary = %s", p)
	}
	if n := len(updated); n == 0 || updated[n-1].State != dbpilot.SharedDone || updated[n-1].ID != 5 {
		t.Errorf("updates = %+v", updated)
	}
	recs := w.recoveries()
	if len(recs) != 1 || recs[0].ID != 5 || !recs[0].Success || recs[0].NewPrimary != wkey(2) {
		t.Errorf("recoveries = %+v", *recs[0])
	}
	// The next tick does not fail over again.
	calls := len(w.calls)
	d.tick(ctx, cs, true)
	if len(w.calls) != calls || len(w.recoveries()) != 1 {
		t.Errorf("a second recovery: calls %v", w.calls[calls:])
	}
}
