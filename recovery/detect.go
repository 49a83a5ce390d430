package recovery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// This file is the failure detection the recovery engine decides on: the
// re-probe of a failing primary, the confirmation round (the primary
// re-probed and its replicas asked at once, in parallel), the
// anti-flapping block, and what becomes of an old primary that answers
// again. Engine (engine.go) keeps each cluster's detection state and uses
// these at every observation the daemon feeds it.

// PrimaryProbe is the re-probe of a cluster's failing primary: at most one
// attempt in flight, shared by the confirmation rounds. A hung primary
// (SIGSTOP, a frozen host) accepts TCP and never greets: every attempt
// lasts the whole probe timeout, and a round that waited for its own
// attempt each time confirmed the failure once per probe timeout instead of
// every failing round. The zero PrimaryProbe is ready.
type PrimaryProbe struct {
	mu     sync.Mutex
	key    dbpilot.InstanceKey
	done   chan struct{}     // closed when the attempt in flight ends; nil when none is
	last   *dbpilot.Instance // the last finished attempt: Reachable, or LastError/RefusedErrno
	failed bool              // the last finished attempt got no answer at all
}

// Probe returns what the primary key answered: the result of the attempt
// in flight (one is started with inspect, bounded by timeout, when none
// is), or — when the previous attempt already got no answer at all and the
// one in flight has not answered within grace — no answer. Any answer, an
// error packet included, is proof of life (Instance.Answers); a primary
// that answers resets it.
func (pp *PrimaryProbe) Probe(ctx context.Context, key dbpilot.InstanceKey, inspect func(context.Context, dbpilot.InstanceKey) error, timeout, grace time.Duration) *dbpilot.Instance {
	pp.mu.Lock()
	if !pp.key.Equal(key) {
		pp.key, pp.done, pp.last, pp.failed = key, nil, nil, false
	}
	if pp.done == nil {
		done := make(chan struct{})
		pp.done = done
		go func() {
			defer close(done)
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			res := &dbpilot.Instance{Key: key}
			if err := inspect(pctx, key); err != nil {
				res.LastError, res.RefusedErrno = err.Error(), dbpilot.ServerErrno(err)
			} else {
				res.Reachable = true
			}
			pp.mu.Lock()
			defer pp.mu.Unlock()
			if pp.done == done {
				pp.done, pp.last, pp.failed = nil, res, !res.Answers()
			}
		}()
	}
	done, failedBefore := pp.done, pp.failed
	pp.mu.Unlock()

	var graceC <-chan time.Time
	if failedBefore {
		t := time.NewTimer(grace)
		defer t.Stop()
		graceC = t.C
	}
	start := time.Now()
	select {
	case <-done:
		pp.mu.Lock()
		defer pp.mu.Unlock()
		if pp.last == nil || !pp.last.Key.Equal(key) {
			return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: superseded", key)}
		}
		r := *pp.last
		return &r
	case <-graceC:
		return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: no answer for %s, after a probe that got none", key, time.Since(start).Round(time.Millisecond))}
	case <-ctx.Done():
		return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: %v", key, ctx.Err())}
	}
}

// Answered records that the primary answered a probe of the tick: a later
// failure starts with a whole attempt again.
func (pp *PrimaryProbe) Answered() {
	pp.mu.Lock()
	pp.failed = false
	pp.mu.Unlock()
}

// Confirm is the confirmation round of a primary that failed its probe:
// reprobe re-probes it while every member replicating from it is read
// afresh with inspect, in parallel (a failed read becomes an unreachable
// instance stamped now()). annotate, when set, sees the replicas as read
// before the verdict: the caller's silence tracking sets each channel's
// SourceSilentFor there, on which a hung primary's replicas vote
// (topology.Silent). It returns the verdict (topology.AssessPrimary) and
// the replicas as read.
func Confirm(ctx context.Context, primary *dbpilot.Instance, members []*dbpilot.Instance,
	reprobe func(context.Context) *dbpilot.Instance,
	inspect func(context.Context, dbpilot.InstanceKey) (*dbpilot.Instance, error), now func() time.Time,
	annotate func([]*dbpilot.Instance)) (topology.Verdict, []*dbpilot.Instance) {
	var keys []dbpilot.InstanceKey
	for _, m := range members {
		if m.Channel(primary.Key) != nil {
			keys = append(keys, m.Key)
		}
	}
	fresh := make([]*dbpilot.Instance, len(keys))
	var wg sync.WaitGroup
	// The re-probe of the primary: any answer, an error packet included,
	// is proof of life (Instance.Answers).
	var again *dbpilot.Instance
	wg.Add(1)
	go func() {
		defer wg.Done()
		again = reprobe(ctx)
	}()
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := inspect(ctx, k)
			if err != nil {
				inst = &dbpilot.Instance{Key: k, LastError: err.Error(), ObservedAt: now()}
			}
			fresh[i] = inst
		}()
	}
	wg.Wait()
	if annotate != nil {
		annotate(fresh)
	}
	return topology.AssessPrimary(again, fresh), fresh
}

// BlockedUntil returns when automatic recovery of a cluster is allowed
// again after its recoveries recs (newest first), or zero when it is not
// blocked: block after the newest failover not acknowledged. A switchover
// after it lifts the block; relocations and rejoins neither block nor lift
// it.
func BlockedUntil(recs []*dbpilot.Recovery, block time.Duration, now time.Time) time.Time {
	var r *dbpilot.Recovery
	for _, x := range recs {
		if x.Kind != dbpilot.RecoveryRelocate && x.Kind != dbpilot.RecoveryRejoin {
			r = x
			break
		}
	}
	if r == nil || r.Acked || r.Kind == dbpilot.RecoverySwitchover {
		return time.Time{}
	}
	end := r.Ended
	if end.IsZero() {
		end = r.Started
	}
	until := end.Add(block)
	if now.Before(until) {
		return until
	}
	return time.Time{}
}

// Returning is what becomes of a fenced old primary that answers again.
type Returning struct {
	// Rejoin: it has no errant transactions and the cluster rejoins old
	// primaries: it becomes a replica of the new primary (RejoinPlan).
	Rejoin bool
	// Note is why it stays out, read_only ("" with Rejoin); Detail goes
	// with it in the audit.
	Note   string
	Detail map[string]string
}

// DecideReturning decides for old, a fenced old primary that answers, and
// the cluster's reachable newPrimary: with errant transactions (GTIDs the
// new primary lacks) it stays read_only and out of the cluster; without,
// it rejoins when rejoin is on, and stays detached otherwise. An error is
// a failure to compare their GTIDs.
func DecideReturning(old, newPrimary *dbpilot.Instance, rejoin bool) (Returning, error) {
	errant, err := topology.Errant(old, newPrimary)
	if err != nil {
		return Returning{}, err
	}
	switch {
	case errant != "":
		return Returning{Note: fmt.Sprintf("old primary %s has errant transactions the new primary %s lacks: %s; it stays read_only and out of the cluster ('dbpilot rejoin %s --reclone' re-provisions and attaches it)", old.Key, newPrimary.Key, errant, old.Key),
			Detail: map[string]string{"errant": errant}}, nil
	case !rejoin:
		return Returning{Note: fmt.Sprintf("old primary %s has no errant transactions; rejoin is off, so it stays read_only and detached ('dbpilot rejoin %s' attaches it)", old.Key, old.Key)}, nil
	}
	return Returning{Rejoin: true}, nil
}

// MultiPrimary reports whether members have several writers: more than
// one without a source (multi-source), or none at all (a ring, where every
// member is a replica). Failover and switchover support neither.
func MultiPrimary(members []*dbpilot.Instance) bool {
	n := 0
	for _, i := range members {
		if !i.IsReplica() {
			n++
		}
	}
	if n > 1 {
		return true
	}
	return n == 0 && len(members) > 0
}

// Hold is why the automatic recovery of a cluster's dead primary waits:
// Event names it for the log, Message says it. The zero Hold lets it run.
type Hold struct {
	Event, Message string
}

// HoldAutomatic decides whether the automatic recovery of cluster's dead
// primary may start: not while servers are claimed by another cluster too
// (overlap), not for several writers (MultiPrimary), not while a recent
// recovery blocks it (blockedUntil, asked last, zero when not blocked).
func HoldAutomatic(cluster string, overlap []dbpilot.Problem, members []*dbpilot.Instance, blockedUntil func() time.Time) Hold {
	if len(overlap) > 0 {
		return Hold{"auto-failover-suspended", "automatic recovery suspended: " + overlap[0].Message}
	}
	if MultiPrimary(members) {
		return Hold{"auto-failover-skipped", "the cluster has several writers (ring or multi-source): automatic failover is not supported"}
	}
	if until := blockedUntil(); !until.IsZero() {
		return Hold{"blocked", fmt.Sprintf("automatic recovery blocked until %s by a recent recovery; acknowledge it with 'dbpilot ack %s'", until.Format(time.RFC3339), cluster)}
	}
	return Hold{}
}
