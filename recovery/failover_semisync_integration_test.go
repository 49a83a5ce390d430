package recovery_test

import (
	"context"
	"database/sql"
	"fmt"
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

// TestFailoverSemiSyncOnEveryNode: a 3-node cluster whose servers all have
// both semi-sync sides on (set by SQL, as a DBA who wants any server
// promotable does), with a writer committing numbered rows, loses its
// primary to SIGKILL; the failover runs as serve runs it (PlanFailover on
// fresh inspections, then the executor). Every acknowledged write is on the
// new primary, whose writes are semi-sync acknowledged, and every server
// has both sides on again afterwards. With the cluster configured for
// semi-sync (semi_sync: true) and without (the servers' own setting is
// kept). The client-seen failover time is logged, not asserted:
// bench/semisync_failover.sh measures it.
func TestFailoverSemiSyncOnEveryNode(t *testing.T) {
	for _, configured := range []bool{true, false} {
		t.Run(fmt.Sprintf("semi_sync=%v", configured), func(t *testing.T) { semiSyncOnEveryNode(t, configured) })
	}
}

func semiSyncOnEveryNode(t *testing.T, configured bool) {
	r := newRig(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: configured})
	nodes := []string{"node1", "node2", "node3"}
	r.exec("node1", "CREATE DATABASE app", "CREATE TABLE app.w (id BIGINT PRIMARY KEY)")
	for _, h := range []string{"127.0.0.1", "localhost"} {
		r.exec("node1", fmt.Sprintf("CREATE USER 'app'@'%s' IDENTIFIED BY 'app-pw'", h), fmt.Sprintf("GRANT SELECT, INSERT ON app.* TO 'app'@'%s'", h))
	}
	// The replicas apply everything first: the first transaction applied
	// after their primary side is on starts their wait.
	pos := r.value("node1", "SELECT @@gtid_binlog_pos")
	for _, n := range nodes[1:] {
		r.waitValue(n, "SELECT @@gtid_slave_pos", pos)
	}
	for _, n := range nodes {
		r.exec(n, "SET GLOBAL rpl_semi_sync_master_enabled=ON", "SET GLOBAL rpl_semi_sync_slave_enabled=ON")
	}
	for _, n := range nodes[1:] {
		r.exec(n, "STOP SLAVE IO_THREAD", "START SLAVE IO_THREAD")
	}
	r.waitValue("node1", statusQuery("Rpl_semi_sync_master_clients"), "2")

	w := newAckWriter(t, r)
	ctx := context.Background()
	wctx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan struct{})
	go func() { w.run(wctx); close(writerDone) }()
	stop := func() { stopWriter(); <-writerDone }
	t.Cleanup(stop)
	testutil.WaitFor(t, 10*time.Second, "writes acknowledged by node1", func() (bool, string) {
		n := w.ackedOn(r.key("node1"))
		return n >= 50, strconv.Itoa(n)
	})
	// The replicas' primary sides are on with no semi-sync replica: their
	// appliers wait (rpl_semi_sync_master_timeout, 10 s) for an
	// acknowledgement nobody sends, and STOP SLAVE would wait with them.
	for _, n := range nodes[1:] {
		testutil.WaitFor(t, 10*time.Second, n+"'s applier waits for a semi-sync acknowledgement", func() (bool, string) {
			v, err := testutil.Value(r.d, n, statusQuery("Rpl_semi_sync_master_wait_sessions"))
			if err != nil {
				return false, err.Error()
			}
			waiting, _ := strconv.Atoi(v) // a session per parallel applier thread
			return waiting > 0, "Rpl_semi_sync_master_wait_sessions " + v
		})
	}

	if err := sandbox.Kill(r.d, "node1"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var insts []*dbpilot.Instance
	for _, n := range nodes[1:] {
		inst, err := r.ctl.Inspect(ctx, r.key(n))
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	plan, err := recovery.PlanFailover("c", r.key("node1"), insts, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &dbpilot.Recovery{ID: 1, Cluster: "c", Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: plan.OldPrimary, Started: killed}
	fctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := r.executor(recovery.Options{SemiSync: configured}).Failover(fctx, plan, rec); err != nil {
		t.Fatalf("failover: %v", err)
	}
	returned := time.Since(killed)
	newKey := rec.NewPrimary
	newP, other := "node2", "node3"
	if newKey == r.key("node3") {
		newP, other = "node3", "node2"
	}
	var first time.Time
	testutil.WaitFor(t, 30*time.Second, "a write acknowledged by the new primary", func() (bool, string) {
		first = w.firstAckOn(newKey)
		return !first.IsZero(), ""
	})
	t.Logf("kill to first acknowledged write on %s: %s; failover returned after %s", newKey, first.Sub(killed).Round(time.Millisecond), returned.Round(time.Millisecond))
	// Keep writing a little while the replica's primary side is restored.
	testutil.WaitFor(t, 10*time.Second, "writes acknowledged by the new primary", func() (bool, string) {
		n := w.ackedOn(newKey)
		return n >= 50, strconv.Itoa(n)
	})
	stop()

	// Every acknowledged write is on the new primary.
	acked := w.ids()
	have := map[int64]bool{}
	db, err := mysql.Open(ctx, newKey, r.d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(ctx, "SELECT id FROM app.w")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows.Values {
		id, _ := strconv.ParseInt(*row[0], 10, 64)
		have[id] = true
	}
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	if lost != 0 {
		t.Errorf("%d of %d acknowledged writes are missing on the new primary %s", lost, len(acked), newKey)
	}

	// The new primary's writes were acknowledged by a semi-sync replica.
	if got := r.value(newP, statusQuery("Rpl_semi_sync_master_yes_tx")); got == "0" || got == "" {
		t.Errorf("%s: Rpl_semi_sync_master_yes_tx %q: its writes were not semi-sync acknowledged", newP, got)
	}
	if got := r.value(newP, statusQuery("Rpl_semi_sync_master_status")); got != "ON" {
		t.Errorf("%s: Rpl_semi_sync_master_status %s", newP, got)
	}
	// Semi-sync as before: both sides on every surviving server.
	for _, n := range []string{newP, other} {
		for _, v := range []string{"rpl_semi_sync_master_enabled", "rpl_semi_sync_slave_enabled"} {
			if got := r.value(n, "SELECT @@"+v); got != "1" {
				t.Errorf("%s: %s = %s, want 1 as before the failover", n, v, got)
			}
		}
	}
	r.replicatesFrom(other, newP)
	var quieted, restored []string
	for _, ev := range r.ev.named(dbpilot.AuditSemiSync) {
		switch {
		case strings.Contains(ev.Message, "turned off"):
			quieted = append(quieted, ev.Instance.String())
		case strings.Contains(ev.Message, "on again"):
			restored = append(restored, ev.Instance.String())
		}
	}
	if len(quieted) != 2 || len(restored) != 1 || restored[0] != r.key(other).String() {
		t.Errorf("semi-sync primary sides turned off on %v (want the 2 replicas), back on at %v (want %s)", quieted, restored, r.key(other))
	}
	// The restored replica's applier now waits rpl_semi_sync_master_timeout
	// once; end that wait so that the sandbox stops at once.
	r.exec(other, "SET GLOBAL rpl_semi_sync_master_enabled=OFF")
}

// statusQuery reads one global status variable.
func statusQuery(name string) string {
	return "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='" + strings.ToUpper(name) + "'"
}

// ackWriter commits a new numbered row every 5 ms as an application account
// (read_only applies to it) to whichever node takes it, and records the
// writes acknowledged and by which node.
type ackWriter struct {
	t     *testing.T
	nodes []dbpilot.InstanceKey
	dbs   map[dbpilot.InstanceKey]*sql.DB

	mu    sync.Mutex
	next  int64
	acked []writeAck
}

type writeAck struct {
	id  int64
	at  time.Time
	key dbpilot.InstanceKey
}

func newAckWriter(t *testing.T, r *rig) *ackWriter {
	w := &ackWriter{t: t, dbs: map[dbpilot.InstanceKey]*sql.DB{}}
	for _, n := range r.d.Nodes {
		db, err := mysql.Open(context.Background(), n.Key(), mysql.Options{Credentials: mysql.Credentials{User: "app", Password: "app-pw"},
			ConnectTimeout: 200 * time.Millisecond, QueryTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		w.nodes = append(w.nodes, n.Key())
		w.dbs[n.Key()] = db.SQL()
	}
	return w
}

// run writes until ctx ends: to the node that took the last write, else to
// each node in turn.
func (w *ackWriter) run(ctx context.Context) {
	cur := w.nodes[0]
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if w.write(ctx, cur) {
			continue
		}
		for _, k := range w.nodes {
			if !k.Equal(cur) && w.write(ctx, k) {
				cur = k
				break
			}
		}
	}
}

// write commits one new row on key; it reports whether it was acknowledged.
func (w *ackWriter) write(ctx context.Context, key dbpilot.InstanceKey) bool {
	w.mu.Lock()
	w.next++
	id := w.next
	w.mu.Unlock()
	if _, err := w.dbs[key].ExecContext(ctx, "INSERT INTO app.w (id) VALUES (?)", id); err != nil {
		return false
	}
	w.mu.Lock()
	w.acked = append(w.acked, writeAck{id: id, at: time.Now(), key: key})
	w.mu.Unlock()
	return true
}

func (w *ackWriter) ackedOn(key dbpilot.InstanceKey) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		if a.key.Equal(key) {
			n++
		}
	}
	return n
}

// firstAckOn is when key first acknowledged a write (zero: not yet).
func (w *ackWriter) firstAckOn(key dbpilot.InstanceKey) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.acked {
		if a.key.Equal(key) {
			return a.at
		}
	}
	return time.Time{}
}

func (w *ackWriter) ids() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int64, len(w.acked))
	for i, a := range w.acked {
		out[i] = a.id
	}
	return out
}
