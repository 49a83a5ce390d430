package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// ErrMemberTaken is Run's error when another serve holds this member id.
var ErrMemberTaken = dbpilot.Errorf(dbpilot.ECONFLICT, "coordination: member id in use")

// Run keeps a session with etcd (a lease kept alive, this serve registered
// as a member), campaigns for every cluster and watches the shared state,
// until ctx ends. When etcd is lost it starts again with a new session.
// It returns an error only when this serve's member id is held by another
// serve at the first registration (two serves with one --id).
func (e *Etcd) Run(ctx context.Context) error {
	if e.cli == nil {
		return fmt.Errorf("coordination: Run before Start")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: the watch and the campaigns end
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.watch(ctx)
	}()
	for _, c := range e.opt.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.campaign(ctx, c)
		}()
	}
	first := true
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		err := e.runSession(ctx, first)
		if err == ErrMemberTaken && first {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "coordination: another serve is registered with id %q in etcd; give each serve its own --id", e.opt.Member)
		}
		first = false
		if ctx.Err() != nil {
			break
		}
		switch {
		case err != nil && isAuthError(err):
			// etcd was unreachable at Start, and refuses the credentials now.
			err = e.authError(err)
			e.setUnavailable(err.Error())
			e.log.Error("coordination: etcd refused the credentials; monitoring only", "err", err)
		case err != nil:
			e.setUnavailable(err.Error())
			e.log.Warn("coordination unavailable: monitoring only, no automatic recovery", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return nil
}

// runSession grants a lease, registers the member and keeps the lease
// alive until it is lost (etcd unreachable past the TTL, or the lease gone).
func (e *Etcd) runSession(ctx context.Context, first bool) error {
	ttl := int64(e.opt.LeaseTTL / time.Second)
	granted := time.Now() // the lease runs from no earlier than this
	lease, _, err := e.cli.LeaseGrant(ctx, ttl)
	if err != nil {
		return fmt.Errorf("etcd at %s: grant lease: %w", strings.Join(e.opt.Endpoints, ","), err)
	}
	if err := e.register(ctx, lease, first, &granted); err != nil {
		e.revoke(lease)
		return err
	}
	sess := &session{lease: lease, done: make(chan struct{})}
	e.mu.Lock()
	e.sess = sess
	e.lastKA = granted
	e.reason = ""
	close(e.sessGen)
	e.sessGen = make(chan struct{})
	e.mu.Unlock()
	e.metrics.available.Set(1)
	e.metrics.ttl.Set(e.opt.LeaseTTL.Seconds())
	e.metrics.lastKA.SetToCurrentTime()
	e.log.Info("coordination: connected to etcd", "member", e.opt.Member, "lease", fmt.Sprintf("%x", lease), "ttl", e.opt.LeaseTTL)

	// Keepalives every TTL/3 (sooner again after a failed one), each bounded
	// by the request timeout. A lease that etcd stops confirming is given
	// up after its TTL: by then etcd may have expired it and another serve
	// may lead.
	kaEvery, retry := e.opt.LeaseTTL/3, e.opt.LeaseTTL/10
	type kaResult struct {
		sent time.Time
		ttl  int64
		err  error
	}
	kaDone := make(chan kaResult, 1)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	kaTimer := time.NewTimer(kaEvery)
	defer kaTimer.Stop()
	inFlight := false
	check := time.NewTicker(e.opt.LeaseTTL / 10)
	defer check.Stop()
	var lost error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-kaTimer.C:
			inFlight = true
			go func() {
				sent := time.Now()
				t, err := e.cli.LeaseKeepAlive(sctx, lease)
				kaDone <- kaResult{sent, t, err}
			}()
		case r := <-kaDone:
			inFlight = false
			switch {
			case r.err == nil && r.ttl > 0:
				// The lease runs from when etcd renewed it, no earlier than
				// the request was sent.
				e.mu.Lock()
				e.lastKA = r.sent
				e.mu.Unlock()
				e.metrics.lastKA.SetToCurrentTime()
				kaTimer.Reset(kaEvery)
			case r.err == nil || etcdhttp.IsLeaseNotFound(r.err):
				lost = fmt.Errorf("etcd: lease %x lost (expired or revoked)", lease)
				break loop
			default:
				e.log.Debug("coordination: lease keepalive failed", "lease", fmt.Sprintf("%x", lease), "err", r.err)
				kaTimer.Reset(retry)
			}
		case <-check.C:
			if ok, why := e.alive(); !ok {
				lost = fmt.Errorf("%s", why)
				break loop
			}
		}
	}
	e.mu.Lock()
	e.sess = nil
	close(sess.done)
	close(e.sessGen)
	e.sessGen = make(chan struct{})
	for c := range e.leading {
		delete(e.leading, c)
		e.metrics.leader.WithLabelValues(c).Set(0)
	}
	e.mu.Unlock()
	stop()
	if inFlight {
		<-kaDone
	}
	if ctx.Err() != nil {
		// Stopping: give the leaderships up at once rather than after the TTL.
		e.revoke(lease)
		return nil
	}
	return lost
}

func (e *Etcd) revoke(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opt.RequestTimeout)
	defer cancel()
	e.cli.LeaseRevoke(ctx, id)
}

// register writes members/{id} on the lease, refusing an id another live
// serve holds. At the first registration a key left by this id's previous
// process (killed: its lease not yet expired) is waited for, up to a TTL.
// renewed is when the lease was last renewed (sent); register keeps the
// lease alive while it waits.
func (e *Etcd) register(ctx context.Context, lease int64, first bool, renewed *time.Time) error {
	k := e.key("members", e.opt.Member)
	val, _ := json.Marshal(dbpilot.CoordMember{ID: e.opt.Member, API: e.opt.API, Version: e.opt.Version, Started: e.started})
	deadline := time.Now().Add(e.opt.LeaseTTL + time.Second)
	for {
		// Free, or held by this very process under a lease of an earlier
		// session (etcd lost its quorum meanwhile, the lease not expired):
		// the value names this process's start.
		resp, err := e.cli.Txn(ctx, etcdhttp.TxnRequest{
			Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(k, etcdhttp.Equal, 0)},
			Success: []etcdhttp.RequestOp{etcdhttp.OpPut(k, string(val), lease)},
			Failure: []etcdhttp.RequestOp{etcdhttp.OpTxn(
				[]etcdhttp.Compare{etcdhttp.CompareValue(k, etcdhttp.Equal, string(val))},
				[]etcdhttp.RequestOp{etcdhttp.OpPut(k, string(val), lease)}, nil)},
		})
		if err != nil {
			return fmt.Errorf("etcd: register member %s: %w", e.opt.Member, err)
		}
		if resp.Succeeded || (len(resp.Responses) > 0 && resp.Responses[0].Txn != nil && resp.Responses[0].Txn.Succeeded) {
			return nil
		}
		if !first || time.Now().After(deadline) {
			return ErrMemberTaken
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Since(*renewed) >= e.opt.LeaseTTL/3 {
			sent := time.Now()
			if ttl, err := e.cli.LeaseKeepAlive(ctx, lease); err == nil && ttl > 0 {
				*renewed = sent
			}
		}
	}
}

// campaign runs the cluster's election for as long as ctx lasts: it waits
// for a session, campaigns, holds the leadership until the session ends,
// and campaigns again with the next session.
func (e *Etcd) campaign(ctx context.Context, cluster string) {
	for ctx.Err() == nil {
		sess, gen := e.session()
		if sess == nil {
			select {
			case <-ctx.Done():
				return
			case <-gen:
			}
			continue
		}
		// Spread clusters: the member ranked first for a cluster (rendezvous
		// hashing over the live members) campaigns at once, the others a
		// little later, so that serves started together share the clusters.
		if d := e.campaignDelay(cluster); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-sess.Done():
				continue
			case <-time.After(d):
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sess.Done():
			case <-cctx.Done():
			}
			cancel()
		}()
		key, rev, err := e.elect(cctx, sess, e.electionPrefix(cluster), e.opt.Member)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			continue
		}
		e.mu.Lock()
		if e.sess != sess {
			e.mu.Unlock()
			cancel()
			continue
		}
		l := &leadership{key: key, fence: dbpilot.Fence{Cluster: cluster, Member: e.opt.Member, Token: rev}, since: time.Now()}
		e.leading[cluster] = l
		e.mu.Unlock()
		e.metrics.leader.WithLabelValues(cluster).Set(1)
		e.metrics.elections.WithLabelValues(cluster).Inc()
		e.log.Info("coordination: leader of cluster", "cluster", cluster, "member", e.opt.Member, "token", l.fence.Token)
		handed := e.hold(cctx, cluster, l)
		cancel()
		e.mu.Lock()
		if e.leading[cluster] == l {
			delete(e.leading, cluster)
		}
		e.mu.Unlock()
		e.metrics.leader.WithLabelValues(cluster).Set(0)
		switch {
		case handed:
			// Back in line behind the member it handed over to.
		case ctx.Err() == nil:
			e.log.Warn("coordination: leadership of cluster ended", "cluster", cluster, "member", e.opt.Member)
		}
	}
}

// hold keeps the leadership l of cluster until ctx ends, or hands it over
// to the member rendezvous hashing ranks first for the cluster when that
// member is live and in line for it: every serve then leads (and observes,
// and collects) the clusters it ranks first, and a serve that joins takes
// its share. The handover waits for the cluster to be idle (no shared
// recovery running; OnHandover's function, the daemon's operation lock)
// and withdraws the election key: the next in line leads. It reports
// whether it handed over. A leadership is held at least handoverAfter
// lease TTLs first.
func (e *Etcd) hold(ctx context.Context, cluster string, l *leadership) bool {
	every := e.opt.LeaseTTL / 2
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if time.Since(l.since) < handoverAfter*e.opt.LeaseTTL {
			continue // a leadership just won (serves that lose and regain their leases on a loaded host) is not moved at once
		}
		top := e.rankedFirst(cluster)
		if top == e.opt.Member || !e.inLine(ctx, cluster, top) {
			continue
		}
		e.mu.Lock()
		rec, fn := e.recs[cluster], e.onHandover
		e.mu.Unlock()
		if rec != nil && rec.State == dbpilot.SharedRunning {
			continue
		}
		give := func() {
			e.mu.Lock()
			if e.leading[cluster] == l {
				delete(e.leading, cluster) // Lead and Check fail from now on
			}
			e.mu.Unlock()
			e.resign(l.key, l.fence.Token)
		}
		if fn == nil {
			give()
		} else if !fn(cluster, give) {
			continue
		}
		e.log.Info("coordination: leadership of cluster handed over", "cluster", cluster, "member", e.opt.Member, "to", top)
		return true
	}
}

// handoverAfter is how many lease TTLs a leadership is held before it is
// handed over (hold).
const handoverAfter = 2

// rankedFirst is the live member rendezvous hashing ranks first for cluster.
func (e *Etcd) rankedFirst(cluster string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return rendezvous(cluster, e.memberIDsLocked())[0]
}

// inLine reports whether member campaigns for cluster (has a key in its
// election), read from etcd: a member whose lease expired is not.
func (e *Etcd) inLine(ctx context.Context, cluster, member string) bool {
	pfx := e.electionPrefix(cluster) + "/"
	rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
	defer cancel()
	resp, err := e.cli.Range(rctx, etcdhttp.RangeRequest{Key: []byte(pfx), RangeEnd: etcdhttp.PrefixEnd(pfx)})
	if err != nil {
		return false
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) == member {
			return true
		}
	}
	return false
}

// OnHandover sets the function a leader calls before it hands a cluster
// over (see hold): it calls give, which ends the leadership, only when
// the cluster is idle (no topology change running), and reports whether
// it did. Without it the leadership is given when no shared recovery runs.
func (e *Etcd) OnHandover(fn func(cluster string, give func()) bool) {
	e.mu.Lock()
	e.onHandover = fn
	e.mu.Unlock()
}

// campaignDelay is how long this member waits before campaigning for
// cluster: 0 for the member rendezvous hashing ranks first among the
// registered members, a quarter of the TTL per rank for the others.
func (e *Etcd) campaignDelay(cluster string) time.Duration {
	e.mu.Lock()
	ids := e.memberIDsLocked()
	e.mu.Unlock()
	rank := slices.Index(rendezvous(cluster, ids), e.opt.Member)
	return time.Duration(rank) * e.opt.LeaseTTL / 4
}

// memberIDsLocked are the live members' ids, this serve's included. The
// caller holds e.mu.
func (e *Etcd) memberIDsLocked() []string {
	ids := make([]string, 0, len(e.members)+1)
	for id := range e.members {
		ids = append(ids, id)
	}
	if !slices.Contains(ids, e.opt.Member) {
		ids = append(ids, e.opt.Member)
	}
	return ids
}

// rendezvous ranks ids for key by highest random weight (FNV-1a of the
// key and the id, mixed): every serve that knows the same members ranks them
// alike, and a member joining or leaving moves only the keys it ranks
// first (or ranked first).
func rendezvous(key string, ids []string) []string {
	score := func(id string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(key + "\x00" + id))
		// FNV-1a alone ranks badly ids that differ in their last byte
		// (a, b, c: one of them first for half the keys); a finalizer
		// (MurmurHash3's fmix64) spreads its bits.
		x := h.Sum64()
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		return x
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		sa, sb := score(a), score(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}
