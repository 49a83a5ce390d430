package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestRecordQueries(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	d.Now = func() time.Time { return base.Add(3 * time.Minute) }
	src := func(inst, cluster string, lost uint64) dbpilot.QuerySource {
		return dbpilot.QuerySource{Instance: inst, Cluster: cluster, Source: dbpilot.QuerySourcePerformanceSchema, Capacity: 200, Digests: 12, LostDigests: 7, LostInSpan: lost}
	}
	sel := dbpilot.QueryStat{Schema: "app", Digest: "aaa", DigestText: "SELECT * FROM `t` WHERE `id` = ?", Count: 10, TotalMS: 20, MaxMS: 5, RowsExamined: 100, RowsSent: 10}
	upd := dbpilot.QueryStat{Schema: "app", Digest: "bbb", DigestText: "UPDATE `t` SET `v` = ?", Count: 2, TotalMS: 30, MaxMS: 16, RowsExamined: 2, Errors: 1}
	ivs := []dbpilot.QueryInterval{
		// Two intervals in minute 0 add up; the second has a larger max.
		{End: base.Add(10 * time.Second), Source: src("h:1", "c1", 0), Stats: []dbpilot.QueryStat{sel, upd}},
		{End: base.Add(20 * time.Second), Source: src("h:1", "c1", 3), Stats: []dbpilot.QueryStat{func() dbpilot.QueryStat { s := sel; s.MaxMS = 9; return s }()}},
		// Minute 2.
		{End: base.Add(2*time.Minute + 5*time.Second), Source: src("h:1", "c1", 1), Stats: []dbpilot.QueryStat{sel}},
		// Another instance in another cluster.
		{End: base.Add(30 * time.Second), Source: src("h:2", "c2", 0), Stats: []dbpilot.QueryStat{upd}},
	}
	for _, iv := range ivs {
		if err := d.RecordQueries(ctx, iv); err != nil {
			t.Fatal(err)
		}
	}

	rep, err := d.Queries(ctx, dbpilot.QueryFilter{Cluster: "c1", Since: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sources) != 1 || rep.Sources[0].Instance != "h:1" || rep.Sources[0].LostInSpan != 4 || rep.Sources[0].LostDigests != 7 {
		t.Fatalf("sources = %+v, want h:1 with 4 lost in span", rep.Sources)
	}
	if len(rep.Queries) != 2 {
		t.Fatalf("queries = %+v, want 2", rep.Queries)
	}
	// By total: sel has 3×20 ms, upd 30 ms.
	q := rep.Queries[0]
	if q.Digest != "aaa" || q.Count != 30 || q.TotalMS != 60 || q.MaxMS != 9 || q.RowsExamined != 300 || q.AvgMS != 2 || q.Cluster != "c1" || q.DigestText != sel.DigestText {
		t.Fatalf("first = %+v", q)
	}
	if q.FirstSeen != "2026-11-26T10:00:00Z" || q.LastSeen != "2026-11-26T10:02:00Z" {
		t.Fatalf("first/last seen = %s %s", q.FirstSeen, q.LastSeen)
	}
	if u := rep.Queries[1]; u.Digest != "bbb" || u.Count != 2 || u.Errors != 1 || u.AvgMS != 15 {
		t.Fatalf("second = %+v", u)
	}

	// By avg, the update comes first; a span from minute 1 leaves out minute 0.
	rep, err = d.Queries(ctx, dbpilot.QueryFilter{Instance: "h:1", Since: base, By: dbpilot.QueryByAvg, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Queries) != 1 || rep.Queries[0].Digest != "bbb" {
		t.Fatalf("by avg = %+v", rep.Queries)
	}
	rep, err = d.Queries(ctx, dbpilot.QueryFilter{Instance: "h:1", Since: base.Add(61 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Since.Equal(base.Add(time.Minute)) || len(rep.Queries) != 1 || rep.Queries[0].Count != 10 {
		t.Fatalf("since minute 1: since %s, %+v", rep.Since, rep.Queries)
	}

	// Every instance without a filter; unknown ones are ENOTFOUND.
	rep, err = d.Queries(ctx, dbpilot.QueryFilter{Since: base})
	if err != nil || len(rep.Sources) != 2 || len(rep.Queries) != 3 {
		t.Fatalf("all: %v %+v", err, rep)
	}
	if _, err := d.Queries(ctx, dbpilot.QueryFilter{Cluster: "nope"}); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Fatalf("unknown cluster: %v", err)
	}
	if _, err := d.Queries(ctx, dbpilot.QueryFilter{By: "size"}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Fatalf("bad by: %v", err)
	}

	// Pruning before minute 1 keeps minute 2 only.
	if _, err := d.PruneQueries(ctx, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	rep, err = d.Queries(ctx, dbpilot.QueryFilter{Since: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Queries) != 1 || rep.Queries[0].Count != 10 || rep.Queries[0].Instance != "h:1" {
		t.Fatalf("after prune: %+v", rep.Queries)
	}
}

// TestRecordQueriesConcurrent: the intervals of many instances recorded at
// once are all stored, and a call whose
// context ended while it waited leaves the others going.
func TestRecordQueriesConcurrent(t *testing.T) {
	d, _ := openTest(t)
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	d.Now = func() time.Time { return base.Add(time.Minute) }
	const n = 64
	errs := make(chan error, n+1)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range n {
		go func() {
			iv := dbpilot.QueryInterval{End: base.Add(10 * time.Second), Source: dbpilot.QuerySource{Instance: fmt.Sprintf("h:%d", i), Cluster: "c"},
				Stats: []dbpilot.QueryStat{{Schema: "app", Digest: "d", DigestText: "SELECT ?", Count: 1, TotalMS: 1, MaxMS: 1}}}
			errs <- d.RecordQueries(context.Background(), iv)
		}()
	}
	go func() { // ends at once unless its own commit ran
		err := d.RecordQueries(cancelled, dbpilot.QueryInterval{End: base, Source: dbpilot.QuerySource{Instance: "gone:1", Cluster: "c"}})
		if err != nil && !errors.Is(err, context.Canceled) {
			errs <- err
			return
		}
		errs <- nil
	}()
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rep, err := d.Queries(context.Background(), dbpilot.QueryFilter{Cluster: "c", Since: base, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	runs := uint64(0)
	for _, q := range rep.Queries {
		runs += q.Count
	}
	if len(rep.Queries) != n || runs != n {
		t.Fatalf("%d digests run %d times, want %d instances' once each", len(rep.Queries), runs, n)
	}
	// Later calls commit: nothing was left holding the turn.
	done := make(chan error, 1)
	go func() {
		done <- d.RecordQueries(context.Background(), dbpilot.QueryInterval{End: base, Source: dbpilot.QuerySource{Instance: "h:last", Cluster: "c"}})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a later interval waits for ever: the turn to commit was lost")
	}
}
