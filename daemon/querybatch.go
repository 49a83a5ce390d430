package daemon

import (
	"context"
	"log/slog"
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
// instance and writes them once a second (queryBatchEvery), in one
// transaction when the store can. It implements dbpilot.QueryRecorder for
// the collectors; a failed write's intervals are dropped (logged).
type queryBatcher struct {
	*batcher[dbpilot.QueryInterval]
}

func newQueryBatcher(store QueryStore, log *slog.Logger) *queryBatcher {
	write := func(ctx context.Context, ivs []dbpilot.QueryInterval) error {
		if br, ok := store.(QueryBatchRecorder); ok {
			return br.RecordQueryBatch(ctx, ivs)
		}
		for _, iv := range ivs {
			if err := store.RecordQueries(ctx, iv); err != nil {
				return err
			}
		}
		return nil
	}
	return &queryBatcher{&batcher[dbpilot.QueryInterval]{what: "query statistics: store the intervals", max: queryBatchMax, write: write, log: log}}
}

// RecordQueries queues iv for the next write.
func (b *queryBatcher) RecordQueries(_ context.Context, iv dbpilot.QueryInterval) error {
	if ok, waiting := b.add(iv); !ok {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "query statistics: %d intervals wait for the state store already: this one is dropped", waiting)
	}
	return nil
}
