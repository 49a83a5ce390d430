package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/metrics"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/sqlite"
)

// fixture is a running daemon on a sandbox.
type fixture struct {
	t     *testing.T
	d     *sandbox.Descriptor
	cfg   *daemon.Config
	dm    *daemon.Daemon
	store *sqlite.DB
	// stop stops the daemon and closes its store (at the test's end, or
	// sooner: a test that restarts serve on the same state file).
	stop func()
}

func startDaemon(t *testing.T, d *sandbox.Descriptor, mutate func(*daemon.Config), opt daemon.Wiring) *fixture {
	t.Helper()
	return startDaemonWith(t, d, mutate, opt, false)
}

func startDaemonWith(t *testing.T, d *sandbox.Descriptor, mutate func(*daemon.Config), opt daemon.Wiring, alerts bool) *fixture {
	t.Helper()
	cfg, err := daemon.ConfigFromSandbox(d)
	if err != nil {
		t.Fatal(err)
	}
	cfg.State = filepath.Join(t.TempDir(), "state.db")
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	opt.Store = store
	if alerts {
		opt.AlertStore = store
	}
	dm := daemon.Wire(cfg, opt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dm.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			dm.Close()
			store.Close()
		})
	}
	t.Cleanup(stop)
	f := &fixture{t: t, d: d, cfg: cfg, dm: dm, store: store, stop: stop}
	f.waitState(dbpilot.ClusterOK, 15*time.Second)
	return f
}

// openMetrics opens a metrics store under dir for serve, closed when the
// test ends.
func openMetrics(t *testing.T, dir string) *metrics.Store {
	t.Helper()
	ms, err := metrics.Open(metrics.Options{Dir: filepath.Join(dir, "metrics"), Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return ms
}

func (f *fixture) status() *dbpilot.ClusterStatus {
	st, err := f.dm.ClusterStatus(context.Background(), f.d.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) waitState(state string, timeout time.Duration) *dbpilot.ClusterStatus {
	f.t.Helper()
	var st *dbpilot.ClusterStatus
	testutil.WaitFor(f.t, timeout, "cluster state "+state, func() (bool, string) {
		st = f.status()
		return st.State == state, st.State
	})
	return st
}

// waitRecovery waits for the n-th recovery of the cluster to end.
func (f *fixture) waitRecovery(n int, timeout time.Duration) *dbpilot.Recovery {
	f.t.Helper()
	var recs []*dbpilot.Recovery
	testutil.WaitFor(f.t, timeout, fmt.Sprintf("%d recoveries ended", n), func() (bool, string) {
		recs = f.recoveries()
		return len(recs) >= n && !recs[0].Ended.IsZero(), "audit:\n" + f.auditText()
	})
	return recs[0]
}

func (f *fixture) recoveries() []*dbpilot.Recovery {
	recs, err := f.store.Recoveries(context.Background(), dbpilot.RecoveryFilter{Cluster: f.d.Name})
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

func (f *fixture) auditText() string {
	evs, _ := f.store.AuditEvents(context.Background(), dbpilot.AuditFilter{Cluster: f.d.Name})
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s %-16s %s\n", e.Time.Format("15:04:05.000"), e.Event, e.Message)
	}
	return b.String()
}

func (f *fixture) exec(node, q string) {
	f.t.Helper()
	if _, err := sandbox.Exec(context.Background(), f.d, node, q); err != nil {
		f.t.Fatalf("%s on %s: %v", q, node, err)
	}
}

func (f *fixture) value(node, q string) string {
	f.t.Helper()
	rows, err := sandbox.Exec(context.Background(), f.d, node, q)
	if err != nil {
		f.t.Fatalf("%s on %s: %v", q, node, err)
	}
	if len(rows.Values) == 0 || rows.Values[0][0] == nil {
		return ""
	}
	return *rows.Values[0][0]
}

func (f *fixture) waitValue(node, q, want string, timeout time.Duration) {
	f.t.Helper()
	testutil.WaitValue(f.t, f.d, node, q, want, timeout)
}

func (f *fixture) key(node string) dbpilot.InstanceKey {
	n, err := f.d.Node(node)
	if err != nil {
		f.t.Fatal(err)
	}
	return n.Key()
}

// assertFollows checks that node replicates from source with both threads.
func (f *fixture) assertFollows(node, source string) {
	f.t.Helper()
	testutil.WaitFor(f.t, 10*time.Second, node+" replicates from "+source, func() (bool, string) {
		db, err := mysql.Open(context.Background(), f.key(node), f.d.AdminOptions())
		if err != nil {
			return false, err.Error()
		}
		defer db.Close()
		inst, err := db.Inspect(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return len(inst.Channels) == 1 && inst.Channels[0].Source == f.key(source) && inst.Channels[0].Healthy(), "audit:\n" + f.auditText()
	})
}

func TestAutomaticFailoverSemiSync(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	for i := 1; i <= 20; i++ {
		f.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	killed := time.Now()
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success || rec.Kind != dbpilot.RecoveryFailoverAuto || rec.OldPrimary != f.key("node1") || len(rec.LostReplicas) != 0 {
		t.Fatalf("recovery: %+v\naudit:\n%s", rec, f.auditText())
	}
	t.Logf("recovered in %s after the kill; audit:\n%s", rec.Ended.Sub(killed), f.auditText())
	newP := ""
	for _, n := range []string{"node2", "node3"} {
		if f.key(n) == rec.NewPrimary {
			newP = n
		}
	}
	other := map[string]string{"node2": "node3", "node3": "node2"}[newP]
	if newP == "" {
		t.Fatalf("new primary %s is not node2 or node3", rec.NewPrimary)
	}
	f.waitValue(newP, "SELECT @@read_only", "0", 30*time.Second)
	if got := f.value(newP, "SELECT COUNT(*) FROM app.t"); got != "20" {
		t.Errorf("new primary has %s rows, want all 20 acknowledged ones", got)
	}
	f.assertFollows(other, newP)
	f.exec(newP, "INSERT INTO app.t VALUES (21)")
	f.waitValue(other, "SELECT COUNT(*) FROM app.t", "21", 10*time.Second)
	st := f.waitState(dbpilot.ClusterOK, 10*time.Second)
	if st.Primary != rec.NewPrimary {
		t.Errorf("status primary %s, want %s", st.Primary, rec.NewPrimary)
	}
	// The failover in the topology history: the old primary at the kill,
	// the new one after the recovery, and the change between them.
	api, _ := f.api()
	ctx := context.Background()
	testutil.WaitFor(t, 5*time.Second, "the new primary recorded", func() (bool, string) {
		at, err := api.ClusterAt(ctx, d.Name, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return at.Recorded && at.Primary == rec.NewPrimary, at.Primary.String()
	})
	if at, err := api.ClusterAt(ctx, d.Name, killed); err != nil || !at.Recorded || at.Primary != f.key("node1") ||
		!slices.ContainsFunc(at.Instances, func(i *dbpilot.Instance) bool { return i.Key == f.key("node1") && i.Reachable && len(i.Channels) == 0 }) {
		t.Errorf("at the kill: %+v, %v", at, err)
	}
	waitChange(t, api, d.Name, "primary "+f.key("node1").String()+" → "+rec.NewPrimary.String(), 5*time.Second)
	// The semi-sync primary side is on at the new primary.
	f.waitValue(newP, "SELECT @@rpl_semi_sync_master_enabled", "1", 30*time.Second)
	// The detection was recorded.
	if !strings.Contains(f.auditText(), "detect") {
		t.Errorf("no detect event:\n%s", f.auditText())
	}

	// The old primary comes back: fenced read_only, no errant GTIDs, stays
	// detached (rejoin is off).
	if err := sandbox.Start(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	f.waitValue("node1", "SELECT @@read_only", "1", 10*time.Second)
	testutil.WaitFor(t, 10*time.Second, "fencing audited", func() (bool, string) {
		a := f.auditText()
		return strings.Contains(a, "no errant transactions"), a
	})

	// Anti-flapping: kill the new primary; no second automatic recovery
	// (the rule itself is unit-tested without servers: TestTickBlockedUntilAck).
	if err := sandbox.Kill(d, newP); err != nil {
		t.Fatal(err)
	}
	f.waitState(dbpilot.ClusterDead, 15*time.Second)
	if n := len(f.recoveries()); n != 1 {
		t.Fatalf("%d recoveries while blocked, want 1; audit:\n%s", n, f.auditText())
	}
	if st := f.status(); st.BlockedUntil.IsZero() {
		t.Errorf("status does not say the cluster is blocked: %+v", st)
	}
	// Ack unblocks.
	if n, err := f.dm.Ack(context.Background(), d.Name, "test", "go"); err != nil || n != 1 {
		t.Fatalf("ack: %d, %v", n, err)
	}
	rec2 := f.waitRecovery(2, 30*time.Second)
	if !rec2.Success || rec2.NewPrimary != f.key(other) {
		t.Fatalf("second recovery: %+v\naudit:\n%s", rec2, f.auditText())
	}
	f.waitValue(other, "SELECT COUNT(*) FROM app.t", "21", 30*time.Second)
}

func TestNoFailoverWhenOnlyDbpilotLosesThePrimary(t *testing.T) {
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
	// Through a real network cut of dbpilot's own path (replication goes
	// on); the decision itself is unit-tested: TestTickUnreachablePrimaryNoRecovery.
	proxy.Cut()
	f.waitState(dbpilot.ClusterUnreachable, 10*time.Second)
	if n := len(f.recoveries()); n != 0 {
		t.Fatalf("%d recoveries although the replicas still replicate; audit:\n%s", n, f.auditText())
	}
	// A manual failover is refused too, with the reason.
	_, err := f.dm.Failover(context.Background(), d.Name, dbpilot.OperationOptions{})
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "still see it alive") {
		t.Errorf("manual failover: %v", err)
	}
	f.exec("node1", "CREATE DATABASE stillalive")
	f.waitValue("node2", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='stillalive'", "1", 30*time.Second)
	proxy.Restore()
	f.waitState(dbpilot.ClusterOK, 10*time.Second)
}

func TestHooksAndMustNot(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	dir := t.TempDir()
	pre, post := filepath.Join(dir, "pre"), filepath.Join(dir, "post")
	veto := filepath.Join(dir, "veto")
	os.WriteFile(veto, []byte("1"), 0o600)
	f := startDaemon(t, d, func(c *daemon.Config) {
		c.Clusters[0].PromotionRules = map[string]dbpilot.PromotionRule{d.Nodes[1].Key().String(): dbpilot.PromoteMustNot}
		c.Hooks.PreFailover = []string{fmt.Sprintf(`env | grep ^DBPILOT_ | sort > %s; test ! -e %s`, pre, veto)}
		c.Hooks.PostFailover = []string{fmt.Sprintf(`env | grep ^DBPILOT_ | sort > %s`, post)}
		c.Recovery.BlockPeriod = daemon.Duration(time.Hour)
	}, daemon.Wiring{})
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	// The vetoing pre-failover hook stops the first recovery.
	rec := f.waitRecovery(1, 20*time.Second)
	if rec.Success || !strings.Contains(rec.Error, "vetoed by pre-failover hook") {
		t.Fatalf("vetoed recovery: %+v", rec)
	}
	b, _ := os.ReadFile(pre)
	for _, want := range []string{"DBPILOT_CLUSTER=" + d.Name, "DBPILOT_OLD_PRIMARY=" + f.key("node1").String(), "DBPILOT_KIND=failover-auto", "DBPILOT_PHASE=pre-failover"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("pre-failover hook env lacks %q:\n%s", want, b)
		}
	}
	if f.value("node2", "SELECT @@read_only") != "1" || f.value("node3", "SELECT @@read_only") != "1" {
		t.Fatal("a vetoed failover changed something")
	}
	// Lift the veto; the block holds automatic recovery (unit-tested:
	// TestTickBlockedUntilAck), a manual failover goes on.
	os.Remove(veto)
	if n := len(f.recoveries()); n != 1 {
		t.Fatalf("automatic recovery ran while blocked: %d", n)
	}
	rec, err := f.dm.Failover(context.Background(), d.Name, dbpilot.OperationOptions{})
	if err != nil || !rec.Success {
		t.Fatalf("manual failover: %v %+v\n%s", err, rec, f.auditText())
	}
	// node2 is must_not: node3 is promoted, node2 follows it.
	if rec.NewPrimary != f.key("node3") || !strings.Contains(rec.Plan, "must_not") {
		t.Errorf("promoted %s, want node3 (node2 is must_not); plan:\n%s", rec.NewPrimary, rec.Plan)
	}
	f.assertFollows("node2", "node3")
	b, _ = os.ReadFile(post)
	if !strings.Contains(string(b), "DBPILOT_NEW_PRIMARY="+f.key("node3").String()) || !strings.Contains(string(b), "DBPILOT_KIND=failover-manual") {
		t.Errorf("post-failover hook env:\n%s", b)
	}
}

func TestSwitchoverAndRelocate(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	ctx := context.Background()
	f.exec("node1", "CREATE DATABASE app")
	// Dry run changes nothing.
	rec, err := f.dm.Switchover(ctx, d.Name, dbpilot.OperationOptions{DryRun: true, To: f.key("node2")})
	if err != nil || rec.Plan == "" || f.value("node1", "SELECT @@read_only") != "0" {
		t.Fatalf("dry run: %v %+v", err, rec)
	}
	rec, err = f.dm.Switchover(ctx, d.Name, dbpilot.OperationOptions{To: f.key("node2")})
	if err != nil || !rec.Success || rec.NewPrimary != f.key("node2") {
		t.Fatalf("switchover: %v %+v\n%s", err, rec, f.auditText())
	}
	f.waitValue("node2", "SELECT @@read_only", "0", 30*time.Second)
	f.waitValue("node1", "SELECT @@read_only", "1", 30*time.Second)
	f.assertFollows("node1", "node2")
	f.assertFollows("node3", "node2")
	f.exec("node2", "CREATE DATABASE after")
	f.waitValue("node1", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='after'", "1", 30*time.Second)
	if st := f.waitState(dbpilot.ClusterOK, 10*time.Second); st.Primary != f.key("node2") {
		t.Errorf("status primary %s after switchover", st.Primary)
	}
	// A switchover to an unknown server is refused.
	if _, err := f.dm.Switchover(ctx, d.Name, dbpilot.OperationOptions{To: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}}); err == nil {
		t.Error("switchover to a stranger accepted")
	}
	// Relocate node3 below node1 (now a replica with binlog and log_slave_updates).
	rec, err = f.dm.Relocate(ctx, f.key("node3"), dbpilot.OperationOptions{To: f.key("node1")})
	if err != nil || !rec.Success {
		t.Fatalf("relocate: %v %+v", err, rec)
	}
	f.assertFollows("node3", "node1")
	f.exec("node2", "CREATE DATABASE chain")
	f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='chain'", "1", 30*time.Second)
	// Refusals: below itself; below its own replica (a cycle).
	if _, err := f.dm.Relocate(ctx, f.key("node3"), dbpilot.OperationOptions{To: f.key("node3")}); err == nil {
		t.Error("relocate below itself accepted")
	}
	if _, err := f.dm.Relocate(ctx, f.key("node1"), dbpilot.OperationOptions{To: f.key("node3")}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("relocate into a cycle: %v", err)
	}
	// An errant transaction on node3 makes moving it below node2... allowed
	// (node2 lacks it): refused.
	db, err := mysql.Open(ctx, f.key("node3"), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(ctx, "CREATE DATABASE errant_here")
	db.Close()
	if _, err := f.dm.Relocate(ctx, f.key("node3"), dbpilot.OperationOptions{To: f.key("node2")}); err == nil {
		t.Error("relocate of a replica with errant transactions accepted")
	}
}
