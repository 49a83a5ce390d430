package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// failOverAndReturn writes rows 1..n on node1, kills it, waits for the
// automatic failover and starts node1 again; it returns the new primary
// and the other replica (node names).
func failOverAndReturn(t *testing.T, f *fixture, n int) (newP, other string) {
	t.Helper()
	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	for i := 1; i <= n; i++ {
		f.exec("node1", fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	for _, r := range []string{"node2", "node3"} {
		f.waitValue(r, "SELECT COUNT(*) FROM app.t", fmt.Sprint(n), 10*time.Second)
	}
	if err := sandbox.Kill(f.d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success {
		t.Fatalf("failover: %+v\n%s", rec, f.auditText())
	}
	newP, other = "node2", "node3"
	if rec.NewPrimary == f.key("node3") {
		newP, other = "node3", "node2"
	}
	if err := sandbox.Start(context.Background(), f.d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	f.waitValue("node1", "SELECT @@read_only", "1", 15*time.Second)
	return newP, other
}

// waitFenced waits until the status shows node fenced (answering,
// read_only, compared with the primary) with errant GTIDs errant, and its
// FencedOldPrimary problem of severity sev.
func (f *fixture) waitFenced(node, errant string, sev dbpilot.Severity) *dbpilot.ClusterStatus {
	f.t.Helper()
	k := f.key(node)
	var st *dbpilot.ClusterStatus
	testutil.WaitFor(f.t, 15*time.Second, node+" fenced with errant "+errant, func() (bool, string) {
		st = f.status()
		i := slices.IndexFunc(st.Fenced, func(x dbpilot.FencedInstance) bool { return x.Key == k })
		p := slices.IndexFunc(st.Problems, func(p dbpilot.Problem) bool {
			return p.Code == dbpilot.ProblemFencedOldPrimary && p.Instance == k && p.Severity == sev
		})
		ok := i >= 0 && st.Fenced[i].Reachable && st.Fenced[i].ReadOnly && st.Fenced[i].Compared && st.Fenced[i].Errant == errant &&
			p >= 0 && st.Problems[p].Detail["errant"] == errant
		return ok, fmt.Sprintf("fenced %+v, problems %+v", st.Fenced, st.Problems)
	})
	if !slices.ContainsFunc(st.Detached, func(i *dbpilot.Instance) bool { return i.Key == k }) {
		f.t.Errorf("%s fenced but not among the detached: %v", node, st.Detached)
	}
	return st
}

// waitRejoined waits until node is a member replicating from source,
// no longer fenced, with read_only on, and a new write on source reaches it.
func (f *fixture) waitRejoined(node, source string) {
	f.t.Helper()
	f.assertFollows(node, source)
	if ro := f.value(node, "SELECT @@read_only"); ro != "1" {
		f.t.Errorf("%s rejoined with read_only=%s", node, ro)
	}
	f.exec(source, "INSERT INTO app.t VALUES (1000)")
	f.waitValue(node, "SELECT COUNT(*) FROM app.t WHERE id = 1000", "1", 10*time.Second)
	k := f.key(node)
	testutil.WaitFor(f.t, 10*time.Second, node+" a member, not fenced", func() (bool, string) {
		st := f.status()
		member := slices.ContainsFunc(st.Instances, func(i *dbpilot.Instance) bool { return i.Key == k })
		fenced := slices.ContainsFunc(st.Fenced, func(x dbpilot.FencedInstance) bool { return x.Key == k }) ||
			slices.ContainsFunc(st.Problems, func(p dbpilot.Problem) bool { return p.Code == dbpilot.ProblemFencedOldPrimary })
		return member && !fenced, fmt.Sprintf("fenced %+v, problems %+v", st.Fenced, st.Problems)
	})
}

// TestRejoinOldPrimary: after a failover the old primary comes back with
// no errant transactions: the status shows it fenced (read_only, detached)
// with an empty errant set; relocate points at rejoin; rejoin (through the
// service) attaches it below the new primary, semi-sync replica side on,
// read_only kept, and it replicates new writes.
func TestRejoinOldPrimary(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	ctx := context.Background()
	newP, _ := failOverAndReturn(t, f, 10)
	st := f.waitFenced("node1", "", dbpilot.SeverityWarning)
	if fi := st.Fenced[slices.IndexFunc(st.Fenced, func(x dbpilot.FencedInstance) bool { return x.Key == f.key("node1") })]; fi.Primary != f.key(newP) || fi.RecoveryID == 0 || fi.Since.IsZero() {
		t.Errorf("fenced %+v: want compared with %s and the failover that fenced it", fi, newP)
	}

	_, err := f.dm.Relocate(ctx, f.key("node1"), dbpilot.OperationOptions{To: f.key(newP)})
	if err == nil || !strings.Contains(err.Error(), "dbpilot rejoin "+f.key("node1").String()) || strings.Contains(err.Error(), "not part of any watched cluster") {
		t.Errorf("relocate of the fenced old primary: %v", err)
	}
	rec, err := f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{DryRun: true})
	if err != nil || !strings.Contains(rec.Plan, "attach "+f.key("node1").String()) || !strings.Contains(rec.Plan, "semi-sync") {
		t.Fatalf("dry run: %v %+v", err, rec)
	}
	if rows, _ := sandbox.Exec(ctx, d, "node1", "SHOW SLAVE STATUS"); len(rows.Values) != 0 {
		t.Fatal("the dry run attached it")
	}
	rec, err = f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{})
	if err != nil || !rec.Success || rec.Kind != dbpilot.RecoveryRejoin || rec.NewPrimary != f.key(newP) {
		t.Fatalf("rejoin: %v %+v\n%s", err, rec, f.auditText())
	}
	f.waitRejoined("node1", newP)
	f.waitValue("node1", "SELECT @@rpl_semi_sync_slave_enabled", "1", 30*time.Second)
	if a := f.auditText(); !strings.Contains(a, "rejoin "+f.key("node1").String()+": done") || !strings.Contains(a, "rejoined the cluster") {
		t.Errorf("audit lacks the rejoin:\n%s", a)
	}
	// A second rejoin has nothing to do.
	if _, err := f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{}); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "already in cluster") {
		t.Errorf("rejoin of a member: %v", err)
	}
	// The rejoin neither blocks nor lifts the failover's anti-flapping block.
	if f.status().BlockedUntil.IsZero() {
		t.Error("the rejoin lifted the anti-flapping block of the failover")
	}
}

// TestRejoinErrantReclone: the old primary returns, is fenced, and gets an
// errant transaction (a SUPER user writes through read_only) and a
// database the cluster lacks. The status shows the errant GTID (critical),
// rejoin refuses naming it, rejoin --reclone re-provisions it from a
// replica (the audit names the discarded GTID and the dropped database)
// and attaches it below the new primary.
func TestRejoinErrantReclone(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	ctx := context.Background()
	newP, other := failOverAndReturn(t, f, 10)
	f.waitFenced("node1", "", dbpilot.SeverityWarning)
	f.exec("node1", "INSERT INTO app.t VALUES (999)")
	f.exec("node1", "CREATE DATABASE errant_db")
	errant := f.value("node1", "SELECT @@gtid_binlog_pos")
	f.waitFenced("node1", errant, dbpilot.SeverityCritical)

	_, err := f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{})
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), errant) || !strings.Contains(err.Error(), "--reclone") {
		t.Fatalf("rejoin with an errant transaction: %v", err)
	}
	if rows, _ := sandbox.Exec(ctx, d, "node1", "SHOW SLAVE STATUS"); len(rows.Values) != 0 {
		t.Fatal("the refused rejoin attached it")
	}
	rec, err := f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{DryRun: true, Reclone: true})
	if err != nil || !strings.Contains(rec.Plan, "discard its errant transactions "+errant) || !strings.Contains(rec.Plan, f.key(other).String()) {
		t.Fatalf("dry run --reclone: %v %+v", err, rec)
	}
	rec, err = f.dm.Rejoin(ctx, d.Name, f.key("node1"), dbpilot.OperationOptions{Reclone: true})
	if err != nil || !rec.Success {
		t.Fatalf("rejoin --reclone: %v %+v\n%s", err, rec, f.auditText())
	}
	evs, _ := f.store.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: d.Name, RecoveryID: rec.ID})
	i := slices.IndexFunc(evs, func(e dbpilot.AuditEvent) bool { return e.Event == dbpilot.AuditReclone })
	if i < 0 || evs[i].Detail["errant"] != errant || !strings.Contains(evs[i].Message, errant) {
		t.Errorf("no audit event names the discarded errant GTIDs %s:\n%s", errant, f.auditText())
	}
	if !slices.ContainsFunc(evs, func(e dbpilot.AuditEvent) bool {
		return e.Event == dbpilot.AuditReclone && e.Detail["dropped_databases"] == "errant_db"
	}) {
		t.Errorf("the dropped database is not in the audit:\n%s", f.auditText())
	}
	f.waitRejoined("node1", newP)
	if n := f.value("node1", "SELECT COUNT(*) FROM app.t WHERE id = 999"); n != "0" {
		t.Error("the errant row survived the reclone")
	}
	if n := f.value("node1", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'errant_db'"); n != "0" {
		t.Error("the errant database survived the reclone")
	}
	if got, want := f.value("node1", "SELECT COUNT(*) FROM app.t"), f.value(newP, "SELECT COUNT(*) FROM app.t"); got != want {
		t.Errorf("node1 has %s rows, the primary %s", got, want)
	}
}

// TestAutoRejoin: with rejoin: true, the old primary that returns with no
// errant transactions is attached by serve itself, recorded as a recovery
// of kind rejoin, and no longer fenced.
func TestAutoRejoin(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f := startDaemon(t, d, func(c *daemon.Config) { c.Clusters[0].Rejoin = true }, daemon.Wiring{})
	newP, _ := failOverAndReturn(t, f, 5)
	rec := f.waitRecovery(2, 20*time.Second)
	if !rec.Success || rec.Kind != dbpilot.RecoveryRejoin || rec.OldPrimary != f.key("node1") || rec.NewPrimary != f.key(newP) {
		t.Fatalf("automatic rejoin: %+v\n%s", rec, f.auditText())
	}
	f.waitRejoined("node1", newP)
}
