package coord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// watch keeps the caches of members, leaders and shared recoveries: a
// read of everything under the prefix, then a watch from that revision;
// again from the start when the watch breaks, and when the session changes
// (a watch on a connection that went silent is not trusted past the loss
// of the session that noticed it).
//
// A recovery written while no watch ran (between a broken watch and the
// read after it) is passed to OnRecovery's function from that read;
// those present at the first read are not (they are history).
func (e *Etcd) watch(ctx context.Context) {
	recRev := map[string]int64{} // mod revision of each recovery key passed on or read
	primed := false
	for ctx.Err() == nil {
		if e.cli == nil {
			return
		}
		_, gen := e.session()
		pfx := e.opt.Prefix + "/"
		rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
		resp, err := e.cli.Range(rctx, etcdhttp.RangeRequest{Key: []byte(pfx), RangeEnd: etcdhttp.PrefixEnd(pfx)})
		cancel()
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		e.mu.Lock()
		e.members = map[string]dbpilot.CoordMember{}
		e.seen = map[string]dbpilot.ClusterLeader{}
		leaders := map[string]*etcdhttp.KeyValue{}
		var missed []*dbpilot.SharedRecovery
		for _, kv := range resp.Kvs {
			r := e.applyLocked(kv, false, leaders)
			if r == nil {
				continue
			}
			if primed && kv.ModRevision > recRev[string(kv.Key)] {
				missed = append(missed, r)
			}
			recRev[string(kv.Key)] = kv.ModRevision
		}
		fn := e.onRec
		e.mu.Unlock()
		primed = true
		for _, r := range missed {
			e.log.Debug("coordination: recovery written while no watch ran", "cluster", r.Cluster, "recovery", r.ID)
			if fn != nil {
				fn(r)
			}
		}
		e.watchFrom(ctx, pfx, resp.Header.Revision+1, gen, recRev)
	}
}

// watchFrom applies the changes under pfx from rev on, until the watch
// breaks, ctx ends or gen is closed.
func (e *Etcd) watchFrom(ctx context.Context, pfx string, rev int64, gen <-chan struct{}, recRev map[string]int64) {
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w, err := e.cli.Watch(wctx, etcdhttp.WatchRequest{Key: []byte(pfx), RangeEnd: etcdhttp.PrefixEnd(pfx), StartRevision: rev, PrevKV: true})
	if err != nil {
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
		return
	}
	defer w.Close()
	go func() {
		select {
		case <-gen:
		case <-wctx.Done():
		}
		wcancel()
	}()
	for {
		wr, err := w.Next()
		if err != nil {
			// Not at once again: a watch etcd keeps refusing (no leader)
			// would spin.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			return
		}
		var recs []*dbpilot.SharedRecovery
		var gone []string // election keys deleted: who leads now is read after
		e.mu.Lock()
		for _, ev := range wr.Events {
			if ev.IsDelete() {
				e.applyLocked(ev.PrevKv, true, nil)
				if ev.PrevKv != nil && strings.Contains(string(ev.PrevKv.Key), "/leader/") {
					gone = append(gone, string(ev.PrevKv.Key))
				}
				continue
			}
			if r := e.applyLocked(ev.Kv, false, nil); r != nil {
				recs = append(recs, r)
				recRev[string(ev.Kv.Key)] = ev.Kv.ModRevision
			}
		}
		fn := e.onRec
		e.mu.Unlock()
		for _, k := range gone {
			e.refreshLeader(ctx, k)
		}
		if fn != nil {
			for _, r := range recs {
				fn(r)
			}
		}
	}
}

// applyLocked applies one key to the caches and returns the recovery it
// holds, if it is one. leaders tracks the lowest create revision per
// cluster during the first read.
func (e *Etcd) applyLocked(kv *etcdhttp.KeyValue, deleted bool, leaders map[string]*etcdhttp.KeyValue) *dbpilot.SharedRecovery {
	if kv == nil {
		return nil
	}
	rest := strings.TrimPrefix(string(kv.Key), e.opt.Prefix+"/")
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && parts[0] == "members":
		if deleted {
			delete(e.members, parts[1])
			return nil
		}
		var m dbpilot.CoordMember
		if json.Unmarshal(kv.Value, &m) == nil {
			e.members[parts[1]] = m
		}
	case len(parts) == 4 && parts[0] == "clusters" && parts[2] == "leader":
		c := parts[1]
		if deleted {
			if e.seen[c].Token == kv.CreateRevision {
				delete(e.seen, c)
			}
			return nil
		}
		cur, ok := e.seen[c]
		if !ok || cur.Token == 0 || kv.CreateRevision < cur.Token || cur.Token == kv.CreateRevision {
			e.seen[c] = dbpilot.ClusterLeader{Cluster: c, Member: string(kv.Value), Token: kv.CreateRevision, Since: time.Now()}
		}
		if leaders != nil {
			leaders[c] = kv
		}
	case len(parts) == 3 && parts[0] == "clusters" && parts[2] == "recovery":
		if deleted {
			delete(e.recs, parts[1])
			return nil
		}
		var r dbpilot.SharedRecovery
		if json.Unmarshal(kv.Value, &r) == nil {
			e.recs[parts[1]] = &r
			c := r
			return &c
		}
	}
	return nil
}

// refreshLeader re-reads the first key of an election whose leader key
// was deleted (without e.mu held: it is a request).
func (e *Etcd) refreshLeader(ctx context.Context, deletedKey string) {
	i := strings.LastIndex(deletedKey, "/")
	pfx := deletedKey[:i+1]
	rctx, cancel := context.WithTimeout(ctx, e.opt.RequestTimeout)
	defer cancel()
	resp, err := e.cli.Range(rctx, etcdhttp.RangeRequest{Key: []byte(pfx), RangeEnd: etcdhttp.PrefixEnd(pfx),
		SortOrder: etcdhttp.SortAscend, SortTarget: etcdhttp.SortByCreate, Limit: 1})
	if err != nil || len(resp.Kvs) == 0 {
		return
	}
	kv := resp.Kvs[0]
	parts := strings.Split(strings.TrimPrefix(string(kv.Key), e.opt.Prefix+"/"), "/")
	if len(parts) == 4 {
		e.mu.Lock()
		// A key created since (a later event) may have been applied already.
		if cur, ok := e.seen[parts[1]]; !ok || cur.Token == 0 || kv.CreateRevision <= cur.Token {
			e.seen[parts[1]] = dbpilot.ClusterLeader{Cluster: parts[1], Member: string(kv.Value), Token: kv.CreateRevision, Since: time.Now()}
		}
		e.mu.Unlock()
	}
}
