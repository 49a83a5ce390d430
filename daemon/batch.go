package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// batcher gathers what many goroutines record (every cluster's topology
// changes, every instance's statement intervals) and writes it once a
// second in one call: SQLite has one writer, and a transaction per
// cluster or instance at a fleet's scale kept it busy enough that the
// state saves behind it failed. run, owned by Daemon.Run, writes; Run
// writes what is left once every loop that records has stopped.
type batcher[T any] struct {
	// what names the records in log lines ("topology history: store the
	// changes").
	what string
	// max bounds what waits for the next write: past it add refuses,
	// rather than holding memory while the store cannot keep up.
	max   int
	write func(ctx context.Context, items []T) error
	// requeue puts a failed write's items back in front of those queued
	// since, as room allows (the history must not miss a change); without
	// it they are dropped (query statistics: the next interval comes).
	requeue bool
	log     *slog.Logger

	mu      sync.Mutex
	pending []T
	warned  time.Time
}

// add queues items for the next write; false, with what is waiting, when
// the queue is full and they were not queued.
func (b *batcher[T]) add(items ...T) (ok bool, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending)+len(items) > b.max {
		return false, len(b.pending)
	}
	b.pending = append(b.pending, items...)
	return true, len(b.pending)
}

// warn logs at most once a minute.
func (b *batcher[T]) warn(msg string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.warned) >= time.Minute {
		b.warned = time.Now()
		b.log.Warn(msg, args...)
	}
}

// run writes the queue every `every` until ctx ends.
func (b *batcher[T]) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.flush(ctx)
		}
	}
}

// flush writes what is queued.
func (b *batcher[T]) flush(ctx context.Context) {
	b.mu.Lock()
	items := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(items) == 0 {
		return
	}
	err := b.write(ctx, items)
	if err == nil {
		return
	}
	if b.requeue {
		b.mu.Lock()
		if len(items)+len(b.pending) <= b.max && ctx.Err() == nil {
			b.pending = append(items, b.pending...)
		}
		b.mu.Unlock()
	}
	b.warn(b.what, "count", len(items), "err", err)
}
