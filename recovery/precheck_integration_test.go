package recovery_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/recovery"
	"github.com/dbpilot/dbpilot/sandbox"
)

// session is one connection held open on a node (its locks stay held),
// closed when the test ends.
func (r *rig) session(node string) *sql.Conn {
	r.t.Helper()
	ctx := context.Background()
	db, err := mysql.Open(ctx, r.key(node), r.d.AdminOptions())
	if err != nil {
		r.t.Fatal(err)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		db.Close()
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close(); db.Close() })
	return conn
}

func mustExec(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// refusedUnchanged checks a switchover refused before any change: a
// one-line ECONFLICT naming the candidate, the setting and want; node1
// never read-only.
func (r *rig) refusedUnchanged(err error, rec *dbpilot.Recovery, want ...string) {
	r.t.Helper()
	msg := fmt.Sprint(err)
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || rec.Success || strings.Contains(msg, "\n") ||
		!strings.Contains(msg, "candidate "+r.key("node2").String()+" is not ready, nothing changed") || !strings.Contains(msg, "switchover.max_lag (10s)") {
		r.t.Fatalf("switchover: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			r.t.Errorf("refusal %q lacks %q", msg, w)
		}
	}
	if n := r.eventCount(dbpilot.AuditReadOnly); n != 0 {
		r.t.Errorf("%d read-only events: writes were stopped", n)
	}
	if got := r.value("node1", "SELECT @@read_only"); got != "0" {
		r.t.Errorf("node1 read_only = %s after the refusal", got)
	}
}

// TestSwitchoverPrechecks: a candidate far behind (SQL thread stopped with
// a backlog, then an applier stuck on a row lock held on it) and one whose
// applier waits for a table lock are refused before anything changes; a
// candidate blocked only once writes stopped makes the switchover roll
// back at switchover.drain_timeout, with one message naming it.
func TestSwitchoverPrechecks(t *testing.T) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	ctx := context.Background()
	n1, n2 := r.key("node1"), r.key("node2")
	plan := &recovery.Plan{Kind: dbpilot.RecoverySwitchover, Cluster: "c", OldPrimary: n1, Candidate: n2}
	opt := recovery.Options{KillGrace: 100 * time.Millisecond, RepointVerify: 3 * time.Second}
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "INSERT INTO app.t VALUES (0, 0)")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "1")

	// (a) Far behind: 300 transactions (3000 rows) received, SQL thread
	// stopped.
	r.exec("node2", "STOP SLAVE SQL_THREAD")
	stmts := []string{"UPDATE app.t SET v = v + 1 WHERE id = 0"}
	for i := 1; i < 300; i++ {
		var rows []string
		for j := 0; j < 10; j++ {
			rows = append(rows, fmt.Sprintf("(%d, %d)", i*10+j, i))
		}
		stmts = append(stmts, "INSERT INTO app.t VALUES "+strings.Join(rows, ", "))
	}
	r.exec("node1", stmts...)
	r.waitReceived("node2", "node1")
	rec := &dbpilot.Recovery{ID: 1}
	err := r.executor(opt).Switchover(ctx, plan, rec)
	r.refusedUnchanged(err, rec, "300 transactions received but not applied and its SQL thread is stopped")

	// Still far behind, its applier now running but stuck behind a row
	// lock that a session on node2 holds on the first row it updates.
	lock := r.session("node2")
	mustExec(t, lock, "BEGIN", "SELECT * FROM app.t WHERE id = 0 FOR UPDATE")
	r.exec("node2", "START SLAVE SQL_THREAD")
	testutil.WaitFor(t, 10*time.Second, "node2's applier waits for the row lock", func() (bool, string) {
		th, err := r.ctl.ApplierThreads(ctx, n2)
		for _, x := range th {
			if x.Wait == "an InnoDB row lock" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v %v", th, err)
	})
	rec = &dbpilot.Recovery{ID: 2}
	err = r.executor(opt).Switchover(ctx, plan, rec)
	r.refusedUnchanged(err, rec, "300 transactions to apply and its applier waits for a lock (an InnoDB row lock)")
	mustExec(t, lock, "ROLLBACK")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "2991")

	// (b) A blocked applier: a session on node2 holds a table lock, the
	// primary writes to the table.
	mustExec(t, lock, "LOCK TABLES app.t READ")
	r.exec("node1", "INSERT INTO app.t VALUES (5001, 1)", "INSERT INTO app.t VALUES (5002, 1)", "INSERT INTO app.t VALUES (5003, 1)")
	r.waitReceived("node2", "node1")
	rec = &dbpilot.Recovery{ID: 3}
	err = r.executor(opt).Switchover(ctx, plan, rec)
	r.refusedUnchanged(err, rec, "3 transactions to apply and its applier waits for a lock (Waiting for table metadata lock)")
	mustExec(t, lock, "UNLOCK TABLES")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "2994")

	// (c) Blocked once writes stopped: the precheck sees nothing to apply
	// while node2 already holds the table lock; a privileged writer on
	// node1 commits one more row right after read_only, which node2's
	// applier cannot apply.
	mustExec(t, lock, "LOCK TABLES app.t READ")
	var readOnlyAt time.Time
	r.ev.on = func(ev dbpilot.AuditEvent) {
		if ev.Event == dbpilot.AuditReadOnly && readOnlyAt.IsZero() {
			readOnlyAt = time.Now()
			r.exec("node1", "INSERT INTO app.t VALUES (6001, 1)") // READ_ONLY ADMIN: past read_only
		}
	}
	const drain = 2 * time.Second
	copt := opt
	copt.DrainTimeout = drain
	copt.ApplyTimeout = 30 * time.Second // a failover's bound: not this one's
	rec = &dbpilot.Recovery{ID: 4}
	err = r.executor(copt).Switchover(ctx, plan, rec)
	back := time.Now()
	r.ev.on = nil
	msg := fmt.Sprint(err)
	t.Logf("writes refused for %s (figure only)", back.Sub(readOnlyAt).Round(time.Millisecond))
	if readOnlyAt.IsZero() || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || rec.Success ||
		!strings.HasPrefix(msg, "switchover: "+n2.String()+" had not applied "+n1.String()+"'s last transactions when switchover.drain_timeout (2s) ran out with 1 transaction left to apply") ||
		!strings.HasSuffix(msg, "; rolled back: "+n1.String()+" is writable again, nothing else changed") || strings.Contains(msg, "30s") {
		t.Fatalf("switchover blocked during the drain: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	if !strings.Contains(msg, "(its applier waits for a lock: Waiting for table metadata lock)") {
		t.Errorf("the message does not say what node2 waits for: %s", msg)
	}
	if back.Sub(readOnlyAt) > drain+3*time.Second {
		t.Errorf("writes refused for %s with a drain timeout of %s", back.Sub(readOnlyAt), drain)
	}
	rb := r.ev.named(dbpilot.AuditRollback)
	failed := r.ev.named(dbpilot.AuditFailed)
	if len(rb) != 1 || rb[0].Message != msg || failed[len(failed)-1].Message != msg || rec.Error != msg {
		t.Errorf("audit: rollback %+v, last failed %+v", rb, failed[len(failed)-1])
	} else if ms, _ := strconv.Atoi(rb[0].Detail["write_unavailable_ms"]); ms > int((drain + 3*time.Second).Milliseconds()) {
		t.Errorf("audited write window %d ms", ms)
	}
	if got := r.value("node1", "SELECT @@read_only"); got != "0" {
		t.Errorf("node1 read_only = %s after the rollback", got)
	}
	r.exec("node1", "INSERT INTO app.t VALUES (6002, 1)") // an ordinary write again
	if got := r.value("node2", "SELECT @@read_only"); got != "1" {
		t.Errorf("node2 read_only = %s: it was changed", got)
	}
	r.replicatesFrom("node2", "node1")
	mustExec(t, lock, "UNLOCK TABLES")
	r.waitValue("node2", "SELECT COUNT(*) FROM app.t", "2996")
}
