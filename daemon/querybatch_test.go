package daemon

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// batchStore records the batches written to it.
type batchStore struct {
	QueryStore
	mu      sync.Mutex
	batches [][]dbpilot.QueryInterval
}

func (s *batchStore) RecordQueryBatch(_ context.Context, ivs []dbpilot.QueryInterval) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, ivs)
	return nil
}

func (s *batchStore) got() [][]dbpilot.QueryInterval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]dbpilot.QueryInterval(nil), s.batches...)
}

// The intervals of every instance are written together, once a second;
// what is queued when serve stops waits for Run's last write (flush, once
// every collector has stopped).
func TestQueryBatcher(t *testing.T) {
	st := &batchStore{}
	b := newQueryBatcher(st, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.run(ctx, queryBatchEvery); close(done) }()
	for _, inst := range []string{"a:3306", "b:3306", "c:3306"} {
		if err := b.RecordQueries(ctx, dbpilot.QueryInterval{Source: dbpilot.QuerySource{Instance: inst}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(st.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := st.got(); len(g) != 1 || len(g[0]) != 3 {
		t.Fatalf("batches %v: want the three intervals in one write", g)
	}
	_ = b.RecordQueries(ctx, dbpilot.QueryInterval{Source: dbpilot.QuerySource{Instance: "d:3306"}})
	cancel()
	<-done
	if g := st.got(); len(g) != 1 {
		t.Errorf("batches %v: written after the stop, before Run's last write", g)
	}
	b.flush(context.Background())
	if g := st.got(); len(g) != 2 || len(g[1]) != 1 || g[1][0].Source.Instance != "d:3306" {
		t.Errorf("batches %v: want the interval queued at the stop written on the way out", g)
	}
	b.pending = make([]dbpilot.QueryInterval, queryBatchMax)
	if err := b.RecordQueries(ctx, dbpilot.QueryInterval{Source: dbpilot.QuerySource{Instance: "e:3306"}}); err == nil {
		t.Error("a full queue took one more interval")
	}
}
