package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// The election is etcd's concurrency.Election, over the HTTP client: each
// candidate puts PREFIX/{lease in hex} on its session lease; the key with
// the lowest create revision leads, and its create revision is the
// leader's fencing token. A candidate waits for the deletion of every key
// created before its own (its predecessor in line, one at a time).

// errKeyGone: the candidate's key vanished (its lease expired).
var errKeyGone = errors.New("election key gone (lease expired)")

// elect campaigns with sess's lease under prefix until this candidate
// leads or ctx ends; it returns the candidate's key and its create
// revision. Canceled, it withdraws the key; on other errors the key stays
// (the next campaign of the same session keeps its place).
func (e *Etcd) elect(ctx context.Context, sess *session, prefix, val string) (string, int64, error) {
	key := fmt.Sprintf("%s/%x", prefix, sess.lease)
	resp, err := e.cli.Txn(ctx, etcdhttp.TxnRequest{
		Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(key, etcdhttp.Equal, 0)},
		Success: []etcdhttp.RequestOp{etcdhttp.OpPut(key, val, sess.lease)},
		Failure: []etcdhttp.RequestOp{etcdhttp.OpGet(key)},
	})
	if err != nil {
		return "", 0, fmt.Errorf("etcd: campaign %s: %w", prefix, err)
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		if len(resp.Responses) == 0 || resp.Responses[0].Range == nil || len(resp.Responses[0].Range.Kvs) == 0 {
			return "", 0, fmt.Errorf("etcd: campaign %s: %w", prefix, errKeyGone)
		}
		kv := resp.Responses[0].Range.Kvs[0]
		rev = kv.CreateRevision
		if string(kv.Value) != val {
			if _, err := e.cli.Txn(ctx, etcdhttp.TxnRequest{
				Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(key, etcdhttp.Equal, rev)},
				Success: []etcdhttp.RequestOp{etcdhttp.OpPut(key, val, sess.lease)},
			}); err != nil {
				return "", 0, fmt.Errorf("etcd: campaign %s: %w", prefix, err)
			}
		}
	}
	if err := e.waitPredecessors(ctx, prefix+"/", rev-1); err != nil {
		if ctx.Err() != nil {
			e.resign(key, rev)
		}
		return "", 0, err
	}
	// Still in line: a lease that expired while this serve waited took
	// the key with it.
	kv, _, err := e.cli.Get(ctx, key)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("etcd: campaign %s: %w", prefix, err)
	case kv == nil || kv.CreateRevision != rev:
		return "", 0, fmt.Errorf("etcd: campaign %s: %w", prefix, errKeyGone)
	}
	return key, rev, nil
}

// waitPredecessors returns when no key under pfx has a create revision
// of maxRev or below: the last of them is watched until it is deleted,
// then the next.
func (e *Etcd) waitPredecessors(ctx context.Context, pfx string, maxRev int64) error {
	for {
		resp, err := e.cli.Range(ctx, etcdhttp.RangeRequest{Key: []byte(pfx), RangeEnd: etcdhttp.PrefixEnd(pfx),
			MaxCreateRevision: maxRev, SortOrder: etcdhttp.SortDescend, SortTarget: etcdhttp.SortByCreate, Limit: 1})
		if err != nil {
			return fmt.Errorf("etcd: campaign %s: %w", pfx, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := e.waitDelete(ctx, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitDelete watches key from rev until it is deleted.
func (e *Etcd) waitDelete(ctx context.Context, key string, rev int64) error {
	w, err := e.cli.Watch(ctx, etcdhttp.WatchRequest{Key: []byte(key), StartRevision: rev})
	if err != nil {
		return fmt.Errorf("etcd: campaign: watch %s: %w", key, err)
	}
	defer w.Close()
	for {
		r, err := w.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("etcd: campaign: watch %s: %w", key, err)
		}
		for _, ev := range r.Events {
			if ev.IsDelete() {
				return nil
			}
		}
	}
}

// resign withdraws key if it is still the one created at rev.
func (e *Etcd) resign(key string, rev int64) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opt.RequestTimeout)
	defer cancel()
	e.cli.Txn(ctx, etcdhttp.TxnRequest{
		Compare: []etcdhttp.Compare{etcdhttp.CompareCreate(key, etcdhttp.Equal, rev)},
		Success: []etcdhttp.RequestOp{etcdhttp.OpDelete(key)},
	})
}
