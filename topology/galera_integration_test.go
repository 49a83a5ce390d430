package topology_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/mysql"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/topology"
)

// TestGaleraIntegration deploys a 3-node Galera sandbox and checks that
// discovery from one node finds the group (not a replication tree, no
// replication problem), then desyncs a node and kills one.
func TestGaleraIntegration(t *testing.T) {
	f := newFleet(t, sandbox.Spec{Name: "tgal", Topology: sandbox.TopologyGalera, Nodes: 3,
		Process: sandbox.ProcessOptions{KillWithParent: true}})

	insts, ps := f.waitProblems([]string{"node1"}, topology.AnalyzeOptions{}, time.Minute)
	cs := topology.Clusters(insts)
	if len(cs) != 1 || cs[0].Galera == nil {
		t.Fatalf("clusters %+v, want one Galera cluster", cs)
	}
	c := cs[0]
	if g := c.Galera; len(g.Nodes) != 3 || g.Size != 3 || !g.Primary || g.Configured != 3 || len(c.Primaries) != 3 {
		t.Errorf("galera group %+v, primaries %v", g, c.Primaries)
	}
	for _, in := range insts {
		if in.Galera == nil || in.Galera.LocalState != dbpilot.GaleraSynced || in.Galera.ClusterSize != 3 || !in.Galera.InPrimary() {
			t.Errorf("%s: galera state %+v", f.name(in.Key), in.Galera)
		}
	}
	t.Logf("synced:\n%s", render(t, insts, ps))

	// Desynced on purpose, no backup known: NodeDesynced and DesyncLeftOn;
	// with a backup known, NodeDesynced alone, as info.
	f.exec("node3", "SET GLOBAL wsrep_desync=ON")
	_, ps = f.waitProblems([]string{"node1"}, topology.AnalyzeOptions{}, 30*time.Second, "NodeDesynced@node3", "DesyncLeftOn@node3")
	if p := f.problem(ps, dbpilot.ProblemNodeDesynced, "node3"); p.Severity != dbpilot.SeverityWarning || p.Detail["local_recv_queue"] == "" {
		t.Errorf("NodeDesynced %+v", p)
	}
	_, ps = f.waitProblems([]string{"node1"}, topology.AnalyzeOptions{Backups: f.keys("node3")}, 30*time.Second, "NodeDesynced@node3")
	if p := f.problem(ps, dbpilot.ProblemNodeDesynced, "node3"); p.Severity != dbpilot.SeverityInfo || p.Detail["state_since"] == "" {
		t.Errorf("NodeDesynced during a backup %+v (the inspector saw it before: since when is known)", p)
	}
	f.exec("node3", "SET GLOBAL wsrep_desync=OFF")
	f.waitClean("node1")

	// Desynced under writes, its applier held by FLUSH TABLES WITH READ
	// LOCK: the receive queue grows without flow control; resynced, the
	// node catches up and sends flow control that pauses the cluster
	// (the seeds' "FlowC snt"): FlowControlActive names node3.
	f.flowControlAfterResync("node3", "node1")
	f.waitClean("node1")

	// A node killed: unreachable, and missing from the Primary component
	// once the others evicted it.
	if err := sandbox.Kill(f.d, "node3"); err != nil {
		t.Fatal(err)
	}
	insts, ps = f.waitProblems([]string{"node1"}, topology.AnalyzeOptions{}, time.Minute, "ClusterSizeMismatch@node1", "Unreachable@node3")
	if p := f.problem(ps, dbpilot.ProblemClusterSizeMismatch, "node1"); p.Detail["cluster_size"] != "2" || p.Detail["expected"] != "3" {
		t.Errorf("ClusterSizeMismatch %+v", p)
	}
	if cs := topology.Clusters(insts); len(cs) != 1 || cs[0].Galera == nil || len(cs[0].Instances) != 3 {
		t.Errorf("after the kill: clusters %+v, want the Galera cluster with its dead node", cs)
	}
	t.Logf("node3 killed:\n%s", render(t, insts, ps))
}

// flowControlAfterResync desyncs node under writes to writer, holds its
// applier for a few seconds, resyncs it and waits for FlowControlActive
// while it catches up, on a node whose wsrep_flow_control_sent moved.
func (f *fleet) flowControlAfterResync(node, writer string) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.exec(writer, "CREATE DATABASE IF NOT EXISTS fc")
	f.exec(writer, "CREATE TABLE IF NOT EXISTS fc.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, pad CHAR(200) NOT NULL)")
	wopts := f.d.AdminOptions()
	wopts.MaxConns = 4
	wdb, err := mysql.Open(ctx, f.key(writer), wopts)
	if err != nil {
		f.t.Fatal(err)
	}
	defer wdb.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// Four clients as fast as they can: more than the nodes sharing these
	// two cores apply, so the catch-up runs under flow control. Which node
	// sends it is the analysis' to say (the one that applies slowest); the
	// test checks it against that node's own counter.
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				qctx, c := context.WithTimeout(ctx, 10*time.Second)
				_, _ = wdb.SQL().ExecContext(qctx, "INSERT INTO fc.t (pad) VALUES (REPEAT('x', 200))")
				c()
			}
		})
	}
	// The lock is held on one session of node.
	hdb, err := mysql.Open(ctx, f.key(node), f.d.AdminOptions())
	if err != nil {
		f.t.Fatal(err)
	}
	defer hdb.Close()
	hold, err := hdb.SQL().Conn(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer hold.Close()
	f.exec(node, "SET GLOBAL wsrep_desync=ON")
	if _, err := hold.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		f.t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	queue := f.value(node, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_RECV_QUEUE'")
	if _, err := hold.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		f.t.Fatal(err)
	}
	f.exec(node, "SET GLOBAL wsrep_desync=OFF")
	f.t.Logf("%s resynced with %s write sets in its receive queue", node, queue)
	deadline := time.Now().Add(30 * time.Second)
	var last []string
	for time.Now().Before(deadline) {
		insts := f.discover(writer)
		ps := topology.Analyze(insts, topology.AnalyzeOptions{})
		last = f.summary(ps)
		for _, p := range ps {
			if p.Code == dbpilot.ProblemFlowControlActive {
				sender := f.name(p.Instance)
				if sent := f.value(sender, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_FLOW_CONTROL_SENT'"); sent == "0" || p.Detail["flow_control_sent"] == "" {
					f.t.Errorf("FlowControlActive on %s, which sent no flow control (counter %s): %+v", sender, sent, p)
				}
				f.t.Logf("flow control while %s catches up, sent by %s: %s", node, sender, p.Message)
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	f.t.Fatalf("no FlowControlActive within 30 s of resyncing %s; last problems %v", node, last)
}
