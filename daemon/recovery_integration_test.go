package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// session holds one connection to a node, for statements that must share a
// session (locks, sql_log_bin, gtid_domain_id).
func session(t *testing.T, d *sandbox.Descriptor, node string) *mysql.DB {
	t.Helper()
	n, err := d.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	opts := d.AdminOptions()
	opts.QueryTimeout = 30 * time.Second
	db, err := mysql.Open(context.Background(), n.Key(), opts)
	if err != nil {
		t.Fatal(err)
	}
	db.SQL().SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestLaggingCandidateCaughtUp: the most advanced replica has received
// transactions it has not applied (its SQL thread is blocked by a lock);
// the failover waits for it to apply them before promoting it.
func TestLaggingCandidateCaughtUp(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, func(c *daemon.Config) {
		c.Clusters[0].PromotionRules = map[string]dbpilot.PromotionRule{d.Nodes[1].Key().String(): dbpilot.PromotePrefer}
	}, daemon.Wiring{})
	ctx := context.Background()
	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	f.waitValue("node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "1", 30*time.Second)
	f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "1", 30*time.Second)
	// node2's applier blocks on a lock; node3 stops receiving.
	lock := session(t, d, "node2")
	if err := lock.Exec(ctx, "LOCK TABLES app.t WRITE"); err != nil {
		t.Fatal(err)
	}
	f.exec("node3", "STOP SLAVE IO_THREAD")
	for i := 1; i <= 30; i++ {
		f.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	pos := f.value("node1", "SELECT @@gtid_binlog_pos")
	// node2 has received everything (IO) but applied none of the inserts.
	testutil.WaitFor(t, 15*time.Second, "node2 received "+pos, func() (bool, string) {
		st, err := sandbox.Exec(ctx, d, "node2", "SHOW SLAVE STATUS")
		if err != nil {
			return false, err.Error()
		}
		m := st.Maps()
		return len(m) == 1 && m[0]["Gtid_IO_Pos"] == pos, fmt.Sprint(m)
	})
	if got := f.value("node2", "SELECT @@gtid_slave_pos"); got == pos {
		t.Fatalf("node2 applied everything despite the lock (%s)", got)
	}
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	// Release the lock a little later: the failover must wait for it.
	time.AfterFunc(1500*time.Millisecond, func() { lock.Exec(ctx, "UNLOCK TABLES") })
	rec := f.waitRecovery(1, 40*time.Second)
	if !rec.Success || rec.NewPrimary != f.key("node2") {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if got := f.value("node2", "SELECT COUNT(*) FROM app.t"); got != "30" {
		t.Errorf("new primary has %s rows, want 30: it was promoted before applying its relay log", got)
	}
	// node3 stopped receiving early and is caught up from node2.
	f.assertFollows("node3", "node2")
	f.waitValue("node3", "SELECT COUNT(*) FROM app.t", "30", 10*time.Second)
}

// TestMultiDomainFailover: replica A is ahead in domain 1, replica B in
// domain 2; after the failover no transaction of either domain is lost.
func TestMultiDomainFailover(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: false})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	ctx := context.Background()
	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.d1 (id INT PRIMARY KEY)")
	f.exec("node1", "CREATE TABLE app.d2 (id INT PRIMARY KEY)")
	f.waitValue("node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "2", 30*time.Second)
	f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "2", 30*time.Second)
	w := session(t, d, "node1")
	// Domain 1 reaches node2 only.
	f.exec("node3", "STOP SLAVE IO_THREAD")
	if err := w.Exec(ctx, "SET SESSION gtid_domain_id=1"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if err := w.Exec(ctx, fmt.Sprintf("INSERT INTO app.d1 VALUES (%d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	f.waitValue("node2", "SELECT COUNT(*) FROM app.d1", "5", 30*time.Second)
	// Domain 2 reaches node3 only.
	f.exec("node2", "STOP SLAVE IO_THREAD")
	f.exec("node3", "STOP SLAVE")
	f.exec("node3", "CHANGE MASTER TO IGNORE_DOMAIN_IDS=(1)")
	f.exec("node3", "START SLAVE")
	if err := w.Exec(ctx, "SET SESSION gtid_domain_id=2"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		if err := w.Exec(ctx, fmt.Sprintf("INSERT INTO app.d2 VALUES (%d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	f.waitValue("node3", "SELECT COUNT(*) FROM app.d2", "7", 30*time.Second)
	if f.value("node3", "SELECT COUNT(*) FROM app.d1") != "0" || f.value("node2", "SELECT COUNT(*) FROM app.d2") != "0" {
		t.Fatal("set-up failed: the domains did not split")
	}
	// Restore node3's channel settings (the failover re-points it anyway) and kill.
	// Transactions of an ignored domain still advance gtid_slave_pos
	// (MariaDB): take domain 1 out of node3's position again, so that it
	// really lacks domain 1.
	f.exec("node3", "STOP SLAVE")
	f.exec("node3", "CHANGE MASTER TO IGNORE_DOMAIN_IDS=()")
	var keep []string
	for _, g := range strings.Split(f.value("node3", "SELECT @@gtid_slave_pos"), ",") {
		if !strings.HasPrefix(g, "1-") {
			keep = append(keep, g)
		}
	}
	f.exec("node3", "SET GLOBAL gtid_slave_pos='"+strings.Join(keep, ",")+"'")
	f.exec("node3", "START SLAVE SQL_THREAD")
	w.Close()
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	// IO threads stopped by hand say nothing of the primary (no vote):
	// started again, they fail to connect to the dead primary and vote.
	f.exec("node2", "START SLAVE IO_THREAD")
	f.exec("node3", "START SLAVE IO_THREAD")
	rec := f.waitRecovery(1, 40*time.Second)
	if !rec.Success {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if !strings.Contains(rec.Plan, "catch") && !strings.Contains(strings.ToLower(rec.Plan), "fetch") {
		t.Errorf("plan has no catch-up step:\n%s", rec.Plan)
	}
	newP, other := "node2", "node3"
	if rec.NewPrimary == f.key("node3") {
		newP, other = "node3", "node2"
	}
	for _, n := range []string{newP, other} {
		f.waitValue(n, "SELECT COUNT(*) FROM app.d1", "5", 10*time.Second)
		f.waitValue(n, "SELECT COUNT(*) FROM app.d2", "7", 10*time.Second)
	}
	f.assertFollows(other, newP)
	t.Logf("plan:\n%s\naudit:\n%s", rec.Plan, f.auditText())
}

// TestOldPrimaryErrantFenced: the old primary committed transactions no
// replica received; when it returns it is set read_only, its errant GTIDs
// are reported, and it is not rejoined even with rejoin on.
func TestOldPrimaryErrantFenced(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, func(c *daemon.Config) { c.Clusters[0].Rejoin = true }, daemon.Wiring{})
	f.exec("node1", "CREATE DATABASE app")
	f.waitValue("node2", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='app'", "1", 30*time.Second)
	f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='app'", "1", 30*time.Second)
	f.exec("node2", "STOP SLAVE IO_THREAD")
	f.exec("node3", "STOP SLAVE IO_THREAD")
	f.exec("node1", "CREATE DATABASE lost_on_failover")
	errantPos := f.value("node1", "SELECT @@gtid_binlog_pos")
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	// IO threads stopped by hand do not vote: started again, they fail to
	// connect to the dead primary.
	f.exec("node2", "START SLAVE IO_THREAD")
	f.exec("node3", "START SLAVE IO_THREAD")
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if err := sandbox.Start(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	f.waitValue("node1", "SELECT @@read_only", "1", 10*time.Second)
	testutil.WaitFor(t, 10*time.Second, "errant GTIDs "+errantPos+" of the returning primary reported", func() (bool, string) {
		a := f.auditText()
		return strings.Contains(a, "errant transactions the new primary") && strings.Contains(a, errantPos), a
	})
	// The same fencing pass that reported the errant GTIDs skipped the
	// rejoin: no wait is needed to see it did not happen.
	if rows, _ := sandbox.Exec(context.Background(), d, "node1", "SHOW SLAVE STATUS"); len(rows.Values) != 0 {
		t.Errorf("old primary with errant transactions was rejoined")
	}
}

// TestCandidateDiesMidRecovery: the chosen candidate dies after planning
// (a pre-failover hook kills it); the failover goes on with the next one.
func TestCandidateDiesMidRecovery(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	n2 := d.Nodes[1]
	f := startDaemon(t, d, func(c *daemon.Config) {
		c.Clusters[0].PromotionRules = map[string]dbpilot.PromotionRule{n2.Key().String(): dbpilot.PromotePrefer}
		// The hook kills node2's server: the planned candidate.
		c.Hooks.PreFailover = []string{fmt.Sprintf("pkill -9 -f -- '--defaults-file=%s$'; sleep 0.3", n2.Config)}
	}, daemon.Wiring{})
	f.exec("node1", "CREATE DATABASE app")
	f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='app'", "1", 30*time.Second)
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 40*time.Second)
	if !rec.Success || rec.NewPrimary != f.key("node3") {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if a := f.auditText(); !strings.Contains(a, "candidate-failed") && !strings.Contains(a, "lost") {
		t.Errorf("the failed candidate is not in the audit:\n%s", a)
	}
	f.waitValue("node3", "SELECT @@read_only", "0", 30*time.Second)
	t.Logf("audit:\n%s", f.auditText())
}

// TestHangingHook: a pre-failover hook that hangs is killed at its timeout;
// with on_timeout: continue the failover goes on.
func TestHangingHook(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	f := startDaemon(t, d, func(c *daemon.Config) {
		c.Hooks.PreFailover = []string{"sleep 60"}
		c.Hooks.Timeout = daemon.Duration(500 * time.Millisecond)
		c.Hooks.OnTimeout = "continue"
	}, daemon.Wiring{})
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 20*time.Second)
	if !rec.Success || rec.NewPrimary != f.key("node2") {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if a := f.auditText(); !strings.Contains(a, "killed after the 500ms timeout") {
		t.Errorf("hook timeout not audited:\n%s", a)
	}
}
