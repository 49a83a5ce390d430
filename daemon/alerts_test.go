package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/alert"
	"github.com/dbpilot/dbpilot/metrics"
)

// notifications records what the evaluator sends to its notifiers (the
// log notifier's lines).
type notifications struct{ lines []string }

func (n *notifications) Enabled(context.Context, slog.Level) bool { return true }
func (n *notifications) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "alert" {
		return nil
	}
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(a.Key + "=" + a.Value.String() + " ")
		return true
	})
	n.lines = append(n.lines, b.String())
	return nil
}
func (n *notifications) WithAttrs([]slog.Attr) slog.Handler { return n }
func (n *notifications) WithGroup(string) slog.Handler      { return n }

// TestAlertsAfterSlowFailover evaluates the built-in rules, with serve's
// suppression, over the series serve writes around a slow failover: node1
// (the primary) dies; node2, the candidate, and node3 lose their IO thread
// and their heartbeat lag grows for a minute while the recovery runs
// (their alerts pass their `for`, suppressed); node2 is promoted, node3
// repointed and caught up, node4 stays broken. When the recovery ends,
// node2's collectors still write under the replica role until the next
// observation retargets them (its heartbeat lag is read against the dead
// primary's row; its channel comes from the last observation, taken before
// the promotion): those alerts must not fire on the new primary. node4's
// must: the suppression ends with the recovery for real replicas.
func TestAlertsAfterSlowFailover(t *testing.T) {
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	key := func(n int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: 23000 + n} }

	rec := &notifications{}
	cs := &clusterState{cfg: &ClusterConfig{Name: "main"}, primary: key(1)}
	cs.status.State = dbpilot.ClusterOK
	d := &Daemon{cfg: &Config{}, log: slog.New(rec), metrics: st, clusters: map[string]*clusterState{"main": cs},
		mon: &monitor{runners: map[dbpilot.InstanceKey]*runnerEntry{}}}
	for n := 2; n <= 4; n++ {
		d.mon.runners[key(n)] = &runnerEntry{cluster: "main"}
	}
	e := d.newEvaluator(alert.DefaultRules())

	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// write writes what node n's replication and heartbeat collectors
	// write at second s: io < 0 leaves the channel out (no replication).
	write := func(n int, s float64, role string, io, lag float64) {
		t.Helper()
		var repl []dbpilot.Sample
		if io >= 0 {
			repl = []dbpilot.Sample{
				{Name: "mysql_slave_status_slave_io_running", Type: dbpilot.Gauge, Value: io},
				{Name: "mysql_slave_status_slave_sql_running", Type: dbpilot.Gauge, Value: 1},
			}
		}
		hb := []dbpilot.Sample{{Name: "dbpilot_heartbeat_lag_seconds", Type: dbpilot.Gauge, Value: lag}}
		for _, b := range []dbpilot.Batch{
			{Instance: key(n), Cluster: "main", Role: role, Collector: "replication", Time: at(s), Samples: repl},
			{Instance: key(n), Cluster: "main", Role: role, Collector: "heartbeat", Time: at(s), Samples: hb},
		} {
			if err := st.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	eval := func(s float64) {
		t.Helper()
		if err := e.Evaluate(ctx, at(s)); err != nil {
			t.Fatal(err)
		}
	}
	// Before: healthy replicas.
	for s := 0; s < 30; s++ {
		for n := 2; n <= 4; n++ {
			write(n, float64(s), "replica", 1, 0.2)
		}
		eval(float64(s) + 0.5)
	}
	// node1 dies at 30; the recovery runs from 31 to 100 and repoints
	// node3 at 95.
	for s := 30; s <= 100; s++ {
		if s == 31 {
			cs.mu.Lock()
			cs.status.State = dbpilot.ClusterRecovering
			cs.mu.Unlock()
		}
		lag := float64(s - 30)
		write(2, float64(s), "replica", 0, lag)
		if s >= 95 {
			write(3, float64(s), "replica", 1, 0.3)
		} else {
			write(3, float64(s), "replica", 0, lag)
		}
		write(4, float64(s), "replica", 0, lag)
		eval(float64(s) + 0.5)
	}
	if len(rec.lines) != 0 {
		t.Fatalf("notified while the recovery ran: %q", rec.lines)
	}
	// The recovery ends: node2 is the primary; the next observation
	// retargets its collectors a moment later (second 102).
	cs.mu.Lock()
	cs.primary, cs.status.State = key(2), dbpilot.ClusterOK
	cs.mu.Unlock()
	write(2, 101, "replica", 0, 71)
	write(3, 101, "replica", 1, 0.2)
	write(4, 101, "replica", 0, 71)
	eval(101.5)
	for _, a := range e.Active() {
		if a.Labels["instance"] == key(2).String() && a.State == dbpilot.AlertFiring && a.Suppressed == "" {
			t.Errorf("the new primary %s: %s fires (%s)", key(2), a.Rule, a.Summary)
		}
	}
	write(2, 102, "primary", -1, 0.1)
	write(3, 102, "replica", 1, 0.2)
	write(4, 102, "replica", 0, 72)
	eval(102.5)
	var node4 []string
	for _, l := range rec.lines {
		switch {
		case strings.Contains(l, "instance="+key(4).String()) && strings.Contains(l, "state=firing"):
			node4 = append(node4, l)
		default:
			t.Errorf("notified %q", l)
		}
	}
	if len(node4) != 2 || !strings.Contains(strings.Join(node4, "\n"), "alert=ReplicationIOStopped") || !strings.Contains(strings.Join(node4, "\n"), "alert=ReplicationLagHigh") {
		t.Errorf("node4, still broken after the recovery: notified %q, want ReplicationIOStopped and ReplicationLagHigh firing", node4)
	}
	for _, a := range e.Active() {
		if a.Labels["instance"] != key(4).String() {
			t.Errorf("still active after the new primary's series moved to its role: %s on %s (%s)", a.Rule, a.Labels["instance"], a.State)
		}
	}
}
