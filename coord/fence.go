package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// Lead implements dbpilot.Coordinator.
func (e *Etcd) Lead(cluster string) (dbpilot.Fence, error) {
	if ok, why := e.alive(); !ok {
		return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.EUNAVAIL, "coordination unavailable: %s", why)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := e.leading[cluster]; l != nil {
		return l.fence, nil
	}
	if s, ok := e.seen[cluster]; ok && s.Member != "" && s.Member != e.opt.Member {
		return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s is led by serve %q", cluster, s.Member)
	}
	return dbpilot.Fence{}, dbpilot.Errorf(dbpilot.ECONFLICT, "cluster %s: this serve (%s) is not its leader (election in progress)", cluster, e.opt.Member)
}

// Check implements dbpilot.Coordinator: a transaction that succeeds only
// while f's election key exists with f's revision. It is a read-only
// transaction, so etcd serves it with a linearizable read (no disk write).
func (e *Etcd) Check(ctx context.Context, f dbpilot.Fence) error {
	start := time.Now()
	e.mu.Lock()
	l := e.leading[f.Cluster]
	e.mu.Unlock()
	if l == nil || l.fence.Token != f.Token {
		e.metrics.checks.WithLabelValues("lost").Inc()
		return lost(f, "fencing token %d is no longer current", f.Token)
	}
	if ok, why := e.alive(); !ok {
		e.metrics.checks.WithLabelValues("lost").Inc()
		return lost(f, "%s", why)
	}
	rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
	defer cancel()
	resp, err := e.cli.Txn(rctx, etcdhttp.TxnRequest{Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(l.key, etcdhttp.Equal, f.Token)}})
	e.metrics.checkSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		e.metrics.checks.WithLabelValues("error").Inc()
		return lost(f, "etcd did not confirm it: %v", err)
	}
	if !resp.Succeeded {
		e.metrics.checks.WithLabelValues("lost").Inc()
		return lost(f, "fencing token %d is no longer current", f.Token)
	}
	e.metrics.checks.WithLabelValues("ok").Inc()
	return nil
}

// lost is the error of a failed fencing check.
func lost(f dbpilot.Fence, format string, args ...any) error {
	return &dbpilot.Error{Code: dbpilot.ECONFLICT, Err: dbpilot.ErrLeadershipLost,
		Message: fmt.Sprintf("coordination: serve %s, leader of cluster %s, ", f.Member, f.Cluster) + fmt.Sprintf(format, args...)}
}

// LeaderOf implements dbpilot.Coordinator.
func (e *Etcd) LeaderOf(cluster string) (member, api string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading[cluster] != nil {
		return e.opt.Member, ""
	}
	s, ok := e.seen[cluster]
	if !ok {
		return "", ""
	}
	return s.Member, e.members[s.Member].API
}

// Owner implements dbpilot.Coordinator: the leader (this serve when it
// leads), else the live member ranked first for the cluster by
// rendezvous hashing; "" while coordination is unavailable.
//
// A session lost for less than ownerGrace lease TTLs keeps the owners last
// known (a keepalive late on a loaded host does not make every serve
// observe and collect every cluster at once, only to give them back a
// moment later); so does a serve that has not had its first session for
// one TTL since Start (owner connectingOwner: it observes nothing yet).
func (e *Etcd) Owner(cluster string) (member, api string) {
	if ok, _ := e.alive(); !ok {
		e.mu.Lock()
		lastKA := e.lastKA
		e.mu.Unlock()
		switch {
		case lastKA.IsZero() && time.Since(e.started) < e.opt.LeaseTTL:
			return connectingOwner, ""
		case lastKA.IsZero() || time.Since(lastKA) > ownerGrace*e.opt.LeaseTTL:
			return "", ""
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading[cluster] != nil {
		return e.opt.Member, e.opt.API
	}
	if s, ok := e.seen[cluster]; ok && s.Member != "" {
		if m, live := e.members[s.Member]; live || s.Member == e.opt.Member {
			return s.Member, m.API
		}
	}
	id := rendezvous(cluster, e.memberIDsLocked())[0]
	if id == e.opt.Member {
		return id, e.opt.API
	}
	return id, e.members[id].API
}

// ownerGrace is how many lease TTLs a lost session keeps the owners last
// known (Owner).
const ownerGrace = 3

// connectingOwner is Owner's answer before the first session: no serve
// known yet, none of them this one.
const connectingOwner = "(connecting to etcd)"

// Peers implements dbpilot.Coordinator: the live members but this serve.
func (e *Etcd) Peers() []dbpilot.CoordMember {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]dbpilot.CoordMember, 0, len(e.members))
	for id, m := range e.members {
		if id != e.opt.Member {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b dbpilot.CoordMember) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// guardedPut writes key=val only while f holds.
func (e *Etcd) guardedPut(ctx context.Context, f dbpilot.Fence, key string, val []byte, extra ...etcdhttp.RequestOp) error {
	e.mu.Lock()
	l := e.leading[f.Cluster]
	e.mu.Unlock()
	if l == nil || l.fence.Token != f.Token {
		return lost(f, "fencing token %d is no longer current", f.Token)
	}
	rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
	defer cancel()
	ops := append([]etcdhttp.RequestOp{etcdhttp.OpPut(key, string(val), 0)}, extra...)
	resp, err := e.cli.Txn(rctx, etcdhttp.TxnRequest{Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(l.key, etcdhttp.Equal, f.Token)}, Success: ops})
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: write %s", key)
	}
	if !resp.Succeeded {
		return lost(f, "fencing token %d is no longer current", f.Token)
	}
	return nil
}

// BeginRecovery implements dbpilot.Coordinator. The ID comes from one
// counter for every cluster, incremented in the same transaction.
func (e *Etcd) BeginRecovery(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error {
	rec.Cluster, rec.Member, rec.Token = f.Cluster, f.Member, f.Token
	if rec.State == "" {
		rec.State = dbpilot.SharedRunning
	}
	counter := e.key("recovery-id")
	for attempt := 0; ; attempt++ {
		if rec.ID != 0 {
			return e.UpdateRecovery(ctx, f, rec)
		}
		rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
		kv, _, err := e.cli.Get(rctx, counter)
		cancel()
		if err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: read recovery id")
		}
		var next int64 = 1
		var mod int64
		if kv != nil {
			n, _ := strconv.ParseInt(string(kv.Value), 10, 64)
			next, mod = n+1, kv.ModRevision
		}
		rec.ID = next
		val, _ := json.Marshal(rec)
		e.mu.Lock()
		l := e.leading[f.Cluster]
		e.mu.Unlock()
		if l == nil || l.fence.Token != f.Token {
			rec.ID = 0
			return lost(f, "fencing token %d is no longer current", f.Token)
		}
		rctx, cancel = context.WithTimeout(ctx, e.opt.RequestTimeout)
		tr, err := e.cli.Txn(rctx, etcdhttp.TxnRequest{
			Compare: []etcdhttp.Compare{
				etcdhttp.CompareCreate(l.key, etcdhttp.Equal, f.Token),
				etcdhttp.CompareMod(counter, etcdhttp.Equal, mod),
			},
			Success: []etcdhttp.RequestOp{etcdhttp.OpPut(counter, strconv.FormatInt(next, 10), 0), etcdhttp.OpPut(e.recoveryKey(f.Cluster), string(val), 0)},
			Failure: []etcdhttp.RequestOp{etcdhttp.OpGet(l.key)},
		})
		cancel()
		if err != nil {
			rec.ID = 0
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: begin recovery of %s", f.Cluster)
		}
		if tr.Succeeded {
			e.cache(rec)
			return nil
		}
		rec.ID = 0
		if len(tr.Responses) > 0 && tr.Responses[0].Range != nil && len(tr.Responses[0].Range.Kvs) == 0 {
			return lost(f, "fencing token %d is no longer current", f.Token)
		}
		if attempt > 20 {
			return dbpilot.Errorf(dbpilot.EUNAVAIL, "coordination: begin recovery of %s: the id counter keeps changing", f.Cluster)
		}
	}
}

// UpdateRecovery implements dbpilot.Coordinator.
func (e *Etcd) UpdateRecovery(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := e.guardedPut(ctx, f, e.recoveryKey(f.Cluster), val); err != nil {
		return err
	}
	e.cache(rec)
	return nil
}

func (e *Etcd) cache(rec *dbpilot.SharedRecovery) {
	c := *rec
	c.Steps = slices.Clone(rec.Steps)
	e.mu.Lock()
	e.recs[rec.Cluster] = &c
	e.mu.Unlock()
}

// Recovery implements dbpilot.Coordinator: a linearizable read, or the
// cache when etcd does not answer.
func (e *Etcd) Recovery(ctx context.Context, cluster string) (*dbpilot.SharedRecovery, error) {
	rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
	defer cancel()
	kv, _, err := e.cli.Get(rctx, e.recoveryKey(cluster))
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: read recovery of %s", cluster)
	}
	if kv == nil {
		return nil, nil
	}
	var r dbpilot.SharedRecovery
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "coordination: recovery of %s", cluster)
	}
	return &r, nil
}

// Ack implements dbpilot.Coordinator: any serve may acknowledge (it
// changes no server); a compare on the key's revision keeps a concurrent
// update of the recovery.
func (e *Etcd) Ack(ctx context.Context, cluster, by, comment string) error {
	k := e.recoveryKey(cluster)
	for range 20 {
		rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
		kv, _, err := e.cli.Get(rctx, k)
		cancel()
		if err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: ack %s", cluster)
		}
		if kv == nil {
			return nil
		}
		var r dbpilot.SharedRecovery
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "coordination: recovery of %s", cluster)
		}
		if r.Acked {
			return nil
		}
		r.Acked, r.AckedBy, r.AckComment, r.AckedAt = true, by, comment, time.Now().UTC()
		val, _ := json.Marshal(r)
		rctx, cancel = context.WithTimeout(ctx, e.opt.RequestTimeout)
		tr, err := e.cli.Txn(rctx, etcdhttp.TxnRequest{
			Compare: []etcdhttp.Compare{etcdhttp.CompareMod(k, etcdhttp.Equal, kv.ModRevision)},
			Success: []etcdhttp.RequestOp{etcdhttp.OpPut(k, string(val), 0)},
		})
		cancel()
		if err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "coordination: ack %s", cluster)
		}
		if tr.Succeeded {
			e.cache(&r)
			return nil
		}
	}
	return fmt.Errorf("coordination: ack %s: the recovery keeps changing", cluster)
}
