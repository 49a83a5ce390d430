package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestDirectQueriesOnSandbox reads the digest table of a real server in the
// q view: a probe statement run N times between two polls is a digest
// counted N times, and its rate times the span is N. Leaving the view
// forgets the digests read.
func TestDirectQueriesOnSandbox(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	n := d.Nodes[0]
	src := NewDirect([]dbpilot.InstanceKey{n.Key()}, d.AdminOptions())
	t.Cleanup(func() { src.Close() })
	src.QueriesEvery = time.Nanosecond // every poll: the test polls twice
	src.SetView(ViewQueries, 0)

	f, err := src.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows[0].Err != "" {
		t.Fatalf("row error: %s", f.Rows[0].Err)
	}
	q := f.Queries
	if q == nil || q.Span != 0 || len(q.Rows) != 0 || len(q.Notes) != 0 || len(q.Sources) != 1 {
		t.Fatalf("first read: %+v", q)
	}
	if s := q.Sources[0]; s.Instance != n.Key().String() || s.Capacity == 0 || s.Digests == 0 {
		t.Errorf("digest table %+v", s)
	}

	probe, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close() })
	const runs = 37
	for i := range runs {
		if _, err := probe.Query(ctx, fmt.Sprintf("SELECT %d AS dbpilot_top_probe", i)); err != nil {
			t.Fatal(err)
		}
	}

	if f, err = src.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	q = f.Queries
	if q == nil || q.Span <= 0 || len(q.Notes) != 0 {
		t.Fatalf("second read: %+v", q)
	}
	var count uint64
	var calls float64
	for _, r := range q.Rows {
		if strings.Contains(r.DigestText, "dbpilot_top_probe") {
			count += r.Count
			calls += r.CallsPerSec().V * r.Span.Seconds()
			if r.Instance != n.Key().String() || r.AvgMS <= 0 || r.MaxMS <= 0 || r.TotalMS < r.MaxMS {
				t.Errorf("probe row %+v", r)
			}
		}
	}
	if count != runs || calls < runs-0.01 || calls > runs+0.01 {
		t.Fatalf("probe counted %d times (rate × span %.2f), want %d; rows:\n%s", count, calls, runs,
			Render(Screen{Frame: f, View: ViewQueries, Width: 200}))
	}
	out := Render(Screen{Frame: f, View: ViewQueries, Width: 200})
	if !strings.Contains(out, "dbpilot_top_probe") || !strings.Contains(out, "CALLS/s") || strings.Contains(out, "INSTANCE") {
		t.Errorf("q view:\n%s", out)
	}

	// Another view: no digests; back in the q view, a first read again.
	src.SetView(ViewOverview, 0)
	if f, err = src.Poll(ctx); err != nil || f.Queries != nil {
		t.Fatalf("overview: queries %+v, %v", f.Queries, err)
	}
	src.SetView(ViewQueries, 0)
	if f, err = src.Poll(ctx); err != nil || f.Queries == nil || f.Queries.Span != 0 || len(f.Queries.Rows) != 0 {
		t.Fatalf("back in the q view: %+v, %v", f.Queries, err)
	}
}
