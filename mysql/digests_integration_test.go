package mysql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// probeDigest returns the digest whose text names the probe alias.
func probeDigest(ds []mysql.Digest, alias string) *mysql.Digest {
	for i := range ds {
		if strings.Contains(ds[i].Text, alias) {
			return &ds[i]
		}
	}
	return nil
}

// A known statement run 50 times between two snapshots appears in the
// deltas with count 50 and a positive latency; the table is not reset.
func TestDigestsKnownQuery(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const alias = "dbpilot_digest_probe"
	run := func(n int) {
		t.Helper()
		for i := range n {
			if _, _, err := db.QueryValue(ctx, "SELECT ? + 1 AS "+alias, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(3) // the digest exists before the first snapshot
	s1, err := db.ReadDigests(ctx, mysql.DigestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.DigestsUsable(); err != nil {
		t.Fatalf("sandbox digests: %v", err)
	}
	if s1.Capacity != 2000 {
		t.Errorf("capacity = %d, want the sandbox's 2000", s1.Capacity)
	}
	run(50)
	s2, err := db.ReadDigests(ctx, mysql.DigestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := probeDigest(mysql.DigestDeltas(s1, s2), alias)
	if g == nil {
		t.Fatalf("no delta for the probe; digests: %+v", s2.Digests)
	}
	if g.Count != 50 || g.TotalWait == 0 || g.MaxWait == 0 || g.MaxWait > g.TotalWait || g.RowsSent != 50 || g.Errors != 0 {
		t.Errorf("probe delta = %+v, want count 50, positive latency, 50 rows sent", *g)
	}
	if c := probeDigest(s2.Digests, alias); c == nil || c.Count != 53 {
		t.Errorf("probe cumulative = %+v, want count 53 (the table is never reset)", c)
	}
}
