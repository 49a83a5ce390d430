package collector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestHBParseMicros(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1795254480.166758", 1795254480166758, true},
		{"1795254480.1", 1795254480100000, true},
		{"1795254480", 1795254480000000, true},
		{" 0.000001 ", 1, true},
		{"", 0, false},
		{".5", 0, false},
		{"1.1234567", 0, false},
		{"-1.5", 0, false},
		{"1.-5", 0, false},
		{"1e9", 0, false},
		{"9999999999999.0", 0, false},
	}
	for _, tt := range tests {
		got, ok := hbParseMicros(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("hbParseMicros(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func hbRows(rows ...[3]string) *mysql.Rows {
	r := &mysql.Rows{Columns: []string{"server_id", "UNIX_TIMESTAMP(ts)", "UNIX_TIMESTAMP(NOW(6))"}}
	for _, row := range rows {
		vals := make([]*string, 3)
		for i := range row {
			v := row[i]
			vals[i] = &v
		}
		r.Values = append(r.Values, vals)
	}
	return r
}

func TestHBSamplesLag(t *testing.T) {
	rows := hbRows(
		[3]string{"1", "1000.000000", "1010.500000"}, // old primary, stale
		[3]string{"2", "1009.750000", "1010.500000"}, // current primary
		[3]string{"3", "1011.000000", "1010.500000"}, // clock ahead of ours
	)
	lag := func(primary uint32) string {
		for _, s := range hbSamples(rows, primary) {
			if s.Name == "dbpilot_heartbeat_lag_seconds" {
				return rhiFormat([]dbpilot.Sample{s})
			}
		}
		return ""
	}
	if got := lag(2); got != "dbpilot_heartbeat_lag_seconds 0.75\n" {
		t.Errorf("primary 2: %q", got)
	}
	if got := lag(1); got != "dbpilot_heartbeat_lag_seconds 10.5\n" {
		t.Errorf("primary 1: %q", got)
	}
	if got := lag(0); got != "dbpilot_heartbeat_lag_seconds 0\n" {
		t.Errorf("unknown primary: newest row, skew clamped: %q", got)
	}
	if got := lag(9); got != "" {
		t.Errorf("primary without a row: %q, want no lag", got)
	}
	if n := len(hbSamples(hbRows([3]string{"1", "x", "1"}), 1)); n != 0 {
		t.Errorf("malformed row gave %d samples", n)
	}
}

// TestHeartbeatWritesOnlyOnPrimary: any role but "primary" reads and never
// writes.
func TestHeartbeatWritesOnlyOnPrimary(t *testing.T) {
	dir := "testdata/heartbeat/mariadb-10.11/primary"
	base, _ := rhiLoadTarget(t, dir)
	for _, role := range []string{"replica", "intermediate", "standalone", "", "Primary", "ring-member"} {
		tg := base
		tg.Role = role
		q := &rhiReplay{dir: dir, run: 1}
		samples, err := NewHeartbeat().Collect(context.Background(), q, tg)
		if err != nil || len(q.execs) != 0 || len(samples) != 3 {
			t.Errorf("role %q: execs %v, %d samples, err %v", role, q.execs, len(samples), err)
		}
	}
}

// TestHeartbeatTableDropped: a write that finds no table makes it again and
// retries once.
func TestHeartbeatTableDropped(t *testing.T) {
	stub := &rhiStubQuerier{rows: map[string]*mysql.Rows{
		hbIdentMySQLSQL: {Columns: []string{"@@global.server_id", "NULL"}, Values: [][]*string{{rhiPtr("7"), nil}}},
		hbReadSQL:       hbRows([3]string{"7", "1.0", "1.5"}),
	}}
	q := &hbFlakyQuerier{rhiStubQuerier: stub}
	tg := Target{Key: dbpilot.InstanceKey{Host: "h", Port: 1}, Flavor: dbpilot.FlavorMySQL, Role: "primary", PrimaryServerID: 7}
	hb := NewHeartbeat()
	if _, err := hb.Collect(context.Background(), q, tg); err != nil {
		t.Fatal(err)
	}
	write := "REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (7, NOW(6), NULL)"
	if got := strings.Join(stub.execs, "\n"); got != hbCreateDBSQL+"\n"+hbCreateTableSQL+"\n"+write {
		t.Fatalf("first run execs:\n%s", got)
	}
	// The table disappears on the same connection: the write fails once,
	// the table is made again and the write retried.
	stub.execs = nil
	q.failFirst, q.err = write, rhiFileError("ERROR 1146 (42S02): Table 'dbpilot.heartbeat' doesn't exist")
	samples, err := hb.Collect(context.Background(), q, tg)
	if err != nil || len(samples) != 3 {
		t.Fatalf("after drop: %d samples, %v", len(samples), err)
	}
	if got := strings.Join(stub.execs, "\n"); got != hbCreateDBSQL+"\n"+hbCreateTableSQL+"\n"+write || !q.failed {
		t.Fatalf("after drop execs:\n%s", got)
	}
}

// hbFlakyQuerier fails the first Exec of one statement, then lets it pass.
type hbFlakyQuerier struct {
	*rhiStubQuerier
	failFirst string
	err       error
	failed    bool
}

func (f *hbFlakyQuerier) Exec(ctx context.Context, stmts ...string) error {
	if len(stmts) == 1 && stmts[0] == f.failFirst && !f.failed {
		f.failed = true
		return f.err
	}
	return f.rhiStubQuerier.Exec(ctx, stmts...)
}

// TestHeartbeatOncePerConnection: the table is made once per connection,
// again on a new one.
func TestHeartbeatOncePerConnection(t *testing.T) {
	mk := func() *rhiStubQuerier {
		return &rhiStubQuerier{rows: map[string]*mysql.Rows{
			hbIdentMariaSQL: {Columns: []string{"a", "b"}, Values: [][]*string{{rhiPtr("5"), rhiPtr("3")}}},
		}}
	}
	tg := Target{Key: dbpilot.InstanceKey{Host: "h", Port: 1}, Flavor: dbpilot.FlavorMariaDB, Role: "primary"}
	hb := NewHeartbeat()
	q1 := mk()
	for range 3 {
		if _, err := hb.Collect(context.Background(), q1, tg); err != nil {
			t.Fatal(err)
		}
	}
	if len(q1.execs) != 2+3 || q1.execs[2] != "REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (5, NOW(6), 3)" {
		t.Errorf("one connection, 3 runs: %q", q1.execs)
	}
	q2 := mk()
	if _, err := hb.Collect(context.Background(), q2, tg); err != nil {
		t.Fatal(err)
	}
	if len(q2.execs) != 3 {
		t.Errorf("new connection: %q", q2.execs)
	}
	if hbSameConn(q1, q2) || !hbSameConn(q1, q1) || hbSameConn(nil, q1) {
		t.Error("hbSameConn")
	}
	// Connections of a type that cannot be compared count as the same.
	type mapQuerier struct {
		Querier
		m map[string]string // a map makes the type incomparable
	}
	_ = mapQuerier{}.m
	if !hbSameConn(mapQuerier{}, mapQuerier{}) {
		t.Error("hbSameConn on an incomparable type")
	}
}

func TestHeartbeatConcurrentTargets(t *testing.T) {
	hb := NewHeartbeat()
	dir := "testdata/heartbeat/mariadb-10.11/primary"
	target, _ := rhiLoadTarget(t, dir)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := target
			tg.Key.Port = 3000 + i
			q := &rhiReplay{dir: dir}
			for run := 1; run <= 2; run++ {
				q.run = run
				if _, err := hb.Collect(context.Background(), q, tg); err != nil {
					t.Error(err)
				}
			}
			if len(q.execs) != 4 {
				t.Errorf("target %d: execs %q", i, q.execs)
			}
		}()
	}
	wg.Wait()
	hb.(*heartbeat).Forget(target.Key)
}

// TestHeartbeatNeverWritesOnReadOnly: a server the topology calls primary
// but that is read_only (a fenced old primary, a race during failover) gets
// no heartbeat write, even though an admin account could bypass read_only.
func TestHeartbeatNeverWritesOnReadOnly(t *testing.T) {
	dir := t.TempDir()
	ident, err := os.ReadFile(filepath.Join("testdata", "heartbeat", "mariadb-10.11", "primary", "ident.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ident.txt"), ident, 0o644)
	os.WriteFile(filepath.Join(dir, "read_only.txt"), []byte("*************************** 1. row ***************************\n@@global.read_only: 1\n"), 0o644)
	r := &rhiReplay{dir: dir, run: 1}
	v, _ := dbpilot.ParseVersion("10.11.19-MariaDB")
	tgt := Target{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}, Flavor: dbpilot.FlavorMariaDB, Version: v, Role: "primary", ServerID: 25511}
	_, err = NewHeartbeat().Collect(context.Background(), r, tgt)
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Collect on a read_only primary: %v, want the read-only report", err)
	}
	// Nothing at all: CREATE DATABASE/TABLE IF NOT EXISTS are binlogged
	// even when the objects exist, so they would be errant transactions too
	// (seen after a switchover: the old primary's monitoring connection,
	// killed and reopened, made the table again, and the new primary's next
	// transaction then stopped its replication with error 1950).
	if len(r.execs) != 0 {
		t.Errorf("statements run on a read_only server: %q", r.execs)
	}
}
