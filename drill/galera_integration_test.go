package drill_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/drill"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestGaleraNodeLossDrill kills one node of a real 3-node Galera sandbox
// under writes to every node: the survivors' clients resume (a finite
// stall), the killed node rejoins by IST, and every acknowledged write is
// on every node.
func TestGaleraNodeLossDrill(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyGalera, Nodes: 3, Process: sandbox.ProcessOptions{KillWithParent: true}})
	var log bytes.Buffer
	opt := drill.GaleraOptions{Sandbox: d.Name, Rounds: 1, Rate: 60, Before: time.Second, After: 5 * time.Second, Log: &log}
	res, err := drill.RunGalera(context.Background(), opt)
	t.Logf("drill output:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rounds[0]
	if r.Error != "" {
		t.Fatalf("round failed: %+v", r)
	}
	if r.Killed != "node1" || r.WritingNodes != 3 || r.SurvivorNodes != 2 {
		t.Errorf("killed %s, %d writing nodes, %d survivors; want node1, 3, 2", r.Killed, r.WritingNodes, r.SurvivorNodes)
	}
	if r.Acked < 200 || r.LostAcked != 0 {
		t.Errorf("acknowledged %d, lost %d; want many and none", r.Acked, r.LostAcked)
	}
	// The survivors wrote again before the restart, and saw the dead member
	// evicted (cluster size 2).
	if r.FirstAckS <= 0 || r.FirstAckS >= 5 || r.WriteStallS <= 0 || r.WriteStallS >= 5 || r.ClusterSizeS <= 0 {
		t.Errorf("survivors' view not finite within the 5 s the node was dead: %+v", r)
	}
	if r.RejoinS <= 0 || r.RejoinMethod != "IST" {
		t.Errorf("rejoin %.3fs by %q, want IST", r.RejoinS, r.RejoinMethod)
	}
	if s := res.Summary; s.Rounds != 1 || s.Failed != 0 || s.IST != 1 || s.LostAcked != 0 {
		t.Errorf("summary %+v", s)
	}

	// Bad input: the node written through cannot be the victim; a
	// replication sandbox is not a Galera one.
	_, err = drill.RunGalera(context.Background(), drill.GaleraOptions{Sandbox: d.Name, Through: "node2", Victim: "node2"})
	if err == nil || !strings.Contains(err.Error(), "is the node written through") {
		t.Errorf("victim = through: %v", err)
	}
	rep := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	_, err = drill.RunGalera(context.Background(), drill.GaleraOptions{Sandbox: rep.Name})
	if err == nil || !strings.Contains(err.Error(), "needs a galera sandbox") {
		t.Errorf("single sandbox: %v", err)
	}
}
