package daemon_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// rootSession opens root's session on node through its socket: it works
// while the sandbox's dbpilot account is locked.
func rootSession(t *testing.T, d *sandbox.Descriptor, node string) *mysql.DB {
	t.Helper()
	n, err := d.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	db, err := mysql.Open(context.Background(), n.Key(), mysql.Options{Credentials: mysql.Credentials{User: "root", Password: d.Admin.Password}, Socket: n.Socket})
	if err != nil {
		t.Fatal(err)
	}
	db.SQL().SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// lockAccounts locks (or unlocks) the accounts of users on a server and,
// when locking, kills their sessions, as a password rotation or an account
// lock by a DBA does.
func lockAccounts(t *testing.T, root *mysql.DB, lock bool, users ...string) {
	t.Helper()
	ctx := context.Background()
	what := "ACCOUNT UNLOCK"
	if lock {
		what = "ACCOUNT LOCK"
	}
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = mysql.Quote(u)
	}
	rows, err := root.Query(ctx, "SELECT user, host FROM mysql.user WHERE user IN ("+strings.Join(quoted, ",")+")")
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{"SET SESSION sql_log_bin=0"}
	for _, r := range rows.Values {
		stmts = append(stmts, fmt.Sprintf("ALTER USER %s@%s %s", mysql.Quote(*r[0]), mysql.Quote(*r[1]), what))
	}
	if err := root.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	if !lock {
		return
	}
	ids, err := root.Query(ctx, "SELECT id FROM information_schema.processlist WHERE user IN ("+strings.Join(quoted, ",")+")")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ids.Values {
		_ = root.Exec(ctx, "KILL "+*r[0]) // a session may end on its own meanwhile
	}
}

// TestLockedAccountsAreNoProofOfDeath: the primary's dbpilot and
// replication accounts are locked (error 4151) and their sessions killed.
// serve's reconnects and the replicas' are refused; the primary answers,
// so it is alive: no failover (orchestrator and dbpilot before promoted a
// replica here and left two writable primaries). It is reported as
// RefusesDbpilot, its alert fires and MySQLDown does not; a manual failover
// is refused and names --force.
func TestLockedAccountsAreNoProofOfDeath(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	ms := openMetrics(t, t.TempDir())
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Alerts.Interval = daemon.Duration(200 * time.Millisecond)
	}, daemon.Wiring{MetricsStore: ms}, true)
	root := rootSession(t, d, "node1")
	lockAccounts(t, root, true, d.Admin.User, d.Repl.User)
	t.Cleanup(func() { lockAccounts(t, root, false, d.Admin.User, d.Repl.User) })

	primary := f.key("node1")
	st := f.waitState(dbpilot.ClusterUnreachable, 15*time.Second)
	testutil.WaitFor(t, 15*time.Second, "RefusesDbpilot on the primary", func() (bool, string) {
		st = f.status()
		return slices.ContainsFunc(st.Problems, func(p dbpilot.Problem) bool {
			return p.Code == dbpilot.ProblemRefusesDbpilot && p.Instance == primary && strings.Contains(p.Message, "locked")
		}), fmt.Sprint(st.Problems)
	})
	// The replicas were refused too: their IO threads say so (4151), and
	// that is a vote for a live primary.
	for _, n := range []string{"node2", "node3"} {
		testutil.WaitFor(t, 15*time.Second, n+" refused by the primary", func() (bool, string) {
			rows, err := sandbox.Exec(context.Background(), d, n, "SHOW SLAVE STATUS")
			if err != nil {
				return false, err.Error()
			}
			m := rows.Maps()
			return len(m) == 1 && m[0]["Last_IO_Errno"] == "4151", fmt.Sprint(m)
		})
	}
	waitAlert(t, f, "RefusesDbpilot", primary.String(), "firing", 20*time.Second)
	// Give automatic recovery every chance to do the wrong thing.
	time.Sleep(3 * time.Second)
	if recs := f.recoveries(); len(recs) != 0 {
		t.Fatalf("%d recoveries of a live primary that refuses dbpilot; audit:\n%s", len(recs), f.auditText())
	}
	for _, n := range []string{"node2", "node3"} {
		if ro := f.value(n, "SELECT @@read_only"); ro != "1" {
			t.Errorf("%s is writable (read_only=%s): a replica was promoted beside the live primary", n, ro)
		}
	}
	alerts, err := f.dm.Alerts(context.Background(), dbpilot.AlertFilter{Cluster: d.Name, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if a.Rule == "MySQLDown" && a.Labels["instance"] == primary.String() && a.State == "firing" {
			t.Errorf("MySQLDown fires for a primary that answers: %+v", a)
		}
	}
	// A manual failover is refused, and names --force.
	_, err = f.dm.Failover(context.Background(), d.Name, dbpilot.OperationOptions{})
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "refuses dbpilot") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("manual failover: %v", err)
	}
	// Unlocked: back to ok, nothing changed.
	lockAccounts(t, root, false, d.Admin.User, d.Repl.User)
	f.waitState(dbpilot.ClusterOK, 20*time.Second)
	if st := f.status(); st.Primary != primary {
		t.Errorf("primary %s after unlock, want %s", st.Primary, primary)
	}
}

// TestStoppedIOThreadsAreNoVote: dbpilot's path to the primary is cut (a
// real network cut through a proxy) and both replicas' IO threads are
// stopped by hand. Nothing says the primary is dead: no failover.
func TestStoppedIOThreadsAreNoVote(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	primary := d.Nodes[0].Key().String()
	proxy := testutil.NewProxy(t, primary)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == primary {
			addr = proxy.Addr
		}
		var dl net.Dialer
		return dl.DialContext(ctx, network, addr)
	}
	f := startDaemon(t, d, nil, daemon.Wiring{Dial: dial})
	f.exec("node2", "STOP SLAVE IO_THREAD")
	f.exec("node3", "STOP SLAVE IO_THREAD")
	proxy.Cut()
	st := f.waitState(dbpilot.ClusterUnreachable, 10*time.Second)
	time.Sleep(3 * time.Second) // the window in which no recovery may start
	if n := len(f.recoveries()); n != 0 {
		t.Fatalf("%d recoveries on IO threads stopped by hand; audit:\n%s", n, f.auditText())
	}
	if !slices.ContainsFunc(f.status().Problems, func(p dbpilot.Problem) bool { return p.Code == dbpilot.ProblemUnreachablePrimary }) {
		t.Errorf("problems %v lack UnreachablePrimary", st.Problems)
	}
	proxy.Restore()
	f.exec("node2", "START SLAVE IO_THREAD")
	f.exec("node3", "START SLAVE IO_THREAD")
	f.waitState(dbpilot.ClusterOK, 10*time.Second)
}

// TestCrashedReplicaStaysVisible: a replica killed with SIGKILL stays in
// the cluster, unreachable, monitored (mysql_up 0) and MySQLDown fires for
// it after its `for`; it is not dropped as "left the topology".
func TestCrashedReplicaStaysVisible(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f, ms := startMonitoring(t, d, "")
	victim := f.key("node3")
	if err := sandbox.Kill(d, "node3"); err != nil {
		t.Fatal(err)
	}
	waitAlert(t, f, "MySQLDown", victim.String(), "firing", 60*time.Second)
	st := f.status()
	i := slices.IndexFunc(st.Instances, func(i *dbpilot.Instance) bool { return i.Key == victim })
	if i < 0 || st.Instances[i].Reachable {
		t.Fatalf("crashed replica not in the cluster as unreachable: instances %s, detached %s", instanceList(st.Instances), instanceList(st.Detached))
	}
	if len(st.Instances[i].Channels) != 1 || st.Instances[i].Channels[0].Source != f.key("node1") {
		t.Errorf("crashed replica lost its place under the primary: %+v", st.Instances[i].Channels)
	}
	if !slices.ContainsFunc(st.Problems, func(p dbpilot.Problem) bool { return p.Code == dbpilot.ProblemUnreachable && p.Instance == victim }) {
		t.Errorf("problems %v lack Unreachable on %s", st.Problems, victim)
	}
	s, err := ms.QueryInstant(context.Background(), `mysql_up{instance="`+victim.String()+`"}`, time.Now())
	if err != nil || len(s) != 1 || s[0].Points[0].V != 0 {
		t.Errorf("mysql_up of the crashed replica: %v, %v; want one series at 0", s, err)
	}
	if f.dm.Monitored() != 3 {
		t.Errorf("%d instances monitored, want 3 (the crashed one too)", f.dm.Monitored())
	}
}

// TestWritableOldPrimaryIsCritical: after a failover the old primary comes
// back writable and rejoin is off. Until it is fenced, and whenever it is
// made writable again by hand, the cluster reports MultipleWritable
// (critical), never ok without a problem; serve fences it at once.
func TestWritableOldPrimaryIsCritical(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	if err := sandbox.Start(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	f.waitValue("node1", "SELECT @@read_only", "1", 10*time.Second)
	// A DBA (or a script) makes it writable again: critical at once,
	// and fenced again.
	old := f.key("node1")
	seen := false
	root := rootSession(t, d, "node1")
	if err := root.Exec(context.Background(), "SET GLOBAL read_only=OFF"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !seen {
		seen = slices.ContainsFunc(f.status().Problems, func(p dbpilot.Problem) bool {
			return p.Code == dbpilot.ProblemMultipleWritable && p.Instance == old && p.Severity == dbpilot.SeverityCritical
		})
		time.Sleep(20 * time.Millisecond)
	}
	ro := f.value("node1", "SELECT @@read_only")
	if !seen && ro != "1" {
		t.Fatalf("writable old primary beside %s: no MultipleWritable problem and not fenced (read_only=%s)", rec.NewPrimary, ro)
	}
	f.waitValue("node1", "SELECT @@read_only", "1", 10*time.Second)
}

// TestClusterOverlapSuspendsRecovery: two configured clusters start apart
// (node4 is a standalone server, cluster b), then node4 is made a replica
// of cluster a's primary, so both clusters discover the same tree. Both
// report ClusterOverlap naming the servers, and when a's primary is killed
// neither recovers it (before, both recovered to different candidates and
// left a ring with two writable members).
func TestClusterOverlapSuspendsRecovery(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 4})
	ctx := context.Background()
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only=OFF"} {
		if _, err := sandbox.Exec(ctx, d, "node4", q); err != nil {
			t.Fatal(err)
		}
	}
	n4 := d.Nodes[3].Key()
	f := startDaemon(t, d, func(c *daemon.Config) {
		c.Clusters[0].Seeds = []string{d.Nodes[0].Key().String()}
		c.Clusters = append(c.Clusters, daemon.ClusterConfig{Name: "b", Seeds: []string{n4.String()}, AutoFailover: true})
	}, daemon.Wiring{})
	hasOverlap := func(cluster string) (bool, string) {
		st, err := f.dm.ClusterStatus(ctx, cluster)
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(st.Problems, func(p dbpilot.Problem) bool { return p.Code == dbpilot.ProblemClusterOverlap }), fmt.Sprint(st.Problems)
	}
	if ok, ps := hasOverlap(d.Name); ok {
		t.Fatalf("overlap before the trees meet: %s", ps)
	}
	f.exec("node4", fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos",
		d.Nodes[0].Port, mysql.Quote(d.Repl.User), mysql.Quote(d.Repl.Password)))
	f.exec("node4", "START SLAVE")
	f.exec("node4", "SET GLOBAL read_only=ON")
	for _, c := range []string{d.Name, "b"} {
		testutil.WaitFor(t, 15*time.Second, "ClusterOverlap in cluster "+c, func() (bool, string) { return hasOverlap(c) })
	}
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	f.waitState(dbpilot.ClusterDead, 15*time.Second)
	time.Sleep(3 * time.Second) // the window in which no recovery may start
	for _, c := range []string{d.Name, "b"} {
		recs, err := f.store.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 0 {
			t.Errorf("cluster %s recovered while it overlaps another: %+v\n%s", c, recs[0], f.auditText())
		}
	}
	writable := 0
	for _, n := range []string{"node2", "node3", "node4"} {
		if f.value(n, "SELECT @@read_only") == "0" {
			writable++
		}
	}
	if writable != 0 {
		t.Errorf("%d replicas were made writable", writable)
	}
}

// TestHungPrimary: the primary is stopped with SIGSTOP (it accepts TCP
// connections and answers nothing). It is declared dead once its replicas
// lose it, the recovery never waits on it, and when it runs again (SIGCONT)
// the fence serve sent on its standby session runs first, and serve's
// connection kept waiting on it fences it too.
func TestHungPrimary(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	// serve holds its liveness session on the primary, and its standby
	// session, opened just before it.
	testutil.WaitFor(t, 20*time.Second, "liveness session on the primary", func() (bool, string) {
		n := f.value("node1", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%"+mysql.LivenessMarker+"%' AND ID <> CONNECTION_ID()")
		return n == "1", n
	})
	stopped := time.Now()
	resume := testutil.Hang(t, d.Nodes[0])
	rec := f.waitRecovery(1, 40*time.Second)
	if !rec.Success || rec.WritesOpen.IsZero() || rec.DetectedAt.IsZero() {
		t.Fatalf("recovery: %+v\n%s", rec, f.auditText())
	}
	t.Logf("SIGSTOP to writes open: %s (first failed check to writes open %s, plan to done %s)",
		rec.WritesOpen.Sub(stopped).Round(time.Millisecond), rec.WritesOpen.Sub(rec.DetectedAt).Round(time.Millisecond), rec.Ended.Sub(rec.Started).Round(time.Millisecond))
	newP := ""
	for _, n := range []string{"node2", "node3"} {
		if f.key(n) == rec.NewPrimary {
			newP = n
		}
	}
	if newP == "" || f.value(newP, "SELECT @@read_only") != "0" {
		t.Fatalf("new primary %s (%s) is not writable", rec.NewPrimary, newP)
	}
	resume()
	f.waitValue("node1", "SELECT @@read_only", "1", 10*time.Second)
	testutil.WaitFor(t, 10*time.Second, "fence on return audited", func() (bool, string) {
		a := f.auditText()
		return strings.Contains(a, "answers again: set read_only at once") || strings.Contains(a, "is back: set read_only"), a
	})
	// The fence sent during the failover on serve's standby session ran
	// when the server did: before any new session could have been greeted.
	testutil.WaitFor(t, 10*time.Second, "standby fence ran", func() (bool, string) {
		a := f.auditText()
		return strings.Contains(a, "ran the read_only sent on serve's standby session"), a
	})
}
