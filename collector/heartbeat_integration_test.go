package collector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// hbValue returns the value of the sample with name and, when given, one
// label value; ok is false when there is none.
func hbValue(samples []dbpilot.Sample, name string, label ...string) (float64, bool) {
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		if len(label) == 2 {
			match := false
			for _, l := range s.Labels {
				if l.Name == label[0] && l.Value == label[1] {
					match = true
				}
			}
			if !match {
				continue
			}
		}
		return s.Value, true
	}
	return 0, false
}

func hbOpen(t *testing.T, d *sandbox.Descriptor, n *sandbox.Node) *mysql.DB {
	t.Helper()
	db, err := mysql.Open(context.Background(), n.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestHeartbeatAndReplicationOnSandbox runs the heartbeat writer on a real
// primary and the heartbeat reader and replication collector on its
// replica: the lag is small while replication runs, rises while the
// replica's SQL thread is stopped, falls after it restarts, and the replica
// never writes a heartbeat of its own.
func TestHeartbeatAndReplicationOnSandbox(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	ctx := context.Background()
	p, r := d.Nodes[0], d.Nodes[1]
	pdb, rdb := hbOpen(t, d, p), hbOpen(t, d, r)
	v := d.Server.ParsedVersion()
	pt := collector.Target{Key: p.Key(), Flavor: d.Flavor, Version: v, Role: "primary", ServerID: p.ServerID, PrimaryServerID: p.ServerID}
	rt := collector.Target{Key: r.Key(), Flavor: d.Flavor, Version: v, Role: "replica", ServerID: r.ServerID, PrimaryServerID: p.ServerID}
	hb, repl := collector.NewHeartbeat(), collector.NewReplication()

	// beat writes one heartbeat on the primary and returns the replica's lag.
	beat := func() (float64, bool) {
		t.Helper()
		if _, err := hb.Collect(ctx, pdb, pt); err != nil {
			t.Fatalf("heartbeat on the primary: %v", err)
		}
		s, err := hb.Collect(ctx, rdb, rt)
		if err != nil {
			t.Fatalf("heartbeat on the replica: %v", err)
		}
		return hbValue(s, "dbpilot_heartbeat_lag_seconds")
	}
	// waitLag beats every 250 ms until ok(lag) or the deadline.
	waitLag := func(what string, within time.Duration, ok func(float64) bool) float64 {
		t.Helper()
		var (
			lag  float64
			have bool
		)
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			if lag, have = beat(); have && ok(lag) {
				return lag
			}
		}
		t.Fatalf("replica heartbeat lag: %s never held (last %v, present %v)", what, lag, have)
		return 0
	}
	replState := func() (io, sql float64) {
		t.Helper()
		s, err := repl.Collect(ctx, rdb, rt)
		if err != nil {
			t.Fatalf("replication collector on the replica: %v", err)
		}
		var ok1, ok2 bool
		io, ok1 = hbValue(s, "mysql_slave_status_slave_io_running")
		sql, ok2 = hbValue(s, "mysql_slave_status_slave_sql_running")
		if !ok1 || !ok2 {
			t.Fatalf("replication collector: no thread states in %v", s)
		}
		return io, sql
	}

	// Replicating: a few beats, the lag is small.
	lag := waitLag("below 2 s", 20*time.Second, func(l float64) bool { return l < 2 })
	t.Logf("lag while replicating: %.3fs", lag)
	for range 4 {
		time.Sleep(250 * time.Millisecond)
		if lag, _ = beat(); lag >= 2 {
			t.Fatalf("lag %v s while replicating", lag)
		}
	}
	if io, sql := replState(); io != 1 || sql != 1 {
		t.Fatalf("replicating: io_running %v sql_running %v, want 1 1", io, sql)
	}
	s, err := repl.Collect(ctx, rdb, rt)
	if err != nil {
		t.Fatal(err)
	}
	if d.Flavor == dbpilot.FlavorMariaDB {
		// The sandbox runs slave_parallel_threads=2.
		if n, ok := hbValue(s, "dbpilot_replication_applier_workers_total"); !ok || n != 2 {
			t.Errorf("workers_total = %v (%v), want 2", n, ok)
		}
		if _, ok := hbValue(s, "dbpilot_replication_gtid_applied_seq", "domain", "0"); !ok {
			t.Errorf("no applied GTID seq in %v", s)
		}
	}

	// SQL thread stopped: heartbeats keep coming to the primary, the
	// replica's lag rises.
	stopSQL, startSQL := "STOP SLAVE SQL_THREAD", "START SLAVE SQL_THREAD"
	if d.Flavor.IsMySQLFamily() && v.AtLeast(8, 0, 22) {
		stopSQL, startSQL = "STOP REPLICA SQL_THREAD", "START REPLICA SQL_THREAD"
	}
	if err := rdb.Exec(ctx, stopSQL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Exec(context.Background(), startSQL) })
	if io, sql := replState(); io != 1 || sql != 0 {
		t.Errorf("SQL thread stopped: io_running %v sql_running %v, want 1 0", io, sql)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		beat()
	}
	stopped := waitLag("2 s or more", 5*time.Second, func(l float64) bool { return l >= 2 })
	risen := waitLag("rising", 5*time.Second, func(l float64) bool { return l > stopped })
	t.Logf("lag with the SQL thread stopped: %.3f s, then %.3f s", stopped, risen)

	// Restarted: the lag falls back.
	if err := rdb.Exec(ctx, startSQL); err != nil {
		t.Fatal(err)
	}
	waitLag("back below 2 s", 20*time.Second, func(l float64) bool { return l < 2 })
	if io, sql := replState(); io != 1 || sql != 1 {
		t.Errorf("restarted: io_running %v sql_running %v, want 1 1", io, sql)
	}

	// Other roles never write on the replica.
	for _, role := range []string{"replica", "intermediate", "standalone"} {
		tg := rt
		tg.Role = role
		if _, err := collector.NewHeartbeat().Collect(ctx, rdb, tg); err != nil {
			t.Errorf("role %s: %v", role, err)
		}
	}

	// No errant transaction: every GTID on the replica came from the primary.
	if d.Flavor == dbpilot.FlavorMariaDB {
		state, _, err := rdb.QueryValue(ctx, "SELECT @@global.gtid_binlog_state")
		if err != nil {
			t.Fatal(err)
		}
		l, err := gtid.ParseMariaList(state)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range l {
			if g.Server == r.ServerID {
				t.Errorf("replica binlog state %s holds a GTID of its own server_id %d", state, r.ServerID)
			}
		}
		if !strings.Contains(state, fmt.Sprintf("-%d-", p.ServerID)) {
			t.Errorf("replica binlog state %q has no heartbeat from the primary", state)
		}
	} else {
		uuid, _, err := rdb.QueryValue(ctx, "SELECT @@global.server_uuid")
		if err != nil {
			t.Fatal(err)
		}
		executed, _, err := rdb.QueryValue(ctx, "SELECT @@global.gtid_executed")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(executed, uuid) {
			t.Errorf("replica gtid_executed %q holds its own server_uuid %s", executed, uuid)
		}
	}
}
