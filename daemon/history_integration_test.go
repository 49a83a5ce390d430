package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/sqlite"
)

// api serves f's daemon over HTTP, as serve does, and returns a client of
// it and its address.
func (f *fixture) api() (*httpapi.Client, string) {
	srv := httptest.NewServer(httpapi.NewServer(f.dm, httpapi.ServerOptions{}))
	f.t.Cleanup(srv.Close)
	return httpapi.NewClient(srv.URL, ""), srv.URL
}

// waitChange waits until the cluster's recorded changes include one whose
// summary is want, or starts with it ("want; ..."), and returns it.
func waitChange(t *testing.T, api *httpapi.Client, cluster, want string, timeout time.Duration) dbpilot.TopologyChange {
	t.Helper()
	var found dbpilot.TopologyChange
	testutil.WaitFor(t, timeout, "change "+want, func() (bool, string) {
		cs, err := api.TopologyChanges(context.Background(), dbpilot.ChangeFilter{Cluster: cluster})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, c := range cs {
			if c.Summary == want || strings.HasPrefix(c.Summary, want+"; ") {
				found = c
				return true, ""
			}
			seen = append(seen, c.Summary)
		}
		return false, "recorded: " + strings.Join(seen, " | ")
	})
	return found
}

// channelOf returns the first channel of key in at, or nil.
func channelOf(at *dbpilot.ClusterAt, key dbpilot.InstanceKey) *dbpilot.ReplicationChannel {
	for _, i := range at.Instances {
		if i.Key.Equal(key) && len(i.Channels) > 0 {
			return &i.Channels[0]
		}
	}
	return nil
}

func hasProblem(ps []dbpilot.Problem, code dbpilot.ProblemCode, key dbpilot.InstanceKey) bool {
	return slices.ContainsFunc(ps, func(p dbpilot.Problem) bool { return p.Code == code && p.Instance.Equal(key) })
}

// TestTopologyHistory: serve records a real cluster's first observation, a
// replica's SQL thread stopped and started again; /at shows the cluster
// before and after, with the problem and the alert firing then, lag from
// the metrics store; /changes lists the change with its summary. A serve
// restarted on the same state file records nothing for the unchanged
// cluster.
func TestTopologyHistory(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	f, _ := startMonitoring(t, d, `groups:
  - name: history
    rules:
      - alert: ReplicationSQLStopped
        expr: mysql_slave_status_slave_sql_running == 0
        for: 1s
        severity: critical
        summary: "replication SQL thread stopped on {{ $labels.instance }}"
`)
	api, base := f.api()
	ctx := context.Background()
	primary, replica := f.key("node1"), f.key("node2")

	// (a) The first observation.
	waitChange(t, api, d.Name, replica.String()+" joined as replica of "+primary.String(), 10*time.Second)
	waitChange(t, api, d.Name, "primary "+primary.String(), 5*time.Second)
	var before *dbpilot.ClusterAt
	testutil.WaitFor(t, 15*time.Second, "the replica's lag in the metrics store", func() (bool, string) {
		var err error
		if before, err = api.ClusterAt(ctx, d.Name, time.Now()); err != nil {
			return false, err.Error()
		}
		_, ok := before.Lag[replica.String()]
		return ok, fmt.Sprintf("%+v", before)
	})
	if !before.Recorded || before.Primary != primary || len(before.Instances) != 2 || len(before.Problems) != 0 || len(before.Alerts) != 0 {
		t.Fatalf("before the stop: %+v", before)
	}
	if ch := channelOf(before, replica); ch == nil || !ch.SQLRunning || !ch.Source.Equal(primary) {
		t.Fatalf("before the stop the replica's channel is %+v", ch)
	}

	// (b) The SQL thread stops: recorded with its problem; the alert fires.
	f.exec("node2", "STOP SLAVE SQL_THREAD")
	stopped := waitChange(t, api, d.Name, replica.String()+": SQL thread stopped", 10*time.Second)
	raised := waitChange(t, api, d.Name, "problem raised: ReplicationSQLStopped on "+replica.String()+" (warning)", 5*time.Second)
	if stopped.Kind != dbpilot.ChangeInstance || stopped.State == nil || !raised.Time.Equal(stopped.Time) || raised.Kind != dbpilot.ChangeCluster {
		t.Errorf("recorded %+v and %+v", stopped, raised)
	}
	if stopped.Time.Before(before.At) {
		t.Errorf("the stop was recorded at %s, before %s when the thread ran", stopped.Time, before.At)
	}
	alert := waitAlert(t, f, "ReplicationSQLStopped", replica.String(), dbpilot.AlertFiring, 15*time.Second)
	after := stopped.Time
	if alert.FiredAt.After(after) {
		after = alert.FiredAt
	}
	// Asked again for the moment before: the past does not change.
	again, err := api.ClusterAt(ctx, d.Name, before.At)
	if err != nil {
		t.Fatal(err)
	}
	if ch := channelOf(again, replica); ch == nil || !ch.SQLRunning || len(again.Problems) != 0 || len(again.Alerts) != 0 {
		t.Errorf("before the stop, asked after it: %+v", again)
	}
	at, err := api.ClusterAt(ctx, d.Name, after)
	if err != nil {
		t.Fatal(err)
	}
	if ch := channelOf(at, replica); !at.Recorded || at.Primary != primary || ch == nil || ch.SQLRunning || ch.IORunning != dbpilot.IORunning {
		t.Errorf("after the stop: channel %+v in %+v", ch, at)
	}
	if !hasProblem(at.Problems, dbpilot.ProblemReplicationSQLStopped, replica) {
		t.Errorf("after the stop, problems %+v", at.Problems)
	}
	if len(at.Alerts) != 1 || at.Alerts[0].Rule != "ReplicationSQLStopped" || at.Alerts[0].Labels["instance"] != replica.String() {
		t.Errorf("after the stop, alerts %+v", at.Alerts)
	}
	if at.Prev.IsZero() || !at.Prev.Before(after) || at.Since.After(before.At) {
		t.Errorf("after the stop: prev %s, since %s", at.Prev, at.Since)
	}
	// One real answer, as the console and the incident report get it.
	resp, err := http.Get(base + "/api/clusters/" + d.Name + "/at?t=" + after.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("GET /api/clusters/%s/at?t=%s: %d %s", d.Name, after.Format(time.RFC3339Nano), resp.StatusCode, body)
	atStop, err := api.ClusterAt(ctx, d.Name, stopped.Time)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(atStop.Changes, func(c dbpilot.TopologyChange) bool { return c.ID == stopped.ID }) {
		t.Errorf("at the stop, the second's changes %+v lack it", atStop.Changes)
	}

	// (c) Started again: recorded, and the problem cleared.
	f.exec("node2", "START SLAVE SQL_THREAD")
	started := waitChange(t, api, d.Name, replica.String()+": SQL thread started", 10*time.Second)
	waitChange(t, api, d.Name, "problem cleared: ReplicationSQLStopped on "+replica.String()+" (warning)", 5*time.Second)
	now, err := api.ClusterAt(ctx, d.Name, started.Time)
	if err != nil {
		t.Fatal(err)
	}
	if ch := channelOf(now, replica); ch == nil || !ch.SQLRunning || len(now.Problems) != 0 {
		t.Errorf("after the start: %+v", now)
	}

	// Errors of the real API: an unknown cluster, no instant.
	if _, err := api.ClusterAt(ctx, "nope", time.Now()); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Errorf("unknown cluster: %v", err)
	}
	if resp, err := http.Get(base + "/api/clusters/" + d.Name + "/at"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no t: %v %v", resp, err)
	}

	// A serve restarted on the same state file goes on from what was
	// recorded: nothing new for the unchanged cluster.
	all, err := api.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: d.Name})
	if err != nil {
		t.Fatal(err)
	}
	f.stop()
	store, err := sqlite.Open(f.cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dm := daemon.Wire(f.cfg, daemon.Wiring{Store: store})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { dm.Run(rctx); close(done) }()
	restarted := time.Now()
	testutil.WaitFor(t, 20*time.Second, "the restarted serve's observations", func() (bool, string) {
		st, err := dm.ClusterStatus(ctx, d.Name)
		if err != nil {
			return false, err.Error()
		}
		// Observations a poll interval apart: the first and two more.
		return st.State == dbpilot.ClusterOK && st.ObservedAt.After(restarted.Add(2*f.cfg.PollInterval.D())), st.State
	})
	cancel()
	<-done // the last changes written
	dm.Close()
	got, err := store.TopologyChanges(ctx, dbpilot.ChangeFilter{Cluster: d.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		var s []string
		for _, c := range got[min(len(all), len(got)):] {
			s = append(s, c.Summary)
		}
		t.Errorf("the restarted serve recorded %d changes: %q", len(got)-len(all), s)
	}
}
