package galera_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestConfigCluster drives a Galera cluster through a cluster file, as one
// deployed by other means: its servers are started and stopped by shell
// commands dbpilot knows nothing else about (here a plain mariadbd in the
// background and a kill of its pid). A rolling restart keeps it Synced;
// stopped node by node with a write on the last one, it is bootstrapped
// safely from that node and the write survives.
func TestConfigCluster(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyGalera, Nodes: 3, Process: sandbox.ProcessOptions{KillWithParent: true}})
	ctx := context.Background()
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))")
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (1, 'first')")

	var b strings.Builder
	fmt.Fprintf(&b, "user: %s\npassword_env: TEST_GALERA_PASSWORD\nmysqld: %s\nnodes:\n", d.Admin.User, d.Server.Mysqld)
	for _, n := range d.Nodes {
		// The sandbox's SST wrapper (rsync as root) is on its PATH.
		start := fmt.Sprintf("PATH=%s:$PATH %s --defaults-file=%s $WSREP_NEW_CLUSTER $WSREP_START_POSITION >/dev/null 2>&1 &",
			filepath.Join(d.Dir, "bin"), d.Server.Mysqld, n.Config)
		fmt.Fprintf(&b, "  - name: %s\n    address: %s\n    datadir: %s\n    defaults_file: %s\n    pid_file: %s\n    start: %q\n    stop: %q\n",
			n.Name, n.Key(), n.Datadir, n.Config, n.PidFile, start, "kill $(cat "+n.PidFile+")")
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_GALERA_PASSWORD", d.Admin.Password)
	_, nodes, err := galera.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	allSynced(t, ctx, nodes)

	var log strings.Builder
	opts := galera.Options{Log: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }}
	if err := galera.RollingRestart(ctx, nodes, opts); err != nil {
		t.Fatalf("rolling restart: %v\n%s", err, log.String())
	}
	allSynced(t, ctx, nodes)

	// Bootstrap refused while the cluster runs, naming a running node.
	if _, err := galera.PlanBootstrap(galera.Gather(ctx, nodes, nil, opts)); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("plan on a running cluster: %v", err)
	}
	// Stopped node by node, node2 last, with a write only it has seen
	// committed last.
	for _, i := range []int{0, 2} {
		if err := nodes[i].Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, d, "node2", "INSERT INTO app.t VALUES (2, 'last')")
	if err := nodes[1].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	plan, err := galera.PlanBootstrap(galera.Gather(ctx, nodes, nil, opts))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Bootstrap != "node2" {
		t.Errorf("bootstrap from %s, want node2 (stopped last, most advanced)", plan.Bootstrap)
	}
	if err := galera.Bootstrap(ctx, nodes, plan, opts); err != nil {
		t.Fatalf("bootstrap: %v\n%s", err, log.String())
	}
	allSynced(t, ctx, nodes)
	for _, n := range []string{"node1", "node2", "node3"} {
		testutil.WaitValue(t, d, n, "SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t", "1,2", 20*time.Second)
	}
}

// Bad cluster files: one clear line naming the file and what is wrong.
func TestConfigBad(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"user: x\n", "no nodes"},
		{"nodes: [{name: a, address: 127.0.0.1:1, datadir: /d, defaults_file: /f, start: s, stop: s}]\n", "no user"},
		{"user: x\nnodes: [{name: a, address: 127.0.0.1:1, datadir: /d, defaults_file: /f, start: s}]\n", "give both start and stop"},
		{"user: x\nnodes: [{name: a, address: \"127.0.0.1:x\", datadir: /d, defaults_file: /f, start: s, stop: s}]\n", `address "127.0.0.1:x"`},
		{"user: x\nnodes: [{name: a, address: 127.0.0.1:1, start: s, stop: s, defaults_file: /f}]\n", "no datadir"},
		{"user: x\ncolour: red\n", "colour"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := galera.LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want an error naming %s and %q", tc.yaml, err, path, tc.want)
		}
	}
}
