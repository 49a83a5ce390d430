package topology_test

import (
	"testing"
	"time"

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
