package sandbox_test

import (
	"context"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

func TestDeployReplicationQuick(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	rows, err := sandbox.Exec(context.Background(), d, "node2", "SHOW ALL SLAVES STATUS")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", rows.Maps()[0]["Slave_IO_Running"])
}
