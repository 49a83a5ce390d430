package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// queryBatchEvery is how often the statements collectors' intervals are
// written to the store, all instances in one transaction.
const queryBatchEvery = time.Second

// queryBatchMax bounds the intervals waiting for the next write: past it
// an interval is refused (the collector logs it) rather than holding
// memory while the store cannot keep up.
const queryBatchMax = 20000

// QueryBatchRecorder is implemented by a QueryStore that writes many
// intervals in one transaction (the sqlite store).
type QueryBatchRecorder interface {
	RecordQueryBatch(ctx context.Context, ivs []dbpilot.QueryInterval) error
}

// queryBatcher gathers the statements collectors' intervals of every
// instance and writes them once a second (queryBatchEvery) in one
// transaction: SQLite has one writer, and a transaction per instance and
// interval at a fleet's scale kept it busy enough that the state saves
// behind it failed. It implements dbpilot.QueryRecorder for the collectors;
// run, owned by Daemon.Run, writes.
type queryBatcher struct {
	store QueryStore
	log   *slog.Logger

	mu      sync.Mutex
	pending []dbpilot.QueryInterval
	warned  time.Time
}

// RecordQueries queues iv for the next write.
func (b *queryBatcher) RecordQueries(_ context.Context, iv dbpilot.QueryInterval) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= queryBatchMax {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "query statistics: %d intervals wait for the state store already: this one is dropped", len(b.pending))
	}
	b.pending = append(b.pending, iv)
	return nil
}

// run writes the queued intervals every queryBatchEvery until ctx ends,
// then once more.
func (b *queryBatcher) run(ctx context.Context) {
	t := time.NewTicker(queryBatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			b.flush(fctx)
			cancel()
			return
		case <-t.C:
			b.flush(ctx)
		}
	}
}

// flush writes what is queued, in one transaction when the store can.
func (b *queryBatcher) flush(ctx context.Context) {
	b.mu.Lock()
	ivs := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(ivs) == 0 {
		return
	}
	var err error
	if br, ok := b.store.(QueryBatchRecorder); ok {
		err = br.RecordQueryBatch(ctx, ivs)
	} else {
		for _, iv := range ivs {
			if err = b.store.RecordQueries(ctx, iv); err != nil {
				break
			}
		}
	}
	if err != nil && time.Since(b.warned) >= time.Minute {
		b.warned = time.Now()
		b.log.Warn("query statistics: store the intervals", "intervals", len(ivs), "err", err)
	}
}
