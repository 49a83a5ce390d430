package daemon_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/loadgen"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestCatchUpPrediction is issue 28's test of the catch-up prediction: a
// replica's SQL thread is stopped for 70 s while bench writes at a steady
// open-loop 20 transactions/s (oltp_write_only), then started again; the
// first prediction serve makes after the start (once it has measured
// applyrate.MinApplySpan of apply, about 6 s after it) is within 25% of
// the time the replica actually took to catch up (from that prediction
// until its gtid_slave_pos reached what the primary had committed).
//
// The replica applies slower than a sandbox replica would: triggers on
// the replica only (slave_run_triggers_for_rbr=YES, created with
// sql_log_bin=0) sleep 2 ms per row applied. Unthrottled, a sandbox replica
// applies the backlog in a second or two on an idle machine and in an
// unknown time on a loaded one; throttled, it catches up at a steady
// ~65-105 tx/s against 20, in about 17-30 s: long enough for the
// prediction to mean something. The sleeps are most of the apply time,
// so that the replica's pace depends little on how loaded the host is;
// and the primary commits a fifth to a third of what the replica
// applies, so that an error in the apply rate is magnified little in the
// prediction (backlog / (apply − commit)): by 1.25-1.45. (At 25 tx/s
// against a replica slowed to 65 tx/s by a loaded host, a first
// prediction from the replica's slower first seconds was 12% long.) The replica applies serially (slave_parallel_threads=0):
// with the sandbox's 2 optimistic workers the sleeps overlap by chance and
// the apply speed varied by a third from run to run.
func TestCatchUpPrediction(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2,
		Options: []string{"slave_run_triggers_for_rbr=YES", "slave_parallel_threads=0"}})
	f, ms := startMonitoring(t, d, "")
	ctx := context.Background()
	primary, replica := f.key("node1"), f.key("node2")

	// bench's data, on the primary, replicated.
	f.exec("node1", "CREATE DATABASE bench")
	opts := d.AdminOptions()
	opts.Database = "bench"
	opts.MaxConns = 4
	opts.QueryTimeout = 60 * time.Second
	pdb, err := mysql.Open(ctx, primary, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	w, err := loadgen.NewWorkload("oltp_write_only")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(ctx, pdb.SQL(), loadgen.PrepareOptions{Tables: 1, TableSize: 10000}); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp := func(timeout time.Duration) time.Time {
		var at time.Time
		testutil.WaitFor(t, timeout, "replica caught up", func() (bool, string) {
			p := seqOf(t, f, "node1", "@@global.gtid_binlog_pos")
			r := seqOf(t, f, "node2", "@@global.gtid_slave_pos")
			at = time.Now()
			return r >= p, fmt.Sprintf("primary %d, replica %d", p, r)
		})
		return at
	}
	waitCaughtUp(60 * time.Second)

	// The throttle, on the replica only.
	ropts := d.AdminOptions()
	ropts.MaxConns = 1
	rdb, err := mysql.Open(ctx, replica, ropts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	stmts := []string{"SET SESSION sql_log_bin = 0"}
	for _, ev := range []string{"INSERT", "UPDATE", "DELETE"} {
		stmts = append(stmts, fmt.Sprintf("CREATE TRIGGER bench.slow_%s AFTER %s ON bench.sbtest1 FOR EACH ROW SET @dbpilot_slow = SLEEP(0.002)", strings.ToLower(ev), ev))
	}
	if err := rdb.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}

	// bench writes, open loop, until the test ends.
	rate, err := loadgen.ParseRate("20")
	if err != nil {
		t.Fatal(err)
	}
	wopts := opts
	wopts.BlockingIO = true
	lctx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan error, 1)
	go func() {
		_, err := loadgen.Run(lctx, loadgen.RunOptions{Workload: w, Rate: &rate, MaxConcurrency: 16, Seed: 1,
			Connect: func(ctx context.Context) (loadgen.Conn, error) { return mysql.DialWire(ctx, primary, wopts) }})
		loadDone <- err
	}()
	t.Cleanup(func() { stopLoad(); <-loadDone })

	// Caught up under the load: serve says so.
	time.Sleep(3 * time.Second)
	testutil.WaitFor(t, 15*time.Second, "replica caught up under load", func() (bool, string) {
		a := applyOf(f.status(), replica)
		return a != nil && a.State == dbpilot.CatchUpCaughtUp && a.CommitRate > 10, fmt.Sprintf("%+v", a)
	})

	f.exec("node2", "STOP SLAVE SQL_THREAD")
	testutil.WaitFor(t, 10*time.Second, "stopped and falling behind", func() (bool, string) {
		a := applyOf(f.status(), replica)
		return a != nil && a.State == dbpilot.CatchUpStopped && a.FallingBehindBy > 10, fmt.Sprintf("%+v", a)
	})
	time.Sleep(70 * time.Second)
	f.exec("node2", "START SLAVE SQL_THREAD")
	started := time.Now()

	// The first prediction after the start.
	var pred dbpilot.ReplicaApply
	var predAt time.Time
	testutil.WaitFor(t, 20*time.Second, "a catch-up prediction", func() (bool, string) {
		st := f.status()
		a := applyOf(st, replica)
		if a == nil {
			return false, "no apply figures"
		}
		if a.State == dbpilot.CatchUpFalling || a.State == dbpilot.CatchUpCaughtUp {
			t.Fatalf("after the start: %+v (no catch-up to predict: the throttle did not hold)", a)
		}
		if a.State != dbpilot.CatchUpCatching {
			return false, fmt.Sprintf("%+v", a)
		}
		pred, predAt = *a, st.ObservedAt
		return true, ""
	})
	// What serve saw during the catch-up, for the log.
	var seen []string
	var advice string // the first SmallCommitGroups seen
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		var last time.Time
		for time.Since(predAt) < 100*time.Second {
			st, err := f.dm.ClusterStatus(ctx, d.Name)
			if err != nil {
				return
			}
			for _, p := range st.Problems {
				if p.Code == dbpilot.ProblemSmallCommitGroups && advice == "" {
					advice = p.Message
				}
			}
			if a := applyOf(st, replica); a != nil && st.ObservedAt.After(last) {
				last = st.ObservedAt
				seen = append(seen, fmt.Sprintf("%.1fs %s backlog %d apply %.0f/%.0fs commit %.0f catch-up %.1f",
					st.ObservedAt.Sub(started).Seconds(), a.State, a.BacklogTransactions, a.ApplyRate, a.RateSeconds, a.CommitRate, a.CatchUpSeconds))
				if a.State == dbpilot.CatchUpCaughtUp {
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	caught := waitCaughtUp(120 * time.Second)
	<-watchDone
	t.Logf("serve's observations after the start:\n  %s", strings.Join(seen, "\n  "))
	// Groups of one commit while the replica lags: the advice, with the
	// primary's measured commit rate behind it.
	t.Logf("advice: %s", advice)
	if !strings.Contains(advice, replica.String()) || !strings.Contains(advice, "binlog_commit_wait_count=") {
		t.Errorf("no SmallCommitGroups advice naming %s while it caught up: %q", replica, advice)
	}
	actual := caught.Sub(predAt).Seconds()
	predicted := pred.CatchUpSeconds
	t.Logf("prediction %.1f s after the start: backlog %d tx (%d bytes), apply %.1f tx/s over %.1f s, commit %.1f tx/s: catches up in %.1f s; actual %.1f s (%+.0f%%)",
		predAt.Sub(started).Seconds(), pred.BacklogTransactions, pred.BacklogBytes, pred.ApplyRate, pred.RateSeconds, pred.CommitRate, predicted, actual, 100*(predicted-actual)/actual)
	if actual < 5 {
		t.Fatalf("caught up in %.1f s: too fast for the prediction to be measured (the throttle did not hold)", actual)
	}
	if math.Abs(predicted-actual) > 0.25*actual {
		t.Errorf("predicted %.1f s, caught up in %.1f s: more than 25%% off", predicted, actual)
	}
	if pred.BacklogBytes <= 0 {
		t.Errorf("backlog of %d relay log bytes while %d transactions behind", pred.BacklogBytes, pred.BacklogTransactions)
	}

	// serve's metrics carry it.
	testutil.WaitFor(t, 10*time.Second, "apply series", func() (bool, string) {
		s, err := ms.QueryInstant(ctx, `dbpilot_replica_apply_rate{instance="`+replica.String()+`"}`, time.Now())
		return err == nil && len(s) == 1 && s[0].Points[0].V > 0, fmt.Sprint(s, err)
	})
	testutil.WaitFor(t, 10*time.Second, "caught up again", func() (bool, string) {
		a := applyOf(f.status(), replica)
		return a != nil && a.State == dbpilot.CatchUpCaughtUp, fmt.Sprintf("%+v", a)
	})

	// The primary's group commit, from its status counters: its commit
	// rate that of the GTIDs, each group at least one commit.
	testutil.WaitFor(t, 15*time.Second, "group commit figures", func() (bool, string) {
		st := f.status()
		gc, a := st.GroupCommit, applyOf(st, replica)
		return gc != nil && a != nil && gc.Key.Equal(primary) && math.Abs(gc.CommitRate-a.CommitRate) < 0.2*a.CommitRate && gc.CommitsPerGroup >= 1 &&
			gc.WaitCount == 0 && gc.WaitUsec > 0, fmt.Sprintf("%+v, GTIDs: %.1f/s", gc, a.CommitRate)
	})
	gc := f.status().GroupCommit
	t.Logf("group commit: %.1f commits/s in %.1f groups/s (%.2f a group); triggers/s count %.2f timeout %.2f lock wait %.2f; binlog_commit_wait_count %d, _usec %d",
		gc.CommitRate, gc.GroupRate, gc.CommitsPerGroup, gc.TriggerCountRate, gc.TriggerTimeoutRate, gc.TriggerLockWaitRate, gc.WaitCount, gc.WaitUsec)
}

// applyOf returns the apply figures of k in st, nil when absent.
func applyOf(st *dbpilot.ClusterStatus, k dbpilot.InstanceKey) *dbpilot.ReplicaApply {
	for i := range st.ReplicaApply {
		if st.ReplicaApply[i].Key.Equal(k) {
			return &st.ReplicaApply[i]
		}
	}
	return nil
}

// seqOf reads a MariaDB GTID position variable of node and returns its
// seq_no in domain 0.
func seqOf(t *testing.T, f *fixture, node, variable string) uint64 {
	t.Helper()
	v := f.value(node, "SELECT "+variable)
	for _, g := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(g), "-")
		if len(parts) == 3 && parts[0] == "0" {
			n, err := strconv.ParseUint(parts[2], 10, 64)
			if err != nil {
				t.Fatalf("%s on %s: %q", variable, node, v)
			}
			return n
		}
	}
	return 0
}
