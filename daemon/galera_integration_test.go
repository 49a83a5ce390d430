package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestGaleraCluster runs serve's daemon on a 3-node Galera sandbox: the
// cluster is OK with every node, failover and switchover are refused (every
// node takes writes), and when the node serve watches is killed the
// cluster stays OK through another member, with no recovery, and reports
// the missing node.
func TestGaleraCluster(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyGalera, Nodes: 3, Process: sandbox.ProcessOptions{KillWithParent: true}})
	f := startDaemon(t, d, nil, daemon.Wiring{})
	st := f.status()
	if len(st.Instances) != 3 || st.Primary.Port != d.Nodes[0].Port {
		t.Fatalf("status: primary %s, %d instances", st.Primary, len(st.Instances))
	}
	ctx := context.Background()
	for op, err := range map[string]error{
		"failover":   func() error { _, err := f.dm.Failover(ctx, d.Name, dbpilot.OperationOptions{}); return err }(),
		"switchover": func() error { _, err := f.dm.Switchover(ctx, d.Name, dbpilot.OperationOptions{}); return err }(),
	} {
		if dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED || !strings.Contains(err.Error(), "Galera cluster") {
			t.Errorf("%s: %v, want a refusal naming Galera", op, err)
		}
	}

	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "serve watches another live node, cluster OK, node1 missing", func() (bool, string) {
		st = f.status()
		var codes []string
		missing := false
		for _, p := range st.Problems {
			codes = append(codes, string(p.Code))
			missing = missing || p.Code == dbpilot.ProblemClusterSizeMismatch
		}
		return st.State == dbpilot.ClusterOK && st.Primary.Port != d.Nodes[0].Port && missing,
			st.State + " primary " + st.Primary.String() + " problems " + strings.Join(codes, ",")
	})
	// Stays so: no recovery is ever attempted.
	time.Sleep(3 * time.Second)
	if st := f.status(); st.State != dbpilot.ClusterOK {
		t.Errorf("state %s after the kill settled", st.State)
	}
	if n := len(f.recoveries()); n != 0 {
		t.Errorf("%d recoveries of a Galera cluster; audit:\n%s", n, f.auditText())
	}
}
