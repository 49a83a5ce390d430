package galera_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

func mustExec(t *testing.T, d *sandbox.Descriptor, node, query string) {
	t.Helper()
	if _, err := sandbox.Exec(context.Background(), d, node, query); err != nil {
		t.Fatalf("%s on %s: %v", query, node, err)
	}
}

func allSynced(t *testing.T, ctx context.Context, nodes []galera.Node) {
	t.Helper()
	for _, n := range nodes {
		st, err := galera.WaitSynced(ctx, n, time.Minute)
		if err != nil || st.ClusterSize != len(nodes) {
			t.Fatalf("%s: %v, %v", n.Name(), st, err)
		}
	}
}

// TestSafeBootstrap stops a 3-node cluster one node at a time, writes on the
// last node up (so it is the most advanced), and bootstraps safely: the plan
// picks that node, not node1, and the data written last survives on every
// node. A bootstrap of a running cluster is refused, naming the node; a
// rolling restart keeps the cluster Synced. Then the whole cluster crashes
// (SIGKILL): positions are recovered with --wsrep-recover.
func TestSafeBootstrap(t *testing.T) {
	srv := testutil.RequireServer(t)
	if _, err := sandbox.FindGaleraProvider(context.Background(), srv.Basedir, ""); err != nil {
		if testutil.InCI() {
			t.Fatalf("CI=true and Galera cannot run: %v", err)
		}
		t.Skipf("Galera cannot run: %v", err)
	}
	ctx := context.Background()
	po := sandbox.ProcessOptions{KillWithParent: true, Log: t.Logf}
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "boot", Topology: sandbox.TopologyGalera, Nodes: 3, Process: po})
	nodes, err := d.GaleraNodes(po)
	if err != nil {
		t.Fatal(err)
	}
	opts := galera.Options{Log: t.Logf}
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))")
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (1, 'first')")

	// Bootstrap of a running cluster: refused, naming the running nodes.
	plan, err := galera.PlanBootstrap(galera.Gather(ctx, nodes, nil, opts))
	if err == nil || dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "node1 (pid ") || plan.Bootstrap != "" {
		t.Fatalf("plan on a running cluster = %+v, %v; want a refusal naming node1", plan, err)
	}

	// Rolling restart: one node at a time, each back to Synced.
	if err := galera.RollingRestart(ctx, nodes, opts); err != nil {
		t.Fatal(err)
	}
	allSynced(t, ctx, nodes)

	// Stop node1, then node2; write on node3; stop node3.
	for _, n := range []string{"node1", "node2"} {
		if err := sandbox.Stop(d, n); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, d, "node3", "INSERT INTO app.t VALUES (2, 'written-last')")
	if err := sandbox.Stop(d, "node3"); err != nil {
		t.Fatal(err)
	}
	states := galera.Gather(ctx, nodes, nil, opts)
	plan, err = galera.PlanBootstrap(states)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var out strings.Builder
	_ = plan.Write(&out)
	t.Logf("plan after a clean stop:\n%s", out.String())
	if plan.Bootstrap != "node3" || plan.SetSafe || states[2].Seqno <= states[0].Seqno || !states[2].SafeToBootstrap || states[2].Source != galera.SourceGrastate {
		t.Fatalf("plan = %+v, evidence %+v; want node3 (safe, most advanced)", plan, states)
	}
	if err := galera.Bootstrap(ctx, nodes, plan, opts); err != nil {
		t.Fatal(err)
	}
	allSynced(t, ctx, nodes)
	for _, n := range []string{"node1", "node2", "node3"} {
		testutil.WaitValue(t, d, n, "SELECT v FROM app.t WHERE id=2", "written-last", 20*time.Second)
	}

	// A crash of every node: grastate.dat says -1 everywhere, and the
	// positions come from --wsrep-recover. node2 got the last write.
	mustExec(t, d, "node2", "INSERT INTO app.t VALUES (3, 'before-crash')")
	for _, n := range []string{"node1", "node3"} {
		testutil.WaitValue(t, d, n, "SELECT COUNT(*) FROM app.t WHERE id=3", "1", 20*time.Second)
	}
	for _, n := range []string{"node1", "node3", "node2"} {
		if err := sandbox.Kill(d, n); err != nil {
			t.Fatal(err)
		}
	}
	states = galera.Gather(ctx, nodes, nil, opts)
	plan, err = galera.PlanBootstrap(states)
	out.Reset()
	_ = plan.Write(&out)
	t.Logf("plan after a crash:\n%s", out.String())
	if err != nil {
		t.Fatalf("plan after crash: %v", err)
	}
	for _, s := range states {
		if s.Source != galera.SourceRecover || s.GrastateSeqno != -1 || s.Seqno < 0 || s.SafeToBootstrap {
			t.Errorf("evidence of %s after a crash: %+v", s.Name, s)
		}
	}
	if !plan.SetSafe || plan.Bootstrap == "" {
		t.Fatalf("plan after crash = %+v", plan)
	}
	// sandbox start runs the same safe bootstrap.
	if err := sandbox.Start(ctx, d, "", po); err != nil {
		t.Fatal(err)
	}
	allSynced(t, ctx, nodes)
	for _, n := range []string{"node1", "node2", "node3"} {
		testutil.WaitValue(t, d, n, "SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t", "1,2,3", 20*time.Second)
	}
}
