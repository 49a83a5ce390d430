package recovery_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/recovery"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Integration tests of the executor on real MariaDB sandboxes through a real
// mysql.Controller, with plans built by hand. Not parallel (testutil uses
// t.Setenv).

// events records audit events.
type events struct {
	t  *testing.T
	mu sync.Mutex
	ev []dbpilot.AuditEvent
	// on, when set, runs for each event as the executor records it (the
	// executor waits for it).
	on func(dbpilot.AuditEvent)
}

func (e *events) Audit(_ context.Context, ev dbpilot.AuditEvent) error {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	on := e.on
	e.mu.Unlock()
	e.t.Logf("audit %-15s %-16s %s %v", ev.Event, ev.Instance, ev.Message, ev.Detail)
	if on != nil {
		on(ev)
	}
	return nil
}

// named returns the events called name.
func (e *events) named(name string) []dbpilot.AuditEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dbpilot.AuditEvent
	for _, ev := range e.ev {
		if ev.Event == name {
			out = append(out, ev)
		}
	}
	return out
}

type rig struct {
	t   *testing.T
	d   *sandbox.Descriptor
	ctl *mysql.Controller
	ev  *events
}

func newRig(t *testing.T, spec sandbox.Spec) *rig {
	t.Helper()
	d := testutil.MustSandbox(t, spec)
	ctl := mysql.NewController(d.AdminOptions(), d.Repl)
	t.Cleanup(func() { ctl.Close() })
	return &rig{t: t, d: d, ctl: ctl, ev: &events{t: t}}
}

func (r *rig) key(node string) dbpilot.InstanceKey {
	n, err := r.d.Node(node)
	if err != nil {
		r.t.Fatal(err)
	}
	return n.Key()
}

func (r *rig) exec(node string, stmts ...string) {
	r.t.Helper()
	// One connection, so that session variables hold for every statement.
	db, err := mysql.Open(context.Background(), r.key(node), r.d.AdminOptions())
	if err != nil {
		r.t.Fatalf("connect to %s: %v", node, err)
	}
	defer db.Close()
	if err := db.Exec(context.Background(), stmts...); err != nil {
		r.t.Fatalf("on %s: %v", node, err)
	}
}

func (r *rig) value(node, query string) string {
	r.t.Helper()
	rows, err := sandbox.Exec(context.Background(), r.d, node, query)
	if err != nil {
		r.t.Fatalf("%s on %s: %v", query, node, err)
	}
	if len(rows.Values) != 1 || rows.Values[0][0] == nil {
		return ""
	}
	return *rows.Values[0][0]
}

// waitValue polls query on node until it returns want.
func (r *rig) waitValue(node, query, want string) {
	r.t.Helper()
	testutil.WaitValue(r.t, r.d, node, query, want, 10*time.Second)
}

// replicatesFrom checks that node has one healthy channel from source.
func (r *rig) replicatesFrom(node, source string) {
	r.t.Helper()
	inst, err := r.ctl.Inspect(context.Background(), r.key(node))
	if err != nil {
		r.t.Fatal(err)
	}
	if len(inst.Channels) != 1 || inst.Channels[0].Source != r.key(source) || !inst.Channels[0].Healthy() {
		r.t.Errorf("%s channels = %+v, want one healthy channel from %s", node, inst.Channels, source)
	}
}

func (r *rig) executor(opt recovery.Options) *recovery.Executor {
	return &recovery.Executor{Ctl: r.ctl, Audit: r.ev, Opt: opt}
}

func (r *rig) eventCount(name string) int { return len(r.ev.named(name)) }

// waitReceived waits until node's IO thread has received everything
// source wrote (MariaDB: Gtid_IO_Pos reaches source's gtid_binlog_pos).
func (r *rig) waitReceived(node, source string) {
	r.t.Helper()
	testutil.WaitFor(r.t, 10*time.Second, node+" receives "+source+"'s writes", func() (bool, string) {
		want := r.value(source, "SELECT @@gtid_binlog_pos")
		inst, err := r.ctl.Inspect(context.Background(), r.key(node))
		if err != nil {
			return false, err.Error()
		}
		ch := inst.Channel(r.key(source))
		if ch == nil {
			return false, "no channel"
		}
		return ch.GTIDIOPos == want, fmt.Sprintf("Gtid_IO_Pos %s, want %s", ch.GTIDIOPos, want)
	})
}

// TestExecutorFailover: node1 dies with writes that node2 received but has not
// applied (its SQL thread stopped); node4 is dead too. node2 is promoted
// with every write, node3 follows it, node4 is reported lost.
func TestExecutorFailover(t *testing.T) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 4, SemiSync: true})
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))")
	r.waitValue("node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "1")
	r.exec("node2", "STOP SLAVE SQL_THREAD")
	for i := 1; i <= 50; i++ {
		r.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d, 'before')", i))
	}
	// node2 received every write (semi-sync acks came from whoever was
	// first; wait until node2 has them all in its relay log).
	pos := r.value("node1", "SELECT @@gtid_binlog_pos")
	deadline := time.Now().Add(10 * time.Second)
	for {
		inst, err := r.ctl.Inspect(context.Background(), r.key("node2"))
		if err == nil && len(inst.Channels) == 1 && inst.Channels[0].GTIDIOPos == pos {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node2 did not receive %s: %+v %v", pos, inst, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := r.value("node2", "SELECT COUNT(*) FROM app.t"); got == "50" {
		t.Fatal("node2 applied everything already; the test wants a relay log to apply")
	}
	for _, n := range []string{"node4", "node1"} {
		if err := sandbox.Kill(r.d, n); err != nil {
			t.Fatal(err)
		}
	}

	plan := &recovery.Plan{Kind: dbpilot.RecoveryFailoverManual, Cluster: "c", OldPrimary: r.key("node1"), Candidate: r.key("node2"),
		Repoint: []dbpilot.InstanceKey{r.key("node3"), r.key("node4")}}
	rec := &dbpilot.Recovery{ID: 7, Cluster: "c", Kind: plan.Kind, OldPrimary: plan.OldPrimary, Started: time.Now()}
	start := time.Now()
	err := r.executor(recovery.Options{SemiSync: true, RepointVerify: 2 * time.Second}).Failover(context.Background(), plan, rec)
	t.Logf("failover took %s", time.Since(start))
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if !rec.Success || rec.Error != "" || rec.NewPrimary != r.key("node2") || rec.Ended.IsZero() {
		t.Errorf("recovery = %+v", rec)
	}
	if !slices.Equal(rec.LostReplicas, []dbpilot.InstanceKey{r.key("node4")}) {
		t.Errorf("lost replicas = %v, want node4", rec.LostReplicas)
	}
	if got := r.value("node2", "SELECT COUNT(*) FROM app.t"); got != "50" {
		t.Errorf("node2 has %s rows, want 50", got)
	}
	if got := r.value("node2", "SELECT @@read_only"); got != "0" {
		t.Errorf("node2 read_only = %s", got)
	}
	if got := r.value("node2", "SELECT @@rpl_semi_sync_master_enabled"); got != "1" {
		t.Errorf("node2 semi-sync primary side = %s", got)
	}
	r.replicatesFrom("node3", "node2")
	r.exec("node2", "INSERT INTO app.t VALUES (100, 'after')")
	r.waitValue("node3", "SELECT v FROM app.t WHERE id=100", "after")
	r.waitValue("node3", "SELECT COUNT(*) FROM app.t", "51")
	for _, ev := range []string{"apply-relay-log", "promote", "repoint", "lost", "done"} {
		if r.eventCount(ev) == 0 {
			t.Errorf("no %q audit event", ev)
		}
	}
	if lost := r.ev.named("lost"); len(lost) != 1 || lost[0].Instance != r.key("node4") || lost[0].Detail["reason"] == "" || lost[0].RecoveryID != 7 {
		t.Errorf("lost events = %+v", lost)
	}
}

// noPositioner hides the controller's SetReplicaPosition.
type noPositioner struct{ dbpilot.ReplicationController }

// TestExecutorFailoverCatchUp: node2 is ahead in domain 1 and node3 in domain 2 when
// node1 dies. node2, the candidate, fetches domain 2 from node3 first.
func TestExecutorFailoverCatchUp(t *testing.T) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	ctx := context.Background()
	n1, n3 := r.key("node1"), r.key("node3")
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, d INT)",
		"SET SESSION gtid_domain_id=1", "INSERT INTO app.t VALUES (1, 1)",
		"SET SESSION gtid_domain_id=2", "INSERT INTO app.t VALUES (21, 2)")
	for _, n := range []string{"node2", "node3"} {
		r.waitValue(n, "SELECT COUNT(*) FROM app.t", "2")
	}
	// Domain 1 reaches node2 only.
	r.exec("node3", "STOP SLAVE")
	r.exec("node1", "SET SESSION gtid_domain_id=1", "INSERT INTO app.t VALUES (2, 1)", "INSERT INTO app.t VALUES (3, 1)", "INSERT INTO app.t VALUES (4, 1)")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "5")
	r.exec("node2", "STOP SLAVE")
	// Domain 2 reaches node3 only: node3 replicates ignoring domain 1...
	if err := r.ctl.ChangeSource(ctx, r.key("node3"), n1, dbpilot.ChangeSourceOptions{IgnoreDomains: []uint32{1}}); err != nil {
		t.Fatal(err)
	}
	r.exec("node3", "START SLAVE")
	r.exec("node1", "SET SESSION gtid_domain_id=2", "INSERT INTO app.t VALUES (22, 2)", "INSERT INTO app.t VALUES (23, 2)")
	r.waitValue("node3", "SELECT COUNT(*) FROM app.t WHERE d=2", "3")
	// ... which moved its gtid_slave_pos past the domain-1 transactions it
	// skipped: put it back to what node3 really holds.
	r.exec("node3", "STOP SLAVE", "SET GLOBAL gtid_slave_pos=@@gtid_binlog_pos")
	if err := r.ctl.ChangeSource(ctx, n3, n1, dbpilot.ChangeSourceOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.Kill(r.d, "node1"); err != nil {
		t.Fatal(err)
	}
	if got := r.value("node3", "SELECT COUNT(*) FROM app.t"); got != "4" {
		t.Fatalf("node3 has %s rows before the failover, want 4 (1, 21, 22, 23)", got)
	}
	until := r.value("node3", "SELECT @@gtid_binlog_pos")
	before2 := r.value("node2", "SELECT @@gtid_slave_pos")
	t.Logf("node2 at %s, node3 at %s", before2, until)

	plan := &recovery.Plan{Kind: dbpilot.RecoveryFailoverManual, Cluster: "c", OldPrimary: n1, Candidate: r.key("node2"),
		CatchUp: []recovery.CatchUp{{From: n3, Domains: []uint32{2}, Until: until}},
		Repoint: []dbpilot.InstanceKey{n3}}
	// Without gtid_slave_pos control node3 refuses node2, which is ahead of
	// it in domain 1, although domain 1 is ignored (MariaDB error 1236): the
	// failover fails fast, promoting nobody.
	rec := &dbpilot.Recovery{ID: 1, Cluster: "c", Kind: plan.Kind, OldPrimary: n1}
	start := time.Now()
	err := (&recovery.Executor{Ctl: noPositioner{r.ctl}, Audit: r.ev, Opt: recovery.Options{ApplyTimeout: 10 * time.Second}}).Failover(ctx, plan, rec)
	if err == nil || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || rec.Success || !rec.NewPrimary.IsZero() ||
		!strings.Contains(err.Error(), "catch-up from "+n3.String()) || !strings.Contains(err.Error(), "no replica promoted") || !strings.Contains(err.Error(), "1236") {
		t.Fatalf("catch-up without positioning: %v (code %s), %+v", err, dbpilot.ErrorCode(err), rec)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("a refused catch-up failed after %s, not at once", el)
	}
	t.Logf("without positioning, after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if got := r.value("node2", "SELECT @@read_only"); got != "1" {
		t.Errorf("node2 read_only = %s after a failed failover", got)
	}

	// Again, with the real controller: the caller re-runs the plan.
	rec = &dbpilot.Recovery{ID: 2, Cluster: "c", Kind: plan.Kind, OldPrimary: n1}
	start = time.Now()
	if err := r.executor(recovery.Options{RepointVerify: 3 * time.Second, ApplyTimeout: 5 * time.Second}).Failover(ctx, plan, rec); err != nil {
		t.Fatalf("failover: %v", err)
	}
	t.Logf("failover with catch-up took %s", time.Since(start))
	if !rec.Success || len(rec.LostReplicas) != 0 || rec.NewPrimary != r.key("node2") {
		t.Errorf("recovery = %+v", rec)
	}
	want := "1,2,3,4,21,22,23"
	r.waitValue("node2", "SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t", want)
	r.waitValue("node2", "SELECT @@read_only", "0")
	// node2's own position is whole again: domain 1 at its own height.
	sp := r.value("node2", "SELECT @@gtid_slave_pos")
	if !strings.Contains(sp, fmt.Sprintf("1-%d-4", r.d.Nodes[0].ServerID)) || !strings.Contains(sp, fmt.Sprintf("2-%d-3", r.d.Nodes[0].ServerID)) {
		t.Errorf("node2 gtid_slave_pos after the catch-up = %s", sp)
	}
	r.replicatesFrom("node3", "node2")
	r.waitValue("node3", "SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t", want)
	r.exec("node2", "INSERT INTO app.t VALUES (100, 0)")
	r.waitValue("node3", "SELECT COUNT(*) FROM app.t WHERE id=100", "1")
	if cu := r.ev.named("catch-up"); len(cu) != 1 || cu[0].Detail["ignore_domains"] != "0,1" || cu[0].Detail["domains"] != "2" {
		t.Errorf("catch-up events = %+v", cu)
	}
	inst, err := r.ctl.Inspect(ctx, r.key("node3"))
	if err != nil {
		t.Fatal(err)
	}
	if ch := inst.Channel(r.key("node2")); ch == nil {
		t.Errorf("node3 channels %+v", inst.Channels)
	}
}

// TestExecutorSwitchover: a switchover that cannot complete rolls back; then node1
// hands over to node2 and becomes its read-only replica, node3 follows, and
// node3 is relocated below node1.
func TestExecutorSwitchover(t *testing.T) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	ctx := context.Background()
	n1, n2, n3 := r.key("node1"), r.key("node2"), r.key("node3")
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	for i := 1; i <= 20; i++ {
		r.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	plan := &recovery.Plan{Kind: dbpilot.RecoverySwitchover, Cluster: "c", OldPrimary: n1, Candidate: n2, Repoint: []dbpilot.InstanceKey{n3}}

	// A candidate that does not replicate is refused before anything changes
	// (stopped once it applied everything: with a transaction still to
	// apply it is refused as one that cannot catch up instead).
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "20")
	r.exec("node2", "STOP SLAVE SQL_THREAD")
	rec := &dbpilot.Recovery{ID: 1, Kind: dbpilot.RecoverySwitchover, OldPrimary: n1}
	err := r.executor(recovery.Options{}).Switchover(ctx, plan, rec)
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "nothing changed") || rec.Success {
		t.Fatalf("switchover to a stopped candidate: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	r.exec("node2", "START SLAVE SQL_THREAD")

	// A delayed candidate, with a transaction received that it holds back,
	// applies nothing: refused before anything changes.
	r.exec("node2", "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY=60", "START SLAVE")
	r.exec("node1", "INSERT INTO app.t VALUES (21)")
	r.waitReceived("node2", "node1")
	rec = &dbpilot.Recovery{ID: 2, Kind: dbpilot.RecoverySwitchover, OldPrimary: n1}
	err = r.executor(recovery.Options{KillGrace: 100 * time.Millisecond}).Switchover(ctx, plan, rec)
	if err == nil || rec.Success || dbpilot.ErrorCode(err) != dbpilot.ECONFLICT ||
		!strings.Contains(err.Error(), "candidate "+n2.String()+" is not ready, nothing changed: 1 transaction to apply and none applied in") ||
		!strings.Contains(err.Error(), "switchover.max_lag (10s)") {
		t.Fatalf("switchover to a delayed candidate: %v (code %s), %+v", err, dbpilot.ErrorCode(err), rec)
	}
	if got := r.value("node1", "SELECT @@read_only"); got != "0" {
		t.Errorf("node1 read_only after the refusal = %s", got)
	}
	if r.eventCount("read-only") != 0 || r.eventCount("rollback") != 0 || r.eventCount("failed") != 2 {
		t.Errorf("audit: %d read-only, %d rollback, %d failed", r.eventCount("read-only"), r.eventCount("rollback"), r.eventCount("failed"))
	}
	r.replicatesFrom("node2", "node1")
	r.exec("node1", "INSERT INTO app.t VALUES (22)")
	r.exec("node2", "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY=0", "START SLAVE")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "22")

	// A client connection on node1, killed by the switchover.
	client, err := mysql.Open(ctx, n1, r.d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := client.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	rec = &dbpilot.Recovery{ID: 3, Kind: dbpilot.RecoverySwitchover, OldPrimary: n1}
	start := time.Now()
	if err := r.executor(recovery.Options{SemiSync: true, KillGrace: 100 * time.Millisecond, RepointVerify: 3 * time.Second}).Switchover(ctx, plan, rec); err != nil {
		t.Fatalf("switchover: %v", err)
	}
	t.Logf("switchover took %s", time.Since(start))
	if !rec.Success || rec.NewPrimary != n2 || len(rec.LostReplicas) != 0 {
		t.Errorf("recovery = %+v", rec)
	}
	done := r.ev.named("done")
	window, _ := strconv.Atoi(done[len(done)-1].Detail["write_unavailable_ms"])
	t.Logf("write-unavailable window: %d ms (KillGrace 100 ms)", window)
	// node2 had a semi-sync replica before it took writes.
	for _, e := range r.ev.named("repoint") {
		if strings.Contains(e.Message, "no semi-sync replica connected") {
			t.Errorf("the candidate became writable without an acknowledger: %s", e.Message)
		}
	}
	if window < 100 || window > 5000 {
		t.Errorf("write-unavailable window %d ms", window)
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Error("client connection on node1 survived the switchover")
	}
	r.waitValue("node2", "SELECT @@read_only", "0")
	r.waitValue("node1", "SELECT @@read_only", "1")
	r.waitValue("node1", "SELECT @@rpl_semi_sync_master_enabled", "0")
	r.waitValue("node2", "SELECT @@rpl_semi_sync_master_enabled", "1")
	r.replicatesFrom("node1", "node2")
	r.replicatesFrom("node3", "node2")
	r.exec("node2", "INSERT INTO app.t VALUES (100)")
	for _, n := range []string{"node1", "node3"} {
		r.waitValue(n, "SELECT COUNT(*) FROM app.t", "23")
	}
	// node1 did not fetch its own transactions again.
	for _, n := range []string{"node1", "node2", "node3"} {
		inst, err := r.ctl.Inspect(ctx, r.key(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range inst.Channels {
			if c.LastSQLErrno != 0 || c.LastIOErrno != 0 {
				t.Errorf("%s channel error: %+v", n, c)
			}
		}
	}

	// Relocate node3 below node1 (a replica of node2 now).
	rec = &dbpilot.Recovery{ID: 4, Kind: dbpilot.RecoveryRelocate}
	if err := r.executor(recovery.Options{RepointVerify: 3 * time.Second}).Relocate(ctx, n3, n1, rec); err != nil || !rec.Success {
		t.Fatalf("relocate: %v %+v", err, rec)
	}
	r.replicatesFrom("node3", "node1")
	r.exec("node2", "INSERT INTO app.t VALUES (101)")
	r.waitValue("node3", "SELECT COUNT(*) FROM app.t", "24")
	// Relocating node2 (the primary, no channel) is refused.
	if err := r.executor(recovery.Options{}).Relocate(ctx, n2, n3, &dbpilot.Recovery{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("relocate of the primary: %v", err)
	}
}

// TestExecutorFailoverSemiSyncBothSides: every node has both semi-sync
// sides on (DBAs do, so that any can be promoted) and the candidate has a
// relay log to apply while its primary side is active (status ON) with no
// replica of its own: its first applied commit would wait
// rpl_semi_sync_master_timeout (10 s here, beyond the 5 s ApplyTimeout) for
// an acknowledgement nobody sends. The failover turns that side off first,
// applies, and the promotion turns it on again.
func TestExecutorFailoverSemiSyncBothSides(t *testing.T) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	for _, n := range []string{"node1", "node2", "node3"} {
		// A short timeout while the test sets up: the replicas' first
		// applied commits wait it once, then their primary side falls back.
		r.exec(n, "SET GLOBAL rpl_semi_sync_master_timeout=300", "SET GLOBAL rpl_semi_sync_master_enabled=ON", "SET GLOBAL rpl_semi_sync_slave_enabled=ON")
	}
	r.exec("node1", "SET GLOBAL rpl_semi_sync_master_timeout=10000")
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	r.waitValue("node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app'", "1")
	r.exec("node2", "STOP SLAVE SQL_THREAD")
	// node2's primary side active again, as on a server just demoted or
	// just configured: the state the failover meets.
	r.exec("node2", "SET GLOBAL rpl_semi_sync_master_enabled=OFF", "SET GLOBAL rpl_semi_sync_master_timeout=10000", "SET GLOBAL rpl_semi_sync_master_enabled=ON")
	if st := r.value("node2", "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='RPL_SEMI_SYNC_MASTER_STATUS'"); st != "ON" {
		t.Fatalf("node2 Rpl_semi_sync_master_status = %s, want ON", st)
	}
	for i := 1; i <= 20; i++ {
		r.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	pos := r.value("node1", "SELECT @@gtid_binlog_pos")
	deadline := time.Now().Add(10 * time.Second)
	for {
		inst, err := r.ctl.Inspect(context.Background(), r.key("node2"))
		if err == nil && len(inst.Channels) == 1 && inst.Channels[0].GTIDIOPos == pos {
			if !inst.SemiSync.PrimaryEnabled || inst.SemiSync.PrimaryClients != 0 {
				t.Fatalf("node2 semi-sync: %+v, want the primary side on without clients", inst.SemiSync)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node2 did not receive %s: %v", pos, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := sandbox.Kill(r.d, "node1"); err != nil {
		t.Fatal(err)
	}
	plan := &recovery.Plan{Kind: dbpilot.RecoveryFailoverManual, Cluster: "c", OldPrimary: r.key("node1"), Candidate: r.key("node2"),
		Repoint: []dbpilot.InstanceKey{r.key("node3")}}
	rec := &dbpilot.Recovery{ID: 1, Cluster: "c", Kind: plan.Kind, OldPrimary: plan.OldPrimary, Started: time.Now()}
	start := time.Now()
	err := r.executor(recovery.Options{SemiSync: true, ApplyTimeout: 5 * time.Second, RepointVerify: 3 * time.Second}).Failover(context.Background(), plan, rec)
	t.Logf("failover took %s (figure only)", time.Since(start))
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	quieted := 0
	for _, ev := range r.ev.named(dbpilot.AuditSemiSync) {
		if ev.Instance == r.key("node2") && strings.Contains(ev.Message, "turned off") {
			quieted++
		}
	}
	if quieted != 1 {
		t.Errorf("%d %q audit events turning the candidate's primary side off, want 1", quieted, dbpilot.AuditSemiSync)
	}
	if got := r.value("node2", "SELECT COUNT(*) FROM app.t"); got != "20" {
		t.Errorf("node2 has %s rows, want 20", got)
	}
	if got := r.value("node2", "SELECT @@rpl_semi_sync_master_enabled"); got != "1" {
		t.Errorf("node2 semi-sync primary side after the promotion = %s", got)
	}
	r.replicatesFrom("node3", "node2")
}
