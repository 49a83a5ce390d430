package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// probeSlowLog runs the probe n times between a first snapshot and the
// next ones, and returns the probe's delta once it counts n (the server
// writes a slow log entry after the client has its answer, so it polls a
// few seconds) or the last one seen.
func probeSlowLog(t *testing.T, db *mysql.DB, r mysql.StatementReader, alias string, n int) *mysql.Digest {
	t.Helper()
	ctx := context.Background()
	s1, err := r.Snapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := db.QueryValue(ctx, "SELECT ? + 1 AS "+alias, i); err != nil {
			t.Fatal(err)
		}
	}
	var g *mysql.Digest
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		s2, err := r.Snapshot(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if s2.Capacity != 0 || !s2.Enabled || s2.Flavor == "" {
			t.Errorf("snapshot header = %+v", *s2)
		}
		if g = probeDigest(mysql.DigestDeltas(s1, s2), alias); g != nil && g.Count >= uint64(n) {
			break
		}
	}
	if g == nil {
		t.Fatalf("no delta for the probe %s", alias)
	}
	t.Logf("probe delta: %+v", *g)
	return g
}

// With performance_schema off, the slow log is read from mysql.slow_log
// (log_output=TABLE), then from its file (log_output=FILE): a probe run N
// times between two snapshots counts N in the delta, with its rows; with
// the slow log off there is no source and the reason says what to turn on;
// with performance_schema on, it is the source.
func TestSlowLogSources(t *testing.T) {
	testutil.Home(t)
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle,
		Options: []string{"performance_schema=OFF", "slow_query_log=ON", "long_query_time=0", "log_output=TABLE"}})
	ctx := context.Background()
	key := d.Nodes[0].Key()
	db, err := mysql.Open(ctx, key, d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	detect := func(want string) mysql.StatementSource {
		t.Helper()
		src, err := mysql.DetectStatementSource(ctx, db, key)
		if err != nil {
			t.Fatal(err)
		}
		if src.Source != want || src.Reason == "" {
			t.Fatalf("source = %+v, want %s", src, want)
		}
		return src
	}
	check := func(g *mysql.Digest, n uint64) {
		t.Helper()
		if g.Count != n || g.RowsSent != n || g.MaxWait > g.TotalWait || g.Digest != mysql.FingerprintDigest(g.Text) ||
			!strings.Contains(g.Sample, "SELECT ? + ? AS") || g.FirstSeen == "" || g.LastSeen < g.FirstSeen {
			t.Errorf("probe delta = %+v, want count %d, %d rows sent, a redacted sample", *g, n, n)
		}
	}

	src := detect(dbpilot.QuerySourceSlowLogTable)
	if src.LongQueryTime != 0 || !strings.Contains(src.Reason, "mysql.slow_log") {
		t.Errorf("table source = %+v", src)
	}
	r, err := mysql.NewStatementReader(key, src, mysql.SlowLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(probeSlowLog(t, db, r, "dbpilot_slow_table_probe", 40), 40)
	// Several rows share the cursor's microsecond rarely; reading again
	// counts nothing twice.
	check(probeSlowLog(t, db, r, "dbpilot_slow_table_probe", 7), 7)

	// A statement that started before a read and ended after it is counted
	// once, by the read after its end (the cursor is on the end).
	before, err := r.Snapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	long := make(chan error, 1)
	go func() { _, err := db.Query(ctx, "SELECT SLEEP(2) AS dbpilot_slow_spanning"); long <- err }()
	testutil.WaitFor(t, 10*time.Second, "the spanning statement running", func() (bool, string) {
		// The pattern leaves the alias out: this probe is in the slow log too.
		v, err := testutil.Value(d, d.Nodes[0].Name, "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP(2)%'")
		if err != nil {
			return false, err.Error()
		}
		return v == "1", v
	})
	if _, err := db.Query(ctx, "SELECT 1 AS dbpilot_slow_during"); err != nil {
		t.Fatal(err)
	}
	mid, err := r.Snapshot(ctx, db) // reads past the short statement's end
	if err != nil {
		t.Fatal(err)
	}
	if err := <-long; err != nil {
		t.Fatal(err)
	}
	after, err := r.Snapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if g := probeDigest(mysql.DigestDeltas(before, mid), "dbpilot_slow_spanning"); g != nil {
		t.Errorf("the long statement counted before it ended: %+v", *g)
	}
	if g := probeDigest(mysql.DigestDeltas(mid, after), "dbpilot_slow_spanning"); g == nil || g.Count != 1 || g.TotalWait < 2e12 {
		t.Errorf("the statement spanning a read: %+v, want counted once with its 2 s", g)
	}
	if again, err := r.Snapshot(ctx, db); err != nil || probeDigest(mysql.DigestDeltas(after, again), "dbpilot_slow_spanning") != nil {
		t.Errorf("the long statement counted twice (%v)", err)
	}

	if err := db.Exec(ctx, "SET GLOBAL log_output = 'FILE'"); err != nil {
		t.Fatal(err)
	}
	src = detect(dbpilot.QuerySourceSlowLogFile)
	if !strings.HasPrefix(src.Path, d.Nodes[0].Dir) {
		t.Errorf("file source path %q", src.Path)
	}
	r, err = mysql.NewStatementReader(key, src, mysql.SlowLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(probeSlowLog(t, db, r, "dbpilot_slow_file_probe", 40), 40)
	snap, err := r.Snapshot(ctx, db)
	if err != nil || snap.Source != dbpilot.QuerySourceSlowLogFile || snap.SourceDetail != src.Path {
		t.Errorf("file snapshot = %+v, %v", snap, err)
	}

	if err := db.Exec(ctx, "SET GLOBAL long_query_time = 10"); err != nil {
		t.Fatal(err)
	}
	if src = detect(dbpilot.QuerySourceSlowLogFile); src.LongQueryTime != 10*time.Second || !strings.Contains(src.Reason, "long_query_time") {
		t.Errorf("long_query_time 10: %+v", src)
	}
	if err := db.Exec(ctx, "SET GLOBAL slow_query_log = OFF"); err != nil {
		t.Fatal(err)
	}
	src = detect(dbpilot.QuerySourceNone)
	if !strings.Contains(src.Reason, "performance_schema is off on "+key.String()) || !strings.Contains(src.Reason, "slow_query_log=ON") {
		t.Errorf("no source: reason %q", src.Reason)
	}
	if _, err := mysql.NewStatementReader(key, src, mysql.SlowLogOptions{}); dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED {
		t.Errorf("reader of no source: %v", err)
	}

	on := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	pdb, err := mysql.Open(ctx, on.Nodes[0].Key(), on.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	psrc, err := mysql.DetectStatementSource(ctx, pdb, on.Nodes[0].Key())
	if err != nil || psrc.Source != dbpilot.QuerySourcePerformanceSchema {
		t.Fatalf("performance_schema sandbox: %+v, %v", psrc, err)
	}
	pr, err := mysql.NewStatementReader(on.Nodes[0].Key(), psrc, mysql.SlowLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := pr.Snapshot(ctx, pdb); err != nil || s.Source != dbpilot.QuerySourcePerformanceSchema || !s.Enabled {
		t.Errorf("performance_schema snapshot: %+v, %v", s, err)
	}
}
