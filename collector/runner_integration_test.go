package collector

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestIntegrationRunnerReconnect kills the server under a Runner and starts
// it again: mysql_up goes to 0 while it is down, connection attempts back
// off, and the Runner reconnects by itself with its session settings.
func TestIntegrationRunnerReconnect(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	type session struct{ lockWait, innodbLockWait, maxStatement string }
	seen := make(chan session, 100)
	check := runnerFunc{"session", time.Second, func(ctx context.Context, q Querier, _ Target) ([]dbpilot.Sample, error) {
		r, err := q.Query(ctx, "SELECT @@session.lock_wait_timeout, @@session.innodb_lock_wait_timeout, @@session.max_statement_time")
		if err != nil {
			return nil, err
		}
		select {
		case seen <- session{*r.Values[0][0], *r.Values[0][1], *r.Values[0][2]}:
		default:
		}
		return nil, nil
	}}
	sink := &runnerSink{}
	cfg := Config{Interval: map[string]time.Duration{"global_status": 200 * time.Millisecond, "session": 500 * time.Millisecond}}
	r := NewRunner(Target{Key: n.Key(), Role: "standalone"}, d.AdminOptions(), []Collector{NewGlobalStatus(), check}, cfg, sink,
		dbpilot.Batch{Cluster: d.Name}, nil)
	r.Start(context.Background())
	defer r.Stop()

	lastUp := func() float64 {
		bs := sink.of("global_status")
		if len(bs) == 0 {
			return -1
		}
		s, ok := runnerSample(bs[len(bs)-1], MetricUp)
		if !ok {
			return -1
		}
		return s.Value
	}
	runnerWait(t, 20*time.Second, "mysql_up 1", func() bool { return lastUp() == 1 })
	select {
	case s := <-seen:
		if s.lockWait != "1" || s.innodbLockWait != "1" {
			t.Errorf("session lock waits = %+v", s)
		}
		if v, err := strconv.ParseFloat(s.maxStatement, 64); err != nil || v != 0.4 {
			t.Errorf("session max_statement_time = %q, want 0.4 (80%% of 500ms)", s.maxStatement)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session collector never ran")
	}

	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	dialsAtKill := r.pool.dialCount()
	runnerWait(t, 20*time.Second, "mysql_up 0", func() bool { return lastUp() == 0 })
	// Down for at least 10 one-second batches: they all report mysql_up 0,
	// and the connection is retried with backoff, not once a batch.
	downBatches := 0
	testutil.WaitFor(t, 20*time.Second, "10 batches with mysql_up 0", func() (bool, string) {
		downBatches = 0
		for _, b := range sink.of("global_status") {
			if s, _ := runnerSample(b, MetricUp); s.Value == 0 {
				downBatches++
			}
		}
		return downBatches >= 10, fmt.Sprint(downBatches)
	})
	dials := r.pool.dialCount() - dialsAtKill
	t.Logf("down %v: %d batches with mysql_up 0, %d connection attempts", time.Since(killed).Round(time.Millisecond), downBatches, dials)
	if downBatches < 10 || dials > 10 {
		t.Errorf("down: %d mysql_up 0 batches, %d connection attempts", downBatches, dials)
	}
	if st := r.Stats()[0]; st.Errors == 0 || st.LastError == "" {
		t.Errorf("stat while down: %+v", st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sandbox.Start(ctx, d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	runnerWait(t, 30*time.Second, "mysql_up 1 after the restart", func() bool { return lastUp() == 1 })
	t.Logf("up again %v after the server accepted connections", time.Since(started).Round(time.Millisecond))
	for len(seen) > 0 {
		<-seen
	}
	select {
	case s := <-seen:
		if s.lockWait != "1" || s.innodbLockWait != "1" || s.maxStatement != "0.400000" && s.maxStatement != "0.4" {
			t.Errorf("session after reconnect = %+v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session collector did not run after the restart")
	}
}
